//! How the core reaches the replicated log: the [`RaftLog`] trait (the driver implements it
//! over `crates/log`), and [`MemoryLog`], an in-memory implementation for tests and the
//! simulator that keeps flushed and unflushed data apart so a simulated crash loses exactly
//! what a real one could.
//!
//! Entries are Kafka RecordBatch v2 bytes; the log keeps the leader-epoch cache implicitly
//! (each batch's partition leader epoch), which answers KIP-279 `end_offset_for_epoch`.
//! `conformance::check` (cargo feature `testing`) runs any implementation through the contract
//! the core relies on.
//!
//! Snapshots (KIP-630): a log holds complete snapshots identified by [`SnapshotId`] (the
//! end offset and the epoch of the last record they include; the log store's id, as the
//! driver keeps them there). After a snapshot, the log
//! before it may be deleted ([`RaftLog::delete_before_latest_snapshot`]), so the start
//! offset moves up; a follower too far behind replaces its whole log by a downloaded
//! snapshot ([`RaftLog::install_snapshot`]). An empty log that starts at a snapshot reports
//! the snapshot's epoch as its last epoch (Kafka's `lastFetchedEpoch`).

use bytes::{Bytes, BytesMut};
use kraftd_log::SnapshotId;
use kraftd_protocol::records::{Batches, RecordBatch, RecordBatchMut};

/// Why the log refused an append. The core treats these as a bad input (ignored with a
/// reason) when they come from the network, and as a broken invariant when it built the batch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    #[error("batch does not parse: {0}")]
    Corrupt(String),
    #[error("batch base offset {base_offset} is not the log end offset {end_offset}")]
    NotContiguous { base_offset: i64, end_offset: i64 },
    #[error("batch epoch {batch_epoch} is below the log's last epoch {last_epoch}")]
    EpochNotMonotonic { batch_epoch: i32, last_epoch: i32 },
    #[error("batch epoch {batch_epoch} is above the current epoch {current_epoch}")]
    EpochAboveCurrent {
        batch_epoch: i32,
        current_epoch: i32,
    },
    #[error("snapshot {end_offset}-{epoch} refused: {reason}")]
    Snapshot {
        end_offset: i64,
        epoch: i32,
        reason: String,
    },
}

/// Snapshot `id` refused for `reason`.
fn refused(id: SnapshotId, reason: impl Into<String>) -> LogError {
    LogError::Snapshot {
        end_offset: id.end_offset,
        epoch: id.epoch,
        reason: reason.into(),
    }
}

/// The replicated log as the core sees it. Offsets are Kafka's: the end offset (LEO) is the
/// next offset to write.
pub trait RaftLog {
    /// The first offset held (0 until snapshots exist).
    fn start_offset(&self) -> i64;
    /// The log end offset: the next offset to be written.
    fn end_offset(&self) -> i64;
    /// The partition leader epoch of the last batch, 0 for an empty log (Kafka's
    /// `lastFetchedEpoch` of an empty log).
    fn last_epoch(&self) -> i32;
    /// Appends one batch as the leader of `epoch`: re-stamps its base offset to the end offset
    /// and its partition leader epoch to `epoch`. Returns (first offset, last offset).
    fn append_as_leader(&mut self, batch: Bytes, epoch: i32) -> Result<(i64, i64), LogError>;
    /// Appends batches fetched from the leader, unchanged; each must start at the end offset,
    /// carry a CRC that checks and an epoch not above `current_epoch`. Nothing is appended
    /// when any batch is refused.
    fn append_as_follower(&mut self, batches: Bytes, current_epoch: i32) -> Result<(), LogError>;
    /// Removes every batch not wholly below `offset` (a batch boundary in a consistent log;
    /// a batch that straddles it goes too, and is fetched again).
    fn truncate_to(&mut self, offset: i64);
    /// KIP-279: the largest epoch ≤ `epoch` held, and the offset where it ends (the start of
    /// the next higher epoch, or the end offset). `(0, start_offset)` when none is held.
    fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64);
    /// Whole batches starting at `from` (a batch boundary), at least one when any exists,
    /// then more while they fit in `max_bytes`.
    fn read(&self, from: i64, max_bytes: usize) -> Bytes;
    /// Makes everything appended durable; returns the flushed end offset.
    fn flush(&mut self) -> i64;
    /// The durable end offset.
    fn flushed_offset(&self) -> i64;
    /// The newest complete snapshot held.
    fn latest_snapshot(&self) -> Option<SnapshotId>;
    /// Stores a complete snapshot of the state below `id.end_offset` durably. Refused when
    /// `id.end_offset` is negative or past the end offset, or the snapshot already exists.
    fn store_snapshot(&mut self, id: SnapshotId, data: &[u8]) -> Result<(), LogError>;
    /// Up to `max_bytes` of snapshot `id` from byte `position` (empty at or past its end),
    /// and the snapshot's size; `None` when it is not held.
    fn read_snapshot(
        &self,
        id: SnapshotId,
        position: u64,
        max_bytes: usize,
    ) -> Option<(Bytes, u64)>;
    /// Deletes what lies wholly below the latest snapshot's end offset (whole batches or
    /// segments, so the start offset moves up to at most that offset) and the snapshots
    /// older than the new start offset but the latest. Returns the start offset.
    fn delete_before_latest_snapshot(&mut self) -> i64;
    /// Replaces the whole log by snapshot `id` (a download from the leader): stores it,
    /// empties the log and restarts it at `id.end_offset` with `id.epoch` as its last epoch.
    /// Durable on return.
    fn install_snapshot(&mut self, id: SnapshotId, data: &[u8]) -> Result<(), LogError>;
    /// Starts downloading snapshot `id` into a partial snapshot (a `.part` file on disk),
    /// abandoning any other download in progress.
    fn begin_snapshot_download(&mut self, id: SnapshotId) -> Result<(), LogError>;
    /// Appends a chunk to the download of `id`; returns the bytes held (the next position).
    fn append_snapshot_download(&mut self, id: SnapshotId, chunk: &[u8]) -> Result<u64, LogError>;
    /// Completes the download of `id` and installs it as [`RaftLog::install_snapshot`] does.
    fn finish_snapshot_download(&mut self, id: SnapshotId) -> Result<(), LogError>;
}

/// One batch held by [`MemoryLog`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    base_offset: i64,
    next_offset: i64,
    epoch: i32,
    bytes: Bytes,
}

/// An in-memory [`RaftLog`] whose [`crash`](MemoryLog::crash) drops unflushed batches.
#[derive(Debug, Clone, Default)]
pub struct MemoryLog {
    entries: Vec<Entry>,
    flushed_offset: i64,
    /// The end offset when `entries` is empty (the start offset).
    start: i64,
    /// Complete snapshots, oldest first (always durable).
    snapshots: Vec<(SnapshotId, Bytes)>,
    /// A snapshot being downloaded (a crash loses it, as it does a `.part` file).
    download: Option<(SnapshotId, Vec<u8>)>,
}

impl MemoryLog {
    pub fn new() -> Self {
        MemoryLog::default()
    }

    /// What a process crash leaves: only what was flushed.
    pub fn crash(&mut self) {
        self.download = None;
        let keep = self.flushed_offset;
        self.entries.retain(|e| e.next_offset <= keep);
        assert_eq!(
            self.end_offset(),
            keep,
            "flushed offset {keep} is not a batch boundary"
        );
    }

    /// The batch starting at `base_offset`, if held (for invariant checks).
    pub fn batch_at(&self, base_offset: i64) -> Option<&Bytes> {
        self.index_of(base_offset).map(|i| &self.entries[i].bytes)
    }

    /// The bytes of snapshot `id`, if held.
    pub fn snapshot(&self, id: SnapshotId) -> Option<&Bytes> {
        self.snapshots
            .iter()
            .find(|(s, _)| *s == id)
            .map(|(_, bytes)| bytes)
    }

    /// Every batch as (base offset, epoch, bytes), oldest first.
    pub fn batches(&self) -> impl Iterator<Item = (i64, i32, &Bytes)> {
        self.entries
            .iter()
            .map(|e| (e.base_offset, e.epoch, &e.bytes))
    }

    fn index_of(&self, base_offset: i64) -> Option<usize> {
        self.entries
            .binary_search_by_key(&base_offset, |e| e.base_offset)
            .ok()
    }

    fn push(&mut self, batch: &RecordBatch) {
        let entry = Entry {
            base_offset: batch.base_offset(),
            next_offset: batch.next_offset(),
            epoch: batch.partition_leader_epoch(),
            bytes: batch.as_bytes().clone(),
        };
        assert_eq!(
            entry.base_offset,
            self.end_offset(),
            "append must be contiguous"
        );
        assert!(
            entry.next_offset > entry.base_offset,
            "empty batch appended"
        );
        self.entries.push(entry);
    }
}

impl RaftLog for MemoryLog {
    fn start_offset(&self) -> i64 {
        self.entries.first().map_or(self.start, |e| e.base_offset)
    }

    fn end_offset(&self) -> i64 {
        self.entries.last().map_or(self.start, |e| e.next_offset)
    }

    fn last_epoch(&self) -> i32 {
        match self.entries.last() {
            Some(e) => e.epoch,
            None => self
                .latest_snapshot()
                .filter(|s| s.end_offset == self.start)
                .map_or(0, |s| s.epoch),
        }
    }

    fn append_as_leader(&mut self, batch: Bytes, epoch: i32) -> Result<(i64, i64), LogError> {
        let mut buf = BytesMut::from(&batch[..]);
        {
            let mut view =
                RecordBatchMut::new(&mut buf[..]).map_err(|e| LogError::Corrupt(e.to_string()))?;
            view.set_base_offset(self.end_offset());
            view.set_partition_leader_epoch(epoch);
        }
        let parsed =
            RecordBatch::parse(buf.freeze()).map_err(|e| LogError::Corrupt(e.to_string()))?;
        if epoch < self.last_epoch() {
            return Err(LogError::EpochNotMonotonic {
                batch_epoch: epoch,
                last_epoch: self.last_epoch(),
            });
        }
        let range = (parsed.base_offset(), parsed.last_offset());
        self.push(&parsed);
        Ok(range)
    }

    fn append_as_follower(&mut self, batches: Bytes, current_epoch: i32) -> Result<(), LogError> {
        let mut parsed = Vec::new();
        let mut end = self.end_offset();
        let mut last_epoch = self.last_epoch();
        for batch in Batches::new(batches) {
            let batch = batch.map_err(|e| LogError::Corrupt(e.to_string()))?;
            batch
                .validate_crc()
                .map_err(|e| LogError::Corrupt(e.to_string()))?;
            if batch.base_offset() != end {
                return Err(LogError::NotContiguous {
                    base_offset: batch.base_offset(),
                    end_offset: end,
                });
            }
            if batch.record_count() <= 0 || batch.next_offset() <= batch.base_offset() {
                return Err(LogError::Corrupt("batch without records".into()));
            }
            let epoch = batch.partition_leader_epoch();
            if epoch < last_epoch {
                return Err(LogError::EpochNotMonotonic {
                    batch_epoch: epoch,
                    last_epoch,
                });
            }
            if epoch > current_epoch {
                return Err(LogError::EpochAboveCurrent {
                    batch_epoch: epoch,
                    current_epoch,
                });
            }
            end = batch.next_offset();
            last_epoch = epoch;
            parsed.push(batch);
        }
        for batch in &parsed {
            self.push(batch);
        }
        Ok(())
    }

    fn truncate_to(&mut self, offset: i64) {
        self.entries.retain(|e| e.next_offset <= offset);
        assert!(self.end_offset() <= offset.max(self.start));
        self.flushed_offset = self.flushed_offset.min(self.end_offset());
    }

    fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        // The last batch whose epoch is ≤ the requested one; its epoch ends where the next
        // (higher) epoch starts.
        let Some(i) = self.entries.iter().rposition(|e| e.epoch <= epoch) else {
            // Below every batch held: the snapshot the log starts at answers, if any.
            return match self.latest_snapshot() {
                Some(s) if s.end_offset == self.start_offset() && s.epoch <= epoch => {
                    (s.epoch, s.end_offset)
                }
                _ => (0, self.start_offset()),
            };
        };
        let found = self.entries[i].epoch;
        let end = self
            .entries
            .get(i + 1)
            .map_or(self.end_offset(), |e| e.base_offset);
        (found, end)
    }

    fn read(&self, from: i64, max_bytes: usize) -> Bytes {
        let Some(start) = self.index_of(from) else {
            return Bytes::new();
        };
        let mut out = BytesMut::new();
        for e in &self.entries[start..] {
            if !out.is_empty() && out.len() + e.bytes.len() > max_bytes {
                break;
            }
            out.extend_from_slice(&e.bytes);
        }
        out.freeze()
    }

    fn flush(&mut self) -> i64 {
        self.flushed_offset = self.end_offset();
        self.flushed_offset
    }

    fn flushed_offset(&self) -> i64 {
        self.flushed_offset
    }

    fn latest_snapshot(&self) -> Option<SnapshotId> {
        self.snapshots.last().map(|(id, _)| *id)
    }

    fn store_snapshot(&mut self, id: SnapshotId, data: &[u8]) -> Result<(), LogError> {
        if id.end_offset < 0 || id.end_offset > self.end_offset() {
            return Err(refused(id, "end offset outside the log"));
        }
        if self.snapshot(id).is_some() {
            return Err(refused(id, "already exists"));
        }
        self.snapshots.push((id, Bytes::copy_from_slice(data)));
        self.snapshots.sort_by_key(|(id, _)| *id);
        Ok(())
    }

    fn read_snapshot(
        &self,
        id: SnapshotId,
        position: u64,
        max_bytes: usize,
    ) -> Option<(Bytes, u64)> {
        let bytes = self.snapshot(id)?;
        let size = bytes.len() as u64;
        let from = usize::try_from(position.min(size)).unwrap_or(bytes.len());
        let to = from.saturating_add(max_bytes).min(bytes.len());
        Some((bytes.slice(from..to), size))
    }

    fn delete_before_latest_snapshot(&mut self) -> i64 {
        let Some(latest) = self.latest_snapshot() else {
            return self.start_offset();
        };
        let end = self.end_offset();
        self.entries.retain(|e| e.next_offset > latest.end_offset);
        if self.entries.is_empty() {
            self.start = end;
        }
        let start = self.start_offset();
        self.start = start;
        // What was deleted lives on in the snapshot, which is durable: a crash must not
        // take the log back below its new start (the leader may snapshot at an HW its
        // followers' flushes made, above its own flushed offset).
        self.flushed_offset = self.flushed_offset.max(start);
        self.snapshots
            .retain(|(id, _)| id.end_offset >= start || *id == latest);
        start
    }

    fn install_snapshot(&mut self, id: SnapshotId, data: &[u8]) -> Result<(), LogError> {
        if id.end_offset < 0 || id.epoch < 0 {
            return Err(refused(id, "negative end offset or epoch"));
        }
        if self.snapshot(id).is_none() {
            self.snapshots.push((id, Bytes::copy_from_slice(data)));
            self.snapshots.sort_by_key(|(id, _)| *id);
        }
        self.entries.clear();
        self.start = id.end_offset;
        self.flushed_offset = id.end_offset;
        self.snapshots.retain(|(s, _)| *s == id);
        Ok(())
    }

    fn begin_snapshot_download(&mut self, id: SnapshotId) -> Result<(), LogError> {
        if id.end_offset < 0 || id.epoch < 0 {
            return Err(refused(id, "negative end offset or epoch"));
        }
        self.download = Some((id, Vec::new()));
        Ok(())
    }

    fn append_snapshot_download(&mut self, id: SnapshotId, chunk: &[u8]) -> Result<u64, LogError> {
        match &mut self.download {
            Some((d, data)) if *d == id => {
                data.extend_from_slice(chunk);
                Ok(data.len() as u64)
            }
            _ => Err(refused(id, "not being downloaded")),
        }
    }

    fn finish_snapshot_download(&mut self, id: SnapshotId) -> Result<(), LogError> {
        match self.download.take() {
            Some((d, data)) if d == id => self.install_snapshot(id, &data),
            other => {
                self.download = other;
                Err(refused(id, "not being downloaded"))
            }
        }
    }
}

#[cfg(feature = "testing")]
pub mod conformance;

#[cfg(test)]
mod tests {
    use super::*;
    use kraftd_protocol::records::RecordBatchBuilder;

    fn batch(n: usize) -> Bytes {
        let mut b = RecordBatchBuilder::new(0);
        for i in 0..n {
            b.append(0, None, Some(Bytes::from(vec![i as u8])), Vec::new())
                .unwrap();
        }
        b.build().unwrap()
    }

    #[test]
    fn memory_log_meets_the_contract() {
        conformance::check(MemoryLog::new);
    }

    #[test]
    fn end_offset_for_epoch_is_kip_279() {
        // S1.4: epoch 1 holds [0,20], epoch 3 holds [21,30].
        let mut log = MemoryLog::new();
        log.append_as_leader(batch(11), 1).unwrap();
        log.append_as_leader(batch(10), 1).unwrap();
        log.append_as_leader(batch(10), 3).unwrap();
        assert_eq!(log.end_offset_for_epoch(2), (1, 21));
        assert_eq!(log.end_offset_for_epoch(3), (3, 31));
        assert_eq!(log.end_offset_for_epoch(0), (0, 0));
        assert_eq!(log.last_epoch(), 3);
    }

    #[test]
    fn crash_loses_only_unflushed_batches() {
        let mut log = MemoryLog::new();
        log.append_as_leader(batch(2), 1).unwrap();
        assert_eq!(log.flush(), 2);
        log.append_as_leader(batch(2), 1).unwrap();
        log.crash();
        assert_eq!(log.end_offset(), 2);
    }

    #[test]
    fn follower_append_refuses_gaps_and_future_epochs() {
        let mut leader = MemoryLog::new();
        leader.append_as_leader(batch(2), 4).unwrap();
        let bytes = leader.read(0, 1 << 20);
        let mut f = MemoryLog::new();
        assert!(matches!(
            f.append_as_follower(bytes.clone(), 3),
            Err(LogError::EpochAboveCurrent { .. })
        ));
        f.append_as_follower(bytes.clone(), 4).unwrap();
        assert!(matches!(
            f.append_as_follower(bytes, 4),
            Err(LogError::NotContiguous { .. })
        ));
        f.truncate_to(0);
        assert_eq!(f.end_offset(), 0);
    }
}
