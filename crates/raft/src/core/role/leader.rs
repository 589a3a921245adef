//! Leader: appends, tracks every replica's fetch position, and computes the high watermark
//! from the voters' end offsets (observers never count). The HW stays unknown until a record
//! of this epoch commits, so it never passes the epoch start offset on a stale majority.
//! Check-quorum: without fetches from a majority within 1.5 × fetch timeout it resigns.

use std::collections::{BTreeMap, BTreeSet};

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
}

/// Kafka's `LeaderState`.
#[derive(Debug, Clone)]
pub struct LeaderState {
    pub epoch: i32,
    /// The log end offset when this node was elected: where the LeaderChange record went.
    pub epoch_start_offset: i64,
    /// Every voter but this node.
    pub voters: BTreeMap<i32, ReplicaProgress>,
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
        offsets.push(local_flushed_offset);
        offsets.sort_unstable_by(|a, b| b.cmp(a));
        offsets[offsets.len() / 2]
    }

    /// Records a valid Fetch; returns whether the check-quorum timer was reset.
    pub fn record_fetch(
        &mut self,
        replica: i32,
        fetch_offset: i64,
        leader_end_offset: i64,
        now_ms: u64,
        check_quorum_timeout_ms: u64,
    ) -> bool {
        let is_voter = self.voters.contains_key(&replica);
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
        // This node counts as one voter of the majority.
        let total = self.voters.len() + 1;
        if self.fetched_since_check.len() + 1 > total / 2 {
            self.fetched_since_check.clear();
            self.check_quorum_deadline_ms = now_ms + check_quorum_timeout_ms;
            return true;
        }
        false
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
            observers: BTreeMap::new(),
            granting_voters: BTreeSet::new(),
            high_watermark_known: false,
            fetched_since_check: BTreeSet::new(),
            check_quorum_deadline_ms: 3000,
            begin_quorum: RequestTracker::default(),
            begin_quorum_heartbeat_ms: 0,
        }
    }

    #[test]
    fn hw_is_the_majority_position_and_ignores_observers() {
        // S1.1-like: leader at 4, followers at 4 and 3 → HW 4 with 3 voters is majority pos.
        let mut l = leader(&[2, 3]);
        l.record_fetch(2, 4, 4, 0, 3000);
        l.record_fetch(3, 3, 4, 0, 3000);
        assert_eq!(l.majority_end_offset(4), 4);
        l.record_fetch(2, 1, 4, 0, 3000);
        assert_eq!(l.majority_end_offset(4), 3);
        l.record_fetch(99, 100, 4, 0, 3000);
        assert_eq!(l.majority_end_offset(4), 3, "observers never count");
        assert!(l.observers.contains_key(&99));
    }

    #[test]
    fn check_quorum_resets_on_majority_of_fetches() {
        let mut l = leader(&[2, 3, 4, 5]);
        assert!(!l.record_fetch(2, 0, 0, 10, 3000));
        assert!(l.record_fetch(3, 0, 0, 20, 3000));
        assert_eq!(l.check_quorum_deadline_ms, 3020);
        assert_eq!(l.voters_by_descending_end_offset()[..2], [2, 3]);
    }
}
