//! The consumer group records replayed onto the shard (Kafka's `GroupMetadataManager.replay`
//! overloads): replay is the only way a consumer group's state changes. Apart from the
//! record builders (`records.rs`), which the group itself uses, so that the group does not
//! depend on the shard that holds it.

use std::collections::BTreeMap;

use kraftd_protocol::coordinator::consumer_group_current_member_assignment_value::TopicPartitions as CurrentTopicPartitions;
use kraftd_protocol::{GroupCoordinatorRecordKey as Key, GroupCoordinatorRecordValue as Value};

use super::group::{ConsumerGroup, ResolvedRegex};
use super::member::{ConsumerGroupMember, MemberState, PartitionEpochs, Partitions};
use crate::group::shard::{Group, GroupCoordinatorShard};

/// A record's partitions with their assignment epochs; a record without them (written
/// before KIP-1251), or with a list of another length, takes the member epoch (Kafka's
/// `assignmentFromTopicPartitions`).
fn read_epochs(list: Vec<CurrentTopicPartitions>, member_epoch: i32) -> PartitionEpochs {
    let default = member_epoch.max(0);
    let mut out = PartitionEpochs::new();
    for tp in list {
        let epochs = tp
            .assignment_epochs
            .filter(|e| e.len() == tp.partitions.len());
        let entry: &mut BTreeMap<i32, i32> = out.entry(tp.topic_id).or_default();
        match epochs {
            Some(e) => entry.extend(tp.partitions.into_iter().zip(e)),
            None => entry.extend(tp.partitions.into_iter().map(|p| (p, default))),
        }
    }
    out.retain(|_, ps| !ps.is_empty());
    out
}

impl GroupCoordinatorShard {
    /// The consumer group `id` for a record to apply to: created for a value (replacing a
    /// "simple" classic group, one that only holds offsets), `None` for a tombstone of a
    /// group that is not there.
    fn persisted_consumer_group(
        &mut self,
        id: &str,
        create: bool,
    ) -> Result<Option<&mut ConsumerGroup>, String> {
        let replace = match self.groups.get(id) {
            Some(Group::Consumer(_)) => false,
            Some(Group::Share(_)) => return Err(format!("group {id} is a share group")),
            Some(Group::Streams(_)) => return Err(format!("group {id} is a streams group")),
            Some(Group::Classic(c)) => {
                if !create {
                    return Ok(None);
                }
                if !(c.is_empty() && c.protocol_type().is_empty()) {
                    return Err(format!("group {id} is a classic group"));
                }
                true
            }
            None if create => true,
            None => return Ok(None),
        };
        if replace {
            self.groups.insert(
                id.to_string(),
                Group::Consumer(ConsumerGroup::new(id.to_string())),
            );
        }
        match self.groups.get_mut(id) {
            Some(Group::Consumer(g)) => Ok(Some(g)),
            _ => Ok(None),
        }
    }

    /// Applies one record to the consumer groups; `Ok(false)` when it is not one of theirs.
    pub(crate) fn consumer_replay_record(
        &mut self,
        key: Key,
        value: Option<Value>,
    ) -> Result<bool, String> {
        let mismatch = |v: &Value| format!("{:?} key with a {:?} value", key.key(), v.key());
        match (&key, value) {
            (Key::ConsumerGroupMetadata(k), None) => {
                if self.persisted_consumer_group(&k.group_id, false)?.is_some() {
                    self.groups.remove(&k.group_id);
                }
            }
            (Key::ConsumerGroupMetadata(k), Some(Value::ConsumerGroupMetadata(v))) => {
                if let Some(g) = self.persisted_consumer_group(&k.group_id, true)? {
                    g.group_epoch = v.epoch;
                    g.metadata_hash = v.metadata_hash;
                }
            }
            (Key::ConsumerGroupPartitionMetadata(k), v) => {
                if let Some(v) = &v {
                    if !matches!(v, Value::ConsumerGroupPartitionMetadata(_)) {
                        return Err(mismatch(v));
                    }
                }
                if let Some(g) = self.persisted_consumer_group(&k.group_id, v.is_some())? {
                    g.has_partition_metadata_record = v.is_some();
                }
            }
            (Key::ConsumerGroupMemberMetadata(k), None) => {
                if let Some(g) = self.persisted_consumer_group(&k.group_id, false)? {
                    g.remove_member(&k.member_id);
                }
            }
            (Key::ConsumerGroupMemberMetadata(k), Some(Value::ConsumerGroupMemberMetadata(v))) => {
                if let Some(g) = self.persisted_consumer_group(&k.group_id, true)? {
                    let mut m = g
                        .members
                        .get(&k.member_id)
                        .cloned()
                        .unwrap_or_else(|| ConsumerGroupMember::new(k.member_id.clone()));
                    m.instance_id = v.instance_id;
                    m.rack_id = v.rack_id;
                    m.client_id = v.client_id;
                    m.client_host = v.client_host;
                    m.subscribed_topic_names = v.subscribed_topic_names.into_iter().collect();
                    m.subscribed_topic_regex = v.subscribed_topic_regex.unwrap_or_default();
                    m.rebalance_timeout_ms = v.rebalance_timeout_ms;
                    m.server_assignor = v.server_assignor;
                    m.classic_member_metadata = v.classic_member_metadata;
                    g.put_member(m);
                }
            }
            (Key::ConsumerGroupTargetAssignmentMember(k), None) => {
                if let Some(g) = self.persisted_consumer_group(&k.group_id, false)? {
                    g.target_assignment.remove(&k.member_id);
                }
            }
            (
                Key::ConsumerGroupTargetAssignmentMember(k),
                Some(Value::ConsumerGroupTargetAssignmentMember(v)),
            ) => {
                if let Some(g) = self.persisted_consumer_group(&k.group_id, true)? {
                    let mut p = Partitions::new();
                    for tp in v.topic_partitions {
                        p.entry(tp.topic_id).or_default().extend(tp.partitions);
                    }
                    p.retain(|_, ps| !ps.is_empty());
                    g.target_assignment.insert(k.member_id.clone(), p);
                }
            }
            (Key::ConsumerGroupTargetAssignmentMetadata(k), None) => {
                if let Some(g) = self.persisted_consumer_group(&k.group_id, false)? {
                    g.assignment_epoch = -1;
                }
            }
            (
                Key::ConsumerGroupTargetAssignmentMetadata(k),
                Some(Value::ConsumerGroupTargetAssignmentMetadata(v)),
            ) => {
                if let Some(g) = self.persisted_consumer_group(&k.group_id, true)? {
                    g.assignment_epoch = v.assignment_epoch;
                }
            }
            (Key::ConsumerGroupCurrentMemberAssignment(k), None) => {
                if let Some(g) = self.persisted_consumer_group(&k.group_id, false)? {
                    if let Some(mut m) = g.members.get(&k.member_id).cloned() {
                        m.member_epoch = -1;
                        m.previous_member_epoch = -1;
                        m.assigned.clear();
                        m.pending_revocation.clear();
                        g.put_member(m);
                    }
                }
            }
            (
                Key::ConsumerGroupCurrentMemberAssignment(k),
                Some(Value::ConsumerGroupCurrentMemberAssignment(v)),
            ) => {
                if let Some(g) = self.persisted_consumer_group(&k.group_id, true)? {
                    let mut m = g
                        .members
                        .get(&k.member_id)
                        .cloned()
                        .unwrap_or_else(|| ConsumerGroupMember::new(k.member_id.clone()));
                    m.member_epoch = v.member_epoch;
                    m.previous_member_epoch = v.previous_member_epoch;
                    m.state = MemberState::from_value(v.state);
                    m.assigned = read_epochs(v.assigned_partitions, v.member_epoch);
                    m.pending_revocation =
                        read_epochs(v.partitions_pending_revocation, v.member_epoch);
                    g.put_member(m);
                }
            }
            (Key::ConsumerGroupRegularExpression(k), None) => {
                if let Some(g) = self.persisted_consumer_group(&k.group_id, false)? {
                    g.resolved_regexes.remove(&k.regular_expression);
                }
            }
            (
                Key::ConsumerGroupRegularExpression(k),
                Some(Value::ConsumerGroupRegularExpression(v)),
            ) => {
                if let Some(g) = self.persisted_consumer_group(&k.group_id, true)? {
                    g.resolved_regexes.insert(
                        k.regular_expression.clone(),
                        ResolvedRegex {
                            topics: v.topics.into_iter().collect(),
                            version: v.version,
                            timestamp: v.timestamp,
                        },
                    );
                }
            }
            (
                Key::ConsumerGroupMetadata(_)
                | Key::ConsumerGroupMemberMetadata(_)
                | Key::ConsumerGroupTargetAssignmentMember(_)
                | Key::ConsumerGroupTargetAssignmentMetadata(_)
                | Key::ConsumerGroupCurrentMemberAssignment(_)
                | Key::ConsumerGroupRegularExpression(_),
                Some(v),
            ) => return Err(mismatch(&v)),
            _ => return Ok(false),
        }
        Ok(true)
    }
}
