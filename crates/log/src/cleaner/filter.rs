//! The retention rules of one clean, batch by batch (Kafka's `Cleaner.cleanInto` filter and
//! `MemoryRecords.filterTo`): which batches and records survive, and how the survivors are
//! written back.
//!
//! First the batch goes through the transaction walk ([`CleanedTxns`], Kafka's
//! `CleanedTransactionMetadata`, see `txn.rs`), which says whether it is *discardable*: a
//! data batch of an aborted transaction, or a marker whose transaction has no data left.
//! Its records are then all dropped when it is discardable data, or a discardable marker
//! whose delete horizon has passed (`horizon <= now`). Otherwise:
//!
//! - a marker's records are kept;
//! - a data record above the map's latest offset is kept (the map never saw it);
//! - a keyed data record is kept when its offset is at least the one mapped for its key (or
//!   the key is unmapped), and it has a value or its batch's delete horizon has not passed;
//!   committed transactional records are compacted like any others;
//! - a data record without a key is dropped (counted as invalid).
//!
//! What is written:
//!
//! - a batch whose records are all kept, and that needs no delete horizon, is copied byte
//!   for byte; otherwise the survivors go into a new batch with the same base offset, last
//!   offset delta (so the producer's last sequence survives), producer id, epoch, base
//!   sequence, partition leader epoch, timestamp type, codec and transactional/control
//!   flags. A batch that keeps a tombstone, or a discardable marker, and had no delete
//!   horizon gets one: `now + delete.retention.ms` (KIP-534: attributes bit 6, the base
//!   timestamp holds it). The next clean after it drops the tombstone or the marker;
//! - a batch left with no record is dropped, unless it is its producer's last (its last
//!   data batch, or — for a producer with no data batch in its state — a marker of its
//!   current epoch: idempotent and fencing state must survive) or the last batch of the
//!   round (so the offset after it is not lost); then an empty batch with the original's
//!   header fields remains (Kafka's `RETAIN_EMPTY`). An aborted producer's last batch is
//!   kept emptied, and keeps its marker and `.txnindex` entry alive.

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};
use kraftd_protocol::records::{
    RecordBatch, RecordBatchBuilder, RecordBatchMut, TimestampType, NO_PRODUCER_ID,
};

use super::offset_map::OffsetMap;
use super::txn::CleanedTxns;
use super::CleanerStats;
use crate::error::{LogError, Result};

/// What the filter knows besides the batch.
pub(crate) struct FilterContext<'a> {
    pub map: &'a mut OffsetMap,
    /// The time of the clean (Kafka's `currentTime`).
    pub now_ms: i64,
    pub delete_retention_ms: i64,
    /// Producer id → last offset of its last data batch in the log, from the owner's
    /// producer state (Kafka's `lastRecordsOfActiveProducers` with a last data offset).
    pub last_batches: &'a HashMap<i64, i64>,
    /// Producer id → epoch, for the active producers with no data batch in their state
    /// (Kafka's `lastRecordsOfActiveProducers` without one): their markers of that epoch
    /// are kept, even emptied, so the epoch survives for fencing.
    pub last_markers: &'a HashMap<i64, i16>,
    /// The offset after the last batch of the segments being rewritten into one (Kafka keeps
    /// the last batch of the round, `upperBoundOffsetOfCleaningRound`): the batch ending
    /// there is kept, even empty, so a cleaned segment ends exactly where the segments it
    /// replaces ended (recovery of an interrupted swap relies on it).
    pub round_end: i64,
    /// The transaction walk, carried across the groups of the clean.
    pub txns: &'a mut CleanedTxns,
}

/// Kafka's `isBatchLastRecordOfProducer`.
fn is_producers_last(ctx: &FilterContext<'_>, batch: &RecordBatch) -> bool {
    let pid = batch.producer_id();
    if pid == NO_PRODUCER_ID {
        return false;
    }
    match ctx.last_batches.get(&pid) {
        Some(&last) => batch.last_offset() == last,
        None => batch.is_control() && ctx.last_markers.get(&pid) == Some(&batch.producer_epoch()),
    }
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
    let mut records = Vec::new();
    for record in batch.records().map_err(corrupt)? {
        records.push(record.map_err(corrupt)?);
    }
    stats.messages_read += records.len() as u64;
    // Kafka's `checkBatchRetention`.
    let discardable = if batch.is_control() {
        let first_key = records.first().map(|r| r.key.as_deref());
        ctx.txns.on_control(batch, first_key)
    } else {
        ctx.txns.on_batch(batch)
    };
    let discard_records = if batch.is_control() {
        discardable && batch.delete_horizon_ms().is_some_and(|h| h <= ctx.now_ms)
    } else {
        discardable
    };
    let retain_empty = is_producers_last(ctx, batch) || batch.next_offset() == ctx.round_end;
    if discard_records && !retain_empty {
        return Ok(None);
    }
    let marker_of_empty_txn = discardable && batch.is_control();
    let retain_deletes = batch.delete_horizon_ms().is_none_or(|h| ctx.now_ms < h);
    let latest = ctx.map.latest_offset();
    let total = records.len();
    let mut kept = Vec::new();
    let mut tombstones = false;
    for record in records {
        let keep = if discard_records {
            false
        } else if batch.is_control() {
            true
        } else {
            let offset = record.offset(batch);
            if offset > latest {
                true
            } else if let Some(key) = &record.key {
                let newest = ctx.map.get(key).is_none_or(|mapped| offset >= mapped);
                newest && (record.value.is_some() || retain_deletes)
            } else {
                stats.invalid_messages_read += 1;
                false
            }
        };
        if keep {
            tombstones |= record.value.is_none();
            kept.push(record);
        }
    }
    stats.messages_written += kept.len() as u64;
    let all_kept = kept.len() == total;
    let needs_horizon = (tombstones || marker_of_empty_txn) && !batch.has_delete_horizon();
    let written = if kept.is_empty() {
        if !retain_empty {
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
