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
//! File handles: the active segment keeps its `.log`, `.index` and `.timeindex` open; a
//! sealed segment keeps none of its own, its `.log` is opened for reads through a
//! least-recently-used cache of at most
//! [`MAX_OPEN_SEGMENT_FILES`](crate::config::MAX_OPEN_SEGMENT_FILES) handles per log, and
//! its indexes live in memory. So a log's descriptors are bounded whatever its segment
//! count.
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
//! range and whole segments below it are deleted). Kafka keeps it for all of a log
//! directory's partitions in `log-start-offset-checkpoint`, written periodically; a [`Log`]
//! owns one directory, so it keeps its own in `log-start-offset` inside the partition
//! directory (the same text format, one entry of just the offset, since the directory
//! names the partition), rewritten atomically and fsynced on every increment, so a
//! DeleteRecords answered is never undone by a crash. The file is read at open and ignored
//! when it is not above the first segment's base offset; one above the log end offset
//! (recovery cut past it) empties the log to start there, as Kafka's `LogLoader` does.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kraftd_protocol::records::{
    Batches, BatchesMut, RecordBatchError, TimestampType, NO_TIMESTAMP,
};

use crate::config::{LogConfig, MAX_READ_BYTES};
use crate::epoch::{EpochEntry, LeaderEpochCache};
use crate::error::{LogError, Result};
use crate::fsutil;
use crate::handles::SegmentFiles;
use crate::segment::{
    file_name, BatchInfo, Segment, SegmentRegion, INDEX_FILE_SUFFIX, LOG_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
};
use crate::snapshot::{SnapshotId, SnapshotReader, SnapshotWriter, PARTIAL_SNAPSHOT_SUFFIX};

/// Suffix of files being deleted (renamed first so a crash never leaves a gap).
const DELETED_SUFFIX: &str = ".deleted";
/// The file holding a log start offset above the first segment's base offset (see the
/// module docs); absent when the first segment's base offset is the log start.
pub const LOG_START_OFFSET_FILE: &str = "log-start-offset";
/// The version line of [`LOG_START_OFFSET_FILE`], as in Kafka's checkpoint files.
const LOG_START_OFFSET_FILE_VERSION: i32 = 0;
/// The largest batch recovery will believe in, whatever `max.message.bytes` says: a
/// corrupt length field must not make recovery allocate gigabytes.
const MAX_RECOVERY_BATCH_BYTES: usize = 64 * 1024 * 1024;

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    /// The offset of the first record appended (the log end offset before the append).
    pub first_offset: i64,
    /// The offset of the last record appended; below `first_offset` when nothing was
    /// appended (an empty input).
    pub last_offset: i64,
    /// The time stamped on the batches for a `LogAppendTime` log, else -1 (as Kafka's
    /// ProduceResponse reports it).
    pub log_append_time: i64,
    /// The largest batch timestamp appended (-1 when none).
    pub max_timestamp: i64,
    /// How many batches were appended.
    pub batch_count: usize,
    /// How many bytes were appended.
    pub size_in_bytes: usize,
}

/// What a read returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResult {
    /// Whole batches, stored bytes unchanged; the first one holds the offset asked for and
    /// may start before it. Empty when nothing is readable below the upper bound.
    pub bytes: Bytes,
    /// The base offset of the first batch returned (the offset asked for when empty).
    pub base_offset: i64,
    /// The offset after the last batch returned: where the next read continues.
    pub next_offset: i64,
    /// The log start offset at the time of the read.
    pub log_start_offset: i64,
    /// The log end offset at the time of the read.
    pub log_end_offset: i64,
}

/// A read planned by [`Log::plan_read`]: it holds the segment's file handle (or, for a
/// sealed segment whose handle is not cached, what it needs to open it when it runs) and
/// the scan's start, not the log, so it runs without the owner's lock. If the log is
/// truncated while it runs, [`PendingRead::execute`] reports
/// [`LogError::ConcurrentTruncation`] instead of returning bytes that may mix old and new
/// data; the caller plans again. A segment deleted meanwhile (retention) stays readable if
/// the read already held its handle (the cache evicting or the log deleting it does not
/// close a handle in use); if the read still had to open it, that too is
/// [`LogError::ConcurrentTruncation`].
#[derive(Debug)]
pub struct PendingRead {
    region: Option<SegmentRegion>,
    start_offset: i64,
    max_bytes: usize,
    upper_bound: i64,
    log_start_offset: i64,
    log_end_offset: i64,
    generation: u64,
    truncations: Arc<AtomicU64>,
}

impl PendingRead {
    /// Reads the planned batches from the file (see [`Log::read`] for what is returned).
    pub fn execute(self) -> Result<ReadResult> {
        let mut result = ReadResult {
            bytes: Bytes::new(),
            base_offset: self.start_offset,
            next_offset: self.start_offset,
            log_start_offset: self.log_start_offset,
            log_end_offset: self.log_end_offset,
        };
        let Some(region) = &self.region else {
            return Ok(result);
        };
        let read = region.read(self.start_offset, self.max_bytes, self.upper_bound);
        // Checked after reading: if no truncation started before this load, none overlapped
        // the read (the writer bumps the counter before it touches a file).
        if self.truncations.load(Ordering::SeqCst) != self.generation {
            return Err(LogError::ConcurrentTruncation {
                offset: self.start_offset,
            });
        }
        if let Some((bytes, base_offset, next_offset)) = read? {
            result.bytes = bytes;
            result.base_offset = base_offset;
            result.next_offset = next_offset;
        }
        Ok(result)
    }
}

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
    /// fdatasyncs of the active segment.
    pub flushes: u64,
    /// Sealed segments' `.log` handles open right now, in the log's cache (at most
    /// [`MAX_OPEN_SEGMENT_FILES`](crate::config::MAX_OPEN_SEGMENT_FILES)); the active
    /// segment's three files are open besides these.
    pub open_segment_files: u64,
    /// Times a sealed segment's `.log` file was opened because its handle was not cached.
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
    /// The bounded cache of sealed segments' `.log` handles, shared with the segments.
    files: Arc<SegmentFiles>,
}

/// A flush planned by [`Log::plan_flush`] to run on another thread: the fdatasync of the
/// active segment's `.log` (the handle is shared, so it outlives a roll or deletion) up to
/// the log end offset at planning time. [`PendingFlush::execute`] it anywhere, then hand
/// the [`CompletedFlush`] back to [`Log::complete_flush`], which advances
/// [`Log::flushed_offset`] only if no truncation happened in between. Appends may go on
/// meanwhile: what they add is simply not covered.
#[derive(Debug)]
pub struct PendingFlush {
    file: Option<Arc<File>>,
    path: PathBuf,
    offset: i64,
    generation: u64,
    truncations: Arc<AtomicU64>,
}

/// A [`PendingFlush`] that was executed: everything below [`CompletedFlush::offset`] was
/// durable when it finished (unless the log was truncated meanwhile).
#[derive(Debug)]
pub struct CompletedFlush {
    offset: i64,
    generation: u64,
    truncations: Arc<AtomicU64>,
}

impl PendingFlush {
    /// The offset everything below which will be durable once executed.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// Does the fdatasync; blocking, so run it off the async runtime's worker threads.
    pub fn execute(self) -> Result<CompletedFlush> {
        if let Some(file) = &self.file {
            file.sync_data()
                .map_err(LogError::io("fsync", &self.path))?;
        }
        Ok(CompletedFlush {
            offset: self.offset,
            generation: self.generation,
            truncations: self.truncations,
        })
    }
}

impl CompletedFlush {
    /// The offset everything below which was made durable.
    pub fn offset(&self) -> i64 {
        self.offset
    }
}

/// A run of an append's batches that goes whole into one segment.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: usize,
    end: usize,
    /// Roll to a new segment before writing the run.
    roll_first: bool,
}

/// The batches of one append, checked and described.
struct Checked {
    data: Bytes,
    batches: Vec<BatchInfo>,
    record_count: i64,
}

impl Log {
    /// Opens (creating if needed) the log in `dir`: removes leftovers of interrupted
    /// operations (`.part`, `.deleted`, `.tmp` files), loads older segments trusting their
    /// indexes when sound, recovers the active segment, reconciles the leader-epoch cache
    /// with what was kept, and lists snapshots. `now_ms` starts the `flush.ms` clock.
    ///
    /// The active segment is re-validated whole (it may hold a torn tail after a crash),
    /// which reads up to `segment.bytes`; after a clean shutdown
    /// [`Log::open_after_clean_shutdown`] skips that.
    pub fn open(dir: &Path, config: LogConfig, now_ms: i64) -> Result<Log> {
        Self::open_inner(dir, config, now_ms, false)
    }

    /// [`Log::open`] for a log known to have been closed cleanly: the owner found the log
    /// directory's clean-shutdown marker ([`crate::take_clean_shutdown_marker`] returned
    /// `Some`), which it writes only after every log in the directory returned from
    /// [`Log::close`] (batches and indexes synced). The active segment is then loaded as
    /// the sealed ones are (indexes trusted when they pass their checks, only the batches
    /// after the last index entry re-checked) instead of re-validated whole, and the
    /// leader-epoch checkpoint is trusted for it: Kafka skips recovery after a clean
    /// shutdown in the same way, and it turns an open from reading up to `segment.bytes`
    /// per partition into reading a few KiB.
    ///
    /// The marker is a promise, not a proof: if the active segment's tail is unsound
    /// anyway, this falls back to the full recovery [`Log::open`] does (cutting the torn
    /// tail) rather than failing.
    pub fn open_after_clean_shutdown(dir: &Path, config: LogConfig, now_ms: i64) -> Result<Log> {
        Self::open_inner(dir, config, now_ms, true)
    }

    fn open_inner(dir: &Path, config: LogConfig, now_ms: i64, clean: bool) -> Result<Log> {
        let mut log = Self::open_segments(dir, config, now_ms, clean)?;
        let Some(stored) = read_log_start_offset(dir)? else {
            return Ok(log);
        };
        if stored > log.log_end_offset {
            // Recovery cut the log below a start offset already acknowledged (or segment
            // files were lost): start empty there, as Kafka's LogLoader does.
            tracing::warn!(
                dir = %dir.display(),
                log_start_offset = stored,
                log_end_offset = log.log_end_offset,
                "log end offset below the stored log start offset; emptying the log"
            );
            log.truncate_fully_and_start_at(stored)?;
        } else if stored > log.log_start_offset {
            log.log_start_offset = stored;
            log.epoch_cache.truncate_from_start(stored)?;
            log.epoch_cache.truncate_from_end(log.log_end_offset)?;
            // A crash may have come between persisting the start and deleting below it.
            log.delete_segments_below_log_start()?;
        }
        Ok(log)
    }

    fn open_segments(dir: &Path, config: LogConfig, now_ms: i64, clean: bool) -> Result<Log> {
        config.validate()?;
        std::fs::create_dir_all(dir).map_err(LogError::io("create directory", dir))?;
        let mut bases = BTreeSet::new();
        let mut snapshots = BTreeSet::new();
        let mut index_files = Vec::new();
        let mut removed_any = false;
        let entries = std::fs::read_dir(dir).map_err(LogError::io("list", dir))?;
        for entry in entries {
            let entry = entry.map_err(LogError::io("list", dir))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let path = entry.path();
            if name.ends_with(PARTIAL_SNAPSHOT_SUFFIX)
                || name.ends_with(DELETED_SUFFIX)
                || name.ends_with(".tmp")
            {
                tracing::info!(path = %path.display(), "removing leftover file");
                fsutil::remove_if_exists(&path)?;
                removed_any = true;
            } else if let Some(id) = SnapshotId::parse_file_name(name) {
                snapshots.insert(id);
            } else if let Some((base, suffix)) = parse_segment_file_name(name) {
                if suffix == LOG_FILE_SUFFIX {
                    bases.insert(base);
                } else {
                    index_files.push((base, path));
                }
            }
        }
        for (base, path) in index_files {
            if !bases.contains(&base) {
                fsutil::remove_if_exists(&path)?;
                removed_any = true;
            }
        }
        let mut epoch_cache = LeaderEpochCache::load(dir)?;
        let mut stats = LogStats::default();
        let max_batch_bytes = config.max_message_bytes.max(MAX_RECOVERY_BATCH_BYTES);
        let mut segments = BTreeMap::new();
        let files = SegmentFiles::new();
        let Some(&active_base) = bases.last() else {
            let seg = Segment::create(dir, 0, config.index_interval_bytes, &files)?;
            segments.insert(0, seg);
            fsutil::sync_dir(dir)?;
            epoch_cache.clear()?;
            return Ok(Log {
                dir: dir.to_path_buf(),
                config,
                segments,
                log_end_offset: 0,
                log_start_offset: 0,
                flushed_offset: 0,
                epoch_cache,
                snapshots,
                stats,
                unflushed_records: 0,
                last_flush_ms: now_ms,
                truncations: Arc::new(AtomicU64::new(0)),
                files,
            });
        };
        for &base in bases.range(..active_base) {
            let (mut seg, rebuilt) = Segment::open_existing(
                dir,
                base,
                config.index_interval_bytes,
                max_batch_bytes,
                &files,
            )?;
            seg.release()?;
            stats.index_rebuilds += u64::from(rebuilt);
            segments.insert(base, seg);
        }
        let clean_active = if clean {
            match Segment::open_existing(
                dir,
                active_base,
                config.index_interval_bytes,
                max_batch_bytes,
                &files,
            ) {
                Ok((mut seg, rebuilt)) => {
                    stats.index_rebuilds += u64::from(rebuilt);
                    seg.start_rolling_clock()?;
                    Some(seg)
                }
                Err(e @ LogError::Corrupt { .. }) => {
                    tracing::warn!(
                        error = %e,
                        "active segment unsound after a clean shutdown; recovering it"
                    );
                    None
                }
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        let (active, report) = match clean_active {
            Some(seg) => (seg, None),
            None => {
                let min_epoch = epoch_cache
                    .epoch_for_offset(active_base - 1)
                    .filter(|_| bases.len() > 1)
                    .unwrap_or(i32::MIN);
                let (active, report) = Segment::recover(
                    dir,
                    active_base,
                    config.index_interval_bytes,
                    max_batch_bytes,
                    min_epoch,
                    &files,
                )?;
                stats.segments_recovered += 1;
                if let Some((position, reason)) = &report.cut {
                    stats.recovery_truncations += 1;
                    stats.recovery_truncated_bytes += report.truncated_bytes;
                    tracing::warn!(
                        segment = %active.log_path().display(),
                        position,
                        cut_bytes = report.truncated_bytes,
                        reason = %reason,
                        "recovery cut a torn or corrupt tail"
                    );
                }
                (active, Some(report))
            }
        };
        active.flush()?;
        segments.insert(active_base, active);

        // Segments must follow each other without gaps: every operation here keeps that
        // true at each step (truncation deletes newest first, retention oldest first, a full
        // truncation renames away oldest first), so a gap means lost files.
        let mut prev_next: Option<i64> = None;
        for (&base, seg) in &segments {
            if let Some(prev_next) = prev_next.filter(|&p| p != base) {
                return Err(LogError::corrupt(
                    seg.log_path(),
                    0,
                    format!("segment starts at {base} but the previous one ends at {prev_next}"),
                ));
            }
            prev_next = Some(seg.next_offset());
        }
        if removed_any {
            fsutil::sync_dir(dir)?;
        }
        let log_start_offset = *segments.keys().next().unwrap_or(&active_base);
        let log_end_offset = segments
            .values()
            .next_back()
            .map_or(active_base, |s| s.next_offset());

        // Reconcile the epoch cache with the log: entries from the active segment on are
        // replaced by what recovery found in it. After a clean shutdown the checkpoint is
        // current (every epoch is recorded before its data, every truncation persisted).
        if let Some(report) = &report {
            epoch_cache.truncate_from_end(active_base.max(log_start_offset))?;
            for e in &report.epochs {
                epoch_cache.assign(e.epoch, e.start_offset)?;
            }
        }
        epoch_cache.truncate_from_end(log_end_offset)?;
        epoch_cache.truncate_from_start(log_start_offset)?;

        Ok(Log {
            dir: dir.to_path_buf(),
            config,
            segments,
            log_end_offset,
            log_start_offset,
            flushed_offset: log_end_offset,
            epoch_cache,
            snapshots,
            stats,
            unflushed_records: 0,
            last_flush_ms: now_ms,
            truncations: Arc::new(AtomicU64::new(0)),
            files,
        })
    }

    /// The log's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
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
        self.epoch_cache.assign(epoch, self.log_end_offset)
    }

    /// KIP-279's OffsetForLeaderEpoch answer (see
    /// [`LeaderEpochCache::end_offset_for_epoch`]).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        self.epoch_cache
            .end_offset_for_epoch(epoch, self.log_end_offset)
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

    /// Appends batches as the partition leader: validates each batch's framing, CRC and
    /// record count, assigns offsets from the log end offset (patching base offsets),
    /// stamps `leader_epoch`, and for a `LogAppendTime` log stamps `now_ms` as the max
    /// timestamp. The whole append goes into one segment (rolling first if needed). On
    /// error nothing is appended (the buffer may have been partly re-stamped).
    pub fn append_as_leader(
        &mut self,
        mut records: BytesMut,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        if leader_epoch < 0 {
            return Err(LogError::InvalidLeaderEpoch {
                epoch: leader_epoch,
            });
        }
        if let Some(latest) = self.epoch_cache.latest_epoch() {
            if leader_epoch < latest {
                return Err(LogError::EpochDecreased {
                    epoch: leader_epoch,
                    latest_epoch: latest,
                });
            }
        }
        // First pass: check everything before changing anything.
        let mut next = self.log_end_offset;
        for batch in BatchesMut::new(&mut records) {
            let batch = batch.map_err(|source| LogError::InvalidBatch {
                position: source_position(&source),
                source,
            })?;
            let position = batch.position();
            let (stored, computed) = (batch.crc(), batch.compute_crc());
            if stored != computed {
                return Err(LogError::InvalidBatch {
                    position,
                    source: RecordBatchError::CrcMismatch {
                        position,
                        stored,
                        computed,
                    },
                });
            }
            let (count, delta) = (batch.record_count(), batch.last_offset_delta());
            if count <= 0 || delta < 0 || i64::from(delta) + 1 != i64::from(count) {
                return Err(LogError::InconsistentRecordCount {
                    position,
                    record_count: count,
                    last_offset_delta: delta,
                });
            }
            if batch.size_in_bytes() > self.config.max_message_bytes {
                return Err(LogError::RecordTooLarge {
                    position,
                    size: batch.size_in_bytes(),
                    max_message_bytes: self.config.max_message_bytes,
                });
            }
            next = next
                .checked_add(i64::from(count))
                .ok_or_else(|| LogError::OffsetOverflow {
                    reason: "offsets past i64::MAX".into(),
                })?;
        }
        if records.len() as u64 > self.config.segment_bytes {
            // Checked again when planning, but before stamping so the buffer is untouched.
            return Err(LogError::AppendTooLarge {
                size: records.len(),
                segment_bytes: self.config.segment_bytes,
            });
        }
        // Second pass: stamp.
        let log_append_time = self.config.message_timestamp_type == TimestampType::LogAppendTime;
        let mut offset = self.log_end_offset;
        for batch in BatchesMut::new(&mut records) {
            let Ok(mut batch) = batch else {
                unreachable!("validated in the first pass");
            };
            batch.set_base_offset(offset);
            batch.set_partition_leader_epoch(leader_epoch);
            if log_append_time {
                batch.set_max_timestamp(TimestampType::LogAppendTime, now_ms);
            }
            offset += i64::from(batch.last_offset_delta()) + 1;
        }
        debug_assert_eq!(offset, next);
        let checked = describe(records.freeze())?;
        let mut info = self.append_checked(checked, true, now_ms)?;
        if log_append_time {
            info.log_append_time = now_ms;
        }
        Ok(info)
    }

    /// Appends batches fetched from the leader, offsets and epochs as the leader assigned
    /// them: each batch must be sound (framing, CRC), start exactly at the log end offset
    /// (then right after the previous batch), and carry an epoch no lower than the log's
    /// latest. A partial batch at the end of `records` (a fetch response cut at its size
    /// limit) is ignored; everything before it is appended. Batches are split across
    /// segments as `segment.bytes` requires. On error nothing is appended.
    pub fn append_as_follower(&mut self, records: Bytes, now_ms: i64) -> Result<AppendInfo> {
        let mut expected = self.log_end_offset;
        let mut epoch = self.epoch_cache.latest_epoch().unwrap_or(i32::MIN);
        let mut valid_len = 0;
        for batch in Batches::new(records.clone()) {
            let batch = match batch {
                Ok(b) => b,
                Err(e) if e.is_partial_batch() => break,
                Err(source) => {
                    return Err(LogError::InvalidBatch {
                        position: source_position(&source),
                        source,
                    })
                }
            };
            let position = batch.position();
            batch
                .validate_crc()
                .map_err(|source| LogError::InvalidBatch { position, source })?;
            if batch.base_offset() != expected {
                return Err(LogError::NonContiguousOffset {
                    position,
                    expected,
                    found: batch.base_offset(),
                });
            }
            if batch.last_offset_delta() < 0 {
                return Err(LogError::InconsistentRecordCount {
                    position,
                    record_count: batch.record_count(),
                    last_offset_delta: batch.last_offset_delta(),
                });
            }
            if batch
                .base_offset()
                .checked_add(i64::from(batch.last_offset_delta()) + 1)
                .is_none()
            {
                return Err(LogError::OffsetOverflow {
                    reason: format!("batch at byte {position} ends past i64::MAX"),
                });
            }
            if batch.partition_leader_epoch() < epoch {
                return Err(LogError::EpochDecreased {
                    epoch: batch.partition_leader_epoch(),
                    latest_epoch: epoch,
                });
            }
            if batch.size_in_bytes() > self.config.max_message_bytes {
                return Err(LogError::RecordTooLarge {
                    position,
                    size: batch.size_in_bytes(),
                    max_message_bytes: self.config.max_message_bytes,
                });
            }
            epoch = batch.partition_leader_epoch();
            expected = batch.next_offset();
            valid_len = position + batch.size_in_bytes();
        }
        let checked = describe(records.slice(..valid_len))?;
        self.append_checked(checked, false, now_ms)
    }

    /// Stores checked batches: rolls as needed, records new epochs (before the data, so
    /// a crash never leaves data whose epoch the cache lacks), writes, applies the flush
    /// policy.
    fn append_checked(
        &mut self,
        checked: Checked,
        one_segment: bool,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        let first_offset = self.log_end_offset;
        let Some(last) = checked.batches.last().copied() else {
            return Ok(AppendInfo {
                first_offset,
                last_offset: first_offset - 1,
                log_append_time: NO_TIMESTAMP,
                max_timestamp: NO_TIMESTAMP,
                batch_count: 0,
                size_in_bytes: 0,
            });
        };
        debug_assert_eq!(checked.batches[0].base_offset, first_offset);
        let runs = self.plan_runs(&checked, one_segment, now_ms)?;
        // Epochs first.
        for b in &checked.batches {
            if self.epoch_cache.latest_epoch().is_none_or(|l| b.epoch > l) && b.epoch >= 0 {
                self.epoch_cache.assign(b.epoch, b.base_offset)?;
            }
        }
        for run in &runs {
            let (s, e) = (run.start, run.end);
            let first = checked.batches[s];
            if run.roll_first {
                self.roll()?;
            }
            let from = first.position as usize;
            let to = (checked.batches[e - 1].position + checked.batches[e - 1].size) as usize;
            let infos: Vec<BatchInfo> = checked.batches[s..e]
                .iter()
                .map(|b| BatchInfo {
                    position: b.position - first.position,
                    ..*b
                })
                .collect();
            if let Err(err) = self
                .active_mut()
                .append(&checked.data[from..to], &infos, now_ms)
            {
                self.log_end_offset = self.active().next_offset();
                let _ = self.epoch_cache.truncate_from_end(self.log_end_offset);
                return Err(err);
            }
            self.log_end_offset = self.active().next_offset();
        }
        debug_assert_eq!(self.log_end_offset, last.last_offset + 1);
        self.unflushed_records = self.unflushed_records.saturating_add(checked.record_count);
        self.maybe_flush(now_ms)?;
        Ok(AppendInfo {
            first_offset,
            last_offset: last.last_offset,
            log_append_time: NO_TIMESTAMP,
            max_timestamp: checked
                .batches
                .iter()
                .map(|b| b.max_timestamp)
                .max()
                .unwrap_or(NO_TIMESTAMP),
            batch_count: checked.batches.len(),
            size_in_bytes: checked.data.len(),
        })
    }

    /// Splits an append into runs of consecutive batches, each going whole into one
    /// segment, and says which runs start a new segment: the active segment is rolled when
    /// it is old (`segment.ms`), its index is full (`segment.index.bytes`), the run would
    /// push it past `segment.bytes`, or its offsets would not fit the index's `u32`
    /// relative offsets. With `one_segment` (a leader append, as Kafka) the whole append
    /// is one run, or [`LogError::AppendTooLarge`].
    fn plan_runs(&self, checked: &Checked, one_segment: bool, now_ms: i64) -> Result<Vec<Run>> {
        let active = self.active();
        let max_relative = i64::from(i32::MAX);
        let segment_bytes = self.config.segment_bytes;
        let mut roll_next = !active.is_empty()
            && (active.offset_index_bytes() + 8 > self.config.segment_index_bytes
                || active
                    .rolling_base_ms()
                    .is_some_and(|t| now_ms.saturating_sub(t) > self.config.segment_ms));
        let (mut seg_base, mut seg_size) = (active.base_offset(), active.size());
        let overflow = |b: &BatchInfo| LogError::OffsetOverflow {
            reason: format!(
                "offsets {}..={} cannot be indexed in one segment",
                b.base_offset, b.last_offset
            ),
        };
        if one_segment {
            let (Some(first), Some(last)) = (checked.batches.first(), checked.batches.last())
            else {
                return Ok(Vec::new());
            };
            let total = checked.data.len() as u64;
            if total > segment_bytes {
                return Err(LogError::AppendTooLarge {
                    size: checked.data.len(),
                    segment_bytes,
                });
            }
            let roll_first = seg_size > 0
                && (roll_next
                    || seg_size + total > segment_bytes
                    || last.last_offset - seg_base > max_relative);
            if roll_first {
                seg_base = first.base_offset;
            }
            if last.last_offset - seg_base > max_relative {
                return Err(overflow(last));
            }
            return Ok(vec![Run {
                start: 0,
                end: checked.batches.len(),
                roll_first,
            }]);
        }
        let mut runs: Vec<Run> = Vec::new();
        for (i, b) in checked.batches.iter().enumerate() {
            let roll = seg_size > 0
                && (roll_next
                    || seg_size + b.size > segment_bytes
                    || b.last_offset - seg_base > max_relative);
            if roll {
                seg_base = b.base_offset;
                seg_size = 0;
                roll_next = false;
            }
            if b.last_offset - seg_base > max_relative {
                return Err(overflow(b));
            }
            match runs.last_mut() {
                Some(run) if !roll => run.end = i + 1,
                _ => runs.push(Run {
                    start: i,
                    end: i + 1,
                    roll_first: roll,
                }),
            }
            seg_size += b.size;
        }
        Ok(runs)
    }

    /// Starts a new active segment at the log end offset, sealing (flushing) the current
    /// one. Does nothing when the active segment is empty.
    pub fn roll(&mut self) -> Result<()> {
        if self.active().is_empty() {
            return Ok(());
        }
        self.active_mut().seal()?;
        self.active_mut().release()?;
        self.flushed_offset = self.log_end_offset;
        self.unflushed_records = 0;
        let seg = Segment::create(
            &self.dir,
            self.log_end_offset,
            self.config.index_interval_bytes,
            &self.files,
        )?;
        self.segments.insert(self.log_end_offset, seg);
        fsutil::sync_dir(&self.dir)?;
        self.stats.segments_rolled += 1;
        tracing::debug!(dir = %self.dir.display(), base_offset = self.log_end_offset, "rolled segment");
        Ok(())
    }

    /// Applies the flush policy (`flush.messages`, `flush.ms`): flushes if enough records
    /// or enough time have accumulated since the last flush. Appends call it; the owner
    /// also calls it from a periodic tick so `flush.ms` holds for an idle log. Returns
    /// whether it flushed.
    pub fn maybe_flush(&mut self, now_ms: i64) -> Result<bool> {
        if self.flushed_offset >= self.log_end_offset {
            self.last_flush_ms = now_ms;
            return Ok(false);
        }
        if self.unflushed_records >= self.config.flush_messages
            || now_ms.saturating_sub(self.last_flush_ms) >= self.config.flush_ms
        {
            self.flush()?;
            self.last_flush_ms = now_ms;
            return Ok(true);
        }
        Ok(false)
    }

    /// fdatasyncs the active segment (older ones were flushed when rolled) and advances
    /// [`Log::flushed_offset`] to the log end offset.
    pub fn flush(&mut self) -> Result<()> {
        if self.flushed_offset >= self.log_end_offset {
            return Ok(());
        }
        self.active().flush()?;
        self.flushed_offset = self.log_end_offset;
        self.unflushed_records = 0;
        self.stats.flushes += 1;
        Ok(())
    }

    /// [`Log::flush`] in two halves, so the fdatasync can run on another thread while the
    /// owner keeps appending and reading: plan it here (no I/O), run
    /// [`PendingFlush::execute`] anywhere, then [`Log::complete_flush`]. Older segments
    /// were synced when the log rolled past them, so only the active one is synced, as
    /// [`Log::flush`] does.
    pub fn plan_flush(&self) -> PendingFlush {
        let active = self.active();
        PendingFlush {
            file: (self.flushed_offset < self.log_end_offset)
                .then(|| active.sync_handle())
                .flatten(),
            path: active.log_path().to_path_buf(),
            offset: self.log_end_offset,
            generation: self.truncations.load(Ordering::SeqCst),
            truncations: Arc::clone(&self.truncations),
        }
    }

    /// Takes the result of a [`PendingFlush`] planned on this log: advances
    /// [`Log::flushed_offset`] to its offset, unless the log was truncated since it was
    /// planned (the data it synced may be gone, and what replaced it unsynced) or it came
    /// from another log; then nothing changes. Returns the flushed offset.
    pub fn complete_flush(&mut self, done: CompletedFlush) -> i64 {
        let same_log = Arc::ptr_eq(&done.truncations, &self.truncations);
        if same_log
            && self.truncations.load(Ordering::SeqCst) == done.generation
            && done.offset > self.flushed_offset
            && done.offset <= self.log_end_offset
        {
            self.flushed_offset = done.offset;
            if self.flushed_offset >= self.log_end_offset {
                self.unflushed_records = 0;
            }
            self.stats.flushes += 1;
        }
        self.flushed_offset
    }

    /// Reads whole batches from the one holding `start_offset`, up to `max_bytes` (but at
    /// least one batch, as Kafka does, so a large batch never stalls a consumer) and only
    /// batches entirely below `upper_bound_offset` (the high watermark for consumers, the
    /// log end offset for replicas). Reads stay within one segment, as Kafka's do, and
    /// `max_bytes` is capped at [`MAX_READ_BYTES`](crate::config::MAX_READ_BYTES).
    /// Reading below the log start offset or past the log end offset is
    /// [`LogError::OffsetOutOfRange`]; reading at the log end offset returns nothing.
    ///
    /// Same as [`Log::plan_read`] then [`PendingRead::execute`]; a reader sharing the log
    /// with a writer plans under the lock and executes after releasing it.
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: usize,
        upper_bound_offset: i64,
    ) -> Result<ReadResult> {
        self.plan_read(start_offset, max_bytes, upper_bound_offset)?
            .execute()
    }

    /// The part of [`Log::read`] that needs the log: range checks and an index lookup.
    /// The returned [`PendingRead`] does the file reading without borrowing the log, so a
    /// reader holds the owner's lock only for this call and the writer is never blocked
    /// for longer than an index lookup.
    pub fn plan_read(
        &self,
        start_offset: i64,
        max_bytes: usize,
        upper_bound_offset: i64,
    ) -> Result<PendingRead> {
        let log_start_offset = self.log_start_offset();
        if start_offset < log_start_offset || start_offset > self.log_end_offset {
            return Err(LogError::OffsetOutOfRange {
                offset: start_offset,
                log_start_offset,
                log_end_offset: self.log_end_offset,
            });
        }
        let upper_bound = upper_bound_offset.min(self.log_end_offset);
        // Offsets are contiguous across segments, so the segment whose base is the floor
        // of `start_offset` holds it.
        let region = if start_offset < upper_bound {
            self.segments
                .range(..=start_offset)
                .next_back()
                .map(|(_, seg)| seg)
                .filter(|seg| start_offset < seg.next_offset())
                .map(|seg| seg.region(start_offset))
        } else {
            None
        };
        Ok(PendingRead {
            region,
            start_offset,
            max_bytes: max_bytes.min(MAX_READ_BYTES),
            upper_bound,
            log_start_offset,
            log_end_offset: self.log_end_offset,
            generation: self.truncations.load(Ordering::SeqCst),
            truncations: Arc::clone(&self.truncations),
        })
    }

    /// The largest timestamp in the log and the offset of the batch carrying it, `None`
    /// for a log without timestamps (ListOffsets' MAX_TIMESTAMP, KIP-734).
    pub fn max_timestamp_and_offset(&self) -> Result<Option<(i64, i64)>> {
        Ok(self
            .segments
            .values()
            .filter(|s| !s.is_empty() && s.max_timestamp() >= 0)
            .map(|s| (s.max_timestamp(), s.offset_of_max_timestamp()))
            .fold(None, |best: Option<(i64, i64)>, c| match best {
                Some(b) if b.0 >= c.0 => Some(b),
                _ => Some(c),
            }))
    }

    /// The first record with a timestamp ≥ `timestamp`, as (offset, timestamp): ListOffsets
    /// by time. Searches the first segment whose largest timestamp reaches `timestamp`,
    /// through its time index.
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<(i64, i64)>> {
        let min_offset = self.log_start_offset();
        for seg in self.segments.values() {
            if seg.max_timestamp() < timestamp {
                continue;
            }
            if let Some(found) = seg.find_offset_by_timestamp(timestamp, min_offset)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// Removes every batch from the one holding `offset` on (the follower's divergence
    /// path, KIP-101/279). A batch straddling `offset` is removed whole, so the log end
    /// offset may end below `offset`. Offsets at or past the log end remove no batch, only
    /// epochs assigned at or after `offset` with nothing written in them; an offset below
    /// the log start empties the log to start there (as Kafka does).
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        if offset >= self.log_end_offset {
            // No batch goes, but an epoch a leader assigned at the log end before writing
            // anything (`assign_epoch_start_offset`) does when `offset` is the log end: it
            // describes no data, and a follower must not keep it (its next fetch would name
            // an epoch it holds nothing of, and the leader's older batches could not follow).
            return self.epoch_cache.truncate_from_end(offset);
        }
        if offset < self.log_start_offset() {
            return self.truncate_fully_and_start_at(offset);
        }
        self.truncations.fetch_add(1, Ordering::SeqCst);
        // Newest first, so a crash midway leaves a log without gaps.
        let doomed: Vec<i64> = self.segments.range(offset + 1..).map(|(&b, _)| b).collect();
        let removed_segments = !doomed.is_empty();
        for base in doomed.into_iter().rev() {
            if let Some(seg) = self.segments.remove(&base) {
                seg.delete()?;
            }
        }
        if self.segments.is_empty() {
            unreachable!("the segment holding offset {offset} >= log start is kept");
        }
        self.active_mut().truncate_to(offset)?;
        if removed_segments {
            fsutil::sync_dir(&self.dir)?;
        }
        self.log_end_offset = self.active().next_offset();
        self.flushed_offset = self.flushed_offset.min(self.log_end_offset);
        self.epoch_cache.truncate_from_end(self.log_end_offset)?;
        // A batch straddling the log start was removed whole: the log start follows the
        // end down (Kafka's `min(targetOffset, logStartOffset)`).
        if self.log_start_offset > self.log_end_offset {
            self.log_start_offset = self.log_end_offset;
            write_log_start_offset(&self.dir, self.log_start_offset)?;
        }
        Ok(())
    }

    /// Empties the log and restarts it at `offset` (after installing a snapshot whose end
    /// offset is `offset`). Snapshots are kept; the leader-epoch cache is cleared.
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<()> {
        if offset < 0 {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset(),
                log_end_offset: self.log_end_offset,
            });
        }
        self.truncations.fetch_add(1, Ordering::SeqCst);
        // The stored log start goes first: a crash after it leaves the old log with its
        // first segment's base as the start, never a start above the new log's end.
        if fsutil::remove_if_exists(&self.dir.join(LOG_START_OFFSET_FILE))? {
            fsutil::sync_dir(&self.dir)?;
        }
        // Rename the old segments away oldest first (each state a valid log), then create
        // the new one, then delete the renamed files: a crash at any point leaves a log
        // open() accepts.
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let mut renamed = Vec::new();
        for base in bases {
            if let Some(mut seg) = self.segments.remove(&base) {
                let path = seg.log_path().to_path_buf();
                seg.close_files();
                drop(seg);
                let mut target = path.clone().into_os_string();
                target.push(DELETED_SUFFIX);
                std::fs::rename(&path, &target).map_err(LogError::io("rename", &path))?;
                renamed.push(PathBuf::from(target));
                for suffix in [INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX] {
                    fsutil::remove_if_exists(&self.dir.join(file_name(base, suffix)))?;
                }
            }
        }
        fsutil::sync_dir(&self.dir)?;
        let seg = Segment::create(
            &self.dir,
            offset,
            self.config.index_interval_bytes,
            &self.files,
        )?;
        self.segments.insert(offset, seg);
        fsutil::sync_dir(&self.dir)?;
        for path in renamed {
            fsutil::remove_if_exists(&path)?;
        }
        self.log_end_offset = offset;
        self.log_start_offset = offset;
        self.flushed_offset = offset;
        self.unflushed_records = 0;
        self.epoch_cache.clear()?;
        Ok(())
    }

    /// Deletes whole segments that lie entirely below `offset`, never the active one
    /// (the metadata log calls this after a snapshot at `offset`). Returns how many.
    pub fn delete_segments_before(&mut self, offset: i64) -> Result<usize> {
        let active_base = self.active().base_offset();
        let doomed: Vec<i64> = self
            .segments
            .iter()
            .filter(|(&b, s)| b != active_base && s.next_offset() <= offset)
            .map(|(&b, _)| b)
            .collect();
        self.delete_oldest(doomed)
    }

    /// Applies `retention.ms` then `retention.bytes`, deleting whole segments oldest first,
    /// and only segments entirely below `upper_bound_offset` (the high watermark: nothing
    /// uncommitted is deleted). An expired active segment is rolled first, as Kafka does.
    /// Segments without timestamps are not deleted by time. Returns how many segments were
    /// deleted.
    pub fn apply_retention(&mut self, now_ms: i64, upper_bound_offset: i64) -> Result<usize> {
        // Segments entirely below the log start go first, whatever the limits (Kafka's
        // `deleteLogStartOffsetBreachedSegments`).
        let mut deleted = self.delete_segments_below_log_start()?;
        if self.config.retention_ms >= 0 {
            let retention_ms = self.config.retention_ms;
            let expired = move |s: &Segment| {
                s.max_timestamp() >= 0 && now_ms.saturating_sub(s.max_timestamp()) > retention_ms
            };
            let active = self.active();
            if !active.is_empty()
                && active.next_offset() <= upper_bound_offset
                && expired(active)
                && self.segments.values().all(|s| s.is_empty() || expired(s))
            {
                self.roll()?;
            }
            let active_base = self.active().base_offset();
            let doomed: Vec<i64> = self
                .segments
                .iter()
                .take_while(|(&b, s)| {
                    b != active_base && s.next_offset() <= upper_bound_offset && expired(s)
                })
                .map(|(&b, _)| b)
                .collect();
            deleted += self.delete_oldest(doomed)?;
        }
        if self.config.retention_bytes >= 0 {
            let mut excess = self.size_in_bytes() as i64 - self.config.retention_bytes;
            let active_base = self.active().base_offset();
            let mut doomed = Vec::new();
            for (&b, s) in &self.segments {
                if b == active_base
                    || s.next_offset() > upper_bound_offset
                    || (s.size() as i64) > excess
                {
                    break;
                }
                excess -= s.size() as i64;
                doomed.push(b);
            }
            deleted += self.delete_oldest(doomed)?;
        }
        Ok(deleted)
    }

    fn delete_oldest(&mut self, doomed: Vec<i64>) -> Result<usize> {
        if doomed.is_empty() {
            return Ok(0);
        }
        let n = doomed.len();
        for base in doomed {
            if let Some(seg) = self.segments.remove(&base) {
                debug_assert!(!self.segments.is_empty());
                seg.delete()?;
                self.stats.segments_deleted += 1;
            }
        }
        fsutil::sync_dir(&self.dir)?;
        let first_base = *self
            .segments
            .keys()
            .next()
            .expect("the active segment is never deleted");
        self.log_start_offset = self.log_start_offset.max(first_base);
        let start = self.log_start_offset;
        // Entries always describe batches in the log: the epoch in force at the new start
        // now starts there, and an emptied log keeps none (a partition leader assigns its
        // epoch again after retention).
        self.epoch_cache.truncate_from_start(start)?;
        self.epoch_cache.truncate_from_end(self.log_end_offset)?;
        tracing::info!(dir = %self.dir.display(), segments = n, log_start_offset = start, "deleted segments");
        Ok(n)
    }

    /// Moves the log start offset forward to `new_start` (Kafka's
    /// `maybeIncrementLogStartOffset`: DeleteRecords on the leader, a follower following
    /// the leader's start). Never backward (returns `false`, nothing changes), never past
    /// `high_watermark` nor the log end offset ([`LogError::OffsetOutOfRange`]). Persists
    /// the new start (see the module docs) before reporting it, then truncates the
    /// leader-epoch cache from the start, as Kafka does, and deletes the segments now
    /// entirely below it (never the active one). Reads below it are then out of range.
    pub fn maybe_increment_log_start_offset(
        &mut self,
        new_start: i64,
        high_watermark: i64,
    ) -> Result<bool> {
        if new_start > high_watermark.min(self.log_end_offset) {
            return Err(LogError::OffsetOutOfRange {
                offset: new_start,
                log_start_offset: self.log_start_offset,
                log_end_offset: high_watermark.min(self.log_end_offset),
            });
        }
        if new_start <= self.log_start_offset {
            return Ok(false);
        }
        write_log_start_offset(&self.dir, new_start)?;
        self.log_start_offset = new_start;
        // Kafka keeps the epoch in force at the start, starting there; entries starting at
        // the log end go too, as after retention (a leader assigns its epoch again).
        self.epoch_cache.truncate_from_start(new_start)?;
        self.epoch_cache.truncate_from_end(self.log_end_offset)?;
        tracing::info!(dir = %self.dir.display(), log_start_offset = new_start, "incremented log start offset");
        self.delete_segments_below_log_start()?;
        Ok(true)
    }

    /// Deletes the segments entirely below the log start offset, never the active one.
    fn delete_segments_below_log_start(&mut self) -> Result<usize> {
        let active_base = self.active().base_offset();
        let start = self.log_start_offset;
        let doomed: Vec<i64> = self
            .segments
            .iter()
            .take_while(|(&b, s)| b != active_base && s.next_offset() <= start)
            .map(|(&b, _)| b)
            .collect();
        self.delete_oldest(doomed)
    }

    /// Re-reads every segment in full and checks every batch (framing, CRC, offsets). Open
    /// only re-validates the active segment and the tails of the others (they were flushed
    /// when rolled); this is the explicit, full-cost check (an operator's `verify`, a test,
    /// or after a disk error). The first problem is [`LogError::Corrupt`] naming the file
    /// and byte position.
    pub fn verify(&self) -> Result<()> {
        let max_batch_bytes = self.config.max_message_bytes.max(MAX_RECOVERY_BATCH_BYTES);
        for seg in self.segments.values() {
            seg.verify(max_batch_bytes)?;
        }
        Ok(())
    }

    /// Flushes and closes the log. The owner writes the directory's clean-shutdown marker
    /// ([`crate::write_clean_shutdown_marker`]) once every log in it is closed.
    pub fn close(mut self) -> Result<()> {
        self.flush()?;
        self.active_mut().flush_all()
    }

    // ---- Snapshots (KIP-630) ----

    /// Snapshot ids, oldest first.
    pub fn snapshots(&self) -> Vec<SnapshotId> {
        self.snapshots.iter().copied().collect()
    }

    /// The newest snapshot.
    pub fn latest_snapshot(&self) -> Option<SnapshotId> {
        self.snapshots.last().copied()
    }

    /// The oldest snapshot.
    pub fn earliest_snapshot(&self) -> Option<SnapshotId> {
        self.snapshots.first().copied()
    }

    /// Starts writing snapshot `id` (to its `.part` file); commit it with
    /// [`Log::commit_snapshot`].
    pub fn create_snapshot(&self, id: SnapshotId) -> Result<SnapshotWriter> {
        id.check()?;
        if self.snapshots.contains(&id) {
            return Err(LogError::SnapshotExists {
                end_offset: id.end_offset,
                epoch: id.epoch,
            });
        }
        SnapshotWriter::create(&self.dir, id)
    }

    /// Makes a written snapshot durable and visible: fsync, atomic rename, directory fsync.
    pub fn commit_snapshot(&mut self, writer: SnapshotWriter) -> Result<SnapshotId> {
        let id = writer.finish(&self.dir)?;
        self.snapshots.insert(id);
        Ok(id)
    }

    /// Opens snapshot `id` for reading by byte position (FetchSnapshot).
    pub fn open_snapshot(&self, id: SnapshotId) -> Result<SnapshotReader> {
        if !self.snapshots.contains(&id) {
            return Err(LogError::SnapshotNotFound {
                end_offset: id.end_offset,
                epoch: id.epoch,
            });
        }
        SnapshotReader::open(&self.dir, id)
    }

    /// Deletes snapshots whose end offset is below the log start offset, except the newest
    /// one (which a lagging follower may still need). Returns how many.
    pub fn delete_snapshots_before_log_start(&mut self) -> Result<usize> {
        let start = self.log_start_offset();
        let latest = self.latest_snapshot();
        let doomed: Vec<SnapshotId> = self
            .snapshots
            .iter()
            .filter(|id| id.end_offset < start && Some(**id) != latest)
            .copied()
            .collect();
        for id in &doomed {
            fsutil::remove_if_exists(&self.dir.join(id.file_name()))?;
            self.snapshots.remove(id);
        }
        if !doomed.is_empty() {
            fsutil::sync_dir(&self.dir)?;
        }
        Ok(doomed.len())
    }
}

/// Where a batch error happened, for [`LogError::InvalidBatch`].
fn source_position(e: &RecordBatchError) -> usize {
    match e {
        RecordBatchError::Truncated { position, .. }
        | RecordBatchError::PartialBatch { position, .. }
        | RecordBatchError::BatchLengthTooSmall { position, .. }
        | RecordBatchError::TrailingBytes { position, .. }
        | RecordBatchError::UnsupportedMagic { position, .. }
        | RecordBatchError::UnknownCompression { position, .. }
        | RecordBatchError::NegativeRecordCount { position, .. }
        | RecordBatchError::RecordCountImplausible { position, .. }
        | RecordBatchError::CrcMismatch { position, .. } => *position,
        _ => 0,
    }
}

/// Describes already-checked batches (positions within `data`).
fn describe(data: Bytes) -> Result<Checked> {
    let mut batches = Vec::new();
    let mut record_count = 0i64;
    for batch in Batches::new(data.clone()) {
        let batch = batch.map_err(|source| LogError::InvalidBatch {
            position: source_position(&source),
            source,
        })?;
        record_count += i64::from(batch.record_count().max(0));
        batches.push(BatchInfo::of(&batch, batch.position() as u64));
    }
    Ok(Checked {
        data,
        batches,
        record_count,
    })
}

/// Writes [`LOG_START_OFFSET_FILE`] atomically (temp file, fsync, rename, directory
/// fsync) in Kafka's checkpoint text format with one entry: version, count, offset.
fn write_log_start_offset(dir: &Path, offset: i64) -> Result<()> {
    assert!(offset >= 0, "log start offset {offset} is negative");
    let text = format!("{LOG_START_OFFSET_FILE_VERSION}\n1\n{offset}\n");
    fsutil::atomic_write(&dir.join(LOG_START_OFFSET_FILE), text.as_bytes())
}

/// Reads [`LOG_START_OFFSET_FILE`]: `None` when absent; a malformed file is
/// [`LogError::Corrupt`] (it was written atomically, so it is not guessed at).
fn read_log_start_offset(dir: &Path) -> Result<Option<i64>> {
    let path = dir.join(LOG_START_OFFSET_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LogError::io("read", &path)(e)),
    };
    let lines: Vec<&str> = text.lines().collect();
    let parsed = match lines.as_slice() {
        [version, count, offset] => (
            version.trim().parse::<i32>().ok(),
            count.trim().parse::<i32>().ok(),
            offset.trim().parse::<i64>().ok(),
        ),
        _ => (None, None, None),
    };
    match parsed {
        (Some(LOG_START_OFFSET_FILE_VERSION), Some(1), Some(offset)) if offset >= 0 => {
            Ok(Some(offset))
        }
        _ => Err(LogError::corrupt(
            &path,
            0,
            format!("expected \"{LOG_START_OFFSET_FILE_VERSION}\\n1\\n<offset>\", found {text:?}"),
        )),
    }
}

/// `<20 digits>.<suffix>` for the three segment file kinds.
fn parse_segment_file_name(name: &str) -> Option<(i64, &'static str)> {
    let (stem, ext) = name.split_once('.')?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let suffix = [LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX]
        .into_iter()
        .find(|s| *s == ext)?;
    Some((stem.parse().ok()?, suffix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kraftd_protocol::records::RecordBatchBuilder;

    fn batch() -> BytesMut {
        let mut b = RecordBatchBuilder::new(0);
        b.append(0, None, Some(Bytes::from_static(b"value")), Vec::new())
            .unwrap();
        BytesMut::from(&b.build().unwrap()[..])
    }

    fn log(dir: &Path) -> Log {
        let config = LogConfig {
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            ..LogConfig::default()
        };
        Log::open(dir, config, 0).unwrap()
    }

    #[test]
    fn a_flush_on_another_thread_covers_what_was_appended_before_it_was_planned() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = log(dir.path());
        log.append_as_leader(batch(), 1, 0).unwrap();
        log.append_as_leader(batch(), 1, 0).unwrap();
        let pending = log.plan_flush();
        assert_eq!(pending.offset(), 2);
        // Appends go on while the fsync runs; they are not covered.
        log.append_as_leader(batch(), 1, 0).unwrap();
        let done = std::thread::spawn(move || pending.execute())
            .join()
            .unwrap()
            .unwrap();
        assert_eq!(log.flushed_offset(), 0);
        assert_eq!(log.complete_flush(done), 2);
        assert_eq!(log.flushed_offset(), 2);
        // Nothing to sync: the plan syncs nothing and changes nothing.
        log.flush().unwrap();
        let done = log.plan_flush().execute().unwrap();
        assert_eq!(log.complete_flush(done), 3);
    }

    #[test]
    fn a_truncation_meanwhile_voids_the_flush() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = log(dir.path());
        for _ in 0..3 {
            log.append_as_leader(batch(), 1, 0).unwrap();
        }
        let pending = log.plan_flush();
        log.truncate_to(1).unwrap();
        log.append_as_leader(batch(), 2, 0).unwrap();
        log.append_as_leader(batch(), 2, 0).unwrap();
        let done = pending.execute().unwrap();
        assert_eq!(log.complete_flush(done), 0, "the synced data may be gone");

        // A flush planned on another log is ignored.
        let other_dir = tempfile::tempdir().unwrap();
        let mut other = super::tests::log(other_dir.path());
        other.append_as_leader(batch(), 1, 0).unwrap();
        let done = other.plan_flush().execute().unwrap();
        assert_eq!(log.complete_flush(done), 0);
    }
}
