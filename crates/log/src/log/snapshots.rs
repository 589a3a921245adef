//! Snapshots (KIP-630) beside the log: `<end offset>-<epoch>.checkpoint` files listed at
//! open, created, committed, opened for FetchSnapshot, and deleted below the log start.

use super::Log;
use crate::error::{LogError, Result};
use crate::fsutil;
use crate::snapshot::{RawSnapshotReader, RawSnapshotWriter, SnapshotId};

impl Log {
    /// Snapshot ids, oldest first.
    pub fn snapshots(&self) -> Vec<SnapshotId> {
        self.snapshots.iter().copied().collect()
    }

    /// The newest snapshot.
    pub fn latest_snapshot(&self) -> Option<SnapshotId> {
        self.snapshots.last().copied()
    }

    /// The oldest snapshot.
    pub fn earliest_snapshot(&self) -> Option<SnapshotId> {
        self.snapshots.first().copied()
    }

    /// Starts writing snapshot `id` (to its `.part` file); commit it with
    /// [`Log::commit_snapshot`].
    pub fn create_snapshot(&self, id: SnapshotId) -> Result<RawSnapshotWriter> {
        id.check()?;
        if self.snapshots.contains(&id) {
            return Err(LogError::SnapshotExists {
                end_offset: id.end_offset,
                epoch: id.epoch,
            });
        }
        RawSnapshotWriter::create(&self.dir, id)
    }

    /// Makes a written snapshot durable and visible: fsync, atomic rename, directory fsync.
    pub fn commit_snapshot(&mut self, writer: RawSnapshotWriter) -> Result<SnapshotId> {
        let id = writer.finish(&self.dir)?;
        self.snapshots.insert(id);
        Ok(id)
    }

    /// Opens snapshot `id` for reading by byte position (FetchSnapshot).
    pub fn open_snapshot(&self, id: SnapshotId) -> Result<RawSnapshotReader> {
        if !self.snapshots.contains(&id) {
            return Err(LogError::SnapshotNotFound {
                end_offset: id.end_offset,
                epoch: id.epoch,
            });
        }
        RawSnapshotReader::open(&self.dir, id)
    }

    /// Deletes snapshots whose end offset is below the log start offset, except the newest
    /// one (which a lagging follower may still need). Returns how many.
    pub fn delete_snapshots_before_log_start(&mut self) -> Result<usize> {
        let start = self.log_start_offset();
        let latest = self.latest_snapshot();
        let doomed: Vec<SnapshotId> = self
            .snapshots
            .iter()
            .filter(|id| id.end_offset < start && Some(**id) != latest)
            .copied()
            .collect();
        for id in &doomed {
            fsutil::remove_if_exists(&self.dir.join(id.file_name()))?;
            self.snapshots.remove(id);
        }
        if !doomed.is_empty() {
            fsutil::sync_dir(&self.dir)?;
        }
        Ok(doomed.len())
    }
}
