//! Snapshots of a log's state machine (KIP-630), stored beside the segments as
//! `<end offset, 20 digits>-<epoch, 10 digits>.checkpoint`. A snapshot is written to
//! `<name>.checkpoint.part`, fsynced, and renamed into place, so a name without `.part`
//! always means a complete snapshot; leftover `.part` files (a crash mid-write, or an
//! abandoned FetchSnapshot download) are removed when the log opens.
//!
//! The bytes are opaque here (the Raft layer writes record batches into them); this module
//! only owns naming, atomicity and reading by byte position, which is what FetchSnapshot
//! serves: the raw writer and reader, as Kafka's `RawSnapshotWriter`/`RawSnapshotReader`.
//! [`SnapshotId`] is the one snapshot id of the workspace; the Raft core uses it too.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::error::{LogError, Result};

/// Suffix of a complete snapshot.
pub const SNAPSHOT_SUFFIX: &str = ".checkpoint";
/// Suffix of a snapshot being written.
pub const PARTIAL_SNAPSHOT_SUFFIX: &str = ".checkpoint.part";

/// A snapshot's identity: it holds the state after every record below `end_offset`, the
/// last of which was written in `epoch` (Kafka's `OffsetAndEpoch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SnapshotId {
    /// The offset after the last record the snapshot includes.
    pub end_offset: i64,
    /// The epoch of that last record.
    pub epoch: i32,
}

impl SnapshotId {
    /// The snapshot's file name (without `.part`).
    pub fn file_name(&self) -> String {
        format!(
            "{:020}-{:010}{SNAPSHOT_SUFFIX}",
            self.end_offset, self.epoch
        )
    }

    /// Parses `<20 digits>-<10 digits>.checkpoint`; anything else is not a snapshot.
    pub fn parse_file_name(name: &str) -> Option<SnapshotId> {
        let stem = name.strip_suffix(SNAPSHOT_SUFFIX)?;
        let (offset, epoch) = stem.split_once('-')?;
        if offset.len() != 20 || epoch.len() != 10 {
            return None;
        }
        if !offset
            .bytes()
            .chain(epoch.bytes())
            .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        Some(SnapshotId {
            end_offset: offset.parse().ok()?,
            epoch: epoch.parse().ok()?,
        })
    }

    pub(crate) fn check(&self) -> Result<()> {
        if self.end_offset < 0 || self.epoch < 0 {
            return Err(LogError::InvalidSnapshotId {
                end_offset: self.end_offset,
                epoch: self.epoch,
            });
        }
        Ok(())
    }
}

/// A snapshot file being written, as opaque bytes, to its `.part` file (Kafka's
/// `FileRawSnapshotWriter`; the records inside are the Raft crate's `SnapshotWriter`'s).
/// Commit it with [`crate::Log::commit_snapshot`]; dropping it uncommitted deletes the
/// `.part` file.
#[derive(Debug)]
pub struct RawSnapshotWriter {
    id: SnapshotId,
    part_path: PathBuf,
    file: File,
    written: u64,
    finished: bool,
}

impl RawSnapshotWriter {
    pub(crate) fn create(dir: &Path, id: SnapshotId) -> Result<RawSnapshotWriter> {
        let part_path = dir.join(format!("{}.part", id.file_name()));
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&part_path)
            .map_err(LogError::io("create", &part_path))?;
        Ok(RawSnapshotWriter {
            id,
            part_path,
            file,
            written: 0,
            finished: false,
        })
    }

    /// The snapshot being written.
    pub fn id(&self) -> SnapshotId {
        self.id
    }

    /// Bytes written so far: the position the next chunk of a FetchSnapshot download goes.
    pub fn size_in_bytes(&self) -> u64 {
        self.written
    }

    /// Appends `data` at the end.
    pub fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file
            .write_all_at(data, self.written)
            .map_err(LogError::io("write", &self.part_path))?;
        self.written += data.len() as u64;
        Ok(())
    }

    /// fsync, rename to the final name, fsync the directory.
    pub(crate) fn finish(mut self, dir: &Path) -> Result<SnapshotId> {
        self.file
            .sync_all()
            .map_err(LogError::io("fsync", &self.part_path))?;
        let final_path = dir.join(self.id.file_name());
        std::fs::rename(&self.part_path, &final_path)
            .map_err(LogError::io("rename", &self.part_path))?;
        self.finished = true;
        crate::fsutil::sync_dir(dir)?;
        Ok(self.id)
    }
}

impl Drop for RawSnapshotWriter {
    fn drop(&mut self) {
        if !self.finished {
            // An abandoned snapshot: its bytes are worthless, and open would remove them
            // anyway.
            let _ = std::fs::remove_file(&self.part_path);
        }
    }
}

/// A complete snapshot file opened for reading by byte position (Kafka's
/// `FileRawSnapshotReader`). The open file stays readable even if the snapshot is deleted
/// meanwhile (a FetchSnapshot in progress finishes its download).
#[derive(Debug)]
pub struct RawSnapshotReader {
    id: SnapshotId,
    path: PathBuf,
    file: File,
    size: u64,
}

impl RawSnapshotReader {
    pub(crate) fn open(dir: &Path, id: SnapshotId) -> Result<RawSnapshotReader> {
        let path = dir.join(id.file_name());
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LogError::SnapshotNotFound {
                    end_offset: id.end_offset,
                    epoch: id.epoch,
                })
            }
            Err(e) => return Err(LogError::io("open", &path)(e)),
        };
        let size = file.metadata().map_err(LogError::io("stat", &path))?.len();
        Ok(RawSnapshotReader {
            id,
            path,
            file,
            size,
        })
    }

    /// The snapshot's identity.
    pub fn id(&self) -> SnapshotId {
        self.id
    }

    /// The snapshot's size (FetchSnapshot's `Size`).
    pub fn size_in_bytes(&self) -> u64 {
        self.size
    }

    /// Up to `max_bytes` from byte `position` (FetchSnapshot's `Position` and
    /// `MaxBytes`); empty at or past the end.
    pub fn read(&self, position: u64, max_bytes: usize) -> Result<Bytes> {
        if position >= self.size {
            return Ok(Bytes::new());
        }
        let len = (self.size - position).min(max_bytes as u64) as usize;
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, position)
            .map_err(LogError::io("read", &self.path))?;
        Ok(Bytes::from(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let id = SnapshotId {
            end_offset: 1234,
            epoch: 7,
        };
        assert_eq!(id.file_name(), "00000000000000001234-0000000007.checkpoint");
        assert_eq!(SnapshotId::parse_file_name(&id.file_name()), Some(id));
        for bad in [
            "00000000000000001234-0000000007.checkpoint.part",
            "1234-7.checkpoint",
            "00000000000000001234.log",
            "0000000000000000123x-0000000007.checkpoint",
        ] {
            assert_eq!(SnapshotId::parse_file_name(bad), None, "{bad}");
        }
    }
}
