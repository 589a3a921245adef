//! Prospective (KIP-996): a voter whose election or fetch timeout expired asks for pre-votes
//! in its current epoch, without bumping it, so a node cut off from the quorum cannot disrupt
//! a healthy leader by raising the epoch.

use super::EpochElection;

/// Kafka's `ProspectiveState`.
#[derive(Debug, Clone)]
pub struct ProspectiveState {
    pub epoch: i32,
    /// The vote this node cast in `epoch`, kept from the previous role (durable).
    pub voted_id: Option<i32>,
    /// The leader this node followed in `epoch`, if any: where it returns if the pre-vote
    /// is lost.
    pub leader_id: Option<i32>,
    pub election: EpochElection,
    pub election_deadline_ms: u64,
}

impl ProspectiveState {
    pub fn can_grant_vote(&self, candidate: i32, log_up_to_date: bool, pre_vote: bool) -> bool {
        if pre_vote {
            return log_up_to_date;
        }
        match self.voted_id {
            Some(v) => v == candidate,
            None => log_up_to_date && self.leader_id.is_none(),
        }
    }
}
