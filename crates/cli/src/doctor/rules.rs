//! The doctor's rules: pure functions from what was gathered ([`Facts`]: two rounds of
//! scrapes some seconds apart, the leader's DescribeQuorum, the brokers' view of brokers and
//! partitions) to [`Finding`]s in plain words, most serious first. No I/O here, so each rule
//! is tested on hand-written scrapes (`tests.rs`).
//!
//! A rule reads a metric when the node exports it and otherwise derives the fact from the
//! Kafka protocol: fencing and offline partitions come from DescribeCluster and Metadata even
//! where the controller's `KafkaController` gauges are not exported, and a Raft client's
//! fetching is judged from its per-destination counters, with the leader's DescribeQuorum
//! (when it last heard from each observer) as a second witness.

use std::collections::{BTreeMap, BTreeSet};

use super::cluster_rules;
use super::prom::Scrape;
use crate::metadata_quorum::Quorum;

/// NOT_LEADER_OR_FOLLOWER.
const NOT_LEADER_OR_FOLLOWER: &str = "6";

/// A metadata lag below this is never reported (a healthy broker's lag stays under
/// `metadata.max.idle.interval.ms` plus a fetch round trip).
pub const LAG_FLOOR_MS: f64 = 3_000.0;

/// The leader's last contact with an observer or voter older than this is reported.
pub const STALE_FETCH_MS: i64 = 5_000;

/// A voter not caught up with the leader for this long is reported as lagging.
pub const VOTER_LAG_MS: i64 = 5_000;

/// The most items named in one finding's list.
pub(super) const LIST_LIMIT: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Critical,
    Warning,
}

/// One thing wrong, in plain words. Sorted by severity, then by `rank` (the order of the
/// rules below), then by text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    pub severity: Severity,
    pub rank: u8,
    pub text: String,
}

/// A broker as the brokers' DescribeCluster (or Metadata) lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerState {
    pub id: i32,
    pub fenced: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    pub topic: String,
    pub partition: i32,
    pub leader: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// The topic's `min.insync.replicas`, when DescribeConfigs told it.
    pub min_isr: Option<usize>,
}

/// Brokers and partitions, from a broker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterState {
    pub brokers: Vec<BrokerState>,
    /// Whether `brokers` includes the fenced ones (DescribeCluster v2); otherwise only the
    /// unfenced are listed and a missing one may be fenced.
    pub fenced_listed: bool,
    pub partitions: Vec<PartitionState>,
}

/// One round of scrapes, at the doctor's clock `at_ms`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Round {
    pub at_ms: i64,
    pub scrapes: Vec<Scrape>,
    /// `(address, error)` of each endpoint that could not be read.
    pub errors: Vec<(String, String)>,
}

impl Round {
    pub fn node(&self, id: i32) -> Option<&Scrape> {
        self.scrapes.iter().find(|s| s.node == id)
    }
}

/// Everything one diagnosis reads. `None` where the operator gave no address for it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Facts {
    pub first: Round,
    pub second: Round,
    pub quorum: Option<Result<Quorum, String>>,
    pub cluster: Option<Result<ClusterState, String>>,
    /// The clock skew reported above this, in ms.
    pub max_clock_skew_ms: i64,
}

/// Every rule's findings, most serious first.
pub fn diagnose(f: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    quorum_rules(f, &mut out);
    let cut_off = fetching_elsewhere(f, &mut out);
    stale_observers(f, &cut_off, &mut out);
    lag_growing(f, &mut out);
    cluster_rules::partition_rules(f, &mut out);
    cluster_rules::broker_rules(f, &mut out);
    cluster_rules::election_rules(f, &mut out);
    voter_rules(f, &mut out);
    clock_skew(f, &mut out);
    cluster_rules::reach_rules(f, &mut out);
    out.sort();
    out.dedup();
    out
}

pub(super) fn push(out: &mut Vec<Finding>, severity: Severity, rank: u8, text: String) {
    out.push(Finding {
        severity,
        rank,
        text,
    });
}

/// `once`, `3 times`.
fn times(n: f64) -> String {
    if n == 1.0 {
        "once".into()
    } else {
        format!("{n} times")
    }
}

fn secs(ms: f64) -> String {
    format!("{:.1} s", ms / 1000.0)
}

/// `broker 5`, `controller 1` or `node 7`, from its scrape.
fn role_name(f: &Facts, id: i32) -> String {
    let scrape = f.second.node(id).or_else(|| f.first.node(id));
    let broker = scrape.is_some_and(Scrape::is_broker)
        || cluster(f).is_some_and(|c| c.brokers.iter().any(|b| b.id == id))
        || quorum(f).is_some_and(|q| q.observers.iter().any(|o| o.replica_id == id));
    let controller = scrape.is_some_and(Scrape::is_controller)
        || quorum(f).is_some_and(|q| q.voters.iter().any(|v| v.replica_id == id));
    match (broker, controller) {
        (true, false) => format!("broker {id}"),
        (false, true) => format!("controller {id}"),
        _ => format!("node {id}"),
    }
}

/// How a destination of `s`'s Raft client reads: a negative id is a
/// `controller.quorum.bootstrap.servers` entry; the address it was sent to follows when the
/// node exports it (`kafka_raft_metrics_destination_info`).
fn destination_name(s: &Scrape, id: i32) -> String {
    let mut name = if id < -1 {
        format!("bootstrap server {id}")
    } else {
        format!("node {id}")
    };
    let address = s
        .all("kafka_raft_metrics_destination_info")
        .find(|x| x.label("destination") == Some(id.to_string().as_str()))
        .and_then(|x| x.label("address"))
        .filter(|a| !a.is_empty());
    if let Some(address) = address {
        name += &format!(" at {address}");
    }
    name
}

pub(super) fn quorum(f: &Facts) -> Option<&Quorum> {
    f.quorum.as_ref().and_then(|q| q.as_ref().ok())
}

pub(super) fn cluster(f: &Facts) -> Option<&ClusterState> {
    f.cluster.as_ref().and_then(|c| c.as_ref().ok())
}

/// The Raft leader: DescribeQuorum's, else what most scraped controllers name.
fn leader(f: &Facts) -> Option<(i32, i32)> {
    if let Some(q) = quorum(f) {
        return Some((q.leader_id, q.leader_epoch));
    }
    let mut votes: BTreeMap<(i32, i32), usize> = BTreeMap::new();
    for s in f.second.scrapes.iter().filter(|s| s.is_controller()) {
        let leader = s.get("kafka_raft_metrics_current_leader", &[]);
        let epoch = s.get("kafka_raft_metrics_current_epoch", &[]);
        if let (Some(leader), Some(epoch)) = (leader, epoch) {
            if leader >= 0.0 {
                *votes.entry((leader as i32, epoch as i32)).or_default() += 1;
            }
        }
    }
    votes.into_iter().max_by_key(|(_, n)| *n).map(|(l, _)| l)
}

/// Ranks 0 and 5: no quorum, or controllers that disagree about it.
fn quorum_rules(f: &Facts, out: &mut Vec<Finding>) {
    if let Some(Err(e)) = &f.quorum {
        push(
            out,
            Severity::Critical,
            0,
            format!("the metadata quorum has no leader that answers: {e}"),
        );
    }
    let known = quorum(f).map(|q| q.leader_id);
    for s in f.second.scrapes.iter().filter(|s| s.is_controller()) {
        let Some(leader) = s.get("kafka_raft_metrics_current_leader", &[]) else {
            continue;
        };
        let leader = leader as i32;
        let state = s.raft_state().unwrap_or("unknown");
        if leader < 0 {
            push(
                out,
                if known.is_some() {
                    Severity::Warning
                } else {
                    Severity::Critical
                },
                5,
                format!(
                    "controller {} knows no quorum leader (Raft state {state})",
                    s.node
                ),
            );
        } else if known.is_some_and(|k| k != leader) {
            push(
                out,
                Severity::Warning,
                5,
                format!(
                    "controller {} believes the leader is {leader}, but the leader is {}",
                    s.node,
                    known.unwrap_or(-1)
                ),
            );
        }
    }
    let active: Vec<(i32, f64)> = f
        .second
        .scrapes
        .iter()
        .filter_map(|s| {
            s.get(
                "kafka_controller_KafkaController_ActiveControllerCount",
                &[],
            )
            .map(|v| (s.node, v))
        })
        .collect();
    let total: f64 = active.iter().map(|(_, v)| v).sum();
    if !active.is_empty() && total != 1.0 && f.second.errors.is_empty() {
        let claiming: Vec<String> = active
            .iter()
            .filter(|(_, v)| *v > 0.0)
            .map(|(n, _)| n.to_string())
            .collect();
        push(
            out,
            Severity::Critical,
            0,
            format!(
                "{} controllers report themselves active (ActiveControllerCount), not 1: [{}]",
                total,
                claiming.join(", ")
            ),
        );
    }
}

/// A counter's growth between the two rounds for `node`, summed over the samples named
/// `name` whose labels match (0 when absent or reset).
fn delta(f: &Facts, node: i32, name: &str, labels: &[(&str, &str)]) -> f64 {
    let sum = |r: &Round| -> Option<f64> {
        let s = r.node(node)?;
        Some(
            s.all(name)
                .filter(|x| labels.iter().all(|(k, v)| x.label(k) == Some(*v)))
                .map(|x| x.value)
                .sum(),
        )
    };
    match (sum(&f.first), sum(&f.second)) {
        (Some(a), Some(b)) if b >= a => b - a,
        _ => 0.0,
    }
}

/// Rank 10 (seed 003): a Raft client that got no answer from the leader in the window but
/// asked others, or failed, or last fetched from another node. Returns the nodes reported.
fn fetching_elsewhere(f: &Facts, out: &mut Vec<Finding>) -> BTreeSet<i32> {
    let mut reported = BTreeSet::new();
    let Some((leader, epoch)) = leader(f) else {
        return reported;
    };
    let window = (f.second.at_ms - f.first.at_ms) as f64;
    for s in &f.second.scrapes {
        if s.node == leader || f.first.node(s.node).is_none() {
            continue;
        }
        if matches!(
            s.raft_state(),
            Some("leader" | "candidate" | "prospective" | "resigned")
        ) {
            continue;
        }
        // An election within the window: its counters mix two leaders; the next round
        // judges.
        let epoch_of = |r: &Round| {
            r.node(s.node)
                .and_then(|x| x.get("kafka_raft_metrics_current_epoch", &[]))
        };
        if epoch_of(&f.first) != epoch_of(&f.second) {
            continue;
        }
        let l = leader.to_string();
        let answered = delta(
            f,
            s.node,
            "kafka_raft_metrics_responses_received_total",
            &[("destination", l.as_str())],
        );
        let errors = delta(
            f,
            s.node,
            "kafka_raft_metrics_response_errors_total",
            &[("destination", l.as_str())],
        );
        let failures = delta(
            f,
            s.node,
            "kafka_raft_metrics_request_failures_total",
            &[("destination", l.as_str())],
        );
        if answered - errors > 0.0 {
            continue;
        }
        let mut elsewhere: Vec<(i32, f64)> = s
            .all("kafka_raft_metrics_response_errors_total")
            .filter(|x| x.label("error_code") == Some(NOT_LEADER_OR_FOLLOWER))
            .filter_map(|x| x.label("destination")?.parse::<i32>().ok())
            .filter(|d| *d != leader)
            .map(|d| {
                let dl = d.to_string();
                let n = delta(
                    f,
                    s.node,
                    "kafka_raft_metrics_response_errors_total",
                    &[
                        ("destination", dl.as_str()),
                        ("error_code", NOT_LEADER_OR_FOLLOWER),
                    ],
                );
                (d, n)
            })
            .filter(|(_, n)| *n > 0.0)
            .collect();
        elsewhere.sort_by(|a, b| b.1.total_cmp(&a.1));
        let last = s
            .get("kafka_raft_metrics_last_fetch_destination", &[])
            .map(|v| v as i32)
            .filter(|d| *d != -1);
        let last_elsewhere = last.filter(|d| *d != leader);
        if elsewhere.is_empty() && failures == 0.0 && last_elsewhere.is_none() {
            continue;
        }
        let who = role_name(f, s.node);
        let mut text = format!(
            "{who} does not fetch metadata from the leader {leader} (epoch {epoch}): in the last {} \
             it got no answer from node {leader}",
            secs(window)
        );
        if failures > 0.0 {
            text += &format!(" (requests to it failed or timed out {})", times(failures));
        }
        if !elsewhere.is_empty() {
            let asked: Vec<String> = elsewhere
                .iter()
                .map(|(d, n)| format!("{} ({})", destination_name(s, *d), times(*n)))
                .collect();
            text += &format!(
                " and fetched instead from {}, which is not the leader and answered \
                 NOT_LEADER_OR_FOLLOWER",
                asked.join(", ")
            );
        }
        if let Some(d) = last {
            text += &format!("; its last Fetch went to {}", destination_name(s, d));
        }
        match s
            .get("kafka_raft_metrics_current_leader", &[])
            .map(|v| v as i32)
        {
            Some(told) if told == leader => {
                text += &format!("; it was told the leader is {leader}")
            }
            Some(told) if told >= 0 => text += &format!("; it believes the leader is {told}"),
            Some(_) => text += "; it knows no leader",
            None => {}
        }
        if let Some(age) = observer_fetch_age(f, s.node) {
            text += &format!("; the leader last heard from it {} ago", secs(age as f64));
        }
        push(out, Severity::Critical, 10, text);
        reported.insert(s.node);
    }
    reported
}

/// How long ago (by the leader's clock) the leader last had a Fetch from `id`.
fn observer_fetch_age(f: &Facts, id: i32) -> Option<i64> {
    let q = quorum(f)?;
    let now = q
        .voters
        .iter()
        .find(|v| v.replica_id == q.leader_id)?
        .last_fetch_timestamp;
    let r = q
        .observers
        .iter()
        .chain(q.voters.iter())
        .find(|r| r.replica_id == id)?;
    (r.last_fetch_timestamp >= 0).then(|| now - r.last_fetch_timestamp)
}

/// Rank 10, from DescribeQuorum alone: an observer the leader has not heard from lately
/// while the controller counts its broker alive (unfenced), seed 003's signature.
fn stale_observers(f: &Facts, reported: &BTreeSet<i32>, out: &mut Vec<Finding>) {
    let Some(q) = quorum(f) else { return };
    for o in &q.observers {
        if reported.contains(&o.replica_id) {
            continue;
        }
        let Some(age) = observer_fetch_age(f, o.replica_id) else {
            continue;
        };
        if age <= STALE_FETCH_MS {
            continue;
        }
        // Without the brokers' view, fencing is unknown: the finding says less.
        let alive = cluster(f).map(|c| c.brokers.iter().any(|b| b.id == o.replica_id && !b.fenced));
        let state = match alive {
            Some(false) => continue,
            Some(true) => "is alive (unfenced) but",
            None => "may be down or cut off:",
        };
        push(
            out,
            Severity::Critical,
            10,
            format!(
                "{} {state} the leader {} last had a Fetch from it {} ago; it is stuck at \
                 metadata offset {} of {}",
                role_name(f, o.replica_id),
                q.leader_id,
                secs(age as f64),
                o.log_end_offset,
                q.high_watermark
            ),
        );
    }
}

/// Rank 20: a node whose last-applied-record lag grew with wall time between the rounds
/// while its applied offset stood still, though there was more to apply.
fn lag_growing(f: &Facts, out: &mut Vec<Finding>) {
    let window = (f.second.at_ms - f.first.at_ms) as f64;
    if window <= 0.0 {
        return;
    }
    const NAMES: [(&str, &str); 2] = [
        (
            "kafka_broker_metadata_metrics_last_applied_record_lag_ms",
            "kafka_broker_metadata_metrics_last_applied_record_offset",
        ),
        (
            "kafka_controller_KafkaController_LastAppliedRecordLagMs",
            "kafka_controller_KafkaController_LastAppliedRecordOffset",
        ),
    ];
    let offsets = |r: &Round| -> BTreeMap<i32, f64> {
        r.scrapes
            .iter()
            .filter_map(|s| {
                NAMES
                    .iter()
                    .find_map(|(_, o)| s.get(o, &[]))
                    .map(|o| (s.node, o))
            })
            .collect()
    };
    let (before, after) = (offsets(&f.first), offsets(&f.second));
    let high_watermark = quorum(f).map(|q| q.high_watermark as f64);
    for s2 in &f.second.scrapes {
        let Some(s1) = f.first.node(s2.node) else {
            continue;
        };
        for (lag_name, offset_name) in NAMES {
            let (Some(lag1), Some(lag2)) = (s1.get(lag_name, &[]), s2.get(lag_name, &[])) else {
                continue;
            };
            let (Some(off1), Some(off2)) = (s1.get(offset_name, &[]), s2.get(offset_name, &[]))
            else {
                continue;
            };
            if lag2 < LAG_FLOOR_MS || lag2 - lag1 < 0.8 * window || off2 != off1 {
                continue;
            }
            let others_moved = after
                .iter()
                .any(|(n, o)| *n != s2.node && before.get(n).is_some_and(|b| o > b));
            let behind_hw = high_watermark.is_some_and(|hw| hw > off2 + 1.0);
            if !others_moved && !behind_hw {
                continue;
            }
            let mut text = format!(
                "{}'s metadata is {} old and getting older: its last-applied-record lag grew \
                 from {} to {} in {} while it stayed at offset {off2}",
                role_name(f, s2.node),
                secs(lag2),
                secs(lag1),
                secs(lag2),
                secs(window)
            );
            if let Some(hw) = high_watermark {
                text += &format!(" (the quorum's high watermark is {hw})");
            }
            push(out, Severity::Critical, 20, text);
            break;
        }
    }
}

/// Rank 70: voters that do not fetch or do not keep up (the leader's DescribeQuorum).
fn voter_rules(f: &Facts, out: &mut Vec<Finding>) {
    let Some(q) = quorum(f) else { return };
    let Some(me) = q.voters.iter().find(|v| v.replica_id == q.leader_id) else {
        return;
    };
    let now = me.last_fetch_timestamp;
    for v in q.voters.iter().filter(|v| v.replica_id != q.leader_id) {
        let behind = me.log_end_offset - v.log_end_offset;
        if v.last_fetch_timestamp < 0 || now - v.last_fetch_timestamp > STALE_FETCH_MS {
            let when = if v.last_fetch_timestamp < 0 {
                "has never fetched from the leader".to_string()
            } else {
                format!(
                    "last fetched from the leader {} ago",
                    secs((now - v.last_fetch_timestamp) as f64)
                )
            };
            push(
                out,
                Severity::Warning,
                70,
                format!(
                    "voter {} {when} ({behind} records behind leader {}): down or cut off",
                    v.replica_id, q.leader_id
                ),
            );
        } else if v.last_caught_up_timestamp < 0 || now - v.last_caught_up_timestamp > VOTER_LAG_MS
        {
            push(
                out,
                Severity::Warning,
                70,
                format!(
                    "voter {} lags: {behind} records behind leader {}, not caught up {}",
                    v.replica_id,
                    q.leader_id,
                    if v.last_caught_up_timestamp < 0 {
                        "since the leader was elected".to_string()
                    } else {
                        format!("for {}", secs((now - v.last_caught_up_timestamp) as f64))
                    }
                ),
            );
        }
    }
}

/// The name of the wall-clock gauge every node exports.
pub const WALL_CLOCK: &str = "kraftd_wall_clock_ms";

/// What a scrape says of its node's clock against the doctor's: the node read `T` at some
/// doctor time within `[sent, received]`, so its offset lies in `[T - received, T - sent]`.
pub fn clock_offset(s: &Scrape) -> Option<(i64, i64)> {
    let t = s.get(WALL_CLOCK, &[])? as i64;
    Some((t - s.received_ms, t - s.sent_ms))
}

/// The least skew two offsets' intervals allow: 0 when they overlap.
pub fn least_skew(a: (i64, i64), b: (i64, i64)) -> i64 {
    (a.0 - b.1).max(b.0 - a.1).max(0)
}

/// Rank 80: two nodes whose clocks differ by more than the bound, beyond the round trips.
fn clock_skew(f: &Facts, out: &mut Vec<Finding>) {
    let offsets: Vec<(i32, (i64, i64))> = f
        .second
        .scrapes
        .iter()
        .filter_map(|s| clock_offset(s).map(|o| (s.node, o)))
        .collect();
    let mut pairs = Vec::new();
    for (i, (a, oa)) in offsets.iter().enumerate() {
        for (b, ob) in &offsets[i + 1..] {
            let skew = least_skew(*oa, *ob);
            if skew > f.max_clock_skew_ms {
                let (ahead, behind) = if oa.0 > ob.1 { (a, b) } else { (b, a) };
                pairs.push((skew, *ahead, *behind));
            }
        }
    }
    pairs.sort_by_key(|p| std::cmp::Reverse(p.0));
    for (skew, ahead, behind) in pairs.into_iter().take(LIST_LIMIT) {
        push(
            out,
            Severity::Warning,
            80,
            format!(
                "the clock of node {ahead} is ahead of node {behind}'s by at least {skew} ms \
                 (more than {} ms; timestamps, lags and timeouts across them are skewed)",
                f.max_clock_skew_ms
            ),
        );
    }
}

/// The one line a healthy cluster gets.
pub fn healthy_line(f: &Facts) -> String {
    let mut parts = Vec::new();
    if let Some(q) = quorum(f) {
        parts.push(format!(
            "quorum leader {} (epoch {}) with {} voters and {} observers",
            q.leader_id,
            q.leader_epoch,
            q.voters.len(),
            q.observers.len()
        ));
    }
    if let Some(c) = cluster(f) {
        parts.push(format!(
            "{} brokers unfenced, {} partitions",
            c.brokers.iter().filter(|b| !b.fenced).count(),
            c.partitions.len()
        ));
    }
    if !f.second.scrapes.is_empty() {
        parts.push(format!("{} nodes' metrics read", f.second.scrapes.len()));
    }
    format!("healthy: {}; nothing wrong", parts.join(", "))
}

#[cfg(test)]
mod tests;
