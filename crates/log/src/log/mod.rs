//! [`Log`]: one partition's log — the segments of a directory in offset order, the
//! leader-epoch cache and the snapshots beside them — and every operation the replication
//! layers need: append as leader or follower, read, truncate, flush, roll, retention,
//! timestamp lookup, snapshots.
//!
//! Concurrency: one writer, many readers. Mutating calls take `&mut self`, reads take
//! `&self`, so the owner puts the log behind an `RwLock`. A reader holds the lock only for
//! [`Log::plan_read`] (range checks and an index lookup) and reads the file after releasing
//! it ([`PendingRead::execute`], positional reads on a shared handle), so readers never
//! block the writer for longer than an index lookup, and the writer blocks readers only for
//! the duration of one append. Timestamp lookups and snapshot reads still run under the
//! lock.
//!
//! File handles: no segment keeps a file of its own open. Every `.log` handle, the active
//! segment's included, lives in the process's least-recently-used pool (`handles.rs`,
//! `log.segment.open.files.max` handles, closed after `log.segment.idle.close.ms` unused),
//! opened on first read or append; indexes live in memory and their files are opened only
//! to write. So the process's descriptors for logs are bounded whatever the partition and
//! segment counts.
//!
//! Durability: every segment but the active one was fsynced when the log rolled past it,
//! so on open only the active segment is re-validated batch by batch and cut at the first
//! torn or corrupt batch, and not even that after a clean shutdown
//! ([`Log::open_after_clean_shutdown`]); a sealed segment's tail (from its last index
//! entry) is re-checked on open, and damage further in is reported by the read or
//! [`Log::verify`] that reaches it. The active segment is flushed per `flush.messages` / `flush.ms`
//! (the metadata log uses 1: flush before acknowledging) or by [`Log::flush`];
//! [`Log::flushed_offset`] says how far the log is known durable.
//!
//! Log start offset: Kafka's, which may sit inside the first segment (DeleteRecords moves
//! it forward with [`Log::maybe_increment_log_start_offset`]; reads below it are out of
//! range and whole segments below it are deleted). A log a
//! [`LogManager`](crate::log_manager::LogManager) opened keeps it, as Kafka does, in its
//! log directory's `log-start-offset-checkpoint` (with its recovery point in
//! `recovery-point-offset-checkpoint`), written at intervals from what the log stores in
//! its [`PartitionOffsets`] ([`Log::track_offsets`]); the manager hands it back at open
//! ([`Log::restore_log_start_offset`]). A log opened on its own (the tests, tools) keeps it
//! in a `log-start-offset` file inside the partition directory (one entry of just the
//! offset), rewritten atomically and fsynced on every increment; older kraftd did so for
//! every partition, and such a file is still read at open and removed once the log dir's
//! checkpoint holds its value. A stored start not above the first segment's base offset is
//! ignored; one above the log end offset (recovery cut past it) empties the log to start
//! there, as Kafka's `LogLoader` does.
//!
//! Where things are, one room (an `impl Log` block) per Kafka concept, where Kafka keeps
//! them all in `UnifiedLog` and `LocalLog`:
//!
//! - `mod.rs` — the [`Log`] struct, [`LogStats`], accessors and the leader-epoch glue;
//! - `loader.rs` — opening (Kafka's `LogLoader`): leftovers removed, segments loaded, the
//!   active one recovered, the epoch cache and stored log start reconciled; `close`, `verify`;
//! - `append.rs` — appends as leader and as follower, and splitting an append across
//!   segments;
//! - `read.rs` — reads ([`PendingRead`]) and timestamp lookups;
//! - `flush.rs` — rolling and flushing ([`PendingFlush`]);
//! - `truncate.rs` — truncation (divergence) and full truncation (snapshot install);
//! - `retention.rs` — deleting old segments: by time, by size, below the log start;
//! - `start_offset.rs` — moving the log start offset (DeleteRecords) and its file;
//! - `snapshots.rs` — the snapshots beside the log (KIP-630);
//! - `transactions.rs` — producer state, abort markers in the `.txnindex`, the last stable
//!   offset and the aborted transactions of a range.
//!
//! - `clean.rs` — compaction's side of the log ([`crate::cleaner`]): the cleanable range
//!   and dirty ratio, planning a clean, swapping cleaned segments in (Kafka's
//!   `replaceSegments`) and finishing an interrupted swap at open.
//!
//! Compaction leaves gaps between batches within a segment (offsets only increase; a read
//! in a gap continues at the next batch), never between segments: a cleaned segment keeps
//! its last batch, emptied if need be, so it ends where the segments it replaced ended.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::checkpoint::{CheckpointKind, PartitionOffsets};
use crate::config::LogConfig;
use crate::epoch::{EpochEntry, LeaderEpochCache};
use crate::error::Result;
use crate::handles::SegmentFiles;
use crate::log_dir_failure::LogDirFailureChannel;
use crate::producer_state::{ProducerStateManager, DEFAULT_PRODUCER_ID_EXPIRATION_MS};
use crate::segment::Segment;
use crate::snapshot::SnapshotId;

mod append;
mod clean;
mod flush;
mod loader;
mod read;
mod retention;
mod snapshots;
mod start_offset;
mod transactions;
mod truncate;

pub use append::AppendInfo;
pub use clean::CleanCommit;
pub use flush::{CompletedFlush, PendingFlush};
pub use read::{PendingRead, ReadResult};
pub use transactions::{txn_marker_of, TxnMarker};

/// Removes the `log-start-offset` file older kraftd kept in a partition directory (its
/// value is in the log dir's checkpoint now); a failure only leaves it to be read again.
pub(crate) fn remove_legacy_start_file(dir: &Path) {
    let path = dir.join(start_offset::LOG_START_OFFSET_FILE);
    if let Err(e) = crate::fsutil::remove_if_exists(&path) {
        tracing::warn!(path = %path.display(), error = %e, "removing a legacy log-start-offset file failed");
    }
}

/// `result`, its I/O error reported by `channel` as a failure of the log dir holding the
/// log directory `log_dir`.
fn report_to<T>(
    channel: Option<&LogDirFailureChannel>,
    log_dir: &Path,
    result: Result<T>,
) -> Result<T> {
    match (channel, log_dir.parent()) {
        (Some(channel), Some(parent)) => channel.report(parent, result),
        _ => result,
    }
}

/// Suffix of files being deleted (renamed first so a crash never leaves a gap).
const DELETED_SUFFIX: &str = ".deleted";

/// Counters an operator (and the tests) use to see what the log did on its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogStats {
    /// How many times recovery cut a torn or corrupt tail.
    pub recovery_truncations: u64,
    /// Bytes recovery cut.
    pub recovery_truncated_bytes: u64,
    /// Segments whose indexes were rebuilt on open.
    pub index_rebuilds: u64,
    /// Active segments re-validated batch by batch on open: 1 after [`Log::open`], 0 after
    /// [`Log::open_after_clean_shutdown`] unless the segment's tail proved unsound.
    pub segments_recovered: u64,
    /// Segments rolled.
    pub segments_rolled: u64,
    /// Segments deleted by retention or `delete_segments_before`.
    pub segments_deleted: u64,
    /// Cleaned segments swapped in by [`Log::commit_clean`].
    pub segments_cleaned: u64,
    /// fdatasyncs of the active segment.
    pub flushes: u64,
    /// This log's segment `.log` handles open right now in the process's pool (all of the
    /// pool's are at most `log.segment.open.files.max`).
    pub open_segment_files: u64,
    /// Times a segment's `.log` file was opened because its handle was not pooled.
    pub segment_file_opens: u64,
}

/// One partition's log (see the module docs).
#[derive(Debug)]
pub struct Log {
    dir: PathBuf,
    config: LogConfig,
    /// By base offset; never empty; the last one is the active segment.
    segments: BTreeMap<i64, Segment>,
    log_end_offset: i64,
    /// Kafka's log start offset: at or above the first segment's base offset, at or below
    /// the log end offset.
    log_start_offset: i64,
    flushed_offset: i64,
    epoch_cache: LeaderEpochCache,
    snapshots: BTreeSet<SnapshotId>,
    stats: LogStats,
    unflushed_records: i64,
    last_flush_ms: i64,
    /// Bumped before every truncation, so planned reads can tell they overlapped one.
    truncations: Arc<AtomicU64>,
    /// The lowest offset the log was truncated to since the log cleaner last took it
    /// ([`Log::take_truncated_floor`]): the cleaner's checkpoint must not stay above data
    /// written again after a truncation (Kafka's `maybeTruncateCheckpoint`).
    truncated_floor: Option<i64>,
    /// The bounded cache of sealed segments' `.log` handles, shared with the segments.
    files: Arc<SegmentFiles>,
    /// Idempotent and transactional producers (`transactions.rs`).
    producers: ProducerStateManager,
    /// Whether `producers` was loaded ([`Log::load_producer_state`]); appends update it only
    /// then.
    producers_loaded: bool,
    /// Where the log stores its recovery point and log start for its log dir's checkpoint
    /// files, when a [`LogManager`](crate::log_manager::LogManager) opened it.
    offsets: Option<Arc<PartitionOffsets>>,
    /// The `log-start-offset` file older kraftd kept in the directory was read at open.
    legacy_start_file: bool,
    /// Where an I/O error of this log takes its log dir offline, when a
    /// [`LogManager`](crate::log_manager::LogManager) opened it.
    failure: Option<Arc<LogDirFailureChannel>>,
}

impl Log {
    /// The log's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Has every I/O error of this log's reads and writes take its log dir (the parent of
    /// [`Log::dir`]) offline through `channel`.
    pub fn set_failure_channel(&mut self, channel: Arc<LogDirFailureChannel>) {
        self.failure = Some(channel);
    }

    /// `result`, its I/O error first reported to the log dir failure channel.
    fn report<T>(&self, result: Result<T>) -> Result<T> {
        report_to(self.failure.as_deref(), &self.dir, result)
    }

    /// Reports what a planned read or flush hands out (see [`Log::report`]).
    fn failure_target(&self) -> Option<(Arc<LogDirFailureChannel>, PathBuf)> {
        self.failure
            .as_ref()
            .map(|c| (Arc::clone(c), self.dir.clone()))
    }

    /// The log's configuration.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// Replaces the configuration (a dynamic config change); takes effect at the next
    /// append, roll or retention pass.
    pub fn set_config(&mut self, config: LogConfig) -> Result<()> {
        config.validate()?;
        self.config = config;
        Ok(())
    }

    /// The first offset a read may ask for (Kafka's log start offset): the first segment's
    /// base offset, or above it after [`Log::maybe_increment_log_start_offset`].
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// The offset the next record will get (Kafka's log end offset, LEO).
    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset
    }

    /// Every offset below this is on disk (fdatasynced).
    pub fn flushed_offset(&self) -> i64 {
        self.flushed_offset
    }

    /// Total bytes of all segments.
    pub fn size_in_bytes(&self) -> u64 {
        self.segments.values().map(Segment::size).sum()
    }

    /// Number of segments (at least 1).
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// Base offsets of the segments, oldest first.
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments.keys().copied().collect()
    }

    /// What the log did on its own so far (recovery cuts, rolls, deletions, flushes).
    pub fn stats(&self) -> LogStats {
        LogStats {
            open_segment_files: self.files.len() as u64,
            segment_file_opens: self.files.opens(),
            ..self.stats
        }
    }

    /// The newest leader epoch in the log.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.epoch_cache.latest_epoch()
    }

    /// The leader-epoch cache's entries, oldest first.
    pub fn epoch_entries(&self) -> &[EpochEntry] {
        self.epoch_cache.entries()
    }

    /// A new partition leader's epoch starts at the log end offset before it appends
    /// anything (Kafka's `maybeAssignEpochStartOffset`): OffsetForLeaderEpoch and a
    /// fetch's diverging-epoch check must know where the epoch starts even while the leader
    /// has written nothing in it. An epoch not newer than the latest adds nothing.
    pub fn assign_epoch_start_offset(&mut self, epoch: i32) -> Result<bool> {
        let result = self.assign_epoch_start_offset_unreported(epoch);
        self.report(result)
    }

    fn assign_epoch_start_offset_unreported(&mut self, epoch: i32) -> Result<bool> {
        Ok(self
            .epoch_cache
            .assign_at_log_end(epoch, self.log_end_offset))
    }

    /// KIP-279's OffsetForLeaderEpoch answer (see
    /// [`LeaderEpochCache::end_offset_for_epoch`]).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        self.epoch_cache
            .end_offset_for_epoch(epoch, self.log_end_offset)
    }

    /// From now on the log stores its recovery point ([`Log::flushed_offset`]) and log start
    /// offset in `offsets` whenever they change (its log dir's checkpoint files, written at
    /// intervals), instead of keeping the log start in a file of its own.
    pub fn track_offsets(&mut self, offsets: Arc<PartitionOffsets>) {
        self.offsets = Some(offsets);
        self.note_offsets();
    }

    /// Stores the partition's high watermark for its log dir's `replication-offset-checkpoint`
    /// (when tracked, [`Log::track_offsets`]).
    pub fn note_high_watermark(&self, high_watermark: i64) {
        if let Some(o) = &self.offsets {
            o.set(CheckpointKind::HighWatermark, high_watermark);
        }
    }

    /// Whether the `log-start-offset` file older kraftd kept in the directory was read at
    /// open (it goes once the log dir's checkpoint holds the value).
    pub fn had_legacy_start_file(&self) -> bool {
        self.legacy_start_file
    }

    fn note_offsets(&self) {
        if let Some(o) = &self.offsets {
            o.set(CheckpointKind::RecoveryPoint, self.flushed_offset);
            o.set(CheckpointKind::LogStart, self.log_start_offset);
        }
    }

    fn new_producer_state(dir: &Path) -> ProducerStateManager {
        ProducerStateManager::new(dir.to_path_buf(), DEFAULT_PRODUCER_ID_EXPIRATION_MS)
    }

    fn active(&self) -> &Segment {
        self.segments
            .values()
            .next_back()
            .expect("a log always has an active segment")
    }

    fn active_mut(&mut self) -> &mut Segment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a log always has an active segment")
    }
}
