//! The controller's metrics with Kafka's JMX names (`kafka.controller:type=KafkaController`,
//! `ControllerEventManager`, `ControllerStats`), exported as Prometheus text: what an
//! operator's Kafka dashboard charts and what `kraftd doctor` reads.
//!
//! Two sources, as in Kafka:
//! - [`MetadataCounts`] (Kafka's `ControllerMetadataMetrics` gauges: topics, partitions,
//!   offline partitions, preferred-replica imbalance, fenced and active brokers) kept by
//!   [`ControllerMetadataMetricsPublisher`], a [`MetadataPublisher`] fed every committed
//!   delta on every controller. It applies each delta's changes only (the brokers, topics and
//!   partitions the delta lists, Kafka's `ControllerMetricsChanges`), so neither a commit nor
//!   a scrape walks a million partitions; a full reload (a snapshot) recounts from the image,
//!   as Kafka's `publishSnapshot`. The delta also counts elections from the ELR and unclean
//!   ones (`ControllerStats`), exported as counters.
//! - The event loop (`node/event_loop.rs`, the edge of the deterministic QuorumController)
//!   sets `ActiveControllerCount`, the last committed and applied offsets and the append time
//!   of the last applied record (Kafka's `QuorumControllerMetrics`/`OffsetControlManager`:
//!   the active controller applies a record when it schedules its append, a standby when it is
//!   committed), and times each request's wait in the queue and each event's processing
//!   (`ControllerEventManager`'s `EventQueueTimeMs`/`EventQueueProcessingTimeMs`, windowed
//!   percentiles). `LastAppliedRecordLagMs` is computed at read time (now minus that append
//!   time), so a stuck controller shows a lag growing with the wall clock.

#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex, PoisonError};

use kraftd_raft::driver::metrics::write_prometheus_metric;
use kraftd_raft::driver::percentiles::{Percentiles, SummarySnapshot};

use crate::image::delta::MetadataDelta;
use crate::image::{BrokerRegistration, MetadataImage, PartitionRegistration};
use crate::publisher::{is_full_reload, MetadataPublisher};

/// Kafka's `ControllerMetadataMetrics` gauges, counted from the committed image.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetadataCounts {
    pub global_topics: i64,
    pub global_partitions: i64,
    /// Partitions without a leader (`OfflinePartitionsCount`).
    pub offline_partitions: i64,
    /// Partitions whose leader is not their first replica (`PreferredReplicaImbalanceCount`).
    pub preferred_replica_imbalance: i64,
    pub fenced_brokers: i64,
    /// Registered brokers that are not fenced (Kafka's `ActiveBrokerCount`).
    pub active_brokers: i64,
}

/// Kafka's `PartitionRegistration.hasPreferredLeader`: led by its first replica.
fn has_preferred_leader(p: &PartitionRegistration) -> bool {
    p.has_leader() && p.replicas.first() == Some(&p.leader)
}

/// +1, -1 or 0 as a flag turns on, off or stays (Kafka's `ControllerMetricsChanges.delta`).
fn flip(was: bool, is: bool) -> i64 {
    i64::from(is) - i64::from(was)
}

impl MetadataCounts {
    /// Counts everything in `image` (Kafka's `publishSnapshot`): O(partitions), for a full
    /// reload and for tests.
    pub fn recount(image: &MetadataImage) -> Self {
        let mut counts = MetadataCounts::default();
        for broker in image.cluster.brokers() {
            counts.broker_change(None, Some(broker));
        }
        for topic in image.topics.iter() {
            counts.global_topics += 1;
            for partition in topic.partitions.values() {
                counts.partition_change(None, Some(partition));
            }
        }
        counts
    }

    /// Applies what `delta` changed; `image` is the image the delta resulted in. A delta from
    /// the empty image (a snapshot load) is a full recount.
    pub fn apply(&mut self, delta: &MetadataDelta, image: &MetadataImage) {
        if is_full_reload(delta) {
            *self = MetadataCounts::recount(image);
            return;
        }
        let base = delta.image();
        let changes = delta.changes();
        for id in &changes.changed_brokers {
            self.broker_change(
                base.cluster.broker(*id).map(|b| &**b),
                image.cluster.broker(*id).map(|b| &**b),
            );
        }
        for id in &changes.deleted_topics {
            if let Some(topic) = base.topics.get(id) {
                self.global_topics -= 1;
                for partition in topic.partitions.values() {
                    self.partition_change(Some(partition), None);
                }
            }
        }
        for id in &changes.changed_topics {
            let Some(next) = image.topics.get(id) else {
                continue;
            };
            // A topic deleted and created again under the same id counts as new.
            let previous = (!changes.deleted_topics.contains(id))
                .then(|| base.topics.get(id))
                .flatten();
            match previous {
                None => {
                    self.global_topics += 1;
                    for partition in next.partitions.values() {
                        self.partition_change(None, Some(partition));
                    }
                }
                Some(previous) => {
                    let changed = changes.changed_partitions.get(id).into_iter().flatten();
                    for pid in changed {
                        self.partition_change(
                            previous.partition(*pid).map(|p| &**p),
                            next.partition(*pid).map(|p| &**p),
                        );
                    }
                }
            }
        }
    }

    fn broker_change(
        &mut self,
        previous: Option<&BrokerRegistration>,
        next: Option<&BrokerRegistration>,
    ) {
        let fenced = |b: Option<&BrokerRegistration>| b.is_some_and(|b| b.fenced);
        let active = |b: Option<&BrokerRegistration>| b.is_some_and(|b| !b.fenced);
        self.fenced_brokers += flip(fenced(previous), fenced(next));
        self.active_brokers += flip(active(previous), active(next));
    }

    fn partition_change(
        &mut self,
        previous: Option<&PartitionRegistration>,
        next: Option<&PartitionRegistration>,
    ) {
        let offline = |p: Option<&PartitionRegistration>| p.is_some_and(|p| !p.has_leader());
        let imbalanced =
            |p: Option<&PartitionRegistration>| p.is_some_and(|p| !has_preferred_leader(p));
        self.global_partitions += flip(previous.is_some(), next.is_some());
        self.offline_partitions += flip(offline(previous), offline(next));
        self.preferred_replica_imbalance += flip(imbalanced(previous), imbalanced(next));
    }
}

/// A shareable handle on the controller's metrics: the event loop and the publisher write,
/// the `/metrics` endpoint reads. Every clone sees the same values.
#[derive(Debug, Clone)]
pub struct ControllerMetrics {
    inner: Arc<Mutex<State>>,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        ControllerMetrics::new()
    }
}

#[derive(Debug, Default)]
struct State {
    counts: MetadataCounts,
    active: bool,
    last_committed_offset: i64,
    last_applied_offset: i64,
    /// Unix ms; 0 before any record, as Kafka's initial value.
    last_applied_timestamp: i64,
    metadata_errors: u64,
    elr_elections: u64,
    unclean_elections: u64,
    event_queue_time: Percentiles,
    event_processing_time: Percentiles,
}

/// Every value at one instant, for the exporter, `kraftd doctor`'s tests and unit tests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ControllerMetricValues {
    pub active_controller_count: u8,
    pub counts: MetadataCounts,
    pub last_committed_record_offset: i64,
    pub last_applied_record_offset: i64,
    pub last_applied_record_timestamp: i64,
    pub last_applied_record_lag_ms: i64,
    pub metadata_error_count: u64,
    pub elections_from_elr: u64,
    pub unclean_leader_elections: u64,
    pub event_queue_time_ms: SummarySnapshot,
    pub event_queue_processing_time_ms: SummarySnapshot,
}

impl ControllerMetrics {
    pub fn new() -> Self {
        ControllerMetrics {
            inner: Arc::new(Mutex::new(State {
                last_committed_offset: -1,
                last_applied_offset: -1,
                ..State::default()
            })),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Every update leaves whole values behind, so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The event loop's view after each event: whether this node is the active controller,
    /// the last committed offset, and the last applied offset with its append time, which is
    /// taken only when the applied offset moved (a record applied when written keeps the
    /// time of its write once committed).
    pub fn set_offsets(&self, active: bool, committed: i64, applied: i64, applied_ms: i64) {
        let mut s = self.state();
        s.active = active;
        s.last_committed_offset = committed;
        if s.last_applied_offset != applied {
            s.last_applied_offset = applied;
            s.last_applied_timestamp = applied_ms;
        }
    }

    /// A metadata error: a committed record or snapshot this controller could not apply.
    pub fn record_metadata_error(&self) {
        self.state().metadata_errors += 1;
    }

    /// A request waited `ms` in the queue before the event loop took it.
    pub fn record_event_queue_time(&self, ms: f64, now_ms: u64) {
        self.state().event_queue_time.record(ms, now_ms);
    }

    /// The event loop spent `ms` on one event (the input, the operations it ran, the replies).
    pub fn record_event_processing_time(&self, ms: f64, now_ms: u64) {
        self.state().event_processing_time.record(ms, now_ms);
    }

    /// The publisher's work: new counts and the delta's elections.
    fn publish(&self, counts: MetadataCounts, elr_elections: u64, unclean_elections: u64) {
        let mut s = self.state();
        s.counts = counts;
        s.elr_elections += elr_elections;
        s.unclean_elections += unclean_elections;
    }

    /// Every value as of `now_ms` (unix ms): the lag is computed here.
    pub fn values(&self, now_ms: i64) -> ControllerMetricValues {
        let mut s = self.state();
        let now = now_ms.max(0) as u64;
        ControllerMetricValues {
            active_controller_count: u8::from(s.active),
            counts: s.counts,
            last_committed_record_offset: s.last_committed_offset,
            last_applied_record_offset: s.last_applied_offset,
            last_applied_record_timestamp: s.last_applied_timestamp,
            last_applied_record_lag_ms: now_ms.saturating_sub(s.last_applied_timestamp),
            metadata_error_count: s.metadata_errors,
            elections_from_elr: s.elr_elections,
            unclean_leader_elections: s.unclean_elections,
            event_queue_time_ms: s.event_queue_time.snapshot(now),
            event_queue_processing_time_ms: s.event_processing_time.snapshot(now),
        }
    }

    /// Prometheus text of every controller metric as of `now_ms` (unix ms).
    pub fn write_prometheus(&self, node_id: i32, now_ms: i64, out: &mut String) {
        self.values(now_ms).write_prometheus(node_id, out);
    }
}

/// `kafka.controller:type=KafkaController,name=X` is `kafka_controller_KafkaController_X`.
const KAFKA_CONTROLLER: &str = "kafka_controller_KafkaController";
const EVENT_MANAGER: &str = "kafka_controller_ControllerEventManager";
const CONTROLLER_STATS: &str = "kafka_controller_ControllerStats";

impl ControllerMetricValues {
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        let c = &self.counts;
        let gauges: [(&str, &str, i64); 12] = [
            (
                "ActiveControllerCount",
                "1 on the active controller, 0 elsewhere.",
                i64::from(self.active_controller_count),
            ),
            (
                "OfflinePartitionsCount",
                "Partitions without a leader.",
                c.offline_partitions,
            ),
            (
                "PreferredReplicaImbalanceCount",
                "Partitions not led by their first replica.",
                c.preferred_replica_imbalance,
            ),
            (
                "GlobalTopicCount",
                "Topics in the committed metadata.",
                c.global_topics,
            ),
            (
                "GlobalPartitionCount",
                "Partitions in the committed metadata.",
                c.global_partitions,
            ),
            (
                "FencedBrokerCount",
                "Registered brokers that are fenced.",
                c.fenced_brokers,
            ),
            (
                "ActiveBrokerCount",
                "Registered brokers that are not fenced.",
                c.active_brokers,
            ),
            (
                "LastCommittedRecordOffset",
                "Offset of the last committed metadata record.",
                self.last_committed_record_offset,
            ),
            (
                "LastAppliedRecordOffset",
                "Offset of the last metadata record applied (written, on the active controller).",
                self.last_applied_record_offset,
            ),
            (
                "LastAppliedRecordTimestamp",
                "Append time (unix ms) of the last applied metadata record.",
                self.last_applied_record_timestamp,
            ),
            (
                "LastAppliedRecordLagMs",
                "Now minus the append time of the last applied metadata record.",
                self.last_applied_record_lag_ms,
            ),
            (
                "MetadataErrorCount",
                "Committed metadata this controller could not apply.",
                self.metadata_error_count as i64,
            ),
        ];
        for (name, help, value) in gauges {
            write_prometheus_metric(out, KAFKA_CONTROLLER, name, "gauge", help, node_id, value);
        }
        self.event_queue_time_ms.write_prometheus(
            out,
            &format!("{EVENT_MANAGER}_EventQueueTimeMs"),
            "Time (ms) a request waited in the controller's queue.",
            node_id,
        );
        self.event_queue_processing_time_ms.write_prometheus(
            out,
            &format!("{EVENT_MANAGER}_EventQueueProcessingTimeMs"),
            "Time (ms) the controller's event loop spent on one event.",
            node_id,
        );
        write_prometheus_metric(
            out,
            CONTROLLER_STATS,
            "ElectionFromEligibleLeaderReplicasPerSec_total",
            "counter",
            "Leaders elected from the eligible leader replicas (ELR).",
            node_id,
            self.elections_from_elr,
        );
        write_prometheus_metric(
            out,
            CONTROLLER_STATS,
            "UncleanLeaderElectionsPerSec_total",
            "counter",
            "Leaders elected uncleanly (outside the ISR and ELR).",
            node_id,
            self.unclean_leader_elections,
        );
    }
}

/// Kafka's `ControllerMetadataMetricsPublisher`: keeps [`MetadataCounts`] from each
/// committed delta and hands them to the [`ControllerMetrics`] handle.
#[derive(Debug)]
pub struct ControllerMetadataMetricsPublisher {
    counts: MetadataCounts,
    metrics: ControllerMetrics,
}

impl ControllerMetadataMetricsPublisher {
    pub fn new(metrics: ControllerMetrics) -> Self {
        ControllerMetadataMetricsPublisher {
            counts: MetadataCounts::default(),
            metrics,
        }
    }
}

impl MetadataPublisher for ControllerMetadataMetricsPublisher {
    fn name(&self) -> &str {
        "ControllerMetadataMetricsPublisher"
    }

    fn on_metadata_update(&mut self, delta: &MetadataDelta, image: &MetadataImage) {
        self.counts.apply(delta, image);
        let changes = delta.changes();
        self.metrics.publish(
            self.counts,
            changes.elr_leader_elections,
            changes.unclean_leader_elections,
        );
    }
}
