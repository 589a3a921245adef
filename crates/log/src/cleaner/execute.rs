//! [`PendingClean`]: a clean planned under the owner's lock, run without it; its result,
//! [`CleanedSegments`], is handed back to [`crate::Log::commit_clean`].
//!
//! Execution reads the dirty section into the offset map (Kafka's `buildOffsetMap`), groups
//! the segments from the log start to the map's end (Kafka's `groupSegmentsBySize`) and
//! rewrites each group into one `<base>.log.cleaned` with its `.index.cleaned` and
//! `.timeindex.cleaned`, fsynced (Kafka's `cleanSegments`). Nothing the log reads is
//! touched: an execution that fails or is dropped leaves only `.cleaned` files, which
//! [`CleanedSegments`]'s drop (or the next open) removes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;

use super::filter::{filter_batch, FilterContext};
use super::txn::{AbortedRanges, CleanedTxns};
use super::{CleanerStats, OffsetMap, CLEANED_SUFFIX};
use crate::error::{LogError, Result};
use crate::fsutil;
use crate::handles::SegmentFiles;
use crate::segment::{
    file_name, BatchInfo, Segment, SegmentRegion, INDEX_FILE_SUFFIX, LOG_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX,
};

/// The largest batch the cleaner will read, whatever `max.message.bytes` says now (it may
/// have been lowered after larger batches were written).
const MAX_CLEANER_BATCH_BYTES: usize = 64 * 1024 * 1024;

/// One segment a clean may read, as it was when planned.
#[derive(Debug)]
pub(crate) struct SourceSegment {
    pub base: i64,
    pub id: u64,
    pub size: u64,
    pub next_offset: i64,
    pub offset_index_bytes: u64,
    pub time_index_bytes: u64,
    /// The whole segment, from its first batch.
    pub whole: SegmentRegion,
    /// From the first dirty offset's index entry, for the segment holding it.
    pub dirty: Option<SegmentRegion>,
}

/// What [`crate::Log::commit_clean`] checks a segment against: the one read must still be
/// the log's, unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentIdentity {
    pub base: i64,
    pub id: u64,
    pub size: u64,
}

/// A clean planned by [`crate::Log::plan_clean`]; run it with [`PendingClean::execute`]
/// outside the owner's lock.
#[derive(Debug)]
pub struct PendingClean {
    pub(crate) dir: PathBuf,
    pub(crate) now_ms: i64,
    pub(crate) first_dirty_offset: i64,
    pub(crate) first_uncleanable_offset: i64,
    /// Every segment below the first uncleanable offset, oldest first.
    pub(crate) segments: Vec<SourceSegment>,
    pub(crate) segment_bytes: u64,
    pub(crate) segment_index_bytes: u64,
    pub(crate) index_interval_bytes: u64,
    pub(crate) delete_retention_ms: i64,
    pub(crate) last_batches: HashMap<i64, i64>,
    /// Producer id → epoch of the active producers with no data batch in their state.
    pub(crate) last_markers: HashMap<i64, i16>,
    /// Every `.txnindex` entry of the log (the active segment's too: a transaction of the
    /// cleanable range may end past it) starting below the first uncleanable offset.
    pub(crate) aborted: Vec<crate::producer_state::AbortedTxn>,
    pub(crate) generation: u64,
    pub(crate) truncations: Arc<AtomicU64>,
    pub(crate) files: Arc<SegmentFiles>,
}

/// One cleaned segment waiting to be swapped in, and the segments it replaces.
#[derive(Debug, Clone)]
pub(crate) struct CleanedGroup {
    pub base: i64,
    pub replaces: Vec<SegmentIdentity>,
}

/// The `.cleaned` files of an executed clean, for [`crate::Log::commit_clean`]. Dropped
/// without being committed, it deletes them.
#[derive(Debug)]
pub struct CleanedSegments {
    pub(crate) dir: PathBuf,
    pub(crate) groups: Vec<CleanedGroup>,
    pub(crate) next_dirty_offset: i64,
    pub(crate) stats: CleanerStats,
    pub(crate) generation: u64,
    pub(crate) truncations: Arc<AtomicU64>,
    pub(crate) pending_files: bool,
}

impl CleanedSegments {
    /// Where the dirty section will start once this is committed: the offset after the
    /// last one the offset map covered (the `cleaner-offset-checkpoint` value).
    pub fn next_dirty_offset(&self) -> i64 {
        self.next_dirty_offset
    }

    /// What the clean did.
    pub fn stats(&self) -> &CleanerStats {
        &self.stats
    }

    /// Base offsets of the cleaned segments to be swapped in.
    pub fn base_offsets(&self) -> Vec<i64> {
        self.groups.iter().map(|g| g.base).collect()
    }

    /// Base offsets of the segments the cleaned ones replace.
    pub fn replaced_base_offsets(&self) -> Vec<i64> {
        self.groups
            .iter()
            .flat_map(|g| g.replaces.iter().map(|r| r.base))
            .collect()
    }

    /// Deletes the `.cleaned` files (a discarded clean).
    pub(crate) fn remove_files(&mut self) {
        if !self.pending_files {
            return;
        }
        self.pending_files = false;
        for g in &self.groups {
            let txn_index = self.dir.join(file_name(
                g.base,
                &format!("{TXN_INDEX_FILE_SUFFIX}{CLEANED_SUFFIX}"),
            ));
            for path in cleaned_paths(&self.dir, g.base, CLEANED_SUFFIX)
                .into_iter()
                .chain([txn_index])
            {
                if let Err(e) = fsutil::remove_if_exists(&path) {
                    tracing::warn!(error = %e, "could not remove a discarded cleaned file");
                }
            }
        }
    }
}

impl Drop for CleanedSegments {
    fn drop(&mut self) {
        self.remove_files();
    }
}

/// The `.log`, `.index` and `.timeindex` of segment `base` with `extra` after the suffix,
/// the `.log` last.
pub(crate) fn cleaned_paths(dir: &Path, base: i64, extra: &str) -> [PathBuf; 3] {
    [INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, LOG_FILE_SUFFIX]
        .map(|s| dir.join(file_name(base, &format!("{s}{extra}"))))
}

impl PendingClean {
    /// The first offset the clean will not touch.
    pub fn first_uncleanable_offset(&self) -> i64 {
        self.first_uncleanable_offset
    }

    /// Where the dirty section starts.
    pub fn first_dirty_offset(&self) -> i64 {
        self.first_dirty_offset
    }

    /// Runs the clean: fills `map` (cleared first) from the dirty section, then writes the
    /// cleaned segments. `io` is told the bytes of each batch read and may throttle (sleep)
    /// or stop the clean by returning `false` ([`LogError::CleaningAborted`]); the owner's
    /// `log.cleaner.io.max.bytes.per.second` and its "abort cleaning" both go there.
    /// `io_buffer_size` is `log.cleaner.io.buffer.size`: bytes read and written at a time.
    pub fn execute(
        self,
        map: &mut OffsetMap,
        io_buffer_size: usize,
        io: &mut dyn FnMut(u64) -> bool,
    ) -> Result<CleanedSegments> {
        let started = Instant::now();
        let mut stats = CleanerStats::default();
        let chunk = io_buffer_size.max(4096);
        self.build_offset_map(map, chunk, io, &mut stats)?;
        stats.map_ms = started.elapsed().as_millis() as u64;
        let next_dirty_offset = map.latest_offset() + 1;
        let groups = self.group_segments(next_dirty_offset);
        // One transaction walk over all groups: a transaction's data may sit in an older
        // group than its marker.
        let mut txns = CleanedTxns::new(&self.aborted);
        let mut cleaned = CleanedSegments {
            dir: self.dir.clone(),
            groups: Vec::new(),
            next_dirty_offset,
            stats: CleanerStats::default(),
            generation: self.generation,
            truncations: Arc::clone(&self.truncations),
            pending_files: true,
        };
        for group in groups {
            let base = group[0].base;
            cleaned.groups.push(CleanedGroup {
                base,
                replaces: group
                    .iter()
                    .map(|s| SegmentIdentity {
                        base: s.base,
                        id: s.id,
                        size: s.size,
                    })
                    .collect(),
            });
            self.clean_group(&group, map, &mut txns, chunk, io, &mut stats)?;
        }
        stats.buffer_utilization = map.utilization();
        stats.elapsed_ms = started.elapsed().as_millis() as u64;
        cleaned.stats = stats;
        Ok(cleaned)
    }

    fn abort(&self) -> LogError {
        LogError::CleaningAborted {
            dir: self.dir.clone(),
        }
    }

    /// Kafka's `buildOffsetMap`: the dirty segments' keyed records from the first dirty
    /// offset on, until the map is full (then its latest offset is the last record mapped)
    /// or the first uncleanable offset. Records of aborted transactions and control records
    /// are not mapped; committed transactional records are.
    fn build_offset_map(
        &self,
        map: &mut OffsetMap,
        chunk: usize,
        io: &mut dyn FnMut(u64) -> bool,
        stats: &mut CleanerStats,
    ) -> Result<()> {
        map.clear();
        let aborted_ranges = AbortedRanges::new(&self.aborted);
        let start = self.first_dirty_offset;
        let dirty: Vec<&SourceSegment> = self
            .segments
            .iter()
            .filter(|s| s.next_offset > start)
            .collect();
        for (i, seg) in dirty.iter().enumerate() {
            let next_base = dirty
                .get(i + 1)
                .map_or(self.first_uncleanable_offset, |s| s.base);
            let region = seg.dirty.as_ref().unwrap_or(&seg.whole);
            let mut full = false;
            let mut aborted = false;
            region.for_each_batch(chunk, MAX_CLEANER_BATCH_BYTES, |_, batch| {
                if !io(batch.size_in_bytes() as u64) {
                    aborted = true;
                    return Ok(false);
                }
                if batch.last_offset() < start {
                    return Ok(true);
                }
                if !batch.is_control() && !aborted_ranges.is_aborted_data(&batch) {
                    let records = batch.records().map_err(|e| {
                        LogError::corrupt(
                            region.path(),
                            0,
                            format!("batch at {}: {e}", batch.base_offset()),
                        )
                    })?;
                    for record in records {
                        let record = record.map_err(|e| {
                            LogError::corrupt(
                                region.path(),
                                0,
                                format!("batch at {}: {e}", batch.base_offset()),
                            )
                        })?;
                        let offset = record.offset(&batch);
                        if let Some(key) = record.key.as_deref().filter(|_| offset >= start) {
                            if !map.put(key, offset) {
                                full = true;
                                return Ok(false);
                            }
                        }
                        stats.map_messages_read += 1;
                    }
                }
                map.update_latest_offset(batch.last_offset());
                stats.map_bytes_read += batch.size_in_bytes() as u64;
                Ok(true)
            })?;
            if aborted {
                return Err(self.abort());
            }
            if full {
                if map.latest_offset() < start {
                    return Err(LogError::OffsetMapTooSmall {
                        max_entries: map.max_entries(),
                        offset: start,
                    });
                }
                return Ok(());
            }
            // Past a gap at the segment's end, the map covers up to the next segment.
            map.update_latest_offset(next_base - 1);
        }
        Ok(())
    }

    /// Kafka's `groupSegmentsBySize`: consecutive segments below `end_offset`, as many per
    /// group as fit `segment.bytes` (data) and `segment.index.bytes` (each index), with
    /// offsets within `i32::MAX` of the group's base.
    fn group_segments(&self, end_offset: i64) -> Vec<Vec<&SourceSegment>> {
        let segs: Vec<&SourceSegment> = self
            .segments
            .iter()
            .filter(|s| s.base < end_offset)
            .collect();
        let mut groups: Vec<Vec<&SourceSegment>> = Vec::new();
        let mut i = 0;
        while i < segs.len() {
            let mut group = vec![segs[i]];
            let (mut log, mut index, mut time) = (
                segs[i].size,
                segs[i].offset_index_bytes,
                segs[i].time_index_bytes,
            );
            i += 1;
            while let Some(next) = segs.get(i) {
                let last_offset = segs
                    .get(i + 1)
                    .map_or(self.first_uncleanable_offset, |s| s.base)
                    - 1;
                let fits = log + next.size <= self.segment_bytes
                    && index + next.offset_index_bytes <= self.segment_index_bytes
                    && time + next.time_index_bytes <= self.segment_index_bytes
                    && (next.size == 0 || last_offset - group[0].base <= i64::from(i32::MAX));
                if !fits {
                    break;
                }
                log += next.size;
                index += next.offset_index_bytes;
                time += next.time_index_bytes;
                group.push(next);
                i += 1;
            }
            groups.push(group);
        }
        groups
    }

    /// Kafka's `cleanSegments`: one group into one fsynced `.cleaned` segment.
    fn clean_group(
        &self,
        group: &[&SourceSegment],
        map: &mut OffsetMap,
        txns: &mut CleanedTxns,
        chunk: usize,
        io: &mut dyn FnMut(u64) -> bool,
        stats: &mut CleanerStats,
    ) -> Result<()> {
        let base = group[0].base;
        let mut out = Segment::create_with_suffix(
            &self.dir,
            base,
            CLEANED_SUFFIX,
            self.index_interval_bytes,
            &self.files,
        )?;
        let round_end = group.iter().map(|s| s.next_offset).max().unwrap_or(base);
        let mut ctx = FilterContext {
            map,
            now_ms: self.now_ms,
            delete_retention_ms: self.delete_retention_ms,
            last_batches: &self.last_batches,
            last_markers: &self.last_markers,
            round_end,
            txns,
        };
        let mut buf = BytesMut::new();
        let mut infos: Vec<BatchInfo> = Vec::new();
        for seg in group {
            let mut aborted = false;
            let path = seg.whole.path().to_path_buf();
            seg.whole
                .for_each_batch(chunk, MAX_CLEANER_BATCH_BYTES, |position, batch| {
                    if !io(batch.size_in_bytes() as u64) {
                        aborted = true;
                        return Ok(false);
                    }
                    if let Some(kept) = filter_batch(&mut ctx, &batch, &path, position, stats)? {
                        infos.push(BatchInfo::of(&kept, buf.len() as u64));
                        buf.extend_from_slice(kept.as_bytes());
                    }
                    if buf.len() >= chunk {
                        out.append(&buf, &infos, self.now_ms)?;
                        buf.clear();
                        infos.clear();
                    }
                    Ok(true)
                })?;
            if aborted {
                return Err(self.abort());
            }
        }
        if !buf.is_empty() {
            out.append(&buf, &infos, self.now_ms)?;
        }
        // Kafka's cleaned transaction index: the entries of the ABORT markers this group
        // kept because data of their transaction was still there; the others go (no
        // aborted data of theirs is left for a read_committed reader to skip).
        for t in ctx.txns.take_retained() {
            out.append_aborted_txn(t)?;
        }
        out.seal()?;
        out.close_files();
        Ok(())
    }
}
