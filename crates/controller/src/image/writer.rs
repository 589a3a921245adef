//! Writes an image back out as the records that rebuild it, as Kafka's `ImageWriter` does
//! for snapshots: replaying [`MetadataImage::records`] onto an empty image through the normal
//! replay path gives an equal image, so loading a snapshot needs no code of its own.
//!
//! The order is Kafka's (features first, so `metadata.version` is known before anything that
//! depends on it; then cluster, topics, configs, quotas, producer ids, ACLs, SCRAM,
//! delegation tokens), and
//! within each part the images' key order, so equal images write identical snapshots.
//! Which record versions to encode them at is the snapshot writer's choice, not this one's.

use kraftd_protocol::metadata::client_quota_record::EntityData;
use kraftd_protocol::metadata::register_broker_record::{BrokerEndpoint, BrokerFeature};
use kraftd_protocol::metadata::register_controller_record::{
    ControllerEndpoint, ControllerFeature,
};
use kraftd_protocol::metadata::{
    AccessControlEntryRecord, ClientQuotaRecord, ConfigRecord, FeatureLevelRecord, PartitionRecord,
    ProducerIdsRecord, RegisterBrokerRecord, RegisterControllerRecord, TopicRecord,
    UserScramCredentialRecord,
};
use kraftd_protocol::MetadataRecord;

use super::{MetadataImage, METADATA_VERSION_FEATURE};

impl MetadataImage {
    /// The records that rebuild this image from [`MetadataImage::empty`].
    pub fn records(&self) -> Vec<MetadataRecord> {
        let mut out = Vec::new();
        self.write_features(&mut out);
        self.write_cluster(&mut out);
        self.write_topics(&mut out);
        self.write_configs(&mut out);
        self.write_client_quotas(&mut out);
        if self.producer_ids.next_producer_id >= 0 {
            out.push(MetadataRecord::ProducerIds(ProducerIdsRecord {
                broker_id: -1,
                broker_epoch: -1,
                next_producer_id: self.producer_ids.next_producer_id,
                ..Default::default()
            }));
        }
        self.write_acls(&mut out);
        self.write_scram(&mut out);
        for token in self.delegation_tokens.iter() {
            out.push(MetadataRecord::DelegationToken(token.to_record()));
        }
        out
    }

    fn write_features(&self, out: &mut Vec<MetadataRecord>) {
        let mv = self
            .features
            .metadata_version
            .map(|level| (METADATA_VERSION_FEATURE, level));
        let others = self
            .features
            .finalized
            .iter()
            .map(|(n, l)| (n.as_str(), *l));
        for (name, feature_level) in mv.into_iter().chain(others) {
            out.push(MetadataRecord::FeatureLevel(FeatureLevelRecord {
                name: name.to_string(),
                feature_level,
                ..Default::default()
            }));
        }
    }

    fn write_cluster(&self, out: &mut Vec<MetadataRecord>) {
        for b in self.cluster.brokers() {
            out.push(MetadataRecord::RegisterBroker(RegisterBrokerRecord {
                broker_id: b.id,
                is_migrating_zk_broker: b.is_migrating_zk_broker,
                incarnation_id: b.incarnation_id,
                broker_epoch: b.epoch,
                end_points: b
                    .listeners
                    .values()
                    .map(|e| BrokerEndpoint {
                        name: e.name.clone(),
                        host: e.host.clone(),
                        port: e.port,
                        security_protocol: e.security_protocol,
                        ..Default::default()
                    })
                    .collect(),
                features: b
                    .supported_features
                    .iter()
                    .map(|(name, r)| BrokerFeature {
                        name: name.clone(),
                        min_supported_version: r.min,
                        max_supported_version: r.max,
                        ..Default::default()
                    })
                    .collect(),
                rack: b.rack.clone(),
                fenced: b.fenced,
                in_controlled_shutdown: b.in_controlled_shutdown,
                log_dirs: b.directories.clone(),
                // A level below 4.3-IV0 has no field for them (Kafka's writer reports the
                // loss); the registration holds some only once the level allowed them.
                cordoned_log_dirs: b
                    .cordoned_directories
                    .clone()
                    .filter(|_| self.features.version().is_cordoned_log_dirs_supported()),
                ..Default::default()
            }));
        }
        for c in self.cluster.controllers() {
            out.push(MetadataRecord::RegisterController(
                RegisterControllerRecord {
                    controller_id: c.id,
                    incarnation_id: c.incarnation_id,
                    zk_migration_ready: c.zk_migration_ready,
                    end_points: c
                        .listeners
                        .values()
                        .map(|e| ControllerEndpoint {
                            name: e.name.clone(),
                            host: e.host.clone(),
                            port: e.port,
                            security_protocol: e.security_protocol,
                            ..Default::default()
                        })
                        .collect(),
                    features: c
                        .supported_features
                        .iter()
                        .map(|(name, r)| ControllerFeature {
                            name: name.clone(),
                            min_supported_version: r.min,
                            max_supported_version: r.max,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                },
            ));
        }
    }

    fn write_topics(&self, out: &mut Vec<MetadataRecord>) {
        for topic in self.topics.iter() {
            out.push(MetadataRecord::Topic(TopicRecord {
                name: topic.name.clone(),
                topic_id: topic.id,
                ..Default::default()
            }));
            for (partition_id, p) in topic.partitions.iter() {
                // ELR fields are tagged: written only when they hold something, as Kafka does.
                let non_empty = |v: &Vec<i32>| (!v.is_empty()).then(|| v.clone());
                out.push(MetadataRecord::Partition(PartitionRecord {
                    partition_id: *partition_id,
                    topic_id: topic.id,
                    replicas: p.replicas.clone(),
                    isr: p.isr.clone(),
                    removing_replicas: p.removing_replicas.clone(),
                    adding_replicas: p.adding_replicas.clone(),
                    leader: p.leader,
                    leader_recovery_state: p.leader_recovery_state.code(),
                    leader_epoch: p.leader_epoch,
                    partition_epoch: p.partition_epoch,
                    directories: p.directories.clone(),
                    eligible_leader_replicas: non_empty(&p.elr),
                    last_known_elr: non_empty(&p.last_known_elr),
                    ..Default::default()
                }));
            }
        }
    }

    fn write_configs(&self, out: &mut Vec<MetadataRecord>) {
        for (resource, keys) in self.configs.iter() {
            for (name, value) in keys.iter() {
                out.push(MetadataRecord::Config(ConfigRecord {
                    resource_type: resource.resource_type.code(),
                    resource_name: resource.name.clone(),
                    name: name.clone(),
                    value: Some(value.clone()),
                    ..Default::default()
                }));
            }
        }
    }

    fn write_client_quotas(&self, out: &mut Vec<MetadataRecord>) {
        for (entity, quotas) in self.client_quotas.iter() {
            let entity: Vec<EntityData> = entity
                .0
                .iter()
                .map(|(entity_type, entity_name)| EntityData {
                    entity_type: entity_type.clone(),
                    entity_name: entity_name.clone(),
                    ..Default::default()
                })
                .collect();
            for (key, value) in quotas.iter() {
                out.push(MetadataRecord::ClientQuota(ClientQuotaRecord {
                    entity: entity.clone(),
                    key: key.clone(),
                    value: *value,
                    remove: false,
                    ..Default::default()
                }));
            }
        }
    }

    fn write_acls(&self, out: &mut Vec<MetadataRecord>) {
        for (id, acl) in self.acls.iter() {
            out.push(MetadataRecord::AccessControlEntry(
                AccessControlEntryRecord {
                    id: *id,
                    resource_type: acl.resource_type,
                    resource_name: acl.resource_name.clone(),
                    pattern_type: acl.pattern_type,
                    principal: acl.principal.clone(),
                    host: acl.host.clone(),
                    operation: acl.operation,
                    permission_type: acl.permission_type,
                    ..Default::default()
                },
            ));
        }
    }

    fn write_scram(&self, out: &mut Vec<MetadataRecord>) {
        for (key, credential) in self.scram.iter() {
            out.push(MetadataRecord::UserScramCredential(
                UserScramCredentialRecord {
                    name: key.user.clone(),
                    mechanism: key.mechanism.code(),
                    salt: credential.salt.clone(),
                    stored_key: credential.stored_key.clone(),
                    server_key: credential.server_key.clone(),
                    iterations: credential.iterations,
                    ..Default::default()
                },
            ));
        }
    }
}
