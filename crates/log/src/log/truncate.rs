//! Truncation: removing the log's tail after a divergence ([`Log::truncate_to`], KIP-101/279)
//! and emptying it to restart at an offset ([`Log::truncate_fully_and_start_at`], after a
//! snapshot is installed).

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use super::start_offset::{write_log_start_offset, LOG_START_OFFSET_FILE};
use super::{Log, DELETED_SUFFIX};
use crate::error::{LogError, Result};
use crate::fsutil;
use crate::segment::{
    file_name, Segment, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX,
};

impl Log {
    /// Removes every batch from the one holding `offset` on (the follower's divergence
    /// path, KIP-101/279). A batch straddling `offset` is removed whole, so the log end
    /// offset may end below `offset`. Offsets at or past the log end remove no batch, only
    /// epochs assigned at or after `offset` with nothing written in them; an offset below
    /// the log start empties the log to start there (as Kafka does).
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        let result = self.truncate_to_unreported(offset);
        self.report(result)
    }

    fn truncate_to_unreported(&mut self, offset: i64) -> Result<()> {
        if offset >= self.log_end_offset {
            // No batch goes, but an epoch a leader assigned at the log end before writing
            // anything (`assign_epoch_start_offset`) does when `offset` is the log end: it
            // describes no data, and a follower must not keep it (its next fetch would name
            // an epoch it holds nothing of, and the leader's older batches could not follow).
            self.epoch_cache.drop_from_log_end(offset);
            return Ok(());
        }
        if offset < self.log_start_offset() {
            return self.truncate_fully_and_start_at(offset);
        }
        self.truncations.fetch_add(1, Ordering::SeqCst);
        self.lower_truncated_floor(offset);
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
            if self.offsets.is_none() {
                write_log_start_offset(&self.dir, self.log_start_offset)?;
            }
        }
        self.note_offsets();
        self.reload_producer_state_after_truncation()
    }

    /// The lowest offset truncated to since the last call, if any truncation happened: the
    /// log cleaner lowers its checkpoint to it, so a range written again after a
    /// truncation is not taken for clean.
    pub fn take_truncated_floor(&mut self) -> Option<i64> {
        self.truncated_floor.take()
    }

    fn lower_truncated_floor(&mut self, offset: i64) {
        self.truncated_floor = Some(self.truncated_floor.map_or(offset, |f| f.min(offset)));
    }

    /// Empties the log and restarts it at `offset` (after installing a snapshot whose end
    /// offset is `offset`). Snapshots are kept; the leader-epoch cache is cleared.
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<()> {
        let result = self.truncate_fully_and_start_at_unreported(offset);
        self.report(result)
    }

    fn truncate_fully_and_start_at_unreported(&mut self, offset: i64) -> Result<()> {
        if offset < 0 {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset(),
                log_end_offset: self.log_end_offset,
            });
        }
        self.truncations.fetch_add(1, Ordering::SeqCst);
        self.lower_truncated_floor(offset);
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
                for suffix in [
                    INDEX_FILE_SUFFIX,
                    TIME_INDEX_FILE_SUFFIX,
                    TXN_INDEX_FILE_SUFFIX,
                ] {
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
        self.note_offsets();
        self.epoch_cache.clear()?;
        self.reload_producer_state_after_truncation()
    }
}
