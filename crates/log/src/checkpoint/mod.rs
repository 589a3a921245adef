//! Kafka's offset-checkpoint text format, the one codec for every per-log-directory file of
//! `(topic, partition) → offset` entries: `replication-offset-checkpoint` (high watermarks)
//! and `cleaner-offset-checkpoint` (where each compacted log's dirty section starts).
//!
//! ```text
//! 0                 version
//! 2                 entry count
//! orders 0 1500     topic partition offset (the topic may not hold spaces; Kafka's names
//! orders 1 42       never do, and the line is split from the right)
//! ```
//!
//! Files are rewritten atomically (temp file, fsync, rename, directory fsync). A file that
//! cannot be parsed is ignored with a warning rather than failing the broker: both
//! checkpoints are hints that are relearned (HWs from the leaders, cleaning from the log
//! start) when lost.
//!
//! `offsets.rs`: the high-watermark, log-start and recovery-point checkpoints of each log
//! dir, kept at O(changed) per interval: the [`PartitionOffsets`] each log shares with the
//! [`LogManager`](crate::log_manager::LogManager), and the checkpointer that drains them.

mod offsets;

pub(crate) use self::offsets::Checkpoints;
pub use self::offsets::{
    CheckpointKind, PartitionOffsets, DEFAULT_LOG_START_CHECKPOINT_INTERVAL_MS,
    DEFAULT_RECOVERY_POINT_CHECKPOINT_INTERVAL_MS, LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
};

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::Result;
use crate::fsutil;

/// `(topic, partition) → offset`, as a checkpoint file holds it.
pub type OffsetCheckpoint = BTreeMap<(String, i32), i64>;

/// The only version Kafka writes.
const VERSION: &str = "0";

/// Reads a checkpoint; a missing, unreadable or malformed file reads as empty (with a
/// warning), a malformed line is skipped.
pub fn read(path: &Path) -> OffsetCheckpoint {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return BTreeMap::new(),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "unreadable checkpoint; ignored");
            return BTreeMap::new();
        }
    };
    parse(path, &text)
}

fn parse(path: &Path, text: &str) -> OffsetCheckpoint {
    let mut out = BTreeMap::new();
    // Kafka's `CheckpointFile` creates the file empty before its first write and reads an
    // empty file as no entries: nothing to warn about.
    if text.is_empty() {
        return out;
    }
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some(VERSION) {
        tracing::warn!(path = %path.display(), "unsupported checkpoint version; ignored");
        return out;
    }
    let count = lines.next().and_then(|c| c.trim().parse::<usize>().ok());
    for line in lines {
        let mut parts = line.trim_end().rsplitn(3, ' ');
        let entry = match (parts.next(), parts.next(), parts.next()) {
            (Some(offset), Some(partition), Some(topic)) if !topic.is_empty() => partition
                .parse::<i32>()
                .ok()
                .zip(offset.parse::<i64>().ok())
                .map(|(p, o)| ((topic.to_string(), p), o)),
            _ => None,
        };
        match entry {
            Some((key, offset)) => {
                out.insert(key, offset);
            }
            None => {
                tracing::warn!(path = %path.display(), line, "malformed checkpoint line; ignored")
            }
        }
    }
    if count != Some(out.len()) {
        tracing::warn!(path = %path.display(), declared = ?count, found = out.len(),
            "checkpoint entry count does not match its lines");
    }
    out
}

/// The file's text for `entries`.
pub fn format<'a>(entries: impl IntoIterator<Item = (&'a str, i32, i64)>) -> String {
    let entries: Vec<_> = entries.into_iter().collect();
    let mut text = format!("{VERSION}\n{}\n", entries.len());
    for (topic, partition, offset) in entries {
        text.push_str(&format!("{topic} {partition} {offset}\n"));
    }
    text
}

/// Replaces the checkpoint at `path` with `entries`, atomically.
pub fn write<'a>(
    path: &Path,
    entries: impl IntoIterator<Item = (&'a str, i32, i64)>,
) -> Result<()> {
    fsutil::atomic_write(path, format(entries).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_kafkas_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cleaner-offset-checkpoint");
        write(&path, [("a-b", 0, 42), ("orders", 7, 0)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "0\n2\na-b 0 42\norders 7 0\n");
        let read_back = read(&path);
        assert_eq!(read_back.get(&("a-b".to_string(), 0)), Some(&42));
        assert_eq!(read_back.get(&("orders".to_string(), 7)), Some(&0));
        assert_eq!(read_back.len(), 2);
    }

    #[test]
    fn bad_files_read_as_empty_or_skip_bad_lines() {
        let p = Path::new("x");
        assert!(parse(p, "1\n1\nt 0 5\n").is_empty());
        assert!(parse(p, "").is_empty());
        let m = parse(p, "0\n3\nt 0 5\ngarbage\nt x 1\n");
        assert_eq!(m.len(), 1);
        assert!(read(Path::new("/nonexistent/dir/file")).is_empty());
    }
}
