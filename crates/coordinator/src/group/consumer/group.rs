//! A KIP-848 consumer group (Kafka's `ConsumerGroup`): the state its records hold (group
//! epoch, members, target assignment, resolved regular expressions) and what is derived
//! from them on replay (static members, who owns which partition, the subscribed topics).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kraftd_protocol::messages::consumer_group_describe_response::{
    Assignment as DescribedAssignment, DescribedGroup as ConsumerDescribedGroup, Member,
    TopicPartitions as DescribedTopicPartitions,
};
use kraftd_protocol::messages::describe_groups_response::DescribedGroup;
use kraftd_protocol::{ErrorCode, Uuid};

use super::member::{ConsumerGroupMember, Partitions, LEAVE_GROUP_STATIC_MEMBER_EPOCH};
use super::records;
use crate::context::{RequestContext, TopicMetadata};
use crate::group::commit_api::CommitApi;
use crate::group::config::AssignorName;
use crate::group::record::CoordinatorRecord;

/// OffsetCommit v9 is the first a member of the consumer protocol may use.
pub(crate) const CONSUMER_PROTOCOL_COMMIT_VERSION: i16 = 9;
/// The generation / member epoch a request outside any generation names.
pub(crate) const UNKNOWN_GENERATION_ID: i32 = -1;
/// DescribeGroups v6 is the first that carries an error for a group of another type.
const DESCRIBE_GROUPS_ERROR_VERSION: i16 = 6;

/// The group's state (Kafka's `ConsumerGroupState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerGroupState {
    Empty,
    /// The group epoch moved past the target assignment epoch: a new target is due.
    Assigning,
    /// Some member has not reached the target assignment yet.
    Reconciling,
    Stable,
    /// The group was deleted (never held by a live group; Kafka names it).
    Dead,
}

impl ConsumerGroupState {
    pub fn name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
            ConsumerGroupState::Dead => "Dead",
        }
    }
}

/// A resolved regular expression (the ConsumerGroupRegularExpression record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedRegex {
    pub topics: BTreeSet<String>,
    pub version: i64,
    pub timestamp: i64,
}

/// What is derived from the members (kept apart so that a group stays small).
#[derive(Debug, Clone, Default)]
struct Derived {
    static_members: BTreeMap<String, String>,
    subscribed_names: BTreeMap<String, usize>,
    regex_subscribers: BTreeMap<String, usize>,
    assignor_votes: BTreeMap<String, usize>,
    owners: HashMap<(Uuid, i32), String>,
}

/// A KIP-848 consumer group.
#[derive(Debug, Clone)]
pub struct ConsumerGroup {
    pub group_id: String,
    pub group_epoch: i32,
    /// The hash of the subscribed topics' metadata the group epoch was last computed with.
    pub metadata_hash: i64,
    /// The epoch of the target assignment (-1 once its record is deleted).
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, ConsumerGroupMember>,
    pub target_assignment: BTreeMap<String, Partitions>,
    pub resolved_regexes: BTreeMap<String, ResolvedRegex>,
    /// The log holds a ConsumerGroupPartitionMetadata record (written before Kafka 4.1):
    /// the next epoch bump deletes it.
    pub has_partition_metadata_record: bool,
    /// Derived from the members on replay.
    derived: Box<Derived>,
    // Soft state, not in the log.
    /// The epoch each member's rebalance timeout was scheduled at.
    pub(crate) rebalance_timeouts: HashMap<String, i32>,
    /// The resolved regexes were computed against the current metadata.
    pub(crate) regexes_fresh: bool,
}

impl ConsumerGroup {
    pub fn new(group_id: String) -> Self {
        ConsumerGroup {
            group_id,
            group_epoch: 0,
            metadata_hash: 0,
            assignment_epoch: 0,
            members: BTreeMap::new(),
            target_assignment: BTreeMap::new(),
            resolved_regexes: BTreeMap::new(),
            has_partition_metadata_record: false,
            derived: Box::default(),
            rebalance_timeouts: HashMap::new(),
            regexes_fresh: false,
        }
    }

    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| !m.is_reconciled_to(self.assignment_epoch))
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    pub fn state_name(&self) -> &'static str {
        self.state().name()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn member(&self, member_id: &str) -> Option<&ConsumerGroupMember> {
        self.members.get(member_id)
    }

    /// The member id holding a static instance id.
    pub fn static_member_id(&self, instance_id: &str) -> Option<&str> {
        self.derived
            .static_members
            .get(instance_id)
            .map(String::as_str)
    }

    pub fn static_member(&self, instance_id: &str) -> Option<&ConsumerGroupMember> {
        self.static_member_id(instance_id)
            .and_then(|id| self.members.get(id))
    }

    /// The member that owns (or is revoking) a partition.
    pub fn owner(&self, topic: Uuid, partition: i32) -> Option<&str> {
        self.derived
            .owners
            .get(&(topic, partition))
            .map(String::as_str)
    }

    /// How many members subscribe to `regex`.
    pub fn regex_subscribers(&self, regex: &str) -> usize {
        self.derived
            .regex_subscribers
            .get(regex)
            .copied()
            .unwrap_or(0)
    }

    /// The regexes some member subscribes to.
    pub fn subscribed_regexes(&self) -> impl Iterator<Item = &str> {
        self.derived.regex_subscribers.keys().map(String::as_str)
    }

    /// Every topic name the group subscribes to: by name, or through a resolved regex.
    pub fn subscribed_topic_names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self.derived.subscribed_names.keys().cloned().collect();
        for (regex, resolved) in &self.resolved_regexes {
            if self.derived.regex_subscribers.contains_key(regex) {
                names.extend(resolved.topics.iter().cloned());
            }
        }
        names
    }

    /// The member's target assignment, or the one its static instance held before it
    /// (Kafka's `targetAssignment(memberId, instanceId)`).
    pub fn target_of(&self, member_id: &str, instance_id: Option<&str>) -> Option<&Partitions> {
        self.target_assignment.get(member_id).or_else(|| {
            let previous = self.static_member_id(instance_id?)?;
            self.target_assignment.get(previous)
        })
    }

    /// The assignor most members asked for (ties go to the one configured first), else
    /// the default (Kafka's `preferredServerAssignor`).
    pub fn preferred_assignor(
        votes: &BTreeMap<String, usize>,
        configured: &[AssignorName],
    ) -> Option<AssignorName> {
        let mut best: Option<(usize, AssignorName)> = None;
        for name in configured {
            let n = votes.get(name.name()).copied().unwrap_or(0);
            if n > 0 && best.is_none_or(|(b, _)| n > b) {
                best = Some((n, *name));
            }
        }
        best.map(|(_, n)| n).or_else(|| configured.first().copied())
    }

    /// How many members ask for each server assignor.
    pub fn assignor_votes(&self) -> &BTreeMap<String, usize> {
        &self.derived.assignor_votes
    }

    /// How many members subscribe to each topic name.
    pub fn name_subscribers(&self) -> &BTreeMap<String, usize> {
        &self.derived.subscribed_names
    }

    /// How many members subscribe to each regex.
    pub fn regex_subscriber_counts(&self) -> &BTreeMap<String, usize> {
        &self.derived.regex_subscribers
    }

    /// Adds or replaces a member, keeping the derived state in step.
    pub(crate) fn put_member(&mut self, member: ConsumerGroupMember) {
        let id = member.member_id.clone();
        self.remove_member_derived(&id);
        if let Some(instance) = &member.instance_id {
            self.derived
                .static_members
                .insert(instance.clone(), id.clone());
        }
        for t in &member.subscribed_topic_names {
            *self.derived.subscribed_names.entry(t.clone()).or_insert(0) += 1;
        }
        if member.has_regex() {
            *self
                .derived
                .regex_subscribers
                .entry(member.subscribed_topic_regex.clone())
                .or_insert(0) += 1;
        }
        if let Some(a) = &member.server_assignor {
            *self.derived.assignor_votes.entry(a.clone()).or_insert(0) += 1;
        }
        for tp in member.owned_partitions() {
            // A partition is owned by one member; should a log say otherwise, the last
            // record read wins.
            self.derived.owners.insert(tp, id.clone());
        }
        self.members.insert(id, member);
    }

    /// Removes a member and what was derived from it.
    pub(crate) fn remove_member(&mut self, member_id: &str) {
        self.remove_member_derived(member_id);
        self.members.remove(member_id);
        self.rebalance_timeouts.remove(member_id);
    }

    fn remove_member_derived(&mut self, member_id: &str) {
        let Some(old) = self.members.get(member_id) else {
            return;
        };
        if let Some(instance) = &old.instance_id {
            if self
                .derived
                .static_members
                .get(instance)
                .map(String::as_str)
                == Some(member_id)
            {
                self.derived.static_members.remove(instance);
            }
        }
        for t in &old.subscribed_topic_names {
            decrement(&mut self.derived.subscribed_names, t);
        }
        if old.has_regex() {
            decrement(
                &mut self.derived.regex_subscribers,
                &old.subscribed_topic_regex,
            );
        }
        if let Some(a) = &old.server_assignor {
            decrement(&mut self.derived.assignor_votes, a);
        }
        let owned: Vec<(Uuid, i32)> = old.owned_partitions().collect();
        for tp in owned {
            if self.derived.owners.get(&tp).map(String::as_str) == Some(member_id) {
                self.derived.owners.remove(&tp);
            }
        }
    }

    /// Kafka's `ConsumerGroup.validateOffsetCommit`. A commit with a negative epoch (an
    /// admin's, or a consumer assigning itself partitions) is accepted only while the group
    /// is empty; a TxnOffsetCommit naming no member, no epoch and no instance is accepted
    /// (the API does not require them); otherwise the member must exist, commit with its
    /// current epoch and, unless the commit is transactional, with OffsetCommit v9+.
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
        member_epoch: i32,
        api: CommitApi,
    ) -> Result<(), ErrorCode> {
        if member_epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        if api == CommitApi::Transactional
            && member_epoch == UNKNOWN_GENERATION_ID
            && member_id.is_empty()
            && group_instance_id.is_none()
        {
            return Ok(());
        }
        let member = self
            .members
            .get(member_id)
            .ok_or(ErrorCode::UnknownMemberId)?;
        if matches!(api, CommitApi::OffsetCommit(v) if v < CONSUMER_PROTOCOL_COMMIT_VERSION) {
            return Err(ErrorCode::UnsupportedVersion);
        }
        if member_epoch != member.member_epoch {
            return Err(ErrorCode::StaleMemberEpoch);
        }
        Ok(())
    }

    /// Kafka's `ConsumerGroup.validateOffsetFetch`: a fetch naming no member with a negative
    /// epoch (an admin's) reads; otherwise the member must exist and name its epoch.
    pub fn validate_offset_fetch(
        &self,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), ErrorCode> {
        if member_id.is_none() && member_epoch < 0 {
            return Ok(());
        }
        let member = member_id
            .and_then(|id| self.members.get(id))
            .ok_or(ErrorCode::UnknownMemberId)?;
        if member_epoch != member.member_epoch {
            return Err(ErrorCode::StaleMemberEpoch);
        }
        Ok(())
    }

    /// Whether some member subscribes to `topic`, by name or through a resolved regex.
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        self.derived.subscribed_names.contains_key(topic)
            || self.resolved_regexes.iter().any(|(regex, r)| {
                self.derived.regex_subscribers.contains_key(regex) && r.topics.contains(topic)
            })
    }

    /// Tombstones for every record the group has (Kafka's `createGroupTombstoneRecords`,
    /// with the resolved regexes too).
    pub fn delete_records(&self) -> Vec<CoordinatorRecord> {
        let id = &self.group_id;
        let mut out = Vec::new();
        for m in self.members.keys() {
            out.push(records::current_assignment_tombstone(id, m));
        }
        let mut targets: BTreeSet<&String> = self.members.keys().collect();
        targets.extend(self.target_assignment.keys());
        for m in targets {
            out.push(records::target_assignment_tombstone(id, m));
        }
        out.push(records::target_assignment_epoch_tombstone(id));
        for m in self.members.keys() {
            out.push(records::member_subscription_tombstone(id, m));
        }
        for regex in self.resolved_regexes.keys() {
            out.push(records::regex_tombstone(id, regex));
        }
        out.push(records::partition_metadata_tombstone(id));
        out.push(records::group_epoch_tombstone(id));
        out
    }

    /// What the classic DescribeGroups shows for a consumer group: Kafka describes only
    /// classic groups there, so a consumer group is `Dead`, with GROUP_ID_NOT_FOUND from
    /// v6 on.
    pub fn describe_classic(&self, ctx: &RequestContext) -> DescribedGroup {
        let mut d = DescribedGroup {
            group_id: self.group_id.clone(),
            group_state: ConsumerGroupState::Dead.name().into(),
            ..Default::default()
        };
        if ctx.api_version >= DESCRIBE_GROUPS_ERROR_VERSION {
            d.error_code = ErrorCode::GroupIdNotFound.code();
            d.error_message = Some(format!("Group {} is not a classic group.", self.group_id));
        }
        d
    }

    /// The group as ConsumerGroupDescribe shows it (Kafka's `asDescribedGroup`).
    pub fn describe(
        &self,
        metadata: &dyn TopicMetadata,
        configured: &[AssignorName],
    ) -> ConsumerDescribedGroup {
        let assignor = Self::preferred_assignor(&self.derived.assignor_votes, configured)
            .map(|a| a.name().to_string())
            .unwrap_or_default();
        let members = self
            .members
            .values()
            .map(|m| Member {
                member_id: m.member_id.clone(),
                instance_id: m.instance_id.clone(),
                rack_id: m.rack_id.clone(),
                member_epoch: m.member_epoch,
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                subscribed_topic_names: m.subscribed_topic_names.iter().cloned().collect(),
                subscribed_topic_regex: Some(m.subscribed_topic_regex.clone()),
                assignment: described(&m.assigned_partitions(), metadata),
                target_assignment: described(
                    self.target_assignment
                        .get(&m.member_id)
                        .unwrap_or(&Partitions::new()),
                    metadata,
                ),
                // 1 is a member of the consumer protocol (0 a classic one).
                member_type: 1,
                ..Default::default()
            })
            .collect();
        ConsumerDescribedGroup {
            group_id: self.group_id.clone(),
            group_state: self.state_name().into(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            assignor_name: assignor,
            members,
            ..Default::default()
        }
    }

    /// A member id for a v0 member that joined without one: a uuid derived from the group,
    /// the time and an attempt counter (no ambient randomness), unused in the group.
    pub(crate) fn generate_member_id(&self, partition: i32, now_ms: i64) -> String {
        let mut attempt: u64 = 0;
        loop {
            let id = derived_uuid(
                &self.group_id,
                partition,
                now_ms,
                self.members.len(),
                attempt,
            )
            .to_base64();
            if !id.starts_with('-') && !self.members.contains_key(&id) {
                return id;
            }
            attempt += 1;
        }
    }
}

fn decrement(map: &mut BTreeMap<String, usize>, key: &str) {
    if let Some(n) = map.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            map.remove(key);
        }
    }
}

fn described(p: &Partitions, metadata: &dyn TopicMetadata) -> DescribedAssignment {
    DescribedAssignment {
        topic_partitions: p
            .iter()
            .filter_map(|(t, ps)| {
                let (name, _) = metadata.topic_by_id(*t)?;
                Some(DescribedTopicPartitions {
                    topic_id: *t,
                    topic_name: name,
                    partitions: ps.iter().copied().collect(),
                    ..Default::default()
                })
            })
            .collect(),
        ..Default::default()
    }
}

/// 128 bits from FNV-1a and SplitMix64 over the inputs, shaped as a version-4 uuid.
fn derived_uuid(group: &str, partition: i32, now_ms: i64, members: usize, attempt: u64) -> Uuid {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in group.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let seed = h
        ^ mix(now_ms as u64)
        ^ mix((partition as u64) << 32 | members as u64)
        ^ mix(attempt.wrapping_add(0x9e37_79b9_7f4a_7c15));
    let hi = mix(seed);
    let lo = mix(hi ^ 0x5851_f42d_4c95_7f2d);
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&hi.to_be_bytes());
    bytes[8..].copy_from_slice(&lo.to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    Uuid(bytes)
}

/// A static member that left with epoch -2 and may be replaced.
pub(crate) fn is_released(member: &ConsumerGroupMember) -> bool {
    member.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
}
