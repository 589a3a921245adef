//! The sparse offset index (`.index`) and time index (`.timeindex`) of one segment, in
//! Kafka's on-disk layout so Kafka's `DumpLogSegments` reads them:
//!
//! - offset index entry, 8 bytes: relative offset `u32` (offset minus the segment's base
//!   offset), byte position `u32` of a batch in the `.log` file; the offset is the batch's
//!   *last* offset, as Kafka writes it;
//! - time index entry, 12 bytes: timestamp `i64`, relative offset `u32`; timestamps strictly
//!   increase, each the largest timestamp seen so far in the segment, paired with the last
//!   offset of the batch that first reached it.
//!
//! All big-endian. Both are kept whole in memory (at most `segment.index.bytes`, 10 MiB by
//! default) so a reader's lookup is a binary search with no I/O, and appended to their file
//! as they grow. Unlike Kafka the files are not preallocated: their length is always a whole
//! number of entries, which makes a torn index recognisable on open. An index is derived
//! data: when it fails its checks on open it is rebuilt from the `.log` file, never trusted.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{LogError, Result};

/// Size of one offset-index entry.
pub const OFFSET_INDEX_ENTRY_BYTES: u64 = 8;
/// Size of one time-index entry.
pub const TIME_INDEX_ENTRY_BYTES: u64 = 12;
/// Entries kept in memory before they are written to the file in one write. Appending
/// costs no system call per entry this way; the file can lag by this many entries, which
/// is harmless: only the active segment's index can lag, and recovery rebuilds that one
/// on open, while a segment being sealed (rolled) or flushed writes everything.
pub const PENDING_ENTRIES_MAX: usize = 256;

/// One offset-index entry, made absolute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    /// The last offset of the batch at `position`.
    pub offset: i64,
    /// Byte position of that batch in the `.log` file.
    pub position: u32,
}

/// One time-index entry, made absolute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    /// The largest timestamp in the segment up to and including the batch ending at
    /// `offset`.
    pub timestamp: i64,
    /// The last offset of the batch that first reached `timestamp`.
    pub offset: i64,
}

fn open_rw(path: &Path, truncate: bool) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(truncate)
        .open(path)
        .map_err(LogError::io("open", path))
}

fn read_all(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LogError::io("read", path)(e)),
    }
}

/// A fixed-size index entry and its big-endian encoding.
trait Entry: Copy {
    /// Bytes per entry on disk.
    const BYTES: u64;
    fn put(&self, buf: &mut Vec<u8>);
    fn get(chunk: &[u8]) -> Self;
}

impl Entry for (u32, u32) {
    const BYTES: u64 = OFFSET_INDEX_ENTRY_BYTES;
    fn put(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&self.0.to_be_bytes());
        buf.extend_from_slice(&self.1.to_be_bytes());
    }
    fn get(c: &[u8]) -> Self {
        (
            u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
            u32::from_be_bytes([c[4], c[5], c[6], c[7]]),
        )
    }
}

impl Entry for (i64, u32) {
    const BYTES: u64 = TIME_INDEX_ENTRY_BYTES;
    fn put(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&self.0.to_be_bytes());
        buf.extend_from_slice(&self.1.to_be_bytes());
    }
    fn get(c: &[u8]) -> Self {
        (
            i64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
            u32::from_be_bytes([c[8], c[9], c[10], c[11]]),
        )
    }
}

/// The file mechanics both indexes share: entries whole in memory, appended to the file in
/// bulk, truncated and flushed. No handle is kept: the file is opened for each bulk write,
/// truncation or sync (once per [`PENDING_ENTRIES_MAX`] entries, a megabyte of batches at
/// the default `index.interval.bytes`), so an index costs no descriptor between writes and
/// a broker's descriptors stay bounded however many partitions it hosts.
#[derive(Debug)]
struct IndexFile<E> {
    path: PathBuf,
    /// Written since the last sync.
    unsynced: bool,
    entries: Vec<E>,
    /// How many of `entries` are in the file; the rest are written in bulk (see
    /// [`PENDING_ENTRIES_MAX`]).
    persisted: usize,
}

impl<E: Entry> IndexFile<E> {
    /// Creates (or empties) the file at `path`.
    fn create(path: &Path) -> Result<Self> {
        drop(open_rw(path, true)?);
        Ok(IndexFile {
            path: path.to_path_buf(),
            unsynced: false,
            entries: Vec::new(),
            persisted: 0,
        })
    }

    /// Reads the file at `path`, keeping entries while `accept(previous, next)` holds;
    /// `None` when it is missing, torn (not a whole number of entries) or rejected.
    fn load(path: &Path, mut accept: impl FnMut(Option<&E>, &E) -> bool) -> Result<Option<Self>> {
        let Some(bytes) = read_all(path)? else {
            return Ok(None);
        };
        if bytes.len() as u64 % E::BYTES != 0 {
            return Ok(None);
        }
        let mut entries: Vec<E> = Vec::with_capacity(bytes.len() / E::BYTES as usize);
        for chunk in bytes.chunks_exact(E::BYTES as usize) {
            let entry = E::get(chunk);
            if !accept(entries.last(), &entry) {
                return Ok(None);
            }
            entries.push(entry);
        }
        Ok(Some(IndexFile {
            path: path.to_path_buf(),
            unsynced: false,
            persisted: entries.len(),
            entries,
        }))
    }

    fn size_in_bytes(&self) -> u64 {
        self.entries.len() as u64 * E::BYTES
    }

    /// Adds an entry, writing the pending ones once there are enough of them.
    fn push(&mut self, entry: E) -> Result<()> {
        self.entries.push(entry);
        if self.entries.len() - self.persisted >= PENDING_ENTRIES_MAX {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Writes the entries not yet in the file.
    fn write_pending(&mut self) -> Result<()> {
        let pending = self.entries.get(self.persisted..).unwrap_or_default();
        if pending.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::with_capacity(pending.len() * E::BYTES as usize);
        for entry in pending {
            entry.put(&mut buf);
        }
        let at = self.persisted as u64 * E::BYTES;
        self.unsynced = true;
        open_rw(&self.path, false)?
            .write_all_at(&buf, at)
            .map_err(LogError::io("write", &self.path))?;
        self.persisted = self.entries.len();
        Ok(())
    }

    /// Keeps the first `keep` entries.
    fn truncate(&mut self, keep: usize) -> Result<()> {
        if keep >= self.entries.len() {
            return Ok(());
        }
        self.entries.truncate(keep);
        if keep < self.persisted {
            self.persisted = keep;
            let len = self.size_in_bytes();
            self.unsynced = true;
            open_rw(&self.path, false)?
                .set_len(len)
                .map_err(LogError::io("truncate", &self.path))?;
        }
        Ok(())
    }

    /// Writes pending entries and forces the file to disk (an index not written since its
    /// last sync is not opened for this).
    fn flush(&mut self) -> Result<()> {
        self.write_pending()?;
        if self.unsynced {
            File::open(&self.path)
                .and_then(|f| f.sync_data())
                .map_err(LogError::io("fsync", &self.path))?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// Makes the file whole before the segment is sealed or closed: pending entries are
    /// written and synced.
    fn release(&mut self) -> Result<()> {
        if self.persisted < self.entries.len() || self.unsynced {
            self.flush()?;
        }
        Ok(())
    }
}

fn relative_offset(offset: i64, base_offset: i64) -> Result<u32> {
    u32::try_from(offset - base_offset).map_err(|_| LogError::OffsetOverflow {
        reason: format!("offset {offset} is not within u32 of segment base {base_offset}"),
    })
}

/// The `.index` file of one segment.
#[derive(Debug)]
pub struct OffsetIndex {
    base_offset: i64,
    /// (relative offset, position), both strictly increasing.
    index: IndexFile<(u32, u32)>,
}

impl OffsetIndex {
    /// Creates (or empties) the index at `path`.
    pub fn create(path: &Path, base_offset: i64) -> Result<OffsetIndex> {
        Ok(OffsetIndex {
            base_offset,
            index: IndexFile::create(path)?,
        })
    }

    /// Loads the index at `path` if it exists and passes its checks against a `.log` file
    /// of `log_size` bytes; `None` means "rebuild it".
    pub fn load(path: &Path, base_offset: i64, log_size: u64) -> Result<Option<OffsetIndex>> {
        let index = IndexFile::load(path, |prev: Option<&(u32, u32)>, &(rel, pos)| {
            let increasing =
                prev.is_none_or(|&(prev_rel, prev_pos)| rel > prev_rel && pos > prev_pos);
            increasing && u64::from(pos) < log_size
        })?;
        Ok(index.map(|index| OffsetIndex { base_offset, index }))
    }

    /// Number of entries.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.index.entries.len()
    }

    /// Size of the index file in bytes.
    pub fn size_in_bytes(&self) -> u64 {
        self.index.size_in_bytes()
    }

    /// The last entry, if any.
    pub fn last(&self) -> Option<OffsetPosition> {
        self.index.entries.last().map(|&(r, p)| self.absolute(r, p))
    }

    fn absolute(&self, rel: u32, position: u32) -> OffsetPosition {
        OffsetPosition {
            offset: self.base_offset + i64::from(rel),
            position,
        }
    }

    /// Appends an entry for the batch ending at `offset` that starts at `position`. Entries
    /// must increase in both; a non-increasing one is skipped (it adds nothing).
    pub fn append(&mut self, offset: i64, position: u32) -> Result<()> {
        let rel = relative_offset(offset, self.base_offset)?;
        if let Some(&(last_rel, last_pos)) = self.index.entries.last() {
            if rel <= last_rel || position <= last_pos {
                return Ok(());
            }
        }
        self.index.push((rel, position))
    }

    /// The entry with the largest offset ≤ `offset`, or the segment start when there is
    /// none: where a scan for `offset` begins.
    pub fn lookup(&self, offset: i64) -> OffsetPosition {
        let rel = offset - self.base_offset;
        if rel < 0 {
            return self.absolute(0, 0);
        }
        let rel = u32::try_from(rel).unwrap_or(u32::MAX);
        let entries = &self.index.entries;
        let idx = entries.partition_point(|&(r, _)| r <= rel);
        match idx.checked_sub(1).and_then(|i| entries.get(i)) {
            Some(&(r, p)) => self.absolute(r, p),
            None => OffsetPosition {
                offset: self.base_offset,
                position: 0,
            },
        }
    }

    /// Removes the entries for offsets ≥ `offset` (the log is being truncated there).
    pub fn truncate_to_offset(&mut self, offset: i64) -> Result<()> {
        let base = self.base_offset;
        let keep = self
            .index
            .entries
            .partition_point(|&(r, _)| base + i64::from(r) < offset);
        self.index.truncate(keep)
    }

    /// Removes the entries pointing at positions ≥ `position`.
    pub fn truncate_to_position(&mut self, position: u64) -> Result<()> {
        let keep = self
            .index
            .entries
            .partition_point(|&(_, p)| u64::from(p) < position);
        self.index.truncate(keep)
    }

    /// Writes pending entries and forces the index to disk.
    pub fn flush(&mut self) -> Result<()> {
        self.index.flush()
    }

    /// Closes the file; the next write reopens it.
    pub fn release(&mut self) -> Result<()> {
        self.index.release()
    }

    /// The index file's path.
    pub fn path(&self) -> &Path {
        &self.index.path
    }
}

/// The `.timeindex` file of one segment.
#[derive(Debug)]
pub struct TimeIndex {
    base_offset: i64,
    /// (timestamp, relative offset), timestamps strictly increasing, offsets non-decreasing.
    index: IndexFile<(i64, u32)>,
}

impl TimeIndex {
    /// Size of the index file in bytes.
    pub fn size_in_bytes(&self) -> u64 {
        self.index.size_in_bytes()
    }

    /// Creates (or empties) the time index at `path`.
    pub fn create(path: &Path, base_offset: i64) -> Result<TimeIndex> {
        Ok(TimeIndex {
            base_offset,
            index: IndexFile::create(path)?,
        })
    }

    /// Loads the time index at `path` if it exists and passes its checks; `None` means
    /// "rebuild it". `max_offset` bounds the offsets it may name.
    pub fn load(path: &Path, base_offset: i64, max_offset: i64) -> Result<Option<TimeIndex>> {
        let index = IndexFile::load(path, |prev: Option<&(i64, u32)>, &(ts, rel)| {
            let increasing =
                prev.is_none_or(|&(prev_ts, prev_rel)| ts > prev_ts && rel >= prev_rel);
            increasing && base_offset + i64::from(rel) <= max_offset
        })?;
        Ok(index.map(|index| TimeIndex { base_offset, index }))
    }

    /// Number of entries.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.index.entries.len()
    }

    fn absolute(&self, timestamp: i64, rel: u32) -> TimestampOffset {
        TimestampOffset {
            timestamp,
            offset: self.base_offset + i64::from(rel),
        }
    }

    /// The last entry: the segment's largest indexed timestamp.
    pub fn last(&self) -> Option<TimestampOffset> {
        self.index.entries.last().map(|&(t, r)| self.absolute(t, r))
    }

    /// Appends `(timestamp, offset)` if `timestamp` is above the last entry's (the index
    /// only records new maxima).
    pub fn maybe_append(&mut self, timestamp: i64, offset: i64) -> Result<()> {
        let rel = relative_offset(offset, self.base_offset)?;
        if let Some(&(last_ts, last_rel)) = self.index.entries.last() {
            if timestamp <= last_ts || rel < last_rel {
                return Ok(());
            }
        }
        self.index.push((timestamp, rel))
    }

    /// The entry with the largest timestamp ≤ `timestamp`, if any: batches before its
    /// offset all have smaller timestamps, so a search for `timestamp` starts there.
    pub fn lookup(&self, timestamp: i64) -> Option<TimestampOffset> {
        let entries = &self.index.entries;
        let idx = entries.partition_point(|&(t, _)| t <= timestamp);
        idx.checked_sub(1)
            .and_then(|i| entries.get(i))
            .map(|&(t, r)| self.absolute(t, r))
    }

    /// Removes the entries for offsets ≥ `offset`.
    pub fn truncate_to_offset(&mut self, offset: i64) -> Result<()> {
        let base = self.base_offset;
        let keep = self
            .index
            .entries
            .partition_point(|&(_, r)| base + i64::from(r) < offset);
        self.index.truncate(keep)
    }

    /// Writes pending entries and forces the index to disk.
    pub fn flush(&mut self) -> Result<()> {
        self.index.flush()
    }

    /// Closes the file; the next write reopens it.
    pub fn release(&mut self) -> Result<()> {
        self.index.release()
    }

    /// The index file's path.
    pub fn path(&self) -> &Path {
        &self.index.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_index_round_trip_and_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000100.index");
        let mut idx = OffsetIndex::create(&path, 100).unwrap();
        idx.append(110, 500).unwrap();
        idx.append(120, 1000).unwrap();
        idx.append(120, 2000).unwrap(); // not increasing: skipped
        assert_eq!(idx.len(), 2);
        assert_eq!(idx.lookup(105).position, 0);
        assert_eq!(idx.lookup(110).position, 500);
        assert_eq!(idx.lookup(119).position, 500);
        assert_eq!(idx.lookup(10_000).position, 1000);
        idx.flush().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            bytes,
            [0, 0, 0, 10, 0, 0, 1, 244, 0, 0, 0, 20, 0, 0, 3, 232]
        );
        let loaded = OffsetIndex::load(&path, 100, 2000).unwrap().unwrap();
        assert_eq!(loaded.index.entries, idx.index.entries);
        // An entry past the log's end makes it untrustworthy.
        assert!(OffsetIndex::load(&path, 100, 1000).unwrap().is_none());
        idx.truncate_to_offset(120).unwrap();
        assert_eq!(idx.len(), 1);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 8);
        // A torn entry makes the file untrustworthy.
        std::fs::write(&path, [0u8; 5]).unwrap();
        assert!(OffsetIndex::load(&path, 100, 2000).unwrap().is_none());
    }

    #[test]
    fn time_index_keeps_maxima_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.timeindex");
        let mut idx = TimeIndex::create(&path, 0).unwrap();
        idx.maybe_append(1000, 5).unwrap();
        idx.maybe_append(900, 7).unwrap();
        idx.maybe_append(2000, 9).unwrap();
        assert_eq!(idx.len(), 2);
        assert_eq!(idx.lookup(999), None);
        assert_eq!(idx.lookup(1500).unwrap().offset, 5);
        assert_eq!(idx.lookup(2000).unwrap().offset, 9);
        idx.flush().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 24);
        let loaded = TimeIndex::load(&path, 0, 9).unwrap().unwrap();
        assert_eq!(loaded.index.entries, idx.index.entries);
        assert!(TimeIndex::load(&path, 0, 8).unwrap().is_none());
        idx.truncate_to_offset(9).unwrap();
        assert_eq!(idx.last().unwrap().timestamp, 1000);
    }
}
