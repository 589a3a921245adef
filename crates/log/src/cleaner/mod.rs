//! Log compaction (`cleanup.policy=compact`): Kafka's log cleaner, the storage half. For
//! each key it keeps the record with the highest offset; survivors keep their offsets and
//! order; tombstones stay for `delete.retention.ms` after the clean that first kept them;
//! the active segment is never cleaned.
//!
//! A clean runs in three steps so the owner's lock is held only for the short ones (the
//! pattern of [`crate::Log::plan_read`]):
//!
//! 1. [`crate::Log::plan_clean`] (under the lock): the cleanable range, from the log start
//!    to the first uncleanable offset (the active segment, the high watermark / LSO, the
//!    first segment younger than `min.compaction.lag.ms`), and the segments it covers;
//! 2. [`PendingClean::execute`] (no lock): fills an [`OffsetMap`] from the dirty section
//!    (stopping when the map is full: a log larger than the map is cleaned in several
//!    passes), then rewrites the segments up to the map's end into `.cleaned` files, grouped
//!    so no group exceeds `segment.bytes` or `segment.index.bytes`;
//! 3. [`crate::Log::commit_clean`] (under the lock): if nothing it covered was truncated,
//!    deleted or rewritten meanwhile, swaps the files in crash-safely (`.cleaned` →
//!    `.swap` newest first, old segments deleted, `.swap` → live oldest first; an
//!    interrupted swap is finished or undone by [`crate::Log::open`], as Kafka's
//!    `LogLoader` does), else discards them.
//!
//! Choosing a log is the owner's: [`crate::Log::cleanable`] reports Kafka's dirty ratio
//! and whether `max.compaction.lag.ms` forces a clean (`LogCleanerManager`); progress is
//! kept in the `cleaner-offset-checkpoint` ([`crate::log_manager::LogManager`]).
//!
//! Transactions (Kafka's rules): committed transactional records are compacted like any
//! others; aborted ones are never mapped and are removed; a marker stays while data of its
//! transaction is in the log, then gets a delete horizon (`now + delete.retention.ms`) and
//! goes at the first clean past it; a producer's last batch always stays (emptied if need
//! be); the cleaned `.txnindex` keeps only the aborted transactions with data left.
//!
//! Where things are: `offset_map.rs` ([`OffsetMap`], Kafka's `SkimpyOffsetMap`),
//! `filter.rs` (the retention rules per batch, Kafka's `shouldRetainRecord` and
//! `filterTo`), `txn.rs` (Kafka's `CleanedTransactionMetadata`), `execute.rs` ([`PendingClean`], [`CleanedSegments`]); the log's side is
//! `log/clean.rs`.

pub(crate) mod execute;
mod filter;
pub mod offset_map;
mod txn;

pub use execute::{CleanedSegments, PendingClean};
pub use offset_map::OffsetMap;

/// Suffix added to the files a clean writes before they are swapped in.
pub const CLEANED_SUFFIX: &str = ".cleaned";
/// Suffix of cleaned files being swapped in (committed: recovery completes the swap).
pub const SWAP_SUFFIX: &str = ".swap";

/// Kafka's `log.cleaner.*` broker settings that size a cleaner, named and defaulted as
/// Kafka's (`CleanerConfig`). Threads, throttling and backoff are the owner's to run; this
/// crate uses the buffer sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct CleanerConfig {
    /// `log.cleaner.threads` (1).
    pub threads: usize,
    /// `log.cleaner.dedupe.buffer.size` (128 MiB), shared by all threads.
    pub dedupe_buffer_size: u64,
    /// `log.cleaner.io.buffer.load.factor` (0.9).
    pub io_buffer_load_factor: f64,
    /// `log.cleaner.io.buffer.size` (512 KiB): bytes read and written at a time.
    pub io_buffer_size: usize,
    /// `log.cleaner.io.max.bytes.per.second` (unlimited).
    pub io_max_bytes_per_second: f64,
    /// `log.cleaner.backoff.ms` (15 s): sleep when no log needs cleaning.
    pub backoff_ms: i64,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        CleanerConfig {
            threads: 1,
            dedupe_buffer_size: 128 * 1024 * 1024,
            io_buffer_load_factor: offset_map::DEFAULT_LOAD_FACTOR,
            io_buffer_size: 512 * 1024,
            io_max_bytes_per_second: f64::MAX,
            backoff_ms: 15_000,
        }
    }
}

impl CleanerConfig {
    /// One thread's offset map, as Kafka sizes it: the dedupe buffer divided among the
    /// threads, at most `i32::MAX` bytes. `None` when that holds not even one entry.
    pub fn offset_map(&self) -> Option<OffsetMap> {
        self.offset_map_for(u64::MAX)
    }

    /// [`CleanerConfig::offset_map`], but no larger than `max_keys` keys need at the load
    /// factor: a clean whose dirty section spans N offsets holds at most N keys, so a small
    /// log's clean takes little memory rather than the whole share (its pages zeroed, so
    /// untouched ones cost nothing, and freed with the map).
    pub fn offset_map_for(&self, max_keys: u64) -> Option<OffsetMap> {
        let share = (self.dedupe_buffer_size / self.threads.max(1) as u64).min(i32::MAX as u64);
        let load = self.io_buffer_load_factor.max(f64::MIN_POSITIVE);
        let slots = (max_keys.max(1) as f64 / load).ceil();
        let needed = if slots >= (u64::MAX / 2) as f64 {
            u64::MAX
        } else {
            (slots as u64 + 1).saturating_mul(offset_map::BYTES_PER_ENTRY as u64)
        };
        OffsetMap::new(share.min(needed) as usize, self.io_buffer_load_factor)
    }
}

/// What one clean did (Kafka's `CleanerStats`), for the owner's metrics
/// (`cleaner-recopy-percent`, `max-clean-time-secs`, ...).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CleanerStats {
    /// Bytes of the dirty section read to fill the offset map.
    pub map_bytes_read: u64,
    /// Records read to fill the offset map.
    pub map_messages_read: u64,
    /// Bytes of the segments rewritten, read.
    pub bytes_read: u64,
    /// Bytes written to the cleaned segments.
    pub bytes_written: u64,
    /// Records read while rewriting.
    pub messages_read: u64,
    /// Records kept.
    pub messages_written: u64,
    /// Records dropped for having no key.
    pub invalid_messages_read: u64,
    /// The offset map's use at the end (entries / slots).
    pub buffer_utilization: f64,
    /// Milliseconds spent filling the map.
    pub map_ms: u64,
    /// Milliseconds of the whole execution (map and rewrite).
    pub elapsed_ms: u64,
}

impl CleanerStats {
    /// Records dropped: read minus kept.
    pub fn messages_dropped(&self) -> u64 {
        self.messages_read.saturating_sub(self.messages_written)
    }
}

/// Where a log stands for cleaning (Kafka's `LogToClean` with `cleanableOffsets` and
/// `maxCompactionDelay`), from [`crate::Log::cleanable`].
#[derive(Debug, Clone, PartialEq)]
pub struct CleanableLog {
    /// Where the dirty section starts: the checkpointed offset, or the log start when that
    /// is absent or no longer valid.
    pub first_dirty_offset: i64,
    /// The first offset that may not be cleaned (a segment boundary).
    pub first_uncleanable_offset: i64,
    /// Whether the checkpointed offset was invalid and must be rewritten.
    pub force_checkpoint_update: bool,
    /// Bytes of the segments below the first dirty offset.
    pub clean_bytes: u64,
    /// Bytes of the segments from the first dirty offset to the first uncleanable one.
    pub cleanable_bytes: u64,
    /// `cleanable / (clean + cleanable)` (0 for an empty log).
    pub cleanable_ratio: f64,
    /// How long past `max.compaction.lag.ms` the oldest dirty segment is (0: not due).
    pub max_compaction_delay_ms: i64,
}

impl CleanableLog {
    /// Whether `max.compaction.lag.ms` forces a clean now.
    pub fn needs_compaction_now(&self) -> bool {
        self.max_compaction_delay_ms > 0
    }

    /// Kafka's choice: clean when forced by the max lag (and something is cleanable) or when
    /// the dirty ratio passes `min.cleanable.dirty.ratio`. Among candidates Kafka takes the
    /// highest ratio.
    pub fn should_clean(&self, min_cleanable_dirty_ratio: f64) -> bool {
        (self.needs_compaction_now() && self.cleanable_bytes > 0)
            || self.cleanable_ratio > min_cleanable_dirty_ratio
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_takes_no_more_map_than_its_dirty_offsets_can_fill() {
        let c = CleanerConfig::default();
        let full = c.offset_map().unwrap();
        assert_eq!(full.slots(), (128 << 20) / offset_map::BYTES_PER_ENTRY);
        let small = c.offset_map_for(100).unwrap();
        assert!(small.max_entries() >= 100, "{small:?}");
        assert!(small.slots() < 200, "{small:?}");
        // Never past the thread's share, however many keys.
        let two = CleanerConfig {
            threads: 2,
            ..CleanerConfig::default()
        };
        assert_eq!(
            two.offset_map_for(u64::MAX).unwrap().slots(),
            full.slots() / 2
        );
    }
}
