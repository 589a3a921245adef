//! One segment: a `<base offset, 20 digits>.log` file of RecordBatch v2 bytes, stored
//! exactly as appended, plus its offset and time indexes. The segment knows how to append,
//! find the batch holding an offset, read whole batches, truncate, recover its tail after a
//! crash, and rebuild its indexes; the [`crate::Log`] decides which segment does what.
//!
//! No segment owns an open file: every `.log` handle, the active segment's included, lives
//! in the process's bounded pool ([`SegmentFiles`], `handles.rs`), opened on first use and
//! closed when idle or least recently used past the cap; the indexes are in memory and
//! their files opened only to write. A busy partition's handle stays pooled, so its hot
//! path costs no extra system call; a broker of many partitions holds few descriptors.
//!
//! Where things are:
//!
//! - `mod.rs` — [`Segment`] (Kafka's `LogSegment`): its files, append and index
//!   maintenance, lookups, truncation, flushing, sealing and deletion;
//! - `file_records.rs` — reading a segment's `.log` (Kafka's `FileRecords` and its batch
//!   iteration): [`BatchReader`] and planned reads ([`SegmentRegion`]);
//! - `recovery.rs` — loading an existing segment: recovering the active one (cut at the first
//!   unsound batch), trusting or rebuilding a sealed one's indexes, and `verify`.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kraftd_protocol::records::NO_TIMESTAMP;

use crate::error::{LogError, Result};
use crate::handles::SegmentFiles;
use crate::index::{OffsetIndex, TimeIndex};

mod file_records;
mod recovery;
mod txn_index;

pub(crate) use file_records::{BatchInfo, SegmentRegion};
use file_records::{BatchReader, ScanError};
pub use txn_index::{encode_aborted_txn, ABORTED_TXN_ENTRY_BYTES, TXN_INDEX_FILE_SUFFIX};
pub(crate) use txn_index::{TxnIndex, TxnIndexSearch};

/// Suffix of segment data files.
pub const LOG_FILE_SUFFIX: &str = "log";
/// Suffix of offset index files.
pub const INDEX_FILE_SUFFIX: &str = "index";
/// Suffix of time index files.
pub const TIME_INDEX_FILE_SUFFIX: &str = "timeindex";

/// `<offset, 20 digits>.<suffix>`, Kafka's segment file name.
pub fn file_name(base_offset: i64, suffix: &str) -> String {
    format!("{base_offset:020}.{suffix}")
}

/// The `.txnindex` beside a live `.log`.
fn txn_index_path(log_path: &Path) -> PathBuf {
    log_path.with_extension(TXN_INDEX_FILE_SUFFIX)
}

/// One segment of a log.
#[derive(Debug)]
pub(crate) struct Segment {
    base_offset: i64,
    log_path: PathBuf,
    /// The log's view of the handle pool, where this segment's `.log` handle lives.
    files: Arc<SegmentFiles>,
    /// This segment's key in the pool, unique in the process.
    id: u64,
    /// Written since the last fdatasync (appends, truncation).
    unsynced: bool,
    /// Bytes of valid batches; the file is never longer once the segment is open.
    size: u64,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    /// The aborted transactions whose markers are in this segment (`.txnindex`).
    txn_index: TxnIndex,
    /// The offset after the last batch (the base offset while empty).
    next_offset: i64,
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
    bytes_since_last_index_entry: u64,
    index_interval_bytes: u64,
    /// When the segment's clock for `segment.ms` started (its first append).
    rolling_base_ms: Option<i64>,
}

fn open_log_file(path: &Path, truncate: bool) -> Result<Arc<File>> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(truncate)
        .open(path)
        .map(Arc::new)
        .map_err(LogError::io("open", path))
}

impl Segment {
    /// Creates an empty segment (truncating leftovers of the same name).
    pub fn create(
        dir: &Path,
        base_offset: i64,
        index_interval_bytes: u64,
        files: &Arc<SegmentFiles>,
    ) -> Result<Segment> {
        Segment::create_with_suffix(dir, base_offset, "", index_interval_bytes, files)
    }

    /// [`Segment::create`] with `extra` after each file's suffix (`.cleaned`: the cleaner
    /// writes its output beside the log under names the log never reads).
    pub fn create_with_suffix(
        dir: &Path,
        base_offset: i64,
        extra: &str,
        index_interval_bytes: u64,
        files: &Arc<SegmentFiles>,
    ) -> Result<Segment> {
        let name = |suffix: &str| dir.join(file_name(base_offset, &format!("{suffix}{extra}")));
        let log_path = name(LOG_FILE_SUFFIX);
        let log = open_log_file(&log_path, true)?;
        let offset_index = OffsetIndex::create(&name(INDEX_FILE_SUFFIX), base_offset)?;
        let time_index = TimeIndex::create(&name(TIME_INDEX_FILE_SUFFIX), base_offset)?;
        let mut seg = Segment::empty(
            base_offset,
            log_path,
            log,
            files,
            offset_index,
            time_index,
            index_interval_bytes,
        );
        seg.txn_index = TxnIndex::create(name(TXN_INDEX_FILE_SUFFIX))?;
        Ok(seg)
    }

    fn empty(
        base_offset: i64,
        log_path: PathBuf,
        log: Arc<File>,
        files: &Arc<SegmentFiles>,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        index_interval_bytes: u64,
    ) -> Segment {
        let id = files.new_id();
        files.insert(id, log, true);
        Segment {
            base_offset,
            files: Arc::clone(files),
            id,
            unsynced: false,
            size: 0,
            offset_index,
            time_index,
            txn_index: TxnIndex::unloaded(txn_index_path(&log_path)),
            next_offset: base_offset,
            max_timestamp: NO_TIMESTAMP,
            offset_of_max_timestamp: base_offset,
            bytes_since_last_index_entry: 0,
            index_interval_bytes,
            rolling_base_ms: None,
            log_path,
        }
    }

    /// Updates the in-memory state and indexes for a batch just stored at `info.position`.
    fn index_batch(&mut self, info: &BatchInfo) -> Result<()> {
        debug_assert_eq!(info.position, self.size);
        // Compaction leaves gaps between batches: offsets only increase.
        debug_assert!(info.base_offset >= self.next_offset);
        if info.max_timestamp > self.max_timestamp {
            self.max_timestamp = info.max_timestamp;
            self.offset_of_max_timestamp = info.last_offset;
        }
        if self.bytes_since_last_index_entry > self.index_interval_bytes {
            let position = u32::try_from(info.position).map_err(|_| LogError::OffsetOverflow {
                reason: format!("segment position {} does not fit u32", info.position),
            })?;
            self.offset_index.append(info.last_offset, position)?;
            self.time_index
                .maybe_append(self.max_timestamp, self.offset_of_max_timestamp)?;
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += info.size;
        self.size = info.position + info.size;
        self.next_offset = info.last_offset + 1;
        Ok(())
    }

    /// Appends `data` (whole, validated batches described by `batches`, positions relative
    /// to `data`) at the end of the file. On a write error the file is cut back.
    pub fn append(&mut self, data: &[u8], batches: &[BatchInfo], now_ms: i64) -> Result<()> {
        let start = self.size;
        let file = self.writable()?;
        self.unsynced = true;
        if let Err(e) = file.write_all_at(data, start) {
            // Best effort: a partial write past `size` is invisible anyway and recovery
            // would cut it.
            let _ = file.set_len(start);
            return Err(LogError::io("write", &self.log_path)(e));
        }
        for b in batches {
            let info = BatchInfo {
                position: start + b.position,
                ..*b
            };
            self.index_batch(&info)?;
        }
        debug_assert_eq!(self.size, start + data.len() as u64);
        if !batches.is_empty() {
            self.rolling_base_ms.get_or_insert(now_ms);
        }
        Ok(())
    }

    fn reader<'a>(&'a self, file: &'a File, start: u64, chunk: usize) -> BatchReader<'a> {
        BatchReader::new(file, &self.log_path, start, self.size, chunk, usize::MAX)
    }

    fn corrupt(&self, e: ScanError) -> LogError {
        match e {
            ScanError::Io(e) => e,
            ScanError::Bad { position, reason } => {
                LogError::corrupt(&self.log_path, position, reason)
            }
        }
    }

    /// The first batch whose last offset is ≥ `offset`, if the segment has one.
    pub fn locate(&self, offset: i64) -> Result<Option<BatchInfo>> {
        if offset >= self.next_offset {
            return Ok(None);
        }
        self.region(offset).locate(offset)
    }

    /// The first record at or after `min_offset` with a timestamp ≥ `timestamp`, as
    /// (offset, timestamp), if this segment holds one.
    pub fn find_offset_by_timestamp(
        &self,
        timestamp: i64,
        min_offset: i64,
    ) -> Result<Option<(i64, i64)>> {
        if self.max_timestamp < timestamp {
            return Ok(None);
        }
        let from_offset = self
            .time_index
            .lookup(timestamp)
            .map_or(self.base_offset, |e| e.offset)
            .max(min_offset);
        let start = u64::from(self.offset_index.lookup(from_offset).position);
        let file = self.file()?;
        let mut reader = self.reader(&file, start, 64 * 1024);
        loop {
            let batch = match reader.next_batch() {
                Ok(None) => return Ok(None),
                Ok(Some((_, batch))) => batch,
                Err(e) => return Err(self.corrupt(e)),
            };
            if batch.max_timestamp() < timestamp || batch.last_offset() < min_offset {
                continue;
            }
            let records = batch.records().map_err(|e| {
                LogError::corrupt(&self.log_path, batch.position() as u64, e.to_string())
            })?;
            for record in records {
                let record = record.map_err(|e| {
                    LogError::corrupt(&self.log_path, batch.position() as u64, e.to_string())
                })?;
                let (o, t) = (record.offset(&batch), record.timestamp(&batch));
                if t >= timestamp && o >= min_offset {
                    return Ok(Some((o, t)));
                }
            }
        }
    }

    /// Removes every batch from the one holding `offset` on (so a batch straddling
    /// `offset` goes whole). Returns the bytes removed.
    pub fn truncate_to(&mut self, offset: i64) -> Result<u64> {
        let Some(cut) = self.locate(offset)? else {
            return Ok(0);
        };
        let removed = self.size - cut.position;
        self.unsynced = true;
        self.writable()?
            .set_len(cut.position)
            .map_err(LogError::io("truncate", &self.log_path))?;
        self.size = cut.position;
        self.next_offset = cut.base_offset;
        self.offset_index.truncate_to_offset(cut.base_offset)?;
        self.offset_index.truncate_to_position(cut.position)?;
        self.time_index.truncate_to_offset(cut.base_offset)?;
        self.txn_index.truncate_to(cut.base_offset)?;
        self.bytes_since_last_index_entry = 0;
        // The largest timestamp left: the time index's last entry covers everything up to
        // the last offset-index entry; scan what follows it.
        match self.time_index.last() {
            Some(t) => {
                self.max_timestamp = t.timestamp;
                self.offset_of_max_timestamp = t.offset;
            }
            None => {
                self.max_timestamp = NO_TIMESTAMP;
                self.offset_of_max_timestamp = self.base_offset;
            }
        }
        let start = self
            .offset_index
            .last()
            .map_or(0, |e| u64::from(e.position));
        let file = self.file()?;
        let mut reader = self.reader(&file, start, 64 * 1024);
        let mut tail_max = None;
        loop {
            match reader.next_batch() {
                Ok(None) => break,
                Ok(Some((_, b))) => {
                    if tail_max.is_none_or(|(t, _)| b.max_timestamp() > t) {
                        tail_max = Some((b.max_timestamp(), b.last_offset()));
                    }
                }
                Err(e) => return Err(self.corrupt(e)),
            }
        }
        if let Some((t, o)) = tail_max {
            if t > self.max_timestamp {
                self.max_timestamp = t;
                self.offset_of_max_timestamp = o;
            }
        }
        if self.size == 0 {
            self.rolling_base_ms = None;
        }
        Ok(removed)
    }

    /// Forces the batches to disk (fdatasync of the `.log` file). The indexes are not
    /// synced: the active segment's are rebuilt by recovery, so syncing them on every
    /// flush (the metadata log flushes every append) would triple the cost for nothing.
    ///
    /// A segment not written since its last sync (a sealed one, or the active one synced
    /// already) has nothing to do. A handle closed since the write is reopened: the sync of
    /// any handle flushes the file.
    pub fn flush(&mut self) -> Result<()> {
        if !self.unsynced {
            return Ok(());
        }
        let file = self.file()?;
        crate::flush_timer::timed(|| file.sync_data())
            .map_err(LogError::io("fsync", &self.log_path))?;
        self.unsynced = false;
        Ok(())
    }

    /// The `.log` handle to fdatasync from another thread ([`crate::PendingFlush`]), if it
    /// is pooled; `None` means the flush opens the file by its path when it runs.
    pub fn sync_handle(&self) -> Option<Arc<File>> {
        self.files.get(self.id, false)
    }

    /// Writes and syncs the indexes as well as the batches (on seal and close).
    pub fn flush_all(&mut self) -> Result<()> {
        self.offset_index.flush()?;
        self.time_index.flush()?;
        self.txn_index.flush()?;
        self.flush()
    }

    /// Seals the segment as the log rolls past it: records the final time-index entry (so
    /// the segment's largest timestamp is on disk for retention after a restart) and
    /// flushes everything.
    pub fn seal(&mut self) -> Result<()> {
        if self.max_timestamp != NO_TIMESTAMP && self.size > 0 {
            self.time_index
                .maybe_append(self.max_timestamp, self.offset_of_max_timestamp)?;
        }
        self.flush_all()
    }

    /// Deletes the segment's files (closing its handles first; reads in flight keep theirs).
    pub fn delete(mut self) -> Result<()> {
        self.close_files();
        for path in [
            self.log_path.as_path(),
            self.offset_index.path(),
            self.time_index.path(),
            self.txn_index.path(),
        ] {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io("delete", path)(e)),
            }
        }
        Ok(())
    }

    /// The pooled `.log` handle to read with (opened on a miss). Only for calls made under
    /// the owner's lock that read anyway (open, verify, timestamp lookup, truncation,
    /// flush); planned reads open lazily instead.
    fn file(&self) -> Result<Arc<File>> {
        self.files.get_or_open(self.id, &self.log_path, false)
    }

    /// The pooled `.log` handle to write with (read-write; a read-only one is replaced).
    fn writable(&mut self) -> Result<Arc<File>> {
        self.files.get_or_open(self.id, &self.log_path, true)
    }

    /// Flushes and closes what a sealed segment does not need: its index files (their
    /// entries are in memory). Its `.log` handle stays pooled while it is used.
    pub fn release(&mut self) -> Result<()> {
        self.offset_index.release()?;
        self.time_index.release()?;
        Ok(())
    }

    /// Drops the segment's pooled handle (before its files are deleted or renamed away, so
    /// no later read reaches them through a stale handle).
    pub fn close_files(&mut self) {
        self.files.remove(self.id);
    }

    /// Starts the `segment.ms` clock of a segment loaded without a full scan (the active
    /// one after a clean shutdown) as recovery does: at its first batch's timestamp.
    pub fn start_rolling_clock(&mut self) -> Result<()> {
        self.rolling_base_ms = self
            .locate(self.base_offset)?
            .map(|b| b.max_timestamp)
            .filter(|&t| t >= 0);
        Ok(())
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Records an aborted transaction whose marker is in this segment (idempotent: an
    /// entry whose marker is not past the last one's is already there).
    pub fn append_aborted_txn(&mut self, t: crate::producer_state::AbortedTxn) -> Result<bool> {
        self.txn_index.append(t)
    }

    /// This segment's aborted transactions, in marker order.
    pub fn aborted_txns(&self) -> &[crate::producer_state::AbortedTxn] {
        self.txn_index.entries()
    }

    /// Kafka's `LogSegment.collectAbortedTxns`.
    pub fn collect_aborted_txns(&self, fetch_offset: i64, upper_bound: i64) -> TxnIndexSearch {
        self.txn_index.collect(fetch_offset, upper_bound)
    }

    /// Loads the `.txnindex` beside the segment, keeping only entries below its end.
    fn load_txn_index(&mut self) -> Result<()> {
        let path = self.txn_index.path().to_path_buf();
        self.txn_index = TxnIndex::open(path, self.next_offset)?;
        Ok(())
    }

    /// This segment's id in the log's handle cache: unique for the log's lifetime, so the
    /// cleaner can tell the segment it read from one created later at the same offset.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The time-index file's size.
    pub fn time_index_bytes(&self) -> u64 {
        self.time_index.size_in_bytes()
    }

    /// Bytes of batches in the segment.
    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The offset after the segment's last batch.
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// The largest batch timestamp in the segment ([`NO_TIMESTAMP`] when none).
    /// The offset of the batch holding the largest timestamp (ListOffsets MAX_TIMESTAMP).
    pub fn offset_of_max_timestamp(&self) -> i64 {
        self.offset_of_max_timestamp
    }

    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }

    /// The offset-index file's size, to roll before it passes `segment.index.bytes`.
    pub fn offset_index_bytes(&self) -> u64 {
        self.offset_index.size_in_bytes()
    }

    /// When the segment's `segment.ms` clock started, if it has data.
    pub fn rolling_base_ms(&self) -> Option<i64> {
        self.rolling_base_ms
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }
}

impl Drop for Segment {
    /// A segment dropped (replaced, deleted, the log closed) gives its pooled handle back.
    fn drop(&mut self) {
        self.close_files();
    }
}
