//! The streams group records replayed onto the shard (Kafka's `GroupMetadataManager.replay`
//! overloads for them): replay is the only way a streams group's state changes.

use kraftd_protocol::{GroupCoordinatorRecordKey as Key, GroupCoordinatorRecordValue as Value};

use super::group::{StreamsGroup, StreamsGroupMember, TargetTasks, TasksTuple};
use super::records::{target_tasks_of, tasks_of, tasks_with_epochs_of};
use crate::group::consumer::MemberState;
use crate::group::shard::{Group, GroupCoordinatorShard};

impl GroupCoordinatorShard {
    /// The streams group `id` a record applies to (Kafka's
    /// `getOrMaybeCreatePersistedStreamsGroup`): created for a value, `None` for a tombstone
    /// of a group that is not there; a group of another type is a corrupt log.
    fn persisted_streams_group(
        &mut self,
        id: &str,
        create: bool,
    ) -> Result<Option<&mut StreamsGroup>, String> {
        match self.groups.get(id) {
            Some(Group::Streams(_)) => {}
            Some(_) => return Err(format!("group {id} is not a streams group")),
            None if create => {
                self.groups.insert(
                    id.to_string(),
                    Group::Streams(StreamsGroup::new(id.to_string())),
                );
            }
            None => return Ok(None),
        }
        match self.groups.get_mut(id) {
            Some(Group::Streams(g)) => Ok(Some(g)),
            _ => Ok(None),
        }
    }

    /// Applies one record to the streams groups; `Ok(false)` when it is not one of theirs.
    pub(crate) fn streams_replay_record(
        &mut self,
        key: &Key,
        value: Option<Value>,
    ) -> Result<bool, String> {
        let mismatch = |v: &Value| format!("{:?} key with a {:?} value", key.key(), v.key());
        match (key, value) {
            (Key::StreamsGroupMetadata(k), None) => {
                if let Some(g) = self.persisted_streams_group(&k.group_id, false)? {
                    if !g.members.is_empty() || !g.target_assignment.is_empty() {
                        return Err(format!(
                            "a tombstone deletes streams group {} which still has members",
                            k.group_id
                        ));
                    }
                    self.groups.remove(&k.group_id);
                }
            }
            (Key::StreamsGroupMetadata(k), Some(Value::StreamsGroupMetadata(v))) => {
                if let Some(g) = self.persisted_streams_group(&k.group_id, true)? {
                    g.group_epoch = v.epoch;
                    g.metadata_hash = v.metadata_hash;
                    g.validated_topology_epoch = v.validated_topology_epoch;
                    g.last_assignment_configs = v
                        .last_assignment_configs
                        .unwrap_or_default()
                        .into_iter()
                        .map(|c| (c.key, c.value))
                        .collect();
                    g.stored_description_topology_epoch = v.stored_description_topology_epoch;
                    g.failed_description_topology_epoch = v.failed_description_topology_epoch;
                }
            }
            (Key::StreamsGroupTopology(k), None) => {
                if let Some(g) = self.persisted_streams_group(&k.group_id, false)? {
                    g.topology = None;
                }
            }
            (Key::StreamsGroupTopology(k), Some(Value::StreamsGroupTopology(v))) => {
                if let Some(g) = self.persisted_streams_group(&k.group_id, true)? {
                    g.topology = Some(v);
                }
            }
            (Key::StreamsGroupMemberMetadata(k), None) => {
                if let Some(g) = self.persisted_streams_group(&k.group_id, false)? {
                    g.members.remove(&k.member_id);
                }
            }
            (Key::StreamsGroupMemberMetadata(k), Some(Value::StreamsGroupMemberMetadata(v))) => {
                if let Some(g) = self.persisted_streams_group(&k.group_id, true)? {
                    let m = g
                        .members
                        .entry(k.member_id.clone())
                        .or_insert_with(|| StreamsGroupMember::new(k.member_id.clone()));
                    m.instance_id = v.instance_id;
                    m.rack_id = v.rack_id;
                    m.client_id = v.client_id;
                    m.client_host = v.client_host;
                    m.rebalance_timeout_ms = v.rebalance_timeout_ms;
                    m.topology_epoch = v.topology_epoch;
                    m.process_id = v.process_id;
                    m.user_endpoint = v.user_endpoint.map(|e| (e.host, e.port));
                    m.client_tags = v
                        .client_tags
                        .into_iter()
                        .map(|kv| (kv.key, kv.value))
                        .collect();
                }
            }
            (Key::StreamsGroupTargetAssignmentMember(k), None) => {
                if let Some(g) = self.persisted_streams_group(&k.group_id, false)? {
                    g.target_assignment.remove(&k.member_id);
                }
            }
            (
                Key::StreamsGroupTargetAssignmentMember(k),
                Some(Value::StreamsGroupTargetAssignmentMember(v)),
            ) => {
                if let Some(g) = self.persisted_streams_group(&k.group_id, true)? {
                    g.target_assignment.insert(
                        k.member_id.clone(),
                        TargetTasks {
                            active: target_tasks_of(v.active_tasks),
                            standby: target_tasks_of(v.standby_tasks),
                            warmup: target_tasks_of(v.warmup_tasks),
                        },
                    );
                }
            }
            (Key::StreamsGroupTargetAssignmentMetadata(k), None) => {
                if let Some(g) = self.persisted_streams_group(&k.group_id, false)? {
                    g.assignment_epoch = -1;
                    g.assignment_timestamp = 0;
                }
            }
            (
                Key::StreamsGroupTargetAssignmentMetadata(k),
                Some(Value::StreamsGroupTargetAssignmentMetadata(v)),
            ) => {
                if let Some(g) = self.persisted_streams_group(&k.group_id, true)? {
                    g.assignment_epoch = v.assignment_epoch;
                    g.assignment_timestamp = v.assignment_timestamp;
                }
            }
            (Key::StreamsGroupCurrentMemberAssignment(k), None) => {
                if let Some(g) = self.persisted_streams_group(&k.group_id, false)? {
                    if let Some(m) = g.members.get_mut(&k.member_id) {
                        m.member_epoch = -1;
                        m.previous_member_epoch = -1;
                        m.state = MemberState::Stable;
                        m.assigned = TasksTuple::default();
                        m.pending_revocation = TasksTuple::default();
                    }
                }
            }
            (
                Key::StreamsGroupCurrentMemberAssignment(k),
                Some(Value::StreamsGroupCurrentMemberAssignment(v)),
            ) => {
                if let Some(g) = self.persisted_streams_group(&k.group_id, true)? {
                    let m = g
                        .members
                        .entry(k.member_id.clone())
                        .or_insert_with(|| StreamsGroupMember::new(k.member_id.clone()));
                    m.member_epoch = v.member_epoch;
                    m.previous_member_epoch = v.previous_member_epoch;
                    m.state = MemberState::from_value(v.state);
                    m.assigned = TasksTuple {
                        active: tasks_with_epochs_of(v.active_tasks, v.member_epoch),
                        standby: tasks_of(v.standby_tasks),
                        warmup: tasks_of(v.warmup_tasks),
                    };
                    m.pending_revocation = TasksTuple {
                        active: tasks_with_epochs_of(
                            v.active_tasks_pending_revocation,
                            v.member_epoch,
                        ),
                        standby: tasks_of(v.standby_tasks_pending_revocation),
                        warmup: tasks_of(v.warmup_tasks_pending_revocation),
                    };
                }
            }
            (
                Key::StreamsGroupMetadata(_)
                | Key::StreamsGroupTopology(_)
                | Key::StreamsGroupMemberMetadata(_)
                | Key::StreamsGroupTargetAssignmentMember(_)
                | Key::StreamsGroupTargetAssignmentMetadata(_)
                | Key::StreamsGroupCurrentMemberAssignment(_),
                Some(v),
            ) => return Err(mismatch(&v)),
            _ => return Ok(false),
        }
        Ok(true)
    }
}
