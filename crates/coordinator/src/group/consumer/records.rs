//! The consumer group records (Kafka's `GroupCoordinatorRecordHelpers` for them, all at
//! value version 0); their replay onto the shard is `replay.rs`.

use kraftd_protocol::coordinator::consumer_group_current_member_assignment_value::TopicPartitions as CurrentTopicPartitions;
use kraftd_protocol::coordinator::consumer_group_target_assignment_member_value::TopicPartition as TargetTopicPartition;
use kraftd_protocol::coordinator::{
    ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue, ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue, ConsumerGroupPartitionMetadataKey,
    ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue,
};
use kraftd_protocol::{GroupCoordinatorRecordKey as Key, GroupCoordinatorRecordValue as Value};

use super::group::ResolvedRegex;
use super::member::{ConsumerGroupMember, PartitionEpochs, Partitions};
use crate::group::record::CoordinatorRecord;

/// Every consumer group value is written at version 0.
const VERSION: i16 = 0;

pub fn member_subscription(group: &str, m: &ConsumerGroupMember) -> CoordinatorRecord {
    CoordinatorRecord::new(
        member_key(group, &m.member_id),
        Value::ConsumerGroupMemberMetadata(ConsumerGroupMemberMetadataValue {
            instance_id: m.instance_id.clone(),
            rack_id: m.rack_id.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            subscribed_topic_names: m.subscribed_topic_names.iter().cloned().collect(),
            subscribed_topic_regex: Some(m.subscribed_topic_regex.clone()),
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            server_assignor: m.server_assignor.clone(),
            classic_member_metadata: m.classic_member_metadata.clone(),
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn member_subscription_tombstone(group: &str, member: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(member_key(group, member))
}

fn member_key(group: &str, member: &str) -> Key {
    Key::ConsumerGroupMemberMetadata(ConsumerGroupMemberMetadataKey {
        group_id: group.to_string(),
        member_id: member.to_string(),
    })
}

pub fn group_epoch(group: &str, epoch: i32, metadata_hash: i64) -> CoordinatorRecord {
    CoordinatorRecord::new(
        group_key(group),
        Value::ConsumerGroupMetadata(ConsumerGroupMetadataValue {
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
    Key::ConsumerGroupMetadata(ConsumerGroupMetadataKey {
        group_id: group.to_string(),
    })
}

pub fn partition_metadata_tombstone(group: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(Key::ConsumerGroupPartitionMetadata(
        ConsumerGroupPartitionMetadataKey {
            group_id: group.to_string(),
        },
    ))
}

pub fn target_assignment(group: &str, member: &str, p: &Partitions) -> CoordinatorRecord {
    CoordinatorRecord::new(
        target_key(group, member),
        Value::ConsumerGroupTargetAssignmentMember(ConsumerGroupTargetAssignmentMemberValue {
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
    Key::ConsumerGroupTargetAssignmentMember(ConsumerGroupTargetAssignmentMemberKey {
        group_id: group.to_string(),
        member_id: member.to_string(),
    })
}

pub fn target_assignment_epoch(group: &str, epoch: i32, timestamp: i64) -> CoordinatorRecord {
    CoordinatorRecord::new(
        target_epoch_key(group),
        Value::ConsumerGroupTargetAssignmentMetadata(ConsumerGroupTargetAssignmentMetadataValue {
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
    Key::ConsumerGroupTargetAssignmentMetadata(ConsumerGroupTargetAssignmentMetadataKey {
        group_id: group.to_string(),
    })
}

pub fn current_assignment(group: &str, m: &ConsumerGroupMember) -> CoordinatorRecord {
    CoordinatorRecord::new(
        current_key(group, &m.member_id),
        Value::ConsumerGroupCurrentMemberAssignment(ConsumerGroupCurrentMemberAssignmentValue {
            member_epoch: m.member_epoch,
            previous_member_epoch: m.previous_member_epoch,
            state: m.state.value(),
            assigned_partitions: with_epochs(&m.assigned),
            partitions_pending_revocation: with_epochs(&m.pending_revocation),
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn current_assignment_tombstone(group: &str, member: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(current_key(group, member))
}

fn current_key(group: &str, member: &str) -> Key {
    Key::ConsumerGroupCurrentMemberAssignment(ConsumerGroupCurrentMemberAssignmentKey {
        group_id: group.to_string(),
        member_id: member.to_string(),
    })
}

pub fn regex(group: &str, regex: &str, r: &ResolvedRegex) -> CoordinatorRecord {
    CoordinatorRecord::new(
        regex_key(group, regex),
        Value::ConsumerGroupRegularExpression(ConsumerGroupRegularExpressionValue {
            topics: r.topics.iter().cloned().collect(),
            version: r.version,
            timestamp: r.timestamp,
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn regex_tombstone(group: &str, regex: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(regex_key(group, regex))
}

fn regex_key(group: &str, regex: &str) -> Key {
    Key::ConsumerGroupRegularExpression(ConsumerGroupRegularExpressionKey {
        group_id: group.to_string(),
        regular_expression: regex.to_string(),
    })
}

fn with_epochs(p: &PartitionEpochs) -> Vec<CurrentTopicPartitions> {
    p.iter()
        .map(|(t, ps)| CurrentTopicPartitions {
            topic_id: *t,
            partitions: ps.keys().copied().collect(),
            assignment_epochs: Some(ps.values().copied().collect()),
            ..Default::default()
        })
        .collect()
}
