//! Candidate: a voter that won its pre-vote, bumped the epoch and voted for itself, asking
//! every voter for its vote. A candidate that loses waits out the rest of its randomized
//! election timeout before trying again, so elections do not run in lockstep.

use super::EpochElection;

/// Kafka's `CandidateState`.
#[derive(Debug, Clone)]
pub struct CandidateState {
    pub epoch: i32,
    pub election: EpochElection,
    pub election_deadline_ms: u64,
}

impl CandidateState {
    /// A candidate voted for itself: it grants only pre-votes (by log).
    pub fn can_grant_vote(&self, log_up_to_date: bool, pre_vote: bool) -> bool {
        pre_vote && log_up_to_date
    }
}
