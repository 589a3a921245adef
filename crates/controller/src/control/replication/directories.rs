//! AssignReplicasToDirs (KIP-858, JBOD): a broker tells the controller in which of its log
//! directories each of its replicas lives, and the controller records it in the partition's
//! `Directories` (Kafka's `ReplicationControlManager.handleAssignReplicasToDirs`).
//!
//! As Kafka: the request is refused whole (top-level error, no partition answers) below
//! metadata.version 3.7-IV2 (UNSUPPORTED_VERSION) or when its broker epoch is not the
//! broker's current registration (STALE_BROKER_EPOCH); each partition then answers
//! UNKNOWN_TOPIC_ID (topic unknown), UNKNOWN_TOPIC_OR_PARTITION (no such partition) or
//! NOT_LEADER_OR_FOLLOWER (the broker holds no replica of it), else NONE with a
//! PartitionChangeRecord when the directory changes. A replica assigned to a directory the
//! broker does not have online can neither lead nor stay in the ISR: those partitions get
//! the same leader and ISR update as a fenced broker's (`offline-dir-assignment`).
//!
//! A heartbeat's `OfflineLogDirs` (Kafka's `handleDirectoriesOffline`): for each directory
//! that was online in the broker's registration, every partition whose replica on that
//! broker is in it gets the same update (leadership moves off, the replica leaves the ISR),
//! and a `BrokerRegistrationChangeRecord` names the broker's remaining online directories.
//! Kafka finds the partitions through its `directoriesToPartitions` index; here the image's
//! ISR and ELR index of the broker, filtered by directory: a replica in neither changes
//! nothing either way.
//!
//! A heartbeat's `CordonedLogDirs` (v2, KIP-1066; Kafka's `handleDirectoriesCordoned`):
//! null until the broker has caught up with the metadata, then every heartbeat names the
//! broker's cordoned directories; when that set differs from the registration's a
//! `BrokerRegistrationChangeRecord` v3 carries the new list. Cordoning moves no replica: it
//! only keeps new ones off (`placement::usable_brokers`).

use kraftd_protocol::messages::assign_replicas_to_dirs_response::{
    DirectoryData, PartitionData, TopicData,
};
use kraftd_protocol::messages::{AssignReplicasToDirsRequest, AssignReplicasToDirsResponse};
use kraftd_protocol::metadata::BrokerRegistrationChangeRecord;
use kraftd_protocol::{ErrorCode, MetadataRecord, Uuid};
use tracing::{debug, warn};

use super::{check_broker_epoch, is_active, ReplicationControlManager};
use crate::control::result::ControllerResult;
use crate::image::{MetadataImage, NO_LEADER};

impl ReplicationControlManager {
    /// AssignReplicasToDirs from broker `request.broker_id` (see the module doc).
    pub fn assign_replicas_to_dirs(
        &self,
        image: &MetadataImage,
        request: &AssignReplicasToDirsRequest,
    ) -> ControllerResult<AssignReplicasToDirsResponse> {
        let refuse = |code: ErrorCode| {
            ControllerResult::response_only(AssignReplicasToDirsResponse {
                error_code: code.code(),
                ..Default::default()
            })
        };
        if !image.features.version().is_directory_assignment_supported() {
            return refuse(ErrorCode::UnsupportedVersion);
        }
        let broker_id = request.broker_id;
        if let Err(code) = check_broker_epoch(image, broker_id, request.broker_epoch) {
            return refuse(code);
        }
        let Some(broker) = image.cluster.broker(broker_id) else {
            return refuse(ErrorCode::BrokerIdNotRegistered);
        };
        let mut records = Vec::new();
        let mut response = AssignReplicasToDirsResponse::default();
        let mut offline_assignments = Vec::new();
        for dir in &request.directories {
            let directory_is_offline = !broker.has_online_dir(dir.id);
            let mut dir_answer = DirectoryData {
                id: dir.id,
                ..Default::default()
            };
            for topic_data in &dir.topics {
                let topic = image.topics.get(&topic_data.topic_id);
                if topic.is_none() {
                    warn!(broker_id, topic_id = %topic_data.topic_id, "AssignReplicasToDirs references an unknown topic id");
                }
                let mut topic_answer = TopicData {
                    topic_id: topic_data.topic_id,
                    ..Default::default()
                };
                for p in &topic_data.partitions {
                    let index = p.partition_index;
                    let error = match topic {
                        None => ErrorCode::UnknownTopicId,
                        Some(topic) => match topic.partition(index) {
                            None => {
                                warn!(broker_id, topic = %topic.name, partition = index, "AssignReplicasToDirs references an unknown partition");
                                ErrorCode::UnknownTopicOrPartition
                            }
                            Some(partition) if !partition.replicas.contains(&broker_id) => {
                                warn!(broker_id, topic = %topic.name, partition = index, "AssignReplicasToDirs references a partition not assigned to the broker");
                                ErrorCode::NotLeaderOrFollower
                            }
                            Some(partition) => {
                                let acceptable = |r: i32| is_active(image, r);
                                let record = self
                                    .builder(image, topic, index, partition, acceptable)
                                    .set_directory(broker_id, dir.id)
                                    .build();
                                if let Some(record) = record {
                                    records.push(MetadataRecord::PartitionChange(record));
                                }
                                if directory_is_offline {
                                    offline_assignments.push((topic, index, partition));
                                }
                                debug!(broker_id, topic = %topic.name, partition = index, dir = %dir.id, offline = directory_is_offline, "replica assigned to a directory");
                                ErrorCode::None
                            }
                        },
                    };
                    topic_answer.partitions.push(PartitionData {
                        partition_index: index,
                        error_code: error.code(),
                        ..Default::default()
                    });
                }
                dir_answer.topics.push(topic_answer);
            }
            response.directories.push(dir_answer);
        }
        if !offline_assignments.is_empty() {
            self.update_partitions(
                image,
                broker_id,
                NO_LEADER,
                NO_LEADER,
                offline_assignments.into_iter(),
                &mut records,
            );
        }
        ControllerResult::of(records, response)
    }
}

impl ReplicationControlManager {
    /// The records a heartbeat reporting `offline_dirs` makes (see the module doc); none
    /// when no directory the registration holds online is among them.
    pub fn handle_directories_offline(
        &self,
        image: &MetadataImage,
        broker_id: i32,
        broker_epoch: i64,
        offline_dirs: &[Uuid],
        records: &mut Vec<MetadataRecord>,
    ) {
        let Some(broker) = image.cluster.broker(broker_id) else {
            return;
        };
        let newly_offline: Vec<Uuid> = broker
            .directories
            .iter()
            .copied()
            .filter(|d| offline_dirs.contains(d))
            .collect();
        if newly_offline.is_empty() {
            return;
        }
        let mut keys = image.topics.partitions_with_isr_member(broker_id);
        keys.extend(image.topics.partitions_with_elr_member(broker_id));
        keys.sort_unstable();
        let affected = keys.into_iter().filter_map(|(topic_id, index)| {
            let topic = image.topics.get(&topic_id)?;
            let partition = topic.partition(index)?;
            let dir = partition.directory(broker_id)?;
            newly_offline
                .contains(&dir)
                .then_some((topic, index, partition))
        });
        self.update_partitions(image, broker_id, NO_LEADER, NO_LEADER, affected, records);
        let online: Vec<Uuid> = broker
            .directories
            .iter()
            .copied()
            .filter(|d| !offline_dirs.contains(d))
            .collect();
        warn!(broker_id, offline = ?newly_offline, remaining = ?online, "log directories marked offline");
        records.push(MetadataRecord::BrokerRegistrationChange(
            BrokerRegistrationChangeRecord {
                broker_id,
                broker_epoch,
                log_dirs: online,
                ..Default::default()
            },
        ));
    }

    /// The record a heartbeat naming `cordoned_dirs` makes (see the module doc): none when
    /// the broker sent none yet (null) or the set is the one registered.
    pub fn handle_directories_cordoned(
        &self,
        image: &MetadataImage,
        broker_id: i32,
        broker_epoch: i64,
        cordoned_dirs: Option<&[Uuid]>,
        records: &mut Vec<MetadataRecord>,
    ) {
        let (Some(cordoned_dirs), Some(broker)) = (cordoned_dirs, image.cluster.broker(broker_id))
        else {
            return;
        };
        if !broker.cordoned_dir_changed(cordoned_dirs) {
            return;
        }
        debug!(broker_id, cordoned = ?cordoned_dirs, "log directories marked cordoned");
        records.push(MetadataRecord::BrokerRegistrationChange(
            BrokerRegistrationChangeRecord {
                broker_id,
                broker_epoch,
                cordoned_log_dirs: Some(cordoned_dirs.to_vec()),
                ..Default::default()
            },
        ));
    }
}

#[cfg(test)]
mod tests;
