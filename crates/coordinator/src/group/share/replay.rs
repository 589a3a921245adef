//! The share group records replayed onto the shard (Kafka's `GroupMetadataManager.replay`
//! overloads for them): replay is the only way a share group's state changes.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::coordinator::share_group_state_partition_metadata_value::TopicPartitionsInfo;
use kraftd_protocol::{
    GroupCoordinatorRecordKey as Key, GroupCoordinatorRecordValue as Value, Uuid,
};

use super::group::{InitMapValue, ShareGroup, ShareGroupMember, StatePartitionMetadata};
use crate::group::consumer::{MemberState, Partitions};
use crate::group::shard::{Group, GroupCoordinatorShard};

/// A record's topic partitions as the group keeps them (empty topics dropped).
fn partitions<I: IntoIterator<Item = (Uuid, Vec<i32>)>>(list: I) -> Partitions {
    let mut p = Partitions::new();
    for (t, ps) in list {
        p.entry(t).or_default().extend(ps);
    }
    p.retain(|_, ps| !ps.is_empty());
    p
}

fn init_map(list: Vec<TopicPartitionsInfo>, timestamp: i64) -> BTreeMap<Uuid, InitMapValue> {
    list.into_iter()
        .map(|t| {
            (
                t.topic_id,
                InitMapValue {
                    name: t.topic_name,
                    partitions: t.partitions.into_iter().collect::<BTreeSet<i32>>(),
                    timestamp,
                },
            )
        })
        .collect()
}

impl GroupCoordinatorShard {
    /// The share group `id` a record applies to (Kafka's
    /// `getOrMaybeCreatePersistedShareGroup`): created for a value, `None` for a tombstone
    /// of a group that is not there; a group of another type is a corrupt log.
    fn persisted_share_group(
        &mut self,
        id: &str,
        create: bool,
    ) -> Result<Option<&mut ShareGroup>, String> {
        match self.groups.get(id) {
            Some(Group::Share(_)) => {}
            Some(_) => return Err(format!("group {id} is not a share group")),
            None if create => {
                self.groups.insert(
                    id.to_string(),
                    Group::Share(ShareGroup::new(id.to_string())),
                );
            }
            None => return Ok(None),
        }
        match self.groups.get_mut(id) {
            Some(Group::Share(g)) => Ok(Some(g)),
            _ => Ok(None),
        }
    }

    /// Applies one record to the share groups; `Ok(false)` when it is not one of theirs.
    pub(crate) fn share_replay_record(
        &mut self,
        key: &Key,
        value: Option<Value>,
    ) -> Result<bool, String> {
        let mismatch = |v: &Value| format!("{:?} key with a {:?} value", key.key(), v.key());
        let now = self.now_ms;
        match (key, value) {
            (Key::ShareGroupMetadata(k), None) => {
                if let Some(g) = self.persisted_share_group(&k.group_id, false)? {
                    if !g.members.is_empty() || !g.target_assignment.is_empty() {
                        return Err(format!(
                            "a tombstone deletes share group {} which still has members",
                            k.group_id
                        ));
                    }
                    self.groups.remove(&k.group_id);
                }
            }
            (Key::ShareGroupMetadata(k), Some(Value::ShareGroupMetadata(v))) => {
                if let Some(g) = self.persisted_share_group(&k.group_id, true)? {
                    g.group_epoch = v.epoch;
                    g.metadata_hash = v.metadata_hash;
                }
            }
            (Key::ShareGroupMemberMetadata(k), None) => {
                if let Some(g) = self.persisted_share_group(&k.group_id, false)? {
                    g.members.remove(&k.member_id);
                }
            }
            (Key::ShareGroupMemberMetadata(k), Some(Value::ShareGroupMemberMetadata(v))) => {
                if let Some(g) = self.persisted_share_group(&k.group_id, true)? {
                    let m = g
                        .members
                        .entry(k.member_id.clone())
                        .or_insert_with(|| ShareGroupMember::new(k.member_id.clone()));
                    m.rack_id = v.rack_id;
                    m.client_id = v.client_id;
                    m.client_host = v.client_host;
                    m.subscribed_topic_names = v.subscribed_topic_names.into_iter().collect();
                }
            }
            (Key::ShareGroupTargetAssignmentMember(k), None) => {
                if let Some(g) = self.persisted_share_group(&k.group_id, false)? {
                    g.target_assignment.remove(&k.member_id);
                }
            }
            (
                Key::ShareGroupTargetAssignmentMember(k),
                Some(Value::ShareGroupTargetAssignmentMember(v)),
            ) => {
                if let Some(g) = self.persisted_share_group(&k.group_id, true)? {
                    let p = partitions(
                        v.topic_partitions
                            .into_iter()
                            .map(|tp| (tp.topic_id, tp.partitions)),
                    );
                    g.target_assignment.insert(k.member_id.clone(), p);
                }
            }
            (Key::ShareGroupTargetAssignmentMetadata(k), None) => {
                if let Some(g) = self.persisted_share_group(&k.group_id, false)? {
                    g.assignment_epoch = -1;
                    g.assignment_timestamp = 0;
                }
            }
            (
                Key::ShareGroupTargetAssignmentMetadata(k),
                Some(Value::ShareGroupTargetAssignmentMetadata(v)),
            ) => {
                if let Some(g) = self.persisted_share_group(&k.group_id, true)? {
                    g.assignment_epoch = v.assignment_epoch;
                    g.assignment_timestamp = v.assignment_timestamp;
                }
            }
            (Key::ShareGroupCurrentMemberAssignment(k), None) => {
                if let Some(g) = self.persisted_share_group(&k.group_id, false)? {
                    if let Some(m) = g.members.get_mut(&k.member_id) {
                        m.member_epoch = -1;
                        m.previous_member_epoch = -1;
                        m.assigned.clear();
                    }
                }
            }
            (
                Key::ShareGroupCurrentMemberAssignment(k),
                Some(Value::ShareGroupCurrentMemberAssignment(v)),
            ) => {
                if let Some(g) = self.persisted_share_group(&k.group_id, true)? {
                    let m = g
                        .members
                        .entry(k.member_id.clone())
                        .or_insert_with(|| ShareGroupMember::new(k.member_id.clone()));
                    m.member_epoch = v.member_epoch;
                    m.previous_member_epoch = v.previous_member_epoch;
                    m.state = MemberState::from_value(v.state);
                    m.assigned = partitions(
                        v.assigned_partitions
                            .into_iter()
                            .map(|tp| (tp.topic_id, tp.partitions)),
                    );
                }
            }
            (Key::ShareGroupStatePartitionMetadata(k), None) => {
                if let Some(g) = self.persisted_share_group(&k.group_id, false)? {
                    g.state_metadata = None;
                }
            }
            (
                Key::ShareGroupStatePartitionMetadata(k),
                Some(Value::ShareGroupStatePartitionMetadata(v)),
            ) => {
                if let Some(g) = self.persisted_share_group(&k.group_id, true)? {
                    // Kafka stamps the lists with the time of replay: an initialization
                    // found pending on load is retried once the retry interval passes.
                    g.state_metadata = Some(StatePartitionMetadata {
                        initializing: init_map(v.initializing_topics, now),
                        initialized: init_map(v.initialized_topics, now),
                        deleting: v
                            .deleting_topics
                            .into_iter()
                            .map(|t| (t.topic_id, t.topic_name))
                            .collect(),
                    });
                }
            }
            (
                Key::ShareGroupMetadata(_)
                | Key::ShareGroupMemberMetadata(_)
                | Key::ShareGroupTargetAssignmentMember(_)
                | Key::ShareGroupTargetAssignmentMetadata(_)
                | Key::ShareGroupCurrentMemberAssignment(_)
                | Key::ShareGroupStatePartitionMetadata(_),
                Some(v),
            ) => return Err(mismatch(&v)),
            _ => return Ok(false),
        }
        Ok(true)
    }
}
