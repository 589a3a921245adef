//! broker-metadata-metrics, Kafka's `BrokerServerMetrics` names for how far the broker's
//! metadata has come: the signal that found seed 003's stuck observer (its
//! last-applied-record-lag-ms grew with the wall clock while heartbeats still flowed).
//!
//! The loader writes them on its own task; the `/metrics` endpoint and the lifecycle manager
//! read them from others, so they live behind a shared handle that readers load without
//! waiting for the loader, and the applied offset and its timestamp change together (as
//! Kafka keeps them in one `AtomicReference<MetadataProvenance>`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

/// Kafka's metric group of these metrics (`kafka.server:type=broker-metadata-metrics`).
pub const BROKER_METADATA_METRICS_GROUP: &str = "broker-metadata-metrics";
/// The offset of the last record the broker published.
pub const LAST_APPLIED_RECORD_OFFSET: &str = "last-applied-record-offset";
/// The append time of the batch holding that record.
pub const LAST_APPLIED_RECORD_TIMESTAMP: &str = "last-applied-record-timestamp";
/// Now minus that append time.
pub const LAST_APPLIED_RECORD_LAG_MS: &str = "last-applied-record-lag-ms";
/// Records, batches or snapshots the loader could not decode or replay.
pub const METADATA_LOAD_ERROR_COUNT: &str = "metadata-load-error-count";
/// Publishers that failed on a new image.
pub const METADATA_APPLY_ERROR_COUNT: &str = "metadata-apply-error-count";

/// Where the published metadata stands, Kafka's `MetadataProvenance` (offset, epoch and
/// append time of the last record in the last published image).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppliedProvenance {
    /// -1 before anything was published.
    pub offset: i64,
    /// The Raft epoch of the batch holding that record; -1 before anything was published.
    pub epoch: i32,
    /// The batch's append time (its max timestamp, as Kafka's `Batch.appendTimestamp`), or a
    /// snapshot's `lastContainedLogTimestamp`; -1 before anything was published.
    pub timestamp: i64,
}

impl AppliedProvenance {
    /// Nothing published yet: Kafka's `MetadataProvenance.EMPTY`.
    pub const EMPTY: AppliedProvenance = AppliedProvenance {
        offset: -1,
        epoch: -1,
        timestamp: -1,
    };
}

impl Default for AppliedProvenance {
    fn default() -> Self {
        AppliedProvenance::EMPTY
    }
}

/// The shared cell behind the metrics; clone the handle to read from another task.
#[derive(Debug, Clone, Default)]
pub struct BrokerMetadataMetrics {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    applied: RwLock<AppliedProvenance>,
    load_errors: AtomicU64,
    apply_errors: AtomicU64,
}

/// Every broker-metadata-metrics value at one instant, for an exporter or a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerMetadataMetricValues {
    pub last_applied_record_offset: i64,
    pub last_applied_record_timestamp: i64,
    pub last_applied_record_lag_ms: i64,
    pub metadata_load_error_count: u64,
    pub metadata_apply_error_count: u64,
}

impl BrokerMetadataMetrics {
    pub fn new() -> Self {
        BrokerMetadataMetrics::default()
    }

    /// The provenance of the last published image. A poisoned lock still holds a whole
    /// value (the only write is one assignment), so poison is ignored.
    pub fn applied(&self) -> AppliedProvenance {
        *self
            .inner
            .applied
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub fn last_applied_record_offset(&self) -> i64 {
        self.applied().offset
    }

    pub fn last_applied_record_timestamp(&self) -> i64 {
        self.applied().timestamp
    }

    /// `now_ms` minus the append time of the last applied record, exactly as Kafka (and seed
    /// 003) define it: it is computed when read, so a broker that stops applying shows a lag
    /// growing with the wall clock even though nothing calls the loader. Before anything is
    /// published the timestamp is -1 and the lag is about `now_ms`, as in Kafka.
    pub fn last_applied_record_lag_ms(&self, now_ms: i64) -> i64 {
        now_ms.saturating_sub(self.last_applied_record_timestamp())
    }

    pub fn metadata_load_error_count(&self) -> u64 {
        self.inner.load_errors.load(Ordering::Relaxed)
    }

    pub fn metadata_apply_error_count(&self) -> u64 {
        self.inner.apply_errors.load(Ordering::Relaxed)
    }

    /// All values, the applied offset and timestamp from the same publication.
    pub fn values(&self, now_ms: i64) -> BrokerMetadataMetricValues {
        let applied = self.applied();
        BrokerMetadataMetricValues {
            last_applied_record_offset: applied.offset,
            last_applied_record_timestamp: applied.timestamp,
            last_applied_record_lag_ms: now_ms.saturating_sub(applied.timestamp),
            metadata_load_error_count: self.metadata_load_error_count(),
            metadata_apply_error_count: self.metadata_apply_error_count(),
        }
    }

    pub(crate) fn set_applied(&self, applied: AppliedProvenance) {
        *self
            .inner
            .applied
            .write()
            .unwrap_or_else(PoisonError::into_inner) = applied;
    }

    pub(crate) fn record_load_error(&self) {
        self.inner.load_errors.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_apply_error(&self) {
        self.inner.apply_errors.fetch_add(1, Ordering::Relaxed);
    }
}

impl BrokerMetadataMetricValues {
    /// Appends the values in Prometheus' text format, named after Kafka's
    /// `broker-metadata-metrics` group (`kafka_broker_metadata_metrics_<name>`).
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        let mut metric = |name: &str, kind: &str, help: &str, value: i64| {
            kraftd_raft::driver::metrics::write_prometheus_metric(
                out,
                "kafka_broker_metadata_metrics",
                name,
                kind,
                help,
                node_id,
                value,
            );
        };
        metric(
            "last_applied_record_offset",
            "gauge",
            "The offset of the last metadata record published.",
            self.last_applied_record_offset,
        );
        metric(
            "last_applied_record_timestamp",
            "gauge",
            "The append time (ms) of the last metadata record published.",
            self.last_applied_record_timestamp,
        );
        metric(
            "last_applied_record_lag_ms",
            "gauge",
            "Now minus the append time of the last metadata record published.",
            self.last_applied_record_lag_ms,
        );
        metric(
            "metadata_load_error_count",
            "counter",
            "Metadata batches, records or snapshots that could not be loaded.",
            self.metadata_load_error_count as i64,
        );
        metric(
            "metadata_apply_error_count",
            "counter",
            "Publishers that failed on a new image.",
            self.metadata_apply_error_count as i64,
        );
    }
}
