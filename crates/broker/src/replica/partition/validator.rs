//! Kafka's `LogValidator` on a leader append, past the framing, size, CRC and transactional
//! checks in `leader.rs`.
//!
//! Batch checks (`validateBatch`, for a client's batch): the offset range matches the record
//! count, no control batch, an idempotent producer's base sequence is not negative; each
//! fails the batch with INVALID_RECORD and Kafka's message.
//!
//! Record checks (`validateRecord`): a compacted topic's records have keys; on a
//! `CreateTime` topic each record's timestamp is within `message.timestamp.before.max.ms` /
//! `after.max.ms` of the leader's clock; a client never sends a `LogAppendTime` batch. A
//! failing record refuses the whole batch and names itself by its index in the batch
//! (`record_errors`), as Kafka's `RecordValidationException` does: INVALID_TIMESTAMP if any
//! record's timestamp failed, else INVALID_RECORD. Reading the records also checks that the
//! batch holds exactly its declared count.
//!
//! Compression (`validateMessagesAndAssignOffsetsCompressed`): when the batch or the
//! topic's `compression.type` is compressed, every record is read (decompressed, bounded);
//! the batch is rebuilt — in the target codec, with consecutive inner offsets, the same
//! records, timestamps and producer fields and a new CRC — when the codec differs or the
//! inner offsets are not 0, 1, 2, ... (Kafka rewrites those rather than refusing them). An
//! uncompressed batch kept uncompressed is appended as sent, and its records are read only
//! when a check needs them (see [`validate`]).

use bytes::Bytes;
use kraftd_log::LogConfig;
use kraftd_protocol::records::{
    Compression, Record, RecordBatch, RecordBatchBuilder, RecordBatchError, TimestampType,
    NO_TIMESTAMP,
};
use kraftd_protocol::ErrorCode;

use super::{PartitionError, RecordError};
use crate::replica::TopicIdPartition;

/// How many record errors Kafka's message quotes.
const QUOTED_RECORD_ERRORS: usize = 3;

/// What an accepted batch is appended as.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Validated {
    /// The batch as the client sent it.
    AsSent,
    /// The batch rebuilt (re-compressed, or its inner offsets made consecutive).
    Rebuilt(Bytes),
}

/// One record's failure, with the error code it counts under.
struct Failure {
    code: ErrorCode,
    error: RecordError,
}

/// Validates a client's `batch` for the partition `tp` with the log's `config`, at the
/// leader's clock `now_ms`, and says what to append.
///
/// An uncompressed batch that stays uncompressed is skimmed (Kafka's
/// `skipKeyValueIterator`: each record's framing, the record count and every timestamp
/// against the window, without decoding keys, values or headers); it is decoded in full
/// only when a check needs more: a compacted topic (keys), a `LogAppendTime` batch (refused
/// per record), or a skim that found something to report record by record.
pub(super) fn validate(
    batch: &RecordBatch,
    tp: &TopicIdPartition,
    config: &LogConfig,
    now_ms: i64,
    from_client: bool,
) -> Result<Validated, PartitionError> {
    validate_batch(batch, tp, from_client)?;
    let source = batch.compression();
    let target = config.compression_type.target(source);
    let compressed_path = source != Compression::None || target != Compression::None;
    let create_time = config.message_timestamp_type == TimestampType::CreateTime;
    let needs_records = compressed_path
        || config.cleanup_policy.compact
        || batch.timestamp_type() == TimestampType::LogAppendTime
        || !skim_passes(batch, config, create_time, now_ms);
    if !needs_records {
        return Ok(Validated::AsSent);
    }
    let mut failures = Vec::new();
    let mut records = Vec::new();
    let mut in_place = source == target;
    for (index, record) in batch.records().map_err(record_error)?.enumerate() {
        let record = record.map_err(record_error)?;
        if i64::from(record.offset_delta) != index as i64 {
            // Only rebuilt batches get their inner offsets fixed; uncompressed ones keep
            // what the client wrote, as in Kafka.
            in_place = false;
        }
        if let Some(failure) = validate_record(batch, &record, index, tp, config, now_ms) {
            failures.push(failure);
        }
        if compressed_path {
            records.push(record);
        }
    }
    if !failures.is_empty() {
        return Err(record_errors(failures));
    }
    if !compressed_path || in_place {
        return Ok(Validated::AsSent);
    }
    rebuild(batch, records, target).map(Validated::Rebuilt)
}

/// Kafka's `validateBatch` for a client's v2 batch.
/// `from_client`: a producer's batch (Kafka's append origin CLIENT); a coordinator's own
/// transactional batch carries a producer id with no sequence of its own.
fn validate_batch(
    batch: &RecordBatch,
    tp: &TopicIdPartition,
    from_client: bool,
) -> Result<(), PartitionError> {
    let invalid = |m: String| Err(PartitionError::InvalidRecord(m));
    let base = batch.base_offset();
    let last = base.wrapping_add(i64::from(batch.last_offset_delta()));
    let count_from_offsets = i64::from(batch.last_offset_delta()) + 1;
    if count_from_offsets <= 0 {
        return invalid(format!(
            "Batch has an invalid offset range: [{base}, {last}] in topic partition {}",
            name(tp)
        ));
    }
    let count = batch.record_count();
    if count <= 0 {
        return invalid(format!(
            "Invalid reported count for record batch: {count} in topic partition {}",
            name(tp)
        ));
    }
    if count_from_offsets != i64::from(count) {
        return invalid(format!(
            "Inconsistent batch offset range [{base}, {last}] and count of records {count} in \
             topic partition {}",
            name(tp)
        ));
    }
    if batch.is_control() {
        return invalid(format!(
            "Clients are not allowed to write control records in topic partition {}",
            name(tp)
        ));
    }
    if from_client && batch.producer_id() >= 0 && batch.base_sequence() < 0 {
        return invalid(format!(
            "Invalid sequence number {} in record batch with producerId {} in topic partition {}",
            batch.base_sequence(),
            batch.producer_id(),
            name(tp)
        ));
    }
    Ok(())
}

/// Whether skimming an uncompressed batch finds nothing to report: every record framed
/// within its length, `recordCount` of them, and (on a `CreateTime` topic) each timestamp
/// within the window by the same arithmetic as [`validate_record`]. Anything else goes to
/// the full decode, which reports it record by record.
fn skim_passes(batch: &RecordBatch, config: &LogConfig, create_time: bool, now_ms: i64) -> bool {
    let Some(records) = batch.skim() else {
        return false;
    };
    let base = batch.base_timestamp();
    let mut count = 0i64;
    for record in records {
        let Ok(record) = record else {
            return false;
        };
        count += 1;
        let timestamp = base.wrapping_add(record.timestamp_delta);
        if create_time && !timestamp_in_window(timestamp, config, now_ms) {
            return false;
        }
    }
    count == i64::from(batch.record_count())
}

/// Whether a `CreateTime` record's timestamp lies within `message.timestamp.before.max.ms` /
/// `after.max.ms` of `now_ms`, by Kafka's arithmetic (wrapping as Java's longs do); a
/// record without a timestamp always does.
fn timestamp_in_window(timestamp: i64, config: &LogConfig, now_ms: i64) -> bool {
    let diff = now_ms.wrapping_sub(timestamp);
    timestamp == NO_TIMESTAMP
        || (diff <= config.message_timestamp_before_max_ms
            && diff.wrapping_neg() <= config.message_timestamp_after_max_ms)
}

/// Kafka's `validateRecord` for one record (key first, then timestamp; one error each).
fn validate_record(
    batch: &RecordBatch,
    record: &Record,
    index: usize,
    tp: &TopicIdPartition,
    config: &LogConfig,
    now_ms: i64,
) -> Option<Failure> {
    let fail = |code, message| {
        Some(Failure {
            code,
            error: RecordError {
                batch_index: index as i32,
                message,
            },
        })
    };
    if config.cleanup_policy.compact && record.key.is_none() {
        return fail(
            ErrorCode::InvalidRecord,
            format!(
                "Compacted topic cannot accept message without key in topic partition {}",
                name(tp)
            ),
        );
    }
    let timestamp = record.timestamp(batch);
    if config.message_timestamp_type == TimestampType::CreateTime && timestamp != NO_TIMESTAMP {
        let (before, after) = (
            config.message_timestamp_before_max_ms,
            config.message_timestamp_after_max_ms,
        );
        if !timestamp_in_window(timestamp, config, now_ms) {
            return fail(
                ErrorCode::InvalidTimestamp,
                format!(
                    "Timestamp {timestamp} of message with offset {} is out of range. The \
                     timestamp should be within [{}, {}]",
                    record.offset(batch),
                    now_ms.wrapping_sub(before),
                    now_ms.wrapping_add(after)
                ),
            );
        }
    } else if batch.timestamp_type() == TimestampType::LogAppendTime {
        return fail(
            ErrorCode::InvalidTimestamp,
            format!(
                "Invalid timestamp type in message {}. Producer should not set timestamp type \
                 to LogAppendTime.",
                describe(batch, record)
            ),
        );
    }
    None
}

/// A record as Kafka's `DefaultRecord.toString` shows it.
fn describe(batch: &RecordBatch, record: &Record) -> String {
    let len = |b: &Option<Bytes>| b.as_ref().map_or(0, Bytes::len);
    format!(
        "DefaultRecord(offset={}, timestamp={}, key={} bytes, value={} bytes)",
        record.offset(batch),
        record.timestamp(batch),
        len(&record.key),
        len(&record.value)
    )
}

/// Kafka's `processRecordErrors`: the batch's error and message from its records' errors.
fn record_errors(failures: Vec<Failure>) -> PartitionError {
    let timestamp = failures
        .iter()
        .any(|f| f.code == ErrorCode::InvalidTimestamp);
    let records: Vec<RecordError> = failures.into_iter().map(|f| f.error).collect();
    if timestamp {
        return PartitionError::RecordErrors {
            code: ErrorCode::InvalidTimestamp,
            message: "One or more records have been rejected due to invalid timestamp".into(),
            records,
        };
    }
    let quoted = records
        .iter()
        .take(QUOTED_RECORD_ERRORS)
        .map(|e| {
            format!(
                "RecordError(batchIndex={}, message='{}')",
                e.batch_index, e.message
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    PartitionError::RecordErrors {
        code: ErrorCode::InvalidRecord,
        message: format!(
            "One or more records have been rejected due to {} record errors in total, and only \
             showing the first three errors at most: [{quoted}]",
            records.len()
        ),
        records,
    }
}

/// A failure reading the records: a codec that cannot decompress them is a corrupt batch;
/// records that do not parse, or do not add up to the declared count, are Kafka's
/// `InvalidRecordException` (INVALID_RECORD).
fn record_error(e: RecordBatchError) -> PartitionError {
    match e {
        RecordBatchError::Decompress { .. } | RecordBatchError::DecompressedTooLarge { .. } => {
            PartitionError::CorruptMessage(e.to_string())
        }
        other => PartitionError::InvalidRecord(other.to_string()),
    }
}

/// The batch rebuilt in `target` with consecutive offsets from its base offset (the log
/// stamps the real ones), keeping each record's timestamp, key, value and headers, and the
/// producer fields. The timestamp type stays `CreateTime`: a `LogAppendTime` log stamps
/// the header at append, as for any batch.
fn rebuild(
    batch: &RecordBatch,
    records: Vec<Record>,
    target: Compression,
) -> Result<Bytes, PartitionError> {
    let failed = |e: RecordBatchError| PartitionError::InvalidRecord(e.to_string());
    let mut builder = RecordBatchBuilder::new(batch.base_offset())
        .producer(
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence(),
        )
        .transactional(batch.is_transactional())
        .base_timestamp(batch.base_timestamp())
        .compression(target);
    for record in records {
        let timestamp = record.timestamp(batch);
        builder
            .append(timestamp, record.key, record.value, record.headers)
            .map_err(failed)?;
    }
    builder.build().map_err(failed)
}

/// Kafka's `TopicPartition.toString`.
fn name(tp: &TopicIdPartition) -> String {
    format!("{}-{}", tp.topic, tp.partition)
}
