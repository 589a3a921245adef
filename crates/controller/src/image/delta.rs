//! `MetadataDelta`: replays Kafka's metadata records onto a [`MetadataImage`] and yields the
//! next image, as Kafka's `org.apache.kafka.image.MetadataDelta`. This is the one replay path:
//! the active controller, standbys, snapshot loading and brokers all go through it, so they
//! cannot disagree about what a record means.
//!
//! The delta keeps a working copy of the image (a cheap clone: persistent maps) and changes
//! it in place, copy-on-write, so untouched topics, partitions and brokers stay shared with
//! the base image. Each `replay` checks the record against the state first and changes
//! nothing when it fails, returning a typed [`ReplayError`] naming the record and the reason.
//! The delta also records what changed, for publishers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kraftd_protocol::metadata::{
    AccessControlEntryRecord, BrokerRegistrationChangeRecord, ClearElrRecord, ClientQuotaRecord,
    ConfigRecord, DelegationTokenRecord, FeatureLevelRecord, FenceBrokerRecord,
    PartitionChangeRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord,
    RegisterControllerRecord, RemoveAccessControlEntryRecord, RemoveDelegationTokenRecord,
    RemoveTopicRecord, RemoveUserScramCredentialRecord, TopicRecord, UnfenceBrokerRecord,
    UnregisterBrokerRecord, UnregisterControllerRecord, UserScramCredentialRecord,
};
use kraftd_protocol::metadata_version::MetadataVersion;
use kraftd_protocol::{MetadataRecord, MetadataRecordType, Uuid};

use super::{
    BrokerRegistration, ClientQuotaEntity, ConfigResource, ConfigResourceType,
    ControllerRegistration, LeaderRecoveryState, MetadataImage, PartitionInvariant,
    PartitionRegistration, PendingIndexes, ScramCredential, ScramCredentialKey, ScramMechanism,
    StandardAcl, TokenInformation, TopicImage, METADATA_VERSION_FEATURE,
};

/// Replays records onto a base image; [`apply`](MetadataDelta::apply) gives the result.
#[derive(Debug, Clone)]
pub struct MetadataDelta {
    base: MetadataImage,
    next: MetadataImage,
    changes: DeltaChanges,
    /// The ISR and ELR index changes `next` still lacks, made by `apply` once per index
    /// entry rather than once per membership.
    pending_indexes: PendingIndexes,
}

/// What a delta changed, so publishers look only at that. Sets are ordered for determinism.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeltaChanges {
    /// Topics created or changed, still present in the next image.
    pub changed_topics: BTreeSet<Uuid>,
    /// Topics of the base image that were removed (even if a topic of the same name was
    /// created again afterwards).
    pub deleted_topics: BTreeSet<Uuid>,
    /// The partitions created or changed, by topic, for topics still present (what Kafka's
    /// `TopicDelta.partitionChanges` holds): publishers that keep counts look only at these.
    pub changed_partitions: BTreeMap<Uuid, BTreeSet<i32>>,
    /// Leaders elected uncleanly (a record setting `LeaderRecoveryState` RECOVERING), as
    /// Kafka's `TopicDelta.partitionToUncleanLeaderElectionCount` summed.
    pub unclean_leader_elections: u64,
    /// Leaders elected from the ELR (a record naming a leader that was in the partition's
    /// ELR), as Kafka's `TopicDelta.partitionToElrElectionCount` summed.
    pub elr_leader_elections: u64,
    /// Brokers registered, changed or unregistered.
    pub changed_brokers: BTreeSet<i32>,
    pub changed_controllers: BTreeSet<i32>,
    /// Config resources with a key set or deleted (a removed topic's configs included).
    pub changed_configs: BTreeSet<ConfigResource>,
    pub changed_client_quotas: BTreeSet<ClientQuotaEntity>,
    pub changed_scram: BTreeSet<ScramCredentialKey>,
    pub changed_acls: BTreeSet<Uuid>,
    /// Delegation tokens created, renewed, expired or removed, by id.
    pub changed_delegation_tokens: BTreeSet<String>,
    pub features_changed: bool,
    pub producer_ids_changed: bool,
}

/// A record that cannot be replayed onto the current state, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot replay {:?} record: {kind}", .record.key())]
pub struct ReplayError {
    /// The offending record (a SCRAM credential's salt and keys blanked out).
    pub record: Box<MetadataRecord>,
    pub kind: ReplayErrorKind,
}

/// Why a record cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayErrorKind {
    #[error("the topic id is the zero uuid")]
    ZeroTopicId,
    #[error("the topic name is empty")]
    EmptyTopicName,
    #[error("topic id {0:?} already exists")]
    TopicIdExists(Uuid),
    #[error("topic name {0:?} already exists")]
    TopicNameExists(String),
    #[error("no topic with id {0:?}")]
    UnknownTopicId(Uuid),
    #[error("no topic named {0:?}")]
    UnknownTopicName(String),
    #[error("invalid partition id {0}")]
    InvalidPartitionId(i32),
    #[error("no partition {partition_id} in topic {topic_id:?}")]
    UnknownPartition { topic_id: Uuid, partition_id: i32 },
    #[error("invalid leader {0}")]
    InvalidLeader(i32),
    #[error("invalid leader recovery state {0}")]
    InvalidLeaderRecoveryState(i8),
    #[error("a leader or partition epoch would overflow")]
    EpochOverflow,
    #[error("the partition would break an invariant: {0}")]
    PartitionInvariant(PartitionInvariant),
    #[error("no broker {0} is registered")]
    UnknownBroker(i32),
    #[error("broker {broker_id} has epoch {current}, the record names {record}")]
    BrokerEpochMismatch {
        broker_id: i32,
        current: i64,
        record: i64,
    },
    #[error("invalid fencing change {0}")]
    InvalidFencingChange(i8),
    #[error("invalid controlled shutdown change {0}")]
    InvalidControlledShutdownChange(i8),
    #[error("unknown config resource type {0}")]
    UnknownConfigResourceType(i8),
    #[error("unknown SCRAM mechanism {0}")]
    UnknownScramMechanism(i8),
    #[error("no SCRAM credential for user {user:?} and mechanism {mechanism:?}")]
    UnknownScramCredential {
        user: String,
        mechanism: ScramMechanism,
    },
    #[error("no ACL with id {0:?}")]
    UnknownAcl(Uuid),
    #[error("a principal of delegation token {0:?} is not Type:name")]
    InvalidTokenPrincipal(String),
    #[error(
        "invalid metadata.version level {0}: this build of kraftd knows levels {min} to {max}",
        min = MetadataVersion::MINIMUM.level(),
        max = MetadataVersion::LATEST_PRODUCTION.level()
    )]
    InvalidMetadataVersion(i16),
    #[error("invalid level {level} for feature {name:?}")]
    InvalidFeatureLevel { name: String, level: i16 },
    #[error("next producer id {record} does not move past {current}")]
    ProducerIdNotIncreasing { current: i64, record: i64 },
    #[error("record type {0:?} is not supported")]
    Unsupported(MetadataRecordType),
}

impl MetadataDelta {
    /// A delta with nothing replayed yet on top of `image`.
    pub fn new(image: &MetadataImage) -> Self {
        MetadataDelta {
            base: image.clone(),
            next: image.clone(),
            changes: DeltaChanges::default(),
            pending_indexes: PendingIndexes::default(),
        }
    }

    /// The image this delta started from.
    pub fn image(&self) -> &MetadataImage {
        &self.base
    }

    /// What has changed so far.
    pub fn changes(&self) -> &DeltaChanges {
        &self.changes
    }

    /// Replays one record. On error the delta is unchanged.
    pub fn replay(&mut self, record: &MetadataRecord) -> Result<(), ReplayError> {
        tracing::trace!(record_type = ?record.key(), "replay");
        self.replay_inner(record).map_err(|kind| ReplayError {
            record: Box::new(redacted(record)),
            kind,
        })
    }

    /// The image with every replayed record applied. The delta stays usable (publishers get
    /// both); the result shares every untouched part with the base image.
    pub fn apply(&self) -> MetadataImage {
        if cfg!(debug_assertions) {
            // Replay refused anything breaking these; check the changed topics again.
            for id in &self.changes.changed_topics {
                let topic = self.next.topics.by_id.get(id);
                debug_assert!(topic.is_some(), "changed topic {id:?} is missing");
                for (pid, p) in topic.into_iter().flat_map(|t| t.partitions.iter()) {
                    debug_assert_eq!(p.validate(), Ok(()), "partition {pid} of {id:?}");
                }
            }
            debug_assert_eq!(self.next.topics.by_id.len(), self.next.topics.by_name.len());
        }
        let mut next = self.next.clone();
        if let Some(indexes) = next.topics.indexes.as_mut() {
            self.pending_indexes.apply_to(indexes);
        }
        next
    }

    fn replay_inner(&mut self, record: &MetadataRecord) -> Result<(), ReplayErrorKind> {
        match record {
            MetadataRecord::RegisterBroker(r) => self.register_broker(r),
            MetadataRecord::UnregisterBroker(r) => self.unregister_broker(r),
            MetadataRecord::Topic(r) => self.topic(r),
            MetadataRecord::Partition(r) => self.partition(r),
            MetadataRecord::Config(r) => self.config(r),
            MetadataRecord::PartitionChange(r) => self.partition_change(r),
            MetadataRecord::FenceBroker(r) => self.fence_broker(r),
            MetadataRecord::UnfenceBroker(r) => self.unfence_broker(r),
            MetadataRecord::RemoveTopic(r) => self.remove_topic(r),
            MetadataRecord::UserScramCredential(r) => self.scram(r),
            MetadataRecord::FeatureLevel(r) => self.feature_level(r),
            MetadataRecord::ClientQuota(r) => self.client_quota(r),
            MetadataRecord::ProducerIds(r) => self.producer_ids(r),
            MetadataRecord::BrokerRegistrationChange(r) => self.broker_registration_change(r),
            MetadataRecord::AccessControlEntry(r) => self.acl(r),
            MetadataRecord::RemoveAccessControlEntry(r) => self.remove_acl(r),
            MetadataRecord::RemoveUserScramCredential(r) => self.remove_scram(r),
            MetadataRecord::RegisterController(r) => self.register_controller(r),
            MetadataRecord::UnregisterController(r) => self.unregister_controller(r),
            MetadataRecord::ClearElr(r) => self.clear_elr(r),
            // A no-op only moves the offset, which the loader tracks, not the image.
            MetadataRecord::NoOp(_) => Ok(()),
            // kraftd never migrates from ZooKeeper; Kafka 4 ignores this record too.
            MetadataRecord::ZkMigrationState(_) => Ok(()),
            // Transaction markers (KIP-868) bound an atomic group of records; holding the
            // group back until its end is the loader's job, so here they change nothing.
            MetadataRecord::BeginTransaction(_) | MetadataRecord::EndTransaction(_) => Ok(()),
            MetadataRecord::DelegationToken(r) => self.delegation_token(r),
            MetadataRecord::RemoveDelegationToken(r) => self.remove_delegation_token(r),
            // An abort would undo records the caller already replayed: refused rather than
            // silently dropped.
            MetadataRecord::AbortTransaction(_) => Err(ReplayErrorKind::Unsupported(record.key())),
        }
    }

    // ---- topics ----

    fn topic(&mut self, r: &TopicRecord) -> Result<(), ReplayErrorKind> {
        if r.topic_id == Uuid::ZERO {
            return Err(ReplayErrorKind::ZeroTopicId);
        }
        if r.name.is_empty() {
            return Err(ReplayErrorKind::EmptyTopicName);
        }
        let topics = &mut self.next.topics;
        if topics.by_id.contains_key(&r.topic_id) {
            return Err(ReplayErrorKind::TopicIdExists(r.topic_id));
        }
        if topics.by_name.contains_key(&r.name) {
            return Err(ReplayErrorKind::TopicNameExists(r.name.clone()));
        }
        let topic = TopicImage::new(r.name.clone(), r.topic_id);
        topics.by_id.insert(r.topic_id, Arc::new(topic));
        topics.by_name.insert(r.name.clone(), r.topic_id);
        topics.index_name(&r.name);
        self.changes.changed_topics.insert(r.topic_id);
        tracing::debug!(topic = %r.name, "topic created");
        Ok(())
    }

    fn partition(&mut self, r: &PartitionRecord) -> Result<(), ReplayErrorKind> {
        if r.partition_id < 0 {
            return Err(ReplayErrorKind::InvalidPartitionId(r.partition_id));
        }
        if !self.next.topics.by_id.contains_key(&r.topic_id) {
            return Err(ReplayErrorKind::UnknownTopicId(r.topic_id));
        }
        let partition = PartitionRegistration::from_record(r)?;
        if let Some(previous) = self
            .next
            .topics
            .partition(&r.topic_id, r.partition_id)
            .cloned()
        {
            self.count_election(&previous, r.leader, r.leader_recovery_state);
        }
        self.put_partition(r.topic_id, r.partition_id, partition);
        Ok(())
    }

    fn partition_change(&mut self, r: &PartitionChangeRecord) -> Result<(), ReplayErrorKind> {
        let topic = self
            .next
            .topics
            .by_id
            .get(&r.topic_id)
            .ok_or(ReplayErrorKind::UnknownTopicId(r.topic_id))?;
        let current =
            topic
                .partitions
                .get(&r.partition_id)
                .ok_or(ReplayErrorKind::UnknownPartition {
                    topic_id: r.topic_id,
                    partition_id: r.partition_id,
                })?;
        let next = current.merge(r)?;
        // Kafka's electionWasClean. Debug only: every node replays every record, again at
        // each restart (an unclean restart of 10,000 partitions printed 80,000 lines); the
        // active controller's election logs the decision once.
        if next.has_leader() && next.leader != current.leader && !current.isr.contains(&next.leader)
        {
            tracing::debug!(topic = %topic.name, partition = r.partition_id, leader = next.leader,
                "UNCLEAN partition change: leader from outside the previous ISR");
        }
        let current = Arc::clone(current);
        self.count_election(&current, r.leader, r.leader_recovery_state);
        self.put_partition(r.topic_id, r.partition_id, next);
        Ok(())
    }

    /// Kafka's `TopicDelta.updateElectionStats`, for a record that replaced `previous`.
    fn count_election(&mut self, previous: &PartitionRegistration, leader: i32, recovery: i8) {
        if recovery == LeaderRecoveryState::Recovering.code() {
            self.changes.unclean_leader_elections += 1;
        }
        if previous.elr.contains(&leader) {
            self.changes.elr_leader_elections += 1;
        }
    }

    fn remove_topic(&mut self, r: &RemoveTopicRecord) -> Result<(), ReplayErrorKind> {
        let topics = &mut self.next.topics;
        let topic = topics
            .by_id
            .remove(&r.topic_id)
            .ok_or(ReplayErrorKind::UnknownTopicId(r.topic_id))?;
        topics.by_name.remove(&topic.name);
        topics.unindex_name(&topic.name);
        for (pid, p) in topic.partitions.iter() {
            topics.index_partition(&mut self.pending_indexes, r.topic_id, *pid, Some(p), None);
        }
        self.changes.changed_topics.remove(&r.topic_id);
        self.changes.changed_partitions.remove(&r.topic_id);
        if self.base.topics.by_id.contains_key(&r.topic_id) {
            self.changes.deleted_topics.insert(r.topic_id);
        }
        // A topic's configs go with it, as in Kafka's ConfigurationsDelta.
        let resource = ConfigResource::topic(topic.name.clone());
        if self.next.configs.resources.remove(&resource).is_some() {
            self.changes.changed_configs.insert(resource);
        }
        tracing::debug!(topic = %topic.name, "topic removed");
        Ok(())
    }

    fn clear_elr(&mut self, r: &ClearElrRecord) -> Result<(), ReplayErrorKind> {
        let topic_ids: Vec<Uuid> = if r.topic_name.is_empty() {
            self.next.topics.by_id.keys().copied().collect()
        } else {
            let id = self
                .next
                .topics
                .by_name
                .get(&r.topic_name)
                .ok_or_else(|| ReplayErrorKind::UnknownTopicName(r.topic_name.clone()))?;
            vec![*id]
        };
        // Compute every change before making any, so a failure changes nothing.
        let mut updates = Vec::new();
        for id in &topic_ids {
            let Some(topic) = self.next.topics.by_id.get(id) else {
                continue;
            };
            for (pid, partition) in topic.partitions.iter() {
                if let Some(cleared) = partition.without_elr()? {
                    updates.push((*id, *pid, cleared));
                }
            }
        }
        for (id, pid, partition) in updates {
            self.put_partition(id, pid, partition);
        }
        Ok(())
    }

    /// Stores a partition, copying only the topic's header and one path of its partition map.
    fn put_partition(&mut self, topic_id: Uuid, partition_id: i32, p: PartitionRegistration) {
        let topics = &mut self.next.topics;
        if let Some(topic) = topics.by_id.get_mut(&topic_id) {
            let p = Arc::new(p);
            let previous = Arc::make_mut(topic)
                .partitions
                .insert(partition_id, Arc::clone(&p));
            topics.index_partition(
                &mut self.pending_indexes,
                topic_id,
                partition_id,
                previous.as_deref(),
                Some(&p),
            );
            self.changes.changed_topics.insert(topic_id);
            self.changes
                .changed_partitions
                .entry(topic_id)
                .or_default()
                .insert(partition_id);
        }
    }

    // ---- cluster ----

    fn register_broker(&mut self, r: &RegisterBrokerRecord) -> Result<(), ReplayErrorKind> {
        let broker = BrokerRegistration::from_record(r);
        self.next
            .cluster
            .brokers
            .insert(r.broker_id, Arc::new(broker));
        self.changes.changed_brokers.insert(r.broker_id);
        tracing::debug!(
            broker = r.broker_id,
            epoch = r.broker_epoch,
            "broker registered"
        );
        Ok(())
    }

    fn unregister_broker(&mut self, r: &UnregisterBrokerRecord) -> Result<(), ReplayErrorKind> {
        self.broker_at_epoch(r.broker_id, r.broker_epoch)?;
        self.next.cluster.brokers.remove(&r.broker_id);
        self.changes.changed_brokers.insert(r.broker_id);
        Ok(())
    }

    fn fence_broker(&mut self, r: &FenceBrokerRecord) -> Result<(), ReplayErrorKind> {
        self.change_broker(r.id, r.epoch, Some(true), None, None)
    }

    fn unfence_broker(&mut self, r: &UnfenceBrokerRecord) -> Result<(), ReplayErrorKind> {
        self.change_broker(r.id, r.epoch, Some(false), None, None)
    }

    fn broker_registration_change(
        &mut self,
        r: &BrokerRegistrationChangeRecord,
    ) -> Result<(), ReplayErrorKind> {
        // Kafka's BrokerRegistrationFencingChange and ...InControlledShutdownChange codes.
        let fenced = match r.fenced {
            -1 => Some(false),
            0 => None,
            1 => Some(true),
            v => return Err(ReplayErrorKind::InvalidFencingChange(v)),
        };
        let shutdown = match r.in_controlled_shutdown {
            0 => None,
            1 => Some(true),
            v => return Err(ReplayErrorKind::InvalidControlledShutdownChange(v)),
        };
        let dirs = (!r.log_dirs.is_empty()).then(|| r.log_dirs.clone());
        self.change_broker(r.broker_id, r.broker_epoch, fenced, shutdown, dirs)?;
        // CordonedLogDirs (v3, KIP-1066): null means no change, a list (even empty) replaces
        // the registration's, as Kafka's `ClusterDelta`.
        if let Some(cordoned) = &r.cordoned_log_dirs {
            let current = self.broker_at_epoch(r.broker_id, r.broker_epoch)?;
            if current.cordoned_directories.as_ref() != Some(cordoned) {
                let mut next = BrokerRegistration::clone(current);
                next.cordoned_directories = Some(cordoned.clone());
                self.next
                    .cluster
                    .brokers
                    .insert(r.broker_id, Arc::new(next));
                self.changes.changed_brokers.insert(r.broker_id);
            }
        }
        Ok(())
    }

    fn change_broker(
        &mut self,
        id: i32,
        epoch: i64,
        fenced: Option<bool>,
        in_controlled_shutdown: Option<bool>,
        directories: Option<Vec<Uuid>>,
    ) -> Result<(), ReplayErrorKind> {
        let current = self.broker_at_epoch(id, epoch)?;
        let mut next = BrokerRegistration::clone(current);
        next.fenced = fenced.unwrap_or(next.fenced);
        next.in_controlled_shutdown = in_controlled_shutdown.unwrap_or(next.in_controlled_shutdown);
        if let Some(mut dirs) = directories {
            dirs.sort();
            next.directories = dirs;
        }
        if next != **current {
            self.next.cluster.brokers.insert(id, Arc::new(next));
            self.changes.changed_brokers.insert(id);
        }
        Ok(())
    }

    /// The broker's registration, if it is registered at exactly `epoch`.
    fn broker_at_epoch(
        &self,
        id: i32,
        epoch: i64,
    ) -> Result<&Arc<BrokerRegistration>, ReplayErrorKind> {
        let broker = self
            .next
            .cluster
            .brokers
            .get(&id)
            .ok_or(ReplayErrorKind::UnknownBroker(id))?;
        if broker.epoch != epoch {
            return Err(ReplayErrorKind::BrokerEpochMismatch {
                broker_id: id,
                current: broker.epoch,
                record: epoch,
            });
        }
        Ok(broker)
    }

    fn register_controller(&mut self, r: &RegisterControllerRecord) -> Result<(), ReplayErrorKind> {
        let controller = ControllerRegistration::from_record(r);
        self.next
            .cluster
            .controllers
            .insert(r.controller_id, Arc::new(controller));
        self.changes.changed_controllers.insert(r.controller_id);
        Ok(())
    }

    /// Kafka 4.4 writes this when a controller leaves the quorum for good; as Kafka's
    /// ClusterDelta does, an unknown id is not an error (the registration may predate a
    /// snapshot that already dropped it).
    fn unregister_controller(
        &mut self,
        r: &UnregisterControllerRecord,
    ) -> Result<(), ReplayErrorKind> {
        self.next.cluster.controllers.remove(&r.controller_id);
        self.changes.changed_controllers.insert(r.controller_id);
        Ok(())
    }

    // ---- configs and quotas ----

    fn config(&mut self, r: &ConfigRecord) -> Result<(), ReplayErrorKind> {
        let resource_type = ConfigResourceType::from_i8(r.resource_type)
            .ok_or(ReplayErrorKind::UnknownConfigResourceType(r.resource_type))?;
        let resource = ConfigResource::new(resource_type, r.resource_name.clone());
        let resources = &mut self.next.configs.resources;
        match &r.value {
            Some(value) => {
                resources
                    .entry(resource.clone())
                    .or_default()
                    .insert(r.name.clone(), value.clone());
            }
            None => {
                if let Some(keys) = resources.get_mut(&resource) {
                    keys.remove(&r.name);
                    if keys.is_empty() {
                        resources.remove(&resource);
                    }
                }
            }
        }
        self.changes.changed_configs.insert(resource);
        Ok(())
    }

    fn client_quota(&mut self, r: &ClientQuotaRecord) -> Result<(), ReplayErrorKind> {
        let entity = ClientQuotaEntity(
            r.entity
                .iter()
                .map(|e| (e.entity_type.clone(), e.entity_name.clone()))
                .collect(),
        );
        let entities = &mut self.next.client_quotas.entities;
        if r.remove {
            if let Some(quotas) = entities.get_mut(&entity) {
                quotas.remove(&r.key);
                if quotas.is_empty() {
                    entities.remove(&entity);
                }
            }
        } else {
            entities
                .entry(entity.clone())
                .or_default()
                .insert(r.key.clone(), r.value);
        }
        self.changes.changed_client_quotas.insert(entity);
        Ok(())
    }

    // ---- SCRAM and ACLs ----

    fn scram(&mut self, r: &UserScramCredentialRecord) -> Result<(), ReplayErrorKind> {
        let key = scram_key(&r.name, r.mechanism)?;
        let credential = ScramCredential {
            salt: r.salt.clone(),
            stored_key: r.stored_key.clone(),
            server_key: r.server_key.clone(),
            iterations: r.iterations,
        };
        self.next.scram.credentials.insert(key.clone(), credential);
        self.changes.changed_scram.insert(key);
        Ok(())
    }

    fn remove_scram(&mut self, r: &RemoveUserScramCredentialRecord) -> Result<(), ReplayErrorKind> {
        let key = scram_key(&r.name, r.mechanism)?;
        if self.next.scram.credentials.remove(&key).is_none() {
            return Err(ReplayErrorKind::UnknownScramCredential {
                user: key.user,
                mechanism: key.mechanism,
            });
        }
        self.changes.changed_scram.insert(key);
        Ok(())
    }

    fn acl(&mut self, r: &AccessControlEntryRecord) -> Result<(), ReplayErrorKind> {
        let acl = StandardAcl::from_record(r);
        self.next.acls.acls.insert(r.id, Arc::new(acl));
        self.changes.changed_acls.insert(r.id);
        Ok(())
    }

    fn remove_acl(&mut self, r: &RemoveAccessControlEntryRecord) -> Result<(), ReplayErrorKind> {
        if self.next.acls.acls.remove(&r.id).is_none() {
            return Err(ReplayErrorKind::UnknownAcl(r.id));
        }
        self.changes.changed_acls.insert(r.id);
        Ok(())
    }

    // ---- delegation tokens ----

    /// A token created, renewed or given a new expiry (Kafka's `DelegationTokenDelta`).
    fn delegation_token(&mut self, r: &DelegationTokenRecord) -> Result<(), ReplayErrorKind> {
        let token = TokenInformation::from_record(r)
            .ok_or_else(|| ReplayErrorKind::InvalidTokenPrincipal(r.token_id.clone()))?;
        self.next
            .delegation_tokens
            .tokens
            .insert(r.token_id.clone(), Arc::new(token));
        self.changes
            .changed_delegation_tokens
            .insert(r.token_id.clone());
        Ok(())
    }

    /// A token expired or swept. Removing a token that is gone already changes nothing:
    /// Kafka's controller sweeps from its committed token cache, so its log may remove a
    /// token twice, and kraftd must replay Kafka's logs.
    fn remove_delegation_token(
        &mut self,
        r: &RemoveDelegationTokenRecord,
    ) -> Result<(), ReplayErrorKind> {
        if self
            .next
            .delegation_tokens
            .tokens
            .remove(&r.token_id)
            .is_some()
        {
            self.changes
                .changed_delegation_tokens
                .insert(r.token_id.clone());
        }
        Ok(())
    }

    // ---- features and producer ids ----

    fn feature_level(&mut self, r: &FeatureLevelRecord) -> Result<(), ReplayErrorKind> {
        let features = &mut self.next.features;
        if r.name == METADATA_VERSION_FEATURE {
            // A level this build does not know (a newer Kafka's) cannot be replayed: which
            // records and versions it allows is unknown, as Kafka's `fromFeatureLevel` refuses.
            if MetadataVersion::from_feature_level(r.feature_level).is_err() {
                return Err(ReplayErrorKind::InvalidMetadataVersion(r.feature_level));
            }
            features.metadata_version = Some(r.feature_level);
        } else if r.feature_level == 0 {
            features.finalized.remove(&r.name);
        } else if r.feature_level < 0 {
            return Err(ReplayErrorKind::InvalidFeatureLevel {
                name: r.name.clone(),
                level: r.feature_level,
            });
        } else {
            features.finalized.insert(r.name.clone(), r.feature_level);
        }
        self.changes.features_changed = true;
        Ok(())
    }

    fn producer_ids(&mut self, r: &ProducerIdsRecord) -> Result<(), ReplayErrorKind> {
        let current = self.next.producer_ids.next_producer_id;
        // Blocks only move forward (Kafka's ProducerIdControlManager.replay); the first block
        // starts at 0, so the first record names at least its end.
        if r.next_producer_id <= current.max(0) {
            return Err(ReplayErrorKind::ProducerIdNotIncreasing {
                current,
                record: r.next_producer_id,
            });
        }
        self.next.producer_ids.next_producer_id = r.next_producer_id;
        self.changes.producer_ids_changed = true;
        Ok(())
    }
}

fn scram_key(user: &str, mechanism: i8) -> Result<ScramCredentialKey, ReplayErrorKind> {
    let mechanism = ScramMechanism::from_i8(mechanism)
        .ok_or(ReplayErrorKind::UnknownScramMechanism(mechanism))?;
    Ok(ScramCredentialKey {
        user: user.to_string(),
        mechanism,
    })
}

/// The record as an error may carry it: a SCRAM credential without its salt and keys, so
/// errors can be logged freely.
fn redacted(record: &MetadataRecord) -> MetadataRecord {
    match record {
        MetadataRecord::UserScramCredential(r) => {
            MetadataRecord::UserScramCredential(UserScramCredentialRecord {
                salt: Default::default(),
                stored_key: Default::default(),
                server_key: Default::default(),
                ..r.clone()
            })
        }
        other => other.clone(),
    }
}
