//! Opening a log (Kafka's `LogLoader`): leftovers of interrupted operations removed, sealed
//! segments loaded, the active one recovered (or, after a clean shutdown, trusted), the
//! leader-epoch cache and the stored log start offset reconciled with what was kept; and the
//! other end of a log's life, [`Log::close`], with the full-cost [`Log::verify`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::start_offset::read_log_start_offset;
use super::{Log, LogStats, DELETED_SUFFIX};
use crate::config::LogConfig;
use crate::epoch::LeaderEpochCache;
use crate::error::{LogError, Result};
use crate::fsutil;
use crate::handles::SegmentFiles;
use crate::segment::{
    Segment, INDEX_FILE_SUFFIX, LOG_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX,
};
use crate::snapshot::{SnapshotId, PARTIAL_SNAPSHOT_SUFFIX};

/// The largest batch recovery will believe in, whatever `max.message.bytes` says: a
/// corrupt length field must not make recovery allocate gigabytes.
const MAX_RECOVERY_BATCH_BYTES: usize = 64 * 1024 * 1024;

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
        Self::open_inner(dir, config, now_ms, Recovery::Full)
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
        Self::open_inner(dir, config, now_ms, Recovery::Clean)
    }

    /// [`Log::open`] after an unclean shutdown for a log whose owner checkpointed
    /// `recovery_point` (Kafka's `recovery-point-offset-checkpoint`: every offset below it
    /// was flushed). Sealed segments were flushed when rolled; the active one is loaded as
    /// after a clean shutdown when it ends exactly at the recovery point (nothing was
    /// appended since it was last flushed: there is nothing to recover), and re-validated
    /// whole otherwise. So an unclean restart reads the segments of the partitions that
    /// took writes since their last flush, not of every partition.
    pub fn open_from_recovery_point(
        dir: &Path,
        config: LogConfig,
        now_ms: i64,
        recovery_point: i64,
    ) -> Result<Log> {
        Self::open_inner(dir, config, now_ms, Recovery::From(recovery_point))
    }

    fn open_inner(dir: &Path, config: LogConfig, now_ms: i64, recovery: Recovery) -> Result<Log> {
        let mut log = Self::open_segments(dir, config, now_ms, recovery)?;
        let Some(stored) = read_log_start_offset(dir)? else {
            return Ok(log);
        };
        log.legacy_start_file = true;
        log.restore_log_start_offset(stored)?;
        Ok(log)
    }

    /// Takes a log start offset kept outside the log (the log dir's
    /// `log-start-offset-checkpoint`, or the `log-start-offset` file older kraftd wrote):
    /// one not above the first segment's base offset changes nothing; one above the log end
    /// offset (recovery cut past it) empties the log to start there, as Kafka's `LogLoader`
    /// does.
    pub fn restore_log_start_offset(&mut self, stored: i64) -> Result<()> {
        if stored > self.log_end_offset {
            // Recovery cut the log below a start offset already acknowledged (or segment
            // files were lost): start empty there, as Kafka's LogLoader does.
            tracing::warn!(
                dir = %self.dir.display(),
                log_start_offset = stored,
                log_end_offset = self.log_end_offset,
                "log end offset below the stored log start offset; emptying the log"
            );
            self.truncate_fully_and_start_at(stored)?;
        } else if stored > self.log_start_offset {
            self.log_start_offset = stored;
            self.epoch_cache.truncate_from_start(stored)?;
            self.epoch_cache.truncate_from_end(self.log_end_offset)?;
            // A crash may have come between persisting the start and deleting below it.
            self.delete_segments_below_log_start()?;
            self.note_offsets();
        }
        Ok(())
    }

    fn open_segments(
        dir: &Path,
        config: LogConfig,
        now_ms: i64,
        recovery: Recovery,
    ) -> Result<Log> {
        config.validate()?;
        std::fs::create_dir_all(dir).map_err(LogError::io("create directory", dir))?;
        // A clean's swap interrupted by a crash is finished or undone first.
        let mut removed_any = super::clean::recover_interrupted_swaps(dir)?;
        let mut bases = BTreeSet::new();
        let mut snapshots = BTreeSet::new();
        let mut index_files = Vec::new();
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
            // A new log has no checkpoint to clear (nothing written, no fsync).
            if !epoch_cache.entries().is_empty() {
                epoch_cache.clear()?;
            }
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
                truncated_floor: None,
                files,
                producers: Log::new_producer_state(dir),
                producers_loaded: false,
                offsets: None,
                legacy_start_file: false,
                failure: None,
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
        let trust_active = match recovery {
            Recovery::Full => false,
            Recovery::Clean => true,
            Recovery::From(point) => point >= active_base,
        };
        let clean_active = if trust_active {
            match Segment::open_existing(
                dir,
                active_base,
                config.index_interval_bytes,
                max_batch_bytes,
                &files,
            ) {
                Ok((seg, _)) if matches!(recovery, Recovery::From(p) if p != seg.next_offset()) => {
                    // Written past (or truncated below) the recovery point since the last
                    // flush: recover it whole.
                    drop(seg);
                    None
                }
                Ok((mut seg, rebuilt)) => {
                    stats.index_rebuilds += u64::from(rebuilt);
                    seg.start_rolling_clock()?;
                    Some(seg)
                }
                Err(e @ LogError::Corrupt { .. }) => {
                    // Trusted either after a clean shutdown or up to a recovery point (a
                    // kill -9 lands here too): say which the file let down.
                    let expected = match recovery {
                        Recovery::From(point) => {
                            format!("to end at the recovery point {point} (an unclean stop)")
                        }
                        _ => "to be sound after a clean shutdown".to_string(),
                    };
                    tracing::warn!(
                        error = %e,
                        "active segment at {active_base} was expected {expected} but is corrupt; recovering it"
                    );
                    None
                }
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        let (mut active, report) = match clean_active {
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
                    config.allows_offset_gaps(),
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
        // truncation renames away oldest first, a clean keeps each cleaned segment's last
        // batch, even emptied, so it ends where the segments it replaced ended), so a gap
        // means lost files. Within a segment compaction leaves gaps between batches.
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
        epoch_cache.drop_from_log_end(log_end_offset);
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
            truncated_floor: None,
            files,
            producers: Log::new_producer_state(dir),
            producers_loaded: false,
            offsets: None,
            legacy_start_file: false,
            failure: None,
        })
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
}

/// How much of a log [`Log::open_inner`] re-validates.
#[derive(Debug, Clone, Copy)]
enum Recovery {
    /// The active segment, whole (an unclean shutdown, nothing known).
    Full,
    /// Nothing but the tails past the last index entries (a clean shutdown).
    Clean,
    /// The active segment unless it ends at this recovery point.
    From(i64),
}

/// `<20 digits>.<suffix>` for the three segment file kinds.
fn parse_segment_file_name(name: &str) -> Option<(i64, &'static str)> {
    let (stem, ext) = name.split_once('.')?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let suffix = [
        LOG_FILE_SUFFIX,
        INDEX_FILE_SUFFIX,
        TIME_INDEX_FILE_SUFFIX,
        TXN_INDEX_FILE_SUFFIX,
    ]
    .into_iter()
    .find(|s| *s == ext)?;
    Some((stem.parse().ok()?, suffix))
}
