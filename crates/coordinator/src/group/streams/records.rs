//! The streams group records (Kafka's `StreamsCoordinatorRecordHelpers`, all at value
//! version 0); their replay onto the shard is `replay.rs`.

use std::collections::BTreeMap;

use kraftd_protocol::coordinator::streams_group_current_member_assignment_value::TaskIds as CurrentTaskIds;
use kraftd_protocol::coordinator::streams_group_member_metadata_value::{
    Endpoint as MemberEndpoint, KeyValue as MemberKeyValue,
};
use kraftd_protocol::coordinator::streams_group_metadata_value::LastAssignmentConfig;
use kraftd_protocol::coordinator::streams_group_target_assignment_member_value::TaskIds as TargetTaskIds;
use kraftd_protocol::coordinator::{
    StreamsGroupCurrentMemberAssignmentKey, StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataKey, StreamsGroupMemberMetadataValue, StreamsGroupMetadataKey,
    StreamsGroupMetadataValue, StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMemberValue, StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTargetAssignmentMetadataValue, StreamsGroupTopologyKey, StreamsGroupTopologyValue,
};
use kraftd_protocol::{GroupCoordinatorRecordKey as Key, GroupCoordinatorRecordValue as Value};

use super::group::{StreamsGroup, StreamsGroupMember, TargetTasks, Tasks, TasksWithEpochs};
use crate::group::record::CoordinatorRecord;

/// Every streams group value is written at version 0.
const VERSION: i16 = 0;

pub fn member_metadata(group: &str, m: &StreamsGroupMember) -> CoordinatorRecord {
    CoordinatorRecord::new(
        member_key(group, &m.member_id),
        Value::StreamsGroupMemberMetadata(StreamsGroupMemberMetadataValue {
            instance_id: m.instance_id.clone(),
            rack_id: m.rack_id.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            topology_epoch: m.topology_epoch,
            process_id: m.process_id.clone(),
            user_endpoint: m.user_endpoint.as_ref().map(|(h, p)| MemberEndpoint {
                host: h.clone(),
                port: *p,
                ..Default::default()
            }),
            client_tags: m
                .client_tags
                .iter()
                .map(|(k, v)| MemberKeyValue {
                    key: k.clone(),
                    value: v.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn member_metadata_tombstone(group: &str, member: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(member_key(group, member))
}

fn member_key(group: &str, member: &str) -> Key {
    Key::StreamsGroupMemberMetadata(StreamsGroupMemberMetadataKey {
        group_id: group.to_string(),
        member_id: member.to_string(),
    })
}

/// StreamsGroupMetadata at `epoch`, the group's other fields as they are.
pub fn group_epoch(
    g: &StreamsGroup,
    epoch: i32,
    metadata_hash: i64,
    validated_topology_epoch: i32,
) -> CoordinatorRecord {
    CoordinatorRecord::new(
        group_key(&g.group_id),
        Value::StreamsGroupMetadata(StreamsGroupMetadataValue {
            epoch,
            metadata_hash,
            validated_topology_epoch,
            last_assignment_configs: (!g.last_assignment_configs.is_empty()).then(|| {
                g.last_assignment_configs
                    .iter()
                    .map(|(k, v)| LastAssignmentConfig {
                        key: k.clone(),
                        value: v.clone(),
                        ..Default::default()
                    })
                    .collect()
            }),
            stored_description_topology_epoch: g.stored_description_topology_epoch,
            failed_description_topology_epoch: g.failed_description_topology_epoch,
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn group_epoch_tombstone(group: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(group_key(group))
}

fn group_key(group: &str) -> Key {
    Key::StreamsGroupMetadata(StreamsGroupMetadataKey {
        group_id: group.to_string(),
    })
}

pub fn topology(group: &str, value: &StreamsGroupTopologyValue) -> CoordinatorRecord {
    CoordinatorRecord::new(
        topology_key(group),
        Value::StreamsGroupTopology(value.clone()),
        VERSION,
    )
}

pub fn topology_tombstone(group: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(topology_key(group))
}

fn topology_key(group: &str) -> Key {
    Key::StreamsGroupTopology(StreamsGroupTopologyKey {
        group_id: group.to_string(),
    })
}

fn target_ids(tasks: &Tasks) -> Vec<TargetTaskIds> {
    tasks
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(s, p)| TargetTaskIds {
            subtopology_id: s.clone(),
            partitions: p.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

pub fn target_assignment(group: &str, member: &str, t: &TargetTasks) -> CoordinatorRecord {
    CoordinatorRecord::new(
        target_key(group, member),
        Value::StreamsGroupTargetAssignmentMember(StreamsGroupTargetAssignmentMemberValue {
            active_tasks: target_ids(&t.active),
            standby_tasks: target_ids(&t.standby),
            warmup_tasks: target_ids(&t.warmup),
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn target_assignment_tombstone(group: &str, member: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(target_key(group, member))
}

fn target_key(group: &str, member: &str) -> Key {
    Key::StreamsGroupTargetAssignmentMember(StreamsGroupTargetAssignmentMemberKey {
        group_id: group.to_string(),
        member_id: member.to_string(),
    })
}

pub fn target_assignment_epoch(group: &str, epoch: i32, timestamp: i64) -> CoordinatorRecord {
    CoordinatorRecord::new(
        target_epoch_key(group),
        Value::StreamsGroupTargetAssignmentMetadata(StreamsGroupTargetAssignmentMetadataValue {
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
    Key::StreamsGroupTargetAssignmentMetadata(StreamsGroupTargetAssignmentMetadataKey {
        group_id: group.to_string(),
    })
}

fn current_ids(tasks: &Tasks) -> Vec<CurrentTaskIds> {
    tasks
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(s, p)| CurrentTaskIds {
            subtopology_id: s.clone(),
            partitions: p.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

/// Active tasks with their assignment epochs (the tagged `AssignmentEpochs`, one per
/// partition, in the partitions' order).
fn current_ids_with_epochs(tasks: &TasksWithEpochs) -> Vec<CurrentTaskIds> {
    tasks
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(s, p)| CurrentTaskIds {
            subtopology_id: s.clone(),
            partitions: p.keys().copied().collect(),
            assignment_epochs: Some(p.values().copied().collect()),
            ..Default::default()
        })
        .collect()
}

pub fn current_assignment(group: &str, m: &StreamsGroupMember) -> CoordinatorRecord {
    CoordinatorRecord::new(
        current_key(group, &m.member_id),
        Value::StreamsGroupCurrentMemberAssignment(StreamsGroupCurrentMemberAssignmentValue {
            member_epoch: m.member_epoch,
            previous_member_epoch: m.previous_member_epoch,
            state: m.state.value(),
            active_tasks: current_ids_with_epochs(&m.assigned.active),
            standby_tasks: current_ids(&m.assigned.standby),
            warmup_tasks: current_ids(&m.assigned.warmup),
            active_tasks_pending_revocation: current_ids_with_epochs(&m.pending_revocation.active),
            standby_tasks_pending_revocation: current_ids(&m.pending_revocation.standby),
            warmup_tasks_pending_revocation: current_ids(&m.pending_revocation.warmup),
            ..Default::default()
        }),
        VERSION,
    )
}

pub fn current_assignment_tombstone(group: &str, member: &str) -> CoordinatorRecord {
    CoordinatorRecord::tombstone(current_key(group, member))
}

fn current_key(group: &str, member: &str) -> Key {
    Key::StreamsGroupCurrentMemberAssignment(StreamsGroupCurrentMemberAssignmentKey {
        group_id: group.to_string(),
        member_id: member.to_string(),
    })
}

/// The record's tasks back as the group keeps them.
pub(super) fn tasks_of(list: Vec<CurrentTaskIds>) -> Tasks {
    let mut out = Tasks::new();
    for t in list {
        out.entry(t.subtopology_id)
            .or_default()
            .extend(t.partitions);
    }
    out.retain(|_, p| !p.is_empty());
    out
}

/// Active tasks back with their epochs; a record without epochs (an older writer) stamps
/// them with `default_epoch`, as Kafka's `fromRecord` does with the member epoch.
pub(super) fn tasks_with_epochs_of(
    list: Vec<CurrentTaskIds>,
    default_epoch: i32,
) -> TasksWithEpochs {
    let mut out: TasksWithEpochs = BTreeMap::new();
    for t in list {
        let epochs = t.assignment_epochs.unwrap_or_default();
        let e = out.entry(t.subtopology_id).or_default();
        for (i, p) in t.partitions.into_iter().enumerate() {
            e.insert(p, epochs.get(i).copied().unwrap_or(default_epoch));
        }
    }
    out.retain(|_, p| !p.is_empty());
    out
}

pub(super) fn target_tasks_of(list: Vec<TargetTaskIds>) -> Tasks {
    let mut out = Tasks::new();
    for t in list {
        out.entry(t.subtopology_id)
            .or_default()
            .extend(t.partitions);
    }
    out.retain(|_, p| !p.is_empty());
    out
}
