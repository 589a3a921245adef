//! The leader-epoch cache: for each leader epoch seen in the log, the offset of its first
//! batch. It answers OffsetForLeaderEpoch (KIP-101, KIP-279) and Raft's divergence check
//! (`end_offset_for_epoch`), so it must agree with the log at all times: it is updated on
//! every append that starts a new epoch, truncated with the log, and persisted in
//! `leader-epoch-checkpoint` in Kafka's text format:
//!
//! ```text
//! 0            <- version
//! 2            <- number of entries
//! 0 0          <- "epoch startOffset"
//! 3 120
//! ```
//!
//! Every change rewrites the file atomically (temp file, fsync, rename). On open the log
//! reconciles the file with what recovery kept, so a crash between the two cannot leave
//! them disagreeing.

use std::path::{Path, PathBuf};

use crate::error::{LogError, Result};
use crate::fsutil;

/// The checkpoint's file name, as Kafka names it.
pub const LEADER_EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";
const CHECKPOINT_VERSION: i32 = 0;

/// One entry: `epoch` began at `start_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    /// The leader epoch.
    pub epoch: i32,
    /// The offset of its first batch.
    pub start_offset: i64,
}

/// The leader-epoch cache of one log (see the module docs).
#[derive(Debug)]
pub struct LeaderEpochCache {
    path: PathBuf,
    /// Epochs strictly increasing, start offsets non-decreasing.
    entries: Vec<EpochEntry>,
    /// The file differs from memory in entries at the log end only (added by
    /// [`LeaderEpochCache::assign_at_log_end`], removed by
    /// [`LeaderEpochCache::drop_from_log_end`]); rewritten before the log holds data past
    /// them.
    stale_file: bool,
}

impl LeaderEpochCache {
    /// Loads `dir/leader-epoch-checkpoint` (empty when the file does not exist). A malformed
    /// file is an error naming the line: the cache is not rebuilt by guessing.
    pub fn load(dir: &Path) -> Result<LeaderEpochCache> {
        let path = dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(LeaderEpochCache {
                    path,
                    entries: Vec::new(),
                    stale_file: false,
                })
            }
            Err(e) => return Err(LogError::io("read", &path)(e)),
        };
        let entries = parse_checkpoint(&text).map_err(|(line, reason)| {
            LogError::corrupt(&path, line as u64, format!("line {line}: {reason}"))
        })?;
        Ok(LeaderEpochCache {
            path,
            entries,
            stale_file: false,
        })
    }

    /// All entries, oldest first.
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    /// The newest entry.
    pub fn latest(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    /// The newest epoch.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.epoch)
    }

    /// The epoch of the batch holding `offset`, if the cache covers it.
    pub fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
        let idx = self.entries.partition_point(|e| e.start_offset <= offset);
        idx.checked_sub(1)
            .and_then(|i| self.entries.get(i))
            .map(|e| e.epoch)
    }

    /// KIP-279's answer for `epoch`: the largest known epoch ≤ `epoch` and its end offset,
    /// which is the start offset of the next known epoch, or `log_end_offset` for the
    /// latest one. When `epoch` is below every known epoch, Kafka's answer: `epoch` itself
    /// with the first known epoch's start offset (the data before it is gone, so the
    /// follower truncates to there). `None` when the cache is empty or `epoch` is negative.
    ///
    /// Kafka answers "undefined" for an epoch above the latest one; this returns the latest
    /// epoch and the log end offset instead, as issue 3 specifies (largest epoch ≤ the
    /// requested one), which is what Raft's divergence check wants.
    pub fn end_offset_for_epoch(&self, epoch: i32, log_end_offset: i64) -> Option<(i32, i64)> {
        if epoch < 0 {
            return None;
        }
        let idx = self.entries.partition_point(|e| e.epoch <= epoch);
        match (
            idx.checked_sub(1).and_then(|i| self.entries.get(i)),
            self.entries.get(idx),
        ) {
            (None, None) => None,
            (None, Some(next)) => Some((epoch, next.start_offset)),
            (Some(floor), Some(next)) => Some((floor.epoch, next.start_offset)),
            (Some(floor), None) => Some((floor.epoch, log_end_offset)),
        }
    }

    /// Records that `epoch` starts at `start_offset`, if `epoch` is newer than the latest
    /// one (older or equal epochs add nothing). Persists the change.
    pub(crate) fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<bool> {
        if !self.push(epoch, start_offset) {
            return Ok(false);
        }
        self.persist()?;
        Ok(true)
    }

    /// A new leader's epoch starting at the log end before it writes anything (Kafka's
    /// `maybeAssignEpochStartOffset`), in memory only: until data follows, the entry
    /// describes nothing, and an open would drop it from the file anyway (see
    /// [`LeaderEpochCache::drop_from_log_end`]). [`LeaderEpochCache::sync_before_append`]
    /// writes it before the epoch's first batch. Kafka fsyncs here; leading 100,000 idle
    /// partitions after a restart spent 32 s on it.
    pub(crate) fn assign_at_log_end(&mut self, epoch: i32, log_end_offset: i64) -> bool {
        let pushed = self.push(epoch, log_end_offset);
        self.stale_file |= pushed;
        pushed
    }

    fn push(&mut self, epoch: i32, start_offset: i64) -> bool {
        if epoch < 0 || self.latest_epoch().is_some_and(|l| epoch <= l) {
            return false;
        }
        assert!(
            self.latest().is_none_or(|l| l.start_offset <= start_offset),
            "epoch {epoch} at {start_offset} starts before the latest entry {:?}",
            self.latest()
        );
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        true
    }

    /// Removes the entries starting at or after `end_offset` (the log was truncated there).
    pub(crate) fn truncate_from_end(&mut self, end_offset: i64) -> Result<()> {
        let keep = self
            .entries
            .partition_point(|e| e.start_offset < end_offset);
        if keep < self.entries.len() {
            self.entries.truncate(keep);
            self.persist()?;
        }
        Ok(())
    }

    /// Drops the entries starting at or after `log_end_offset`, in memory only: they
    /// describe no data (an epoch a leader began without writing anything in it), and every
    /// open of the log drops them from what it reads (`Log::open` reconciles the cache with
    /// the log end), so the file may keep them until the next write. A leader stepping down
    /// from 10,000 idle partitions, or reopening them, paid a rewrite and two fsyncs per
    /// partition for it. [`LeaderEpochCache::sync_before_append`] rewrites the file before
    /// the log holds data past such an entry (where a load would no longer drop it).
    pub(crate) fn drop_from_log_end(&mut self, log_end_offset: i64) {
        let keep = self
            .entries
            .partition_point(|e| e.start_offset < log_end_offset);
        if keep < self.entries.len() {
            self.entries.truncate(keep);
            self.stale_file = true;
        }
    }

    /// Called before data is appended: rewrites the file if it differs from memory at the
    /// log end — an entry dropped there would otherwise look current to the next load once
    /// data follows it, and one added there must be durable before its data.
    pub(crate) fn sync_before_append(&mut self) -> Result<()> {
        if self.stale_file {
            self.persist()?;
        }
        Ok(())
    }

    /// The log now starts at `start_offset`: entries that started at or before it collapse
    /// into one for the epoch in force at `start_offset`, starting there (Kafka's
    /// `truncateFromStart`).
    pub(crate) fn truncate_from_start(&mut self, start_offset: i64) -> Result<()> {
        let n = self
            .entries
            .partition_point(|e| e.start_offset <= start_offset);
        let Some(last) = n.checked_sub(1).and_then(|i| self.entries.get(i)).copied() else {
            return Ok(());
        };
        if n == 1 && last.start_offset == start_offset {
            return Ok(());
        }
        self.entries.drain(..n);
        self.entries.insert(
            0,
            EpochEntry {
                epoch: last.epoch,
                start_offset,
            },
        );
        self.persist()
    }

    /// Forgets every entry (the log was emptied to start elsewhere).
    pub(crate) fn clear(&mut self) -> Result<()> {
        self.entries.clear();
        self.persist()
    }

    fn persist(&mut self) -> Result<()> {
        let mut text = format!("{CHECKPOINT_VERSION}\n{}\n", self.entries.len());
        for e in &self.entries {
            text.push_str(&format!("{} {}\n", e.epoch, e.start_offset));
        }
        fsutil::atomic_write(&self.path, text.as_bytes())?;
        self.stale_file = false;
        Ok(())
    }
}

/// Parses Kafka's checkpoint text; errors carry the 1-based line number.
///
/// An empty file, or one that ends after its version line, holds no entries: Kafka's
/// `CheckpointFile` creates the file empty when it opens a partition's log and writes it
/// only at the first epoch, and reads it back so (its `CheckpointReadBuffer`). A Kafka broker
/// leaves such files for the partitions it hosted without ever appending to them.
fn parse_checkpoint(text: &str) -> std::result::Result<Vec<EpochEntry>, (usize, String)> {
    let mut lines = text.lines();
    let Some(version) = lines.next() else {
        return Ok(Vec::new());
    };
    let version: i32 = version
        .trim()
        .parse()
        .map_err(|_| (1, "malformed version".to_string()))?;
    if version != CHECKPOINT_VERSION {
        return Err((1, format!("unsupported version {version}")));
    }
    let Some(count) = lines.next() else {
        return Ok(Vec::new());
    };
    let count: usize = count
        .trim()
        .parse()
        .map_err(|_| (2, "malformed entry count".to_string()))?;
    let mut entries: Vec<EpochEntry> = Vec::new();
    for (i, line) in lines.enumerate() {
        let line_no = i + 3;
        if line.trim().is_empty() {
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(epoch), Some(offset), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err((line_no, "expected \"epoch offset\"".to_string()));
        };
        let epoch: i32 = epoch
            .parse()
            .map_err(|_| (line_no, format!("bad epoch {epoch:?}")))?;
        let start_offset: i64 = offset
            .parse()
            .map_err(|_| (line_no, format!("bad offset {offset:?}")))?;
        if epoch < 0 || start_offset < 0 {
            return Err((line_no, "negative epoch or offset".to_string()));
        }
        if let Some(prev) = entries.last() {
            if epoch <= prev.epoch || start_offset < prev.start_offset {
                return Err((line_no, "entries out of order".to_string()));
            }
        }
        entries.push(EpochEntry {
            epoch,
            start_offset,
        });
    }
    if entries.len() != count {
        return Err((2, format!("count {count} but {} entries", entries.len())));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(dir: &Path, entries: &[(i32, i64)]) -> LeaderEpochCache {
        let mut c = LeaderEpochCache::load(dir).unwrap();
        for &(e, o) in entries {
            assert!(c.assign(e, o).unwrap());
        }
        c
    }

    #[test]
    fn file_format_is_kafkas() {
        let dir = tempfile::tempdir().unwrap();
        cache(dir.path(), &[(0, 0), (3, 120)]);
        let text = std::fs::read_to_string(dir.path().join(LEADER_EPOCH_CHECKPOINT_FILE)).unwrap();
        assert_eq!(text, "0\n2\n0 0\n3 120\n");
        let loaded = LeaderEpochCache::load(dir.path()).unwrap();
        assert_eq!(loaded.entries().len(), 2);
        assert!(!dir.path().join("leader-epoch-checkpoint.tmp").exists());
    }

    #[test]
    fn end_offset_for_epoch_follows_kip_279() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(dir.path(), &[(2, 10), (4, 20), (7, 35)]);
        assert_eq!(c.end_offset_for_epoch(1, 50), Some((1, 10)));
        assert_eq!(c.end_offset_for_epoch(2, 50), Some((2, 20)));
        assert_eq!(c.end_offset_for_epoch(3, 50), Some((2, 20)));
        assert_eq!(c.end_offset_for_epoch(4, 50), Some((4, 35)));
        assert_eq!(c.end_offset_for_epoch(6, 50), Some((4, 35)));
        assert_eq!(c.end_offset_for_epoch(7, 50), Some((7, 50)));
        assert_eq!(c.end_offset_for_epoch(9, 50), Some((7, 50)));
        assert_eq!(c.end_offset_for_epoch(-1, 50), None);
        let empty = LeaderEpochCache::load(tempfile::tempdir().unwrap().path()).unwrap();
        assert_eq!(empty.end_offset_for_epoch(3, 0), None);
    }

    #[test]
    fn truncation_from_both_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = cache(dir.path(), &[(2, 10), (4, 20), (7, 35)]);
        assert!(!c.assign(7, 40).unwrap());
        assert!(!c.assign(5, 40).unwrap());
        c.truncate_from_end(35).unwrap();
        assert_eq!(
            c.latest(),
            Some(EpochEntry {
                epoch: 4,
                start_offset: 20
            })
        );
        c.truncate_from_start(25).unwrap();
        assert_eq!(
            c.entries(),
            &[EpochEntry {
                epoch: 4,
                start_offset: 25
            }]
        );
        let loaded = LeaderEpochCache::load(dir.path()).unwrap();
        assert_eq!(loaded.entries(), c.entries());
        c.truncate_from_start(5).unwrap();
        assert_eq!(c.entries().len(), 1);
        c.clear().unwrap();
        assert!(LeaderEpochCache::load(dir.path())
            .unwrap()
            .entries()
            .is_empty());
    }

    /// A Kafka broker creates the file empty for a partition it never appended to: kraftd
    /// opens such a partition (seen in a rolling migration: it refused to host them).
    #[test]
    fn an_empty_checkpoint_as_kafka_creates_it_holds_no_entries() {
        for text in ["", "0\n"] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(LEADER_EPOCH_CHECKPOINT_FILE), text).unwrap();
            let cache = LeaderEpochCache::load(dir.path()).unwrap();
            assert!(cache.entries().is_empty(), "{text:?}");
        }
    }

    #[test]
    fn malformed_checkpoints_are_errors_naming_the_line() {
        for text in [
            "\n",
            "1\n0\n",
            "0\n2\n0 0\n",
            "0\n2\n3 10\n2 20\n",
            "0\n1\nx 1\n",
            "0\n1\n1 2 3\n",
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(LEADER_EPOCH_CHECKPOINT_FILE), text).unwrap();
            let err = LeaderEpochCache::load(dir.path()).unwrap_err();
            assert!(matches!(err, LogError::Corrupt { .. }), "{text:?}: {err}");
        }
    }
}
