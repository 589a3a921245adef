//! The group coordinator's metrics, with Kafka's `group-coordinator-metrics` names
//! (JMX `kafka.server:type=group-coordinator-metrics,name=...`, exported here as
//! `kafka_server_group_coordinator_metrics_<name>` with the JMX tags as labels).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::group_coordinator::shard::ShardStats;

/// Counters and the last published gauges.
#[derive(Debug, Default)]
pub struct CoordinatorMetrics {
    /// Records written by the coordinator.
    records_written: AtomicU64,
    /// Offsets committed (OffsetCommit records written).
    offset_commits: AtomicU64,
    /// Offsets deleted (tombstones written: OffsetDelete, DeleteGroups, expiry).
    offset_deletions: AtomicU64,
    /// Classic generations completed.
    classic_rebalances: AtomicU64,
    /// KIP-848 group epochs bumped.
    consumer_rebalances: AtomicU64,
    /// Partition loads and their total and longest time.
    loads: AtomicU64,
    load_ms_total: AtomicU64,
    load_ms_max: AtomicU64,
    gauges: Mutex<Gauges>,
}

#[derive(Debug, Default, Clone)]
struct Gauges {
    /// (group type, state) → count.
    groups: BTreeMap<(&'static str, &'static str), usize>,
    offsets: usize,
    loaded: usize,
    loading: usize,
}

impl CoordinatorMetrics {
    pub(crate) fn record_write(&self, records: usize) {
        self.records_written
            .fetch_add(records as u64, Ordering::Relaxed);
    }

    pub(crate) fn record_stats(&self, stats: ShardStats) {
        let add = |c: &AtomicU64, n: u64| {
            if n > 0 {
                c.fetch_add(n, Ordering::Relaxed);
            }
        };
        add(&self.offset_commits, stats.offset_commits);
        add(&self.offset_deletions, stats.offset_deletions);
        add(&self.classic_rebalances, stats.classic_rebalances);
        add(&self.consumer_rebalances, stats.consumer_rebalances);
    }

    pub(crate) fn record_load(&self, took: Duration) {
        let ms = took.as_millis() as u64;
        self.loads.fetch_add(1, Ordering::Relaxed);
        self.load_ms_total.fetch_add(ms, Ordering::Relaxed);
        self.load_ms_max.fetch_max(ms, Ordering::Relaxed);
    }

    pub(crate) fn set_shards(&self, shards: &[(i32, bool)]) {
        let mut g = self.gauges.lock().unwrap_or_else(|p| p.into_inner());
        g.loaded = shards.iter().filter(|(_, active)| *active).count();
        g.loading = shards.len() - g.loaded;
    }

    pub(crate) fn set_groups(
        &self,
        groups: BTreeMap<(&'static str, &'static str), usize>,
        offsets: usize,
    ) {
        let mut g = self.gauges.lock().unwrap_or_else(|p| p.into_inner());
        g.groups = groups;
        g.offsets = offsets;
    }

    /// Groups of one type and state, as last published (tests and the note's figures).
    pub fn group_count(&self, group_type: &str, state: &str) -> usize {
        let g = self.gauges.lock().unwrap_or_else(|p| p.into_inner());
        g.groups
            .iter()
            .filter(|((t, s), _)| *t == group_type && s.eq_ignore_ascii_case(state))
            .map(|(_, n)| *n)
            .sum()
    }

    /// Prometheus text.
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        let g = self
            .gauges
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let prefix = "kafka_server_group_coordinator_metrics";
        let mut header = |name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {prefix}_{name} {help}");
            let _ = writeln!(out, "# TYPE {prefix}_{name} {kind}");
        };
        header(
            "group_count",
            "gauge",
            "Groups by protocol (classic, consumer).",
        );
        let mut by_protocol: BTreeMap<&str, usize> =
            BTreeMap::from([("classic", 0), ("consumer", 0)]);
        for ((t, _), n) in &g.groups {
            *by_protocol.entry(t).or_default() += n;
        }
        for (protocol, n) in &by_protocol {
            let _ = writeln!(
                out,
                "{prefix}_group_count{{node=\"{node_id}\",protocol=\"{protocol}\"}} {n}"
            );
        }
        for (kind, name) in [
            ("classic", "classic_group_count"),
            ("consumer", "consumer_group_count"),
        ] {
            let _ = writeln!(out, "# HELP {prefix}_{name} {kind} groups by state.");
            let _ = writeln!(out, "# TYPE {prefix}_{name} gauge");
            for ((t, state), n) in &g.groups {
                if *t == kind {
                    let state = state.to_ascii_lowercase();
                    let _ = writeln!(
                        out,
                        "{prefix}_{name}{{node=\"{node_id}\",state=\"{state}\"}} {n}"
                    );
                }
            }
        }
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut metric = |name: &str, kind: &str, help: &str, value: u64| {
            kraftd_raft::driver::metrics::write_prometheus_metric(
                out, prefix, name, kind, help, node_id, value,
            );
        };
        metric(
            "num_offsets",
            "gauge",
            "Committed offsets held by the shards this broker serves.",
            g.offsets as u64,
        );
        metric(
            "offset_commit_count",
            "counter",
            "Offsets committed.",
            load(&self.offset_commits),
        );
        metric(
            "records_written_total",
            "counter",
            "Records the coordinator appended to __consumer_offsets.",
            load(&self.records_written),
        );
        metric(
            "partition_load_time_max",
            "gauge",
            "Longest __consumer_offsets partition load, ms.",
            load(&self.load_ms_max),
        );
        let loads = load(&self.loads);
        let avg = load(&self.load_ms_total).checked_div(loads).unwrap_or(0);
        metric(
            "partition_load_time_avg",
            "gauge",
            "Mean __consumer_offsets partition load, ms.",
            avg,
        );
        metric(
            "partitions_loaded",
            "gauge",
            "__consumer_offsets partitions served here.",
            g.loaded as u64,
        );
        metric(
            "partitions_loading",
            "gauge",
            "__consumer_offsets partitions loading here.",
            g.loading as u64,
        );
    }
}
