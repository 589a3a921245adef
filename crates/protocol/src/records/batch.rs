//! The v2 record batch as read: its layout, the validated zero-copy view ([`RecordBatch`]) with
//! the framing and header checks behind it, and iteration over a batch's records
//! ([`RecordIter`]). Iterating the batches of a `records` field is in `batches.rs`, patching a
//! batch in place in `batch_mut.rs`, writing one in `builder.rs`.
//!
//! Parsing checks everything that can be checked without touching records: lengths, magic,
//! codec, record count against the bytes present. It does *not* check the CRC, because a
//! broker needs the header of batches it has already validated (replica fetch, log reads) far
//! more often than it needs to re-check them; the produce path calls
//! [`RecordBatch::validate_crc`] explicitly.

use std::fmt;

use bytes::Bytes;

use super::compression::{self, Compression, MAX_DECOMPRESSED_BATCH_BYTES};
use super::record::Record;
use super::RecordBatchError;

/// Bytes before `batchLength` starts counting: `baseOffset` and `batchLength` themselves
/// (Kafka's `LOG_OVERHEAD`).
pub const BATCH_OVERHEAD: usize = 12;
/// Size of the full v2 batch header; records start here.
pub const BATCH_HEADER_SIZE: usize = 61;
/// The smallest valid `batchLength`: a header and no records.
pub const MIN_BATCH_LENGTH: i32 = (BATCH_HEADER_SIZE - BATCH_OVERHEAD) as i32;
/// The only magic (format version) this module reads and writes.
pub const CURRENT_MAGIC: i8 = 2;
/// The smallest encoded record: a length and six one-byte fields (attributes, the two
/// deltas, null key, null value, no headers). Bounds how many records bytes can hold.
pub const MIN_RECORD_SIZE: usize = 7;
/// `producerId` of a batch written without an idempotent producer.
pub const NO_PRODUCER_ID: i64 = -1;
/// `producerEpoch` of a batch written without an idempotent producer.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// `baseSequence` of a batch written without an idempotent producer.
pub const NO_SEQUENCE: i32 = -1;
/// `partitionLeaderEpoch` before a leader has stamped the batch.
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
/// A missing timestamp (for instance both timestamps of an empty batch).
pub const NO_TIMESTAMP: i64 = -1;

pub(super) const BASE_OFFSET_AT: usize = 0;
pub(super) const BATCH_LENGTH_AT: usize = 8;
pub(super) const PARTITION_LEADER_EPOCH_AT: usize = 12;
pub(super) const MAGIC_AT: usize = 16;
pub(super) const CRC_AT: usize = 17;
pub(super) const ATTRIBUTES_AT: usize = 21;
pub(super) const LAST_OFFSET_DELTA_AT: usize = 23;
pub(super) const BASE_TIMESTAMP_AT: usize = 27;
pub(super) const MAX_TIMESTAMP_AT: usize = 35;
pub(super) const PRODUCER_ID_AT: usize = 43;
pub(super) const PRODUCER_EPOCH_AT: usize = 51;
pub(super) const BASE_SEQUENCE_AT: usize = 53;
pub(super) const RECORD_COUNT_AT: usize = 57;

const COMPRESSION_MASK: i16 = 0x07;
pub(super) const TIMESTAMP_TYPE_BIT: i16 = 0x08;
pub(super) const TRANSACTIONAL_BIT: i16 = 0x10;
pub(super) const CONTROL_BIT: i16 = 0x20;
pub(super) const DELETE_HORIZON_BIT: i16 = 0x40;

/// `base` advanced by `delta` as Kafka's `DefaultRecordBatch.incrementSequence` does: past
/// `i32::MAX` sequences wrap to 0 (not to `i32::MIN`), and [`NO_SEQUENCE`] stays itself.
/// Java's wrapping `int` arithmetic is reproduced exactly, so hostile deltas cannot overflow.
pub(crate) fn increment_sequence(base: i32, delta: i32) -> i32 {
    if base == NO_SEQUENCE {
        return NO_SEQUENCE;
    }
    if base > i32::MAX.wrapping_sub(delta) {
        delta
            .wrapping_sub(i32::MAX.wrapping_sub(base))
            .wrapping_sub(1)
    } else {
        base.wrapping_add(delta)
    }
}

/// What a batch's timestamps mean (attributes bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TimestampType {
    /// Set by the producer when it created each record.
    #[default]
    CreateTime,
    /// Set by the broker when it appended the batch; only the header's max timestamp holds
    /// it, and it applies to every record.
    LogAppendTime,
}

fn array_at<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    buf.get(at..at + N)
        .and_then(|s| <[u8; N]>::try_from(s).ok())
        .unwrap_or([0; N])
}
pub(super) fn i16_at(buf: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(array_at(buf, at))
}
pub(super) fn i32_at(buf: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(array_at(buf, at))
}
pub(super) fn u32_at(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(array_at(buf, at))
}
pub(super) fn i64_at(buf: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(array_at(buf, at))
}
pub(super) fn put_at<const N: usize>(buf: &mut [u8], at: usize, v: [u8; N]) {
    if let Some(dst) = buf.get_mut(at..at + N) {
        dst.copy_from_slice(&v);
    }
}

/// The size of the batch at the front of `buf` (which starts at `position` of the caller's
/// buffer) when all of it is there; [`RecordBatchError::PartialBatch`] when `buf` ends inside
/// it; another error when what is there cannot be the start of a v2 batch.
///
/// The order of checks follows Kafka's `ByteBufferLogInputStream`: a batch is partial only if
/// its length and magic look sound.
pub(super) fn frame(buf: &[u8], position: usize) -> Result<usize, RecordBatchError> {
    if buf.len() < BATCH_OVERHEAD {
        return Err(RecordBatchError::PartialBatch {
            position,
            needed: None,
            available: buf.len(),
        });
    }
    let batch_length = i32_at(buf, BATCH_LENGTH_AT);
    if let Some(&magic) = buf.get(MAGIC_AT) {
        let magic = magic as i8;
        if magic != CURRENT_MAGIC {
            return Err(RecordBatchError::UnsupportedMagic { position, magic });
        }
    }
    if batch_length < MIN_BATCH_LENGTH {
        return Err(RecordBatchError::BatchLengthTooSmall {
            position,
            batch_length,
        });
    }
    // batch_length ≥ 49, so the cast is exact, and 12 + i32::MAX fits any usize ≥ 32 bits.
    let size = BATCH_OVERHEAD + batch_length as usize;
    if size > buf.len() {
        return Err(RecordBatchError::PartialBatch {
            position,
            needed: Some(size),
            available: buf.len(),
        });
    }
    Ok(size)
}

/// A partial batch is an error of its own only while iterating; given one batch, being cut
/// short is plain truncation.
pub(super) fn partial_to_truncated(e: RecordBatchError) -> RecordBatchError {
    match e {
        RecordBatchError::PartialBatch {
            position,
            needed,
            available,
        } => RecordBatchError::Truncated {
            position,
            field: if needed.is_some() {
                "batch"
            } else {
                "batchLength"
            },
            needed: needed.unwrap_or(BATCH_OVERHEAD),
            available,
        },
        other => other,
    }
}

/// Checks the header fields of one complete batch (`buf` is exactly the batch).
pub(super) fn check_header(buf: &[u8], position: usize) -> Result<Compression, RecordBatchError> {
    let attributes = i16_at(buf, ATTRIBUTES_AT);
    let codec = (attributes & COMPRESSION_MASK) as u8;
    let Some(compression) = Compression::from_id(codec) else {
        return Err(RecordBatchError::UnknownCompression { position, codec });
    };
    let record_count = i32_at(buf, RECORD_COUNT_AT);
    let Ok(count) = usize::try_from(record_count) else {
        return Err(RecordBatchError::NegativeRecordCount {
            position,
            record_count,
        });
    };
    let available = buf.len().saturating_sub(BATCH_HEADER_SIZE);
    if compression == Compression::None && count.saturating_mul(MIN_RECORD_SIZE) > available {
        return Err(RecordBatchError::RecordCountImplausible {
            position,
            record_count,
            available,
        });
    }
    Ok(compression)
}

/// One v2 record batch: a validated, zero-copy view over exactly the batch's bytes.
///
/// Header accessors read fields parsed once at construction; [`RecordBatch::as_bytes`] gives
/// the batch's bytes back unchanged for forwarding or storing. Cloning is cheap (the bytes
/// are shared).
#[derive(Clone)]
pub struct RecordBatch {
    bytes: Bytes,
    position: usize,
    compression: Compression,
}

impl RecordBatch {
    /// Parses `bytes` as exactly one batch (a produce request's `records` holds exactly one).
    /// Checks the framing and header, not the CRC (see [`RecordBatch::validate_crc`]).
    pub fn parse(bytes: Bytes) -> Result<RecordBatch, RecordBatchError> {
        let size = frame(&bytes, 0).map_err(partial_to_truncated)?;
        if size < bytes.len() {
            return Err(RecordBatchError::TrailingBytes {
                position: 0,
                extra: bytes.len() - size,
            });
        }
        RecordBatch::from_frame(bytes, 0)
    }

    /// Builds the view over a buffer [`frame`] has sized exactly.
    pub(super) fn from_frame(
        bytes: Bytes,
        position: usize,
    ) -> Result<RecordBatch, RecordBatchError> {
        let compression = check_header(&bytes, position)?;
        Ok(RecordBatch {
            bytes,
            position,
            compression,
        })
    }

    /// Where this batch started in the buffer it was parsed or iterated from.
    pub fn position(&self) -> usize {
        self.position
    }

    /// The batch's bytes, exactly as received.
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The batch's bytes, exactly as received.
    pub fn into_bytes(self) -> Bytes {
        self.bytes
    }

    /// The batch's total size on the wire: `batchLength` + 12.
    pub fn size_in_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The offset of the first record (the broker assigns it on append).
    pub fn base_offset(&self) -> i64 {
        i64_at(&self.bytes, BASE_OFFSET_AT)
    }

    /// The byte count after this field: the batch's size minus 12.
    pub fn batch_length(&self) -> i32 {
        i32_at(&self.bytes, BATCH_LENGTH_AT)
    }

    /// The leader epoch of the leader that appended the batch (used for log truncation and
    /// fencing; -1 before a leader stamped it).
    pub fn partition_leader_epoch(&self) -> i32 {
        i32_at(&self.bytes, PARTITION_LEADER_EPOCH_AT)
    }

    /// The format version; always 2 for a parsed batch.
    pub fn magic(&self) -> i8 {
        CURRENT_MAGIC
    }

    /// The stored CRC32C.
    pub fn crc(&self) -> u32 {
        u32_at(&self.bytes, CRC_AT)
    }

    /// The raw attributes; see the typed helpers below.
    pub fn attributes(&self) -> i16 {
        i16_at(&self.bytes, ATTRIBUTES_AT)
    }

    /// The codec the records section is compressed with (attributes bits 0-2).
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// What the timestamps mean (attributes bit 3).
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes() & TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Whether the batch belongs to a transaction (attributes bit 4).
    pub fn is_transactional(&self) -> bool {
        self.attributes() & TRANSACTIONAL_BIT != 0
    }

    /// Whether the batch holds control records (commit/abort markers, KRaft snapshot and
    /// membership records) rather than data (attributes bit 5).
    pub fn is_control(&self) -> bool {
        self.attributes() & CONTROL_BIT != 0
    }

    /// Whether the log cleaner set a delete horizon (attributes bit 6); then the base
    /// timestamp holds it.
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes() & DELETE_HORIZON_BIT != 0
    }

    /// The delete horizon, when set: the time after which the cleaner may drop this batch's
    /// tombstones and transaction markers.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        self.has_delete_horizon().then(|| self.base_timestamp())
    }

    /// The last record's offset minus the base offset. It survives compaction even when that
    /// record is gone, so it, not the record count, tells where the next batch starts.
    pub fn last_offset_delta(&self) -> i32 {
        i32_at(&self.bytes, LAST_OFFSET_DELTA_AT)
    }

    /// The timestamp record deltas are relative to (the first record's, as Kafka writes it).
    pub fn base_timestamp(&self) -> i64 {
        i64_at(&self.bytes, BASE_TIMESTAMP_AT)
    }

    /// The largest record timestamp, or the log append time for a `LogAppendTime` batch.
    pub fn max_timestamp(&self) -> i64 {
        i64_at(&self.bytes, MAX_TIMESTAMP_AT)
    }

    /// The idempotent/transactional producer's id, or [`NO_PRODUCER_ID`].
    pub fn producer_id(&self) -> i64 {
        i64_at(&self.bytes, PRODUCER_ID_AT)
    }

    /// The producer's epoch, or [`NO_PRODUCER_EPOCH`].
    pub fn producer_epoch(&self) -> i16 {
        i16_at(&self.bytes, PRODUCER_EPOCH_AT)
    }

    /// The first record's sequence number, or [`NO_SEQUENCE`].
    pub fn base_sequence(&self) -> i32 {
        i32_at(&self.bytes, BASE_SEQUENCE_AT)
    }

    /// The last record's sequence number as Kafka computes it (wrapping past `i32::MAX`),
    /// or [`NO_SEQUENCE`].
    pub fn last_sequence(&self) -> i32 {
        increment_sequence(self.base_sequence(), self.last_offset_delta())
    }

    /// The number of records the batch declares (non-negative once parsed).
    pub fn record_count(&self) -> i32 {
        i32_at(&self.bytes, RECORD_COUNT_AT)
    }

    /// The offset of the last record: base offset + last offset delta.
    pub fn last_offset(&self) -> i64 {
        self.base_offset()
            .wrapping_add(i64::from(self.last_offset_delta()))
    }

    /// The offset the next batch in the log starts at.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// The records section as stored (compressed or not), without the header.
    pub fn records_data(&self) -> Bytes {
        self.bytes.slice(BATCH_HEADER_SIZE..)
    }

    /// The CRC32C of the bytes from `attributes` to the end, as it should be stored.
    pub fn compute_crc(&self) -> u32 {
        crc32c::crc32c(self.bytes.get(ATTRIBUTES_AT..).unwrap_or_default())
    }

    /// Checks the stored CRC, as Kafka's `ensureValid`: a mismatch means the batch was
    /// damaged in flight or on disk.
    pub fn validate_crc(&self) -> Result<(), RecordBatchError> {
        let stored = self.crc();
        let computed = self.compute_crc();
        if stored != computed {
            return Err(RecordBatchError::CrcMismatch {
                position: self.position,
                stored,
                computed,
            });
        }
        Ok(())
    }

    /// Iterates over the records, decompressing first (to at most
    /// [`MAX_DECOMPRESSED_BATCH_BYTES`]) when the batch is compressed.
    pub fn records(&self) -> Result<RecordIter, RecordBatchError> {
        self.records_with_limit(MAX_DECOMPRESSED_BATCH_BYTES)
    }

    /// Iterates over the records, refusing to decompress to more than `limit` bytes.
    pub fn records_with_limit(&self, limit: usize) -> Result<RecordIter, RecordBatchError> {
        let record_count = self.record_count();
        let count = usize::try_from(record_count).unwrap_or(0);
        let min_bytes = count.saturating_mul(MIN_RECORD_SIZE);
        let stored = self.records_data();
        let data = if self.compression == Compression::None {
            stored
        } else {
            if min_bytes > limit {
                return Err(RecordBatchError::RecordCountImplausible {
                    position: self.position,
                    record_count,
                    available: limit,
                });
            }
            compression::decompress(self.compression, &stored, limit)?
        };
        if min_bytes > data.len() {
            return Err(RecordBatchError::RecordCountImplausible {
                position: self.position,
                record_count,
                available: data.len(),
            });
        }
        Ok(RecordIter(RecordsSection::new(data, record_count)))
    }
}

impl PartialEq for RecordBatch {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for RecordBatch {}

impl fmt::Debug for RecordBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordBatch")
            .field("position", &self.position)
            .field("size", &self.bytes.len())
            .field("base_offset", &self.base_offset())
            .field("last_offset_delta", &self.last_offset_delta())
            .field("partition_leader_epoch", &self.partition_leader_epoch())
            .field("attributes", &self.attributes())
            .field("compression", &self.compression)
            .field("base_timestamp", &self.base_timestamp())
            .field("max_timestamp", &self.max_timestamp())
            .field("producer_id", &self.producer_id())
            .field("producer_epoch", &self.producer_epoch())
            .field("base_sequence", &self.base_sequence())
            .field("record_count", &self.record_count())
            .field("crc", &format_args!("{:#010x}", self.crc()))
            .finish()
    }
}

/// A batch's (decompressed) records section being read one record at a time: exactly
/// `recordCount` records, then an error if bytes remain; nothing more after the first
/// error. What reads a record is the caller's ([`RecordIter`] decodes it, `SkimIter` only
/// skims it).
#[derive(Debug, Clone)]
pub(super) struct RecordsSection {
    data: Bytes,
    section_len: usize,
    record_count: i32,
    index: usize,
    remaining: usize,
    done: bool,
}

impl RecordsSection {
    pub(super) fn new(data: Bytes, record_count: i32) -> Self {
        RecordsSection {
            section_len: data.len(),
            data,
            record_count,
            index: 0,
            remaining: usize::try_from(record_count).unwrap_or(0),
            done: false,
        }
    }

    /// The next record as `read` reads it from the rest of the section (given the
    /// section's length and the record's index, for error positions).
    pub(super) fn next_with<T>(
        &mut self,
        read: impl FnOnce(&mut Bytes, usize, usize) -> Result<T, RecordBatchError>,
    ) -> Option<Result<T, RecordBatchError>> {
        if self.done {
            return None;
        }
        if self.remaining == 0 {
            self.done = true;
            if !self.data.is_empty() {
                return Some(Err(RecordBatchError::RecordsTrailing {
                    record_count: self.record_count,
                    extra: self.data.len(),
                }));
            }
            return None;
        }
        let result = read(&mut self.data, self.section_len, self.index);
        match result {
            Ok(_) => {
                self.index += 1;
                self.remaining -= 1;
            }
            Err(_) => self.done = true,
        }
        Some(result)
    }

    pub(super) fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            (0, Some(0))
        } else {
            (0, Some(self.remaining.saturating_add(1)))
        }
    }
}

/// The records of one batch, decoded one at a time from the (decompressed) records section.
///
/// Yields exactly `recordCount` records, then an error if bytes remain; stops for good after
/// the first error. Keys, values and header values are slices of the section.
#[derive(Debug, Clone)]
pub struct RecordIter(RecordsSection);

impl Iterator for RecordIter {
    type Item = Result<Record, RecordBatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_with(Record::decode)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl std::iter::FusedIterator for RecordIter {}

#[cfg(test)]
pub(super) mod tests {
    use bytes::{BufMut, BytesMut};

    use super::*;
    use crate::records::{Batches, Header, RecordBatchBuilder};

    pub(crate) fn sample(compression: Compression) -> Bytes {
        let mut b = RecordBatchBuilder::new(100)
            .partition_leader_epoch(7)
            .producer(42, 3, 10)
            .compression(compression);
        b.append(1_000, Some(Bytes::from_static(b"k")), None, vec![])
            .unwrap();
        b.append(
            999,
            None,
            Some(Bytes::from_static(b"value")),
            vec![Header::new("h", Some(Bytes::from_static(b"x")))],
        )
        .unwrap();
        b.append_with_offset(105, 1_005, None, None, vec![])
            .unwrap();
        b.build().unwrap()
    }

    #[test]
    fn header_fields_and_derived_values() {
        let batch = RecordBatch::parse(sample(Compression::None)).unwrap();
        assert_eq!(batch.base_offset(), 100);
        assert_eq!(batch.batch_length() as usize + 12, batch.size_in_bytes());
        assert_eq!(batch.partition_leader_epoch(), 7);
        assert_eq!(batch.magic(), 2);
        assert_eq!(batch.compression(), Compression::None);
        assert_eq!(batch.timestamp_type(), TimestampType::CreateTime);
        assert!(!batch.is_transactional() && !batch.is_control() && !batch.has_delete_horizon());
        assert_eq!(batch.last_offset_delta(), 5);
        assert_eq!(batch.last_offset(), 105);
        assert_eq!(batch.next_offset(), 106);
        assert_eq!(batch.base_timestamp(), 1_000);
        assert_eq!(batch.max_timestamp(), 1_005);
        assert_eq!(batch.producer_id(), 42);
        assert_eq!(batch.producer_epoch(), 3);
        assert_eq!(batch.base_sequence(), 10);
        assert_eq!(batch.last_sequence(), 15);
        assert_eq!(batch.record_count(), 3);
        batch.validate_crc().unwrap();
        let records: Vec<Record> = batch.records().unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[1].offset(&batch), 101);
        assert_eq!(records[1].timestamp(&batch), 999);
        assert_eq!(records[1].timestamp_delta, -1);
        assert_eq!(records[2].offset(&batch), 105);
        assert_eq!(records[2].sequence(&batch), 15);
    }

    #[test]
    fn every_codec_reads_back() {
        let plain: Vec<Record> = RecordBatch::parse(sample(Compression::None))
            .unwrap()
            .records()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for codec in Compression::ALL {
            let batch = RecordBatch::parse(sample(codec)).unwrap();
            assert_eq!(batch.compression(), codec);
            batch.validate_crc().unwrap();
            let got: Vec<Record> = batch.records().unwrap().collect::<Result<_, _>>().unwrap();
            assert_eq!(got, plain, "{codec}");
        }
    }

    #[test]
    fn uncompressed_values_are_slices_of_the_batch() {
        let bytes = sample(Compression::None);
        let batch = RecordBatch::parse(bytes.clone()).unwrap();
        let r = batch.records().unwrap().nth(1).unwrap().unwrap();
        let v = r.value.unwrap();
        let start = bytes.as_ptr() as usize;
        let at = v.as_ptr() as usize;
        assert!(at > start && at + v.len() <= start + bytes.len());
    }

    #[test]
    fn sequence_wraps_like_kafka() {
        let mut b = RecordBatchBuilder::new(0).producer(1, 0, i32::MAX - 1);
        for _ in 0..4 {
            b.append(0, None, None, vec![]).unwrap();
        }
        let batch = RecordBatch::parse(b.build().unwrap()).unwrap();
        let seqs: Vec<i32> = batch
            .records()
            .unwrap()
            .map(|r| r.unwrap().sequence(&batch))
            .collect();
        assert_eq!(seqs, vec![i32::MAX - 1, i32::MAX, 0, 1]);
        assert_eq!(batch.last_sequence(), 1);
    }

    #[test]
    fn increment_sequence_is_javas_and_never_overflows() {
        assert_eq!(increment_sequence(5, 3), 8);
        assert_eq!(increment_sequence(NO_SEQUENCE, 3), NO_SEQUENCE);
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 2, 5), 2);
        for base in [i32::MIN, -2, 0, 1, i32::MAX - 1, i32::MAX] {
            for delta in [i32::MIN, -1, 0, 1, i32::MAX] {
                let _ = increment_sequence(base, delta);
            }
        }
    }

    #[test]
    fn frame_errors() {
        let bytes = sample(Compression::None);
        // Cut inside: partial while iterating, truncated when parsed alone.
        let cut = bytes.slice(..bytes.len() - 1);
        assert!(matches!(
            RecordBatch::parse(cut.clone()),
            Err(RecordBatchError::Truncated { field: "batch", .. })
        ));
        let mut it = Batches::new(cut);
        assert!(it.next().unwrap().unwrap_err().is_partial_batch());
        assert!(it.next().is_none());
        // Trailing bytes after one batch.
        let mut two = BytesMut::from(&bytes[..]);
        two.put_u8(0);
        assert!(matches!(
            RecordBatch::parse(two.freeze()),
            Err(RecordBatchError::TrailingBytes { extra: 1, .. })
        ));
        // Magic 1.
        let mut m = BytesMut::from(&bytes[..]);
        m[MAGIC_AT] = 1;
        assert!(matches!(
            RecordBatch::parse(m.freeze()),
            Err(RecordBatchError::UnsupportedMagic { magic: 1, .. })
        ));
        // Codec 5.
        let mut c = BytesMut::from(&bytes[..]);
        c[ATTRIBUTES_AT + 1] |= 5;
        assert!(matches!(
            RecordBatch::parse(c.freeze()),
            Err(RecordBatchError::UnknownCompression { codec: 5, .. })
        ));
    }
}
