//! raft-metrics with Kafka's names: a plain snapshot struct the driver republishes after
//! every event (through a `tokio::sync::watch`), so an exporter, a test or an operator tool
//! reads one consistent view without locks. Gauges are Kafka's `raft-metrics` group;
//! counters are totals since this incarnation started.
//!
//! The latencies, rates and the idle ratio are windowed as Kafka's are ([`RaftSensors`],
//! over [`super::stats`] with Kafka's default two samples of 30 s): commit-latency and
//! election-latency avg/max are `Avg` and `Max`, fetch-records-rate and append-records-rate
//! `Rate` over a `WindowedSum`, poll-idle-ratio-avg a `TimeRatio`. A windowed value must
//! decay when nothing happens, yet the snapshot is computed by the driver, not at read
//! time: so the driver also recomputes and republishes it every [`METRICS_REFRESH_MS`]
//! (a timer of its loop), and that refresh is what closes a poll-idle-ratio interval (where
//! Kafka closes it at each read of the metric). A value read is thus at most that old.
//! Kafka's windowed stats read NaN when their window holds no event, and so do ours.
//!
//! The publishing is here too: the driver loop's running totals (`Counters`) and
//! `DriverLoop::publish_metrics`, which the loop calls at the end of every drain, right
//! after settling the proposals the drain committed or failed (`driver_loop.rs`).

use std::collections::BTreeMap;

use kraftd_protocol::records::Batches;
use tokio::time::Instant;

use super::driver_loop::DriverLoop;
use super::stats::{Rate, SampleConfig, SampledStat, TimeRatio};
use crate::core::message::RaftMessage;
use crate::core::RoleName;

/// How often the driver recomputes and republishes the windowed metrics when no event
/// does it sooner, and the poll-idle-ratio's measuring interval.
pub const METRICS_REFRESH_MS: u64 = 1_000;

/// Per destination counters (Kafka's per-node request metrics, and D3's signal).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestinationMetrics {
    pub requests_sent: u64,
    pub responses_received: u64,
    /// Requests that timed out or found the destination unreachable.
    pub request_failures: u64,
    /// Error codes seen in responses from this destination, by code.
    pub errors_by_code: BTreeMap<i16, u64>,
    /// The `host:port` the last request went to (a voter's, a bootstrap server's or a
    /// learned endpoint).
    pub address: String,
}

/// One snapshot of `raft-metrics`. Equality compares floats bitwise, so a NaN (a window
/// without events) that stays NaN is no change.
#[derive(Debug, Clone, Default)]
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
    /// `number-of-voters`: of the voter set in effect (the latest in the log, else the
    /// static one).
    pub number_of_voters: usize,
    /// `number-of-observers` (as seen by the leader; 0 elsewhere).
    pub number_of_observers: usize,
    /// `commit-latency-avg` in ms: from propose to the HW passing the proposal, leader only;
    /// over the window (NaN without commits in it).
    pub commit_latency_avg_ms: f64,
    /// `commit-latency-max` in ms over the window (NaN without commits in it).
    pub commit_latency_max_ms: f64,
    /// Commits counted in the commit latency, since start.
    pub commits: u64,
    /// The commit latencies' sum in ms since start: with `commits`, an average over any
    /// span a reader chooses.
    pub commit_latency_total_ms: f64,
    /// `election-latency-avg` in ms: how long this node went without a known leader, per
    /// election it saw end (its first one included); over the window (NaN without any).
    pub election_latency_avg_ms: f64,
    /// `election-latency-max` in ms over the window (NaN without elections in it).
    pub election_latency_max_ms: f64,
    /// Elections counted in the election latency, since start.
    pub elections: u64,
    /// `poll-idle-ratio-avg`: the share of time the driver loop waited for input rather
    /// than working, between the last two refreshes (1.0 before the first measurement).
    pub poll_idle_ratio_avg: f64,
    /// `fetch-records-rate`: records received in Fetch responses (followers, observers)
    /// per second over the window.
    pub fetch_records_rate: f64,
    /// `fetch-records` total since start.
    pub fetch_records_total: u64,
    /// `append-records-rate`: records appended by this node as leader per second over the
    /// window.
    pub append_records_rate: f64,
    /// `append-records` total since start.
    pub append_records_total: u64,
    /// NOT_LEADER_OR_FOLLOWER fetch replies (D3).
    pub not_leader_or_follower_replies: u64,
    /// Pre-votes this voter started because its connection to the leader closed and the
    /// reconnect was refused (the crash failover rule), not by `fetch.timeout.ms`.
    pub connection_loss_pre_votes: u64,
    /// Per destination node id.
    pub destinations: BTreeMap<i32, DestinationMetrics>,
    /// The node this node's last Fetch went to (`None` before any; below -1 a
    /// `controller.quorum.bootstrap.servers` entry): with `current_leader`, whether it
    /// fetches from the leader it knows (seed 003, `kraftd doctor`). Exported as -1 for none.
    pub last_fetch_destination: Option<i32>,
    /// Leader endpoints learned from Raft messages (KIP-853), `host:port` by leader id:
    /// where a request to an id that `controller.quorum.voters` lacks goes.
    pub learned_endpoints: BTreeMap<i32, String>,
    /// The current leader's `host:port` on the controller listener as this node knows it
    /// (`controller.quorum.voters`, the voter set's endpoints, or learned): where a broker
    /// of a dynamic quorum, which has no static voters, sends its controller requests.
    pub leader_endpoint: Option<String>,
    /// The committed `kraft.version` (0 static voters, 1 a voter set in the log, KIP-853):
    /// the level a controller's ApiVersions reports, as Kafka's from its Raft client.
    pub kraft_version: i16,
}

/// Kafka's raft-metrics sensors: the windowed stats behind [`RaftMetrics`]'s latencies,
/// rates and idle ratio, fed with the driver's ms clock.
#[derive(Debug, Clone)]
pub struct RaftSensors {
    commit_latency: SampledStat,
    election_latency: SampledStat,
    fetch_records: Rate,
    append_records: Rate,
    poll_idle: TimeRatio,
    /// `poll_idle`'s last measurement ([`RaftSensors::measure_poll_idle`]).
    poll_idle_ratio_avg: f64,
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
        gauge(
            "fetch_records_rate",
            "Records fetched from the leader per second.",
            self.fetch_records_rate,
        );
        gauge(
            "append_records_rate",
            "Records appended per second as the leader.",
            self.append_records_rate,
        );
        let gauge_i = |out: &mut String, name: &str, help: &str, value: i32| {
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
        gauge_i(
            out,
            "last_fetch_destination",
            "The node the last Fetch went to (-1 none; below -1 a bootstrap server).",
            self.last_fetch_destination.unwrap_or(-1),
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
        counter(
            "connection_loss_pre_votes_total",
            "Pre-votes started because the connection to the leader closed and the reconnect was refused.",
            self.connection_loss_pre_votes,
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
        // One counter series per destination.
        let per_destination = |out: &mut String, name: &str, value: &dyn Fn(&_) -> u64| {
            let _ = writeln!(out, "# TYPE kafka_raft_metrics_{name} counter");
            for (to, d) in &self.destinations {
                let _ = writeln!(
                    out,
                    "kafka_raft_metrics_{name}{{node=\"{node_id}\",destination=\"{to}\"}} {}",
                    value(d)
                );
            }
        };
        per_destination(out, "requests_sent_total", &|d: &DestinationMetrics| {
            d.requests_sent
        });
        per_destination(
            out,
            "responses_received_total",
            &|d: &DestinationMetrics| d.responses_received,
        );
        let _ = writeln!(out, "# TYPE kafka_raft_metrics_destination_info gauge");
        for (to, d) in &self.destinations {
            let _ = writeln!(
                out,
                "kafka_raft_metrics_destination_info{{node=\"{node_id}\",destination=\"{to}\",address=\"{}\"}} 1",
                d.address
            );
        }
        per_destination(out, "request_failures_total", &|d: &DestinationMetrics| {
            d.request_failures
        });
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

impl PartialEq for RaftMetrics {
    fn eq(&self, other: &Self) -> bool {
        // Destructured so that a new field cannot be forgotten here.
        let RaftMetrics {
            current_state,
            current_leader,
            current_vote,
            current_epoch,
            high_watermark,
            leader_high_watermark,
            log_end_offset,
            log_end_epoch,
            number_of_voters,
            number_of_observers,
            commit_latency_avg_ms,
            commit_latency_max_ms,
            commits,
            commit_latency_total_ms,
            election_latency_avg_ms,
            election_latency_max_ms,
            elections,
            poll_idle_ratio_avg,
            fetch_records_rate,
            fetch_records_total,
            append_records_rate,
            append_records_total,
            not_leader_or_follower_replies,
            connection_loss_pre_votes,
            destinations,
            last_fetch_destination,
            learned_endpoints,
            leader_endpoint,
            kraft_version,
        } = self;
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits();
        *current_state == other.current_state
            && *current_leader == other.current_leader
            && *current_vote == other.current_vote
            && *current_epoch == other.current_epoch
            && *high_watermark == other.high_watermark
            && *leader_high_watermark == other.leader_high_watermark
            && *log_end_offset == other.log_end_offset
            && *log_end_epoch == other.log_end_epoch
            && *number_of_voters == other.number_of_voters
            && *number_of_observers == other.number_of_observers
            && same(*commit_latency_avg_ms, other.commit_latency_avg_ms)
            && same(*commit_latency_max_ms, other.commit_latency_max_ms)
            && *commits == other.commits
            && same(*commit_latency_total_ms, other.commit_latency_total_ms)
            && same(*election_latency_avg_ms, other.election_latency_avg_ms)
            && same(*election_latency_max_ms, other.election_latency_max_ms)
            && *elections == other.elections
            && same(*poll_idle_ratio_avg, other.poll_idle_ratio_avg)
            && same(*fetch_records_rate, other.fetch_records_rate)
            && *fetch_records_total == other.fetch_records_total
            && same(*append_records_rate, other.append_records_rate)
            && *append_records_total == other.append_records_total
            && *not_leader_or_follower_replies == other.not_leader_or_follower_replies
            && *connection_loss_pre_votes == other.connection_loss_pre_votes
            && *destinations == other.destinations
            && *last_fetch_destination == other.last_fetch_destination
            && *learned_endpoints == other.learned_endpoints
            && *leader_endpoint == other.leader_endpoint
            && *kraft_version == other.kraft_version
    }
}

impl Default for RaftSensors {
    fn default() -> Self {
        Self::new(SampleConfig::default())
    }
}

impl RaftSensors {
    pub fn new(config: SampleConfig) -> Self {
        let mut poll_idle = TimeRatio::new(1.0);
        let poll_idle_ratio_avg = poll_idle.measure();
        Self {
            commit_latency: SampledStat::new(config),
            election_latency: SampledStat::new(config),
            fetch_records: Rate::new(config),
            append_records: Rate::new(config),
            poll_idle,
            poll_idle_ratio_avg,
        }
    }

    /// A proposal committed `latency_ms` after it was appended.
    pub fn record_commit_latency(&mut self, latency_ms: f64, now_ms: u64) {
        self.commit_latency.record(latency_ms, now_ms);
    }

    /// A leader became known after `latency_ms` without one.
    pub fn record_election_latency(&mut self, latency_ms: f64, now_ms: u64) {
        self.election_latency.record(latency_ms, now_ms);
    }

    /// Records received in a Fetch response (Kafka records only responses that carry some).
    pub fn record_fetch_records(&mut self, records: u64, now_ms: u64) {
        if records > 0 {
            self.fetch_records.record(records as f64, now_ms);
        }
    }

    /// Records appended as leader.
    pub fn record_append_records(&mut self, records: u64, now_ms: u64) {
        self.append_records.record(records as f64, now_ms);
    }

    /// The loop waited `idle_ms` for input, until `now_ms` (Kafka's `updatePollEnd`).
    pub fn record_poll_idle(&mut self, idle_ms: f64, now_ms: u64) {
        self.poll_idle.record(idle_ms, now_ms);
    }

    /// Closes the poll-idle-ratio interval: its ratio is what the snapshots carry until the
    /// next call (Kafka measures at each read of the metric).
    pub fn measure_poll_idle(&mut self) {
        self.poll_idle_ratio_avg = self.poll_idle.measure();
    }

    /// Sets the windowed values of `m` as of `now_ms` (purging samples that left the
    /// window).
    pub fn fill(&mut self, m: &mut RaftMetrics, now_ms: u64) {
        m.commit_latency_avg_ms = self.commit_latency.avg(now_ms);
        m.commit_latency_max_ms = self.commit_latency.max(now_ms);
        m.election_latency_avg_ms = self.election_latency.avg(now_ms);
        m.election_latency_max_ms = self.election_latency.max(now_ms);
        m.fetch_records_rate = self.fetch_records.measure(now_ms);
        m.append_records_rate = self.append_records.measure(now_ms);
        m.poll_idle_ratio_avg = self.poll_idle_ratio_avg;
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

/// The top-level error code of a response, and its partitions' (for the per-destination
/// error counters).
pub(super) fn error_codes(msg: &RaftMessage) -> Vec<i16> {
    let mut codes = Vec::new();
    match msg {
        RaftMessage::VoteResponse(r) => {
            codes.push(r.error_code);
            codes.extend(
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            );
        }
        RaftMessage::BeginQuorumEpochResponse(r) => {
            codes.push(r.error_code);
            codes.extend(
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            );
        }
        RaftMessage::EndQuorumEpochResponse(r) => {
            codes.push(r.error_code);
            codes.extend(
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            );
        }
        RaftMessage::FetchResponse(r) => {
            codes.push(r.error_code);
            codes.extend(
                r.responses
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            );
        }
        RaftMessage::FetchSnapshotResponse(r) => {
            codes.push(r.error_code);
            codes.extend(
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            );
        }
        _ => {}
    }
    codes.retain(|c| *c != 0);
    codes
}

/// Records carried by a Fetch response's batches.
pub(super) fn fetched_records(r: &kraftd_protocol::messages::FetchResponse) -> u64 {
    r.responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .filter_map(|p| p.records.clone())
        .flat_map(Batches::new)
        .map_while(Result::ok)
        .map(|b| (b.next_offset() - b.base_offset()).max(0) as u64)
        .sum()
}

/// The driver loop's totals and sensors behind each [`RaftMetrics`] snapshot.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) commit_latency_total_ms: f64,
    pub(super) commits: u64,
    pub(super) elections: u64,
    /// Since when no leader is known (`None` while one is).
    pub(super) leaderless_since: Option<Instant>,
    /// The windowed raft-metrics, refreshed at least every [`METRICS_REFRESH_MS`].
    pub(super) sensors: RaftSensors,
    /// When (core ms) the next metrics refresh is due.
    pub(super) metrics_refresh_ms: u64,
    pub(super) fetch_records_total: u64,
    pub(super) append_records_total: u64,
    pub(super) destinations: BTreeMap<i32, DestinationMetrics>,
    /// Where the last Fetch went; -1 before any.
    pub(super) last_fetch_destination: Option<i32>,
}

impl DriverLoop {
    /// Counts elections and republishes [`RaftMetrics`] as of `now` (core ms) if it changed.
    /// The loop settles the proposals first (`DriverLoop::settle_proposals`, which counts
    /// the commits), so the snapshot includes them.
    pub(super) fn publish_metrics(&mut self, now: u64) {
        use crate::core::log::RaftLog;
        let hw = self.core.high_watermark();
        match (self.core.leader_id(), self.counters.leaderless_since) {
            (None, None) => self.counters.leaderless_since = Some(Instant::now()),
            (Some(_), Some(since)) => {
                let ms = since.elapsed().as_secs_f64() * 1000.0;
                self.counters.leaderless_since = None;
                self.counters.elections += 1;
                self.counters.sensors.record_election_latency(ms, now);
            }
            _ => {}
        }
        let durable = self.core.durable_state();
        let role = self.core.role();
        let current_state =
            if !self.core.is_voter() && matches!(role, RoleName::Follower | RoleName::Unattached) {
                "observer"
            } else if role == RoleName::Unattached && durable.voted_id >= 0 {
                "voted"
            } else {
                role.as_str()
            };
        let c = &self.counters;
        let mut m = RaftMetrics {
            current_state,
            current_leader: self.core.leader_id().unwrap_or(-1),
            current_vote: durable.voted_id,
            current_epoch: self.core.epoch(),
            high_watermark: hw,
            leader_high_watermark: self.core.leader_high_watermark(),
            log_end_offset: self.core.log().end_offset(),
            log_end_epoch: self.core.log().last_epoch(),
            // The voter set in effect (the latest in the log), as Kafka's
            // KRaftControlRecordStateMachine updates it: not `controller.quorum.voters`,
            // which a dynamic quorum leaves empty and whose voters change.
            number_of_voters: self.core.voter_set().len(),
            number_of_observers: self.core.leader_state().map_or(0, |l| l.observers.len()),
            commits: c.commits,
            commit_latency_total_ms: c.commit_latency_total_ms,
            elections: c.elections,
            fetch_records_total: c.fetch_records_total,
            append_records_total: c.append_records_total,
            not_leader_or_follower_replies: self.core.stats().not_leader_or_follower_replies,
            connection_loss_pre_votes: self.core.stats().connection_loss_pre_votes,
            destinations: c.destinations.clone(),
            last_fetch_destination: c.last_fetch_destination,
            learned_endpoints: self
                .core
                .learned_endpoints()
                .iter()
                .map(|(id, l)| (*id, l.endpoint.address()))
                .collect(),
            leader_endpoint: self
                .core
                .leader_id()
                .and_then(|id| self.core.leader_endpoint(id))
                .map(|e| e.address()),
            kraft_version: self.core.kraft_version(),
            // Windowed: set by the sensors below.
            ..RaftMetrics::default()
        };
        self.counters.sensors.fill(&mut m, now);
        self.metrics.send_if_modified(|old| {
            if *old == m {
                false
            } else {
                *old = m;
                true
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sensors() -> RaftSensors {
        RaftSensors::new(SampleConfig {
            window_ms: 1_000,
            samples: 2,
        })
    }

    #[test]
    fn windowed_metrics_decay_when_nothing_happens() {
        let mut s = sensors();
        let mut m = RaftMetrics::default();
        s.record_commit_latency(10.0, 0);
        s.record_commit_latency(30.0, 100);
        s.record_election_latency(250.0, 100);
        s.record_fetch_records(100, 0);
        s.record_append_records(50, 0);
        s.fill(&mut m, 1_000);
        assert_eq!(m.commit_latency_avg_ms, 20.0);
        assert_eq!(m.commit_latency_max_ms, 30.0);
        assert_eq!(m.election_latency_avg_ms, 250.0);
        assert_eq!(m.election_latency_max_ms, 250.0);
        assert_eq!(m.fetch_records_rate, 100.0);
        assert_eq!(m.append_records_rate, 50.0);
        // Two windows after the last event, all of it has left the window.
        s.fill(&mut m, 2_100);
        assert!(m.commit_latency_avg_ms.is_nan());
        assert!(m.commit_latency_max_ms.is_nan());
        assert!(m.election_latency_avg_ms.is_nan());
        assert!(m.election_latency_max_ms.is_nan());
        assert_eq!(m.fetch_records_rate, 0.0);
        assert_eq!(m.append_records_rate, 0.0);
    }

    #[test]
    fn fetch_responses_without_records_are_not_recorded() {
        let mut s = sensors();
        let mut m = RaftMetrics::default();
        s.record_fetch_records(10, 0);
        // An empty response at 1999 would keep the sample alive past 2000 if recorded.
        s.record_fetch_records(0, 1_999);
        s.fill(&mut m, 2_000);
        assert_eq!(m.fetch_records_rate, 0.0);
    }

    #[test]
    fn poll_idle_ratio_changes_only_when_measured() {
        let mut s = sensors();
        let mut m = RaftMetrics::default();
        s.fill(&mut m, 0);
        assert_eq!(
            m.poll_idle_ratio_avg, 1.0,
            "Kafka's default before any interval"
        );
        s.record_poll_idle(5.0, 0);
        s.record_poll_idle(30.0, 40);
        s.record_poll_idle(0.0, 100);
        s.fill(&mut m, 100);
        assert_eq!(m.poll_idle_ratio_avg, 1.0);
        s.measure_poll_idle();
        s.fill(&mut m, 100);
        assert_eq!(m.poll_idle_ratio_avg, 0.3);
    }

    #[test]
    fn an_unchanged_nan_is_no_change() {
        let mut a = RaftMetrics {
            commit_latency_avg_ms: f64::NAN,
            ..RaftMetrics::default()
        };
        let b = a.clone();
        assert_eq!(a, b);
        a.commit_latency_avg_ms = 1.0;
        assert_ne!(a, b);
    }

    #[test]
    fn prometheus_carries_kafkas_rate_names() {
        let m = RaftMetrics {
            fetch_records_rate: 2.5,
            append_records_rate: 4.0,
            commit_latency_avg_ms: f64::NAN,
            ..RaftMetrics::default()
        };
        let mut out = String::new();
        m.write_prometheus(1, &mut out);
        assert!(out.contains("kafka_raft_metrics_fetch_records_rate{node=\"1\"} 2.5\n"));
        assert!(out.contains("kafka_raft_metrics_append_records_rate{node=\"1\"} 4\n"));
        assert!(out.contains("kafka_raft_metrics_commit_latency_avg{node=\"1\"} NaN\n"));
        assert!(out.contains("kafka_raft_metrics_fetch_records_total{node=\"1\"} 0\n"));
    }

    #[test]
    fn prometheus_says_where_fetches_go_and_which_failed() {
        let mut m = RaftMetrics::default();
        let mut out = String::new();
        m.write_prometheus(4, &mut out);
        assert!(out.contains("kafka_raft_metrics_last_fetch_destination{node=\"4\"} -1\n"));
        m.last_fetch_destination = Some(-2);
        m.destinations.insert(
            1,
            DestinationMetrics {
                request_failures: 3,
                address: "127.0.0.1:9093".into(),
                ..DestinationMetrics::default()
            },
        );
        out.clear();
        m.write_prometheus(4, &mut out);
        assert!(out.contains("kafka_raft_metrics_last_fetch_destination{node=\"4\"} -2\n"));
        assert!(out.contains(
            "kafka_raft_metrics_request_failures_total{node=\"4\",destination=\"1\"} 3\n"
        ));
        assert!(out.contains(
            "kafka_raft_metrics_destination_info{node=\"4\",destination=\"1\",address=\"127.0.0.1:9093\"} 1\n"
        ));
    }
}
