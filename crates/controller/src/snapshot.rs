//! Metadata snapshots of a [`MetadataImage`], and when to take them: the controller's side
//! of KIP-630, as Kafka's `SnapshotGenerator` + `SnapshotEmitter` (writing) and
//! `MetadataLoader` (loading). Pure: bytes in, bytes out, time as an argument.
//!
//! - [`write_image_snapshot`] writes [`MetadataImage::records`] (Kafka's snapshot order),
//!   each framed as Kafka's `MetadataRecordSerde` does at its highest version, through
//!   `kraftd_raft::snapshot::SnapshotWriter` in groups of [`SNAPSHOT_RECORD_GROUP`] records
//!   (Kafka's `SnapshotEmitter` batch size), so the batches are laid out as Kafka's are.
//! - [`load_image_snapshot`] checks the snapshot's framing and replays every record onto
//!   an empty image through [`MetadataDelta`], the one replay path: a snapshot means exactly
//!   what the same records mean in the log. Nothing is returned unless the whole snapshot,
//!   footer included, is sound.
//! - [`SnapshotPolicy`] decides when a snapshot is due, with Kafka's
//!   `metadata.log.max.record.bytes.between.snapshots` and
//!   `metadata.log.max.snapshot.interval.ms`.

use bytes::Bytes;
use kraftd_protocol::metadata_record::{decode_metadata_record, encode_metadata_record};
use kraftd_protocol::DecodeError;
use kraftd_raft::snapshot::{SnapshotError, SnapshotReader, SnapshotWriteError, SnapshotWriter};

use crate::image::delta::{MetadataDelta, ReplayError};
use crate::image::MetadataImage;

/// How many records Kafka's `SnapshotEmitter` hands the snapshot writer at once
/// (`DEFAULT_BATCH_SIZE`); a group never straddles two batches.
pub const SNAPSHOT_RECORD_GROUP: usize = 1024;

/// Writes `image` as a snapshot whose batches carry `epoch` (the snapshot id's epoch) and
/// whose header records `last_contained_log_timestamp` (the append time of the last batch it
/// covers). The batches' own timestamps are that time too: Kafka stamps the wall clock
/// there, which no reader relies on, and a pure writer makes equal images write equal bytes.
pub fn write_image_snapshot(
    image: &MetadataImage,
    epoch: i32,
    last_contained_log_timestamp: i64,
) -> Result<Bytes, SnapshotWriteError> {
    let mut writer = SnapshotWriter::new(
        epoch,
        last_contained_log_timestamp,
        last_contained_log_timestamp,
    )?;
    let mut group = Vec::with_capacity(SNAPSHOT_RECORD_GROUP);
    let metadata_version = image.features.version();
    for record in image.records() {
        let version = metadata_version.record_version(&record);
        group.push(encode_metadata_record(&record, version)?);
        if group.len() == SNAPSHOT_RECORD_GROUP {
            writer.append_group(&group)?;
            group.clear();
        }
    }
    writer.append_group(&group)?;
    writer.finish()
}

/// Why a snapshot could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotLoadError {
    /// The bytes are not a sound snapshot (framing, CRC, header, footer, ...).
    #[error("snapshot format: {0}")]
    Format(#[from] SnapshotError),
    /// A record value is not a metadata record this code can decode.
    #[error("snapshot record at offset {offset}: {source}")]
    Decode {
        offset: i64,
        #[source]
        source: DecodeError,
    },
    /// A record cannot be replayed onto the image built so far.
    #[error("snapshot record at offset {offset}: {source}")]
    Replay {
        offset: i64,
        #[source]
        source: Box<ReplayError>,
    },
}

/// Loads a snapshot into a new image: every record replayed, in order, onto
/// [`MetadataImage::empty`] through one [`MetadataDelta`]. The values are decoded from
/// slices of `bytes` (no copy of the snapshot is made).
pub fn load_image_snapshot(bytes: Bytes) -> Result<MetadataImage, SnapshotLoadError> {
    let reader = SnapshotReader::new(bytes)?;
    let empty = MetadataImage::empty();
    let mut delta = MetadataDelta::new(&empty);
    for batch in reader {
        let batch = batch?;
        for (offset, value) in (batch.base_offset..).zip(batch.values) {
            let (record, _version) = decode_metadata_record(value)
                .map_err(|source| SnapshotLoadError::Decode { offset, source })?;
            delta
                .replay(&record)
                .map_err(|source| SnapshotLoadError::Replay {
                    offset,
                    source: Box::new(source),
                })?;
        }
    }
    Ok(delta.apply())
}

/// Kafka's default for `metadata.log.max.record.bytes.between.snapshots` (20 MiB).
pub const DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS: u64 = 20 * 1024 * 1024;

/// Kafka's default for `metadata.log.max.snapshot.interval.ms` (one hour).
pub const DEFAULT_MAX_SNAPSHOT_INTERVAL_MS: i64 = 3_600_000;

/// When a snapshot is due, as Kafka's `SnapshotGenerator` decides it: once the committed
/// batches since the last snapshot reach `metadata.log.max.record.bytes.between.snapshots`
/// bytes, or, if `metadata.log.max.snapshot.interval.ms` is not 0, once that long has passed
/// since the last snapshot and something was committed since. Kafka checks only when a batch
/// commits; [`SnapshotPolicy::record_committed`] answers then, and
/// [`SnapshotPolicy::should_snapshot`] at any time.
///
/// Sans-IO: the caller feeds committed byte counts and the time, takes the snapshot, then
/// calls [`SnapshotPolicy::snapshot_taken`] (also after loading one, as Kafka resets its
/// counters when a snapshot is published).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotPolicy {
    max_record_bytes_between_snapshots: u64,
    max_snapshot_interval_ms: i64,
    bytes_since_last_snapshot: u64,
    last_snapshot_ms: i64,
}

impl SnapshotPolicy {
    /// A policy with these limits, counting time from `now_ms` (Kafka counts from the
    /// generator's start).
    pub fn new(
        max_record_bytes_between_snapshots: u64,
        max_snapshot_interval_ms: i64,
        now_ms: i64,
    ) -> SnapshotPolicy {
        SnapshotPolicy {
            max_record_bytes_between_snapshots,
            max_snapshot_interval_ms,
            bytes_since_last_snapshot: 0,
            last_snapshot_ms: now_ms,
        }
    }

    /// A policy with Kafka's defaults (20 MiB, one hour).
    pub fn with_kafka_defaults(now_ms: i64) -> SnapshotPolicy {
        SnapshotPolicy::new(
            DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
            DEFAULT_MAX_SNAPSHOT_INTERVAL_MS,
            now_ms,
        )
    }

    /// Counts `bytes` of newly committed batches (their size in the log) at `now_ms`, and
    /// tells whether a snapshot is now due.
    pub fn record_committed(&mut self, bytes: u64, now_ms: i64) -> bool {
        self.bytes_since_last_snapshot = self.bytes_since_last_snapshot.saturating_add(bytes);
        self.should_snapshot(now_ms)
    }

    /// Whether a snapshot is due at `now_ms`.
    pub fn should_snapshot(&self, now_ms: i64) -> bool {
        if self.bytes_since_last_snapshot == 0 {
            return false;
        }
        if self.bytes_since_last_snapshot >= self.max_record_bytes_between_snapshots {
            return true;
        }
        self.max_snapshot_interval_ms != 0
            && now_ms.saturating_sub(self.last_snapshot_ms) >= self.max_snapshot_interval_ms
    }

    /// A snapshot was taken (or loaded) at `now_ms`: both counters start again.
    pub fn snapshot_taken(&mut self, now_ms: i64) {
        self.bytes_since_last_snapshot = 0;
        self.last_snapshot_ms = now_ms;
    }

    /// Committed bytes since the last snapshot.
    pub fn bytes_since_last_snapshot(&self) -> u64 {
        self.bytes_since_last_snapshot
    }
}
