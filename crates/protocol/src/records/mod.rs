//! Kafka's record batch format, magic v2: what a `records` field of Produce, Fetch and the
//! KRaft log carries, and what the log stores on disk.
//!
//! The broker's hot path touches batches far more often than records, so a batch is a
//! zero-copy, validated view over the [`bytes::Bytes`] it arrived in ([`RecordBatch`]): reading
//! its header, checking its CRC, or re-stamping its base offset and leader epoch in place
//! ([`RecordBatchMut`]) never copies or decodes records. Records are decoded only on demand
//! ([`RecordBatch::records`]), sliced out of the batch when uncompressed, and out of one bounded
//! decompression otherwise. [`RecordBatchBuilder`] writes new batches (client tools, control
//! batches, KRaft's own log).
//!
//! Everything here reads untrusted bytes: no input may make it panic, and none may make it
//! allocate more than the bytes given justify (or, for compressed batches, more than an
//! explicit cap). Every failure is a [`RecordBatchError`] that names what was wrong and where.
//!
//! Layout of a v2 batch (big-endian; the CRC32C covers `attributes` to the end, so the base
//! offset and partition leader epoch can be rewritten without recomputing it):
//!
//! ```text
//! 0  baseOffset           int64      35 maxTimestamp    int64
//! 8  batchLength          int32      43 producerId      int64
//! 12 partitionLeaderEpoch int32      51 producerEpoch   int16
//! 16 magic (= 2)          int8       53 baseSequence    int32
//! 17 crc                  uint32     57 recordCount     int32
//! 21 attributes           int16      61 records...
//! 23 lastOffsetDelta      int32
//! 27 baseTimestamp        int64
//! ```

mod batch;
mod batch_mut;
mod batches;
mod builder;
pub mod compression;
pub mod control;
mod record;
mod skim;

pub use batch::{
    RecordBatch, RecordIter, TimestampType, BATCH_HEADER_SIZE, BATCH_OVERHEAD, CURRENT_MAGIC,
    MIN_BATCH_LENGTH, MIN_RECORD_SIZE, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP,
};
pub use batch_mut::RecordBatchMut;
pub use batches::{Batches, BatchesMut};
pub use builder::RecordBatchBuilder;
pub use compression::{Compression, MAX_DECOMPRESSED_BATCH_BYTES};
pub use control::{ControlRecord, ControlRecordType};
pub use record::{Header, Record};
pub use skim::{SkimIter, SkimmedRecord};

use crate::codec::DecodeErrorKind;

/// Why a record batch (or a record in it) could not be read or written.
///
/// Positions are byte offsets: for batch-level errors, from the start of the buffer the batch
/// was parsed from (the whole `records` field when iterating with [`Batches`]); for
/// [`RecordBatchError::Record`], from the start of the batch's records section *after*
/// decompression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordBatchError {
    /// The batch header or the batch itself is cut short (for a single batch given on its
    /// own; a trailing partial batch met while iterating is [`RecordBatchError::PartialBatch`]).
    #[error("batch at byte {position}: {field} needs {needed} bytes but only {available} remain")]
    Truncated {
        position: usize,
        field: &'static str,
        needed: usize,
        available: usize,
    },
    /// The buffer ends inside a batch that otherwise looks sound. Fetch responses may end
    /// like this (the broker cuts at the fetch size), so this is not corruption: the caller
    /// drops the tail, or fetches again from its offset.
    #[error("partial batch at byte {position}: {available} bytes present{}", match .needed { Some(n) => format!(" of {n}"), None => String::new() })]
    PartialBatch {
        position: usize,
        /// The batch's full size, when enough of it was present to read its length.
        needed: Option<usize>,
        available: usize,
    },
    /// `batchLength` is below the 49 bytes a v2 header takes after the length itself.
    #[error("batch at byte {position}: batchLength {batch_length} is below the minimum {MIN_BATCH_LENGTH}")]
    BatchLengthTooSmall { position: usize, batch_length: i32 },
    /// Bytes follow the one batch that was expected.
    #[error("batch at byte {position}: {extra} bytes follow the batch")]
    TrailingBytes { position: usize, extra: usize },
    /// Magic is not 2 (message sets v0 and v1 are not supported).
    #[error("batch at byte {position}: magic {magic} is not supported (only 2)")]
    UnsupportedMagic { position: usize, magic: i8 },
    /// Attributes bits 0-2 name no codec (5, 6 or 7).
    #[error("batch at byte {position}: attributes name unknown compression codec {codec}")]
    UnknownCompression { position: usize, codec: u8 },
    /// `recordCount` is negative.
    #[error("batch at byte {position}: recordCount {record_count} is negative")]
    NegativeRecordCount { position: usize, record_count: i32 },
    /// `recordCount` claims more records than the bytes can hold (each takes at least
    /// [`MIN_RECORD_SIZE`] bytes), before or after decompression.
    #[error("batch at byte {position}: recordCount {record_count} cannot fit in {available} bytes of records")]
    RecordCountImplausible {
        position: usize,
        record_count: i32,
        available: usize,
    },
    /// The stored CRC32C does not match the bytes from `attributes` to the end.
    #[error("batch at byte {position}: crc {stored:#010x} stored but {computed:#010x} computed")]
    CrcMismatch {
        position: usize,
        stored: u32,
        computed: u32,
    },
    /// The compressed records section is not valid for its codec.
    #[error("{codec} records section is corrupt: {reason}")]
    Decompress {
        codec: compression::Compression,
        reason: String,
    },
    /// Decompressing would produce more than the allowed number of bytes.
    #[error("{codec} records section decompresses to more than {limit} bytes")]
    DecompressedTooLarge {
        codec: compression::Compression,
        limit: usize,
    },
    /// The compressor failed (only on writing).
    #[error("{codec} compression failed: {reason}")]
    Compress {
        codec: compression::Compression,
        reason: String,
    },
    /// A record is malformed: which one (index in the batch), where its bad field starts
    /// within the records section, which field, and what was wrong.
    #[error("record {index} at byte {position} of the records section, field {field}: {kind}")]
    Record {
        index: usize,
        position: usize,
        field: &'static str,
        kind: DecodeErrorKind,
    },
    /// Bytes remain in the records section after the last of `recordCount` records.
    #[error("{extra} bytes remain after the {record_count} records the batch declares")]
    RecordsTrailing { record_count: i32, extra: usize },
    /// (Building) an offset is below the base offset, or too far above it for an `int32`
    /// offset delta.
    #[error("offset {offset} cannot be written relative to base offset {base_offset}")]
    OffsetDeltaOutOfRange { offset: i64, base_offset: i64 },
    /// (Building) offsets within a batch must increase.
    #[error("offset {offset} does not follow the previous offset {previous}")]
    OffsetNotIncreasing { offset: i64, previous: i64 },
    /// (Building) a timestamp is too far from the base timestamp for an `int64` delta.
    #[error("timestamp {timestamp} cannot be written relative to base timestamp {base_timestamp}")]
    TimestampDeltaOutOfRange { timestamp: i64, base_timestamp: i64 },
    /// (Building) a field is longer than the format can express.
    #[error("{field} is {len} bytes, over the format's limit")]
    TooLarge { field: &'static str, len: usize },
    /// A control record's key is missing, shorter than 4 bytes, or has a negative version.
    #[error("invalid control record key: {reason}")]
    InvalidControlKey { reason: &'static str },
    /// A control record's key names a type this code does not know.
    #[error("control record key version {version} has unknown type {type_id}")]
    UnknownControlType { version: i16, type_id: i16 },
    /// A control record's value does not decode with its type's schema.
    #[error("control record value: {0}")]
    ControlValue(#[from] crate::codec::DecodeError),
}

impl RecordBatchError {
    /// True for a batch cut short at the end of its buffer, which a fetch response may
    /// legitimately end with; false for corruption.
    pub fn is_partial_batch(&self) -> bool {
        matches!(self, RecordBatchError::PartialBatch { .. })
    }
}
