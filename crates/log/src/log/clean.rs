//! The log's side of compaction (see [`crate::cleaner`]): where a log stands for cleaning
//! ([`Log::cleanable`], Kafka's `LogCleanerManager.cleanableOffsets`, `LogToClean`,
//! `maxCompactionDelay`), planning a clean under the owner's lock ([`Log::plan_clean`]),
//! swapping its output in ([`Log::commit_clean`], Kafka's `replaceSegments`), and, at open,
//! finishing or undoing a swap a crash interrupted ([`recover_interrupted_swaps`], Kafka's
//! `LogLoader` swap handling).
//!
//! The swap, crash-safe at every step:
//!
//! 1. `<base>.{index,timeindex,log}.cleaned` → `.swap`, newest segment first (a crash
//!    midway leaves `.cleaned` files below every `.swap`: recovery deletes both, and the
//!    old segments stand);
//! 2. the replaced segments' files are deleted (a crash midway: recovery deletes the rest,
//!    every live segment file in the range the `.swap` segments cover, and renames them);
//! 3. `.swap` → live names, oldest first, each `.log` before its indexes (a crash midway:
//!    the remaining `.swap` files are renamed; a `.log` renamed already lies below them).
//!
//! Each step ends with a directory fsync. A cleaned segment always ends exactly where the
//! segments it replaces ended (its last batch is kept, even empty), so the range the
//! `.swap` files cover is exactly what they replace.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Log;
use crate::cleaner::execute::{cleaned_paths, SourceSegment};
use crate::cleaner::{CleanableLog, CleanedSegments, PendingClean, CLEANED_SUFFIX, SWAP_SUFFIX};
use crate::error::{LogError, Result};
use crate::fsutil;
use crate::segment::{file_name, Segment, LOG_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX};

/// What [`Log::commit_clean`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum CleanCommit {
    /// The cleaned segments replaced the old ones; the dirty section now starts at
    /// `next_dirty_offset` (write it to the `cleaner-offset-checkpoint`).
    Swapped {
        /// The new first dirty offset.
        next_dirty_offset: i64,
        /// What the clean did.
        stats: crate::cleaner::CleanerStats,
    },
    /// Something the clean covered was truncated, deleted or rewritten meanwhile: its
    /// files were deleted and the log is unchanged; plan again.
    Discarded,
}

impl Log {
    /// Kafka's `cleanableOffsets` + `calculateCleanableBytes`: the first dirty offset (the
    /// checkpointed one when it lies within the log, else the log start, with
    /// `force_checkpoint_update`), and the first uncleanable one: the lowest of the active
    /// segment's base, `upper_bound_offset` (the high watermark, or the last stable offset)
    /// and the base of the first dirty segment whose newest record is younger than
    /// `min.compaction.lag.ms`, taken down to the base of the segment holding it.
    fn cleanable_range(
        &self,
        now_ms: i64,
        checkpointed: Option<i64>,
        upper_bound_offset: i64,
    ) -> (i64, i64, bool) {
        let start = self.log_start_offset;
        let (first_dirty, force) = match checkpointed {
            Some(o) if o < start || o > self.log_end_offset => (start, true),
            Some(o) => (o, false),
            None => (start, false),
        };
        let active_base = self.active().base_offset();
        let mut bound = upper_bound_offset.min(active_base);
        let lag = self.config.min_compaction_lag_ms.max(0);
        if lag > 0 {
            let from = self.floor_base(first_dirty);
            if let Some((&b, _)) = self
                .segments
                .range(from..active_base)
                .find(|(_, s)| s.max_timestamp() > now_ms.saturating_sub(lag))
            {
                bound = bound.min(b);
            }
        }
        let bound = bound.max(first_dirty);
        (first_dirty, self.floor_base(bound), force)
    }

    /// The base of the segment holding `offset` (the first segment's for offsets below it).
    fn floor_base(&self, offset: i64) -> i64 {
        self.segments
            .range(..=offset)
            .next_back()
            .or_else(|| self.segments.iter().next())
            .map_or(offset, |(&b, _)| b)
    }

    /// Where this log stands for cleaning (Kafka's `LogToClean`): the dirty range, the
    /// clean and cleanable bytes and their ratio, and how overdue `max.compaction.lag.ms`
    /// makes it. `checkpointed` is the partition's `cleaner-offset-checkpoint` entry;
    /// `upper_bound_offset` the high watermark (or last stable offset). Reads the first
    /// batch header of each dirty segment (for the max lag), so it takes the owner's lock
    /// for as long as that.
    pub fn cleanable(
        &self,
        now_ms: i64,
        checkpointed: Option<i64>,
        upper_bound_offset: i64,
    ) -> Result<CleanableLog> {
        let (first_dirty, first_uncleanable, force) =
            self.cleanable_range(now_ms, checkpointed, upper_bound_offset);
        let clean_bytes: u64 = self
            .segments
            .range(..first_dirty)
            .map(|(_, s)| s.size())
            .sum();
        let from = self.floor_base(first_dirty.min(first_uncleanable));
        let cleanable_bytes: u64 = if from < first_uncleanable {
            self.segments
                .range(from..first_uncleanable)
                .map(|(_, s)| s.size())
                .sum()
        } else {
            0
        };
        let total = clean_bytes + cleanable_bytes;
        let cleanable_ratio = if total == 0 {
            0.0
        } else {
            cleanable_bytes as f64 / total as f64
        };
        // Kafka's `maxCompactionDelay`: the oldest first-batch timestamp among the dirty
        // sealed segments against `now - max.compaction.lag.ms`.
        let clean_until = now_ms.saturating_sub(self.config.max_compaction_lag_ms.max(0));
        let active_base = self.active().base_offset();
        let mut earliest = i64::MAX;
        for (_, seg) in self
            .segments
            .range(self.floor_base(first_dirty)..active_base)
        {
            if let Some(first) = seg.locate(seg.base_offset())? {
                if first.max_timestamp > 0 {
                    earliest = earliest.min(first.max_timestamp);
                }
            }
        }
        let max_compaction_delay_ms = if earliest < clean_until {
            clean_until - earliest
        } else {
            0
        };
        Ok(CleanableLog {
            first_dirty_offset: first_dirty,
            first_uncleanable_offset: first_uncleanable,
            force_checkpoint_update: force,
            clean_bytes,
            cleanable_bytes,
            cleanable_ratio,
            max_compaction_delay_ms,
        })
    }

    /// Plans a clean (step 1 of [`crate::cleaner`]) of everything from the log start to the
    /// first uncleanable offset (see [`Log::cleanable`]), with the dirty section starting at
    /// `first_dirty_offset` (the checkpointed one; the log start when invalid). `None` when
    /// the policy does not include `compact` or nothing is dirty. `last_batches` maps each
    /// active producer id to the last offset of its last data batch (from the owner's
    /// producer state): that batch is kept, emptied if need be, so the producer's sequence
    /// and epoch survive; an active producer of the log's own producer state with no data
    /// batch keeps its markers of its current epoch (Kafka's `lastRecordsOfActiveProducers`).
    /// The aborted transactions come from every segment's `.txnindex` (the active one's
    /// too). `now_ms` is the clean's time (delete horizons are set from it and
    /// compared with it). Cheap: no file is read.
    pub fn plan_clean(
        &self,
        now_ms: i64,
        first_dirty_offset: i64,
        upper_bound_offset: i64,
        last_batches: HashMap<i64, i64>,
    ) -> Option<PendingClean> {
        if !self.config.cleanup_policy.compact {
            return None;
        }
        // Open transactions are not cleaned (Kafka bounds the clean by the first unstable
        // offset).
        let upper_bound_offset = self
            .first_unstable_offset()
            .map_or(upper_bound_offset, |o| o.min(upper_bound_offset));
        let (first_dirty, first_uncleanable, _) =
            self.cleanable_range(now_ms, Some(first_dirty_offset), upper_bound_offset);
        let segments: Vec<SourceSegment> = self
            .segments
            .range(..first_uncleanable)
            .map(|(&base, seg)| SourceSegment {
                base,
                id: seg.id(),
                size: seg.size(),
                next_offset: seg.next_offset(),
                offset_index_bytes: seg.offset_index_bytes(),
                time_index_bytes: seg.time_index_bytes(),
                whole: seg.region(base),
                dirty: (base <= first_dirty && first_dirty < seg.next_offset())
                    .then(|| seg.region(first_dirty)),
            })
            .collect();
        if !segments.iter().any(|s| s.next_offset > first_dirty) {
            return None;
        }
        // Every segment's entries, the active one's too: a transaction whose data is in the
        // cleanable range may have its marker past it.
        let aborted = self
            .segments
            .values()
            .flat_map(|s| s.aborted_txns())
            .filter(|t| t.first_offset < first_uncleanable)
            .copied()
            .collect();
        // Kafka's `lastRecordsOfActiveProducers` without a last data offset: a producer whose
        // state holds no data batch keeps its markers of its current epoch (fencing).
        let last_markers = self
            .producers
            .active_producers()
            .filter(|e| e.last_data_offset() < 0 && e.producer_epoch >= 0)
            .filter(|e| !last_batches.contains_key(&e.producer_id))
            .map(|e| (e.producer_id, e.producer_epoch))
            .collect();
        Some(PendingClean {
            dir: self.dir.clone(),
            now_ms,
            first_dirty_offset: first_dirty,
            first_uncleanable_offset: first_uncleanable,
            segments,
            segment_bytes: self.config.segment_bytes,
            segment_index_bytes: self.config.segment_index_bytes,
            index_interval_bytes: self.config.index_interval_bytes,
            delete_retention_ms: self.config.delete_retention_ms,
            last_batches,
            last_markers,
            aborted,
            generation: self.truncations.load(Ordering::SeqCst),
            truncations: Arc::clone(&self.truncations),
            files: Arc::clone(&self.files),
        })
    }

    /// Swaps an executed clean in (step 3 of [`crate::cleaner`]), or discards it when a
    /// segment it covers was truncated, deleted or rewritten since it was planned (see
    /// [`CleanCommit`]). Planned reads that overlap the swap fail with
    /// [`LogError::ConcurrentTruncation`] and are retried, as after a truncation.
    ///
    /// An I/O error midway leaves the directory in a state [`Log::open`] completes; the
    /// log object should then be reopened (the owner treats it as a disk failure).
    pub fn commit_clean(&mut self, cleaned: CleanedSegments) -> Result<CleanCommit> {
        let result = self.commit_clean_unreported(cleaned);
        self.report(result)
    }

    fn commit_clean_unreported(&mut self, mut cleaned: CleanedSegments) -> Result<CleanCommit> {
        let same_log = Arc::ptr_eq(&cleaned.truncations, &self.truncations)
            && cleaned.dir == self.dir
            && self.truncations.load(Ordering::SeqCst) == cleaned.generation;
        let unchanged = cleaned.groups.iter().flat_map(|g| &g.replaces).all(|r| {
            self.segments
                .get(&r.base)
                .is_some_and(|s| s.id() == r.id && s.size() == r.size)
                && r.base < self.active().base_offset()
        });
        if !same_log || !unchanged {
            cleaned.remove_files();
            return Ok(CleanCommit::Discarded);
        }
        // Planned reads of the files about to go must not read the new ones at old positions.
        self.truncations.fetch_add(1, Ordering::SeqCst);
        let dir = self.dir.clone();
        for g in cleaned.groups.iter().rev() {
            let from = cleaned_paths(&dir, g.base, CLEANED_SUFFIX);
            let to = cleaned_paths(&dir, g.base, SWAP_SUFFIX);
            for (from, to) in from.iter().zip(&to) {
                std::fs::rename(from, to).map_err(LogError::io("rename", from))?;
            }
            // The `.txnindex` exists only when the group holds aborted transactions.
            let (from, to) = (
                txn_index_path(&dir, g.base, CLEANED_SUFFIX),
                txn_index_path(&dir, g.base, SWAP_SUFFIX),
            );
            if from.exists() {
                std::fs::rename(&from, &to).map_err(LogError::io("rename", &from))?;
            }
        }
        fsutil::sync_dir(&dir)?;
        cleaned.pending_files = false;
        for g in &cleaned.groups {
            for r in &g.replaces {
                if let Some(seg) = self.segments.remove(&r.base) {
                    seg.delete()?;
                }
            }
        }
        fsutil::sync_dir(&dir)?;
        for g in &cleaned.groups {
            let from = cleaned_paths(&dir, g.base, SWAP_SUFFIX);
            let to = cleaned_paths(&dir, g.base, "");
            // The `.log` first (the last of the three paths), then its indexes.
            for i in [2, 0, 1] {
                std::fs::rename(&from[i], &to[i]).map_err(LogError::io("rename", &from[i]))?;
            }
            let (from, to) = (
                txn_index_path(&dir, g.base, SWAP_SUFFIX),
                txn_index_path(&dir, g.base, ""),
            );
            if from.exists() {
                std::fs::rename(&from, &to).map_err(LogError::io("rename", &from))?;
            }
        }
        fsutil::sync_dir(&dir)?;
        let max_batch_bytes = self.config.max_message_bytes.max(64 * 1024 * 1024);
        for g in &cleaned.groups {
            let (mut seg, _) = Segment::open_existing(
                &dir,
                g.base,
                self.config.index_interval_bytes,
                max_batch_bytes,
                &self.files,
            )?;
            seg.release()?;
            self.segments.insert(g.base, seg);
            self.stats.segments_cleaned += 1;
        }
        tracing::info!(dir = %dir.display(), segments = cleaned.groups.len(),
            next_dirty_offset = cleaned.next_dirty_offset, "swapped in cleaned segments");
        Ok(CleanCommit::Swapped {
            next_dirty_offset: cleaned.next_dirty_offset,
            stats: cleaned.stats.clone(),
        })
    }
}

/// The `.txnindex` of segment `base` with `extra` after the suffix.
fn txn_index_path(dir: &Path, base: i64, extra: &str) -> std::path::PathBuf {
    dir.join(file_name(base, &format!("{TXN_INDEX_FILE_SUFFIX}{extra}")))
}

/// `<20 digits>.<rest>`: a file of segment `base`, with what follows the first dot.
fn parse_base(name: &str) -> Option<(i64, &str)> {
    let (stem, rest) = name.split_once('.')?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stem.parse().ok()?, rest))
}

/// The segment files (live names) Kafka's loader may delete: `.log`, `.index`, `.timeindex`,
/// `.txnindex`.
fn is_live_segment_file(rest: &str) -> bool {
    matches!(rest, "log" | "index" | "timeindex" | "txnindex")
}

/// Kafka's `LogLoader` handling of an interrupted clean, before segments are loaded:
/// `.cleaned` files are deleted, and so are `.swap` files at or above the lowest of them
/// (their renaming was not finished); the remaining `.swap` segments replace every live
/// segment file in the offset range they cover, and are renamed to live names. Returns
/// whether anything changed.
pub(super) fn recover_interrupted_swaps(dir: &Path) -> Result<bool> {
    let mut cleaned = Vec::new();
    let mut swaps = Vec::new();
    let mut live = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(LogError::io("list", dir))? {
        let entry = entry.map_err(LogError::io("list", dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((base, rest)) = parse_base(name) else {
            continue;
        };
        if rest.ends_with(CLEANED_SUFFIX) {
            cleaned.push((base, entry.path()));
        } else if let Some(kind) = rest.strip_suffix(SWAP_SUFFIX) {
            swaps.push((base, kind.to_string(), entry.path()));
        } else if is_live_segment_file(rest) {
            live.push((base, entry.path()));
        }
    }
    if cleaned.is_empty() && swaps.is_empty() {
        return Ok(false);
    }
    let min_cleaned = cleaned.iter().map(|(b, _)| *b).min().unwrap_or(i64::MAX);
    for (_, path) in &cleaned {
        tracing::info!(path = %path.display(), "removing an unfinished cleaned file");
        fsutil::remove_if_exists(path)?;
    }
    let (undone, swaps): (Vec<_>, Vec<_>) =
        swaps.into_iter().partition(|(b, _, _)| *b >= min_cleaned);
    for (_, _, path) in &undone {
        tracing::info!(path = %path.display(), "removing a swap file of an unfinished clean");
        fsutil::remove_if_exists(path)?;
    }
    let mut min_swap = i64::MAX;
    let mut max_swap_end = i64::MIN;
    for (base, kind, path) in &swaps {
        if kind == LOG_FILE_SUFFIX {
            min_swap = min_swap.min(*base);
            max_swap_end = max_swap_end.max(next_offset_of(path, *base)?);
        }
    }
    for (base, path) in &live {
        if *base >= min_swap && *base < max_swap_end {
            tracing::info!(path = %path.display(), "removing a segment file a clean replaced");
            fsutil::remove_if_exists(path)?;
        }
    }
    for (base, kind, path) in &swaps {
        let to = dir.join(file_name(*base, kind));
        tracing::info!(path = %path.display(), "completing the swap of a cleaned segment");
        std::fs::rename(path, &to).map_err(LogError::io("rename", path))?;
    }
    fsutil::sync_dir(dir)?;
    Ok(true)
}

/// The offset after the last batch of a `.log.swap` file (fsynced before it was renamed
/// to `.swap`, so it is whole).
fn next_offset_of(path: &Path, base: i64) -> Result<i64> {
    use kraftd_protocol::records::Batches;
    let bytes = std::fs::read(path).map_err(LogError::io("read", path))?;
    let mut next = base;
    for batch in Batches::new(bytes::Bytes::from(bytes)) {
        let batch = batch.map_err(|e| LogError::corrupt(path, 0, e.to_string()))?;
        next = next.max(batch.next_offset());
    }
    Ok(next)
}
