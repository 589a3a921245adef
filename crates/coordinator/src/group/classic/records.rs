//! GroupMetadata records (Kafka's `newGroupMetadataRecord`, `newEmptyGroupMetadataRecord`
//! and the GroupMetadata `replay`), loading, and what a consumer group subscribes to.

use std::collections::{BTreeSet, HashMap};

use bytes::{Buf, Bytes};
use kraftd_protocol::coordinator::group_metadata_value::MemberMetadata;
use kraftd_protocol::coordinator::{GroupMetadataKey, GroupMetadataValue};
use kraftd_protocol::messages::ConsumerProtocolSubscription;
use kraftd_protocol::{GroupCoordinatorRecordKey, GroupCoordinatorRecordValue, Message};

use super::group::{ClassicGroup, ClassicGroupMember, ClassicGroupState, CONSUMER_PROTOCOL_TYPE};
use super::GROUP_METADATA_VALUE_VERSION;
use crate::group::record::CoordinatorRecord;
use crate::group::shard::{Group, GroupCoordinatorShard};

fn key(group_id: &str) -> GroupCoordinatorRecordKey {
    GroupCoordinatorRecordKey::GroupMetadata(GroupMetadataKey {
        group: group_id.to_string(),
    })
}

/// The group's GroupMetadata record: its generation and, for each member, the metadata of
/// the selected protocol and the assignment from `assignment` (each member's current one
/// when `None`).
pub(crate) fn group_metadata_record(
    g: &ClassicGroup,
    assignment: Option<&HashMap<String, Bytes>>,
) -> CoordinatorRecord {
    let protocol = g.protocol_name.as_deref().unwrap_or("");
    let members = g
        .members
        .values()
        .map(|m| MemberMetadata {
            member_id: m.member_id.clone(),
            group_instance_id: m.group_instance_id.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            rebalance_timeout: m.rebalance_timeout_ms,
            session_timeout: m.session_timeout_ms,
            subscription: m.metadata(protocol),
            assignment: match assignment {
                Some(a) => a.get(&m.member_id).cloned().unwrap_or_default(),
                None => m.assignment.clone(),
            },
            ..Default::default()
        })
        .collect();
    let value = GroupMetadataValue {
        protocol_type: g.protocol_type().to_string(),
        generation: g.generation_id,
        protocol: g.protocol_name.clone(),
        leader: g.leader_id.clone(),
        current_state_timestamp: g.current_state_timestamp.unwrap_or(-1),
        members,
        ..Default::default()
    };
    CoordinatorRecord::new(
        key(&g.group_id),
        GroupCoordinatorRecordValue::GroupMetadata(value),
        GROUP_METADATA_VALUE_VERSION,
    )
}

/// The record of a group just created: generation 0, no protocol, no members.
pub(crate) fn empty_group_metadata_record(g: &ClassicGroup) -> CoordinatorRecord {
    let value = GroupMetadataValue {
        protocol_type: String::new(),
        generation: 0,
        protocol: None,
        leader: None,
        current_state_timestamp: g.current_state_timestamp.unwrap_or(-1),
        members: Vec::new(),
        ..Default::default()
    };
    CoordinatorRecord::new(
        key(&g.group_id),
        GroupCoordinatorRecordValue::GroupMetadata(value),
        GROUP_METADATA_VALUE_VERSION,
    )
}

/// The topics of a ConsumerProtocolSubscription (an int16 version, then the struct). Every
/// version starts with v0's fields, so v0 is read whatever the version; `None` when it
/// does not parse.
pub(crate) fn subscription_topics(metadata: &Bytes) -> Option<Vec<String>> {
    let mut b = metadata.clone();
    if b.remaining() < 2 {
        return None;
    }
    if b.get_i16() < 0 {
        return None;
    }
    ConsumerProtocolSubscription::decode(&mut b, 0)
        .ok()
        .map(|s| s.topics)
}

impl ClassicGroup {
    /// The tombstone that deletes the group.
    pub fn delete_records(&self) -> Vec<CoordinatorRecord> {
        vec![CoordinatorRecord::tombstone(key(&self.group_id))]
    }

    /// The topics the members subscribe to (Kafka's `computeSubscribedTopics`): only for
    /// the consumer protocol with a selected protocol, and only when every member's
    /// subscription parses.
    pub(crate) fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if self.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return None;
        }
        if self.members.is_empty() {
            return Some(BTreeSet::new());
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for m in self.members.values() {
            topics.extend(subscription_topics(&m.metadata(protocol))?);
        }
        Some(topics)
    }
}

impl GroupCoordinatorShard {
    /// A GroupMetadata record of the log (loading): the group as it was written, Stable
    /// with its members or Empty; a tombstone deletes it.
    pub(crate) fn classic_replay_group_metadata(
        &mut self,
        key: GroupMetadataKey,
        value: Option<GroupMetadataValue>,
    ) {
        let Some(v) = value else {
            if matches!(self.groups.get(&key.group), Some(Group::Classic(_))) {
                self.groups.remove(&key.group);
            }
            return;
        };
        let state = if v.members.is_empty() {
            ClassicGroupState::Empty
        } else {
            ClassicGroupState::Stable
        };
        let mut g = ClassicGroup::new(key.group.clone(), state, self.now_ms);
        g.current_state_timestamp =
            (v.current_state_timestamp != -1).then_some(v.current_state_timestamp);
        g.generation_id = v.generation;
        g.protocol_type = (!v.protocol_type.is_empty()).then(|| v.protocol_type.clone());
        g.protocol_name = v.protocol.clone();
        g.leader_id = v.leader.clone();
        let protocol = v.protocol.unwrap_or_default();
        for m in v.members {
            g.add(ClassicGroupMember {
                member_id: m.member_id,
                group_instance_id: m.group_instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                // Records before v1 have no rebalance timeout.
                rebalance_timeout_ms: if m.rebalance_timeout == -1 {
                    m.session_timeout
                } else {
                    m.rebalance_timeout
                },
                session_timeout_ms: m.session_timeout,
                protocol_type: v.protocol_type.clone(),
                protocols: vec![(protocol.clone(), m.subscription)],
                assignment: m.assignment,
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
            });
        }
        g.subscribed_topics = g.compute_subscribed_topics();
        self.groups.insert(key.group, Group::Classic(g));
    }

    /// After loading (Kafka's `onLoaded`): every loaded member must heartbeat within its
    /// session; a group over `group.max.size` rebalances.
    pub(crate) fn classic_on_loaded(&mut self) {
        let mut ids: Vec<String> = self
            .groups
            .iter()
            .filter(|(_, g)| matches!(g, Group::Classic(_)))
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        let max = usize::try_from(self.config.classic_group_max_size).unwrap_or(0);
        for id in ids {
            let Some(mut g) = self.take_classic(&id) else {
                continue;
            };
            let sessions: Vec<(String, i64)> = g
                .members()
                .map(|m| (m.member_id.clone(), i64::from(m.session_timeout_ms)))
                .collect();
            for (member, session) in sessions {
                self.schedule_heartbeat(&id, &member, session);
            }
            if g.num_members() > max && g.can_rebalance() {
                self.prepare_rebalance(&mut g);
            }
            self.put_classic(g);
        }
    }
}
