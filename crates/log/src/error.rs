//! The log store's one error type, [`LogError`]. Every variant carries the context an operator
//! needs to act on it (file path, byte position, offsets), because a storage error without a
//! file name is a support ticket without a lead.
//!
//! Errors split into three kinds: the caller's input was refused (bad batches, offsets out
//! of range, decreasing epochs; the log is unchanged), the disk said no (I/O), and the disk
//! held something this code never writes (corruption; reported, never skipped or panicked
//! on).

use std::io;
use std::path::PathBuf;

use kraftd_protocol::records::RecordBatchError;

/// Why a log operation failed. A failed call leaves the log as it was, except where a
/// variant says otherwise (an I/O error in the middle of a write is rolled back on a
/// best-effort basis).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// A file operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done ("open", "write", "fsync", ...).
        op: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A read or lookup asked for an offset outside `[log_start_offset, log_end_offset]`
    /// (Kafka's OFFSET_OUT_OF_RANGE).
    #[error("offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        /// The offset asked for.
        offset: i64,
        /// The first offset the log holds.
        log_start_offset: i64,
        /// The offset the next appended record will get.
        log_end_offset: i64,
    },
    /// A read planned with `Log::plan_read` overlapped a truncation of the log, so its
    /// bytes could mix old and new data, or the segment it was to read was deleted
    /// (retention) before it opened the file; plan it again (the offset may now be out of
    /// range).
    #[error("read at offset {offset} overlapped a truncation or deletion of its segment; retry")]
    ConcurrentTruncation {
        /// The offset the read started at.
        offset: i64,
    },
    /// A batch given to append is malformed (framing, header or CRC); `position` is its byte
    /// position in the appended buffer.
    #[error("invalid batch at byte {position} of the append: {source}")]
    InvalidBatch {
        /// Where the batch starts in the buffer given to append.
        position: usize,
        /// What the batch parser found.
        #[source]
        source: RecordBatchError,
    },
    /// A batch's record count disagrees with its offset range (Kafka's
    /// InvalidRecordException "Inconsistent batch offset range and record count").
    #[error("batch at byte {position}: {record_count} records but last offset delta {last_offset_delta}")]
    InconsistentRecordCount {
        /// Where the batch starts in the buffer given to append.
        position: usize,
        /// The declared record count.
        record_count: i32,
        /// The declared last offset delta.
        last_offset_delta: i32,
    },
    /// A batch is larger than `max.message.bytes` (Kafka's RECORD_TOO_LARGE).
    #[error(
        "batch at byte {position} is {size} bytes, over max.message.bytes {max_message_bytes}"
    )]
    RecordTooLarge {
        /// Where the batch starts in the buffer given to append.
        position: usize,
        /// The batch's size in bytes.
        size: usize,
        /// The configured limit.
        max_message_bytes: usize,
    },
    /// One append is larger than a whole segment (Kafka's RECORD_BATCH_TOO_LARGE).
    #[error("append of {size} bytes does not fit in a segment of segment.bytes {segment_bytes}")]
    AppendTooLarge {
        /// The append's size in bytes.
        size: usize,
        /// The configured segment size.
        segment_bytes: u64,
    },
    /// A follower append does not start at (or continue) the log end offset.
    #[error("batch at byte {position} has base offset {found} but the log expects {expected}")]
    NonContiguousOffset {
        /// Where the batch starts in the buffer given to append.
        position: usize,
        /// The offset the log expected next.
        expected: i64,
        /// The batch's base offset.
        found: i64,
    },
    /// An append would make the leader epoch go backwards, which would break the
    /// leader-epoch cache and with it every divergence check (KIP-101, KIP-279).
    #[error("leader epoch {epoch} is below the log's latest epoch {latest_epoch}")]
    EpochDecreased {
        /// The epoch of the append.
        epoch: i32,
        /// The latest epoch already in the log.
        latest_epoch: i32,
    },
    /// A leader epoch below zero was given to a leader append.
    #[error("leader epoch {epoch} is not valid (must be >= 0)")]
    InvalidLeaderEpoch {
        /// The epoch given.
        epoch: i32,
    },
    /// An offset would not fit the on-disk formats (offsets past `i64::MAX`, a segment
    /// whose relative offsets exceed `u32`).
    #[error("offset overflow: {reason}")]
    OffsetOverflow {
        /// What overflowed.
        reason: String,
    },
    /// A file holds bytes this code never writes: the log will not guess what they mean.
    #[error("corrupt {path} at byte {position}: {reason}")]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// The byte position (or line number, for text files) of the damage.
        position: u64,
        /// What is wrong.
        reason: String,
    },
    /// No snapshot with this id exists.
    #[error("snapshot {end_offset}-{epoch} not found")]
    SnapshotNotFound {
        /// The snapshot's end offset.
        end_offset: i64,
        /// The snapshot's epoch.
        epoch: i32,
    },
    /// A snapshot with this id already exists (snapshots are immutable once committed).
    #[error("snapshot {end_offset}-{epoch} already exists")]
    SnapshotExists {
        /// The snapshot's end offset.
        end_offset: i64,
        /// The snapshot's epoch.
        epoch: i32,
    },
    /// A snapshot id with a negative end offset or epoch.
    #[error("invalid snapshot id {end_offset}-{epoch}")]
    InvalidSnapshotId {
        /// The snapshot's end offset.
        end_offset: i64,
        /// The snapshot's epoch.
        epoch: i32,
    },
    /// A clean was stopped by its owner (the log is being deleted, moved or shut down);
    /// nothing of it was applied.
    #[error("cleaning of {dir} aborted")]
    CleaningAborted {
        /// The log's directory.
        dir: PathBuf,
    },
    /// The cleaner's offset map filled up before it had mapped one whole batch, so the clean
    /// could make no progress (`log.cleaner.dedupe.buffer.size` too small for the batch at
    /// `offset`).
    #[error(
        "offset map of {max_entries} entries cannot hold the keys of the batch at offset {offset}"
    )]
    OffsetMapTooSmall {
        /// The entries the map takes.
        max_entries: usize,
        /// The first offset the map could not cover.
        offset: i64,
    },
    /// A configuration value is out of its valid range.
    #[error("invalid config {name}={value}: {reason}")]
    InvalidConfig {
        /// Kafka's property name.
        name: &'static str,
        /// The value given.
        value: String,
        /// Why it was refused.
        reason: &'static str,
    },
}

impl LogError {
    /// Wraps an I/O error with what was being done and to which file.
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> LogError {
        let path = path.into();
        move |source| LogError::Io { op, path, source }
    }

    /// Builds a [`LogError::Corrupt`].
    pub(crate) fn corrupt(
        path: impl Into<PathBuf>,
        position: u64,
        reason: impl Into<String>,
    ) -> LogError {
        LogError::Corrupt {
            path: path.into(),
            position,
            reason: reason.into(),
        }
    }

    /// True for errors that mean "try again" rather than "this failed": a planned read
    /// that overlapped a truncation.
    pub fn is_retriable(&self) -> bool {
        matches!(self, LogError::ConcurrentTruncation { .. })
    }

    /// True for OFFSET_OUT_OF_RANGE, which a fetcher answers by resetting its position rather
    /// than by failing.
    pub fn is_offset_out_of_range(&self) -> bool {
        matches!(self, LogError::OffsetOutOfRange { .. })
    }
}

/// Shorthand for results of log operations.
pub type Result<T, E = LogError> = std::result::Result<T, E>;
