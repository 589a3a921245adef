//! How the core reaches the replicated log: the [`RaftLog`] trait (the driver implements it
//! over `crates/log`), and [`MemoryLog`], an in-memory implementation for tests and the
//! simulator that keeps flushed and unflushed data apart so a simulated crash loses exactly
//! what a real one could.
//!
//! Entries are Kafka RecordBatch v2 bytes; the log keeps the leader-epoch cache implicitly
//! (each batch's partition leader epoch), which answers KIP-279 `end_offset_for_epoch`.
//! [`conformance::check`] runs any implementation through the contract the core relies on.

use bytes::{Bytes, BytesMut};
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
}

impl MemoryLog {
    pub fn new() -> Self {
        MemoryLog::default()
    }

    /// What a process crash leaves: only what was flushed.
    pub fn crash(&mut self) {
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
        0
    }

    fn end_offset(&self) -> i64 {
        self.entries.last().map_or(0, |e| e.next_offset)
    }

    fn last_epoch(&self) -> i32 {
        self.entries.last().map_or(0, |e| e.epoch)
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
        assert!(self.end_offset() <= offset.max(0));
        self.flushed_offset = self.flushed_offset.min(self.end_offset());
    }

    fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        // The last batch whose epoch is ≤ the requested one; its epoch ends where the next
        // (higher) epoch starts.
        let Some(i) = self.entries.iter().rposition(|e| e.epoch <= epoch) else {
            return (0, self.start_offset());
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
}

/// The behaviour every [`RaftLog`] must have, as one function a driver's log can be run
/// through (`conformance::check(|| MyLog::open(..))`): the core relies on exactly this.
pub mod conformance {
    use bytes::Bytes;
    use kraftd_protocol::records::{Batches, RecordBatchBuilder};

    use super::RaftLog;

    fn batch(records: usize) -> Bytes {
        let mut b = RecordBatchBuilder::new(0);
        for i in 0..records {
            b.append(0, None, Some(Bytes::from(vec![i as u8; 8])), Vec::new())
                .expect("append to a fresh batch");
        }
        b.build().expect("a batch builds")
    }

    /// Panics with a description of the first contract the log `make` returns breaks.
    pub fn check<L: RaftLog>(make: impl Fn() -> L) {
        let mut log = make();
        assert_eq!(log.end_offset(), 0, "an empty log ends at 0");
        assert_eq!(log.last_epoch(), 0, "an empty log's last epoch is 0");
        assert_eq!(log.end_offset_for_epoch(5), (0, log.start_offset()));
        assert!(log.read(0, 1 << 20).is_empty());

        // The leader's appends: offsets assigned, epoch stamped.
        assert_eq!(log.append_as_leader(batch(3), 1).expect("append"), (0, 2));
        assert_eq!(log.append_as_leader(batch(2), 1).expect("append"), (3, 4));
        assert_eq!(log.append_as_leader(batch(4), 3).expect("append"), (5, 8));
        assert_eq!(log.end_offset(), 9);
        assert_eq!(log.last_epoch(), 3);
        assert!(
            log.append_as_leader(batch(1), 2).is_err(),
            "epochs never go back"
        );
        assert_eq!(log.end_offset(), 9, "a refused append changes nothing");

        // KIP-279: the largest epoch ≤ the one asked, and where it ends.
        assert_eq!(log.end_offset_for_epoch(1), (1, 5));
        assert_eq!(log.end_offset_for_epoch(2), (1, 5));
        assert_eq!(log.end_offset_for_epoch(3), (3, 9));
        assert_eq!(log.end_offset_for_epoch(7), (3, 9));

        // Reads are whole batches from a boundary: at least one, more while they fit.
        let one = log.read(0, 1);
        assert_eq!(Batches::new(one).count(), 1);
        let all = log.read(3, 1 << 20);
        let bases: Vec<i64> = Batches::new(all.clone())
            .map(|b| b.expect("whole batches").base_offset())
            .collect();
        assert_eq!(bases, vec![3, 5]);

        // Flush makes everything durable.
        assert_eq!(log.flush(), 9);
        assert_eq!(log.flushed_offset(), 9);

        // A follower appends the leader's batches unchanged, and refuses gaps, repeats and
        // epochs above its own.
        let mut follower = make();
        follower
            .append_as_follower(log.read(0, 1 << 20), 3)
            .expect("the leader's batches");
        assert_eq!(follower.end_offset(), 9);
        assert_eq!(follower.read(0, 1 << 20), log.read(0, 1 << 20));
        assert!(follower
            .append_as_follower(log.read(5, 1 << 20), 3)
            .is_err());
        let mut behind = make();
        assert!(behind.append_as_follower(log.read(0, 1 << 20), 2).is_err());
        assert_eq!(
            behind.end_offset(),
            0,
            "nothing of a refused fetch is appended"
        );

        // Truncation removes whole batches from the offset on.
        follower.truncate_to(5);
        assert_eq!(follower.end_offset(), 5);
        assert_eq!(follower.last_epoch(), 1);
        assert!(follower.flushed_offset() <= 5);
        follower.truncate_to(0);
        assert_eq!(follower.end_offset(), 0);
    }
}

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
