//! `ReplicationControlManager`, the partition side: Kafka's
//! `org.apache.kafka.controller.ReplicationControlManager` for partition state (R2, R5–R8).
//! It owns the decisions that change ISRs, ELRs and leaders: AlterPartition from partition
//! leaders (validated against leader epoch, partition epoch and, KIP-903, the broker epochs of
//! the ISR members), the partition changes a broker's fencing, unfencing, controlled shutdown
//! or unclean restart causes, and ElectLeaders (preferred and unclean).
//!
//! Pure: every method reads a [`MetadataImage`] and returns or appends records; nothing
//! changes until they are replayed. Each partition's change is decided by
//! [`PartitionChangeBuilder`], so every path follows the same election and ELR rules.
//!
//! Topic creation, deletion and CreatePartitions live in [`super::topics`], reassignment in
//! [`super::reassignment`]; directory assignment (AssignReplicasToDirs, a heartbeat's
//! offline log dirs, KIP-858) in `directories.rs`. The broker reactions find
//! the partitions to change through the image's ISR, ELR and leaderless indexes (Kafka's
//! `BrokersToIsrs`, `BrokersToElrs`), so their cost follows the partitions they change, not
//! the partitions of the cluster.

mod directories;

use std::collections::BTreeMap;
use std::sync::Arc;

use kraftd_protocol::messages::alter_partition_request::{self, BrokerState};
use kraftd_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kraftd_protocol::messages::{
    alter_partition_response, AlterPartitionRequest, AlterPartitionResponse, ElectLeadersRequest,
    ElectLeadersResponse,
};
use kraftd_protocol::metadata::{
    BrokerRegistrationChangeRecord, PartitionChangeRecord, UnregisterBrokerRecord,
};
use kraftd_protocol::{ErrorCode, MetadataRecord, Uuid};

use crate::control::partition_change::{Election, PartitionChangeBuilder};
use crate::control::result::ControllerResult;
use crate::image::{
    ConfigResource, ConfigResourceType, LeaderRecoveryState, MetadataImage, PartitionRegistration,
    TopicImage, NO_LEADER, NO_LEADER_CHANGE,
};

/// Kafka's topic (and broker default) config naming the minimum ISR size for acks=all.
pub const MIN_IN_SYNC_REPLICAS_CONFIG: &str = "min.insync.replicas";
/// Kafka's topic (and broker default) config allowing leaders from outside the ISR.
pub const UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG: &str = "unclean.leader.election.enable";
pub use kraftd_protocol::features::ELIGIBLE_LEADER_REPLICAS_VERSION_FEATURE;

/// Kafka's `BrokerRegistrationFencingChange` and `...InControlledShutdownChange` values.
const FENCING_CHANGE_FENCE: i8 = 1;
const FENCING_CHANGE_UNFENCE: i8 = -1;
const IN_CONTROLLED_SHUTDOWN_CHANGE: i8 = 1;

/// The most leader changes one periodic election round writes (Kafka's
/// `ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE`).
pub const MAX_ELECTIONS_PER_IMBALANCE: usize = 1_000;

/// ElectLeaders `ElectionType` values (Kafka's `ElectionType`).
const ELECTION_TYPE_PREFERRED: i8 = 0;
const ELECTION_TYPE_UNCLEAN: i8 = 1;

/// The static (process config) defaults the replication manager falls back to when neither
/// the topic nor the cluster-wide broker config sets a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationConfig {
    /// `min.insync.replicas` (Kafka's default 1).
    pub min_insync_replicas: i32,
    /// `unclean.leader.election.enable` (Kafka's default false).
    pub unclean_leader_election_enable: bool,
}

/// The partition side of the controller. Holds only configuration: all state is the image.
#[derive(Debug, Clone, Default)]
pub struct ReplicationControlManager {
    config: ReplicationConfig,
}

/// Which partitions a broker reaction changes: those whose ISR holds the broker, or whose
/// ISR or ELR does (both found through the image's indexes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Members {
    Isr(i32),
    IsrOrElr(i32),
}

/// The change an AlterPartition makes to one partition (none if it changes nothing) and the
/// partition as it will be once the change is replayed.
type AlteredPartition = (Option<PartitionChangeRecord>, PartitionRegistration);

/// Partition registrations already changed earlier in the same request, so a partition named
/// twice is validated against its new state rather than producing two conflicting records.
#[derive(Debug, Default)]
struct Overlay {
    changed: BTreeMap<(Uuid, i32), PartitionRegistration>,
}

impl Default for ReplicationConfig {
    fn default() -> Self {
        ReplicationConfig {
            min_insync_replicas: 1,
            unclean_leader_election_enable: false,
        }
    }
}

impl ReplicationControlManager {
    pub fn new(config: ReplicationConfig) -> Self {
        ReplicationControlManager { config }
    }

    pub fn config(&self) -> &ReplicationConfig {
        &self.config
    }

    /// Whether KIP-966 ELR maintenance is on: the finalized `eligible.leader.replicas.version`.
    pub fn is_elr_enabled(image: &MetadataImage) -> bool {
        image
            .features
            .level(ELIGIBLE_LEADER_REPLICAS_VERSION_FEATURE)
            >= 1
    }

    /// A topic config, else the cluster-wide broker default, else `None` (Kafka's lookup
    /// order for dynamic configs; the static default is the caller's).
    fn topic_config<'i>(image: &'i MetadataImage, topic: &str, key: &str) -> Option<&'i str> {
        image
            .configs
            .value(&ConfigResource::topic(topic), key)
            .or_else(|| {
                image
                    .configs
                    .value(&ConfigResource::new(ConfigResourceType::Broker, ""), key)
            })
    }

    /// The topic's `min.insync.replicas`, capped at its replication factor as Kafka's
    /// `getTopicEffectiveMinIsr` does (a min ISR no ISR can reach would freeze the ELR).
    pub fn effective_min_isr(
        &self,
        image: &MetadataImage,
        topic: &TopicImage,
        partition: &PartitionRegistration,
    ) -> usize {
        let configured = Self::topic_config(image, &topic.name, MIN_IN_SYNC_REPLICAS_CONFIG)
            .and_then(|v| v.trim().parse::<i32>().ok())
            .unwrap_or(self.config.min_insync_replicas);
        let configured = usize::try_from(configured.max(1)).unwrap_or(1);
        configured.min(partition.replicas.len())
    }

    /// Whether the topic allows unclean leader elections.
    pub fn unclean_leader_election_enabled(&self, image: &MetadataImage, topic: &str) -> bool {
        Self::topic_config(image, topic, UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG)
            .and_then(|v| v.trim().parse::<bool>().ok())
            .unwrap_or(self.config.unclean_leader_election_enable)
    }

    /// A builder for one partition with the topic's min ISR, ELR setting and election type.
    fn builder<'a>(
        &self,
        image: &'a MetadataImage,
        topic: &TopicImage,
        partition_id: i32,
        partition: &'a PartitionRegistration,
        is_acceptable_leader: impl Fn(i32) -> bool + 'a,
    ) -> PartitionChangeBuilder<'a, impl Fn(i32) -> bool + 'a> {
        let builder = PartitionChangeBuilder::new(
            partition,
            topic.id,
            partition_id,
            leader_acceptor(image, partition, is_acceptable_leader),
            self.effective_min_isr(image, topic, partition),
        )
        .set_eligible_leader_replicas_enabled(Self::is_elr_enabled(image));
        if self.unclean_leader_election_enabled(image, &topic.name) {
            builder.set_election(Election::Unclean)
        } else {
            builder
        }
    }

    // ---- AlterPartition ----

    /// AlterPartition from a partition leader: validate each partition (leader epoch, leader,
    /// partition epoch, ISR shape, leader recovery state, KIP-903 eligibility of every ISR
    /// member) and write the ISR/ELR change. `request_version` decides the ISR field (v3+
    /// carries broker epochs) and the error for ineligible replicas, as in Kafka.
    pub fn alter_partition(
        &self,
        image: &MetadataImage,
        request_version: i16,
        request: &AlterPartitionRequest,
    ) -> ControllerResult<AlterPartitionResponse> {
        if let Err(error) = check_broker_epoch(image, request.broker_id, request.broker_epoch) {
            return ControllerResult::response_only(AlterPartitionResponse {
                error_code: error.code(),
                ..Default::default()
            });
        }
        let mut records = Vec::new();
        let mut overlay = Overlay::default();
        let mut response = AlterPartitionResponse::default();
        for topic_data in &request.topics {
            let mut topic_response = alter_partition_response::TopicData {
                topic_id: topic_data.topic_id,
                ..Default::default()
            };
            let topic = match image.topics.get(&topic_data.topic_id) {
                Some(topic) if topic_data.topic_id != Uuid::ZERO => topic,
                _ => {
                    for p in &topic_data.partitions {
                        topic_response.partitions.push(partition_error(
                            p.partition_index,
                            ErrorCode::UnknownTopicId,
                        ));
                    }
                    response.topics.push(topic_response);
                    continue;
                }
            };
            for data in &topic_data.partitions {
                let result = self.alter_one_partition(
                    image,
                    topic,
                    request.broker_id,
                    request_version,
                    data,
                    &mut overlay,
                );
                let partition_response = match result {
                    Ok((record, partition)) => {
                        let leader_changed = record
                            .as_ref()
                            .is_some_and(|r| r.leader != NO_LEADER_CHANGE);
                        if let Some(record) = record {
                            records.push(MetadataRecord::PartitionChange(record));
                        }
                        if leader_changed && partition.leader != request.broker_id {
                            // Only a completed reassignment could move leadership here; the
                            // old leader must refresh its metadata before trying again.
                            let error = if request_version > 1 {
                                ErrorCode::NewLeaderElected
                            } else {
                                ErrorCode::FencedLeaderEpoch
                            };
                            partition_error(data.partition_index, error)
                        } else {
                            alter_partition_response::PartitionData {
                                partition_index: data.partition_index,
                                error_code: ErrorCode::None.code(),
                                leader_id: partition.leader,
                                leader_epoch: partition.leader_epoch,
                                isr: partition.isr.clone(),
                                leader_recovery_state: partition.leader_recovery_state.code(),
                                partition_epoch: partition.partition_epoch,
                                ..Default::default()
                            }
                        }
                    }
                    Err(error) => partition_error(data.partition_index, error),
                };
                topic_response.partitions.push(partition_response);
            }
            response.topics.push(topic_response);
        }
        ControllerResult::of(records, response)
    }

    /// One partition of an AlterPartition: the change record (if any) and the partition as
    /// it will be after it, or the error to answer.
    fn alter_one_partition(
        &self,
        image: &MetadataImage,
        topic: &TopicImage,
        broker_id: i32,
        request_version: i16,
        data: &alter_partition_request::PartitionData,
        overlay: &mut Overlay,
    ) -> Result<AlteredPartition, ErrorCode> {
        let key = (topic.id, data.partition_index);
        let partition = match overlay.changed.get(&key) {
            Some(p) => p.clone(),
            None => topic
                .partition(data.partition_index)
                .map(|p| PartitionRegistration::clone(p))
                .ok_or(ErrorCode::UnknownTopicOrPartition)?,
        };
        // Before v3 the ISR carries no broker epochs: -1 skips the KIP-903 epoch check.
        let new_isr: Vec<BrokerState> = if request_version >= 3 {
            data.new_isr_with_epochs.clone()
        } else {
            data.new_isr
                .iter()
                .map(|id| BrokerState {
                    broker_id: *id,
                    broker_epoch: -1,
                    ..Default::default()
                })
                .collect()
        };
        validate_alter_partition_data(
            image,
            broker_id,
            request_version,
            &partition,
            data,
            &new_isr,
        )?;
        let recovery = LeaderRecoveryState::from_i8(data.leader_recovery_state)
            .ok_or(ErrorCode::InvalidRequest)?;
        let record = self
            .builder(image, topic, data.partition_index, &partition, |r| {
                is_active(image, r)
            })
            .set_target_isr(new_isr.iter().map(|b| b.broker_id).collect())
            .set_target_leader_recovery_state(recovery)
            .build();
        let next = match &record {
            Some(record) => partition.merge(record).map_err(|e| {
                tracing::error!(error = %e, "AlterPartition produced an unreplayable change");
                ErrorCode::UnknownServerError
            })?,
            None => partition,
        };
        if record.is_some() {
            overlay.changed.insert(key, next.clone());
        }
        Ok((record, next))
    }

    // ---- reactions to broker state ----

    /// The partition changes when a broker is fenced (it leaves every ISR; partitions it led
    /// elect a new leader), then the record fencing it. Nothing if it is not registered.
    pub fn handle_broker_fenced(
        &self,
        image: &MetadataImage,
        broker_id: i32,
        records: &mut Vec<MetadataRecord>,
    ) {
        let Some(broker) = image.cluster.broker(broker_id) else {
            return;
        };
        self.generate_leader_and_isr_updates(
            image,
            broker_id,
            NO_LEADER,
            NO_LEADER,
            Members::Isr(broker_id),
            records,
        );
        records.push(MetadataRecord::BrokerRegistrationChange(
            BrokerRegistrationChangeRecord {
                broker_id,
                broker_epoch: broker.epoch,
                fenced: FENCING_CHANGE_FENCE,
                ..Default::default()
            },
        ));
    }

    /// The record unfencing a broker, then leaders for every leaderless partition it can now
    /// lead (it counts as alive although the image still shows it fenced).
    pub fn handle_broker_unfenced(
        &self,
        image: &MetadataImage,
        broker_id: i32,
        broker_epoch: i64,
        records: &mut Vec<MetadataRecord>,
    ) {
        records.push(MetadataRecord::BrokerRegistrationChange(
            BrokerRegistrationChangeRecord {
                broker_id,
                broker_epoch,
                fenced: FENCING_CHANGE_UNFENCE,
                ..Default::default()
            },
        ));
        // Only the leaderless partitions can change, and the image indexes them.
        let leaderless =
            image
                .topics
                .leaderless()
                .into_iter()
                .filter_map(|(topic_id, partition_id)| {
                    let topic = image.topics.get(&topic_id)?;
                    Some((topic, partition_id, topic.partition(partition_id)?))
                });
        self.update_partitions(image, NO_LEADER, broker_id, NO_LEADER, leaderless, records);
    }

    /// A broker entering controlled shutdown: mark it, then move it out of every ISR and
    /// elect new leaders where it led, so it can stop without partitions going offline.
    pub fn handle_broker_in_controlled_shutdown(
        &self,
        image: &MetadataImage,
        broker_id: i32,
        broker_epoch: i64,
        records: &mut Vec<MetadataRecord>,
    ) {
        let already = image
            .cluster
            .broker(broker_id)
            .is_some_and(|b| b.in_controlled_shutdown);
        if !already {
            records.push(MetadataRecord::BrokerRegistrationChange(
                BrokerRegistrationChangeRecord {
                    broker_id,
                    broker_epoch,
                    in_controlled_shutdown: IN_CONTROLLED_SHUTDOWN_CHANGE,
                    ..Default::default()
                },
            ));
        }
        self.generate_leader_and_isr_updates(
            image,
            broker_id,
            NO_LEADER,
            NO_LEADER,
            Members::Isr(broker_id),
            records,
        );
    }

    /// A broker restarting with a new incarnation (Kafka's `handleBrokerShutdown`, written
    /// before its new registration). After a clean shutdown it is treated as fenced: it leaves
    /// every ISR (and may stay in ELRs, its data is intact). After an unclean one (KIP-966) it
    /// may have lost committed data: it leaves every ISR and every ELR and may not lead.
    pub fn handle_broker_shutdown(
        &self,
        image: &MetadataImage,
        broker_id: i32,
        is_clean_shutdown: bool,
        records: &mut Vec<MetadataRecord>,
    ) {
        if Self::is_elr_enabled(image) && !is_clean_shutdown {
            self.generate_leader_and_isr_updates(
                image,
                NO_LEADER,
                NO_LEADER,
                broker_id,
                Members::IsrOrElr(broker_id),
                records,
            );
        } else {
            self.generate_leader_and_isr_updates(
                image,
                broker_id,
                NO_LEADER,
                NO_LEADER,
                Members::Isr(broker_id),
                records,
            );
        }
    }

    /// A broker being unregistered: it leaves every ISR and every ELR (it will never come
    /// back with this data), then the `UnregisterBrokerRecord`. Kafka removes it from ELRs
    /// with a second pass that keeps it while the ISR is below min ISR; here it is passed as
    /// an unclean-shutdown replica too, so it really leaves them.
    pub fn handle_broker_unregistered(
        &self,
        image: &MetadataImage,
        broker_id: i32,
        broker_epoch: i64,
        records: &mut Vec<MetadataRecord>,
    ) {
        self.generate_leader_and_isr_updates(
            image,
            broker_id,
            NO_LEADER,
            broker_id,
            Members::IsrOrElr(broker_id),
            records,
        );
        records.push(MetadataRecord::UnregisterBroker(UnregisterBrokerRecord {
            broker_id,
            broker_epoch,
            ..Default::default()
        }));
    }

    /// For every partition `members` names, the change that removes `broker_to_remove` (and
    /// `broker_with_unclean_shutdown`) from the ISR and re-elects as needed. Kafka's
    /// `generateLeaderAndIsrUpdates`: `broker_to_add` counts as an acceptable leader even
    /// though the image still shows it fenced; the removed brokers never do. Pass
    /// [`NO_LEADER`] for "none". The partitions come from the image's indexes, in topic id
    /// then partition id order (as a scan would find them).
    pub fn generate_leader_and_isr_updates(
        &self,
        image: &MetadataImage,
        broker_to_remove: i32,
        broker_to_add: i32,
        broker_with_unclean_shutdown: i32,
        members: Members,
        records: &mut Vec<MetadataRecord>,
    ) {
        let keys: Vec<(Uuid, i32)> = match members {
            Members::Isr(broker) => image.topics.partitions_with_isr_member(broker),
            Members::IsrOrElr(broker) => {
                // ISR and ELR are disjoint: the union is the two lists merged.
                let mut keys = image.topics.partitions_with_isr_member(broker);
                keys.extend(image.topics.partitions_with_elr_member(broker));
                keys.sort_unstable();
                keys
            }
        };
        let selected = keys.into_iter().filter_map(|(topic_id, partition_id)| {
            let topic = image.topics.get(&topic_id)?;
            Some((topic, partition_id, topic.partition(partition_id)?))
        });
        self.update_partitions(
            image,
            broker_to_remove,
            broker_to_add,
            broker_with_unclean_shutdown,
            selected,
            records,
        );
    }

    /// [`generate_leader_and_isr_updates`](Self::generate_leader_and_isr_updates) over the
    /// partitions given, (topic, partition id, registration), rather than a scan of all.
    fn update_partitions<'i>(
        &self,
        image: &'i MetadataImage,
        broker_to_remove: i32,
        broker_to_add: i32,
        broker_with_unclean_shutdown: i32,
        partitions: impl Iterator<Item = (&'i Arc<TopicImage>, i32, &'i Arc<PartitionRegistration>)>,
        records: &mut Vec<MetadataRecord>,
    ) {
        let acceptable = |r: i32| {
            r != broker_to_remove
                && r != broker_with_unclean_shutdown
                && (r == broker_to_add || is_active(image, r))
        };
        let before = records.len();
        for (topic, partition_id, partition) in partitions {
            let target_isr: Vec<i32> = partition
                .isr
                .iter()
                .copied()
                .filter(|r| *r != broker_to_remove && *r != broker_with_unclean_shutdown)
                .collect();
            let mut builder = self
                .builder(image, topic, partition_id, partition, acceptable)
                .set_target_isr(target_isr);
            if broker_with_unclean_shutdown != NO_LEADER {
                builder = builder.set_unclean_shutdown_replicas(vec![broker_with_unclean_shutdown]);
            }
            if let Some(record) = builder.build() {
                records.push(MetadataRecord::PartitionChange(record));
            }
        }
        if records.len() > before {
            tracing::info!(
                broker_to_remove,
                broker_to_add,
                broker_with_unclean_shutdown,
                partitions = records.len() - before,
                "changing partitions"
            );
        }
    }

    /// Whether the broker leads any partition (a controlled shutdown waits until it leads none).
    pub fn has_leaderships(image: &MetadataImage, broker_id: i32) -> bool {
        image.topics.leader_count(broker_id) > 0
    }

    // ---- ElectLeaders ----

    /// ElectLeaders: preferred (move leadership back to the first replica) or unclean (give a
    /// leaderless partition any live replica). A null topic list means every partition, and
    /// then partitions that need no election are left out of the answer, as in Kafka.
    pub fn elect_leaders(
        &self,
        image: &MetadataImage,
        request: &ElectLeadersRequest,
    ) -> ControllerResult<ElectLeadersResponse> {
        let election = match request.election_type {
            ELECTION_TYPE_PREFERRED => Election::Preferred,
            ELECTION_TYPE_UNCLEAN => Election::Unclean,
            _ => {
                return ControllerResult::response_only(ElectLeadersResponse {
                    error_code: ErrorCode::InvalidRequest.code(),
                    ..Default::default()
                })
            }
        };
        let mut records = Vec::new();
        let mut overlay = Overlay::default();
        let mut response = ElectLeadersResponse::default();
        match &request.topic_partitions {
            None => {
                for (name, _) in image.topics.names() {
                    let mut results = ReplicaElectionResult {
                        topic: name.clone(),
                        ..Default::default()
                    };
                    let Some(topic) = image.topics.get_by_name(name) else {
                        continue;
                    };
                    for partition_id in topic.partitions.keys() {
                        let error = self.elect_leader(
                            image,
                            name,
                            *partition_id,
                            election,
                            &mut overlay,
                            &mut records,
                        );
                        if error != ErrorCode::ElectionNotNeeded {
                            results
                                .partition_result
                                .push(election_result(*partition_id, error));
                        }
                    }
                    response.replica_election_results.push(results);
                }
            }
            Some(topics) => {
                for t in topics {
                    let mut results = ReplicaElectionResult {
                        topic: t.topic.clone(),
                        ..Default::default()
                    };
                    for partition_id in &t.partitions {
                        let error = self.elect_leader(
                            image,
                            &t.topic,
                            *partition_id,
                            election,
                            &mut overlay,
                            &mut records,
                        );
                        results
                            .partition_result
                            .push(election_result(*partition_id, error));
                    }
                    response.replica_election_results.push(results);
                }
            }
        }
        ControllerResult::of(records, response)
    }

    // ---- The periodic elections ----

    /// One round of preferred-leader balancing (Kafka's `maybeBalancePartitionLeaders`, run
    /// every `leader.imbalance.check.interval.seconds` while `auto.leader.rebalance.enable`):
    /// a preferred election for each partition not led by its preferred replica, which
    /// happens only where that replica is in the ISR and active. At most
    /// [`MAX_ELECTIONS_PER_IMBALANCE`] changes, so a broker that returns to lead a hundred
    /// thousand partitions does not fill one batch; the answer says whether the round stopped
    /// at the cap (the caller runs the next one at once rather than after the interval).
    /// There is no imbalance ratio to cross first: that gate
    /// (`leader.imbalance.per.broker.percentage`) was ZooKeeper's controller's, and Kafka 4
    /// no longer defines it.
    pub fn maybe_balance_partition_leaders(&self, image: &MetadataImage) -> ControllerResult<bool> {
        self.periodic_elections(
            image,
            image.topics.imbalanced(),
            Election::Preferred,
            |_| true,
        )
    }

    /// One round of unclean elections (Kafka's `maybeElectUncleanLeaders`, run every
    /// `unclean.leader.election.interval.ms` while partitions are leaderless): a leader for
    /// each leaderless partition whose topic allows unclean elections, at most
    /// [`MAX_ELECTIONS_PER_IMBALANCE`]; the answer says whether the round stopped at the cap.
    pub fn maybe_elect_unclean_leaders(&self, image: &MetadataImage) -> ControllerResult<bool> {
        self.periodic_elections(
            image,
            image.topics.leaderless(),
            Election::Unclean,
            |topic| self.unclean_leader_election_enabled(image, topic),
        )
    }

    fn periodic_elections(
        &self,
        image: &MetadataImage,
        partitions: Vec<(Uuid, i32)>,
        election: Election,
        topic_allows: impl Fn(&str) -> bool,
    ) -> ControllerResult<bool> {
        let mut records = Vec::new();
        let mut overlay = Overlay::default();
        for (topic_id, partition_id) in partitions {
            if records.len() >= MAX_ELECTIONS_PER_IMBALANCE {
                return ControllerResult::of(records, true);
            }
            let Some(topic) = image.topics.get(&topic_id) else {
                continue;
            };
            if !topic_allows(&topic.name) {
                continue;
            }
            let error = self.elect_leader(
                image,
                &topic.name,
                partition_id,
                election,
                &mut overlay,
                &mut records,
            );
            if election == Election::Unclean {
                match error {
                    ErrorCode::None => tracing::error!(
                        topic = %topic.name, partition_id,
                        "unclean leader election for an offline partition"
                    ),
                    ErrorCode::ElectionNotNeeded => {}
                    error => tracing::warn!(
                        topic = %topic.name, partition_id, ?error,
                        "no unclean leader election for an offline partition"
                    ),
                }
            }
        }
        let more = records.len() >= MAX_ELECTIONS_PER_IMBALANCE;
        ControllerResult::of(records, more)
    }

    fn elect_leader(
        &self,
        image: &MetadataImage,
        topic_name: &str,
        partition_id: i32,
        election: Election,
        overlay: &mut Overlay,
        records: &mut Vec<MetadataRecord>,
    ) -> ErrorCode {
        let Some(topic) = image.topics.get_by_name(topic_name) else {
            return ErrorCode::UnknownTopicOrPartition;
        };
        let key = (topic.id, partition_id);
        let partition = match overlay.changed.get(&key) {
            Some(p) => p.clone(),
            None => match topic.partition(partition_id) {
                Some(p) => PartitionRegistration::clone(p),
                None => return ErrorCode::UnknownTopicOrPartition,
            },
        };
        let has_preferred_leader = partition.replicas.first() == Some(&partition.leader);
        let not_needed = match election {
            Election::Preferred => has_preferred_leader,
            _ => partition.has_leader(),
        };
        if not_needed {
            return ErrorCode::ElectionNotNeeded;
        }
        let record = PartitionChangeBuilder::new(
            &partition,
            topic.id,
            partition_id,
            leader_acceptor(image, &partition, |r| is_active(image, r)),
            self.effective_min_isr(image, topic, &partition),
        )
        .set_election(election)
        .set_eligible_leader_replicas_enabled(Self::is_elr_enabled(image))
        .build();
        let Some(record) = record else {
            return match election {
                Election::Preferred => ErrorCode::PreferredLeaderNotAvailable,
                _ => ErrorCode::EligibleLeadersNotAvailable,
            };
        };
        match partition.merge(&record) {
            Ok(next) => {
                overlay.changed.insert(key, next);
                records.push(MetadataRecord::PartitionChange(record));
                ErrorCode::None
            }
            Err(e) => {
                tracing::error!(error = %e, "election produced an unreplayable change");
                ErrorCode::UnknownServerError
            }
        }
    }
}

/// Kafka's `ClusterControlManager.checkBrokerEpoch`: a request naming a broker epoch that is
/// not the broker's current registration (or an unregistered broker) is stale (KIP-380).
pub fn check_broker_epoch(
    image: &MetadataImage,
    broker_id: i32,
    broker_epoch: i64,
) -> Result<(), ErrorCode> {
    match image.cluster.broker(broker_id) {
        Some(b) if b.epoch == broker_epoch => Ok(()),
        _ => Err(ErrorCode::StaleBrokerEpoch),
    }
}

/// Kafka's `LeaderAcceptor`, which every election goes through: `accept` says the replica
/// may lead, and its directory for this partition must be online on its broker
/// (`hasOnlineDir`: a replica in a failed or lost log dir has no log to lead with).
pub(crate) fn leader_acceptor<'a>(
    image: &'a MetadataImage,
    partition: &'a PartitionRegistration,
    accept: impl Fn(i32) -> bool + 'a,
) -> impl Fn(i32) -> bool + 'a {
    move |r| {
        accept(r)
            && image.cluster.broker(r).is_some_and(|b| {
                partition
                    .directory(r)
                    .is_none_or(|dir| b.has_online_dir(dir))
            })
    }
}

/// A registered broker that is neither fenced nor shutting down (Kafka's `isActive`).
pub(crate) fn is_active(image: &MetadataImage, broker_id: i32) -> bool {
    image
        .cluster
        .broker(broker_id)
        .is_some_and(|b| b.is_active())
}

/// Kafka's `validateAlterPartitionData`, in Kafka's order of checks.
fn validate_alter_partition_data(
    image: &MetadataImage,
    broker_id: i32,
    request_version: i16,
    partition: &PartitionRegistration,
    data: &alter_partition_request::PartitionData,
    new_isr: &[BrokerState],
) -> Result<(), ErrorCode> {
    // A leader ahead of us means this controller is behind: let it find the active one.
    if data.leader_epoch > partition.leader_epoch
        || data.partition_epoch > partition.partition_epoch
    {
        return Err(ErrorCode::NotController);
    }
    if data.leader_epoch < partition.leader_epoch {
        return Err(ErrorCode::FencedLeaderEpoch);
    }
    if broker_id != partition.leader {
        return Err(ErrorCode::InvalidRequest);
    }
    if data.partition_epoch < partition.partition_epoch {
        return Err(ErrorCode::InvalidUpdateVersion);
    }
    let ids: Vec<i32> = new_isr.iter().map(|b| b.broker_id).collect();
    if !valid_isr(&partition.replicas, &ids) || !ids.contains(&partition.leader) {
        return Err(ErrorCode::InvalidRequest);
    }
    let recovery = LeaderRecoveryState::from_i8(data.leader_recovery_state)
        .ok_or(ErrorCode::InvalidRequest)?;
    if recovery == LeaderRecoveryState::Recovering && ids.len() > 1 {
        return Err(ErrorCode::InvalidRequest);
    }
    if partition.leader_recovery_state == LeaderRecoveryState::Recovered
        && recovery == LeaderRecoveryState::Recovering
    {
        return Err(ErrorCode::InvalidRequest);
    }
    // KIP-903: every member must be registered, alive, not shutting down and at the broker
    // epoch the leader saw in its fetches; a restarted replica may have lost data.
    let ineligible = new_isr
        .iter()
        .find(|state| match image.cluster.broker(state.broker_id) {
            None => true,
            Some(b) => {
                b.in_controlled_shutdown
                    || b.fenced
                    || (state.broker_epoch != -1 && state.broker_epoch != b.epoch)
            }
        });
    if let Some(state) = ineligible {
        tracing::info!(
            broker_id,
            replica = state.broker_id,
            epoch = state.broker_epoch,
            "AlterPartition names an ineligible replica"
        );
        return Err(if request_version > 1 {
            ErrorCode::IneligibleReplica
        } else {
            ErrorCode::OperationNotAttempted
        });
    }
    Ok(())
}

/// Kafka's `Replicas.validateIsr`: no negative ids, no duplicates, all replicas.
fn valid_isr(replicas: &[i32], isr: &[i32]) -> bool {
    isr.iter()
        .enumerate()
        .all(|(i, r)| *r >= 0 && replicas.contains(r) && !isr[..i].contains(r))
}

fn partition_error(
    partition_index: i32,
    error: ErrorCode,
) -> alter_partition_response::PartitionData {
    alter_partition_response::PartitionData {
        partition_index,
        error_code: error.code(),
        ..Default::default()
    }
}

fn election_result(partition_id: i32, error: ErrorCode) -> PartitionResult {
    PartitionResult {
        partition_id,
        error_code: error.code(),
        error_message: (error != ErrorCode::None).then(|| error.name().to_string()),
        ..Default::default()
    }
}
