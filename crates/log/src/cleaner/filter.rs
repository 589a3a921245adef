//! The retention rules of one clean, batch by batch (Kafka's `Cleaner.cleanInto` filter and
//! `MemoryRecords.filterTo`): which records of a batch survive, and how the survivors are
//! written back.
//!
//! - a record above the map's latest offset is kept (the map never saw it);
//! - a keyed record is kept when its offset is at least the one mapped for its key (or the
//!   key is unmapped), and it has a value or its batch's delete horizon has not passed;
//! - a record without a key is dropped (counted as invalid);
//! - a batch whose records are all kept, and that needs no delete horizon, is copied byte
//!   for byte; otherwise the survivors go into a new batch with the same base offset, last
//!   offset delta (so the producer's last sequence survives), producer id, epoch, base
//!   sequence, partition leader epoch, timestamp type and codec. A new batch that keeps a
//!   tombstone and had no delete horizon gets one: `now + delete.retention.ms` (KIP-534:
//!   attributes bit 6, the base timestamp holds it); the next clean after it drops the
//!   tombstone;
//! - a batch left empty is dropped, unless it is its producer's last data batch (idempotent
//!   producer state must survive) or the last batch of the round (so the offset after it is
//!   not lost); then an empty batch with the original's header fields remains.
//!
//! Transactions (a subset of Kafka's `CleanedTransactionMetadata` rules): a transactional
//! batch of an aborted transaction (named by the `.txnindex` entries of the cleaned range) is
//! removed, unless it is its producer's last batch or the round's last, which are kept whole;
//! committed transactional batches and every marker are kept unchanged (Kafka removes a
//! marker once its transaction's data is gone and the delete horizon passed; keeping it is
//! always safe, it costs a batch per transaction).

use bytes::{Bytes, BytesMut};
use kraftd_protocol::records::{
    RecordBatch, RecordBatchBuilder, RecordBatchMut, TimestampType, NO_PRODUCER_ID,
};

use super::offset_map::OffsetMap;
use super::CleanerStats;
use crate::error::{LogError, Result};

/// What the filter knows besides the batch.
pub(crate) struct FilterContext<'a> {
    pub map: &'a mut OffsetMap,
    /// The time of the clean (Kafka's `currentTime`).
    pub now_ms: i64,
    pub delete_retention_ms: i64,
    /// Producer id → last offset of its last data batch in the log, from the owner's
    /// producer state (Kafka's `lastRecordsOfActiveProducers`).
    pub last_batches: &'a std::collections::HashMap<i64, i64>,
    /// The offset after the last batch of the segments being rewritten into one (Kafka keeps
    /// the last batch of the round, `upperBoundOffsetOfCleaningRound`): the batch ending
    /// there is kept, even empty, so a cleaned segment ends exactly where the segments it
    /// replaces ended (recovery of an interrupted swap relies on it).
    pub round_end: i64,
    /// The aborted transactions of the cleaned range.
    pub aborted: &'a [crate::producer_state::AbortedTxn],
}

/// Kafka's aborted-data check: a transactional data batch inside an aborted transaction of
/// its producer (a producer has one transaction open at a time, so the range is exact).
fn is_aborted_data(aborted: &[crate::producer_state::AbortedTxn], batch: &RecordBatch) -> bool {
    batch.is_transactional()
        && !batch.is_control()
        && aborted.iter().any(|t| {
            t.producer_id == batch.producer_id()
                && t.first_offset <= batch.base_offset()
                && batch.last_offset() <= t.last_offset
        })
}

/// Whether a transactional or control batch goes through the data rules. For now every
/// such batch is kept unchanged (`false`): aborted transactions' records and markers are
/// removed with the transactions work, by Kafka's `CleanedTransactionMetadata` rules, here.
/// Their keys are not put in the offset map either, so a value written in a transaction
/// that may have aborted never hides an older committed one.
pub(crate) fn transactional_batch_retention(batch: &RecordBatch) -> bool {
    !(batch.is_control() || batch.is_transactional())
}

/// What survives of `batch`, if anything.
pub(crate) fn filter_batch(
    ctx: &mut FilterContext<'_>,
    batch: &RecordBatch,
    path: &std::path::Path,
    position: u64,
    stats: &mut CleanerStats,
) -> Result<Option<RecordBatch>> {
    let corrupt = |e: kraftd_protocol::records::RecordBatchError| {
        LogError::corrupt(path, position, e.to_string())
    };
    stats.bytes_read += batch.size_in_bytes() as u64;
    // A batch is checked before anything is kept of it: a rebuilt batch gets a fresh CRC,
    // which would launder a bit flip into data that reads as valid. A corrupt batch fails
    // the clean, and the owner marks the log uncleanable.
    batch.validate_crc().map_err(corrupt)?;
    let keep_anyway = batch.next_offset() == ctx.round_end
        || ctx.last_batches.get(&batch.producer_id()) == Some(&batch.last_offset());
    if is_aborted_data(ctx.aborted, batch) && !keep_anyway {
        stats.messages_read += u64::try_from(batch.record_count()).unwrap_or(0);
        return Ok(None);
    }
    if !transactional_batch_retention(batch) {
        stats.messages_read += u64::try_from(batch.record_count()).unwrap_or(0);
        stats.messages_written += u64::try_from(batch.record_count()).unwrap_or(0);
        stats.bytes_written += batch.size_in_bytes() as u64;
        return Ok(Some(batch.clone()));
    }
    let retain_deletes = batch.delete_horizon_ms().is_none_or(|h| ctx.now_ms < h);
    let latest = ctx.map.latest_offset();
    let mut kept = Vec::new();
    let mut all_kept = true;
    let mut tombstones = false;
    for record in batch.records().map_err(corrupt)? {
        let record = record.map_err(corrupt)?;
        stats.messages_read += 1;
        let offset = record.offset(batch);
        let keep = if offset > latest {
            true
        } else if let Some(key) = &record.key {
            let newest = ctx.map.get(key).is_none_or(|mapped| offset >= mapped);
            newest && (record.value.is_some() || retain_deletes)
        } else {
            stats.invalid_messages_read += 1;
            false
        };
        if keep {
            tombstones |= record.value.is_none();
            kept.push(record);
        } else {
            all_kept = false;
        }
    }
    stats.messages_written += kept.len() as u64;
    let needs_horizon = tombstones && !batch.has_delete_horizon();
    let written = if kept.is_empty() {
        let producers_last = batch.producer_id() != NO_PRODUCER_ID
            && ctx.last_batches.get(&batch.producer_id()) == Some(&batch.last_offset());
        if !(producers_last || batch.next_offset() == ctx.round_end) {
            return Ok(None);
        }
        empty_batch(batch)?
    } else if all_kept && !needs_horizon {
        batch.as_bytes().clone()
    } else {
        let horizon = if needs_horizon {
            Some(ctx.now_ms.saturating_add(ctx.delete_retention_ms))
        } else {
            batch.delete_horizon_ms()
        };
        rebuild(batch, kept, horizon)?
    };
    stats.bytes_written += written.len() as u64;
    RecordBatch::parse(written)
        .map(Some)
        .map_err(|e| build_error(batch, e))
}

/// The header fields a rewritten batch keeps (Kafka's `buildRetainedRecordsInto`).
fn builder_like(batch: &RecordBatch) -> RecordBatchBuilder {
    let builder = RecordBatchBuilder::new(batch.base_offset())
        .partition_leader_epoch(batch.partition_leader_epoch())
        .producer(
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence(),
        )
        .transactional(batch.is_transactional())
        .control(batch.is_control());
    match batch.timestamp_type() {
        TimestampType::LogAppendTime => builder.log_append_time(batch.max_timestamp()),
        TimestampType::CreateTime => builder,
    }
}

fn rebuild(
    batch: &RecordBatch,
    kept: Vec<kraftd_protocol::records::Record>,
    horizon: Option<i64>,
) -> Result<Bytes> {
    let mut builder = builder_like(batch).compression(batch.compression());
    if let Some(h) = horizon {
        builder = builder.delete_horizon(h);
    }
    for record in kept {
        let offset = record.offset(batch);
        let timestamp = record.timestamp(batch);
        builder
            .append_with_offset(offset, timestamp, record.key, record.value, record.headers)
            .map_err(|e| build_error(batch, e))?;
    }
    let built = builder.build().map_err(|e| build_error(batch, e))?;
    Ok(with_last_offset_delta(built, batch.last_offset_delta()))
}

/// Kafka's `writeEmptyHeader`: no records, no codec, no base timestamp, the original's
/// last offset delta and max timestamp.
fn empty_batch(batch: &RecordBatch) -> Result<Bytes> {
    let built = builder_like(batch)
        .build()
        .map_err(|e| build_error(batch, e))?;
    let mut bytes = BytesMut::from(&with_last_offset_delta(built, batch.last_offset_delta())[..]);
    let mut view = RecordBatchMut::new(&mut bytes).map_err(|e| build_error(batch, e))?;
    view.set_max_timestamp(batch.timestamp_type(), batch.max_timestamp());
    Ok(bytes.freeze())
}

fn build_error(batch: &RecordBatch, e: kraftd_protocol::records::RecordBatchError) -> LogError {
    LogError::OffsetOverflow {
        reason: format!(
            "rewriting the batch at offset {} failed: {e}",
            batch.base_offset()
        ),
    }
}

/// Where a v2 batch keeps its last offset delta, and where its CRC starts and what it
/// covers: the builder writes the delta of its last record, a compacted batch keeps its
/// original's (Kafka's `overrideLastOffset`), so the field is set here and the CRC redone.
const LAST_OFFSET_DELTA_AT: usize = 23;
const CRC_AT: usize = 17;
const CRC_FROM: usize = 21;

fn with_last_offset_delta(built: Bytes, last_offset_delta: i32) -> Bytes {
    let mut bytes = BytesMut::from(&built[..]);
    bytes[LAST_OFFSET_DELTA_AT..LAST_OFFSET_DELTA_AT + 4]
        .copy_from_slice(&last_offset_delta.to_be_bytes());
    let crc = crc32c::crc32c(&bytes[CRC_FROM..]);
    bytes[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    bytes.freeze()
}
