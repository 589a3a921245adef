//! Leader: appends, tracks every replica's fetch position, and computes the high watermark
//! from the voters' end offsets (observers never count). The HW stays unknown until a record
//! of this epoch commits, so it never passes the epoch start offset on a stale majority.
//! Check-quorum: without fetches from a majority within 1.5 × fetch timeout it resigns.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::Uuid;

use super::RequestTracker;

/// The most observers a leader tracks; fetches from more are served but not recorded.
pub const MAX_TRACKED_OBSERVERS: usize = 10_000;

/// What the leader knows of one replica (Kafka's `ReplicaState`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaProgress {
    /// The replica's log end offset, from its last valid Fetch.
    pub end_offset: Option<i64>,
    pub last_fetch_ms: Option<u64>,
    /// The last time the replica had fetched up to the leader's end offset.
    pub last_caught_up_ms: Option<u64>,
    /// The directory id its last Fetch carried (KIP-853; zero when none).
    pub directory_id: Uuid,
}

/// A voter change the leader appended and has not answered yet (Kafka's
/// `AddVoterHandlerState`, `RemoveVoterHandlerState`, `UpdateVoterHandlerState`): answered
/// when the VotersRecord at `offset` commits, or REQUEST_TIMED_OUT at `deadline_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingVoterChange {
    /// The caller's token, handed back in `Output::VoterChangeDone`.
    pub token: u64,
    /// The offset of the VotersRecord.
    pub offset: i64,
    pub deadline_ms: u64,
}

/// Kafka's `LeaderState`.
#[derive(Debug, Clone)]
pub struct LeaderState {
    pub epoch: i32,
    /// The log end offset when this node was elected: where the LeaderChange record went.
    pub epoch_start_offset: i64,
    /// Every voter but this node, in the latest voter set.
    pub voters: BTreeMap<i32, ReplicaProgress>,
    /// Whether this node is a voter of the latest voter set (a leader that removed itself
    /// leads on, uncounted, until the change commits, then resigns).
    pub local_is_voter: bool,
    /// Observers seen fetching.
    pub observers: BTreeMap<i32, ReplicaProgress>,
    /// The voters that granted the vote (for the LeaderChange record).
    pub granting_voters: BTreeSet<i32>,
    /// The HW is known once a record of this epoch has committed.
    pub high_watermark_known: bool,
    /// Voters that fetched since the check-quorum timer was last reset.
    pub fetched_since_check: BTreeSet<i32>,
    pub check_quorum_deadline_ms: u64,
    /// BeginQuorumEpoch as election notice and heartbeat.
    pub begin_quorum: RequestTracker,
    pub begin_quorum_heartbeat_ms: u64,
    /// The one voter change in flight.
    pub pending_voter_change: Option<PendingVoterChange>,
    /// The leader was removed from the voter set and the change committed: it resigns.
    pub resign_requested: bool,
}

impl LeaderState {
    /// The HW the voters' end offsets give: the end offset at the majority position, with
    /// this node's durable end offset counted among them.
    pub fn majority_end_offset(&self, local_flushed_offset: i64) -> i64 {
        let mut offsets: Vec<i64> = self
            .voters
            .values()
            .map(|p| p.end_offset.unwrap_or(-1))
            .collect();
        if self.local_is_voter {
            offsets.push(local_flushed_offset);
        }
        if offsets.is_empty() {
            return -1;
        }
        offsets.sort_unstable_by(|a, b| b.cmp(a));
        offsets[offsets.len() / 2]
    }

    /// Records a valid Fetch; returns whether the check-quorum timer was reset. A fetcher
    /// counts as a voter only when `is_voter_key` (its id and directory id are a voter's).
    #[allow(clippy::too_many_arguments)]
    pub fn record_fetch(
        &mut self,
        replica: i32,
        directory_id: Uuid,
        is_voter_key: bool,
        fetch_offset: i64,
        leader_end_offset: i64,
        now_ms: u64,
        check_quorum_timeout_ms: u64,
    ) -> bool {
        let is_voter = is_voter_key && self.voters.contains_key(&replica);
        if !is_voter
            && self.observers.len() >= MAX_TRACKED_OBSERVERS
            && !self.observers.contains_key(&replica)
        {
            return false;
        }
        let progress = if is_voter {
            self.voters.entry(replica).or_default()
        } else {
            self.observers.entry(replica).or_default()
        };
        if progress.directory_id != directory_id {
            // Another disk behind the same id: what was known of the old one is void.
            *progress = ReplicaProgress {
                directory_id,
                ..Default::default()
            };
        }
        progress.end_offset = Some(fetch_offset);
        progress.last_fetch_ms = Some(now_ms);
        if fetch_offset >= leader_end_offset {
            progress.last_caught_up_ms = Some(now_ms);
        }
        if !is_voter {
            return false;
        }
        self.record_check_quorum(replica, now_ms, check_quorum_timeout_ms)
    }

    /// Voter `replica` was heard from without a new end offset (a FetchSnapshot: Kafka's
    /// `updateCheckQuorumForFollowingVoter`). Returns whether a majority has now been heard
    /// since the last check, which pushes the check-quorum deadline.
    pub fn record_check_quorum(
        &mut self,
        replica: i32,
        now_ms: u64,
        check_quorum_timeout_ms: u64,
    ) -> bool {
        if !self.voters.contains_key(&replica) {
            return false;
        }
        self.fetched_since_check.insert(replica);
        // This node counts as one voter of the majority when it is one.
        let local = usize::from(self.local_is_voter);
        let total = self.voters.len() + local;
        if self.fetched_since_check.len() + local > total / 2 {
            self.fetched_since_check.clear();
            self.check_quorum_deadline_ms = now_ms + check_quorum_timeout_ms;
            return true;
        }
        false
    }

    /// The voter set changed (a VotersRecord appended, or truncated away): `others` are the
    /// voters but this node. A voter that left keeps its progress as an observer, an
    /// observer that joined brings its own.
    pub fn set_voters(&mut self, others: &BTreeSet<i32>, local_is_voter: bool) {
        self.local_is_voter = local_is_voter;
        let leaving: Vec<i32> = self
            .voters
            .keys()
            .filter(|id| !others.contains(id))
            .copied()
            .collect();
        for id in leaving {
            if let Some(p) = self.voters.remove(&id) {
                self.observers.insert(id, p);
            }
            self.fetched_since_check.remove(&id);
        }
        for id in others {
            if !self.voters.contains_key(id) {
                let p = self.observers.remove(id).unwrap_or_default();
                self.voters.insert(*id, p);
            }
        }
    }

    /// Whether `id` (with `directory_id`) fetched up to the leader's end within the last
    /// hour, as an observer: Kafka's `isReplicaCaughtUp`, AddRaftVoter's check.
    pub fn is_observer_caught_up(&self, id: i32, directory_id: Uuid, now_ms: u64) -> bool {
        const AN_HOUR_MS: u64 = 3_600_000;
        self.observers.get(&id).is_some_and(|p| {
            p.directory_id == directory_id
                && p.last_caught_up_ms.is_some()
                && p.last_fetch_ms.is_some_and(|t| t + AN_HOUR_MS > now_ms)
        })
    }

    /// Voters other than this node, most caught up first (ties by id): the preferred
    /// successors of EndQuorumEpoch.
    pub fn voters_by_descending_end_offset(&self) -> Vec<i32> {
        let mut v: Vec<(i64, i32)> = self
            .voters
            .iter()
            .map(|(id, p)| (p.end_offset.unwrap_or(-1), *id))
            .collect();
        v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        v.into_iter().map(|(_, id)| id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leader(voters: &[i32]) -> LeaderState {
        LeaderState {
            epoch: 1,
            epoch_start_offset: 0,
            voters: voters
                .iter()
                .map(|v| (*v, ReplicaProgress::default()))
                .collect(),
            local_is_voter: true,
            observers: BTreeMap::new(),
            granting_voters: BTreeSet::new(),
            high_watermark_known: false,
            fetched_since_check: BTreeSet::new(),
            check_quorum_deadline_ms: 3000,
            begin_quorum: RequestTracker::default(),
            begin_quorum_heartbeat_ms: 0,
            pending_voter_change: None,
            resign_requested: false,
        }
    }

    #[test]
    fn hw_is_the_majority_position_and_ignores_observers() {
        // S1.1-like: leader at 4, followers at 4 and 3 → HW 4 with 3 voters is majority pos.
        let mut l = leader(&[2, 3]);
        l.record_fetch(2, Uuid::ZERO, true, 4, 4, 0, 3000);
        l.record_fetch(3, Uuid::ZERO, true, 3, 4, 0, 3000);
        assert_eq!(l.majority_end_offset(4), 4);
        l.record_fetch(2, Uuid::ZERO, true, 1, 4, 0, 3000);
        assert_eq!(l.majority_end_offset(4), 3);
        l.record_fetch(99, Uuid::ZERO, true, 100, 4, 0, 3000);
        assert_eq!(l.majority_end_offset(4), 3, "observers never count");
        assert!(l.observers.contains_key(&99));
    }

    #[test]
    fn check_quorum_resets_on_majority_of_fetches() {
        let mut l = leader(&[2, 3, 4, 5]);
        assert!(!l.record_fetch(2, Uuid::ZERO, true, 0, 0, 10, 3000));
        assert!(l.record_fetch(3, Uuid::ZERO, true, 0, 0, 20, 3000));
        assert_eq!(l.check_quorum_deadline_ms, 3020);
        assert_eq!(l.voters_by_descending_end_offset()[..2], [2, 3]);
    }
}
