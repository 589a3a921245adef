//! The share-group offsets admin APIs' part in the shard (Kafka's
//! `GroupMetadataManager.initializedShareGroupPartitions`,
//! `sharePartitionsEligibleForOffsetDeletion`, `completeDeleteShareGroupOffsets` and
//! `GroupCoordinatorShard.initiateDeleteShareGroupOffsets`): which share partitions a
//! DescribeShareGroupOffsets of all topics reads, and the two steps of a
//! DeleteShareGroupOffsets around the persister's DeleteShareGroupState (the broker's
//! `server/share_group_apis.rs` makes that call between them).
//!
//! A deletion first moves the named topics from the initialized list to the deleting list
//! of ShareGroupStatePartitionMetadata (a topic already deleting is asked again for all its
//! partitions), then, once the share coordinator deleted their state, drops them from the
//! deleting list: as Kafka records it.

use std::collections::BTreeMap;

use kraftd_protocol::messages::alter_share_group_offsets_request::AlterShareGroupOffsetsRequestTopic;
use kraftd_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use kraftd_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kraftd_protocol::messages::initialize_share_group_state_request::{
    InitializeStateData, PartitionData as InitializePartition,
};
use kraftd_protocol::messages::InitializeShareGroupStateRequest;
use kraftd_protocol::{ErrorCode, Uuid};

use super::group::{
    combine_init_maps, delete_state_request, InitMapValue, ShareOffsetsAlter, ShareOffsetsDeletion,
};
use super::records;
use crate::group::consumer::Partitions;
use crate::group::shard::{Group, GroupCoordinatorShard};

fn error_topic(name: &str, code: ErrorCode, message: &str) -> DeleteShareGroupOffsetsResponseTopic {
    DeleteShareGroupOffsetsResponseTopic {
        topic_name: name.to_string(),
        error_code: code.code(),
        error_message: Some(message.to_string()),
        ..Default::default()
    }
}

impl GroupCoordinatorShard {
    /// DescribeShareGroupOffsets without topics (Kafka's `initializedShareGroupPartitions`):
    /// the group's initialized share partitions; none for a group that is not a share group
    /// or has no state yet.
    pub(crate) fn share_group_initialized_partitions(&self, id: &str) -> Partitions {
        match self.groups.get(id) {
            Some(Group::Share(g)) => g.initialized_partitions(),
            _ => Partitions::new(),
        }
    }

    /// AlterShareGroupOffsets (Kafka's `alterShareGroupOffsets`): GROUP_ID_NOT_FOUND for a
    /// group of another type, NON_EMPTY_GROUP while it has members (a group that does not
    /// exist is created empty, by the record). Each existing partition of an existing topic
    /// is accepted; the accepted topics join the initializing list (and leave the deleting
    /// one), and their state is to be initialized at the new start offsets, with the
    /// group's epoch as state epoch.
    pub(crate) fn alter_share_group_offsets(
        &mut self,
        group_id: &str,
        topics: &[AlterShareGroupOffsetsRequestTopic],
    ) -> ShareOffsetsAlter {
        let (group_epoch, current) = match self.groups.get(group_id) {
            Some(Group::Share(g)) if !g.is_empty() => {
                return ShareOffsetsAlter::Refused(
                    ErrorCode::NonEmptyGroup,
                    "The group is not empty.".into(),
                )
            }
            Some(Group::Share(g)) => (g.group_epoch, g.state_metadata.clone()),
            Some(_) => {
                return ShareOffsetsAlter::Refused(
                    ErrorCode::GroupIdNotFound,
                    format!("Group {group_id} is not a share group."),
                )
            }
            None => (0, None),
        };
        let now = self.now_ms;
        let unknown = |p: i32| AlterShareGroupOffsetsResponsePartition {
            partition_index: p,
            error_code: ErrorCode::UnknownTopicOrPartition.code(),
            error_message: Some("This server does not host this topic-partition.".into()),
            ..Default::default()
        };
        let mut answered = Vec::new();
        let mut initializing: BTreeMap<Uuid, InitMapValue> = BTreeMap::new();
        let mut offsets: BTreeMap<Uuid, BTreeMap<i32, i64>> = BTreeMap::new();
        for t in topics {
            let Some((id, count)) = self.metadata.topic_by_name(&t.topic_name) else {
                answered.push(AlterShareGroupOffsetsResponseTopic {
                    topic_name: t.topic_name.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| unknown(p.partition_index))
                        .collect(),
                    ..Default::default()
                });
                continue;
            };
            let mut partitions = Vec::new();
            let mut accepted = std::collections::BTreeSet::new();
            for p in &t.partitions {
                if p.partition_index < count {
                    partitions.push(AlterShareGroupOffsetsResponsePartition {
                        partition_index: p.partition_index,
                        ..Default::default()
                    });
                    offsets
                        .entry(id)
                        .or_default()
                        .insert(p.partition_index, p.start_offset);
                    accepted.insert(p.partition_index);
                } else {
                    partitions.push(unknown(p.partition_index));
                }
            }
            initializing.insert(
                id,
                InitMapValue {
                    name: t.topic_name.clone(),
                    partitions: accepted,
                    timestamp: now,
                },
            );
            answered.push(AlterShareGroupOffsetsResponseTopic {
                topic_name: t.topic_name.clone(),
                topic_id: id,
                partitions,
                ..Default::default()
            });
        }
        if !initializing.is_empty() {
            // Kafka's `addInitializingTopicsRecords`.
            let mut next = current.unwrap_or_default();
            next.initializing = combine_init_maps(&next.initializing, &initializing);
            for id in initializing.keys() {
                next.deleting.remove(id);
            }
            let record = records::state_partition_metadata(group_id, &next);
            if let Err(code) = self.write(vec![record], true) {
                return ShareOffsetsAlter::Refused(code, code.to_string());
            }
        }
        let request = (!offsets.is_empty()).then(|| InitializeShareGroupStateRequest {
            group_id: group_id.to_string(),
            topics: offsets
                .into_iter()
                .map(|(topic_id, ps)| InitializeStateData {
                    topic_id,
                    partitions: ps
                        .into_iter()
                        .map(|(partition, start_offset)| InitializePartition {
                            partition,
                            state_epoch: group_epoch,
                            start_offset,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        ShareOffsetsAlter::Accepted {
            topics: answered,
            request,
        }
    }

    /// DeleteShareGroupOffsets' first step (Kafka's `initiateDeleteShareGroupOffsets`):
    /// GROUP_ID_NOT_FOUND unless `group_id` is a share group, NON_EMPTY_GROUP while it has
    /// members; otherwise the named topics that are initialized move to the deleting list
    /// (the record is written whenever the group has state metadata, as Kafka writes it)
    /// and the state of their partitions is to be deleted.
    pub(crate) fn initiate_delete_share_group_offsets(
        &mut self,
        group_id: &str,
        topics: &[String],
    ) -> ShareOffsetsDeletion {
        let group = match self.groups.get(group_id) {
            Some(Group::Share(g)) => g,
            Some(_) => {
                return ShareOffsetsDeletion::Refused(
                    ErrorCode::GroupIdNotFound,
                    format!("Group {group_id} is not a share group."),
                )
            }
            None => {
                return ShareOffsetsDeletion::Refused(
                    ErrorCode::GroupIdNotFound,
                    format!("Group {group_id} not found."),
                )
            }
        };
        if !group.is_empty() {
            return ShareOffsetsDeletion::Refused(
                ErrorCode::NonEmptyGroup,
                "The group is not empty.".into(),
            );
        }
        let mut error_topics = Vec::new();
        let Some(current) = group.state_metadata.clone() else {
            return ShareOffsetsDeletion::Eligible {
                error_topics,
                request: None,
            };
        };
        let mut next = current.clone();
        let mut delete: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
        for name in topics {
            let Some((id, count)) = self.metadata.topic_by_name(name) else {
                error_topics.push(error_topic(
                    name,
                    ErrorCode::UnknownTopicOrPartition,
                    "This server does not host this topic-partition.",
                ));
                continue;
            };
            if let Some(v) = next.initialized.remove(&id) {
                delete.insert(id, v.partitions.iter().copied().collect());
                next.deleting.insert(id, name.clone());
            } else if next.deleting.contains_key(&id) {
                delete.insert(id, (0..count).collect());
            } else {
                error_topics.push(error_topic(
                    name,
                    ErrorCode::UnknownTopicOrPartition,
                    "There is no offset information to delete.",
                ));
            }
        }
        let record = records::state_partition_metadata(group_id, &next);
        if let Err(code) = self.write(vec![record], true) {
            return ShareOffsetsDeletion::Refused(code, code.to_string());
        }
        let request = (!delete.is_empty()).then(|| delete_state_request(group_id, delete));
        ShareOffsetsDeletion::Eligible {
            error_topics,
            request,
        }
    }

    /// DeleteShareGroupOffsets' last step (Kafka's `completeDeleteShareGroupOffsets`): the
    /// topics whose state the share coordinator deleted leave the deleting list; each is
    /// answered without error.
    pub(crate) fn complete_delete_share_group_offsets(
        &mut self,
        group_id: &str,
        deleted: &[(Uuid, String)],
    ) -> Vec<DeleteShareGroupOffsetsResponseTopic> {
        let current = match self.groups.get(group_id) {
            Some(Group::Share(g)) => g.state_metadata.clone(),
            _ => None,
        };
        let Some(current) = current else {
            return Vec::new();
        };
        let mut next = current;
        for (id, _) in deleted {
            next.deleting.remove(id);
        }
        let record = records::state_partition_metadata(group_id, &next);
        if let Err(code) = self.write(vec![record], true) {
            return deleted
                .iter()
                .map(|(id, name)| DeleteShareGroupOffsetsResponseTopic {
                    topic_id: *id,
                    ..error_topic(name, code, &code.to_string())
                })
                .collect();
        }
        deleted
            .iter()
            .map(|(id, name)| DeleteShareGroupOffsetsResponseTopic {
                topic_id: *id,
                topic_name: name.clone(),
                ..Default::default()
            })
            .collect()
    }
}
