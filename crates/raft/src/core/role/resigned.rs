//! Resigned: a leader that gave up its epoch (check-quorum, graceful shutdown) or a node that
//! restarts having been the leader. It tells the voters with EndQuorumEpoch, ranking its
//! preferred successors by fetch offset, and after its election timeout becomes a Candidate.
//! It never becomes Leader of its epoch again, and grants no vote in it.

use super::RequestTracker;

/// Kafka's `ResignedState`.
#[derive(Debug, Clone)]
pub struct ResignedState {
    pub epoch: i32,
    pub election_deadline_ms: u64,
    /// Voters other than this node, most caught up first.
    pub preferred_successors: Vec<i32>,
    /// EndQuorumEpoch requests still to deliver.
    pub end_quorum: RequestTracker,
}
