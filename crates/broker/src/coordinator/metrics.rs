//! A coordinator's metrics under Kafka's group names (`group-coordinator-metrics`,
//! `transaction-coordinator-metrics`; JMX `kafka.server:type=<group>,name=<name>`, exported
//! as `kafka_server_<group>_<name>` with `-` as `_` and the JMX tags as labels): the
//! runtime's own (partition loads, records written, shards loaded and loading) and the
//! gauges and counters its shards report ([`kraftd_coordinator::shard::CoordinatorShard::gauges`],
//! `take_counters`), and what its service measures around the shards: operation latencies
//! (Kafka's `Avg` and `Max` of a sensor, the share coordinator's `write-latency`) and values
//! per partition of the coordinator's topic (`last-pruned-offset`).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use kraftd_coordinator::shard::Labels;

/// Counters and the last published gauges of one coordinator.
#[derive(Debug)]
pub struct RuntimeMetrics {
    /// `kafka_server_group_coordinator_metrics`, say.
    prefix: String,
    records_written: AtomicU64,
    loads: AtomicU64,
    load_ms_total: AtomicU64,
    load_ms_max: AtomicU64,
    state: Mutex<State>,
}

#[derive(Debug, Default, Clone)]
struct State {
    gauges: BTreeMap<(&'static str, Labels), u64>,
    counters: BTreeMap<&'static str, u64>,
    latencies: BTreeMap<&'static str, Latency>,
    /// (name, topic, partition) → the value last set.
    partition_values: BTreeMap<(&'static str, &'static str, i32), i64>,
    loaded: usize,
    loading: usize,
}

/// An operation's latencies since start, in ms: the mean and the longest.
#[derive(Debug, Default, Clone, Copy)]
struct Latency {
    count: u64,
    total_ms: u64,
    max_ms: u64,
}

impl RuntimeMetrics {
    /// Metrics under Kafka's group `group` (`group-coordinator-metrics`).
    pub fn new(group: &str) -> Self {
        RuntimeMetrics {
            prefix: format!("kafka_server_{}", group.replace('-', "_")),
            records_written: AtomicU64::new(0),
            loads: AtomicU64::new(0),
            load_ms_total: AtomicU64::new(0),
            load_ms_max: AtomicU64::new(0),
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn record_write(&self, records: usize) {
        self.records_written
            .fetch_add(records as u64, Ordering::Relaxed);
    }

    pub(crate) fn record_counters(&self, counters: Vec<(&'static str, u64)>) {
        if counters.iter().all(|(_, n)| *n == 0) {
            return;
        }
        let mut s = self.state();
        for (name, n) in counters {
            *s.counters.entry(name).or_insert(0) += n;
        }
    }

    pub(crate) fn record_load(&self, took: Duration) {
        let ms = took.as_millis() as u64;
        self.loads.fetch_add(1, Ordering::Relaxed);
        self.load_ms_total.fetch_add(ms, Ordering::Relaxed);
        self.load_ms_max.fetch_max(ms, Ordering::Relaxed);
    }

    /// One operation of `name` (`write_latency`) took `took`: exported as `<name>_avg`
    /// and `<name>_max`, in ms.
    pub(crate) fn record_latency(&self, name: &'static str, took: Duration) {
        let ms = took.as_millis() as u64;
        let mut s = self.state();
        let l = s.latencies.entry(name).or_default();
        l.count += 1;
        l.total_ms += ms;
        l.max_ms = l.max_ms.max(ms);
    }

    /// Sets a value kept per partition of the coordinator's `topic`
    /// (`last_pruned_offset`), labelled with both as Kafka tags it.
    pub(crate) fn set_partition_value(
        &self,
        name: &'static str,
        topic: &'static str,
        partition: i32,
        value: i64,
    ) {
        self.state()
            .partition_values
            .insert((name, topic, partition), value);
    }

    /// A partition no longer served here: its values go (Kafka removes the sensors of a
    /// shard it deactivates).
    pub(crate) fn forget_partition(&self, partition: i32) {
        self.state()
            .partition_values
            .retain(|(_, _, p), _| *p != partition);
    }

    /// A value set with [`RuntimeMetrics::set_partition_value`] (tests).
    pub fn partition_value(&self, name: &str, partition: i32) -> Option<i64> {
        self.state()
            .partition_values
            .iter()
            .find(|((n, _, p), _)| *n == name && *p == partition)
            .map(|(_, v)| *v)
    }

    /// The (mean, longest) latency of `name` in ms, if any was recorded (tests).
    pub fn latency(&self, name: &str) -> Option<(u64, u64)> {
        self.state()
            .latencies
            .get(name)
            .map(|l| (l.total_ms / l.count.max(1), l.max_ms))
    }

    pub(crate) fn set_shards(&self, shards: &[(i32, bool)]) {
        let mut s = self.state();
        s.loaded = shards.iter().filter(|(_, active)| *active).count();
        s.loading = shards.len() - s.loaded;
    }

    pub(crate) fn set_gauges(&self, gauges: BTreeMap<(&'static str, Labels), u64>) {
        self.state().gauges = gauges;
    }

    /// A shard gauge's last published total over the labels given (tests, the note).
    pub fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.state()
            .gauges
            .iter()
            .filter(|((n, l), _)| {
                *n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|(_, v)| *v)
            .sum()
    }

    /// A shard counter's total.
    pub fn counter(&self, name: &str) -> u64 {
        self.state().counters.get(name).copied().unwrap_or(0)
    }

    /// Prometheus text.
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        let s = self.state().clone();
        let prefix = &self.prefix;
        let mut last = "";
        for ((name, labels), value) in &s.gauges {
            if *name != last {
                let _ = writeln!(out, "# TYPE {prefix}_{name} gauge");
                last = name;
            }
            let mut l = format!("node=\"{node_id}\"");
            for (k, v) in labels {
                let _ = write!(l, ",{k}=\"{v}\"");
            }
            let _ = writeln!(out, "{prefix}_{name}{{{l}}} {value}");
        }
        let mut last = "";
        for ((name, topic, partition), value) in &s.partition_values {
            if *name != last {
                let _ = writeln!(out, "# TYPE {prefix}_{name} gauge");
                last = name;
            }
            let _ = writeln!(
                out,
                "{prefix}_{name}{{node=\"{node_id}\",topic=\"{topic}\",partition=\"{partition}\"}} {value}"
            );
        }
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut metric = |name: &str, kind: &str, help: &str, value: u64| {
            kraftd_raft::driver::metrics::write_prometheus_metric(
                out, prefix, name, kind, help, node_id, value,
            );
        };
        for (name, value) in &s.counters {
            metric(
                name,
                "counter",
                "Counted by the coordinator's shards.",
                *value,
            );
        }
        for (name, l) in &s.latencies {
            let avg = l.total_ms.checked_div(l.count).unwrap_or(0);
            metric(
                &format!("{name}_avg"),
                "gauge",
                "Mean time an operation took, ms.",
                avg,
            );
            metric(
                &format!("{name}_max"),
                "gauge",
                "Longest time an operation took, ms.",
                l.max_ms,
            );
        }
        metric(
            "records_written_total",
            "counter",
            "Records the coordinator appended to its topic.",
            load(&self.records_written),
        );
        metric(
            "partition_load_time_max",
            "gauge",
            "Longest partition load, ms.",
            load(&self.load_ms_max),
        );
        let loads = load(&self.loads);
        let avg = load(&self.load_ms_total).checked_div(loads).unwrap_or(0);
        metric(
            "partition_load_time_avg",
            "gauge",
            "Mean partition load, ms.",
            avg,
        );
        metric(
            "partitions_loaded",
            "gauge",
            "Partitions of the coordinator's topic served here.",
            s.loaded as u64,
        );
        metric(
            "partitions_loading",
            "gauge",
            "Partitions of the coordinator's topic loading here.",
            s.loading as u64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The share coordinator's metrics under Kafka's names: the shards' `write-total`, the
    /// service's `write-latency-avg`/`-max`, and `last-pruned-offset` by topic and partition,
    /// gone once the partition is served elsewhere.
    #[test]
    fn share_coordinator_metrics_are_exported_with_kafkas_names() {
        let m = RuntimeMetrics::new("share-coordinator-metrics");
        m.record_counters(vec![("write_total", 3)]);
        m.record_counters(vec![("write_total", 2)]);
        m.record_latency("write_latency", Duration::from_millis(10));
        m.record_latency("write_latency", Duration::from_millis(30));
        m.set_partition_value("last_pruned_offset", "__share_group_state", 7, 42);
        assert_eq!(m.counter("write_total"), 5);
        assert_eq!(m.latency("write_latency"), Some((20, 30)));
        assert_eq!(m.partition_value("last_pruned_offset", 7), Some(42));
        let mut out = String::new();
        m.write_prometheus(1, &mut out);
        for line in [
            "kafka_server_share_coordinator_metrics_write_total{node=\"1\"} 5",
            "kafka_server_share_coordinator_metrics_write_latency_avg{node=\"1\"} 20",
            "kafka_server_share_coordinator_metrics_write_latency_max{node=\"1\"} 30",
            "kafka_server_share_coordinator_metrics_last_pruned_offset{node=\"1\",topic=\"__share_group_state\",partition=\"7\"} 42",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} missing from\n{out}");
        }
        m.forget_partition(7);
        assert_eq!(m.partition_value("last_pruned_offset", 7), None);
        let mut out = String::new();
        m.write_prometheus(1, &mut out);
        assert!(!out.contains("last_pruned_offset"), "{out}");
    }
}
