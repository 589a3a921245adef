//! `ClassicGroup` (Kafka's class of that name): the state of
//! one classic group and the rules that need nothing but that state. What involves timers,
//! replies or records lives in the shard's methods (`join`, `rebalance`, `sync`, ...).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;
use kraftd_protocol::messages::describe_groups_response::DescribedGroup;
use kraftd_protocol::messages::join_group_response::JoinGroupResponseMember;
use kraftd_protocol::ErrorCode;

use crate::group::commit_api::CommitApi;

pub use super::member::ClassicGroupMember;
pub(crate) use super::member::{plain_protocols, PendingReply};

/// The protocol type of Kafka's consumers (`ConsumerProtocol.PROTOCOL_TYPE`).
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// A classic group's state (Kafka's `ClassicGroupState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClassicGroupState {
    /// No members (offsets may still be held).
    Empty,
    /// Members are (re)joining.
    PreparingRebalance,
    /// The join phase is over; the leader's assignment is awaited.
    CompletingRebalance,
    /// Every member has its assignment.
    Stable,
    /// Removed (unloaded or deleted).
    Dead,
}

impl ClassicGroupState {
    /// The name Kafka prints (ListGroups, DescribeGroups).
    pub fn name(self) -> &'static str {
        match self {
            ClassicGroupState::Empty => "Empty",
            ClassicGroupState::PreparingRebalance => "PreparingRebalance",
            ClassicGroupState::CompletingRebalance => "CompletingRebalance",
            ClassicGroupState::Stable => "Stable",
            ClassicGroupState::Dead => "Dead",
        }
    }

    /// Whether the group may move from `from` to `self` (Kafka's `validPreviousStates`).
    fn may_follow(self, from: ClassicGroupState) -> bool {
        use ClassicGroupState::*;
        match self {
            Empty => from == PreparingRebalance,
            PreparingRebalance => matches!(from, Stable | CompletingRebalance | Empty),
            CompletingRebalance => from == PreparingRebalance,
            Stable => from == CompletingRebalance,
            Dead => true,
        }
    }
}

/// A classic group (Kafka's `ClassicGroup`).
#[derive(Debug, Clone)]
pub struct ClassicGroup {
    pub(crate) group_id: String,
    pub(crate) state: ClassicGroupState,
    pub(crate) previous_state: ClassicGroupState,
    pub(crate) current_state_timestamp: Option<i64>,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol_name: Option<String>,
    pub(crate) generation_id: i32,
    pub(crate) leader_id: Option<String>,
    /// By member id (sorted, so that every walk over the members is deterministic).
    pub(crate) members: BTreeMap<String, ClassicGroupMember>,
    /// group instance id → member id.
    pub(crate) static_members: HashMap<String, String>,
    /// Members told MEMBER_ID_REQUIRED that have not joined with it yet (KIP-394).
    pub(crate) pending_join_members: BTreeSet<String>,
    /// Members that have not sent their SyncGroup of this generation.
    pub(crate) pending_sync_members: BTreeSet<String>,
    /// How many members support each protocol name.
    pub(crate) supported_protocols: HashMap<String, usize>,
    /// The topics the members consume, when the group speaks the consumer protocol and
    /// their subscriptions parse.
    pub(crate) subscribed_topics: Option<BTreeSet<String>>,
    /// A member joined during the initial delay (Kafka's `newMemberAdded`).
    pub(crate) new_member_added: bool,
    /// The initial delayed join under way: (this delay, time left up to the rebalance
    /// timeout), Kafka's `InitialDelayedJoin`.
    pub(crate) initial_join: Option<(i32, i32)>,
}

impl ClassicGroup {
    /// A group with no members, created at `now_ms` in `state`.
    pub(crate) fn new(group_id: String, state: ClassicGroupState, now_ms: i64) -> Self {
        ClassicGroup {
            group_id,
            state,
            previous_state: ClassicGroupState::Dead,
            current_state_timestamp: Some(now_ms),
            protocol_type: None,
            protocol_name: None,
            generation_id: 0,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending_join_members: BTreeSet::new(),
            pending_sync_members: BTreeSet::new(),
            supported_protocols: HashMap::new(),
            subscribed_topics: None,
            new_member_added: false,
            initial_join: None,
        }
    }

    /// An empty group with no protocol (created by an offset commit outside a generation).
    pub fn new_empty(group_id: String, now_ms: i64) -> Self {
        ClassicGroup::new(group_id, ClassicGroupState::Empty, now_ms)
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    pub fn state(&self) -> ClassicGroupState {
        self.state
    }

    pub fn state_name(&self) -> &'static str {
        self.state.name()
    }

    pub fn protocol_type(&self) -> &str {
        self.protocol_type.as_deref().unwrap_or("")
    }

    /// The protocol selected for the current generation.
    pub fn protocol_name(&self) -> Option<&str> {
        self.protocol_name.as_deref()
    }

    pub fn generation_id(&self) -> i32 {
        self.generation_id
    }

    pub fn leader_id(&self) -> Option<&str> {
        self.leader_id.as_deref()
    }

    pub fn is_empty(&self) -> bool {
        self.state == ClassicGroupState::Empty
    }

    pub fn current_state_timestamp(&self) -> Option<i64> {
        self.current_state_timestamp
    }

    pub fn members(&self) -> impl Iterator<Item = &ClassicGroupMember> {
        self.members.values()
    }

    pub fn member(&self, member_id: &str) -> Option<&ClassicGroupMember> {
        self.members.get(member_id)
    }

    pub fn has_member(&self, member_id: &str) -> bool {
        self.members.contains_key(member_id)
    }

    pub fn num_members(&self) -> usize {
        self.members.len()
    }

    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    /// The member id a group instance id stands for.
    pub fn static_member_id(&self, group_instance_id: &str) -> Option<&str> {
        self.static_members
            .get(group_instance_id)
            .map(|s| s.as_str())
    }

    pub fn is_pending_member(&self, member_id: &str) -> bool {
        self.pending_join_members.contains(member_id)
    }

    pub fn subscribed_topics(&self) -> Option<&BTreeSet<String>> {
        self.subscribed_topics.as_ref()
    }

    pub(crate) fn uses_consumer_protocol(&self) -> bool {
        self.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
    }

    /// Moves to `state` at `now_ms`.
    pub(crate) fn transition_to(&mut self, state: ClassicGroupState, now_ms: i64) {
        debug_assert!(
            state.may_follow(self.state),
            "group {}: {:?} → {:?}",
            self.group_id,
            self.state,
            state
        );
        self.previous_state = self.state;
        self.state = state;
        self.current_state_timestamp = Some(now_ms);
    }

    /// Whether a rebalance may start now (Kafka's `canRebalance`).
    pub(crate) fn can_rebalance(&self) -> bool {
        ClassicGroupState::PreparingRebalance.may_follow(self.state)
    }

    /// The group's rebalance timeout: the largest of its members'.
    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
            .max(0)
    }

    pub(crate) fn num_awaiting_join(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.is_awaiting_join())
            .count()
    }

    /// Every member has rejoined and no pending member is still expected.
    pub(crate) fn has_all_members_joined(&self) -> bool {
        self.members.values().all(|m| m.is_awaiting_join()) && self.pending_join_members.is_empty()
    }

    /// Dynamic members that have not rejoined in this join phase.
    pub(crate) fn not_yet_rejoined_dynamic_members(&self) -> Vec<String> {
        self.members
            .values()
            .filter(|m| !m.is_awaiting_join() && m.group_instance_id.is_none())
            .map(|m| m.member_id.clone())
            .collect()
    }

    fn count_protocols(&mut self, protocols: &[(String, Bytes)], up: bool) {
        for (name, _) in protocols {
            let count = self.supported_protocols.entry(name.clone()).or_insert(0);
            *count = if up {
                *count + 1
            } else {
                count.saturating_sub(1)
            };
        }
    }

    /// Adds a member whose protocol type and protocols were checked with
    /// [`ClassicGroup::supports_protocols`].
    pub(crate) fn add(&mut self, member: ClassicGroupMember) {
        if let Some(instance) = &member.group_instance_id {
            self.static_members
                .insert(instance.clone(), member.member_id.clone());
        }
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        self.count_protocols(&member.protocols, true);
        self.pending_join_members.remove(&member.member_id);
        if let Some(old) = self.members.insert(member.member_id.clone(), member) {
            // A member id added twice: forget the first's protocols.
            self.count_protocols(&old.protocols, false);
        }
    }

    /// Removes a member (or a pending one); a new leader is picked if it led. Returns the
    /// member, whose parked requests the caller answers.
    pub(crate) fn remove(&mut self, member_id: &str) -> Option<ClassicGroupMember> {
        let removed = self.members.remove(member_id);
        if let Some(m) = &removed {
            self.count_protocols(&m.protocols, false);
            if let Some(instance) = &m.group_instance_id {
                if self.static_members.get(instance).map(|s| s.as_str()) == Some(member_id) {
                    self.static_members.remove(instance);
                }
            }
        }
        if self.is_leader(member_id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        self.pending_join_members.remove(member_id);
        self.pending_sync_members.remove(member_id);
        removed
    }

    /// Keeps the leader if it rejoined, else picks a member that did; false when none
    /// did (or there is no leader).
    pub(crate) fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader_id.as_deref() else {
            return false;
        };
        if self
            .members
            .get(leader)
            .is_some_and(|m| m.is_awaiting_join())
        {
            return true;
        }
        match self.members.values().find(|m| m.is_awaiting_join()) {
            Some(m) => {
                self.leader_id = Some(m.member_id.clone());
                true
            }
            None => false,
        }
    }

    /// A static member rejoined with a new member id: the member keeps everything but its
    /// id. Returns the old member's parked requests, which are to be fenced.
    pub(crate) fn replace_static_member(
        &mut self,
        group_instance_id: &str,
        old_member_id: &str,
        new_member_id: &str,
    ) -> Option<(Option<PendingReply>, Option<PendingReply>)> {
        let mut member = self.members.remove(old_member_id)?;
        let fenced = (member.awaiting_join.take(), member.awaiting_sync.take());
        member.member_id = new_member_id.to_string();
        member.is_new = false;
        self.members.insert(new_member_id.to_string(), member);
        if self.is_leader(old_member_id) {
            self.leader_id = Some(new_member_id.to_string());
        }
        if self.pending_sync_members.remove(old_member_id) {
            self.pending_sync_members.insert(new_member_id.to_string());
        }
        self.static_members
            .insert(group_instance_id.to_string(), new_member_id.to_string());
        Some(fenced)
    }

    /// Changes a member's protocols and timeouts, and parks (or forgets) its JoinGroup.
    /// Returns the JoinGroup it replaces, if another was parked.
    pub(crate) fn update_member(
        &mut self,
        member_id: &str,
        protocols: Vec<(String, Bytes)>,
        rebalance_timeout_ms: i32,
        session_timeout_ms: i32,
        join: Option<PendingReply>,
    ) -> Option<PendingReply> {
        let old = self.members.get(member_id)?.protocols.clone();
        self.count_protocols(&old, false);
        self.count_protocols(&protocols, true);
        let m = self.members.get_mut(member_id)?;
        m.protocols = protocols;
        m.rebalance_timeout_ms = rebalance_timeout_ms;
        m.session_timeout_ms = session_timeout_ms;
        let replaced = std::mem::replace(&mut m.awaiting_join, join);
        replaced.filter(|r| Some(*r) != join)
    }

    /// Whether a member of `protocol_type` with `protocols` may join: any protocol type
    /// and protocol in an empty group, else the group's type and a protocol every
    /// member supports.
    pub(crate) fn supports_protocols(
        &self,
        protocol_type: &str,
        protocols: &[(String, Bytes)],
    ) -> bool {
        if self.state == ClassicGroupState::Empty {
            !protocol_type.is_empty() && !protocols.is_empty()
        } else {
            self.protocol_type.as_deref() == Some(protocol_type)
                && protocols.iter().any(|(name, _)| {
                    self.supported_protocols.get(name).copied().unwrap_or(0) == self.members.len()
                })
        }
    }

    /// The protocol for the next generation: every member votes for its most preferred
    /// protocol among those all members support; the most votes win (ties go to the
    /// smallest name, so that the choice is deterministic).
    pub(crate) fn select_protocol(&self) -> Option<String> {
        let n = self.members.len();
        let candidates: BTreeSet<&str> = self
            .supported_protocols
            .iter()
            .filter(|(_, c)| **c == n)
            .map(|(name, _)| name.as_str())
            .collect();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(p) = m.vote(&candidates) {
                *votes.entry(p).or_insert(0) += 1;
            }
        }
        let best = votes.values().copied().max()?;
        votes
            .into_iter()
            .find(|(_, v)| *v == best)
            .map(|(p, _)| p.to_string())
    }

    /// The next generation (Kafka's `initNextGeneration`): CompletingRebalance with a
    /// selected protocol, or Empty.
    pub(crate) fn init_next_generation(&mut self, now_ms: i64) {
        self.generation_id = self.generation_id.wrapping_add(1);
        if self.members.is_empty() {
            self.protocol_name = None;
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition_to(ClassicGroupState::Empty, now_ms);
        } else {
            self.protocol_name = self.select_protocol();
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition_to(ClassicGroupState::CompletingRebalance, now_ms);
        }
        self.pending_sync_members.clear();
    }

    /// The members as the leader's JoinGroup response lists them.
    pub(crate) fn members_for_leader(&self) -> Vec<JoinGroupResponseMember> {
        let protocol = self.protocol_name.as_deref().unwrap_or("");
        self.members
            .values()
            .map(|m| JoinGroupResponseMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(protocol),
                ..Default::default()
            })
            .collect()
    }

    /// Checks that the member exists and that a group instance id names it (Kafka's
    /// `validateMember`).
    pub(crate) fn validate_member(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Result<(), ErrorCode> {
        if let Some(instance) = group_instance_id {
            match self.static_member_id(instance) {
                None => return Err(ErrorCode::UnknownMemberId),
                Some(existing) if existing != member_id => return Err(ErrorCode::FencedInstanceId),
                Some(_) => {}
            }
        }
        if !self.has_member(member_id) {
            return Err(ErrorCode::UnknownMemberId);
        }
        Ok(())
    }

    /// Whether a commit by this member may be stored (Kafka's
    /// `ClassicGroup.validateOffsetCommit`). A transactional commit (TxnOffsetCommit) may
    /// name no member and no generation (versions before 3 carry neither) and is not held
    /// back while the group completes a rebalance.
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation: i32,
        api: CommitApi,
    ) -> Result<(), ErrorCode> {
        use ClassicGroupState::*;
        let transactional = api == CommitApi::Transactional;
        if self.state == Dead {
            return Err(ErrorCode::CoordinatorNotAvailable);
        }
        if generation < 0 && self.state == Empty {
            // An admin client's commit, or a consumer that assigns itself partitions.
            return Ok(());
        }
        if generation >= 0 || !member_id.is_empty() || group_instance_id.is_some() {
            self.validate_member(member_id, group_instance_id)?;
            if generation != self.generation_id {
                return Err(ErrorCode::IllegalGeneration);
            }
        } else if !transactional && self.state != Empty {
            // No member id and no generation: only while nobody consumes.
            return Err(ErrorCode::UnknownMemberId);
        }
        if !transactional && self.state == CompletingRebalance {
            // A member of this generation committing before its assignment arrived.
            return Err(ErrorCode::RebalanceInProgress);
        }
        Ok(())
    }

    /// Whether the group consumes `topic`. When its subscriptions are unknown (not parsed),
    /// a group of the consumer protocol counts as subscribed, so its offsets are kept.
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        match &self.subscribed_topics {
            Some(topics) => topics.contains(topic),
            None => self.uses_consumer_protocol(),
        }
    }

    /// The group as DescribeGroups shows it: members' metadata only when Stable.
    pub fn describe(&self) -> DescribedGroup {
        let stable = self.state == ClassicGroupState::Stable;
        let protocol = if stable {
            self.protocol_name.as_deref()
        } else {
            None
        };
        DescribedGroup {
            group_id: self.group_id.clone(),
            group_state: self.state_name().into(),
            protocol_type: self.protocol_type().into(),
            protocol_data: protocol.unwrap_or("").into(),
            members: self
                .members
                .values()
                .map(|m| m.describe(protocol))
                .collect(),
            ..Default::default()
        }
    }
}
