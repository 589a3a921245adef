//! Per-partition idempotent producer state (Kafka's `ProducerStateManager`, `ProducerStateEntry`
//! and the data-batch half of `ProducerAppendInfo`).
//!
//! A leader must refuse a batch whose sequence does not follow the producer's last one and must
//! answer a retried batch with the offsets it was first written at, or idempotent producers would
//! duplicate or reorder records. That needs, per producer id, its epoch and its last
//! [`NUM_BATCHES_TO_RETAIN`] batches. The state is rebuilt from the log on startup and after
//! truncation, and snapshots beside the log (Kafka's `<offset>.snapshot` files, byte for byte)
//! bound how much of the log must be replayed.
//!
//! Pure: no clock (callers pass `now_ms`), no runtime; only the snapshot functions touch files.
//! Transactions (the ongoing ones, their markers, the last stable offset) are the room
//! `producer_state/txn.rs`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bytes::{Buf, BufMut};
use kraftd_protocol::ErrorCode;

mod txn;
pub use txn::{AbortedTxn, CompletedTxn};

/// How many recent batches per producer are kept for duplicate detection; matches the
/// producer's `max.in.flight.requests.per.connection` ceiling for idempotence, so any retried
/// in-flight batch is still recognised.
pub const NUM_BATCHES_TO_RETAIN: usize = 5;

/// Kafka's `RecordBatch.NO_PRODUCER_EPOCH`: the epoch of a producer we hold no state for.
pub const NO_PRODUCER_EPOCH: i16 = -1;

/// Kafka's `RecordBatch.NO_SEQUENCE`.
pub const NO_SEQUENCE: i32 = -1;

/// Kafka's `producer.id.expiration.ms` default (one day).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;

/// The only snapshot version Kafka writes and reads (`PRODUCER_SNAPSHOT_VERSION`).
pub const PRODUCER_SNAPSHOT_VERSION: i16 = 1;

/// Kafka's `LogFileUtils.PRODUCER_SNAPSHOT_FILE_SUFFIX`; the log's file listing must skip it.
pub const PRODUCER_SNAPSHOT_FILE_SUFFIX: &str = ".snapshot";

/// Where one appended batch of a producer landed; kept so a retry is answered with the
/// original offsets instead of being written twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    /// The batch's max timestamp; drives producer id expiration.
    pub timestamp: i64,
}

/// Everything the partition remembers about one producer id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerStateEntry {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Oldest first, at most [`NUM_BATCHES_TO_RETAIN`], all of `producer_epoch`.
    pub batches: VecDeque<BatchMetadata>,
    /// Max timestamp of the last batch; the producer expires this long after it.
    pub last_timestamp: i64,
    /// The epoch of the transaction coordinator that wrote this producer's last marker (-1:
    /// none); a marker from an older coordinator is fenced.
    pub coordinator_epoch: i32,
    /// The first offset of the producer's ongoing transaction; an open transaction keeps its
    /// producer from expiring.
    pub current_txn_first_offset: Option<i64>,
}

/// What the leader must do with a batch before appending it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerCheck {
    /// Append the batch, then [`ProducerStateManager::update`] with where it landed.
    Append,
    /// A retry of a batch already in the log: answer with these offsets, append nothing.
    Duplicate(BatchMetadata),
}

/// Why the leader refuses a batch; each maps to the error code Kafka answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProducerStateError {
    #[error(
        "out of order sequence number for producer {producer_id} epoch {producer_epoch}: \
         {first_seq} (incoming), {current_last_seq} (current end sequence) at epoch {current_epoch}"
    )]
    OutOfOrderSequence {
        producer_id: i64,
        producer_epoch: i16,
        first_seq: i32,
        current_epoch: i16,
        current_last_seq: i32,
    },
    #[error(
        "epoch of producer {producer_id} is {producer_epoch}, older than the last seen epoch \
         {current_epoch}"
    )]
    InvalidProducerEpoch {
        producer_id: i64,
        producer_epoch: i16,
        current_epoch: i16,
    },
    /// Never returned by [`ProducerStateManager::check`]: since KIP-360 (Kafka 2.5) a leader
    /// accepts any sequence from a producer it holds no state for. Kept so callers that learn of
    /// lost state elsewhere answer with Kafka's code.
    #[error("unknown producer id {producer_id}")]
    UnknownProducerId { producer_id: i64 },
    /// A marker from a transaction coordinator older than the one that wrote the producer's
    /// last marker (Kafka's `TransactionCoordinatorFencedException`).
    #[error(
        "coordinator epoch {coordinator_epoch} of the marker for producer {producer_id} is older \
         than the last seen {current_coordinator_epoch}"
    )]
    TransactionCoordinatorFenced {
        producer_id: i64,
        coordinator_epoch: i32,
        current_coordinator_epoch: i32,
    },
    /// A non-transactional write from a producer with a transaction open (Kafka's
    /// `InvalidTxnStateException`).
    #[error("expected a transactional write from producer {producer_id}: its transaction is open")]
    InvalidTxnState { producer_id: i64 },
}

impl ProducerStateError {
    /// The code Kafka puts in the ProduceResponse partition for this refusal.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            ProducerStateError::OutOfOrderSequence { .. } => ErrorCode::OutOfOrderSequenceNumber,
            ProducerStateError::InvalidProducerEpoch { .. } => ErrorCode::InvalidProducerEpoch,
            ProducerStateError::UnknownProducerId { .. } => ErrorCode::UnknownProducerId,
            ProducerStateError::TransactionCoordinatorFenced { .. } => {
                ErrorCode::TransactionCoordinatorFenced
            }
            ProducerStateError::InvalidTxnState { .. } => ErrorCode::InvalidTxnState,
        }
    }
}

/// The producer state of one partition, and its snapshots in the partition's directory.
#[derive(Debug)]
pub struct ProducerStateManager {
    dir: PathBuf,
    producer_id_expiration_ms: i64,
    producers: HashMap<i64, ProducerStateEntry>,
    /// Kafka's `lastMapOffset`: the state reflects the log below this offset.
    map_end_offset: i64,
    /// Kafka's `lastSnapOffset`: no new snapshot is worth writing until the map passes it.
    last_snap_offset: i64,
    /// Kafka's `ongoingTxns`: first offset of each open transaction → its producer id.
    ongoing_txns: BTreeMap<i64, i64>,
    /// Kafka's `unreplicatedTxns`: transactions whose marker is written but not yet below
    /// the high watermark, by first offset → (producer id, marker offset); they still hold
    /// the last stable offset back.
    unreplicated_txns: BTreeMap<i64, (i64, i64)>,
}

impl BatchMetadata {
    /// Kafka stores `last_offset - first_offset` rather than the first offset.
    pub fn offset_delta(&self) -> i32 {
        i32::try_from(self.last_offset - self.first_offset)
            .expect("a batch spans at most i32::MAX offsets")
    }
}

impl ProducerStateEntry {
    /// A producer seen for the first time: Kafka's `ProducerStateEntry.empty`.
    pub fn empty(producer_id: i64) -> Self {
        ProducerStateEntry {
            producer_id,
            producer_epoch: NO_PRODUCER_EPOCH,
            batches: VecDeque::new(),
            last_timestamp: -1,
            coordinator_epoch: -1,
            current_txn_first_offset: None,
        }
    }

    pub fn first_seq(&self) -> i32 {
        self.batches.front().map_or(NO_SEQUENCE, |b| b.first_seq)
    }

    pub fn last_seq(&self) -> i32 {
        self.batches.back().map_or(NO_SEQUENCE, |b| b.last_seq)
    }

    pub fn first_data_offset(&self) -> i64 {
        self.batches.front().map_or(-1, |b| b.first_offset)
    }

    pub fn last_data_offset(&self) -> i64 {
        self.batches.back().map_or(-1, |b| b.last_offset)
    }

    pub fn last_offset_delta(&self) -> i32 {
        self.batches.back().map_or(0, BatchMetadata::offset_delta)
    }

    /// Kafka's `findDuplicateBatch`: only the same epoch can retry a batch.
    pub fn find_duplicate_batch(
        &self,
        producer_epoch: i16,
        first_seq: i32,
        last_seq: i32,
    ) -> Option<BatchMetadata> {
        if producer_epoch != self.producer_epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|b| b.first_seq == first_seq && b.last_seq == last_seq)
            .copied()
    }

    /// Kafka's `addBatch`: a new epoch forgets the old epoch's batches.
    fn add_batch(&mut self, producer_epoch: i16, batch: BatchMetadata) {
        if self.producer_epoch != producer_epoch {
            self.batches.clear();
            self.producer_epoch = producer_epoch;
        }
        if self.batches.len() == NUM_BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.batches.push_back(batch);
        self.last_timestamp = batch.timestamp;
        assert!(self.batches.len() <= NUM_BATCHES_TO_RETAIN);
    }
}

impl ProducerStateManager {
    /// `dir` is the partition's log directory, where snapshots live beside the segments.
    pub fn new(dir: PathBuf, producer_id_expiration_ms: i64) -> Self {
        assert!(
            producer_id_expiration_ms >= 0,
            "producer.id.expiration.ms must not be negative: {producer_id_expiration_ms}"
        );
        ProducerStateManager {
            dir,
            producer_id_expiration_ms,
            producers: HashMap::new(),
            map_end_offset: 0,
            last_snap_offset: 0,
            ongoing_txns: BTreeMap::new(),
            unreplicated_txns: BTreeMap::new(),
        }
    }

    /// Leader-side validation of one batch before it is appended, as Kafka's
    /// `UnifiedLog.analyzeAndValidateProducerState` does for a client append: duplicates first,
    /// then `ProducerAppendInfo.checkProducerEpoch` and `checkSequence`. Batches without a
    /// producer id (`-1`) carry no sequence and are always appended.
    pub fn check(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        first_seq: i32,
        last_seq: i32,
    ) -> Result<ProducerCheck, ProducerStateError> {
        if producer_id < 0 {
            return Ok(ProducerCheck::Append);
        }
        let entry = self.producers.get(&producer_id);
        if let Some(duplicate) =
            entry.and_then(|e| e.find_duplicate_batch(producer_epoch, first_seq, last_seq))
        {
            return Ok(ProducerCheck::Duplicate(duplicate));
        }

        let current_epoch = entry.map_or(NO_PRODUCER_EPOCH, |e| e.producer_epoch);
        let current_last_seq = entry.map_or(NO_SEQUENCE, ProducerStateEntry::last_seq);
        if producer_epoch < current_epoch {
            return Err(ProducerStateError::InvalidProducerEpoch {
                producer_id,
                producer_epoch,
                current_epoch,
            });
        }
        let out_of_order = ProducerStateError::OutOfOrderSequence {
            producer_id,
            producer_epoch,
            first_seq,
            current_epoch,
            current_last_seq,
        };
        if producer_epoch != current_epoch {
            // A bumped epoch restarts the sequence at 0. A producer we know nothing about (its
            // records deleted by retention or never seen) may start anywhere: KIP-360.
            if first_seq != 0 && current_epoch != NO_PRODUCER_EPOCH {
                return Err(out_of_order);
            }
        } else if current_epoch != NO_PRODUCER_EPOCH && !in_sequence(current_last_seq, first_seq) {
            // Equal epochs of NO_PRODUCER_EPOCH (an id sent with epoch -1) go unchecked, as in
            // Kafka.
            return Err(out_of_order);
        }
        Ok(ProducerCheck::Append)
    }

    /// Records an appended batch: on the leader after its append, on a follower as it appends
    /// fetched data, and while replaying the log on rebuild. Not validated, as Kafka trusts
    /// replicated data. A producer id below 0 carries no state and is ignored. Does not move
    /// [`Self::map_end_offset`]: the caller does once the whole append is in the log.
    pub fn update(&mut self, producer_id: i64, producer_epoch: i16, batch: BatchMetadata) {
        if producer_id < 0 {
            return;
        }
        assert!(
            batch.first_offset <= batch.last_offset,
            "batch of producer {producer_id} ends before it starts: {batch:?}"
        );
        assert!(
            i32::try_from(batch.last_offset - batch.first_offset).is_ok(),
            "batch of producer {producer_id} spans more than i32::MAX offsets: {batch:?}"
        );
        self.producers
            .entry(producer_id)
            .or_insert_with(|| ProducerStateEntry::empty(producer_id))
            .add_batch(producer_epoch, batch);
    }

    /// The state covers the log below this offset; replay resumes here.
    pub fn map_end_offset(&self) -> i64 {
        self.map_end_offset
    }

    /// Kafka's `updateMapEndOffset`, called with `last_offset + 1` after each append.
    pub fn set_map_end_offset(&mut self, o: i64) {
        self.map_end_offset = o;
    }

    /// Kafka's `truncateAndReload`: snapshots beyond the log (above `log_end_offset`) or not
    /// past its start (at or below `log_start_offset`) are deleted; if the state does not end
    /// exactly at `log_end_offset` it is dropped and reloaded from the newest remaining snapshot
    /// (or from nothing at `log_start_offset`), and the caller replays the log from
    /// [`Self::map_end_offset`]. On error the in-memory state is unchanged.
    pub fn truncate_and_reload(
        &mut self,
        log_start_offset: i64,
        log_end_offset: i64,
        now_ms: i64,
    ) -> io::Result<()> {
        for offset in self.snapshot_offsets()? {
            if offset > log_end_offset || offset <= log_start_offset {
                delete_if_exists(&snapshot_file(&self.dir, offset))?;
            }
        }
        if log_end_offset != self.map_end_offset {
            self.reload(log_start_offset, now_ms)
        } else {
            // Kafka's onLogStartOffsetIncremented.
            self.map_end_offset = self.map_end_offset.max(log_start_offset);
            self.last_snap_offset = self.latest_snapshot_offset()?.unwrap_or(log_start_offset);
            Ok(())
        }
    }

    /// Writes a snapshot at [`Self::map_end_offset`] unless one exists there already: through a
    /// temporary file, fsynced, renamed, and the directory fsynced, so a crash leaves either no
    /// snapshot or a whole one. The temporary name ends in `.tmp`, which `kraftd_log::Log::open`
    /// removes as a leftover.
    pub fn take_snapshot(&mut self) -> io::Result<()> {
        if self.map_end_offset <= self.last_snap_offset {
            return Ok(());
        }
        let path = snapshot_file(&self.dir, self.map_end_offset);
        let tmp = path.with_extension("snapshot.tmp");
        let mut entries: Vec<&ProducerStateEntry> = self.producers.values().collect();
        entries.sort_by_key(|e| e.producer_id);
        let bytes = encode_snapshot(entries.into_iter());
        {
            let mut file = fs::File::create(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
        }
        fs::rename(&tmp, &path)?;
        fs::File::open(&self.dir)?.sync_all()?;
        tracing::info!(
            dir = %self.dir.display(),
            offset = self.map_end_offset,
            producers = self.producers.len(),
            "wrote producer snapshot"
        );
        self.last_snap_offset = self.map_end_offset;
        Ok(())
    }

    /// Startup: snapshots above `log_end_offset` (written before an unclean shutdown lost the
    /// tail of the log) are deleted, and the state is replaced by the newest valid snapshot, or
    /// emptied at offset 0 when there is none. Producers idle past the expiration are skipped.
    /// Corrupt snapshots are deleted with a warning and the next older one is tried. On error
    /// the in-memory state is unchanged.
    pub fn load_latest_snapshot(&mut self, log_end_offset: i64, now_ms: i64) -> io::Result<()> {
        for offset in self.snapshot_offsets()? {
            if offset > log_end_offset {
                delete_if_exists(&snapshot_file(&self.dir, offset))?;
            }
        }
        self.reload(0, now_ms)
    }

    /// Snapshots below the log start (after retention) can never be loaded again.
    pub fn delete_snapshots_before(&mut self, offset: i64) -> io::Result<()> {
        for snapshot in self.snapshot_offsets()? {
            if snapshot < offset {
                delete_if_exists(&snapshot_file(&self.dir, snapshot))?;
            }
        }
        Ok(())
    }

    /// Forgets producers idle for `producer.id.expiration.ms` (measured from their last batch's
    /// timestamp, as Kafka does) so the map stays bounded; one with an open transaction stays.
    pub fn remove_expired_producers(&mut self, now_ms: i64) {
        let expiration_ms = self.producer_id_expiration_ms;
        self.producers
            .retain(|_, entry| !is_producer_expired(entry, now_ms, expiration_ms));
    }

    pub fn last_entry(&self, producer_id: i64) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }

    pub fn active_producer_count(&self) -> usize {
        self.producers.len()
    }

    /// All producers, for DescribeProducers.
    pub fn active_producers(&self) -> impl Iterator<Item = &ProducerStateEntry> {
        self.producers.values()
    }

    /// The offsets of the snapshot files on disk, ascending; files with the suffix but a name
    /// that is not an offset are not ours and are skipped.
    pub fn snapshot_offsets(&self) -> io::Result<Vec<i64>> {
        let read_dir = match fs::read_dir(&self.dir) {
            Ok(read_dir) => read_dir,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut offsets = Vec::new();
        for dir_entry in read_dir {
            let dir_entry = dir_entry?;
            if !dir_entry.file_type()?.is_file() {
                continue;
            }
            let name = dir_entry.file_name();
            let Some(stem) = name
                .to_str()
                .and_then(|n| n.strip_suffix(PRODUCER_SNAPSHOT_FILE_SUFFIX))
            else {
                continue;
            };
            match stem.parse::<i64>() {
                Ok(offset) if offset >= 0 => offsets.push(offset),
                _ => tracing::warn!(
                    dir = %self.dir.display(),
                    file = ?name,
                    "skipping a snapshot file whose name is not an offset"
                ),
            }
        }
        offsets.sort_unstable();
        Ok(offsets)
    }

    pub fn latest_snapshot_offset(&self) -> io::Result<Option<i64>> {
        Ok(self.snapshot_offsets()?.last().copied())
    }

    /// Kafka's `loadFromSnapshot`, building the new state aside so an I/O error changes
    /// nothing in memory.
    fn reload(&mut self, fallback_offset: i64, now_ms: i64) -> io::Result<()> {
        let mut offsets = self.snapshot_offsets()?;
        while let Some(offset) = offsets.pop() {
            let path = snapshot_file(&self.dir, offset);
            let bytes = match fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            match decode_snapshot(&bytes) {
                Ok(entries) => {
                    let expiration_ms = self.producer_id_expiration_ms;
                    self.producers = entries
                        .into_iter()
                        .filter(|e| !is_producer_expired(e, now_ms, expiration_ms))
                        .map(|e| (e.producer_id, e))
                        .collect();
                    self.rebuild_ongoing_txns();
                    self.map_end_offset = offset;
                    self.last_snap_offset = offset;
                    tracing::info!(
                        dir = %self.dir.display(),
                        offset,
                        producers = self.producers.len(),
                        "loaded producer state from snapshot"
                    );
                    return Ok(());
                }
                Err(e) => {
                    tracing::warn!(
                        file = %path.display(),
                        error = %e,
                        "deleting corrupt producer snapshot"
                    );
                    delete_if_exists(&path)?;
                }
            }
        }
        self.producers.clear();
        self.rebuild_ongoing_txns();
        self.map_end_offset = fallback_offset;
        self.last_snap_offset = fallback_offset;
        Ok(())
    }
}

/// Kafka's `LogFileUtils.producerSnapshotFile`: the offset zero-padded to 20 digits, so names
/// sort like offsets.
pub fn snapshot_file(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{offset:020}{PRODUCER_SNAPSHOT_FILE_SUFFIX}"))
}

/// Kafka's `inSequence`: sequences wrap from `i32::MAX` to 0.
fn in_sequence(last_seq: i32, next_seq: i32) -> bool {
    i64::from(next_seq) == i64::from(last_seq) + 1 || (next_seq == 0 && last_seq == i32::MAX)
}

/// Kafka's `DefaultRecordBatch.decrementSequence`, for the first sequence of a snapshot batch.
/// Java's int arithmetic wraps, and so does this: a snapshot from disk may hold anything.
fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX
            .wrapping_sub(decrement.wrapping_sub(sequence))
            .wrapping_add(1)
    } else {
        sequence - decrement
    }
}

fn is_producer_expired(entry: &ProducerStateEntry, now_ms: i64, expiration_ms: i64) -> bool {
    entry.current_txn_first_offset.is_none()
        && now_ms.saturating_sub(entry.last_timestamp) >= expiration_ms
}

fn delete_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

// Kafka's `PID_SNAPSHOT_MAP_SCHEMA`: version i16, crc u32 (CRC32C of everything after it),
// then a classic array (i32 count) of fixed-size entries.
const CRC_OFFSET: usize = 2;
const PRODUCER_ENTRIES_OFFSET: usize = CRC_OFFSET + 4;
/// producer_id i64, epoch i16, last_sequence i32, last_offset i64, offset_delta i32,
/// timestamp i64, coordinator_epoch i32, current_txn_first_offset i64.
const SNAPSHOT_ENTRY_BYTES: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;

fn encode_snapshot<'a>(entries: impl ExactSizeIterator<Item = &'a ProducerStateEntry>) -> Vec<u8> {
    let count = entries.len();
    let mut buf = Vec::with_capacity(PRODUCER_ENTRIES_OFFSET + 4 + count * SNAPSHOT_ENTRY_BYTES);
    buf.put_i16(PRODUCER_SNAPSHOT_VERSION);
    buf.put_u32(0);
    buf.put_i32(i32::try_from(count).expect("fewer than i32::MAX producers"));
    for entry in entries {
        // Kafka keeps only the last batch: older ones are not needed to check the next sequence.
        buf.put_i64(entry.producer_id);
        buf.put_i16(entry.producer_epoch);
        buf.put_i32(entry.last_seq());
        buf.put_i64(entry.last_data_offset());
        buf.put_i32(entry.last_offset_delta());
        buf.put_i64(entry.last_timestamp);
        buf.put_i32(entry.coordinator_epoch);
        buf.put_i64(entry.current_txn_first_offset.unwrap_or(-1));
    }
    let crc = crc32c(&buf[PRODUCER_ENTRIES_OFFSET..]);
    buf[CRC_OFFSET..PRODUCER_ENTRIES_OFFSET].copy_from_slice(&crc.to_be_bytes());
    assert_eq!(
        buf.len(),
        PRODUCER_ENTRIES_OFFSET + 4 + count * SNAPSHOT_ENTRY_BYTES
    );
    buf
}

#[derive(Debug, thiserror::Error)]
#[error("corrupt producer snapshot: {0}")]
struct CorruptSnapshot(String);

fn decode_snapshot(bytes: &[u8]) -> Result<Vec<ProducerStateEntry>, CorruptSnapshot> {
    if bytes.len() < PRODUCER_ENTRIES_OFFSET + 4 {
        return Err(CorruptSnapshot(format!("only {} bytes", bytes.len())));
    }
    let mut buf = bytes;
    let version = buf.get_i16();
    if version != PRODUCER_SNAPSHOT_VERSION {
        return Err(CorruptSnapshot(format!("unknown version {version}")));
    }
    let stored_crc = buf.get_u32();
    let computed_crc = crc32c(buf);
    if stored_crc != computed_crc {
        return Err(CorruptSnapshot(format!(
            "stored crc {stored_crc:#010x}, computed {computed_crc:#010x}"
        )));
    }
    let count = buf.get_i32();
    let count = usize::try_from(count)
        .map_err(|_| CorruptSnapshot(format!("negative entry count {count}")))?;
    // Checked before anything is reserved: the count comes from the file.
    if buf.remaining() != count.saturating_mul(SNAPSHOT_ENTRY_BYTES) {
        return Err(CorruptSnapshot(format!(
            "{count} entries need {} bytes, {} remain",
            count.saturating_mul(SNAPSHOT_ENTRY_BYTES),
            buf.remaining()
        )));
    }
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let producer_id = buf.get_i64();
        let producer_epoch = buf.get_i16();
        let last_seq = buf.get_i32();
        let last_offset = buf.get_i64();
        let offset_delta = buf.get_i32();
        let timestamp = buf.get_i64();
        let coordinator_epoch = buf.get_i32();
        let current_txn_first_offset = buf.get_i64();
        let mut batches = VecDeque::new();
        if last_offset >= 0 {
            if offset_delta < 0 || i64::from(offset_delta) > last_offset {
                return Err(CorruptSnapshot(format!(
                    "producer {producer_id}: offset delta {offset_delta} for last offset \
                     {last_offset}"
                )));
            }
            batches.push_back(BatchMetadata {
                first_seq: decrement_sequence(last_seq, offset_delta),
                last_seq,
                first_offset: last_offset - i64::from(offset_delta),
                last_offset,
                timestamp,
            });
        }
        entries.push(ProducerStateEntry {
            producer_id,
            producer_epoch,
            batches,
            last_timestamp: timestamp,
            coordinator_epoch,
            current_txn_first_offset: (current_txn_first_offset >= 0)
                .then_some(current_txn_first_offset),
        });
    }
    assert_eq!(buf.remaining(), 0);
    Ok(entries)
}

/// CRC32C (Castagnoli), as Kafka's `Crc32C`: the same function the record batches use.
fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PID: i64 = 1000;
    const EXPIRATION_MS: i64 = DEFAULT_PRODUCER_ID_EXPIRATION_MS;

    fn batch(first_seq: i32, last_seq: i32, first_offset: i64, timestamp: i64) -> BatchMetadata {
        let records = i64::from(last_seq.wrapping_sub(first_seq)) + 1;
        let records = if records <= 0 {
            // Wrapped: count from first_seq up to i32::MAX, then 0..=last_seq.
            i64::from(i32::MAX) - i64::from(first_seq) + 1 + i64::from(last_seq) + 1
        } else {
            records
        };
        BatchMetadata {
            first_seq,
            last_seq,
            first_offset,
            last_offset: first_offset + records - 1,
            timestamp,
        }
    }

    /// Checks then records a batch as a leader does, returning where it landed.
    fn append(
        psm: &mut ProducerStateManager,
        epoch: i16,
        first_seq: i32,
        last_seq: i32,
        first_offset: i64,
    ) -> BatchMetadata {
        assert_eq!(
            psm.check(PID, epoch, first_seq, last_seq),
            Ok(ProducerCheck::Append)
        );
        let b = batch(first_seq, last_seq, first_offset, 1_000);
        psm.update(PID, epoch, b);
        psm.set_map_end_offset(b.last_offset + 1);
        b
    }

    fn manager(dir: &Path) -> ProducerStateManager {
        ProducerStateManager::new(dir.to_path_buf(), EXPIRATION_MS)
    }

    #[test]
    fn crc32c_matches_the_castagnoli_check_value() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn crc32c_agrees_with_the_record_batch_crc() {
        let mut builder = kraftd_protocol::records::RecordBatchBuilder::new(0);
        builder
            .append(
                0,
                None,
                Some(bytes::Bytes::from_static(b"value")),
                Vec::new(),
            )
            .unwrap();
        let batch = builder.build().unwrap();
        // RecordBatch v2: crc (u32) at 17 covers everything from the attributes at 21 on.
        let stored = u32::from_be_bytes(batch[17..21].try_into().unwrap());
        assert_eq!(crc32c(&batch[21..]), stored);
    }

    proptest::proptest! {
        #[test]
        fn producer_state_snapshot_entries_round_trip(
            raw in proptest::collection::vec(
                (0i64..i64::MAX, 0i16..i16::MAX, 0i32..i32::MAX, 0i64..1 << 40, 0i32..1000,
                 proptest::num::i64::ANY, proptest::num::i32::ANY, proptest::option::of(0i64..1 << 40)),
                0..20,
            )
        ) {
            let entries: Vec<ProducerStateEntry> = raw
                .into_iter()
                .map(|(producer_id, epoch, last_seq, first_offset, delta, timestamp, coordinator_epoch, txn)| {
                    ProducerStateEntry {
                        producer_id,
                        producer_epoch: epoch,
                        batches: VecDeque::from([BatchMetadata {
                            first_seq: decrement_sequence(last_seq, delta),
                            last_seq,
                            first_offset,
                            last_offset: first_offset + i64::from(delta),
                            timestamp,
                        }]),
                        last_timestamp: timestamp,
                        coordinator_epoch,
                        current_txn_first_offset: txn,
                    }
                })
                .collect();
            let bytes = encode_snapshot(entries.iter());
            proptest::prop_assert_eq!(decode_snapshot(&bytes).unwrap(), entries);
        }

        #[test]
        fn producer_state_decode_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = decode_snapshot(&bytes);
        }
    }

    #[test]
    fn producer_state_duplicates_among_last_five_answered_with_original_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let mut psm = manager(dir.path());
        let mut appended = Vec::new();
        for i in 0..NUM_BATCHES_TO_RETAIN as i32 {
            // Three records per batch, with other producers' data between them.
            appended.push(append(
                &mut psm,
                0,
                i * 3,
                i * 3 + 2,
                100 + i64::from(i) * 10,
            ));
        }
        for original in &appended {
            assert_eq!(
                psm.check(PID, 0, original.first_seq, original.last_seq),
                Ok(ProducerCheck::Duplicate(*original))
            );
        }
        let Ok(ProducerCheck::Duplicate(first)) = psm.check(PID, 0, 0, 2) else {
            panic!("the oldest retained batch is a duplicate");
        };
        assert_eq!(first.first_offset, 100);
        assert_eq!(first.last_offset, 102);
        // A partial overlap is not a duplicate: it is out of order.
        assert_eq!(
            psm.check(PID, 0, 0, 1).unwrap_err().error_code(),
            ErrorCode::OutOfOrderSequenceNumber
        );
        // The same range from another epoch is no retry.
        assert!(matches!(psm.check(PID, 1, 0, 2), Ok(ProducerCheck::Append)));
    }

    #[test]
    fn producer_state_sixth_oldest_batch_is_no_longer_a_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let mut psm = manager(dir.path());
        for i in 0..=NUM_BATCHES_TO_RETAIN as i32 {
            append(&mut psm, 0, i, i, i64::from(i));
        }
        let entry = psm.last_entry(PID).unwrap();
        assert_eq!(entry.batches.len(), NUM_BATCHES_TO_RETAIN);
        assert_eq!(entry.first_seq(), 1);
        assert_eq!(entry.last_seq(), 5);
        let err = psm.check(PID, 0, 0, 0).unwrap_err();
        assert_eq!(
            err,
            ProducerStateError::OutOfOrderSequence {
                producer_id: PID,
                producer_epoch: 0,
                first_seq: 0,
                current_epoch: 0,
                current_last_seq: 5,
            }
        );
        assert_eq!(err.error_code(), ErrorCode::OutOfOrderSequenceNumber);
        assert_eq!(
            psm.check(PID, 0, 1, 1),
            Ok(ProducerCheck::Duplicate(batch(1, 1, 1, 1_000)))
        );
    }

    #[test]
    fn producer_state_sequence_gap_is_out_of_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut psm = manager(dir.path());
        append(&mut psm, 0, 0, 4, 0);
        let err = psm.check(PID, 0, 6, 6).unwrap_err();
        assert_eq!(err.error_code(), ErrorCode::OutOfOrderSequenceNumber);
        // Going backwards past the retained range is out of order too.
        assert_eq!(
            psm.check(PID, 0, 3, 4).unwrap_err().error_code(),
            ErrorCode::OutOfOrderSequenceNumber
        );
        assert_eq!(psm.check(PID, 0, 5, 9), Ok(ProducerCheck::Append));
        // A refused check changes nothing.
        assert_eq!(psm.last_entry(PID).unwrap().last_seq(), 4);
    }

    #[test]
    fn producer_state_stale_epoch_is_invalid_producer_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let mut psm = manager(dir.path());
        append(&mut psm, 3, 0, 0, 0);
        let err = psm.check(PID, 2, 1, 1).unwrap_err();
        assert_eq!(
            err,
            ProducerStateError::InvalidProducerEpoch {
                producer_id: PID,
                producer_epoch: 2,
                current_epoch: 3,
            }
        );
        assert_eq!(err.error_code(), ErrorCode::InvalidProducerEpoch);
        // Even a retry of an old epoch's batch is fenced, not answered as a duplicate.
        assert_eq!(
            psm.check(PID, 2, 0, 0).unwrap_err().error_code(),
            ErrorCode::InvalidProducerEpoch
        );
    }

    #[test]
    fn producer_state_epoch_bump_must_restart_at_sequence_zero() {
        let dir = tempfile::tempdir().unwrap();
        let mut psm = manager(dir.path());
        append(&mut psm, 0, 0, 9, 0);
        assert_eq!(
            psm.check(PID, 1, 10, 10).unwrap_err().error_code(),
            ErrorCode::OutOfOrderSequenceNumber
        );
        append(&mut psm, 1, 0, 0, 10);
        let entry = psm.last_entry(PID).unwrap();
        assert_eq!(entry.producer_epoch, 1);
        assert_eq!(
            entry.batches.len(),
            1,
            "a new epoch forgets the old batches"
        );
        assert_eq!(
            psm.check(PID, 0, 10, 10).unwrap_err().error_code(),
            ErrorCode::InvalidProducerEpoch
        );
        assert_eq!(psm.check(PID, 1, 1, 1), Ok(ProducerCheck::Append));
    }

    #[test]
    fn producer_state_unknown_producer_accepts_any_sequence_as_kafka_does_since_kip_360() {
        let dir = tempfile::tempdir().unwrap();
        let psm = manager(dir.path());
        assert_eq!(psm.check(PID, 4, 17, 20), Ok(ProducerCheck::Append));
        assert_eq!(psm.check(-1, -1, -1, -1), Ok(ProducerCheck::Append));
        assert_eq!(
            ProducerStateError::UnknownProducerId { producer_id: PID }.error_code(),
            ErrorCode::UnknownProducerId
        );
    }

    #[test]
    fn producer_state_sequence_wraps_around_at_i32_max() {
        let dir = tempfile::tempdir().unwrap();
        let mut psm = manager(dir.path());
        psm.update(PID, 0, batch(i32::MAX - 2, i32::MAX, 0, 1));
        assert_eq!(psm.check(PID, 0, 0, 4), Ok(ProducerCheck::Append));
        assert_eq!(
            psm.check(PID, 0, 1, 4).unwrap_err().error_code(),
            ErrorCode::OutOfOrderSequenceNumber
        );
        // A batch whose own range wraps.
        let mut psm = manager(dir.path());
        psm.update(PID, 0, batch(i32::MAX - 5, i32::MAX - 1, 0, 1));
        let wrapped = append(&mut psm, 0, i32::MAX, 2, 5);
        assert_eq!(wrapped.last_offset, 8);
        assert_eq!(psm.check(PID, 0, 3, 3), Ok(ProducerCheck::Append));
        assert_eq!(
            psm.check(PID, 0, i32::MAX, 2),
            Ok(ProducerCheck::Duplicate(wrapped))
        );
    }

    #[test]
    fn producer_state_snapshot_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut psm = manager(dir.path());
        append(&mut psm, 2, 0, 4, 0);
        append(&mut psm, 2, 5, 7, 20);
        psm.update(7, 0, batch(i32::MAX - 1, 1, 30, 2_000));
        psm.set_map_end_offset(40);
        psm.take_snapshot().unwrap();
        let path = snapshot_file(dir.path(), 40);
        assert!(path.ends_with("00000000000000000040.snapshot"));
        assert_eq!(psm.snapshot_offsets().unwrap(), vec![40]);
        // Kafka's layout: version, crc, count, two 46-byte entries.
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 2 + 4 + 4 + 2 * SNAPSHOT_ENTRY_BYTES);
        assert_eq!(&bytes[..2], &1i16.to_be_bytes());
        assert_eq!(&bytes[2..6], &crc32c(&bytes[6..]).to_be_bytes());

        let mut reloaded = manager(dir.path());
        reloaded.load_latest_snapshot(40, 1_000).unwrap();
        assert_eq!(reloaded.map_end_offset(), 40);
        assert_eq!(reloaded.active_producer_count(), 2);
        let entry = reloaded.last_entry(PID).unwrap();
        assert_eq!(entry.producer_epoch, 2);
        assert_eq!(entry.batches, VecDeque::from([batch(5, 7, 20, 1_000)]));
        assert_eq!(entry.last_timestamp, 1_000);
        assert_eq!(entry.current_txn_first_offset, None);
        assert_eq!(entry.coordinator_epoch, -1);
        let wrapped = reloaded.last_entry(7).unwrap();
        assert_eq!(
            wrapped.batches,
            VecDeque::from([batch(i32::MAX - 1, 1, 30, 2_000)])
        );
        // Only the last batch survives, as in Kafka.
        assert_eq!(
            reloaded.check(PID, 2, 5, 7),
            Ok(ProducerCheck::Duplicate(batch(5, 7, 20, 1_000)))
        );
        assert_eq!(
            reloaded.check(PID, 2, 0, 4).unwrap_err().error_code(),
            ErrorCode::OutOfOrderSequenceNumber
        );
        assert_eq!(reloaded.check(PID, 2, 8, 8), Ok(ProducerCheck::Append));
        // No second snapshot at an offset already covered.
        reloaded.take_snapshot().unwrap();
        assert_eq!(reloaded.snapshot_offsets().unwrap(), vec![40]);
    }

    #[test]
    fn producer_state_expired_producers_are_dropped_and_not_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let mut psm = ProducerStateManager::new(dir.path().to_path_buf(), 100);
        psm.update(1, 0, batch(0, 0, 0, 1_000));
        psm.update(2, 0, batch(0, 0, 1, 1_050));
        psm.set_map_end_offset(2);
        psm.take_snapshot().unwrap();
        psm.remove_expired_producers(1_099);
        assert_eq!(psm.active_producer_count(), 2);
        psm.remove_expired_producers(1_100);
        assert_eq!(psm.active_producer_count(), 1);
        assert!(psm.last_entry(1).is_none());

        let mut reloaded = ProducerStateManager::new(dir.path().to_path_buf(), 100);
        reloaded.load_latest_snapshot(2, 1_100).unwrap();
        assert_eq!(reloaded.active_producer_count(), 1);
        assert!(reloaded.last_entry(2).is_some());
    }

    #[test]
    fn producer_state_corrupt_or_truncated_snapshot_is_deleted_and_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let mut psm = manager(dir.path());
        append(&mut psm, 0, 0, 0, 0);
        psm.take_snapshot().unwrap(); // at 1
        append(&mut psm, 0, 1, 1, 1);
        psm.take_snapshot().unwrap(); // at 2
        append(&mut psm, 0, 2, 2, 2);
        psm.take_snapshot().unwrap(); // at 3
        assert_eq!(psm.snapshot_offsets().unwrap(), vec![1, 2, 3]);

        // Newest truncated, the next one with a flipped byte.
        let at_3 = snapshot_file(dir.path(), 3);
        let bytes = fs::read(&at_3).unwrap();
        fs::write(&at_3, &bytes[..bytes.len() - 3]).unwrap();
        let at_2 = snapshot_file(dir.path(), 2);
        let mut bytes = fs::read(&at_2).unwrap();
        *bytes.last_mut().unwrap() ^= 0x01;
        fs::write(&at_2, &bytes).unwrap();
        // Junk with the suffix but no offset name is not ours.
        fs::write(dir.path().join("junk.snapshot"), b"x").unwrap();

        let mut reloaded = manager(dir.path());
        reloaded.load_latest_snapshot(3, 1_000).unwrap();
        assert_eq!(reloaded.map_end_offset(), 1);
        assert_eq!(reloaded.last_entry(PID).unwrap().last_seq(), 0);
        assert_eq!(reloaded.snapshot_offsets().unwrap(), vec![1]);
        assert!(!at_3.exists());
        assert!(!at_2.exists());
        assert!(dir.path().join("junk.snapshot").exists());

        // Every snapshot unreadable: empty state from the start.
        fs::write(snapshot_file(dir.path(), 1), b"").unwrap();
        let mut empty = manager(dir.path());
        empty.load_latest_snapshot(3, 1_000).unwrap();
        assert_eq!(empty.map_end_offset(), 0);
        assert_eq!(empty.active_producer_count(), 0);
        assert!(empty.snapshot_offsets().unwrap().is_empty());
    }

    #[test]
    fn decrement_sequence_wraps_like_kafka() {
        assert_eq!(decrement_sequence(10, 3), 7);
        assert_eq!(decrement_sequence(1, 3), i32::MAX - 1);
        assert_eq!(decrement_sequence(0, 0), 0);
        // Garbage from a snapshot must not overflow.
        assert_eq!(decrement_sequence(i32::MIN, 1000), -1000);
    }

    #[test]
    fn producer_state_decode_rejects_wrong_version_and_lying_count() {
        let entry = ProducerStateEntry {
            batches: VecDeque::from([batch(0, 0, 0, 1)]),
            producer_epoch: 0,
            last_timestamp: 1,
            ..ProducerStateEntry::empty(PID)
        };
        let good = encode_snapshot([&entry].into_iter());
        assert_eq!(decode_snapshot(&good).unwrap(), vec![entry]);

        let mut wrong_version = good.clone();
        wrong_version[..2].copy_from_slice(&2i16.to_be_bytes());
        assert!(decode_snapshot(&wrong_version).is_err());

        // A huge count with a valid crc must fail before reserving anything.
        let mut lying = good.clone();
        lying[6..10].copy_from_slice(&i32::MAX.to_be_bytes());
        let crc = crc32c(&lying[6..]);
        lying[2..6].copy_from_slice(&crc.to_be_bytes());
        assert!(decode_snapshot(&lying).is_err());
        let mut negative = good;
        negative[6..10].copy_from_slice(&(-1i32).to_be_bytes());
        let crc = crc32c(&negative[6..]);
        negative[2..6].copy_from_slice(&crc.to_be_bytes());
        assert!(decode_snapshot(&negative).is_err());
    }

    #[test]
    fn producer_state_truncate_and_reload_picks_snapshot_and_deletes_later_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut psm = manager(dir.path());
        for i in 0..4 {
            append(&mut psm, 0, i, i, i64::from(i) * 10);
            psm.set_map_end_offset(i64::from(i + 1) * 10);
            psm.take_snapshot().unwrap();
        }
        assert_eq!(psm.snapshot_offsets().unwrap(), vec![10, 20, 30, 40]);
        assert_eq!(psm.last_entry(PID).unwrap().last_seq(), 3);

        // The log was truncated to 25: state from the snapshot at 20, replay from there.
        psm.truncate_and_reload(0, 25, 1_000).unwrap();
        assert_eq!(psm.snapshot_offsets().unwrap(), vec![10, 20]);
        assert_eq!(psm.map_end_offset(), 20);
        assert_eq!(psm.last_entry(PID).unwrap().last_seq(), 1);
        assert_eq!(psm.check(PID, 0, 2, 2), Ok(ProducerCheck::Append));

        // Replay what is left of the log, then a snapshot at 25 is new.
        append(&mut psm, 0, 2, 2, 20);
        psm.set_map_end_offset(25);
        psm.take_snapshot().unwrap();
        assert_eq!(psm.snapshot_offsets().unwrap(), vec![10, 20, 25]);

        // Already at the log end: only snapshots not past the new log start go.
        psm.truncate_and_reload(10, 25, 1_000).unwrap();
        assert_eq!(psm.snapshot_offsets().unwrap(), vec![20, 25]);
        assert_eq!(psm.map_end_offset(), 25);
        assert_eq!(psm.last_entry(PID).unwrap().last_seq(), 2);

        // Truncated below every snapshot: empty state at the log start.
        psm.truncate_and_reload(5, 15, 1_000).unwrap();
        assert!(psm.snapshot_offsets().unwrap().is_empty());
        assert_eq!(psm.map_end_offset(), 5);
        assert_eq!(psm.active_producer_count(), 0);
    }

    #[test]
    fn producer_state_delete_snapshots_before_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let mut psm = manager(dir.path());
        for offset in [5, 10, 15] {
            psm.set_map_end_offset(offset);
            psm.take_snapshot().unwrap();
        }
        psm.delete_snapshots_before(10).unwrap();
        assert_eq!(psm.snapshot_offsets().unwrap(), vec![10, 15]);
        assert_eq!(psm.latest_snapshot_offset().unwrap(), Some(15));
    }
}
