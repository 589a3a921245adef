//! Reading: [`Log::read`], planned under the owner's lock ([`Log::plan_read`]) and executed
//! outside it ([`PendingRead::execute`]); lookups by timestamp (ListOffsets).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use std::path::PathBuf;

use super::{report_to, Log};
use crate::config::MAX_READ_BYTES;
use crate::error::{LogError, Result};
use crate::log_dir_failure::LogDirFailureChannel;
use crate::segment::SegmentRegion;

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
    /// Where an I/O error of the read takes the log's dir offline (the channel, the log's
    /// directory).
    failure: Option<(Arc<LogDirFailureChannel>, PathBuf)>,
}

impl PendingRead {
    /// Reads the planned batches from the file (see [`Log::read`] for what is returned);
    /// an I/O error takes the log's dir offline.
    pub fn execute(mut self) -> Result<ReadResult> {
        let failure = self.failure.take();
        let result = self.execute_unreported();
        match &failure {
            Some((channel, dir)) => report_to(Some(channel), dir, result),
            None => result,
        }
    }

    fn execute_unreported(self) -> Result<ReadResult> {
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

impl Log {
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
        // The segment whose base is the floor of `start_offset` holds it, unless the offset
        // falls in a gap compaction left after that segment's last batch: then the read
        // starts at the next segment with data (Kafka reads on into the next segment too).
        let region = if start_offset < upper_bound {
            self.segments
                .range(..=start_offset)
                .next_back()
                .map(|(_, seg)| seg)
                .filter(|seg| start_offset < seg.next_offset())
                .or_else(|| {
                    self.segments
                        .range(start_offset + 1..)
                        .map(|(_, seg)| seg)
                        .find(|seg| !seg.is_empty())
                })
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
            failure: self.failure_target(),
        })
    }

    /// The largest timestamp in the log and the offset of the batch carrying it, `None`
    /// for a log without timestamps (ListOffsets' MAX_TIMESTAMP, KIP-734).
    pub fn max_timestamp_and_offset(&self) -> Result<Option<(i64, i64)>> {
        let result = self.max_timestamp_and_offset_unreported();
        self.report(result)
    }

    fn max_timestamp_and_offset_unreported(&self) -> Result<Option<(i64, i64)>> {
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
        let result = self.offset_for_timestamp_unreported(timestamp);
        self.report(result)
    }

    fn offset_for_timestamp_unreported(&self, timestamp: i64) -> Result<Option<(i64, i64)>> {
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
}
