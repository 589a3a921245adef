//! The bytes of a `__cluster_metadata` snapshot (`<end offset>-<epoch>.checkpoint`) in
//! Kafka's format, so a snapshot we write is one Kafka's `RecordsSnapshotReader` reads and a
//! snapshot Kafka writes is one we load. Pure: no files, no clock, no tokio; the log stores
//! the bytes (`kraftd_log::snapshot`) and Raft ships them (FetchSnapshot) without looking.
//!
//! A snapshot is a sequence of v2 record batches, as Kafka's `RecordsSnapshotWriter` makes it:
//!
//! 1. a control batch whose first record is a `SnapshotHeaderRecord` (control type 3, value
//!    version 0, `lastContainedLogTimestamp`); Kafka 3.9+ adds `KRaftVersionRecord` (type 5)
//!    and, for a dynamic quorum, `VotersRecord` (type 6) to that same batch when
//!    `kraft.version` ≥ 1; we write only the header (a static quorum is `kraft.version` 0) and
//!    read all three;
//! 2. data batches of record values (here already framed metadata records, see
//!    `kraftd_protocol::metadata_record`), null keys, no headers, uncompressed, each at most
//!    [`DEFAULT_MAX_BATCH_BYTES`] (Kafka's `KafkaRaftClient.MAX_BATCH_SIZE_BYTES`, 8 MiB);
//! 3. a control batch holding one `SnapshotFooterRecord` (control type 4, version 0).
//!
//! Every batch carries the snapshot's epoch as its partition leader epoch; base offsets start
//! at 0 and are contiguous (the header batch takes offset 0, the first data record 1, and the
//! footer the offset after the last data record), no producer id, `CreateTime`, and every
//! record's timestamp is the writer's append time (Kafka's `BatchAccumulator` stamps
//! `time.milliseconds()`; ours is an input).
//!
//! [`SnapshotReader`] is stricter than Kafka's reader, which trusts the file: it checks the
//! header comes first, every CRC, contiguous offsets and one epoch, no control record in the
//! data, the footer last, and nothing after it. Every failure is a [`SnapshotError`]; no input
//! makes it panic, and it copies no record (values are slices of the input).

use bytes::{Bytes, BytesMut};
use kraftd_protocol::messages::{
    KRaftVersionRecord, SnapshotFooterRecord, SnapshotHeaderRecord, VotersRecord,
};
use kraftd_protocol::records::{
    Batches, ControlRecord, ControlRecordType, RecordBatch, RecordBatchBuilder, RecordBatchError,
    BATCH_HEADER_SIZE,
};

/// The largest batch the writer makes: Kafka's `KafkaRaftClient.MAX_BATCH_SIZE_BYTES`, which
/// `createSnapshot` passes to `RecordsSnapshotWriter.Builder.setMaxBatchSizeBytes`.
pub const DEFAULT_MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;

/// The `version` field Kafka writes in a `SnapshotHeaderRecord`
/// (`ControlRecordUtils.SNAPSHOT_HEADER_CURRENT_VERSION`).
pub const SNAPSHOT_HEADER_VERSION: i16 = 0;

/// The `version` field Kafka writes in a `SnapshotFooterRecord`
/// (`ControlRecordUtils.SNAPSHOT_FOOTER_CURRENT_VERSION`).
pub const SNAPSHOT_FOOTER_VERSION: i16 = 0;

/// Why snapshot bytes could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotWriteError {
    /// A record or batch is beyond what the v2 format can express (over 2 GiB).
    #[error("snapshot batch: {0}")]
    Batch(#[from] RecordBatchError),
    /// A control record value did not encode.
    #[error("snapshot control record: {0}")]
    Encode(#[from] kraftd_protocol::EncodeError),
}

/// Builds a snapshot's bytes: the header batch at construction, then record values packed
/// into batches of at most `max_batch_bytes`, then the footer at [`SnapshotWriter::finish`].
///
/// A group larger than the batch limit gets a batch of its own (Kafka's accumulator refuses
/// it with `RecordBatchTooLargeException`, failing the snapshot; a controller that can never
/// snapshot is worse).
#[derive(Debug)]
pub struct SnapshotWriter {
    epoch: i32,
    append_time_ms: i64,
    max_batch_bytes: usize,
    out: BytesMut,
    /// The offset of the next record: 1 after the header.
    next_offset: i64,
    current: Option<RecordBatchBuilder>,
    /// The encoded size of `current` so far, header included.
    current_bytes: usize,
    records: u64,
}

impl SnapshotWriter {
    /// A writer for a snapshot in `epoch` (the epoch of its snapshot id, stamped as every
    /// batch's partition leader epoch), whose header records `last_contained_log_timestamp`,
    /// with every batch and record timestamped `append_time_ms`, and Kafka's batch limit.
    pub fn new(
        epoch: i32,
        last_contained_log_timestamp: i64,
        append_time_ms: i64,
    ) -> Result<SnapshotWriter, SnapshotWriteError> {
        SnapshotWriter::with_max_batch_bytes(
            epoch,
            last_contained_log_timestamp,
            append_time_ms,
            DEFAULT_MAX_BATCH_BYTES,
        )
    }

    /// As [`SnapshotWriter::new`] with another batch size limit (bytes, batch header
    /// included).
    pub fn with_max_batch_bytes(
        epoch: i32,
        last_contained_log_timestamp: i64,
        append_time_ms: i64,
        max_batch_bytes: usize,
    ) -> Result<SnapshotWriter, SnapshotWriteError> {
        let header = ControlRecord::SnapshotHeader(SnapshotHeaderRecord {
            version: SNAPSHOT_HEADER_VERSION,
            last_contained_log_timestamp,
            ..Default::default()
        });
        let batch = control_batch(0, epoch, append_time_ms, &header)?;
        let mut out = BytesMut::with_capacity(batch.len());
        out.extend_from_slice(&batch);
        Ok(SnapshotWriter {
            epoch,
            append_time_ms,
            max_batch_bytes,
            out,
            next_offset: 1,
            current: None,
            current_bytes: 0,
            records: 0,
        })
    }

    /// Appends one record value (a framed metadata record) at the next offset: as
    /// [`SnapshotWriter::append_group`] with a group of one.
    pub fn append(&mut self, value: Bytes) -> Result<(), SnapshotWriteError> {
        self.append_group(std::slice::from_ref(&value))
    }

    /// Appends record values that stay together in one batch, as one call of Kafka's
    /// `SnapshotWriter.append(List)` (Kafka's controller appends groups of 1024,
    /// `SnapshotEmitter`'s batch size). The batching is Kafka's `BatchAccumulator`'s: a
    /// group that does not fit in the open batch (header included, exact sizes) closes it
    /// and starts the next one, and that next batch is closed right after the group (Kafka's
    /// writer drains as soon as a batch completes, and draining closes the open batch too).
    pub fn append_group(&mut self, values: &[Bytes]) -> Result<(), SnapshotWriteError> {
        if values.is_empty() {
            return Ok(());
        }
        let open = self.current.as_ref().map_or(0, |b| b.len());
        let mut overflowed = false;
        if open > 0 && self.current_bytes + group_size(values, open) > self.max_batch_bytes {
            self.flush()?;
            overflowed = true;
        }
        let builder = self.current.get_or_insert_with(|| {
            RecordBatchBuilder::new(self.next_offset).partition_leader_epoch(self.epoch)
        });
        if builder.is_empty() {
            self.current_bytes = BATCH_HEADER_SIZE;
        }
        for value in values {
            self.current_bytes += record_size(value.len(), builder.len());
            builder.append(self.append_time_ms, None, Some(value.clone()), Vec::new())?;
            self.next_offset += 1;
            self.records += 1;
        }
        if overflowed {
            self.flush()?;
        }
        Ok(())
    }

    /// How many record values were appended.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The bytes written so far (closed batches only).
    pub fn size_in_bytes(&self) -> usize {
        self.out.len()
    }

    /// Closes the last data batch, writes the footer, and returns the snapshot's bytes.
    pub fn finish(mut self) -> Result<Bytes, SnapshotWriteError> {
        self.flush()?;
        let footer = ControlRecord::SnapshotFooter(SnapshotFooterRecord {
            version: SNAPSHOT_FOOTER_VERSION,
            ..Default::default()
        });
        let batch = control_batch(self.next_offset, self.epoch, self.append_time_ms, &footer)?;
        self.out.extend_from_slice(&batch);
        Ok(self.out.freeze())
    }

    fn flush(&mut self) -> Result<(), SnapshotWriteError> {
        if let Some(builder) = self.current.take() {
            if !builder.is_empty() {
                let batch = builder.build()?;
                self.out.extend_from_slice(&batch);
            }
        }
        self.current_bytes = 0;
        Ok(())
    }
}

/// A control batch holding one control record, as Kafka's `MemoryRecordsBuilder` writes the
/// snapshot header and footer batches.
fn control_batch(
    base_offset: i64,
    epoch: i32,
    time_ms: i64,
    record: &ControlRecord,
) -> Result<Bytes, SnapshotWriteError> {
    let mut b = RecordBatchBuilder::new(base_offset)
        .partition_leader_epoch(epoch)
        .control(true);
    b.append(
        time_ms,
        Some(record.key()),
        Some(record.encode_value()?),
        Vec::new(),
    )?;
    Ok(b.build()?)
}

/// The size of a zig-zag varint.
fn varint_size(v: i64) -> usize {
    let mut u = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

/// The encoded size of `values` as records from offset delta `first_delta` on.
fn group_size(values: &[Bytes], first_delta: usize) -> usize {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| record_size(v.len(), first_delta + i))
        .sum()
}

/// The encoded size of a data record (null key, no headers, timestamp delta 0) with a
/// `value_len`-byte value at `offset_delta`.
fn record_size(value_len: usize, offset_delta: usize) -> usize {
    let value_len = value_len as i64;
    let body = 1 // attributes
        + 1 // timestamp delta 0
        + varint_size(offset_delta as i64)
        + 1 // null key
        + varint_size(value_len)
        + value_len as usize
        + 1; // no headers
    varint_size(body as i64) + body
}

/// Why snapshot bytes are not a valid snapshot. Positions are byte offsets from the start of
/// the snapshot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// No bytes at all.
    #[error("snapshot is empty")]
    Empty,
    /// A batch (or a record in it) is malformed, or its CRC does not match.
    #[error("snapshot batch at byte {position}: {source}")]
    Batch {
        position: usize,
        #[source]
        source: RecordBatchError,
    },
    /// The bytes end inside a batch.
    #[error(
        "snapshot is cut inside the batch at byte {position} ({available} of {needed:?} bytes)"
    )]
    Truncated {
        position: usize,
        needed: Option<usize>,
        available: usize,
    },
    /// The first batch is not a control batch opening with a `SnapshotHeaderRecord`.
    #[error("snapshot does not start with a SnapshotHeaderRecord: {reason}")]
    MissingHeader { reason: &'static str },
    /// The bytes end (at a batch boundary) without a `SnapshotFooterRecord`.
    #[error("snapshot ends at byte {position} without a SnapshotFooterRecord")]
    MissingFooter { position: usize },
    /// The footer batch holds something besides one `SnapshotFooterRecord`.
    #[error("snapshot footer batch at byte {position}: {reason}")]
    BadFooter {
        position: usize,
        reason: &'static str,
    },
    /// Bytes follow the footer batch.
    #[error("{extra} bytes follow the snapshot footer at byte {position}")]
    TrailingBytes { position: usize, extra: usize },
    /// A control record other than the footer appears after the header batch.
    #[error("unexpected {record_type:?} control record at offset {offset}")]
    UnexpectedControlRecord {
        offset: i64,
        record_type: ControlRecordType,
    },
    /// A batch does not start where the previous one ended.
    #[error("batch at byte {position} starts at offset {actual}, expected {expected}")]
    OffsetGap {
        position: usize,
        expected: i64,
        actual: i64,
    },
    /// A batch's offsets are not one per record, in order.
    #[error("batch at byte {position}: record {index} has offset delta {offset_delta}")]
    RecordOffset {
        position: usize,
        index: usize,
        offset_delta: i32,
    },
    /// A batch carries another partition leader epoch than the header batch.
    #[error("batch at byte {position} has epoch {actual}, the snapshot's is {expected}")]
    EpochMismatch {
        position: usize,
        expected: i32,
        actual: i32,
    },
    /// A data record has a null value.
    #[error("record at offset {offset} has a null value")]
    NullValue { offset: i64 },
}

/// One data batch of a snapshot: its base offset and its record values (slices of the input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotBatch {
    pub base_offset: i64,
    pub values: Vec<Bytes>,
}

/// Reads a snapshot batch by batch: [`SnapshotReader::new`] checks the header batch, the
/// iterator yields the data batches, and ends (`None`) only after a sound footer with
/// nothing after it. A caller that applies records must hold them until the iterator has
/// ended: a snapshot is valid only as a whole.
#[derive(Debug)]
pub struct SnapshotReader {
    batches: Batches,
    epoch: i32,
    header: SnapshotHeaderRecord,
    kraft_version: Option<KRaftVersionRecord>,
    voters: Option<VotersRecord>,
    next_offset: i64,
    done: bool,
}

impl SnapshotReader {
    /// Reads and checks the header batch of `bytes`.
    pub fn new(bytes: Bytes) -> Result<SnapshotReader, SnapshotError> {
        if bytes.is_empty() {
            return Err(SnapshotError::Empty);
        }
        let mut batches = Batches::new(bytes);
        let first = next_batch(&mut batches)?.ok_or(SnapshotError::Empty)?;
        if !first.is_control() {
            return Err(SnapshotError::MissingHeader {
                reason: "the first batch is not a control batch",
            });
        }
        if first.base_offset() != 0 {
            return Err(SnapshotError::OffsetGap {
                position: 0,
                expected: 0,
                actual: first.base_offset(),
            });
        }
        let mut header = None;
        let mut kraft_version = None;
        let mut voters = None;
        for (index, record) in control_records(&first)?.into_iter().enumerate() {
            match (index, record) {
                (0, ControlRecord::SnapshotHeader(h)) => header = Some(h),
                (0, _) => {
                    return Err(SnapshotError::MissingHeader {
                        reason: "the first record is not a SnapshotHeaderRecord",
                    })
                }
                (_, ControlRecord::KRaftVersion(v)) if kraft_version.is_none() => {
                    kraft_version = Some(v)
                }
                (_, ControlRecord::KRaftVoters(v)) if voters.is_none() => voters = Some(v),
                (i, other) => {
                    return Err(SnapshotError::UnexpectedControlRecord {
                        offset: i as i64,
                        record_type: other.record_type(),
                    })
                }
            }
        }
        let header = header.ok_or(SnapshotError::MissingHeader {
            reason: "the first batch has no records",
        })?;
        Ok(SnapshotReader {
            epoch: first.partition_leader_epoch(),
            next_offset: first.next_offset(),
            batches,
            header,
            kraft_version,
            voters,
            done: false,
        })
    }

    /// The partition leader epoch of the header batch: the snapshot id's epoch.
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    /// The snapshot's header record.
    pub fn header(&self) -> &SnapshotHeaderRecord {
        &self.header
    }

    /// The `lastContainedLogTimestamp` of the header.
    pub fn last_contained_log_timestamp(&self) -> i64 {
        self.header.last_contained_log_timestamp
    }

    /// The `kraft.version` the header batch records, if it records one (Kafka 3.9+ with
    /// `kraft.version` ≥ 1).
    pub fn kraft_version(&self) -> Option<&KRaftVersionRecord> {
        self.kraft_version.as_ref()
    }

    /// The voter set the header batch records, if any (dynamic quorums).
    pub fn voters(&self) -> Option<&VotersRecord> {
        self.voters.as_ref()
    }

    fn read_next(&mut self) -> Result<Option<SnapshotBatch>, SnapshotError> {
        let position = self.batches.position();
        let Some(batch) = next_batch(&mut self.batches)? else {
            return Err(SnapshotError::MissingFooter { position });
        };
        if batch.partition_leader_epoch() != self.epoch {
            return Err(SnapshotError::EpochMismatch {
                position,
                expected: self.epoch,
                actual: batch.partition_leader_epoch(),
            });
        }
        if batch.base_offset() != self.next_offset {
            return Err(SnapshotError::OffsetGap {
                position,
                expected: self.next_offset,
                actual: batch.base_offset(),
            });
        }
        self.next_offset = batch.next_offset();
        if batch.is_control() {
            let records = control_records(&batch)?;
            let mut records = records.into_iter();
            match (records.next(), records.next()) {
                (Some(ControlRecord::SnapshotFooter(_)), None) => {}
                (Some(ControlRecord::SnapshotFooter(_)), Some(_)) => {
                    return Err(SnapshotError::BadFooter {
                        position,
                        reason: "records follow the SnapshotFooterRecord",
                    })
                }
                (Some(other), _) => {
                    return Err(SnapshotError::UnexpectedControlRecord {
                        offset: batch.base_offset(),
                        record_type: other.record_type(),
                    })
                }
                (None, _) => {
                    return Err(SnapshotError::BadFooter {
                        position,
                        reason: "the control batch has no records",
                    })
                }
            }
            let rest = self.batches.remaining().len();
            if rest != 0 {
                return Err(SnapshotError::TrailingBytes {
                    position: self.batches.position(),
                    extra: rest,
                });
            }
            return Ok(None);
        }
        let iter = batch
            .records()
            .map_err(|source| SnapshotError::Batch { position, source })?;
        let mut values = Vec::with_capacity(iter.size_hint().1.unwrap_or(0).saturating_sub(1));
        for (index, record) in iter.enumerate() {
            let record = record.map_err(|source| SnapshotError::Batch { position, source })?;
            if usize::try_from(record.offset_delta).ok() != Some(index) {
                return Err(SnapshotError::RecordOffset {
                    position,
                    index,
                    offset_delta: record.offset_delta,
                });
            }
            let offset = batch.base_offset() + i64::from(record.offset_delta);
            values.push(record.value.ok_or(SnapshotError::NullValue { offset })?);
        }
        if i64::try_from(values.len()).ok() != Some(batch.next_offset() - batch.base_offset()) {
            return Err(SnapshotError::RecordOffset {
                position,
                index: values.len(),
                offset_delta: batch.last_offset_delta(),
            });
        }
        Ok(Some(SnapshotBatch {
            base_offset: batch.base_offset(),
            values,
        }))
    }
}

impl Iterator for SnapshotReader {
    type Item = Result<SnapshotBatch, SnapshotError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.read_next() {
            Ok(Some(batch)) => Some(Ok(batch)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for SnapshotReader {}

/// A whole snapshot, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The partition leader epoch of its batches (the snapshot id's epoch).
    pub epoch: i32,
    pub header: SnapshotHeaderRecord,
    pub kraft_version: Option<KRaftVersionRecord>,
    pub voters: Option<VotersRecord>,
    /// The data batches, in order.
    pub batches: Vec<SnapshotBatch>,
}

impl Snapshot {
    /// Every record value, in offset order.
    pub fn values(&self) -> impl Iterator<Item = &Bytes> {
        self.batches.iter().flat_map(|b| b.values.iter())
    }
}

/// Reads and checks a whole snapshot.
pub fn read_snapshot(bytes: Bytes) -> Result<Snapshot, SnapshotError> {
    let mut reader = SnapshotReader::new(bytes)?;
    let mut batches = Vec::new();
    for batch in reader.by_ref() {
        batches.push(batch?);
    }
    Ok(Snapshot {
        epoch: reader.epoch,
        header: reader.header,
        kraft_version: reader.kraft_version,
        voters: reader.voters,
        batches,
    })
}

/// A snapshot with `kraft.version` and, when given, the voter set in its header batch
/// (KIP-853), as Kafka's `RecordsSnapshotWriter` writes them for `kraft.version` ≥ 1: the
/// header batch is rebuilt with the SnapshotHeaderRecord, a KRaftVersionRecord and the
/// VotersRecord, and every later batch moves up by the records added (a batch's base offset
/// is outside its CRC). A snapshot whose header already records a `kraft.version` is
/// returned as it is.
pub fn with_kraft_control(
    bytes: &[u8],
    kraft_version: i16,
    voters: Option<VotersRecord>,
) -> Result<Bytes, SnapshotError> {
    let all = Bytes::copy_from_slice(bytes);
    let mut batches = Batches::new(all.clone());
    let first = next_batch(&mut batches)?.ok_or(SnapshotError::Empty)?;
    let records = control_records(&first)?;
    let header = match records.first() {
        Some(ControlRecord::SnapshotHeader(h)) if first.is_control() => h.clone(),
        _ => {
            return Err(SnapshotError::MissingHeader {
                reason: "the first record is not a SnapshotHeaderRecord",
            })
        }
    };
    if records.len() > 1 {
        return Ok(all);
    }
    let mut control = vec![
        ControlRecord::SnapshotHeader(header),
        ControlRecord::KRaftVersion(KRaftVersionRecord {
            version: 0,
            k_raft_version: kraft_version,
            ..Default::default()
        }),
    ];
    if let Some(v) = voters {
        control.push(ControlRecord::KRaftVoters(v));
    }
    let added = (control.len() - 1) as i64;
    let position = first.position();
    let err = |source| SnapshotError::Batch { position, source };
    let mut b = RecordBatchBuilder::new(0)
        .partition_leader_epoch(first.partition_leader_epoch())
        .control(true);
    for r in &control {
        let value = r.encode_value().map_err(|_| SnapshotError::MissingHeader {
            reason: "a control record does not encode",
        })?;
        b.append(
            first.base_timestamp(),
            Some(r.key()),
            Some(value),
            Vec::new(),
        )
        .map_err(err)?;
    }
    let mut out = BytesMut::with_capacity(bytes.len() + 256);
    out.extend_from_slice(&b.build().map_err(err)?);
    let mut at = first.size_in_bytes();
    while at < bytes.len() {
        let batch = next_batch(&mut batches)?.ok_or(SnapshotError::Empty)?;
        let len = batch.size_in_bytes();
        let mut copy = bytes[at..at + len].to_vec();
        let base = batch.base_offset() + added;
        copy[..8].copy_from_slice(&base.to_be_bytes());
        out.extend_from_slice(&copy);
        at += len;
    }
    Ok(out.freeze())
}

/// The next batch, CRC checked; `None` at the end of the bytes.
fn next_batch(batches: &mut Batches) -> Result<Option<RecordBatch>, SnapshotError> {
    let position = Batches::position(batches);
    match batches.next() {
        None => Ok(None),
        Some(Err(RecordBatchError::PartialBatch {
            position,
            needed,
            available,
        })) => Err(SnapshotError::Truncated {
            position,
            needed,
            available,
        }),
        Some(Err(source)) => Err(SnapshotError::Batch { position, source }),
        Some(Ok(batch)) => {
            batch
                .validate_crc()
                .map_err(|source| SnapshotError::Batch { position, source })?;
            Ok(Some(batch))
        }
    }
}

/// The control records of a control batch, decoded by their keys.
fn control_records(batch: &RecordBatch) -> Result<Vec<ControlRecord>, SnapshotError> {
    let position = batch.position();
    let err = |source| SnapshotError::Batch { position, source };
    let mut out = Vec::new();
    for record in batch.records().map_err(err)? {
        let record = record.map_err(err)?;
        let key = record.key.unwrap_or_default();
        let value = record.value.unwrap_or_default();
        out.push(ControlRecord::decode(&key, value).map_err(err)?);
    }
    Ok(out)
}
