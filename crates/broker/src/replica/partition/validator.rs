//! Kafka's `LogValidator` record checks on a leader append, past the batch checks (framing,
//! CRC, size, control and transactional flags) in `leader.rs`: every record of a compacted
//! topic must have a key. A failing record refuses the whole batch with INVALID_RECORD and
//! names itself by its index in the batch (`record_errors`), as Kafka's
//! `RecordValidationException` does.

use kraftd_protocol::records::RecordBatch;
use kraftd_protocol::ErrorCode;

use super::{PartitionError, RecordError};
use crate::replica::TopicIdPartition;

/// How many record errors Kafka's message quotes.
const QUOTED_RECORD_ERRORS: usize = 3;

/// Checks the records of `batch` for a partition whose log is `compacted`. Records are read
/// (decompressed if need be) only when a check needs them.
pub(super) fn validate_records(
    batch: &RecordBatch,
    tp: &TopicIdPartition,
    compacted: bool,
) -> Result<(), PartitionError> {
    if !compacted {
        return Ok(());
    }
    let corrupt = |e: &dyn std::fmt::Display| PartitionError::CorruptMessage(e.to_string());
    let mut errors = Vec::new();
    for (index, record) in batch.records().map_err(|e| corrupt(&e))?.enumerate() {
        let record = record.map_err(|e| corrupt(&e))?;
        if record.key.is_none() {
            errors.push(RecordError {
                batch_index: index as i32,
                message: format!(
                    "Compacted topic cannot accept message without key in topic partition {}-{}",
                    tp.topic, tp.partition
                ),
            });
        }
    }
    if errors.is_empty() {
        return Ok(());
    }
    let quoted = errors
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
    Err(PartitionError::RecordErrors {
        code: ErrorCode::InvalidRecord,
        message: format!(
            "One or more records have been rejected due to {} record errors in total, and only \
             showing the first three errors at most: [{quoted}]",
            errors.len()
        ),
        records: errors,
    })
}
