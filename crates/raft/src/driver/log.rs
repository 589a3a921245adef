//! [`MetadataLog`]: the core's [`RaftLog`] over `kraftd_log::Log`, so the Raft driver keeps
//! `__cluster_metadata` in real segment files (Kafka's layout, leader-epoch checkpoint,
//! crash recovery) while the core stays sans-IO. It also carries the directory's
//! `quorum-state` file through [`kraftd_log::quorum_state::QuorumStateStore`], since only
//! `crates/log` opens data files.
//!
//! Disk failures: the [`RaftLog`] trait has no error channel for the disk, and an I/O error
//! on the metadata log is fatal (Kafka halts the process on a metadata log-dir failure). So
//! the first one is recorded ([`MetadataLog::failure`], naming the directory and the
//! operation) and the log is *failed* from then on: it writes nothing more, refuses every
//! append and snapshot, reads nothing and never reports more as flushed, so whatever the
//! core does with these answers cannot make anything look durable that is not. The driver
//! checks [`MetadataLog::failure`] after every call into the core, before acting on any of
//! its outputs, and stops the node with that error; nothing the core queued after the
//! failure reaches the network or the listeners. Refused input (a malformed or
//! non-contiguous batch from the network) maps to the core's [`LogError`] and changes
//! nothing.
//!
//! The leader's flush can run off the driver's task: [`MetadataLog::plan_flush`] hands out
//! the fsync ([`kraftd_log::PendingFlush`]) to run on a blocking thread, the driver gives
//! its result back with [`MetadataLog::flush_completed`] and then calls the core's flush,
//! whose [`RaftLog::flush`] takes that completed flush in place of a synchronous one: the
//! flushed offset moves to what the fsync covered (not what was appended since), so the
//! leader counts toward the HW only what is durable. Every other flush (a follower's, before
//! it fetches again) stays synchronous and complete.
//!
//! Snapshots (KIP-630) are `crates/log`'s `<end offset>-<epoch>.checkpoint` files; deleting
//! before a snapshot removes whole segments, so the start offset is the base of the oldest
//! segment kept (at most the snapshot's end offset). A snapshot above the flushed offset (a
//! leader's HW can pass it) flushes the log first, so a crash never leaves the log ending
//! below its latest snapshot.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

use bytes::{Bytes, BytesMut};
use kraftd_log::quorum_state::QuorumStateStore;
use kraftd_log::{CompletedFlush, Log, LogConfig, PendingFlush, SnapshotId};
use kraftd_protocol::records::Batches;

use crate::core::log::{LogError, RaftLog};
use crate::core::quorum_state::QuorumStateData;

pub mod quorum_state_file;

/// The `quorum-state` data_version written: 1, Kafka's KIP-853 form, which every Kafka 4.x
/// reads whatever its `kraft.version` (Kafka itself writes 0 under `kraft.version` 0).
const QUORUM_STATE_VERSION: i16 = 1;

/// The metadata log of one node: a `kraftd_log::Log` in the directory, plus its
/// `quorum-state` file.
#[derive(Debug)]
pub struct MetadataLog {
    log: Log,
    quorum_state: QuorumStateStore,
    /// A FetchSnapshot download in progress (its `.part` file; dropped, it is deleted).
    download: Option<kraftd_log::RawSnapshotWriter>,
    /// The first disk failure; set, the log is failed (see the module doc). Set from `&self`
    /// calls too (reads), hence a `OnceLock`: the first failure wins.
    failure: OnceLock<LogFailure>,
    /// A flush done off the driver's task, for the next [`RaftLog::flush`] to take.
    completed_flush: Mutex<Option<CompletedFlush>>,
}

/// A disk failure of the metadata log: the node must stop.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("metadata log {}: {op} failed: {reason}", dir.display())]
pub struct LogFailure {
    /// The log's directory.
    pub dir: PathBuf,
    /// What was being done ("append", "flush", "truncate", ...).
    pub op: &'static str,
    /// The store's error, with the file it concerned.
    pub reason: String,
}

/// Why the metadata log directory could not be opened or its quorum state read.
#[derive(Debug, thiserror::Error)]
pub enum MetadataLogError {
    #[error(transparent)]
    Log(#[from] kraftd_log::LogError),
    #[error("{path}: {reason}")]
    QuorumState { path: String, reason: String },
    #[error(transparent)]
    Failed(LogFailure),
}

impl MetadataLog {
    /// Opens (creating) the metadata log in `dir` with `config` (normally
    /// [`LogConfig::metadata_log`]). The core decides when to flush (a follower before it
    /// fetches again, a leader through [`crate::core::Output::Flush`] after it sent the
    /// records), so the store's own `flush.messages`/`flush.ms` are turned off here: an
    /// append that fsyncs by itself would put the leader's fsync before replication again.
    pub fn open(dir: &Path, mut config: LogConfig) -> Result<MetadataLog, MetadataLogError> {
        config.flush_messages = i64::MAX;
        config.flush_ms = i64::MAX;
        let log = Log::open(dir, config, kraftd_log::clock::unix_ms())?;
        Ok(MetadataLog {
            log,
            quorum_state: QuorumStateStore::new(dir),
            download: None,
            failure: OnceLock::new(),
            completed_flush: Mutex::new(None),
        })
    }

    /// The persisted quorum state, `None` for a node that never ran. The file is Kafka's
    /// JSON (data_version 0 or 1, [`quorum_state_file::decode`]); anything else is
    /// [`MetadataLogError::QuorumState`] naming the file and what is wrong with it.
    pub fn read_quorum_state(&self) -> Result<Option<QuorumStateData>, MetadataLogError> {
        let Some(bytes) = self.quorum_state.read()? else {
            return Ok(None);
        };
        let (data, _version) =
            quorum_state_file::decode(&bytes).map_err(|e| MetadataLogError::QuorumState {
                path: self.quorum_state.path().display().to_string(),
                reason: e.to_string(),
            })?;
        Ok(Some(QuorumStateData::from_data(&data)))
    }

    /// Writes the quorum state durably (temp file, fsync, rename, directory fsync), as
    /// Kafka's data_version 1 JSON.
    pub fn write_quorum_state(&self, state: &QuorumStateData) -> Result<(), MetadataLogError> {
        let json =
            quorum_state_file::encode(&state.to_data(), QUORUM_STATE_VERSION).map_err(|e| {
                MetadataLogError::QuorumState {
                    path: self.quorum_state.path().display().to_string(),
                    reason: e.to_string(),
                }
            })?;
        self.quorum_state.write(&json)?;
        Ok(())
    }

    /// Flushes and closes the log (an orderly stop). A failed log is closed without
    /// writing anything more, and reports its failure.
    pub fn close(self) -> Result<(), MetadataLogError> {
        if let Some(f) = self.failure.get() {
            return Err(MetadataLogError::Failed(f.clone()));
        }
        self.log.close()?;
        Ok(())
    }

    /// The fsync of everything appended so far, to run on another thread (see the module
    /// doc); `None` once the log failed.
    pub fn plan_flush(&self) -> Option<PendingFlush> {
        (!self.failed()).then(|| self.log.plan_flush())
    }

    /// The outcome of a [`MetadataLog::plan_flush`] run elsewhere: a failure fails the log;
    /// a completed flush waits for the next [`RaftLog::flush`] (the core's, called right
    /// after), which takes it instead of syncing.
    pub fn flush_completed(&self, result: Result<CompletedFlush, kraftd_log::LogError>) {
        match result {
            Ok(done) => {
                *self
                    .completed_flush
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(done);
            }
            Err(e) => self.fail("flush", e),
        }
    }

    /// Drops a completed flush no [`RaftLog::flush`] took, so no later flush (a
    /// follower's, which must be complete) takes it.
    pub fn discard_completed_flush(&self) {
        self.completed_flush
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// The first disk failure, if any: the log is failed and the node must stop.
    pub fn failure(&self) -> Option<&LogFailure> {
        self.failure.get()
    }

    /// The underlying log (for reads outside the core's contract, e.g. metrics).
    pub fn inner(&self) -> &Log {
        &self.log
    }

    /// Records a disk failure (the first one is kept) and logs it.
    fn fail(&self, op: &'static str, e: kraftd_log::LogError) {
        let failure = LogFailure {
            dir: self.log.dir().to_path_buf(),
            op,
            reason: e.to_string(),
        };
        tracing::error!("{failure}; the node must stop");
        let _ = self.failure.set(failure);
    }

    fn failed(&self) -> bool {
        self.failure.get().is_some()
    }

    /// What a failed log answers to an operation that would write or read the disk.
    fn refused_failed(&self) -> LogError {
        LogError::Corrupt(match self.failure.get() {
            Some(f) => f.to_string(),
            None => "metadata log failed".into(),
        })
    }
}

impl MetadataLog {
    /// Writes snapshot `id` unless it exists; I/O errors fail the log.
    fn write_snapshot(&mut self, id: SnapshotId, data: &[u8]) -> Result<(), LogError> {
        if self.failed() {
            return Err(self.refused_failed());
        }
        let refused = |reason: String| LogError::Snapshot {
            end_offset: id.end_offset,
            epoch: id.epoch,
            reason,
        };
        let mut writer = match self.log.create_snapshot(id) {
            Ok(w) => w,
            Err(e @ kraftd_log::LogError::Io { .. }) => {
                self.fail("create snapshot", e);
                return Err(self.refused_failed());
            }
            Err(e) => return Err(refused(e.to_string())),
        };
        if let Err(e) = writer.append(data) {
            self.fail("write snapshot", e);
            return Err(self.refused_failed());
        }
        if let Err(e) = self.log.commit_snapshot(writer) {
            self.fail("commit snapshot", e);
            return Err(self.refused_failed());
        }
        Ok(())
    }
}

/// Whether an append's error is the disk's (I/O, or data on disk this code never writes)
/// rather than a refusal of the input, which leaves the log unchanged.
fn is_disk_failure(e: &kraftd_log::LogError) -> bool {
    matches!(
        e,
        kraftd_log::LogError::Io { .. } | kraftd_log::LogError::Corrupt { .. }
    )
}

fn refused(e: kraftd_log::LogError, end_offset: i64) -> LogError {
    match e {
        kraftd_log::LogError::NonContiguousOffset { .. } => LogError::NotContiguous {
            base_offset: -1,
            end_offset,
        },
        other => LogError::Corrupt(other.to_string()),
    }
}

/// The offset range a leader batch would get at `end` (for a failed log's answer): its
/// last offset delta read from the header, one record when it does not parse.
fn leader_range(batch: &[u8], end: i64) -> (i64, i64) {
    let delta = batch
        .get(23..27)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, |b| i64::from(i32::from_be_bytes(b).max(0)));
    (end, end + delta)
}

impl RaftLog for MetadataLog {
    fn start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }

    fn end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }

    fn last_epoch(&self) -> i32 {
        match self.log.latest_epoch() {
            Some(epoch) => epoch,
            None => self
                .latest_snapshot()
                .filter(|s| s.end_offset == self.end_offset())
                .map_or(0, |s| s.epoch),
        }
    }

    fn append_as_leader(&mut self, batch: Bytes, epoch: i32) -> Result<(i64, i64), LogError> {
        if epoch < self.last_epoch() {
            return Err(LogError::EpochNotMonotonic {
                batch_epoch: epoch,
                last_epoch: self.last_epoch(),
            });
        }
        let end = self.end_offset();
        if self.failed() {
            // The core treats a refused leader append as a broken invariant (it built the
            // batch), so a failed log answers with the range the batch would have had and
            // appends nothing; the driver stops before acting on it.
            return Ok(leader_range(&batch, end));
        }
        match self.log.append_as_leader(
            BytesMut::from(&batch[..]),
            epoch,
            kraftd_log::clock::unix_ms(),
        ) {
            Ok(info) if info.last_offset >= info.first_offset => {
                Ok((info.first_offset, info.last_offset))
            }
            Ok(_) => Err(LogError::Corrupt("empty batch".into())),
            Err(e) if is_disk_failure(&e) => {
                self.fail("append", e);
                Ok(leader_range(&batch, end))
            }
            Err(e) => Err(refused(e, end)),
        }
    }

    fn append_as_follower(&mut self, batches: Bytes, current_epoch: i32) -> Result<(), LogError> {
        if self.failed() {
            return Err(self.refused_failed());
        }
        // The store checks framing, CRC, contiguity and monotonic epochs; the current epoch
        // is the core's to know, so it is checked here first.
        let end = self.end_offset();
        let mut expected = end;
        let mut last_epoch = self.last_epoch();
        for batch in Batches::new(batches.clone()) {
            let batch = match batch {
                Ok(b) => b,
                // A response cut at its size limit may end inside a batch (Kafka's log
                // slices do); the store appends the whole batches before it.
                Err(e) if e.is_partial_batch() => break,
                Err(e) => return Err(LogError::Corrupt(e.to_string())),
            };
            if batch.base_offset() != expected {
                return Err(LogError::NotContiguous {
                    base_offset: batch.base_offset(),
                    end_offset: expected,
                });
            }
            let epoch = batch.partition_leader_epoch();
            if epoch > current_epoch {
                return Err(LogError::EpochAboveCurrent {
                    batch_epoch: epoch,
                    current_epoch,
                });
            }
            if epoch < last_epoch {
                return Err(LogError::EpochNotMonotonic {
                    batch_epoch: epoch,
                    last_epoch,
                });
            }
            if batch.next_offset() <= batch.base_offset() {
                return Err(LogError::Corrupt("batch without records".into()));
            }
            last_epoch = epoch;
            expected = batch.next_offset();
        }
        match self
            .log
            .append_as_follower(batches, kraftd_log::clock::unix_ms())
        {
            Ok(_) => Ok(()),
            Err(e) if is_disk_failure(&e) => {
                self.fail("append", e);
                Err(self.refused_failed())
            }
            Err(e) => Err(refused(e, end)),
        }
    }

    fn truncate_to(&mut self, offset: i64) {
        if self.failed() {
            return;
        }
        if let Err(e) = self.log.truncate_to(offset) {
            self.fail("truncate", e);
        }
    }

    fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        match self.log.end_offset_for_epoch(epoch) {
            Some(found) => found,
            // Below every batch held: the snapshot the log starts at answers, if any.
            None => match self.latest_snapshot() {
                Some(s) if s.end_offset == self.start_offset() && s.epoch <= epoch => {
                    (s.epoch, s.end_offset)
                }
                _ => (0, self.start_offset()),
            },
        }
    }

    fn read(&self, from: i64, max_bytes: usize) -> Bytes {
        if self.failed() {
            return Bytes::new();
        }
        match self.log.read(from, max_bytes, i64::MAX) {
            Ok(r) => r.bytes,
            // The core reads from offsets it validated; out of range means nothing to send.
            Err(e) if e.is_offset_out_of_range() => Bytes::new(),
            Err(e) => {
                self.fail("read", e);
                Bytes::new()
            }
        }
    }

    /// Synchronous and complete, unless the driver just handed in a flush done off its
    /// task ([`MetadataLog::flush_completed`]): then that one is taken, and what was
    /// appended while it ran stays unflushed (the core asks again).
    fn flush(&mut self) -> i64 {
        let completed = self
            .completed_flush
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if self.failed() {
            return self.log.flushed_offset();
        }
        if let Some(done) = completed {
            return self.log.complete_flush(done);
        }
        if let Err(e) = self.log.flush() {
            self.fail("flush", e);
        }
        self.log.flushed_offset()
    }

    fn flushed_offset(&self) -> i64 {
        self.log.flushed_offset()
    }

    fn latest_snapshot(&self) -> Option<SnapshotId> {
        self.log.latest_snapshot()
    }

    fn store_snapshot(&mut self, id: SnapshotId, data: &[u8]) -> Result<(), LogError> {
        if id.end_offset < 0 || id.end_offset > self.end_offset() {
            return Err(LogError::Snapshot {
                end_offset: id.end_offset,
                epoch: id.epoch,
                reason: "end offset outside the log".into(),
            });
        }
        // A leader's HW may pass its own flushed offset (the followers' durable offsets
        // make the majority while its fsync runs off the driver's task), so a snapshot can
        // be asked above it. The log is made durable through the snapshot's end first: a
        // crash must not leave a snapshot above the log end (the log would restart below
        // the state it already holds, with the segments before it deleted).
        if id.end_offset > self.log.flushed_offset() && !self.failed() {
            if let Err(e) = self.log.flush() {
                self.fail("flush", e);
            }
        }
        self.write_snapshot(id, data)
    }

    fn read_snapshot(
        &self,
        id: SnapshotId,
        position: u64,
        max_bytes: usize,
    ) -> Option<(Bytes, u64)> {
        if self.failed() {
            return None;
        }
        let reader = self.log.open_snapshot(id).ok()?;
        match reader.read(position, max_bytes) {
            Ok(bytes) => Some((bytes, reader.size_in_bytes())),
            Err(e) => {
                self.fail("read snapshot", e);
                None
            }
        }
    }

    fn delete_before_latest_snapshot(&mut self) -> i64 {
        if self.failed() {
            return self.start_offset();
        }
        if let Some(latest) = self.latest_snapshot() {
            if let Err(e) = self.log.delete_segments_before(latest.end_offset) {
                self.fail("delete segments", e);
                return self.start_offset();
            }
            if let Err(e) = self.log.delete_snapshots_before_log_start() {
                self.fail("delete snapshots", e);
            }
        }
        self.start_offset()
    }

    fn install_snapshot(&mut self, id: SnapshotId, data: &[u8]) -> Result<(), LogError> {
        if id.end_offset < 0 || id.epoch < 0 {
            return Err(LogError::Snapshot {
                end_offset: id.end_offset,
                epoch: id.epoch,
                reason: "negative end offset or epoch".into(),
            });
        }
        if self.failed() {
            return Err(self.refused_failed());
        }
        if !self.log.snapshots().contains(&id) {
            self.write_snapshot(id, data)?;
        }
        if let Err(e) = self.log.truncate_fully_and_start_at(id.end_offset) {
            self.fail("truncate fully", e);
            return Err(self.refused_failed());
        }
        if let Err(e) = self.log.delete_snapshots_before_log_start() {
            self.fail("delete snapshots", e);
            return Err(self.refused_failed());
        }
        Ok(())
    }

    fn begin_snapshot_download(&mut self, id: SnapshotId) -> Result<(), LogError> {
        self.download = None;
        if self.failed() {
            return Err(self.refused_failed());
        }
        match self.log.create_snapshot(id) {
            Ok(w) => {
                self.download = Some(w);
                Ok(())
            }
            Err(e @ kraftd_log::LogError::Io { .. }) => {
                self.fail("create snapshot", e);
                Err(self.refused_failed())
            }
            Err(e) => Err(LogError::Snapshot {
                end_offset: id.end_offset,
                epoch: id.epoch,
                reason: e.to_string(),
            }),
        }
    }

    fn append_snapshot_download(&mut self, id: SnapshotId, chunk: &[u8]) -> Result<u64, LogError> {
        if self.failed() {
            return Err(self.refused_failed());
        }
        let result = match self.download.as_mut() {
            Some(w) if w.id() == id => w.append(chunk).map(|()| w.size_in_bytes()),
            _ => {
                return Err(LogError::Snapshot {
                    end_offset: id.end_offset,
                    epoch: id.epoch,
                    reason: "not being downloaded".into(),
                })
            }
        };
        match result {
            Ok(n) => Ok(n),
            Err(e) => {
                self.download = None;
                self.fail("write snapshot", e);
                Err(self.refused_failed())
            }
        }
    }

    fn finish_snapshot_download(&mut self, id: SnapshotId) -> Result<(), LogError> {
        if self.failed() {
            return Err(self.refused_failed());
        }
        let writer = match self.download.take() {
            Some(w) if w.id() == id => w,
            other => {
                self.download = other;
                return Err(LogError::Snapshot {
                    end_offset: id.end_offset,
                    epoch: id.epoch,
                    reason: "not being downloaded".into(),
                });
            }
        };
        if let Err(e) = self.log.commit_snapshot(writer) {
            self.fail("commit snapshot", e);
            return Err(self.refused_failed());
        }
        self.install_snapshot(id, &[])
    }
}

#[cfg(test)]
mod tests;
