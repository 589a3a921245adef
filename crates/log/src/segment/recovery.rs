//! Loading an existing segment: [`Segment::recover`] re-validates the one that was active
//! and cuts it at the first unsound batch; [`Segment::open_existing`] trusts a sealed one's
//! indexes when they pass their checks (else rebuilds them); [`Segment::verify`] re-reads
//! a whole segment.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{file_name, open_log_file, BatchInfo, BatchReader, ScanError, Segment};
use super::{INDEX_FILE_SUFFIX, LOG_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX};
use crate::error::{LogError, Result};
use crate::handles::SegmentFiles;
use crate::index::{OffsetIndex, TimeIndex};

/// Bytes read at a time when scanning a whole segment (recovery, index rebuild).
const SCAN_CHUNK_BYTES: usize = 1024 * 1024;

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
    /// Opens the segment that was active when the log was last open and re-validates every
    /// batch in it (framing, CRC, offsets continuing from the base offset, epochs never
    /// below `min_epoch` nor decreasing). The file is cut at the first batch that fails and
    /// both indexes are rebuilt from what is kept. Offsets must follow on exactly from
    /// batch to batch unless `allow_gaps` (a compacted log, whose cleaned segments have
    /// gaps where whole batches were removed, and may become active after a truncation):
    /// then they need only increase.
    pub fn recover(
        dir: &Path,
        base_offset: i64,
        index_interval_bytes: u64,
        max_batch_bytes: usize,
        min_epoch: i32,
        allow_gaps: bool,
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
        // What recovery keeps may never have been synced before the crash.
        seg.unsynced = true;
        let ScanOutcome { epochs, first, bad } =
            seg.scan_and_index(file_len, max_batch_bytes, min_epoch, allow_gaps)?;
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
        // Entries whose markers were cut go; missing ones come back with the producer-state
        // replay (`Log::load_producer_state`).
        seg.load_txn_index()?;
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
                seg.load_txn_index()?;
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
        let bad = seg
            .scan_and_index(file_len, max_batch_bytes, i32::MIN, true)?
            .bad;
        if let Some((position, reason)) = bad {
            return Err(LogError::corrupt(&seg.log_path, position, reason));
        }
        seg.time_index
            .maybe_append(seg.max_timestamp, seg.offset_of_max_timestamp)?;
        seg.load_txn_index()?;
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
                        if info.base_offset < e {
                            return Err(LogError::corrupt(
                                &self.log_path,
                                position,
                                format!("base offset {} below {e}", info.base_offset),
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
        allow_gaps: bool,
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
            } else if info.base_offset < self.next_offset
                || (!allow_gaps && info.base_offset != self.next_offset)
            {
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
                    if batch.base_offset() < expected || batch.last_offset() < batch.base_offset() {
                        return Err(bad(format!(
                            "batch {}..={} below offset {expected}",
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
}
