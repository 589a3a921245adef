//! Retention: deleting whole segments, oldest first, by time (`retention.ms`), by size
//! (`retention.bytes`), below the log start offset, or below a snapshot
//! ([`Log::delete_segments_before`]). Kafka's `deleteOldSegments`: time and size retention
//! apply only when `cleanup.policy` includes `delete` (a `compact`-only log keeps every
//! key's latest record however old); deletion below the log start always happens.

use super::Log;
use crate::error::Result;
use crate::fsutil;
use crate::segment::Segment;

impl Log {
    /// Deletes whole segments that lie entirely below `offset`, never the active one
    /// (the metadata log calls this after a snapshot at `offset`). Returns how many.
    pub fn delete_segments_before(&mut self, offset: i64) -> Result<usize> {
        let result = self.delete_segments_before_unreported(offset);
        self.report(result)
    }

    fn delete_segments_before_unreported(&mut self, offset: i64) -> Result<usize> {
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
    /// deleted. Time and size apply only under a `cleanup.policy` that includes `delete`.
    pub fn apply_retention(&mut self, now_ms: i64, upper_bound_offset: i64) -> Result<usize> {
        let result = self.apply_retention_unreported(now_ms, upper_bound_offset);
        self.report(result)
    }

    fn apply_retention_unreported(
        &mut self,
        now_ms: i64,
        upper_bound_offset: i64,
    ) -> Result<usize> {
        // Segments entirely below the log start go first, whatever the limits and the
        // policy (Kafka's `deleteLogStartOffsetBreachedSegments`).
        let mut deleted = self.delete_segments_below_log_start()?;
        if !self.config.cleanup_policy.delete {
            return Ok(deleted);
        }
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
        self.note_offsets();
        let start = self.log_start_offset;
        // Entries always describe batches in the log: the epoch in force at the new start
        // now starts there, and an emptied log keeps none (a partition leader assigns its
        // epoch again after retention).
        self.epoch_cache.truncate_from_start(start)?;
        self.epoch_cache.truncate_from_end(self.log_end_offset)?;
        tracing::info!(dir = %self.dir.display(), segments = n, log_start_offset = start, "deleted segments");
        Ok(n)
    }

    /// Deletes the segments entirely below the log start offset, never the active one.
    pub(super) fn delete_segments_below_log_start(&mut self) -> Result<usize> {
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
}
