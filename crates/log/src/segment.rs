//! One segment: a `<base offset, 20 digits>.log` file of RecordBatch v2 bytes, stored
//! exactly as appended, plus its offset and time indexes. The segment knows how to append,
//! find the batch holding an offset, read whole batches, truncate, recover its tail after a
//! crash, and rebuild its indexes; the [`crate::Log`] decides which segment does what.
//!
//! Only the active segment owns open files; a sealed one reads its `.log` through the
//! log's bounded handle cache ([`SegmentFiles`]) and keeps its indexes in memory, so a log
//! of many segments holds few descriptors.
//!
//! Batches are always read back through the protocol crate's [`Batches`] iterator (framing
//! and header checks) and [`RecordBatch::validate_crc`] during recovery: there is one batch
//! parser in the workspace and it is not here.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use kraftd_protocol::records::{
    Batches, RecordBatch, RecordBatchError, BATCH_OVERHEAD, NO_TIMESTAMP,
};

use crate::error::{LogError, Result};
use crate::handles::SegmentFiles;
use crate::index::{OffsetIndex, TimeIndex};

/// Suffix of segment data files.
pub const LOG_FILE_SUFFIX: &str = "log";
/// Suffix of offset index files.
pub const INDEX_FILE_SUFFIX: &str = "index";
/// Suffix of time index files.
pub const TIME_INDEX_FILE_SUFFIX: &str = "timeindex";

/// Bytes read at a time when scanning a whole segment (recovery, index rebuild).
const SCAN_CHUNK_BYTES: usize = 1024 * 1024;

/// `<offset, 20 digits>.<suffix>`, Kafka's segment file name.
pub fn file_name(base_offset: i64, suffix: &str) -> String {
    format!("{base_offset:020}.{suffix}")
}

/// What the log needs to know about a batch it appends or recovers, taken from the batch's
/// header once so the batch need not be parsed again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchInfo {
    /// Byte position: within the appended buffer before the append, within the segment file
    /// once stored.
    pub position: u64,
    pub size: u64,
    pub base_offset: i64,
    pub last_offset: i64,
    pub epoch: i32,
    pub max_timestamp: i64,
    pub record_count: i32,
}

impl BatchInfo {
    pub fn of(batch: &RecordBatch, position: u64) -> BatchInfo {
        BatchInfo {
            position,
            size: batch.size_in_bytes() as u64,
            base_offset: batch.base_offset(),
            last_offset: batch.last_offset(),
            epoch: batch.partition_leader_epoch(),
            max_timestamp: batch.max_timestamp(),
            record_count: batch.record_count(),
        }
    }
}

/// Why a scan of segment bytes stopped early.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// The file could not be read.
    Io(LogError),
    /// The bytes at `position` are not a sound batch (torn or corrupt).
    Bad { position: u64, reason: String },
}

/// Iterates over the complete batches of a file region, reading it in chunks with
/// positional reads (so concurrent readers share the file handle without a cursor).
pub(crate) struct BatchReader<'a> {
    file: &'a File,
    path: &'a Path,
    pos: u64,
    end: u64,
    buf: Bytes,
    buf_start: u64,
    chunk: usize,
    max_batch_bytes: usize,
    done: bool,
    /// When the scan stopped at a batch that runs past the region's end: where that batch
    /// (or, if its length was not even readable, its length field) would end.
    torn_end: Option<u64>,
}

impl<'a> BatchReader<'a> {
    pub fn new(
        file: &'a File,
        path: &'a Path,
        start: u64,
        end: u64,
        chunk: usize,
        max_batch_bytes: usize,
    ) -> BatchReader<'a> {
        BatchReader {
            file,
            path,
            pos: start,
            end,
            buf: Bytes::new(),
            buf_start: start,
            chunk: chunk.max(BATCH_OVERHEAD),
            max_batch_bytes,
            done: false,
            torn_end: None,
        }
    }

    /// Where the batch the scan stopped at would end, if it stopped because that batch
    /// runs past the region's end (rather than because its bytes are unsound).
    pub fn torn_end(&self) -> Option<u64> {
        self.torn_end
    }

    /// The buffer the last batch was sliced from and where it starts in the file, so a
    /// caller can slice a range of consecutive batches without reading them again.
    pub fn buffer(&self) -> (&Bytes, u64) {
        (&self.buf, self.buf_start)
    }

    fn fill(&mut self, want: usize) -> Result<(), ScanError> {
        let len = (want as u64).min(self.end - self.pos) as usize;
        let mut v = vec![0u8; len];
        self.file
            .read_exact_at(&mut v, self.pos)
            .map_err(|e| ScanError::Io(LogError::io("read", self.path)(e)))?;
        self.buf = Bytes::from(v);
        self.buf_start = self.pos;
        Ok(())
    }

    fn bad(&mut self, reason: String) -> ScanError {
        self.done = true;
        ScanError::Bad {
            position: self.pos,
            reason,
        }
    }

    /// The next batch and its file position; `Ok(None)` at the end of the region.
    pub fn next_batch(&mut self) -> Result<Option<(u64, RecordBatch)>, ScanError> {
        if self.done || self.pos >= self.end {
            return Ok(None);
        }
        let mut refilled = false;
        let mut attempts = 0;
        loop {
            let off = self.pos.checked_sub(self.buf_start).map(|o| o as usize);
            let avail = match off {
                Some(o) if o <= self.buf.len() => self.buf.slice(o..),
                _ => Bytes::new(),
            };
            match Batches::new(avail).next() {
                None => {
                    if refilled {
                        return Err(self.bad("no bytes could be read".into()));
                    }
                    self.fill(self.chunk)?;
                    refilled = true;
                }
                Some(Ok(batch)) => {
                    let at = self.pos;
                    self.pos += batch.size_in_bytes() as u64;
                    return Ok(Some((at, batch)));
                }
                Some(Err(RecordBatchError::PartialBatch { needed, .. })) => {
                    let need = needed.unwrap_or(BATCH_OVERHEAD);
                    let remaining = self.end - self.pos;
                    if need as u64 > remaining {
                        self.torn_end = Some(self.pos + need as u64);
                        return Err(self.bad(format!(
                            "torn batch: needs {need} bytes but only {remaining} remain"
                        )));
                    }
                    if need > self.max_batch_bytes {
                        return Err(self.bad(format!(
                            "batch of {need} bytes is over the {} byte limit",
                            self.max_batch_bytes
                        )));
                    }
                    // A fill of `need` bytes holds the whole batch, so this repeats at most
                    // twice (once for the length, once for the batch).
                    attempts += 1;
                    if attempts > 3 {
                        return Err(self.bad("batch could not be read whole".into()));
                    }
                    self.fill(self.chunk.max(need))?;
                    refilled = true;
                }
                Some(Err(e)) => return Err(self.bad(e.to_string())),
            }
        }
    }
}

/// The `.log` handle a planned read uses: taken when the read was planned if the segment
/// had one open (the active segment's own, or a cached one), else opened through the
/// cache when the read runs, so planning never opens a file under the owner's lock.
#[derive(Debug, Clone)]
enum RegionFile {
    Open(Arc<File>),
    Cached { files: Arc<SegmentFiles>, id: u64 },
}

/// What a scan starting at an index entry knows of the batch there, so a scan that lands
/// mid-batch (a damaged index or `.log`) is an error rather than garbage.
#[derive(Debug, Clone, Copy)]
enum Anchor {
    /// The scan starts at the segment's first byte: the batch there starts at this offset.
    BaseOffset(i64),
    /// The scan starts at an offset-index entry: the batch there ends at this offset.
    LastOffset(i64),
}

/// A read of one segment planned under the log's lock (an index lookup) and executed
/// without it: the file handle, where the scan for the offset starts, and how far the
/// segment's batches reached when planned (later appends are not seen).
///
/// Reads check framing (length, magic, minimum size, batches not running past the
/// segment's end) and that offsets follow on from the index entry the scan starts at and
/// from batch to batch; anything else is [`LogError::Corrupt`] naming the file and byte
/// position, never skipped. CRCs are not checked on reads (as in Kafka, consumers check
/// them); [`Segment::verify`] and recovery do.
#[derive(Debug, Clone)]
pub(crate) struct SegmentRegion {
    file: RegionFile,
    path: PathBuf,
    scan_from: u64,
    anchor: Anchor,
    end: u64,
    chunk: usize,
}

impl SegmentRegion {
    /// The handle to read with. A segment deleted since the read was planned (retention,
    /// truncation) has no file left to open: the read is retried by the caller, as after a
    /// truncation.
    fn open(&self, offset: i64) -> Result<Arc<File>> {
        match &self.file {
            RegionFile::Open(file) => Ok(Arc::clone(file)),
            RegionFile::Cached { files, id } => {
                files.get_or_open(*id, &self.path).map_err(|e| match e {
                    LogError::Io { ref source, .. }
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        LogError::ConcurrentTruncation { offset }
                    }
                    e => e,
                })
            }
        }
    }

    fn corrupt(&self, e: ScanError) -> LogError {
        match e {
            ScanError::Io(e) => e,
            ScanError::Bad { position, reason } => LogError::corrupt(&self.path, position, reason),
        }
    }

    /// The first batch whose last offset is ≥ `offset`, if the region has one.
    fn locate_in(&self, file: &File, offset: i64) -> Result<Option<BatchInfo>> {
        let mut reader = BatchReader::new(
            file,
            &self.path,
            self.scan_from,
            self.end,
            self.chunk,
            usize::MAX,
        );
        let mut expected: Option<i64> = None;
        loop {
            match reader.next_batch() {
                Ok(None) => return Ok(None),
                Ok(Some((position, batch))) => {
                    let (base, last) = (batch.base_offset(), batch.last_offset());
                    let mismatch = match (expected, self.anchor) {
                        (Some(e), _) => (base != e).then(|| {
                            format!("batch starts at offset {base} where {e} was expected")
                        }),
                        (None, Anchor::BaseOffset(b)) => (base != b).then(|| {
                            format!("first batch starts at offset {base}, the segment at {b}")
                        }),
                        (None, Anchor::LastOffset(l)) => (last != l).then(|| {
                            format!("batch ends at offset {last}, the offset index says at {l}")
                        }),
                    };
                    if let Some(reason) = mismatch {
                        return Err(LogError::corrupt(&self.path, position, reason));
                    }
                    expected = Some(batch.next_offset());
                    if batch.last_offset() >= offset {
                        return Ok(Some(BatchInfo::of(&batch, position)));
                    }
                }
                Err(e) => return Err(self.corrupt(e)),
            }
        }
    }

    /// The first batch whose last offset is ≥ `offset`, if the region has one.
    pub fn locate(&self, offset: i64) -> Result<Option<BatchInfo>> {
        let file = self.open(offset)?;
        self.locate_in(&file, offset)
    }

    /// Whole batches from the one holding `offset` on, while their last offset is below
    /// `upper_bound` and they fit `max_bytes` (the first batch is returned even when it
    /// alone is larger, as Kafka does, so a consumer can always make progress). Returns
    /// the bytes, the first batch's base offset and the offset after the last batch.
    pub fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        upper_bound: i64,
    ) -> Result<Option<(Bytes, i64, i64)>> {
        let file = self.open(offset)?;
        let Some(first) = self.locate_in(&file, offset)? else {
            return Ok(None);
        };
        if first.last_offset >= upper_bound {
            return Ok(None);
        }
        // Read at most what may be returned, in one go: the first batch whole, then up to
        // `max_bytes`.
        let limit = (first.position + max_bytes.max(first.size as usize) as u64).min(self.end);
        let mut reader = BatchReader::new(
            &file,
            &self.path,
            first.position,
            limit,
            (limit - first.position) as usize,
            usize::MAX,
        );
        let mut end = first.position;
        let mut next_offset = first.base_offset;
        loop {
            match reader.next_batch() {
                Ok(None) => break,
                Ok(Some((position, batch))) => {
                    if batch.base_offset() != next_offset {
                        return Err(LogError::corrupt(
                            &self.path,
                            position,
                            format!(
                                "batch starts at offset {} where {next_offset} was expected",
                                batch.base_offset()
                            ),
                        ));
                    }
                    if batch.last_offset() >= upper_bound {
                        break;
                    }
                    end = position + batch.size_in_bytes() as u64;
                    next_offset = batch.next_offset();
                }
                // A batch crossing the byte limit but not the segment's end ends the read:
                // it is not corruption, and the next read starts with it (and checks it).
                // A batch running past the segment's end, or unsound bytes, is corruption.
                Err(e) => {
                    let cut_by_limit = reader
                        .torn_end()
                        .is_some_and(|torn_end| torn_end <= self.end && limit < self.end);
                    if cut_by_limit && end > first.position {
                        break;
                    }
                    return Err(self.corrupt(e));
                }
            }
        }
        // Usually the whole range is in the reader's last buffer: slice it, no copy.
        let (buf, buf_start) = reader.buffer();
        let bytes = if buf_start <= first.position && end <= buf_start + buf.len() as u64 {
            buf.slice((first.position - buf_start) as usize..(end - buf_start) as usize)
        } else {
            let mut v = vec![0u8; (end - first.position) as usize];
            file.read_exact_at(&mut v, first.position)
                .map_err(LogError::io("read", &self.path))?;
            Bytes::from(v)
        };
        Ok(Some((bytes, first.base_offset, next_offset)))
    }
}

/// Where a leader epoch starts in a segment, as recovery found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EpochStart {
    pub epoch: i32,
    pub start_offset: i64,
}

/// What a validating scan of a segment found.
#[derive(Debug)]
struct ScanOutcome {
    /// The first batch of each epoch among the sound batches.
    epochs: Vec<EpochStart>,
    /// The first sound batch.
    first: Option<BatchInfo>,
    /// Where and why the scan stopped before the end.
    bad: Option<(u64, String)>,
}

/// What recovering a segment found.
#[derive(Debug, Default, Clone)]
pub(crate) struct RecoveryReport {
    /// Bytes cut from the end of the file.
    pub truncated_bytes: u64,
    /// Why, and where, if anything was cut.
    pub cut: Option<(u64, String)>,
    /// The first batch of each epoch among the kept batches, in order.
    pub epochs: Vec<EpochStart>,
}

/// One segment of a log.
#[derive(Debug)]
pub(crate) struct Segment {
    base_offset: i64,
    log_path: PathBuf,
    /// The active segment's own `.log` handle, shared with planned reads
    /// ([`SegmentRegion`]), which outlive the log's lock. `None` for a sealed segment,
    /// which is read through `files` so the log's open handles stay bounded.
    log: Option<Arc<File>>,
    /// The log's cache of sealed-segment handles.
    files: Arc<SegmentFiles>,
    /// This segment's key in `files`, unique for the log's lifetime.
    id: u64,
    /// Bytes of valid batches; the file is never longer once the segment is open.
    size: u64,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
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

/// Opens the `.log` file of an existing segment: its path, its handle and its length.
fn open_existing_log_file(dir: &Path, base_offset: i64) -> Result<(PathBuf, Arc<File>, u64)> {
    let log_path = dir.join(file_name(base_offset, LOG_FILE_SUFFIX));
    let log = open_log_file(&log_path, false)?;
    let len = log
        .metadata()
        .map_err(LogError::io("stat", &log_path))?
        .len();
    Ok((log_path, log, len))
}

impl Segment {
    /// Creates an empty segment (truncating leftovers of the same name).
    pub fn create(
        dir: &Path,
        base_offset: i64,
        index_interval_bytes: u64,
        files: &Arc<SegmentFiles>,
    ) -> Result<Segment> {
        let log_path = dir.join(file_name(base_offset, LOG_FILE_SUFFIX));
        let log = open_log_file(&log_path, true)?;
        let offset_index = OffsetIndex::create(
            &dir.join(file_name(base_offset, INDEX_FILE_SUFFIX)),
            base_offset,
        )?;
        let time_index = TimeIndex::create(
            &dir.join(file_name(base_offset, TIME_INDEX_FILE_SUFFIX)),
            base_offset,
        )?;
        Ok(Segment::empty(
            base_offset,
            log_path,
            log,
            files,
            offset_index,
            time_index,
            index_interval_bytes,
        ))
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
        Segment {
            base_offset,
            log_path,
            log: Some(log),
            files: Arc::clone(files),
            id: files.new_id(),
            size: 0,
            offset_index,
            time_index,
            next_offset: base_offset,
            max_timestamp: NO_TIMESTAMP,
            offset_of_max_timestamp: base_offset,
            bytes_since_last_index_entry: 0,
            index_interval_bytes,
            rolling_base_ms: None,
        }
    }

    /// Opens the segment that was active when the log was last open and re-validates every
    /// batch in it (framing, CRC, offsets continuing from the base offset, epochs never
    /// below `min_epoch` nor decreasing). The file is cut at the first batch that fails and
    /// both indexes are rebuilt from what is kept.
    pub fn recover(
        dir: &Path,
        base_offset: i64,
        index_interval_bytes: u64,
        max_batch_bytes: usize,
        min_epoch: i32,
        files: &Arc<SegmentFiles>,
    ) -> Result<(Segment, RecoveryReport)> {
        let (log_path, log, file_len) = open_existing_log_file(dir, base_offset)?;
        let offset_index = OffsetIndex::create(
            &dir.join(file_name(base_offset, INDEX_FILE_SUFFIX)),
            base_offset,
        )?;
        let time_index = TimeIndex::create(
            &dir.join(file_name(base_offset, TIME_INDEX_FILE_SUFFIX)),
            base_offset,
        )?;
        let mut seg = Segment::empty(
            base_offset,
            log_path,
            log,
            files,
            offset_index,
            time_index,
            index_interval_bytes,
        );
        let ScanOutcome { epochs, first, bad } =
            seg.scan_and_index(file_len, max_batch_bytes, min_epoch)?;
        let mut report = RecoveryReport {
            epochs,
            ..RecoveryReport::default()
        };
        if let Some((position, reason)) = bad {
            debug_assert_eq!(position, seg.size);
            report.truncated_bytes = file_len - position;
            report.cut = Some((position, reason));
            seg.writable()?
                .set_len(position)
                .map_err(LogError::io("truncate", &seg.log_path))?;
        }
        seg.rolling_base_ms = first.map(|b| b.max_timestamp).filter(|&t| t >= 0);
        Ok((seg, report))
    }

    /// Opens a segment that is not the active one. Such a segment was flushed when the log
    /// rolled past it, so its indexes are trusted when they pass their checks and only the
    /// batches after the last index entry are scanned (framing, CRC, offsets). Anything unsound is
    /// corruption, reported with the file and position: an older segment is never cut.
    /// Returns whether the indexes had to be rebuilt.
    pub fn open_existing(
        dir: &Path,
        base_offset: i64,
        index_interval_bytes: u64,
        max_batch_bytes: usize,
        files: &Arc<SegmentFiles>,
    ) -> Result<(Segment, bool)> {
        let (log_path, log, file_len) = open_existing_log_file(dir, base_offset)?;
        let index_path = dir.join(file_name(base_offset, INDEX_FILE_SUFFIX));
        let time_index_path = dir.join(file_name(base_offset, TIME_INDEX_FILE_SUFFIX));
        let loaded = (
            OffsetIndex::load(&index_path, base_offset, file_len)?,
            TimeIndex::load(&time_index_path, base_offset, i64::MAX)?,
        );
        if let (Some(offset_index), Some(time_index)) = loaded {
            let mut seg = Segment::empty(
                base_offset,
                log_path.clone(),
                log,
                files,
                offset_index,
                time_index,
                index_interval_bytes,
            );
            if seg.load_tail(file_len, max_batch_bytes)? {
                return Ok((seg, false));
            }
            return Segment::rebuild(
                seg.writable()?,
                files,
                log_path,
                base_offset,
                index_interval_bytes,
                max_batch_bytes,
                file_len,
            )
            .map(|s| (s, true));
        }
        Segment::rebuild(
            log,
            files,
            log_path,
            base_offset,
            index_interval_bytes,
            max_batch_bytes,
            file_len,
        )
        .map(|s| (s, true))
    }

    fn rebuild(
        log: Arc<File>,
        files: &Arc<SegmentFiles>,
        log_path: PathBuf,
        base_offset: i64,
        index_interval_bytes: u64,
        max_batch_bytes: usize,
        file_len: u64,
    ) -> Result<Segment> {
        tracing::info!(segment = %log_path.display(), "rebuilding indexes");
        let offset_index =
            OffsetIndex::create(&log_path.with_extension(INDEX_FILE_SUFFIX), base_offset)?;
        let time_index = TimeIndex::create(
            &log_path.with_extension(TIME_INDEX_FILE_SUFFIX),
            base_offset,
        )?;
        let mut seg = Segment::empty(
            base_offset,
            log_path,
            log,
            files,
            offset_index,
            time_index,
            index_interval_bytes,
        );
        let bad = seg.scan_and_index(file_len, max_batch_bytes, i32::MIN)?.bad;
        if let Some((position, reason)) = bad {
            return Err(LogError::corrupt(&seg.log_path, position, reason));
        }
        seg.time_index
            .maybe_append(seg.max_timestamp, seg.offset_of_max_timestamp)?;
        seg.flush_all()?;
        Ok(seg)
    }

    /// With trusted indexes, scans (and CRC-checks) from the last offset-index entry to the
    /// end of the file to learn the next offset and the largest timestamp. Returns false when the indexes
    /// disagree with the file (the caller rebuilds them).
    fn load_tail(&mut self, file_len: u64, max_batch_bytes: usize) -> Result<bool> {
        let start = self
            .offset_index
            .last()
            .map_or(0, |e| u64::from(e.position));
        if let Some(last) = self.time_index.last() {
            self.max_timestamp = last.timestamp;
            self.offset_of_max_timestamp = last.offset;
        }
        let file = self.file()?;
        let mut reader = BatchReader::new(
            &file,
            &self.log_path,
            start,
            file_len,
            SCAN_CHUNK_BYTES.min(64 * 1024),
            max_batch_bytes,
        );
        let mut expected: Option<i64> = if start == 0 {
            Some(self.base_offset)
        } else {
            None
        };
        let mut last_offset = None;
        loop {
            match reader.next_batch() {
                Ok(None) => break,
                Ok(Some((position, batch))) => {
                    if let Err(e) = batch.validate_crc() {
                        return Err(LogError::corrupt(&self.log_path, position, e.to_string()));
                    }
                    let info = BatchInfo::of(&batch, position);
                    if let Some(e) = expected {
                        if info.base_offset != e {
                            return Err(LogError::corrupt(
                                &self.log_path,
                                position,
                                format!("base offset {} where {e} was expected", info.base_offset),
                            ));
                        }
                    }
                    if info.last_offset < info.base_offset {
                        return Err(LogError::corrupt(
                            &self.log_path,
                            position,
                            "negative last offset delta",
                        ));
                    }
                    if let Some(entry) = self.offset_index.last() {
                        if u64::from(entry.position) == position && entry.offset != info.last_offset
                        {
                            return Ok(false);
                        }
                    }
                    expected = Some(info.last_offset + 1);
                    last_offset = Some(info.last_offset);
                    if info.max_timestamp > self.max_timestamp {
                        self.max_timestamp = info.max_timestamp;
                        self.offset_of_max_timestamp = info.last_offset;
                    }
                }
                Err(ScanError::Io(e)) => return Err(e),
                Err(ScanError::Bad { position, reason }) => {
                    return Err(LogError::corrupt(&self.log_path, position, reason))
                }
            }
        }
        self.size = file_len;
        self.next_offset = match last_offset {
            Some(o) => o + 1,
            None => self.base_offset,
        };
        if let Some(t) = self.time_index.last() {
            if t.offset >= self.next_offset {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Scans `[0, file_len)` from an empty segment state, validating each batch fully and
    /// indexing it, until the end or the first unsound batch, whose position and reason are
    /// returned with the kept batches' epoch changes. `self.size` ends at the end of the last
    /// sound batch.
    fn scan_and_index(
        &mut self,
        file_len: u64,
        max_batch_bytes: usize,
        min_epoch: i32,
    ) -> Result<ScanOutcome> {
        debug_assert_eq!(self.size, 0);
        let mut epochs: Vec<EpochStart> = Vec::new();
        let mut first = None;
        let mut epoch = min_epoch;
        // A second reference so the scan can index while it reads.
        let file = self.file()?;
        let path = self.log_path.clone();
        let mut reader =
            BatchReader::new(&file, &path, 0, file_len, SCAN_CHUNK_BYTES, max_batch_bytes);
        loop {
            let (position, batch) = match reader.next_batch() {
                Ok(None) => {
                    return Ok(ScanOutcome {
                        epochs,
                        first,
                        bad: None,
                    })
                }
                Ok(Some(next)) => next,
                Err(ScanError::Io(e)) => return Err(e),
                Err(ScanError::Bad { position, reason }) => {
                    return Ok(ScanOutcome {
                        epochs,
                        first,
                        bad: Some((position, reason)),
                    })
                }
            };
            let info = BatchInfo::of(&batch, position);
            let problem = if let Err(e) = batch.validate_crc() {
                Some(e.to_string())
            } else if info.base_offset != self.next_offset {
                Some(format!(
                    "base offset {} where {} was expected",
                    info.base_offset, self.next_offset
                ))
            } else if info.last_offset < info.base_offset {
                Some("negative last offset delta".to_string())
            } else if info.last_offset - self.base_offset > i64::from(i32::MAX) {
                Some("offset too far from the segment's base offset".to_string())
            } else if info.epoch < epoch {
                Some(format!("leader epoch {} is below {epoch}", info.epoch))
            } else {
                None
            };
            if let Some(reason) = problem {
                return Ok(ScanOutcome {
                    epochs,
                    first,
                    bad: Some((position, reason)),
                });
            }
            if epochs.last().is_none_or(|e| e.epoch < info.epoch) {
                epochs.push(EpochStart {
                    epoch: info.epoch,
                    start_offset: info.base_offset,
                });
            }
            epoch = info.epoch;
            first.get_or_insert(info);
            self.index_batch(&info)?;
        }
    }

    /// Re-reads every batch and checks framing, CRC and offset continuity; the first
    /// problem is an error naming the file and position.
    pub fn verify(&self, max_batch_bytes: usize) -> Result<()> {
        let file = self.file()?;
        let mut reader = BatchReader::new(
            &file,
            &self.log_path,
            0,
            self.size,
            SCAN_CHUNK_BYTES,
            max_batch_bytes,
        );
        let mut expected = self.base_offset;
        loop {
            match reader.next_batch() {
                Ok(None) => break,
                Ok(Some((position, batch))) => {
                    let bad = |reason: String| LogError::corrupt(&self.log_path, position, reason);
                    batch.validate_crc().map_err(|e| bad(e.to_string()))?;
                    if batch.base_offset() != expected || batch.last_offset() < batch.base_offset()
                    {
                        return Err(bad(format!(
                            "batch {}..={} where offset {expected} was expected",
                            batch.base_offset(),
                            batch.last_offset()
                        )));
                    }
                    expected = batch.next_offset();
                }
                Err(e) => return Err(self.corrupt(e)),
            }
        }
        if expected != self.next_offset {
            return Err(LogError::corrupt(
                &self.log_path,
                self.size,
                format!(
                    "batches end at {expected} but the segment ends at {}",
                    self.next_offset
                ),
            ));
        }
        Ok(())
    }

    /// Updates the in-memory state and indexes for a batch just stored at `info.position`.
    fn index_batch(&mut self, info: &BatchInfo) -> Result<()> {
        debug_assert_eq!(info.position, self.size);
        debug_assert_eq!(info.base_offset, self.next_offset);
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

    /// Plans a read of `offset`: an index lookup, nothing more, so it is all a reader does
    /// under the log's lock. The region covers the segment as it is now.
    pub fn region(&self, offset: i64) -> SegmentRegion {
        let file = match &self.log {
            Some(file) => RegionFile::Open(Arc::clone(file)),
            None => match self.files.get(self.id) {
                Some(file) => RegionFile::Open(file),
                None => RegionFile::Cached {
                    files: Arc::clone(&self.files),
                    id: self.id,
                },
            },
        };
        let entry = self.offset_index.lookup(offset);
        SegmentRegion {
            file,
            path: self.log_path.clone(),
            scan_from: u64::from(entry.position),
            anchor: if entry.position == 0 {
                Anchor::BaseOffset(self.base_offset)
            } else {
                Anchor::LastOffset(entry.offset)
            },
            end: self.size,
            chunk: (self.index_interval_bytes as usize)
                .saturating_mul(2)
                .clamp(4096, 1 << 20),
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
        self.writable()?
            .set_len(cut.position)
            .map_err(LogError::io("truncate", &self.log_path))?;
        self.size = cut.position;
        self.next_offset = cut.base_offset;
        self.offset_index.truncate_to_offset(cut.base_offset)?;
        self.offset_index.truncate_to_position(cut.position)?;
        self.time_index.truncate_to_offset(cut.base_offset)?;
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
    /// A sealed segment without a handle of its own was synced when sealed and not written
    /// since, so there is nothing to do.
    pub fn flush(&self) -> Result<()> {
        match &self.log {
            Some(file) => file
                .sync_data()
                .map_err(LogError::io("fsync", &self.log_path)),
            None => Ok(()),
        }
    }

    /// The active segment's own `.log` handle, to fdatasync from another thread
    /// ([`crate::PendingFlush`]); `None` for a sealed segment (synced when sealed).
    pub fn sync_handle(&self) -> Option<Arc<File>> {
        self.log.clone()
    }

    /// Writes and syncs the indexes as well as the batches (on seal and close).
    pub fn flush_all(&mut self) -> Result<()> {
        self.offset_index.flush()?;
        self.time_index.flush()?;
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
        ] {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io("delete", path)(e)),
            }
        }
        Ok(())
    }

    /// The `.log` handle to read with: the segment's own while active, else the cached
    /// one (opened on a miss). Only for calls made under the owner's lock that read anyway
    /// (open, verify, timestamp lookup, truncation); planned reads open lazily instead.
    fn file(&self) -> Result<Arc<File>> {
        match &self.log {
            Some(file) => Ok(Arc::clone(file)),
            None => self.files.get_or_open(self.id, &self.log_path),
        }
    }

    /// The `.log` handle to write with, making it the segment's own again (read-write) if
    /// the segment was sealed: a truncation into a sealed segment makes it the active one.
    fn writable(&mut self) -> Result<Arc<File>> {
        if let Some(file) = &self.log {
            return Ok(Arc::clone(file));
        }
        self.files.remove(self.id);
        let file = open_log_file(&self.log_path, false)?;
        self.log = Some(Arc::clone(&file));
        Ok(file)
    }

    /// Gives up what a sealed segment does not need open: its index files (their entries
    /// are in memory) are flushed and closed, and its `.log` handle moves into the log's
    /// bounded cache, where it stays while it is among the most recently read.
    pub fn release(&mut self) -> Result<()> {
        self.offset_index.release()?;
        self.time_index.release()?;
        if let Some(file) = self.log.take() {
            self.files.insert(self.id, file);
        }
        Ok(())
    }

    /// Drops the segment's handles, cached or own (before its files are deleted or
    /// renamed away, so no later read reaches them through a stale handle).
    pub fn close_files(&mut self) {
        self.log = None;
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
