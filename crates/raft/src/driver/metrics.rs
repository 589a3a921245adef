//! raft-metrics with Kafka's names: a plain snapshot struct the driver republishes after
//! every event (through a `tokio::sync::watch`), so an exporter, a test or an operator tool
//! reads one consistent view without locks. Gauges are Kafka's `raft-metrics` group;
//! counters are totals since this incarnation started.

use std::collections::BTreeMap;

/// Per destination counters (Kafka's per-node request metrics, and D3's signal).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestinationMetrics {
    pub requests_sent: u64,
    pub responses_received: u64,
    /// Requests that timed out or found the destination unreachable.
    pub request_failures: u64,
    /// Error codes seen in responses from this destination, by code.
    pub errors_by_code: BTreeMap<i16, u64>,
}

/// One snapshot of `raft-metrics`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RaftMetrics {
    /// `current-state`: leader, candidate, prospective, voted, follower, unattached,
    /// resigned, or observer for a non-voter.
    pub current_state: &'static str,
    /// `current-leader`: -1 when unknown.
    pub current_leader: i32,
    /// `current-vote`: -1 when none was cast in this epoch.
    pub current_vote: i32,
    /// `current-epoch`.
    pub current_epoch: i32,
    /// `high-watermark`: -1 until known.
    pub high_watermark: i64,
    /// `log-end-offset`.
    pub log_end_offset: i64,
    /// `log-end-epoch`.
    pub log_end_epoch: i32,
    /// `number-of-voters`.
    pub number_of_voters: usize,
    /// `number-of-observers` (as seen by the leader; 0 elsewhere).
    pub number_of_observers: usize,
    /// `commit-latency-avg` in ms: from propose to the HW passing the proposal, leader only.
    pub commit_latency_avg_ms: f64,
    /// `commit-latency-max` in ms.
    pub commit_latency_max_ms: f64,
    /// Commits counted in the commit latency.
    pub commits: u64,
    /// `election-latency-avg` in ms: how long this node went without a known leader, per
    /// election it saw end (its first one included).
    pub election_latency_avg_ms: f64,
    /// `election-latency-max` in ms.
    pub election_latency_max_ms: f64,
    /// Elections counted in the election latency.
    pub elections: u64,
    /// `poll-idle-ratio-avg`: the share of time the driver loop waited for input rather
    /// than working, since this incarnation started.
    pub poll_idle_ratio_avg: f64,
    /// `fetch-records` total: records received in Fetch responses (followers, observers);
    /// an exporter derives `fetch-records-rate`.
    pub fetch_records_total: u64,
    /// `append-records` total: records proposed and appended by this node as leader; an
    /// exporter derives `append-records-rate`.
    pub append_records_total: u64,
    /// NOT_LEADER_OR_FOLLOWER fetch replies (D3).
    pub not_leader_or_follower_replies: u64,
    /// Per destination node id.
    pub destinations: BTreeMap<i32, DestinationMetrics>,
}
