//! Rolling to a new segment and flushing: the `flush.messages` / `flush.ms` policy,
//! [`Log::flush`], and a flush in two halves ([`PendingFlush`], [`CompletedFlush`]) so the
//! fdatasync can run on another thread.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{report_to, Log};
use crate::error::{LogError, Result};
use crate::fsutil;
use crate::log_dir_failure::LogDirFailureChannel;
use crate::segment::Segment;

/// A flush planned by [`Log::plan_flush`] to run on another thread: the fdatasync of the
/// active segment's `.log` (the handle is shared, so it outlives a roll or deletion) up to
/// the log end offset at planning time. [`PendingFlush::execute`] it anywhere, then hand
/// the [`CompletedFlush`] back to [`Log::complete_flush`], which advances
/// [`Log::flushed_offset`] only if no truncation happened in between. Appends may go on
/// meanwhile: what they add is simply not covered.
#[derive(Debug)]
pub struct PendingFlush {
    /// The pooled handle when planned; `None` with `needed`: open `path` to sync.
    file: Option<Arc<File>>,
    needed: bool,
    path: PathBuf,
    offset: i64,
    generation: u64,
    truncations: Arc<AtomicU64>,
    /// Where an I/O error of the fdatasync takes the log's dir offline (the channel, the
    /// log's directory).
    failure: Option<(Arc<LogDirFailureChannel>, PathBuf)>,
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

    /// Does the fdatasync; blocking, so run it off the async runtime's worker threads. An
    /// I/O error takes the log's dir offline.
    pub fn execute(mut self) -> Result<CompletedFlush> {
        let failure = self.failure.take();
        let result = self.execute_unreported();
        match &failure {
            Some((channel, dir)) => report_to(Some(channel), dir, result),
            None => result,
        }
    }

    fn execute_unreported(self) -> Result<CompletedFlush> {
        let file = match self.file {
            Some(file) => Some(file),
            // Closed while idle since the write: any handle's sync flushes the file.
            None if self.needed => Some(Arc::new(
                File::open(&self.path).map_err(LogError::io("open", &self.path))?,
            )),
            None => None,
        };
        if let Some(file) = &file {
            crate::flush_timer::timed(|| file.sync_data())
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

impl Log {
    /// Starts a new active segment at the log end offset, sealing (flushing) the current
    /// one. Does nothing when the active segment is empty.
    pub fn roll(&mut self) -> Result<()> {
        let result = self.roll_unreported();
        self.report(result)
    }

    fn roll_unreported(&mut self) -> Result<()> {
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
        self.note_offsets();
        tracing::debug!(dir = %self.dir.display(), base_offset = self.log_end_offset, "rolled segment");
        Ok(())
    }

    /// Applies the flush policy (`flush.messages`, `flush.ms`): flushes if enough records
    /// or enough time have accumulated since the last flush. Appends call it; the owner
    /// also calls it from a periodic tick so `flush.ms` holds for an idle log. Returns
    /// whether it flushed.
    pub fn maybe_flush(&mut self, now_ms: i64) -> Result<bool> {
        let result = self.maybe_flush_unreported(now_ms);
        self.report(result)
    }

    fn maybe_flush_unreported(&mut self, now_ms: i64) -> Result<bool> {
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
        let result = self.flush_unreported();
        self.report(result)
    }

    fn flush_unreported(&mut self) -> Result<()> {
        if self.flushed_offset >= self.log_end_offset {
            return Ok(());
        }
        self.active_mut().flush()?;
        self.flushed_offset = self.log_end_offset;
        self.unflushed_records = 0;
        self.stats.flushes += 1;
        self.note_offsets();
        Ok(())
    }

    /// [`Log::flush`] in two halves, so the fdatasync can run on another thread while the
    /// owner keeps appending and reading: plan it here (no I/O), run
    /// [`PendingFlush::execute`] anywhere, then [`Log::complete_flush`]. Older segments
    /// were synced when the log rolled past them, so only the active one is synced, as
    /// [`Log::flush`] does.
    pub fn plan_flush(&self) -> PendingFlush {
        let active = self.active();
        let needed = self.flushed_offset < self.log_end_offset;
        PendingFlush {
            file: needed.then(|| active.sync_handle()).flatten(),
            needed,
            path: active.log_path().to_path_buf(),
            offset: self.log_end_offset,
            generation: self.truncations.load(Ordering::SeqCst),
            truncations: Arc::clone(&self.truncations),
            failure: self.failure_target(),
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
            self.note_offsets();
        }
        self.flushed_offset
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use bytes::{Bytes, BytesMut};
    use kraftd_protocol::records::RecordBatchBuilder;

    use super::*;
    use crate::config::LogConfig;

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
