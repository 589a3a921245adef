//! One type per Raft role, as Kafka has them (`UnattachedState`, `ProspectiveState`,
//! `CandidateState`, `LeaderState`, `FollowerState`, `ResignedState`), and the [`Role`] enum
//! that carries exactly the data of the current one. Roles hold data and answer questions
//! about it (may I grant this vote? has the election timed out?); transitions between them
//! belong to `quorum_state`, and acting on them to the core.

pub mod candidate;
pub mod follower;
pub mod leader;
pub mod prospective;
pub mod resigned;
pub mod unattached;

use std::collections::{BTreeMap, BTreeSet};

pub use candidate::CandidateState;
pub use follower::FollowerState;
pub use leader::LeaderState;
pub use prospective::ProspectiveState;
pub use resigned::ResignedState;
pub use unattached::UnattachedState;

/// The node's current role and the data that role needs.
#[derive(Debug, Clone)]
pub enum Role {
    Unattached(UnattachedState),
    Prospective(ProspectiveState),
    Candidate(CandidateState),
    Leader(LeaderState),
    Follower(FollowerState),
    Resigned(ResignedState),
}

/// The role's name, as Kafka's `current-state` metric spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoleName {
    Unattached,
    Prospective,
    Candidate,
    Leader,
    Follower,
    Resigned,
}

impl RoleName {
    pub fn as_str(self) -> &'static str {
        match self {
            RoleName::Unattached => "unattached",
            RoleName::Prospective => "prospective",
            RoleName::Candidate => "candidate",
            RoleName::Leader => "leader",
            RoleName::Follower => "follower",
            RoleName::Resigned => "resigned",
        }
    }
}

impl Role {
    pub fn name(&self) -> RoleName {
        match self {
            Role::Unattached(_) => RoleName::Unattached,
            Role::Prospective(_) => RoleName::Prospective,
            Role::Candidate(_) => RoleName::Candidate,
            Role::Leader(_) => RoleName::Leader,
            Role::Follower(_) => RoleName::Follower,
            Role::Resigned(_) => RoleName::Resigned,
        }
    }

    pub fn epoch(&self) -> i32 {
        match self {
            Role::Unattached(s) => s.epoch,
            Role::Prospective(s) => s.epoch,
            Role::Candidate(s) => s.epoch,
            Role::Leader(s) => s.epoch,
            Role::Follower(s) => s.epoch,
            Role::Resigned(s) => s.epoch,
        }
    }
}

/// The replicas a role still has to reach with one request each (Vote, BeginQuorumEpoch,
/// EndQuorumEpoch): at most one in flight per destination, known by its correlation id so a
/// stale response is told apart; a failed one retried after `retry.backoff.ms`, an answered
/// one done.
#[derive(Debug, Clone, Default)]
pub struct RequestTracker {
    /// Destination → correlation id of the request in flight.
    in_flight: BTreeMap<i32, i32>,
    /// Destinations still to ask, with the earliest time to send.
    pending: BTreeMap<i32, u64>,
    /// Destinations to ask again once the request in flight to them is answered, with the
    /// earliest time to send ([`RequestTracker::ask_again`]).
    again: BTreeMap<i32, u64>,
}

impl RequestTracker {
    /// A tracker that sends to every destination at `now_ms`.
    pub fn new(destinations: impl IntoIterator<Item = i32>, now_ms: u64) -> Self {
        RequestTracker {
            in_flight: BTreeMap::new(),
            pending: destinations.into_iter().map(|d| (d, now_ms)).collect(),
            again: BTreeMap::new(),
        }
    }

    /// Destinations due at `now_ms`; the caller sends to each and calls [`Self::sent`].
    pub fn take_due(&self, now_ms: u64) -> Vec<i32> {
        self.pending
            .iter()
            .filter(|(d, at)| **at <= now_ms && !self.in_flight.contains_key(d))
            .map(|(d, _)| *d)
            .collect()
    }

    /// A request went to `to` with `correlation_id`.
    pub fn sent(&mut self, to: i32, correlation_id: i32) {
        self.in_flight.insert(to, correlation_id);
    }

    /// A response came; returns whether it answers the request in flight (then nothing more
    /// is sent there). Any other response is stale and must be ignored.
    pub fn answered(&mut self, from: i32, correlation_id: i32) -> bool {
        if self.in_flight.get(&from) != Some(&correlation_id) {
            return false;
        }
        self.in_flight.remove(&from);
        match self.again.remove(&from) {
            Some(at) => {
                self.pending.insert(from, at);
            }
            None => {
                self.pending.remove(&from);
            }
        }
        true
    }

    /// Asks `to` again at `at_ms` even if it already answered: at once when nothing is in
    /// flight to it, else once the request in flight is answered (its answer may predate
    /// what made us ask again).
    pub fn ask_again(&mut self, to: i32, at_ms: u64) {
        if self.in_flight.contains_key(&to) {
            self.again.insert(to, at_ms);
        } else {
            let at = self.pending.entry(to).or_insert(at_ms);
            *at = (*at).min(at_ms);
        }
    }

    /// The request failed: retry at `retry_at_ms`.
    pub fn failed(&mut self, to: i32, correlation_id: i32, retry_at_ms: u64) {
        if self.in_flight.get(&to) == Some(&correlation_id) {
            self.in_flight.remove(&to);
            // The retry asks again anyway.
            self.again.remove(&to);
            if let Some(at) = self.pending.get_mut(&to) {
                *at = retry_at_ms;
            }
        }
    }

    /// Asks `to` again at `at_ms` (heartbeats), unless a request is already pending.
    pub fn schedule(&mut self, to: i32, at_ms: u64) {
        self.pending.entry(to).or_insert(at_ms);
    }

    /// The next time something not in flight becomes due.
    pub fn next_due_ms(&self) -> Option<u64> {
        self.pending
            .iter()
            .filter(|(d, _)| !self.in_flight.contains_key(d))
            .map(|(_, at)| *at)
            .min()
    }
}

/// Votes counted in one election (pre-vote or vote), Kafka's `EpochElection`.
#[derive(Debug, Clone, Default)]
pub struct EpochElection {
    pub voter_count: usize,
    pub granted: BTreeSet<i32>,
    pub rejected: BTreeSet<i32>,
}

impl EpochElection {
    /// An election among `voter_count` voters in which `local_id` votes for itself.
    pub fn new(voter_count: usize, local_id: i32) -> Self {
        let mut granted = BTreeSet::new();
        granted.insert(local_id);
        EpochElection {
            voter_count,
            granted,
            rejected: BTreeSet::new(),
        }
    }

    pub fn majority(&self) -> usize {
        self.voter_count / 2 + 1
    }

    pub fn record(&mut self, voter: i32, granted: bool) {
        if granted {
            self.rejected.remove(&voter);
            self.granted.insert(voter);
        } else if !self.granted.contains(&voter) {
            self.rejected.insert(voter);
        }
    }

    pub fn is_won(&self) -> bool {
        self.granted.len() >= self.majority()
    }

    /// So many rejected that a majority can no longer grant.
    pub fn is_lost(&self) -> bool {
        self.voter_count - self.rejected.len() < self.majority()
    }
}

/// Whether a candidate's log (last epoch, end offset) is at least as up to date as ours.
pub fn is_log_up_to_date(
    candidate_last_epoch: i32,
    candidate_end_offset: i64,
    local_last_epoch: i32,
    local_end_offset: i64,
) -> bool {
    (candidate_last_epoch, candidate_end_offset) >= (local_last_epoch, local_end_offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn election_counts_majorities() {
        let mut e = EpochElection::new(3, 1);
        assert!(!e.is_won());
        e.record(2, false);
        assert!(!e.is_lost());
        e.record(3, false);
        assert!(e.is_lost());
        let mut e = EpochElection::new(1, 1);
        assert!(e.is_won());
        e.record(1, false);
        assert!(e.is_won(), "a grant is never taken back");
    }

    #[test]
    fn tracker_retries_after_failure_and_ignores_stale_answers() {
        let mut t = RequestTracker::new([2, 3], 0);
        assert_eq!(t.take_due(0), vec![2, 3]);
        t.sent(2, 10);
        t.sent(3, 11);
        assert!(t.take_due(0).is_empty());
        t.failed(2, 99, 20);
        assert_eq!(t.next_due_ms(), None, "a stale failure changes nothing");
        t.failed(2, 10, 20);
        assert!(!t.answered(3, 7), "a stale answer is not the one in flight");
        assert!(t.answered(3, 11));
        assert_eq!(t.next_due_ms(), Some(20));
        assert_eq!(t.take_due(20), vec![2]);
    }

    #[test]
    fn tracker_asks_again_after_the_answer_in_flight() {
        let mut t = RequestTracker::new([2, 3], 0);
        t.sent(2, 10);
        t.ask_again(2, 5);
        assert!(
            t.take_due(5).iter().all(|d| *d != 2),
            "one request in flight at a time"
        );
        assert!(t.answered(2, 10));
        assert_eq!(t.take_due(5), vec![2, 3], "asked again after the answer");
        t.sent(3, 11);
        assert!(t.answered(3, 11));
        assert!(
            !t.take_due(100).contains(&3),
            "answered and not asked again: done"
        );
        t.ask_again(3, 7);
        assert!(t.take_due(7).contains(&3));
    }

    #[test]
    fn up_to_date_compares_epoch_first() {
        assert!(is_log_up_to_date(3, 1, 2, 100));
        assert!(!is_log_up_to_date(2, 101, 3, 1));
        assert!(is_log_up_to_date(2, 5, 2, 5));
    }
}
