//! The Raft core's configuration, with Kafka's property names and defaults, so an operator's
//! `controller.quorum.*` settings map one to one onto these fields.

use std::collections::BTreeMap;

use kraftd_protocol::Uuid;

use super::endpoints::Endpoint;

/// `controller.quorum.*` settings the core uses (Kafka's `QuorumConfig`, less the voters'
/// and bootstrap servers' endpoints: those, with this and the metadata log directory, make
/// the driver's [`QuorumConfig`](crate::driver::QuorumConfig)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaftConfig {
    /// The cluster id every request carries and every receiver checks.
    pub cluster_id: String,
    /// `controller.quorum.election.timeout.ms`: base of the randomized election timeout.
    pub election_timeout_ms: u64,
    /// `controller.quorum.fetch.timeout.ms`: a voter that has not fetched successfully for
    /// this long starts an election; the leader's check-quorum timer is 1.5 times this.
    pub fetch_timeout_ms: u64,
    /// `controller.quorum.election.backoff.max.ms`: the cap of the backoff after
    /// EndQuorumEpoch.
    pub election_backoff_max_ms: u64,
    /// `controller.quorum.request.timeout.ms`: how long the driver waits for a response
    /// before calling `handle_request_failed`.
    pub request_timeout_ms: u64,
    /// `controller.quorum.retry.backoff.ms`: the pause before retrying a failed request.
    pub retry_backoff_ms: u64,
    /// `controller.quorum.append.linger.ms`: how long the leader lets appended records sit
    /// unflushed, batching more of them into one flush.
    pub append_linger_ms: u64,
    /// The longest a Fetch waits at the leader with nothing to return (Kafka's
    /// `fetchMaxWaitMs`, 500).
    pub fetch_max_wait_ms: u64,
    /// The most record bytes one Fetch response carries (Kafka's `MAX_FETCH_SIZE_BYTES`).
    pub fetch_max_bytes: usize,
    /// `controller.quorum.bootstrap.servers`, as the node ids the driver routes to (a voter's
    /// id, or a negative id for an entry that names no voter): where an observer fetches when
    /// it knows no leader or cannot reach the one it knows. Empty: the voters.
    pub bootstrap_servers: Vec<i32>,
    /// The listener the Raft RPCs use (Kafka: the first of `controller.listener.names`): the
    /// name this node's endpoint goes under in BeginQuorumEpoch and EndQuorumEpoch requests,
    /// and whose entry it reads from theirs.
    pub listener_name: String,
    /// `controller.quorum.voters`' endpoints (KIP-853): this node's own entry is what it
    /// sends as leader, another voter's what it sends when naming that voter leader. Empty
    /// (the simulator): no endpoints are sent.
    pub voter_endpoints: BTreeMap<i32, Endpoint>,
    /// The `directory.id` of this node's metadata log directory (KIP-853; `meta.properties`),
    /// zero when it has none: with its node id, the key that tells it from a replica that
    /// had the same id on another disk.
    pub directory_id: Uuid,
    /// This node's own controller listeners (name → endpoint): what it names itself by in a
    /// voter set (its start-of-epoch VotersRecord, UpdateRaftVoter, auto-join). Empty for
    /// a node that serves no controller listener (a broker, the simulator's observers).
    pub local_listeners: BTreeMap<String, Endpoint>,
    /// `controller.quorum.auto.join.enable`: an observer controller whose key is not a voter
    /// adds itself (removing a stale key with its id first) once caught up.
    pub auto_join: bool,
}

impl RaftConfig {
    /// Kafka's defaults for a cluster id.
    pub fn new(cluster_id: impl Into<String>) -> Self {
        RaftConfig {
            cluster_id: cluster_id.into(),
            election_timeout_ms: 1000,
            fetch_timeout_ms: 2000,
            election_backoff_max_ms: 1000,
            request_timeout_ms: 2000,
            retry_backoff_ms: 20,
            append_linger_ms: 25,
            fetch_max_wait_ms: 500,
            fetch_max_bytes: 8 * 1024 * 1024,
            bootstrap_servers: Vec::new(),
            listener_name: "CONTROLLER".to_string(),
            voter_endpoints: BTreeMap::new(),
            directory_id: Uuid::ZERO,
            local_listeners: BTreeMap::new(),
            auto_join: false,
        }
    }

    /// How long a leader may go without fetches from a majority before it resigns.
    pub fn check_quorum_timeout_ms(&self) -> u64 {
        self.fetch_timeout_ms.saturating_mul(3) / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas() {
        let c = RaftConfig::new("c");
        assert_eq!(c.election_timeout_ms, 1000);
        assert_eq!(c.fetch_timeout_ms, 2000);
        assert_eq!(c.election_backoff_max_ms, 1000);
        assert_eq!(c.request_timeout_ms, 2000);
        assert_eq!(c.retry_backoff_ms, 20);
        assert_eq!(c.append_linger_ms, 25);
        assert_eq!(c.check_quorum_timeout_ms(), 3000);
    }
}
