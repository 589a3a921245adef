//! Reading a segment's `.log` file (Kafka's `FileRecords` and its batch iteration):
//! [`BatchReader`] walks the complete batches of a file region with positional reads,
//! [`SegmentRegion`] is one segment's read planned under the log's lock and run outside it.
//!
//! Batches are always read back through the protocol crate's [`Batches`] iterator (framing
//! and header checks) and [`RecordBatch::validate_crc`] during recovery: there is one batch
//! parser in the workspace and it is not here.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use kraftd_protocol::records::{Batches, RecordBatch, RecordBatchError, BATCH_OVERHEAD};

use super::Segment;
use crate::error::{LogError, Result};
use crate::handles::SegmentFiles;

/// `len` bytes of `file` from `position`, read into a new buffer's spare capacity: the
/// kernel's copy is the only write to it. Every fetch, a follower's or a consumer's, reads
/// through here, and zeroing each buffer before `pread` overwrote it was 10-17% of a
/// broker's CPU samples in `cargo xtask bench cost`'s profile (`docs/benchmarks.md`).
fn read_exact_at(file: &File, len: usize, position: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(len);
    while buf.len() < len {
        let at = position + buf.len() as u64;
        let spare = rustix::buffer::spare_capacity(&mut buf);
        match rustix::io::pread(file, spare, at) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    // The allocator may have given more capacity than asked, and pread filled it.
    buf.truncate(len);
    Ok(buf)
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
        let v = read_exact_at(self.file, len, self.pos)
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
                files
                    .get_or_open(*id, &self.path, false)
                    .map_err(|e| match e {
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
                        // Offsets only increase: compaction leaves gaps between batches and
                        // before a segment's first batch.
                        (Some(e), _) => {
                            (base < e).then(|| format!("batch starts at offset {base}, below {e}"))
                        }
                        (None, Anchor::BaseOffset(b)) => (base < b).then(|| {
                            format!("first batch starts at offset {base}, below the segment's {b}")
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
                    if batch.base_offset() < next_offset {
                        return Err(LogError::corrupt(
                            &self.path,
                            position,
                            format!(
                                "batch starts at offset {}, below {next_offset}",
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
            let v = read_exact_at(&file, (end - first.position) as usize, first.position)
                .map_err(LogError::io("read", &self.path))?;
            Bytes::from(v)
        };
        Ok(Some((bytes, first.base_offset, next_offset)))
    }
}

impl SegmentRegion {
    /// Calls `f` with each batch (and its file position) from where the region's scan
    /// starts to the region's end, in `chunk`-byte reads, while `f` returns `Ok(true)`;
    /// batches larger than `max_batch_bytes` are corruption. Offsets must increase from
    /// batch to batch (gaps allowed), as everywhere. The cleaner's pass over a segment.
    pub fn for_each_batch(
        &self,
        chunk: usize,
        max_batch_bytes: usize,
        mut f: impl FnMut(u64, RecordBatch) -> Result<bool>,
    ) -> Result<()> {
        let file = self.open(0)?;
        let mut reader = BatchReader::new(
            &file,
            &self.path,
            self.scan_from,
            self.end,
            chunk,
            max_batch_bytes,
        );
        let mut expected = match self.anchor {
            Anchor::BaseOffset(b) => b,
            Anchor::LastOffset(_) => i64::MIN,
        };
        loop {
            match reader.next_batch() {
                Ok(None) => return Ok(()),
                Ok(Some((position, batch))) => {
                    if batch.base_offset() < expected || batch.last_offset() < batch.base_offset() {
                        return Err(LogError::corrupt(
                            &self.path,
                            position,
                            format!(
                                "batch {}..={} below offset {expected}",
                                batch.base_offset(),
                                batch.last_offset()
                            ),
                        ));
                    }
                    expected = batch.next_offset();
                    if !f(position, batch)? {
                        return Ok(());
                    }
                }
                Err(e) => return Err(self.corrupt(e)),
            }
        }
    }

    /// The path of the segment's `.log`.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Segment {
    /// Plans a read of `offset`: an index lookup, nothing more, so it is all a reader does
    /// under the log's lock. The region covers the segment as it is now.
    pub fn region(&self, offset: i64) -> SegmentRegion {
        let file = match self.files.get(self.id, false) {
            Some(file) => RegionFile::Open(file),
            None => RegionFile::Cached {
                files: Arc::clone(&self.files),
                id: self.id,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn read_exact_at_reads_the_range_and_refuses_one_past_the_end() {
        let mut file = tempfile::tempfile().expect("temp file");
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        file.write_all(&bytes).expect("write");
        let read = read_exact_at(&file, 70_000, 12_345).expect("read");
        assert_eq!(read, &bytes[12_345..82_345]);
        assert!(read_exact_at(&file, 0, 100_000).expect("empty").is_empty());
        let past = read_exact_at(&file, 10, 99_995).expect_err("5 bytes short");
        assert_eq!(past.kind(), std::io::ErrorKind::UnexpectedEof);
    }
}
