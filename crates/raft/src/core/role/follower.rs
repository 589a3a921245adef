//! Follower: the node knows the leader of its epoch and fetches from it. A voter that has not
//! fetched successfully for `fetch.timeout.ms` becomes Prospective. An observer that cannot
//! reach the leader fetches from a bootstrap server instead (KAFKA-20514) and returns to the
//! leader as soon as any reply names it (KAFKA-19354).

/// Kafka's `FollowerState`.
#[derive(Debug, Clone)]
pub struct FollowerState {
    pub epoch: i32,
    pub leader_id: i32,
    /// The vote cast in `epoch` before the leader was known (durable).
    pub voted_id: Option<i32>,
    /// When a voter gives up on the leader; `None` for observers.
    pub fetch_deadline_ms: Option<u64>,
    /// Whether a fetch from the leader succeeded in this epoch (a follower that has one
    /// refuses pre-votes: its leader is alive).
    pub has_fetched_from_leader: bool,
    /// Where the next Fetch goes: the leader, or a bootstrap server while the leader is
    /// unreachable.
    pub fetch_target: i32,
}

impl FollowerState {
    /// A follower has a leader: no standard vote in its epoch; a pre-vote only while it has
    /// not heard from the leader.
    pub fn can_grant_vote(&self, log_up_to_date: bool, pre_vote: bool) -> bool {
        pre_vote && !self.has_fetched_from_leader && log_up_to_date
    }
}
