//! The share group records (Kafka's `GroupCoordinatorRecordHelpers` for them, all at value
//! version 0); their replay onto the shard is `replay.rs`.

use std::collections::BTreeMap;

use kraftd_protocol::coordinator::share_group_current_member_assignment_value::TopicPartitions as CurrentTopicPartitions;
use kraftd_protocol::coordinator::share_group_state_partition_metadata_value::{
    TopicInfo, TopicPartitionsInfo,
};
use kraftd_protocol::coordinator::share_group_target_assignment_member_value::TopicPartition as TargetTopicPartition;
use kraftd_protocol::coordinator::{
    ShareGroupCurrentMemberAssignmentKey, ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey, ShareGroupMemberMetadataValue, ShareGroupMetadataKey,
    ShareGroupMetadataValue, ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue, ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue, ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
};
use kraftd_protocol::{
    GroupCoordinatorRecordKey as Key, GroupCoordinatorRecordValue as Value, Uuid,
};

use super::group::{InitMapValue, ShareGroupMember, StatePartitionMetadata};
use crate::group::consumer::Partitions;
use crate::group::record::CoordinatorRecord;

/// Every share group value is written at version 0.
const VERSION: i16 = 0;

pub fn member_subscription(group: &str, m: &ShareGroupMember) -> CoordinatorRecord {
    CoordinatorRecord::new(
        member_key(group, &m.member_id),
        Value::ShareGroupMemberMetadata(ShareGroupMemberMetadataValue {
            rack_id: m.rack_id.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            subscribed_topic_names: m.subscribed_topic_names.iter().cloned().collect(),
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn member_subscription_tombstone(group: &str, member: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(member_key(group, member))
}

fn member_key(group: &str, member: &str) -> Key {
    Key::ShareGroupMemberMetadata(ShareGroupMemberMetadataKey {
        group_id: group.to_string(),
        member_id: member.to_string(),
    })
}

pub fn group_epoch(group: &str, epoch: i32, metadata_hash: i64) -> CoordinatorRecord {
    CoordinatorRecord::new(
        group_key(group),
        Value::ShareGroupMetadata(ShareGroupMetadataValue {
            epoch,
            metadata_hash,
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn group_epoch_tombstone(group: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(group_key(group))
}

fn group_key(group: &str) -> Key {
    Key::ShareGroupMetadata(ShareGroupMetadataKey {
        group_id: group.to_string(),
    })
}

pub fn target_assignment(group: &str, member: &str, p: &Partitions) -> CoordinatorRecord {
    CoordinatorRecord::new(
        target_key(group, member),
        Value::ShareGroupTargetAssignmentMember(ShareGroupTargetAssignmentMemberValue {
            topic_partitions: p
                .iter()
                .map(|(t, ps)| TargetTopicPartition {
                    topic_id: *t,
                    partitions: ps.iter().copied().collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn target_assignment_tombstone(group: &str, member: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(target_key(group, member))
}

fn target_key(group: &str, member: &str) -> Key {
    Key::ShareGroupTargetAssignmentMember(ShareGroupTargetAssignmentMemberKey {
        group_id: group.to_string(),
        member_id: member.to_string(),
    })
}

pub fn target_assignment_epoch(group: &str, epoch: i32, timestamp: i64) -> CoordinatorRecord {
    CoordinatorRecord::new(
        target_epoch_key(group),
        Value::ShareGroupTargetAssignmentMetadata(ShareGroupTargetAssignmentMetadataValue {
            assignment_epoch: epoch,
            assignment_timestamp: timestamp,
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn target_assignment_epoch_tombstone(group: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(target_epoch_key(group))
}

fn target_epoch_key(group: &str) -> Key {
    Key::ShareGroupTargetAssignmentMetadata(ShareGroupTargetAssignmentMetadataKey {
        group_id: group.to_string(),
    })
}

pub fn current_assignment(group: &str, m: &ShareGroupMember) -> CoordinatorRecord {
    CoordinatorRecord::new(
        current_key(group, &m.member_id),
        Value::ShareGroupCurrentMemberAssignment(ShareGroupCurrentMemberAssignmentValue {
            member_epoch: m.member_epoch,
            previous_member_epoch: m.previous_member_epoch,
            state: m.state.value(),
            assigned_partitions: m
                .assigned
                .iter()
                .map(|(t, ps)| CurrentTopicPartitions {
                    topic_id: *t,
                    partitions: ps.iter().copied().collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn current_assignment_tombstone(group: &str, member: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(current_key(group, member))
}

fn current_key(group: &str, member: &str) -> Key {
    Key::ShareGroupCurrentMemberAssignment(ShareGroupCurrentMemberAssignmentKey {
        group_id: group.to_string(),
        member_id: member.to_string(),
    })
}

/// ShareGroupStatePartitionMetadata with the three lists of `s`.
pub fn state_partition_metadata(group: &str, s: &StatePartitionMetadata) -> CoordinatorRecord {
    let infos = |m: &BTreeMap<Uuid, InitMapValue>| -> Vec<TopicPartitionsInfo> {
        m.iter()
            .map(|(id, v)| TopicPartitionsInfo {
                topic_id: *id,
                topic_name: v.name.clone(),
                partitions: v.partitions.iter().copied().collect(),
                ..Default::default()
            })
            .collect()
    };
    CoordinatorRecord::new(
        state_key(group),
        Value::ShareGroupStatePartitionMetadata(ShareGroupStatePartitionMetadataValue {
            initializing_topics: infos(&s.initializing),
            initialized_topics: infos(&s.initialized),
            deleting_topics: s
                .deleting
                .iter()
                .map(|(id, name)| TopicInfo {
                    topic_id: *id,
                    topic_name: name.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn state_partition_metadata_tombstone(group: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(state_key(group))
}

fn state_key(group: &str) -> Key {
    Key::ShareGroupStatePartitionMetadata(ShareGroupStatePartitionMetadataKey {
        group_id: group.to_string(),
    })
}
