//! Share groups' broker metrics under Kafka's names (docs/metrics.md, "Share groups"):
//!
//! - `kafka.server:type=ShareGroupMetrics` (Kafka's `ShareGroupMetrics`):
//!   `RecordAcknowledgementsPerSec` by `ackType` (Accept, Release, Reject, Renew: records
//!   acknowledged, counted once the acknowledgement is persisted, as Kafka counts them),
//!   `PartitionLoadTimeMs` (a share partition's load, ReadShareGroupState included), and per
//!   `group` the dead-letter queue's `DeadLetterQueueRecordCount` (records written),
//!   `DeadLetterQueueTotalProduceRequestsPerSec` (writes admitted into a Produce) and
//!   `DeadLetterQueueFailedProduceRequestsPerSec`;
//! - `kafka.server:type=SharePartitionMetrics` per `group`, `topic`, `partition` of the share
//!   partitions this broker holds: `InFlightMessageCount` (SPEO − SPSO + 1, or 0) and
//!   `AcquisitionLockTimeoutPerSec` (records whose acquisition lock expired). Kafka's
//!   batch-shaped ones (`InFlightBatchCount`, `InFlightBatchMessageCount`, `FetchLockTimeMs`,
//!   `FetchLockRatio`) have no counterpart: kraftd keeps one state per record, not Kafka's
//!   cache of fetched batches, and takes no per-partition fetch lock;
//! - `kafka.server:type=BrokerTopicMetrics`, all topics and per `topic`:
//!   `TotalShareFetchRequestsPerSec`, `FailedShareFetchRequestsPerSec`,
//!   `TotalShareAcknowledgementRequestsPerSec`, `FailedShareAcknowledgementRequestsPerSec`
//!   (one mark per topic of a request, as Kafka's `SharePartitionManager` marks them).
//!
//! Meters are Prometheus counters (`_total`); the histogram a summary.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use kraftd_raft::driver::percentiles::{write_summary_header, Percentiles};

use super::share_partition::AcknowledgeType;

const GROUP_METRICS: &str = "kafka_server_ShareGroupMetrics";
const PARTITION_METRICS: &str = "kafka_server_SharePartitionMetrics";
const TOPIC_METRICS: &str = "kafka_server_BrokerTopicMetrics";

/// The acknowledgement types Kafka meters, with their `ackType` tag (Kafka's
/// `AcknowledgeType` capitalized); a gap is not one.
const ACK_TYPES: [(AcknowledgeType, &str); 4] = [
    (AcknowledgeType::Accept, "Accept"),
    (AcknowledgeType::Release, "Release"),
    (AcknowledgeType::Reject, "Reject"),
    (AcknowledgeType::Renew, "Renew"),
];

/// One group's dead-letter queue counts.
#[derive(Debug, Default, Clone, Copy)]
struct DlqCounts {
    records: u64,
    produces: u64,
    failed: u64,
}

/// One topic's share request counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ShareRequestCounts {
    pub fetch: u64,
    pub failed_fetch: u64,
    pub acknowledge: u64,
    pub failed_acknowledge: u64,
}

/// Which share request a topic took part in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareRequest {
    Fetch,
    Acknowledge,
}

/// A share partition's values at render time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartitionValues {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub in_flight_messages: u64,
    pub acquisition_lock_timeouts: u64,
}

/// The broker's share-group counters (see the module docs).
#[derive(Debug, Default)]
pub struct ShareGroupMetrics {
    acknowledgements: [AtomicU64; 4],
    partition_load_ms: Mutex<Percentiles>,
    dlq: Mutex<BTreeMap<String, DlqCounts>>,
    requests: Mutex<BTreeMap<String, ShareRequestCounts>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A Prometheus label value: `\`, `"` and newlines escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl ShareGroupMetrics {
    /// Kafka's `recordAcknowledgement`: `count` records acknowledged as `ack_type`.
    pub fn record_acknowledgement(&self, ack_type: AcknowledgeType, count: u64) {
        if let Some(i) = ACK_TYPES.iter().position(|(t, _)| *t == ack_type) {
            self.acknowledgements[i].fetch_add(count, Ordering::Relaxed);
        }
    }

    /// Kafka's `partitionLoadTime`: a share partition took `ms` to load.
    pub fn record_partition_load(&self, ms: u64, now_ms: u64) {
        lock(&self.partition_load_ms).record(ms as f64, now_ms);
    }

    /// Kafka's `recordDLQRecordWrite`: `count` records written to `group`'s DLQ.
    pub fn record_dlq_records(&self, group: &str, count: u64) {
        lock(&self.dlq).entry(group.to_owned()).or_default().records += count;
    }

    /// Kafka's `recordDLQProduce`: a DLQ write of `group` admitted into a Produce.
    pub fn record_dlq_produce(&self, group: &str) {
        lock(&self.dlq)
            .entry(group.to_owned())
            .or_default()
            .produces += 1;
    }

    /// Kafka's `recordDLQProduceFailed`.
    pub fn record_dlq_produce_failed(&self, group: &str) {
        lock(&self.dlq).entry(group.to_owned()).or_default().failed += 1;
    }

    /// One share request's topics, and those where it failed (Kafka marks each topic once
    /// per request, in the totals and, where a partition failed, in the failed counts).
    pub fn record_request<'a>(
        &self,
        request: ShareRequest,
        topics: impl IntoIterator<Item = &'a str>,
        failed: impl IntoIterator<Item = &'a str>,
    ) {
        let topics: BTreeSet<&str> = topics.into_iter().collect();
        let failed: BTreeSet<&str> = failed.into_iter().collect();
        let mut requests = lock(&self.requests);
        for topic in topics.union(&failed) {
            let c = requests.entry((*topic).to_owned()).or_default();
            let (total, failures) = match request {
                ShareRequest::Fetch => (&mut c.fetch, &mut c.failed_fetch),
                ShareRequest::Acknowledge => (&mut c.acknowledge, &mut c.failed_acknowledge),
            };
            if topics.contains(topic) {
                *total += 1;
            }
            if failed.contains(topic) {
                *failures += 1;
            }
        }
    }

    /// The counts of `topic` (for tests and the console).
    pub fn requests_of(&self, topic: &str) -> ShareRequestCounts {
        lock(&self.requests).get(topic).copied().unwrap_or_default()
    }

    /// Prometheus text of everything above; `partitions` are the share partitions' values.
    pub fn write_prometheus(
        &self,
        node_id: i32,
        now_ms: u64,
        partitions: &[SharePartitionValues],
        out: &mut String,
    ) {
        let node = format!("node=\"{node_id}\"");
        let header = |out: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
        };

        let name = format!("{GROUP_METRICS}_RecordAcknowledgementsPerSec_total");
        header(
            out,
            &name,
            "counter",
            "Share-group records acknowledged, by type.",
        );
        for (i, (_, tag)) in ACK_TYPES.iter().enumerate() {
            let v = self.acknowledgements[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}{{{node},ackType=\"{tag}\"}} {v}");
        }

        let name = format!("{GROUP_METRICS}_PartitionLoadTimeMs");
        write_summary_header(out, &name, "Time to load a share partition's state, ms.");
        lock(&self.partition_load_ms)
            .snapshot(now_ms)
            .write_series(out, &name, &node);

        let dlq = lock(&self.dlq).clone();
        for (metric, help, value) in [
            (
                "DeadLetterQueueRecordCount_total",
                "Records written to the group's dead-letter queue topic.",
                (|c: &DlqCounts| c.records) as fn(&DlqCounts) -> u64,
            ),
            (
                "DeadLetterQueueTotalProduceRequestsPerSec_total",
                "Dead-letter queue writes of the group sent in a Produce.",
                |c| c.produces,
            ),
            (
                "DeadLetterQueueFailedProduceRequestsPerSec_total",
                "Dead-letter queue writes of the group that failed.",
                |c| c.failed,
            ),
        ] {
            let name = format!("{GROUP_METRICS}_{metric}");
            header(out, &name, "counter", help);
            for (group, c) in &dlq {
                let _ = writeln!(
                    out,
                    "{name}{{{node},group=\"{}\"}} {}",
                    label(group),
                    value(c)
                );
            }
        }

        for (metric, kind, help, value) in [
            (
                "InFlightMessageCount",
                "gauge",
                "Records between the share partition's start and end offsets.",
                (|p: &SharePartitionValues| p.in_flight_messages)
                    as fn(&SharePartitionValues) -> u64,
            ),
            (
                "AcquisitionLockTimeoutPerSec_total",
                "counter",
                "Records whose acquisition lock expired.",
                |p| p.acquisition_lock_timeouts,
            ),
        ] {
            let name = format!("{PARTITION_METRICS}_{metric}");
            header(out, &name, kind, help);
            for p in partitions {
                let _ = writeln!(
                    out,
                    "{name}{{{node},group=\"{}\",topic=\"{}\",partition=\"{}\"}} {}",
                    label(&p.group),
                    label(&p.topic),
                    p.partition,
                    value(p)
                );
            }
        }

        let requests = lock(&self.requests).clone();
        for (metric, help, value) in [
            (
                "TotalShareFetchRequestsPerSec_total",
                "Share fetch requests, once per topic they name.",
                (|c: &ShareRequestCounts| c.fetch) as fn(&ShareRequestCounts) -> u64,
            ),
            (
                "FailedShareFetchRequestsPerSec_total",
                "Share fetch requests with a failed partition, once per topic.",
                |c| c.failed_fetch,
            ),
            (
                "TotalShareAcknowledgementRequestsPerSec_total",
                "Share acknowledgements (ShareAcknowledge, or ShareFetch carrying them), once per topic.",
                |c| c.acknowledge,
            ),
            (
                "FailedShareAcknowledgementRequestsPerSec_total",
                "Share acknowledgements with a failed partition, once per topic.",
                |c| c.failed_acknowledge,
            ),
        ] {
            let name = format!("{TOPIC_METRICS}_{metric}");
            header(out, &name, "counter", help);
            let all: u64 = requests.values().map(value).sum();
            let _ = writeln!(out, "{name}{{{node}}} {all}");
            for (topic, c) in &requests {
                let _ = writeln!(out, "{name}{{{node},topic=\"{}\"}} {}", label(topic), value(c));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_metrics_are_exported_under_kafkas_names() {
        let m = ShareGroupMetrics::default();
        m.record_acknowledgement(AcknowledgeType::Accept, 5);
        m.record_acknowledgement(AcknowledgeType::Reject, 2);
        m.record_acknowledgement(AcknowledgeType::Gap, 9);
        m.record_partition_load(12, 1_000);
        m.record_dlq_records("g\"1", 3);
        m.record_dlq_produce("g\"1");
        m.record_dlq_produce_failed("g2");
        m.record_request(ShareRequest::Fetch, ["a", "b", "a"], ["b"]);
        m.record_request(ShareRequest::Fetch, ["a"], []);
        m.record_request(ShareRequest::Acknowledge, ["a"], ["a"]);
        let partitions = [SharePartitionValues {
            group: "g2".into(),
            topic: "a".into(),
            partition: 3,
            in_flight_messages: 7,
            acquisition_lock_timeouts: 4,
        }];
        let mut out = String::new();
        m.write_prometheus(1, 1_000, &partitions, &mut out);
        for line in [
            "kafka_server_ShareGroupMetrics_RecordAcknowledgementsPerSec_total{node=\"1\",ackType=\"Accept\"} 5",
            "kafka_server_ShareGroupMetrics_RecordAcknowledgementsPerSec_total{node=\"1\",ackType=\"Release\"} 0",
            "kafka_server_ShareGroupMetrics_RecordAcknowledgementsPerSec_total{node=\"1\",ackType=\"Reject\"} 2",
            "kafka_server_ShareGroupMetrics_PartitionLoadTimeMs_count{node=\"1\"} 1",
            "kafka_server_ShareGroupMetrics_DeadLetterQueueRecordCount_total{node=\"1\",group=\"g\\\"1\"} 3",
            "kafka_server_ShareGroupMetrics_DeadLetterQueueTotalProduceRequestsPerSec_total{node=\"1\",group=\"g\\\"1\"} 1",
            "kafka_server_ShareGroupMetrics_DeadLetterQueueFailedProduceRequestsPerSec_total{node=\"1\",group=\"g2\"} 1",
            "kafka_server_SharePartitionMetrics_InFlightMessageCount{node=\"1\",group=\"g2\",topic=\"a\",partition=\"3\"} 7",
            "kafka_server_SharePartitionMetrics_AcquisitionLockTimeoutPerSec_total{node=\"1\",group=\"g2\",topic=\"a\",partition=\"3\"} 4",
            "kafka_server_BrokerTopicMetrics_TotalShareFetchRequestsPerSec_total{node=\"1\"} 3",
            "kafka_server_BrokerTopicMetrics_TotalShareFetchRequestsPerSec_total{node=\"1\",topic=\"a\"} 2",
            "kafka_server_BrokerTopicMetrics_FailedShareFetchRequestsPerSec_total{node=\"1\",topic=\"b\"} 1",
            "kafka_server_BrokerTopicMetrics_FailedShareAcknowledgementRequestsPerSec_total{node=\"1\",topic=\"a\"} 1",
        ] {
            assert!(out.contains(line), "missing {line} in\n{out}");
        }
        assert!(!out.contains("ackType=\"Gap\""), "gaps are not metered");
        assert_eq!(
            m.requests_of("a"),
            ShareRequestCounts {
                fetch: 2,
                failed_fetch: 0,
                acknowledge: 1,
                failed_acknowledge: 1
            }
        );
    }
}
