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
    /// The committed log's end as the leader last reported it (not capped at this node's
    /// log end): a state machine far behind compares its progress with this, not with
    /// `high_watermark`, to know it has caught up.
    pub leader_high_watermark: i64,
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

impl RaftMetrics {
    /// Appends the metrics in Prometheus' text format, named after Kafka's `raft-metrics`
    /// group (`kafka_raft_metrics_<name>`, dashes as underscores), with `node` as a label.
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        use std::fmt::Write;
        let mut gauge = |name: &str, help: &str, value: f64| {
            write_prometheus_metric(
                out,
                "kafka_raft_metrics",
                name,
                "gauge",
                help,
                node_id,
                value,
            );
        };
        gauge(
            "current_leader",
            "The current quorum leader's id; -1 when unknown.",
            self.current_leader as f64,
        );
        gauge(
            "current_vote",
            "The id this node voted for in the current epoch; -1 when none.",
            self.current_vote as f64,
        );
        gauge(
            "current_epoch",
            "The current quorum epoch.",
            self.current_epoch as f64,
        );
        gauge(
            "high_watermark",
            "The high watermark of the metadata log; -1 until known.",
            self.high_watermark as f64,
        );
        gauge(
            "log_end_offset",
            "The end offset of the local metadata log.",
            self.log_end_offset as f64,
        );
        gauge(
            "log_end_epoch",
            "The epoch of the last record of the local metadata log.",
            self.log_end_epoch as f64,
        );
        gauge(
            "number_of_voters",
            "Voters of the quorum.",
            self.number_of_voters as f64,
        );
        gauge(
            "number_of_observers",
            "Observers fetching from this leader.",
            self.number_of_observers as f64,
        );
        gauge(
            "commit_latency_avg",
            "Average ms from append to commit (leader).",
            self.commit_latency_avg_ms,
        );
        gauge(
            "commit_latency_max",
            "Maximum ms from append to commit (leader).",
            self.commit_latency_max_ms,
        );
        gauge(
            "election_latency_avg",
            "Average ms without a known leader per election.",
            self.election_latency_avg_ms,
        );
        gauge(
            "election_latency_max",
            "Maximum ms without a known leader per election.",
            self.election_latency_max_ms,
        );
        gauge(
            "poll_idle_ratio_avg",
            "Share of time the Raft loop waited for input.",
            self.poll_idle_ratio_avg,
        );
        let mut counter = |name: &str, help: &str, value: u64| {
            write_prometheus_metric(
                out,
                "kafka_raft_metrics",
                name,
                "counter",
                help,
                node_id,
                value,
            );
        };
        counter(
            "fetch_records_total",
            "Records received in Fetch responses.",
            self.fetch_records_total,
        );
        counter(
            "append_records_total",
            "Records appended as leader.",
            self.append_records_total,
        );
        counter(
            "not_leader_or_follower_total",
            "Fetch replies NOT_LEADER_OR_FOLLOWER (a node asking one that does not lead).",
            self.not_leader_or_follower_replies,
        );
        let _ = writeln!(
            out,
            "# HELP kafka_raft_metrics_current_state The Raft role of this node (1 for the current one)."
        );
        let _ = writeln!(out, "# TYPE kafka_raft_metrics_current_state gauge");
        let _ = writeln!(
            out,
            "kafka_raft_metrics_current_state{{node=\"{node_id}\",state=\"{}\"}} 1",
            self.current_state
        );
        let _ = writeln!(out, "# TYPE kafka_raft_metrics_requests_sent_total counter");
        for (to, d) in &self.destinations {
            let _ = writeln!(
                out,
                "kafka_raft_metrics_requests_sent_total{{node=\"{node_id}\",destination=\"{to}\"}} {}",
                d.requests_sent
            );
        }
        let _ = writeln!(
            out,
            "# TYPE kafka_raft_metrics_responses_received_total counter"
        );
        for (to, d) in &self.destinations {
            let _ = writeln!(
                out,
                "kafka_raft_metrics_responses_received_total{{node=\"{node_id}\",destination=\"{to}\"}} {}",
                d.responses_received
            );
        }
        let _ = writeln!(
            out,
            "# TYPE kafka_raft_metrics_response_errors_total counter"
        );
        for (to, d) in &self.destinations {
            for (code, n) in &d.errors_by_code {
                let _ = writeln!(
                    out,
                    "kafka_raft_metrics_response_errors_total{{node=\"{node_id}\",destination=\"{to}\",error_code=\"{code}\"}} {n}"
                );
            }
        }
    }
}

/// One metric in Prometheus' text format: `<group>_<name>{node="N"} value` with its HELP and
/// TYPE lines. Groups are Kafka's metric groups with dashes as underscores
/// (`kafka_raft_metrics`, `kafka_broker_metadata_metrics`).
pub fn write_prometheus_metric(
    out: &mut String,
    group: &str,
    name: &str,
    kind: &str,
    help: &str,
    node_id: i32,
    value: impl std::fmt::Display,
) {
    use std::fmt::Write;
    let _ = writeln!(out, "# HELP {group}_{name} {help}");
    let _ = writeln!(out, "# TYPE {group}_{name} {kind}");
    let _ = writeln!(out, "{group}_{name}{{node=\"{node_id}\"}} {value}");
}
