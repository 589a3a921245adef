//! Unattached: the node knows no leader for its epoch. A voter waits out a randomized
//! election timeout (then becomes Prospective) and may grant one vote in the epoch; an
//! observer fetches from a bootstrap server until a reply names the leader.

/// Kafka's `UnattachedState` (which since KIP-996 also covers the old `VotedState`).
#[derive(Debug, Clone)]
pub struct UnattachedState {
    pub epoch: i32,
    /// The candidate this node voted for in `epoch`, if any (durable).
    pub voted_id: Option<i32>,
    /// When a voter starts a pre-vote; `None` for observers, which never do.
    pub election_deadline_ms: Option<u64>,
}

impl UnattachedState {
    /// A standard vote goes to at most one candidate per epoch; a pre-vote only needs an
    /// up-to-date log.
    pub fn can_grant_vote(&self, candidate: i32, log_up_to_date: bool, pre_vote: bool) -> bool {
        if pre_vote {
            return log_up_to_date;
        }
        match self.voted_id {
            Some(v) => v == candidate,
            None => log_up_to_date,
        }
    }
}
