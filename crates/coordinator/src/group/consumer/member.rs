//! A KIP-848 member (Kafka's `ConsumerGroupMember` and `MemberState`): its subscription, as
//! the ConsumerGroupMemberMetadata record holds it, and its current assignment, as the
//! ConsumerGroupCurrentMemberAssignment record holds it.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::coordinator::consumer_group_member_metadata_value::ClassicMemberMetadata;
use kraftd_protocol::messages::consumer_group_heartbeat_request::TopicPartitions as OwnedTopicPartitions;
use kraftd_protocol::Uuid;

/// Partitions by topic id (a target assignment).
pub type Partitions = BTreeMap<Uuid, BTreeSet<i32>>;

/// Partitions by topic id with the epoch each was assigned at (KIP-1251's assignment
/// epochs): a member's assigned partitions and those it is revoking.
pub type PartitionEpochs = BTreeMap<Uuid, BTreeMap<i32, i32>>;

/// The epoch Kafka's heartbeat request uses to leave (`LEAVE_GROUP_MEMBER_EPOCH`).
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// The epoch a static member leaves with, to come back within its session
/// (`LEAVE_GROUP_STATIC_MEMBER_EPOCH`).
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;

/// Where a member is in its reconciliation (Kafka's `MemberState`; the byte is the
/// record's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberState {
    /// The member holds its whole target assignment at the target epoch.
    Stable,
    /// The member must revoke partitions before it may move to the next epoch.
    UnrevokedPartitions,
    /// The member is at the target epoch but waits for partitions that their previous
    /// owners have not released yet.
    UnreleasedPartitions,
    /// A state a newer coordinator wrote: the member is fenced on its next heartbeat
    /// unless it owns nothing.
    Unknown,
}

impl MemberState {
    pub fn value(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
            MemberState::Unknown => 127,
        }
    }

    pub fn from_value(v: i8) -> Self {
        match v {
            0 => MemberState::Stable,
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Unknown,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            MemberState::Stable => "STABLE",
            MemberState::UnrevokedPartitions => "UNREVOKED_PARTITIONS",
            MemberState::UnreleasedPartitions => "UNRELEASED_PARTITIONS",
            MemberState::Unknown => "UNKNOWN",
        }
    }
}

/// One member of a consumer group.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerGroupMember {
    pub member_id: String,
    /// The epoch the member is expected to heartbeat with.
    pub member_epoch: i32,
    /// The epoch before the last bump (a member whose response was lost may use it).
    pub previous_member_epoch: i32,
    pub state: MemberState,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// The time the member has to revoke partitions (the client's `max.poll.interval.ms`).
    pub rebalance_timeout_ms: i32,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: BTreeSet<String>,
    /// The subscribed regular expression; empty when none (as Kafka keeps it).
    pub subscribed_topic_regex: String,
    pub server_assignor: Option<String>,
    /// The partitions the member owns, with the epoch each was assigned at.
    pub assigned: PartitionEpochs,
    /// The partitions the member must revoke, with the epoch each was assigned at.
    pub pending_revocation: PartitionEpochs,
    /// Kept from the record for members that a Kafka broker upgraded from a classic
    /// group; kraftd writes none.
    pub classic_member_metadata: Option<ClassicMemberMetadata>,
}

impl ConsumerGroupMember {
    /// A member as Kafka's builder starts one.
    pub fn new(member_id: String) -> Self {
        ConsumerGroupMember {
            member_id,
            member_epoch: 0,
            previous_member_epoch: -1,
            state: MemberState::Stable,
            instance_id: None,
            rack_id: None,
            rebalance_timeout_ms: -1,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: BTreeSet::new(),
            subscribed_topic_regex: String::new(),
            server_assignor: None,
            assigned: PartitionEpochs::new(),
            pending_revocation: PartitionEpochs::new(),
            classic_member_metadata: None,
        }
    }

    /// Kafka's `isReconciledTo`: stable at that epoch.
    pub fn is_reconciled_to(&self, target_epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == target_epoch
    }

    /// Whether the member subscribes to a regular expression.
    pub fn has_regex(&self) -> bool {
        !self.subscribed_topic_regex.is_empty()
    }

    /// Whether the subscription (what the ConsumerGroupMemberMetadata record holds)
    /// differs.
    pub fn metadata_differs(&self, other: &ConsumerGroupMember) -> bool {
        self.instance_id != other.instance_id
            || self.rack_id != other.rack_id
            || self.rebalance_timeout_ms != other.rebalance_timeout_ms
            || self.client_id != other.client_id
            || self.client_host != other.client_host
            || self.subscribed_topic_names != other.subscribed_topic_names
            || self.subscribed_topic_regex != other.subscribed_topic_regex
            || self.server_assignor != other.server_assignor
            || self.classic_member_metadata != other.classic_member_metadata
    }

    /// Whether the current assignment (what the ConsumerGroupCurrentMemberAssignment record
    /// holds) differs.
    pub fn assignment_differs(&self, other: &ConsumerGroupMember) -> bool {
        self.member_epoch != other.member_epoch
            || self.previous_member_epoch != other.previous_member_epoch
            || self.state != other.state
            || self.assigned != other.assigned
            || self.pending_revocation != other.pending_revocation
    }

    /// The partitions the member owns or is revoking: nobody else may own them.
    pub fn owned_partitions(&self) -> impl Iterator<Item = (Uuid, i32)> + '_ {
        self.assigned
            .iter()
            .chain(self.pending_revocation.iter())
            .flat_map(|(t, ps)| ps.keys().map(move |p| (*t, *p)))
    }

    /// The assigned partitions without their epochs.
    pub fn assigned_partitions(&self) -> Partitions {
        without_epochs(&self.assigned)
    }
}

/// Drops the assignment epochs.
pub fn without_epochs(p: &PartitionEpochs) -> Partitions {
    p.iter()
        .map(|(t, ps)| (*t, ps.keys().copied().collect()))
        .collect()
}

/// Kafka's `isSubset`: whether every partition the member says it owns is among
/// `assigned` (false when it said nothing).
pub fn owned_is_subset(owned: Option<&[OwnedTopicPartitions]>, assigned: &PartitionEpochs) -> bool {
    let Some(owned) = owned else {
        return false;
    };
    owned.iter().all(|tp| match assigned.get(&tp.topic_id) {
        Some(ps) => tp.partitions.iter().all(|p| ps.contains_key(p)),
        None => false,
    })
}

/// Whether the member still says it owns any of `revoking` (true when it said nothing).
pub fn owns_any_of(owned: Option<&[OwnedTopicPartitions]>, revoking: &PartitionEpochs) -> bool {
    let Some(owned) = owned else {
        return true;
    };
    owned.iter().any(|tp| {
        revoking
            .get(&tp.topic_id)
            .is_some_and(|ps| tp.partitions.iter().any(|p| ps.contains_key(p)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: Uuid, partitions: &[i32]) -> OwnedTopicPartitions {
        OwnedTopicPartitions {
            topic_id: topic,
            partitions: partitions.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn state_bytes_are_kafkas() {
        for s in [
            MemberState::Stable,
            MemberState::UnrevokedPartitions,
            MemberState::UnreleasedPartitions,
            MemberState::Unknown,
        ] {
            assert_eq!(MemberState::from_value(s.value()), s);
        }
        assert_eq!(MemberState::from_value(42), MemberState::Unknown);
        assert_eq!(MemberState::UnreleasedPartitions.value(), 2);
    }

    #[test]
    fn owned_subset_and_revocation_checks() {
        let t = Uuid([1; 16]);
        let assigned: PartitionEpochs = [(t, [(0, 3), (1, 3)].into())].into();
        assert!(owned_is_subset(Some(&[tp(t, &[0])]), &assigned));
        assert!(!owned_is_subset(Some(&[tp(t, &[0, 2])]), &assigned));
        assert!(!owned_is_subset(None, &assigned));
        assert!(owns_any_of(None, &assigned));
        assert!(owns_any_of(Some(&[tp(t, &[1])]), &assigned));
        assert!(!owns_any_of(Some(&[tp(t, &[5])]), &assigned));
        assert!(!owns_any_of(Some(&[]), &assigned));
    }
}
