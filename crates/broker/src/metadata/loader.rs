//! The MetadataLoader, as Kafka's `org.apache.kafka.image.loader.MetadataLoader` with its
//! `MetadataBatchLoader`: the broker's one listener on the Raft observer. It turns committed
//! batches and snapshots into images through the controller crate's one replay path
//! ([`MetadataDelta`]) and hands each new image to the publishers (the MetadataCache, and the
//! DynamicConfig, SCRAM and ACL publishers), so every part of the broker sees the same
//! metadata at the same offset.
//!
//! Sans-IO, so its rules can be tested without a cluster: the broker's tokio task feeds it
//! the driver's [`RaftEvent`]s in order, the high watermark whenever `RaftMetrics` changes,
//! and the time. The rules, and where they come from:
//!
//! - **Nothing is published before the first catch-up.** A restarted broker must not serve
//!   the topics of its old log as current, so until the records it has loaded reach the high
//!   watermark (loaded offset + 1 ≥ HW, with the HW known and at least one metadata record or
//!   snapshot loaded: Kafka's `stillNeedToCatchUp`), everything is accumulated in one delta
//!   and nothing reaches the publishers or the metrics. The first publication is that delta,
//!   based on the empty image, which publishers treat as a full reload. The HW can be
//!   reached by a batch or by a later HW update alone (both are checked), since the driver's
//!   two channels are not ordered with each other.
//! - **Then every committed batch is published, one by one.** Kafka coalesces the batches of
//!   one `BatchReader`; the driver hands batches over one event at a time, and the bulk of a
//!   restart is already coalesced by the catch-up rule, so publishing each batch keeps
//!   last-applied-record-offset exact for the BrokerLifecycleManager at little cost. A
//!   control batch moves the offset and the append time too, and is published as an empty
//!   delta, as in Kafka.
//! - **A snapshot replaces the image** ([`load_image_snapshot`]) and is published as a delta
//!   from [`MetadataImage::empty`] (a full reload), as the controller's event loop does.
//! - **Metadata transactions (KIP-868)** are held back: nothing is published between a
//!   `BeginTransactionRecord` and its `EndTransactionRecord`; an `AbortTransactionRecord`
//!   drops the records since the begin (Kafka's `MetadataBatchLoader`; the delta itself
//!   refuses the abort, leaving the group to the loader).
//! - **Errors are counted, logged with the offset, and loading goes on**, as Kafka's broker
//!   does with its non-fatal "metadata loading" fault handler: a record that does not decode
//!   or replay (`MetadataBatchLoader.loadBatch` catches each record's fault and goes on with
//!   the *next record* of the same batch) counts in metadata-load-error-count; a publisher
//!   that fails (panics) counts in metadata-apply-error-count (Kafka's "metadata publishing"
//!   handler) and the other publishers still get the image. Those are Kafka's meanings of
//!   the two metrics: "load" is the log-to-image side, "apply" the image-to-broker side. The
//!   last error of each kind is kept with its offset for the operator. A record is never
//!   dropped without a count and an ERROR line; the image then lacks it, as Kafka's does.
//!
//! The decoding of a committed batch repeats the controller event loop's private
//! `decode_committed`; the loader needs per-record errors where the controller stops at the
//! first one (a controller that cannot replay its log must restart, a broker goes on).

use std::panic::{self, AssertUnwindSafe};

use kraftd_controller::snapshot::{load_image_snapshot, SnapshotLoadError};
use kraftd_controller::{MetadataDelta, MetadataImage, MetadataPublisher, ReplayError};
use kraftd_log::SnapshotId;
use kraftd_protocol::metadata_record::decode_metadata_record;
use kraftd_protocol::records::{Batches, RecordBatchError};
use kraftd_protocol::{DecodeError, MetadataRecord};
use kraftd_raft::driver::RaftEvent;
use kraftd_raft::snapshot::SnapshotReader;
use kraftd_raft::CommittedBatch;
use tracing::{debug, error, info, warn};

use super::metrics::{AppliedProvenance, BrokerMetadataMetrics};

/// Why part of the metadata log could not be loaded; each one counts once in
/// metadata-load-error-count.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataLoadError {
    /// The batch framing is broken: the rest of the batch cannot be found.
    #[error("committed batch at offset {offset} does not parse: {source}")]
    Batch {
        offset: i64,
        #[source]
        source: RecordBatchError,
    },
    /// Committed batches are missing between what was loaded and this batch.
    #[error("committed batches are missing from offset {offset} to {next_base_offset}")]
    Gap { offset: i64, next_base_offset: i64 },
    #[error("metadata record at offset {offset} has a null value")]
    NullValue { offset: i64 },
    #[error("metadata record at offset {offset} does not decode: {source}")]
    Decode {
        offset: i64,
        #[source]
        source: DecodeError,
    },
    #[error("metadata record at offset {offset} does not replay: {source}")]
    Replay {
        offset: i64,
        #[source]
        source: Box<ReplayError>,
    },
    /// A transaction marker out of place (a begin inside a transaction, an end or abort
    /// outside one).
    #[error("metadata record at offset {offset}: {reason}")]
    Transaction { offset: i64, reason: &'static str },
    /// The snapshot was not loaded; the image stays what it was. `offset` is the last
    /// offset the snapshot covers.
    #[error("snapshot {id:?} (offset {offset}) does not load: {source}")]
    Snapshot {
        id: SnapshotId,
        offset: i64,
        #[source]
        source: SnapshotLoadError,
    },
}

impl MetadataLoadError {
    /// The offset of the record (or the first offset of the batch, the first missing offset,
    /// the snapshot's last offset) the error is about.
    pub fn offset(&self) -> i64 {
        match self {
            MetadataLoadError::Batch { offset, .. }
            | MetadataLoadError::Gap { offset, .. }
            | MetadataLoadError::NullValue { offset }
            | MetadataLoadError::Decode { offset, .. }
            | MetadataLoadError::Replay { offset, .. }
            | MetadataLoadError::Transaction { offset, .. }
            | MetadataLoadError::Snapshot { offset, .. } => *offset,
        }
    }
}

/// A publisher that failed on an image; counts once in metadata-apply-error-count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("publisher {publisher} failed on the image ending at offset {offset}: {message}")]
pub struct MetadataApplyError {
    pub publisher: String,
    /// The last offset of the image it was given.
    pub offset: i64,
    /// The panic message.
    pub message: String,
}

/// An open metadata transaction: what to return to if it aborts.
#[derive(Debug)]
struct Transaction {
    begin_offset: i64,
    before: MetadataDelta,
}

/// The broker's metadata loader; see the module documentation for its rules.
pub struct MetadataLoader {
    node_id: i32,
    publishers: Vec<Box<dyn MetadataPublisher + Send>>,
    /// The last published image (empty until the first catch-up).
    image: MetadataImage,
    /// What was replayed since the last publication, on top of `image`.
    pending: MetadataDelta,
    /// A snapshot was loaded since the last publication: `pending` does not list what the
    /// snapshot dropped, so publishers must rebuild from the image.
    full_reload: bool,
    /// Something was loaded since the last publication.
    unpublished: bool,
    /// Where `pending` ends.
    loaded: AppliedProvenance,
    transaction: Option<Transaction>,
    high_watermark: Option<i64>,
    caught_up: bool,
    caught_up_at_ms: Option<i64>,
    /// A metadata record or a snapshot was loaded (Kafka's `hasSeenRecord`): a log of
    /// control batches alone is no metadata to serve.
    seen_record: bool,
    epoch: i32,
    leader_id: Option<i32>,
    metrics: BrokerMetadataMetrics,
    last_load_error: Option<MetadataLoadError>,
    last_apply_error: Option<MetadataApplyError>,
}

impl std::fmt::Debug for MetadataLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.publishers.iter().map(|p| p.name()).collect();
        f.debug_struct("MetadataLoader")
            .field("node_id", &self.node_id)
            .field("publishers", &names)
            .field("loaded", &self.loaded)
            .field("applied", &self.metrics.applied())
            .field("high_watermark", &self.high_watermark)
            .field("caught_up", &self.caught_up)
            .field(
                "transaction",
                &self.transaction.as_ref().map(|t| t.begin_offset),
            )
            .field("epoch", &self.epoch)
            .field("leader_id", &self.leader_id)
            .finish_non_exhaustive()
    }
}

impl MetadataLoader {
    /// A loader at the start of the log, publishing to `publishers` in order.
    pub fn new(node_id: i32, publishers: Vec<Box<dyn MetadataPublisher + Send>>) -> Self {
        let image = MetadataImage::empty();
        MetadataLoader {
            node_id,
            publishers,
            pending: MetadataDelta::new(&image),
            image,
            full_reload: false,
            unpublished: false,
            loaded: AppliedProvenance::EMPTY,
            transaction: None,
            high_watermark: None,
            caught_up: false,
            caught_up_at_ms: None,
            seen_record: false,
            epoch: -1,
            leader_id: None,
            metrics: BrokerMetadataMetrics::new(),
            last_load_error: None,
            last_apply_error: None,
        }
    }

    /// Adds a publisher. Once caught up it is given the current image at once as a full
    /// reload (Kafka's `installPublishers`); before that it waits for the first publication
    /// with the others.
    pub fn add_publisher(&mut self, mut publisher: Box<dyn MetadataPublisher + Send>) {
        if self.caught_up {
            let reload = MetadataDelta::new(&MetadataImage::empty());
            let offset = self.metrics.last_applied_record_offset();
            if let Err(e) = call_publisher(publisher.as_mut(), &reload, &self.image, offset) {
                self.apply_error(e);
            }
        }
        self.publishers.push(publisher);
    }

    /// Feeds one of the Raft driver's events, in the order the driver sent them.
    pub fn handle_event(&mut self, event: RaftEvent, now_ms: i64) {
        match event {
            RaftEvent::Committed(batch) => self.handle_commit(&batch, now_ms),
            RaftEvent::Snapshot { id, bytes } => self.handle_snapshot(id, bytes, now_ms),
            RaftEvent::LeaderChange {
                epoch, leader_id, ..
            } => self.handle_leader_change(epoch, leader_id),
            // Only a writer predicting offsets cares; the records arrive committed.
            RaftEvent::LeaderAppended { .. } => {}
        }
    }

    /// The high watermark the Raft client knows (`RaftMetrics::high_watermark`, exclusive:
    /// the offset after the last committed record); negative means not known yet. Only
    /// matters until the first catch-up, which it may complete.
    pub fn handle_high_watermark(&mut self, high_watermark: i64, now_ms: i64) {
        if high_watermark < 0 {
            return;
        }
        self.high_watermark = Some(match self.high_watermark {
            Some(known) => known.max(high_watermark),
            None => high_watermark,
        });
        if !self.caught_up {
            self.maybe_publish(now_ms);
        }
    }

    /// Replays one committed batch, then publishes it if caught up.
    pub fn handle_commit(&mut self, batch: &CommittedBatch, now_ms: i64) {
        if batch.last_offset <= self.loaded.offset {
            debug!(
                node = self.node_id,
                base_offset = batch.base_offset,
                loaded = self.loaded.offset,
                "skipping a committed batch already loaded"
            );
            return;
        }
        if self.loaded.offset >= 0 && batch.base_offset > self.loaded.offset + 1 {
            self.load_error(MetadataLoadError::Gap {
                offset: self.loaded.offset + 1,
                next_base_offset: batch.base_offset,
            });
        }
        let timestamp = self.load_batch(batch);
        self.loaded = AppliedProvenance {
            offset: batch.last_offset,
            epoch: batch.epoch,
            timestamp: timestamp.unwrap_or(self.loaded.timestamp),
        };
        self.unpublished = true;
        self.maybe_publish(now_ms);
    }

    /// Loads a snapshot in place of everything before its end offset, then publishes it as
    /// a full reload if caught up.
    pub fn handle_snapshot(&mut self, id: SnapshotId, bytes: bytes::Bytes, now_ms: i64) {
        let offset = id.end_offset - 1;
        if let Some(t) = self.transaction.take() {
            warn!(
                node = self.node_id,
                begin_offset = t.begin_offset,
                ?id,
                "a snapshot replaces an unfinished metadata transaction"
            );
        }
        // The header alone, for the append time of the last record the snapshot covers.
        let timestamp = SnapshotReader::new(bytes.clone())
            .map(|r| r.last_contained_log_timestamp())
            .ok();
        match load_image_snapshot(bytes) {
            Ok(image) => {
                info!(node = self.node_id, ?id, "loaded a metadata snapshot");
                self.pending = MetadataDelta::new(&image);
                self.full_reload = true;
            }
            Err(source) => self.load_error(MetadataLoadError::Snapshot { id, offset, source }),
        }
        self.seen_record = true;
        self.loaded = AppliedProvenance {
            offset,
            epoch: id.epoch,
            timestamp: timestamp.unwrap_or(self.loaded.timestamp),
        };
        self.unpublished = true;
        self.maybe_publish(now_ms);
    }

    /// Notes the current Raft epoch and leader, for the owner (Kafka's publishers hear of it
    /// through `onControllerChange`; ours have no such hook yet).
    pub fn handle_leader_change(&mut self, epoch: i32, leader_id: Option<i32>) {
        if epoch != self.epoch || leader_id != self.leader_id {
            debug!(
                node = self.node_id,
                epoch,
                ?leader_id,
                "metadata leader changed"
            );
        }
        self.epoch = epoch;
        self.leader_id = leader_id;
    }

    /// Whether the loader has reached the high watermark once and publishes every batch.
    pub fn caught_up(&self) -> bool {
        self.caught_up
    }

    /// When (in the `now_ms` fed) the first catch-up happened.
    pub fn caught_up_at_ms(&self) -> Option<i64> {
        self.caught_up_at_ms
    }

    /// The last published image: empty before the first catch-up.
    pub fn image(&self) -> &MetadataImage {
        &self.image
    }

    /// The offset of the last record published, -1 before the first catch-up (Kafka's
    /// `lastAppliedOffset`, what the broker reports in its heartbeats).
    pub fn last_applied_offset(&self) -> i64 {
        self.metrics.last_applied_record_offset()
    }

    /// The offset of the last record replayed, published or not: ahead of
    /// [`last_applied_offset`](Self::last_applied_offset) while catching up or inside a
    /// metadata transaction.
    pub fn loaded_offset(&self) -> i64 {
        self.loaded.offset
    }

    pub fn high_watermark(&self) -> Option<i64> {
        self.high_watermark
    }

    /// The Raft epoch of the last leader change.
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    /// The active controller as of the last leader change.
    pub fn leader_id(&self) -> Option<i32> {
        self.leader_id
    }

    /// broker-metadata-metrics; clone the handle to read them from another task.
    pub fn metrics(&self) -> &BrokerMetadataMetrics {
        &self.metrics
    }

    pub fn last_load_error(&self) -> Option<&MetadataLoadError> {
        self.last_load_error.as_ref()
    }

    pub fn last_apply_error(&self) -> Option<&MetadataApplyError> {
        self.last_apply_error.as_ref()
    }

    /// Decodes and replays every record of `batch` into the pending delta, going on past
    /// each record that fails; returns the append time of its last (parsable) batch.
    fn load_batch(&mut self, batch: &CommittedBatch) -> Option<i64> {
        let mut timestamp = None;
        for parsed in Batches::new(batch.bytes.clone()) {
            let parsed = match parsed {
                Ok(parsed) => parsed,
                Err(source) => {
                    self.load_error(MetadataLoadError::Batch {
                        offset: batch.base_offset,
                        source,
                    });
                    break;
                }
            };
            timestamp = Some(parsed.max_timestamp());
            if batch.is_control || parsed.is_control() {
                // LeaderChange, snapshot and voter records: Raft's, not metadata.
                continue;
            }
            let records = match parsed.records() {
                Ok(records) => records,
                Err(source) => {
                    self.load_error(MetadataLoadError::Batch {
                        offset: parsed.base_offset(),
                        source,
                    });
                    continue;
                }
            };
            let mut next_offset = parsed.base_offset();
            for record in records {
                let record = match record {
                    Ok(record) => record,
                    Err(source) => {
                        // The records after a broken one cannot be found.
                        self.load_error(MetadataLoadError::Batch {
                            offset: next_offset,
                            source,
                        });
                        break;
                    }
                };
                let offset = parsed.base_offset() + i64::from(record.offset_delta);
                next_offset = offset + 1;
                let Some(value) = record.value else {
                    self.load_error(MetadataLoadError::NullValue { offset });
                    continue;
                };
                match decode_metadata_record(value) {
                    Ok((decoded, _version)) => {
                        self.seen_record = true;
                        self.replay(offset, &decoded);
                    }
                    Err(source) => self.load_error(MetadataLoadError::Decode { offset, source }),
                }
            }
        }
        timestamp
    }

    /// One record into the pending delta, transaction markers handled here.
    fn replay(&mut self, offset: i64, record: &MetadataRecord) {
        let misplaced = |reason| MetadataLoadError::Transaction { offset, reason };
        match record {
            MetadataRecord::BeginTransaction(_) => {
                if self.transaction.is_some() {
                    self.load_error(misplaced("BeginTransactionRecord inside a transaction"));
                } else {
                    self.transaction = Some(Transaction {
                        begin_offset: offset,
                        before: self.pending.clone(),
                    });
                }
            }
            MetadataRecord::EndTransaction(_) => {
                if self.transaction.take().is_none() {
                    self.load_error(misplaced("EndTransactionRecord outside a transaction"));
                }
            }
            MetadataRecord::AbortTransaction(_) => match self.transaction.take() {
                Some(t) => {
                    info!(
                        node = self.node_id,
                        begin_offset = t.begin_offset,
                        offset,
                        "metadata transaction aborted"
                    );
                    self.pending = t.before;
                }
                None => self.load_error(misplaced("AbortTransactionRecord outside a transaction")),
            },
            _ => {
                if let Err(e) = self.pending.replay(record) {
                    self.load_error(MetadataLoadError::Replay {
                        offset,
                        source: Box::new(e),
                    });
                }
            }
        }
    }

    /// Publishes what was loaded if the loader is (or just got) caught up and no
    /// transaction is open.
    fn maybe_publish(&mut self, now_ms: i64) {
        if !self.unpublished || self.transaction.is_some() {
            return;
        }
        if !self.caught_up {
            let Some(hw) = self.high_watermark else {
                return;
            };
            if self.loaded.offset + 1 < hw || !self.seen_record {
                return;
            }
            self.caught_up = true;
            self.caught_up_at_ms = Some(now_ms);
            info!(
                node = self.node_id,
                high_watermark = hw,
                offset = self.loaded.offset,
                "the metadata loader caught up with the high watermark; publishing"
            );
        }
        self.publish();
    }

    fn publish(&mut self) {
        let image = self.pending.apply();
        let offset = self.loaded.offset;
        let reload;
        let delta = if self.full_reload {
            reload = MetadataDelta::new(&MetadataImage::empty());
            &reload
        } else {
            &self.pending
        };
        let mut failures = Vec::new();
        for publisher in &mut self.publishers {
            if let Err(e) = call_publisher(publisher.as_mut(), delta, &image, offset) {
                failures.push(e);
            }
        }
        for failure in failures {
            self.apply_error(failure);
        }
        self.metrics.set_applied(self.loaded);
        self.pending = MetadataDelta::new(&image);
        self.image = image;
        self.full_reload = false;
        self.unpublished = false;
    }

    fn load_error(&mut self, e: MetadataLoadError) {
        error!(
            node = self.node_id,
            offset = e.offset(),
            "metadata loading: {e}"
        );
        self.metrics.record_load_error();
        self.last_load_error = Some(e);
    }

    fn apply_error(&mut self, e: MetadataApplyError) {
        error!(
            node = self.node_id,
            offset = e.offset,
            "metadata publishing: {e}"
        );
        self.metrics.record_apply_error();
        self.last_apply_error = Some(e);
    }
}

/// Calls one publisher, turning its panic into an error so the others still run (Kafka
/// catches each publisher's `Throwable`). Publishers swap whole values into their handles,
/// so one that panicked midway still holds its previous state.
fn call_publisher(
    publisher: &mut (dyn MetadataPublisher + Send),
    delta: &MetadataDelta,
    image: &MetadataImage,
    offset: i64,
) -> Result<(), MetadataApplyError> {
    panic::catch_unwind(AssertUnwindSafe(|| {
        publisher.on_metadata_update(delta, image)
    }))
    .map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        MetadataApplyError {
            publisher: publisher.name().to_string(),
            offset,
            message,
        }
    })
}
