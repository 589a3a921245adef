//! The future log of a replica moving to another log dir (Kafka's future replica, KIP-113):
//! held beside the current log under the same lock, filled by the ReplicaManager's copier
//! (`replica_manager/log_dirs.rs`, Kafka's `ReplicaAlterLogDirsThread`) with the current
//! log's own batches, truncated whenever the current log is, and swapped in once its end
//! equals the current log's. Appends to the current log and the swap both happen under the
//! partition's lock, so at the swap every acknowledged batch is in the future log.

use bytes::Bytes;
use kraftd_log::{Log, PendingRead};
use tracing::warn;

use super::{Partition, PartitionError};

/// What the copier is to do next, decided under the lock.
#[derive(Debug)]
pub enum FutureStep {
    /// No future log (the move was cancelled or the partition stopped).
    Gone,
    /// The future log has caught up: swap it in now, still under the lock.
    CaughtUp,
    /// Read these batches of the current log (outside the lock), then append them with
    /// [`Partition::append_to_future`] expecting the future log still to end at `at`.
    Copy { read: PendingRead, at: i64 },
}

impl Partition {
    /// The future log, while the replica is moving.
    pub fn future_log(&self) -> Option<&Log> {
        self.future.as_ref()
    }

    /// Starts a move: `log` (empty, or found on disk after a restart) becomes the future
    /// log; its producer state is kept from now on so the swapped-in log needs no replay.
    pub fn set_future_log(&mut self, mut log: Log, now_ms: i64) -> Result<(), PartitionError> {
        log.load_producer_state(now_ms)
            .map_err(|e| PartitionError::Storage(format!("future log producer state: {e}")))?;
        self.future = Some(log);
        self.sync_future_with_current(now_ms)?;
        Ok(())
    }

    /// Flushes the future log (clean shutdown; the copy resumes at the next start).
    pub fn flush_future_log(&mut self) {
        if let Some(future) = self.future.as_mut() {
            if let Err(e) = future.flush() {
                warn!(topic = %self.tp.topic, partition = self.tp.partition, error = %e, "flushing the future log failed");
            }
        }
    }

    /// Ends a move without swapping: the future log, to be deleted by the caller.
    pub fn take_future_log(&mut self) -> Option<Log> {
        self.future.take()
    }

    /// The copier's next step: `max_bytes` of the current log from the future log's end.
    pub fn next_future_step(
        &mut self,
        max_bytes: usize,
        now_ms: i64,
    ) -> Result<FutureStep, PartitionError> {
        if self.future.is_none() {
            return Ok(FutureStep::Gone);
        }
        self.sync_future_with_current(now_ms)?;
        let Some(future) = &self.future else {
            return Ok(FutureStep::Gone);
        };
        let at = future.log_end_offset();
        if at == self.log.log_end_offset() {
            return Ok(FutureStep::CaughtUp);
        }
        let read = self
            .log
            .plan_read(at, max_bytes, self.log.log_end_offset())?;
        Ok(FutureStep::Copy { read, at })
    }

    /// Appends batches read from the current log to the future log, if it still ends at
    /// `at` (a truncation meanwhile makes the copier read again). Returns whether anything
    /// was appended.
    pub fn append_to_future(
        &mut self,
        at: i64,
        records: Bytes,
        now_ms: i64,
    ) -> Result<bool, PartitionError> {
        let Some(future) = self.future.as_mut() else {
            return Ok(false);
        };
        if future.log_end_offset() != at || records.is_empty() {
            return Ok(false);
        }
        future.append_as_follower(records, now_ms)?;
        future.maybe_flush(now_ms)?;
        Ok(true)
    }

    /// Replaces the current log by `log` (the future log reopened under the partition's
    /// name) and returns the old one. Producer state comes from the snapshot the future log
    /// took at its end; the HW and the replication state are the partition's and stay.
    pub fn replace_log(&mut self, log: Log, now_ms: i64) -> Result<Log, PartitionError> {
        let old = std::mem::replace(&mut self.log, log);
        self.log.note_high_watermark(self.high_watermark);
        if let Err(e) = self.rebuild_producer_state(now_ms) {
            // Keep serving from the old log rather than from one without producer state.
            let new = std::mem::replace(&mut self.log, old);
            drop(new);
            return Err(e);
        }
        Ok(old)
    }

    /// Before the swap: the future log gets the epochs the current log started at its end
    /// without writing anything (a new leader's epoch), takes a producer-state snapshot at
    /// its end and is closed. Returns it closed (its directory path) or why not.
    pub fn close_future_for_swap(&mut self) -> Result<std::path::PathBuf, PartitionError> {
        let Some(mut future) = self.future.take() else {
            return Err(PartitionError::Storage("no future log".into()));
        };
        let end = future.log_end_offset();
        let latest = future.latest_epoch().unwrap_or(-1);
        let pending: Vec<i32> = self
            .log
            .epoch_entries()
            .iter()
            .filter(|e| e.start_offset >= end && e.epoch > latest)
            .map(|e| e.epoch)
            .collect();
        for epoch in pending {
            future.assign_epoch_start_offset(epoch)?;
        }
        future.take_producer_snapshot()?;
        let dir = future.dir().to_path_buf();
        future.close()?;
        Ok(dir)
    }

    /// Keeps the future log consistent with the current one: cut where the current log was
    /// cut, restarted at the current log start when it fell below it, and following the
    /// current log start forward.
    fn sync_future_with_current(&mut self, now_ms: i64) -> Result<(), PartitionError> {
        let Some(future) = self.future.as_mut() else {
            return Ok(());
        };
        let (start, end) = (self.log.log_start_offset(), self.log.log_end_offset());
        let mut truncated = false;
        if future.log_end_offset() > end {
            future.truncate_to(end)?;
            truncated = true;
        }
        if future.log_end_offset() < start || future.log_start_offset() > end {
            future.truncate_fully_and_start_at(start)?;
            truncated = true;
        } else if future.log_start_offset() < start {
            let to = start.min(future.log_end_offset());
            if let Err(e) = future.maybe_increment_log_start_offset(to, to) {
                warn!(topic = %self.tp.topic, partition = self.tp.partition, error = %e,
                    "moving the future log's start failed");
            }
        }
        if truncated {
            future
                .load_producer_state(now_ms)
                .map_err(|e| PartitionError::Storage(format!("future log producer state: {e}")))?;
        }
        Ok(())
    }

    /// After the current log was truncated: the future log follows at once.
    pub(super) fn truncate_future_with_current(&mut self, now_ms: i64) {
        if let Err(e) = self.sync_future_with_current(now_ms) {
            warn!(topic = %self.tp.topic, partition = self.tp.partition, error = %e,
                "truncating the future log failed");
        }
    }
}

#[cfg(test)]
mod tests;
