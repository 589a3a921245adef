//! The ReplicaManager's counters and its Prometheus output (Kafka's ReplicaManager and
//! BrokerTopicMetrics names).

use std::sync::atomic::{AtomicU64, Ordering};

use super::ReplicaManager;

/// Counters behind Kafka's ReplicaManager and BrokerTopicMetrics meters (exported as
/// Prometheus counters; rates are the scraper's to compute).
#[derive(Debug, Default)]
pub struct ReplicaMetrics {
    pub isr_shrinks: AtomicU64,
    pub isr_expands: AtomicU64,
    pub messages_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    pub failed_produce_requests: AtomicU64,
    pub failed_fetch_requests: AtomicU64,
}

impl ReplicaManager {
    /// Prometheus text for the ReplicaManager's gauges (partition and leader counts,
    /// under-replicated and under-min-ISR partitions) and the counters above, with Kafka's
    /// metric names.
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        let (mut partitions, mut leaders, mut under_replicated, mut under_min_isr) = (0, 0, 0, 0);
        for hosted in self.all_partitions() {
            let p = hosted.lock();
            partitions += 1;
            if p.is_leader() {
                leaders += 1;
                if p.isr().len() < p.replicas().len() {
                    under_replicated += 1;
                }
                if p.isr().len() < p.config().min_insync_replicas {
                    under_min_isr += 1;
                }
            }
        }
        let mut metric = |group: &str, name: &str, kind: &str, help: &str, value: u64| {
            kraftd_raft::driver::metrics::write_prometheus_metric(
                out, group, name, kind, help, node_id, value,
            );
        };
        let rm = "kafka_server_replicamanager";
        metric(
            rm,
            "partitioncount",
            "gauge",
            "Partitions hosted on this broker.",
            partitions,
        );
        metric(
            rm,
            "leadercount",
            "gauge",
            "Partitions this broker leads.",
            leaders,
        );
        metric(
            rm,
            "underreplicatedpartitions",
            "gauge",
            "Led partitions whose ISR is smaller than the replica set.",
            under_replicated,
        );
        metric(
            rm,
            "underminisrpartitioncount",
            "gauge",
            "Led partitions whose ISR is below min.insync.replicas.",
            under_min_isr,
        );
        let m = &self.metrics;
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        metric(
            rm,
            "isrshrinks_total",
            "counter",
            "ISR shrinks proposed to the controller.",
            load(&m.isr_shrinks),
        );
        metric(
            rm,
            "isrexpands_total",
            "counter",
            "ISR expansions proposed to the controller.",
            load(&m.isr_expands),
        );
        let bt = "kafka_server_brokertopicmetrics";
        metric(
            bt,
            "messagesin_total",
            "counter",
            "Records appended by produce requests.",
            load(&m.messages_in),
        );
        metric(
            bt,
            "bytesin_total",
            "counter",
            "Bytes appended by produce requests.",
            load(&m.bytes_in),
        );
        metric(
            bt,
            "bytesout_total",
            "counter",
            "Record bytes returned to consumers' fetches (followers' are ReplicationBytesOut).",
            load(&m.bytes_out),
        );
        metric(
            bt,
            "failedproducerequests_total",
            "counter",
            "Partitions of produce requests refused.",
            load(&m.failed_produce_requests),
        );
        metric(
            bt,
            "failedfetchrequests_total",
            "counter",
            "Fetch requests with a partition error.",
            load(&m.failed_fetch_requests),
        );
        let f = self.fetchers.stats();
        let rf = "kraftd_replica_fetcher";
        for (name, help, value) in [
            ("full_requests_total", "Follower fetch requests sent in full (no session, or after a reset).", &f.full_requests),
            ("incremental_requests_total", "Follower fetch requests sent in an incremental fetch session.", &f.incremental_requests),
            ("partitions_sent_total", "Partitions named in follower fetch requests.", &f.partitions_sent),
            ("partitions_omitted_total", "Partitions left to the leader's fetch session (unchanged).", &f.partitions_omitted),
            ("session_resets_total", "Follower fetch sessions ended by an error, a failed request or an inconsistent response.", &f.session_resets),
        ] {
            metric(rf, name, "counter", help, load(value));
        }
        let now_ms = kraftd_log::clock::unix_ms().max(0) as u64;
        self.replication_quotas
            .write_prometheus(node_id, now_ms, out);
    }
}
