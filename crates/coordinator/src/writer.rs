//! The log a coordinator's runtime writes to and loads from, as a narrow trait (Kafka's
//! `PartitionWriter` in `coordinator-common`, with the reading half of its
//! `CoordinatorLoader`): append a batch — plain, or transactional for a producer — and learn
//! its offsets; append a transaction marker; read the log from an offset; learn the high
//! watermark. With it, [`load`] replays a partition into a fresh shard exactly as the
//! runtime loads one, and [`MemoryWriter`] keeps a log in memory.
//!
//! Why a trait: the state machines are sans IO, so what they rely on from the log — offsets
//! in append order, markers after the batches they end, reads that give back what was
//! appended — can be stated once and checked without a broker. [`MemoryWriter`] is the
//! implementation the tests use (the `testing` feature's replay check appends every batch a
//! shard hands back and loads a second shard from it); the broker's
//! `coordinator/partition_writer.rs` implements it over the real partition (appends at the
//! leader epoch the shard was loaded in, its reads, its HW) and its runtime loads every shard
//! through [`load`], as `kraftd-raft`'s `RaftLog` is implemented over `crates/log` beside its
//! `MemoryLog`; both writers pass the same conformance check (`testing::writer::check`).
//!
//! An implementation is one partition of the coordinator's topic as its leader sees it: every
//! call may fail with the error the broker answers (NOT_LEADER_OR_FOLLOWER once leadership
//! moved, RECORD_LIST_TOO_LARGE, ...), and a failed call appends nothing.

use bytes::Bytes;
use kraftd_protocol::ErrorCode;
use tracing::warn;

use crate::shard::{CoordinatorShard, OutputBatch, ReplayFailure};

/// Where an appended batch landed: its first and last offset, and the log end after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub base_offset: i64,
    pub last_offset: i64,
    /// The offset after the batch (the log end offset once appended).
    pub end_offset: i64,
}

/// One batch of the log as the loader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEntry {
    /// Coordinator records (key, value; no value: a tombstone) at consecutive offsets from
    /// `base_offset`; `producer` (id, epoch) when the batch is transactional.
    Records {
        base_offset: i64,
        producer: Option<(i64, i16)>,
        records: Vec<(Bytes, Option<Bytes>)>,
    },
    /// A control batch holding one COMMIT or ABORT marker of `producer_id`'s transaction,
    /// written by the transaction coordinator at `coordinator_epoch`.
    Marker {
        offset: i64,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
    },
}

impl LogEntry {
    pub fn base_offset(&self) -> i64 {
        match self {
            LogEntry::Records { base_offset, .. } => *base_offset,
            LogEntry::Marker { offset, .. } => *offset,
        }
    }

    /// The offset after the entry.
    pub fn next_offset(&self) -> i64 {
        match self {
            LogEntry::Records {
                base_offset,
                records,
                ..
            } => base_offset + records.len() as i64,
            LogEntry::Marker { offset, .. } => offset + 1,
        }
    }
}

/// What one read returned: whole entries from the one holding the offset asked for, and
/// the high watermark when it was read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogRead {
    pub entries: Vec<LogEntry>,
    pub high_watermark: i64,
}

/// A coordinator partition's log (see the module docs).
pub trait PartitionWriter {
    /// Appends `batch` (transactional for `batch.producer` when set) as one batch at the log
    /// end. An empty batch appends nothing and is refused with INVALID_RECORD: the runtime
    /// skips empty batches before it gets here.
    fn append(&mut self, batch: &OutputBatch) -> Result<Appended, ErrorCode>;

    /// Appends a COMMIT (`commit`) or ABORT marker ending the transaction of
    /// `producer_id` at `producer_epoch`, from the transaction coordinator at
    /// `coordinator_epoch` (WriteTxnMarkers on this partition); its offset.
    fn append_end_txn(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
    ) -> Result<i64, ErrorCode>;

    /// The entries that end after `offset` (the first of them may hold it), at most
    /// `max_entries` of them (at least one when there is any), up to the log end: the
    /// loader replays everything written, committed or not, as Kafka's loader does. A log
    /// that was compacted may have gaps: an entry's records are consecutive, entries need
    /// not be.
    fn read(&self, offset: i64, max_entries: usize) -> Result<LogRead, ErrorCode>;

    /// The first offset of the log.
    fn log_start_offset(&self) -> Result<i64, ErrorCode>;

    /// The offset after the last entry.
    fn log_end_offset(&self) -> Result<i64, ErrorCode>;

    /// The offset up to which the log is committed (replies and work wait for it).
    fn high_watermark(&self) -> Result<i64, ErrorCode>;
}

/// Why [`load`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("reading the log: {0:?}")]
    Read(ErrorCode),
    #[error("record at {offset}: {reason}")]
    Corrupt { offset: i64, reason: String },
}

/// What [`load`] replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSummary {
    pub log_end_offset: i64,
    pub high_watermark: i64,
    /// Records replayed (markers not counted; records of an unknown type counted).
    pub records: u64,
}

/// How many entries one read may bring in while loading: enough that the writer's own read
/// size bounds it (the broker's reads 8 MiB of the log at a time; a cap of a thousand
/// entries would re-read those 8 MiB for every thousand small commits).
const LOAD_READ_ENTRIES: usize = 1 << 20;

/// Replays `log` from its start to its end into `shard` (a fresh one), as the broker's
/// runtime loads a shard (Kafka's `CoordinatorLoaderImpl`): records through
/// [`CoordinatorShard::replay`] in offset order (an unknown record type skipped, a corrupt
/// record failing the load), markers through [`CoordinatorShard::replay_end_txn`]. The caller
/// calls [`CoordinatorShard::on_loaded`] afterwards, as the runtime does.
pub fn load<S: CoordinatorShard>(
    log: &impl PartitionWriter,
    shard: &mut S,
) -> Result<LoadSummary, LoadError> {
    let end = log.log_end_offset().map_err(LoadError::Read)?;
    let mut offset = log.log_start_offset().map_err(LoadError::Read)?;
    let mut summary = LoadSummary {
        log_end_offset: end,
        high_watermark: 0,
        records: 0,
    };
    while offset < end {
        let read = log
            .read(offset, LOAD_READ_ENTRIES)
            .map_err(LoadError::Read)?;
        summary.high_watermark = read.high_watermark;
        if read.entries.is_empty() {
            break;
        }
        let before = offset;
        for entry in read.entries {
            let next = entry.next_offset();
            if next <= offset {
                continue;
            }
            match entry {
                LogEntry::Marker {
                    offset: at,
                    producer_id,
                    commit,
                    ..
                } => shard.replay_end_txn(at, producer_id, commit),
                LogEntry::Records {
                    base_offset,
                    producer,
                    records,
                } => {
                    for (i, (key, value)) in records.into_iter().enumerate() {
                        let at = base_offset + i as i64;
                        if at < offset {
                            continue;
                        }
                        match shard.replay(at, producer, key, value) {
                            Ok(()) => {}
                            Err(ReplayFailure::UnknownType(e)) => {
                                warn!(topic = S::TOPIC, offset = at, error = %e, "skipping a record of an unknown type");
                            }
                            Err(ReplayFailure::Corrupt(reason)) => {
                                return Err(LoadError::Corrupt { offset: at, reason })
                            }
                        }
                        summary.records += 1;
                    }
                }
            }
            offset = offset.max(next);
        }
        if offset == before {
            // Nothing past `offset` came back: a writer that breaks its contract ends the
            // load here rather than looping.
            break;
        }
    }
    summary.log_end_offset = end.max(offset);
    Ok(summary)
}

/// A coordinator partition's log in memory: entries with their offsets, producers and
/// markers, and a high watermark moved by hand ([`MemoryWriter::commit_up_to`]), so a test
/// decides what is committed and may lose the rest ([`MemoryWriter::truncate_uncommitted`],
/// a failover to a replica that had not fetched it).
#[derive(Debug, Clone, Default)]
pub struct MemoryWriter {
    entries: Vec<LogEntry>,
    end_offset: i64,
    high_watermark: i64,
}

impl MemoryWriter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every entry, in offset order.
    pub fn entries(&self) -> &[LogEntry] {
        &self.entries
    }

    /// Moves the high watermark to `offset` (at most the log end; it never goes back).
    pub fn commit_up_to(&mut self, offset: i64) {
        self.high_watermark = self.high_watermark.max(offset.min(self.end_offset));
    }

    /// Commits everything appended.
    pub fn commit_all(&mut self) {
        self.commit_up_to(self.end_offset);
    }

    /// Drops every entry past the high watermark (a new leader that had not fetched them).
    pub fn truncate_uncommitted(&mut self) {
        let hw = self.high_watermark;
        self.entries.retain(|e| e.next_offset() <= hw);
        self.end_offset = self.entries.last().map_or(0, LogEntry::next_offset);
        assert_eq!(
            self.end_offset, hw,
            "a batch straddles the high watermark: it commits whole or not at all"
        );
    }
}

impl PartitionWriter for MemoryWriter {
    fn append(&mut self, batch: &OutputBatch) -> Result<Appended, ErrorCode> {
        if batch.records.is_empty() {
            return Err(ErrorCode::InvalidRecord);
        }
        let base_offset = self.end_offset;
        let end_offset = base_offset + batch.records.len() as i64;
        self.entries.push(LogEntry::Records {
            base_offset,
            producer: batch.producer,
            records: batch.records.clone(),
        });
        self.end_offset = end_offset;
        Ok(Appended {
            base_offset,
            last_offset: end_offset - 1,
            end_offset,
        })
    }

    fn append_end_txn(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
    ) -> Result<i64, ErrorCode> {
        let offset = self.end_offset;
        self.entries.push(LogEntry::Marker {
            offset,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            commit,
        });
        self.end_offset += 1;
        Ok(offset)
    }

    fn read(&self, offset: i64, max_entries: usize) -> Result<LogRead, ErrorCode> {
        if offset < 0 || offset > self.end_offset {
            return Err(ErrorCode::OffsetOutOfRange);
        }
        let first = self.entries.partition_point(|e| e.next_offset() <= offset);
        let entries = self.entries[first..]
            .iter()
            .take(max_entries.max(1))
            .cloned()
            .collect();
        Ok(LogRead {
            entries,
            high_watermark: self.high_watermark,
        })
    }

    fn log_start_offset(&self) -> Result<i64, ErrorCode> {
        Ok(0)
    }

    fn log_end_offset(&self) -> Result<i64, ErrorCode> {
        Ok(self.end_offset)
    }

    fn high_watermark(&self) -> Result<i64, ErrorCode> {
        Ok(self.high_watermark)
    }
}
