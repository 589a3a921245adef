//! The log start offset (see the module docs of [`super`]): moving it forward
//! ([`Log::maybe_increment_log_start_offset`], DeleteRecords) and its file,
//! [`LOG_START_OFFSET_FILE`].

use std::path::Path;

use super::Log;
use crate::error::{LogError, Result};
use crate::fsutil;

/// The file holding a log start offset above the first segment's base offset (see the
/// module docs); absent when the first segment's base offset is the log start.
pub const LOG_START_OFFSET_FILE: &str = "log-start-offset";
/// The version line of [`LOG_START_OFFSET_FILE`], as in Kafka's checkpoint files.
const LOG_START_OFFSET_FILE_VERSION: i32 = 0;

impl Log {
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
        let result = self.maybe_increment_log_start_offset_unreported(new_start, high_watermark);
        self.report(result)
    }

    fn maybe_increment_log_start_offset_unreported(
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
        if self.offsets.is_none() {
            write_log_start_offset(&self.dir, new_start)?;
        }
        self.log_start_offset = new_start;
        self.note_offsets();
        // Kafka keeps the epoch in force at the start, starting there; entries starting at
        // the log end go too, as after retention (a leader assigns its epoch again).
        self.epoch_cache.truncate_from_start(new_start)?;
        self.epoch_cache.truncate_from_end(self.log_end_offset)?;
        tracing::info!(dir = %self.dir.display(), log_start_offset = new_start, "incremented log start offset");
        self.delete_segments_below_log_start()?;
        Ok(true)
    }
}

/// Writes [`LOG_START_OFFSET_FILE`] atomically (temp file, fsync, rename, directory
/// fsync) in Kafka's checkpoint text format with one entry: version, count, offset.
pub(super) fn write_log_start_offset(dir: &Path, offset: i64) -> Result<()> {
    assert!(offset >= 0, "log start offset {offset} is negative");
    let text = format!("{LOG_START_OFFSET_FILE_VERSION}\n1\n{offset}\n");
    fsutil::atomic_write(&dir.join(LOG_START_OFFSET_FILE), text.as_bytes())
}

/// Reads [`LOG_START_OFFSET_FILE`]: `None` when absent; a malformed file is
/// [`LogError::Corrupt`] (it was written atomically, so it is not guessed at).
pub(super) fn read_log_start_offset(dir: &Path) -> Result<Option<i64>> {
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
