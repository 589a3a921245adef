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
    /// Kafka's `verificationStates`: producers whose transactional write to this partition
    /// is being verified with the transaction coordinator (KIP-890), by producer id.
    verification: HashMap<i64, VerificationState>,
}

/// Kafka's `VerificationStateEntry`: the lowest sequence (at the newest epoch) of the
/// batches that started a verification, so that a later batch verified sooner cannot be
/// appended before them (it would leave a gap the earlier ones, retried, can never fill).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerificationState {
    pub lowest_seq: i32,
    pub epoch: i16,
    /// Transactions V2 (the coordinator bumps the epoch at every transaction's end).
    pub supports_epoch_bump: bool,
    /// When the verification started, for its expiry with the idle producers.
    pub started_ms: i64,
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
            verification: HashMap::new(),
        }
    }

    /// Kafka's `maybeCreateVerificationStateEntry`: a transactional batch of `producer_id`
    /// starting at `seq` is about to be verified with the coordinator; the lowest sequence of
    /// such batches (at the newest epoch) is what an append may start at, at most.
    pub fn start_verification(
        &mut self,
        producer_id: i64,
        seq: i32,
        epoch: i16,
        supports_epoch_bump: bool,
        now_ms: i64,
    ) {
        let state = self
            .verification
            .entry(producer_id)
            .or_insert(VerificationState {
                lowest_seq: seq,
                epoch,
                supports_epoch_bump,
                started_ms: now_ms,
            });
        // Kafka's maybeUpdateLowestSequenceAndEpoch.
        if epoch == state.epoch && seq < state.lowest_seq {
            state.lowest_seq = seq;
        }
        if epoch > state.epoch {
            state.epoch = epoch;
            state.lowest_seq = seq;
        }
    }

    /// The verification under way for `producer_id`, if any.
    pub fn verification(&self, producer_id: i64) -> Option<&VerificationState> {
        self.verification.get(&producer_id)
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
        let out_of_order = ProducerStateError::OutOfOrderSequence {
            producer_id,
            producer_epoch,
            first_seq,
            current_epoch,
            current_last_seq,
        };
        // Kafka's checkSequence, first its KIP-890 part: a batch that was verified may not
        // start past the lowest sequence a verification started at, and under transactions
        // V2 a producer this partition knows nothing of starts at 0. Otherwise a later batch
        // whose verification passed first (the first one's was refused, say with
        // CONCURRENT_TRANSACTIONS, and is being retried) would be appended ahead of it, and
        // the retried first batch would be out of order for good.
        if let Some(v) = self.verification.get(&producer_id) {
            let empty = entry.is_none_or(|e| e.batches.is_empty());
            if (v.supports_epoch_bump && first_seq != 0 && empty) || first_seq > v.lowest_seq {
                return Err(out_of_order);
            }
        }
        if producer_epoch < current_epoch {
            return Err(ProducerStateError::InvalidProducerEpoch {
                producer_id,
                producer_epoch,
                current_epoch,
            });
        }
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
        // Kafka's updateProducers: the transaction now has its first offset here.
        self.verification.remove(&producer_id);
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
    /// Returns how many were forgotten.
    pub fn remove_expired_producers(&mut self, now_ms: i64) -> usize {
        let expiration_ms = self.producer_id_expiration_ms;
        let before = self.producers.len();
        self.producers
            .retain(|_, entry| !is_producer_expired(entry, now_ms, expiration_ms));
        // Kafka's removeExpiredProducers drops verifications as old too.
        self.verification
            .retain(|_, v| now_ms - v.started_ms < expiration_ms);
        before - self.producers.len()
    }

    /// `producer.id.expiration.ms` changed (it is dynamic in Kafka, through
    /// `DynamicProducerStateManagerConfig`): the next expiry check and load use it.
    pub fn set_producer_id_expiration_ms(&mut self, producer_id_expiration_ms: i64) {
        assert!(
            producer_id_expiration_ms >= 0,
            "producer.id.expiration.ms must not be negative: {producer_id_expiration_ms}"
        );
        self.producer_id_expiration_ms = producer_id_expiration_ms;
    }

    /// The `producer.id.expiration.ms` in effect.
    pub fn producer_id_expiration_ms(&self) -> i64 {
        self.producer_id_expiration_ms
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
mod tests;
