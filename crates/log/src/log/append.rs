//! Appending: as the partition leader ([`Log::append_as_leader`]: validate, assign offsets,
//! stamp the epoch) and as a follower ([`Log::append_as_follower`]: check contiguity and
//! epochs), then storing the checked batches, split across segments as the roll policy says.

use bytes::{Bytes, BytesMut};
use kraftd_protocol::records::{
    Batches, BatchesMut, RecordBatchError, TimestampType, NO_TIMESTAMP,
};

use super::Log;
use crate::error::{LogError, Result};
use crate::segment::BatchInfo;

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    /// The offset of the first record appended (the log end offset before the append).
    pub first_offset: i64,
    /// The offset of the last record appended; below `first_offset` when nothing was
    /// appended (an empty input).
    pub last_offset: i64,
    /// The time stamped on the batches for a `LogAppendTime` log, else -1 (as Kafka's
    /// ProduceResponse reports it).
    pub log_append_time: i64,
    /// The largest batch timestamp appended (-1 when none).
    pub max_timestamp: i64,
    /// How many batches were appended.
    pub batch_count: usize,
    /// How many bytes were appended.
    pub size_in_bytes: usize,
}

/// A run of an append's batches that goes whole into one segment.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: usize,
    end: usize,
    /// Roll to a new segment before writing the run.
    roll_first: bool,
}

/// The batches of one append, checked and described.
struct Checked {
    data: Bytes,
    batches: Vec<BatchInfo>,
    record_count: i64,
}

impl Log {
    /// Appends batches as the partition leader: validates each batch's framing, CRC and
    /// record count, assigns offsets from the log end offset (patching base offsets),
    /// stamps `leader_epoch`, and for a `LogAppendTime` log stamps `now_ms` as the max
    /// timestamp. The whole append goes into one segment (rolling first if needed). On
    /// error nothing is appended (the buffer may have been partly re-stamped).
    pub fn append_as_leader(
        &mut self,
        records: BytesMut,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        let result = self.append_as_leader_unreported(records, leader_epoch, now_ms);
        self.report(result)
    }

    fn append_as_leader_unreported(
        &mut self,
        mut records: BytesMut,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        if leader_epoch < 0 {
            return Err(LogError::InvalidLeaderEpoch {
                epoch: leader_epoch,
            });
        }
        if let Some(latest) = self.epoch_cache.latest_epoch() {
            if leader_epoch < latest {
                return Err(LogError::EpochDecreased {
                    epoch: leader_epoch,
                    latest_epoch: latest,
                });
            }
        }
        // First pass: check everything before changing anything.
        let mut next = self.log_end_offset;
        for batch in BatchesMut::new(&mut records) {
            let batch = batch.map_err(|source| LogError::InvalidBatch {
                position: source_position(&source),
                source,
            })?;
            let position = batch.position();
            let (stored, computed) = (batch.crc(), batch.compute_crc());
            if stored != computed {
                return Err(LogError::InvalidBatch {
                    position,
                    source: RecordBatchError::CrcMismatch {
                        position,
                        stored,
                        computed,
                    },
                });
            }
            let (count, delta) = (batch.record_count(), batch.last_offset_delta());
            if count <= 0 || delta < 0 || i64::from(delta) + 1 != i64::from(count) {
                return Err(LogError::InconsistentRecordCount {
                    position,
                    record_count: count,
                    last_offset_delta: delta,
                });
            }
            if batch.size_in_bytes() > self.config.max_message_bytes {
                return Err(LogError::RecordTooLarge {
                    position,
                    size: batch.size_in_bytes(),
                    max_message_bytes: self.config.max_message_bytes,
                });
            }
            next = next
                .checked_add(i64::from(count))
                .ok_or_else(|| LogError::OffsetOverflow {
                    reason: "offsets past i64::MAX".into(),
                })?;
        }
        if records.len() as u64 > self.config.segment_bytes {
            // Checked again when planning, but before stamping so the buffer is untouched.
            return Err(LogError::AppendTooLarge {
                size: records.len(),
                segment_bytes: self.config.segment_bytes,
            });
        }
        // Second pass: stamp.
        let log_append_time = self.config.message_timestamp_type == TimestampType::LogAppendTime;
        let mut offset = self.log_end_offset;
        for batch in BatchesMut::new(&mut records) {
            let Ok(mut batch) = batch else {
                unreachable!("validated in the first pass");
            };
            batch.set_base_offset(offset);
            batch.set_partition_leader_epoch(leader_epoch);
            if log_append_time {
                batch.set_max_timestamp(TimestampType::LogAppendTime, now_ms);
            }
            offset += i64::from(batch.last_offset_delta()) + 1;
        }
        debug_assert_eq!(offset, next);
        let checked = describe(records.freeze())?;
        let mut info = self.append_checked(checked, true, now_ms)?;
        if log_append_time {
            info.log_append_time = now_ms;
        }
        Ok(info)
    }

    /// Appends batches fetched from the leader, offsets and epochs as the leader assigned
    /// them: each batch must be sound (framing, CRC), start exactly at the log end offset
    /// (then right after the previous batch) — at or past it where the config allows offset
    /// gaps ([`crate::config::LogConfig::allows_offset_gaps`]), as a cleaned leader's log has them — and carry an epoch no lower than the log's
    /// latest. A partial batch at the end of `records` (a fetch response cut at its size
    /// limit) is ignored; everything before it is appended. Batches are split across
    /// segments as `segment.bytes` requires. On error nothing is appended.
    pub fn append_as_follower(&mut self, records: Bytes, now_ms: i64) -> Result<AppendInfo> {
        let result = self.append_as_follower_unreported(records, now_ms);
        self.report(result)
    }

    fn append_as_follower_unreported(&mut self, records: Bytes, now_ms: i64) -> Result<AppendInfo> {
        let mut expected = self.log_end_offset;
        let mut epoch = self.epoch_cache.latest_epoch().unwrap_or(i32::MIN);
        let mut valid_len = 0;
        for batch in Batches::new(records.clone()) {
            let batch = match batch {
                Ok(b) => b,
                Err(e) if e.is_partial_batch() => break,
                Err(source) => {
                    return Err(LogError::InvalidBatch {
                        position: source_position(&source),
                        source,
                    })
                }
            };
            let position = batch.position();
            batch
                .validate_crc()
                .map_err(|source| LogError::InvalidBatch { position, source })?;
            // A compacted leader's log has gaps where the cleaner removed whole batches, and
            // a follower fetching across one gets the next batch past it: Kafka's follower
            // accepts any first offset at or above its log end (`appendAsFollower` only
            // refuses offsets going back). Gaps are accepted where the config allows them
            // (a data partition, or any compacted log), as recovery then accepts them too.
            let gap_ok = self.config.allows_offset_gaps() && batch.base_offset() > expected;
            if batch.base_offset() != expected && !gap_ok {
                return Err(LogError::NonContiguousOffset {
                    position,
                    expected,
                    found: batch.base_offset(),
                });
            }
            if batch.last_offset_delta() < 0 {
                return Err(LogError::InconsistentRecordCount {
                    position,
                    record_count: batch.record_count(),
                    last_offset_delta: batch.last_offset_delta(),
                });
            }
            if batch
                .base_offset()
                .checked_add(i64::from(batch.last_offset_delta()) + 1)
                .is_none()
            {
                return Err(LogError::OffsetOverflow {
                    reason: format!("batch at byte {position} ends past i64::MAX"),
                });
            }
            if batch.partition_leader_epoch() < epoch {
                return Err(LogError::EpochDecreased {
                    epoch: batch.partition_leader_epoch(),
                    latest_epoch: epoch,
                });
            }
            if batch.size_in_bytes() > self.config.max_message_bytes {
                return Err(LogError::RecordTooLarge {
                    position,
                    size: batch.size_in_bytes(),
                    max_message_bytes: self.config.max_message_bytes,
                });
            }
            epoch = batch.partition_leader_epoch();
            expected = batch.next_offset();
            valid_len = position + batch.size_in_bytes();
        }
        let checked = describe(records.slice(..valid_len))?;
        self.append_checked(checked, false, now_ms)
    }

    /// Stores checked batches: rolls as needed, records new epochs (before the data, so
    /// a crash never leaves data whose epoch the cache lacks), writes, applies the flush
    /// policy.
    fn append_checked(
        &mut self,
        checked: Checked,
        one_segment: bool,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        // The first batch's base: the log end, or past it after a follower's gap.
        let first_offset = checked
            .batches
            .first()
            .map_or(self.log_end_offset, |b| b.base_offset);
        let Some(last) = checked.batches.last().copied() else {
            return Ok(AppendInfo {
                first_offset,
                last_offset: first_offset - 1,
                log_append_time: NO_TIMESTAMP,
                max_timestamp: NO_TIMESTAMP,
                batch_count: 0,
                size_in_bytes: 0,
            });
        };
        debug_assert!(first_offset >= self.log_end_offset);
        let runs = self.plan_runs(&checked, one_segment, now_ms)?;
        // Epochs first.
        self.epoch_cache.sync_before_append()?;
        for b in &checked.batches {
            if self.epoch_cache.latest_epoch().is_none_or(|l| b.epoch > l) && b.epoch >= 0 {
                self.epoch_cache.assign(b.epoch, b.base_offset)?;
            }
        }
        for run in &runs {
            let (s, e) = (run.start, run.end);
            let first = checked.batches[s];
            if run.roll_first {
                self.roll()?;
            }
            let from = first.position as usize;
            let to = (checked.batches[e - 1].position + checked.batches[e - 1].size) as usize;
            let infos: Vec<BatchInfo> = checked.batches[s..e]
                .iter()
                .map(|b| BatchInfo {
                    position: b.position - first.position,
                    ..*b
                })
                .collect();
            if let Err(err) = self
                .active_mut()
                .append(&checked.data[from..to], &infos, now_ms)
            {
                self.log_end_offset = self.active().next_offset();
                let _ = self.epoch_cache.truncate_from_end(self.log_end_offset);
                return Err(err);
            }
            self.log_end_offset = self.active().next_offset();
        }
        debug_assert_eq!(self.log_end_offset, last.last_offset + 1);
        if self.producers_loaded {
            self.apply_to_producers(&checked.data, first_offset)?;
            self.producers.set_map_end_offset(self.log_end_offset);
        }
        self.unflushed_records = self.unflushed_records.saturating_add(checked.record_count);
        self.maybe_flush(now_ms)?;
        Ok(AppendInfo {
            first_offset,
            last_offset: last.last_offset,
            log_append_time: NO_TIMESTAMP,
            max_timestamp: checked
                .batches
                .iter()
                .map(|b| b.max_timestamp)
                .max()
                .unwrap_or(NO_TIMESTAMP),
            batch_count: checked.batches.len(),
            size_in_bytes: checked.data.len(),
        })
    }

    /// Splits an append into runs of consecutive batches, each going whole into one
    /// segment, and says which runs start a new segment: the active segment is rolled when
    /// it is old (`segment.ms`), its index is full (`segment.index.bytes`), the run would
    /// push it past `segment.bytes`, or its offsets would not fit the index's `u32`
    /// relative offsets. With `one_segment` (a leader append, as Kafka) the whole append
    /// is one run, or [`LogError::AppendTooLarge`].
    fn plan_runs(&self, checked: &Checked, one_segment: bool, now_ms: i64) -> Result<Vec<Run>> {
        let active = self.active();
        let max_relative = i64::from(i32::MAX);
        let segment_bytes = self.config.segment_bytes;
        let mut roll_next = !active.is_empty()
            && (active.offset_index_bytes() + 8 > self.config.segment_index_bytes
                || active
                    .rolling_base_ms()
                    .is_some_and(|t| now_ms.saturating_sub(t) > self.config.segment_ms));
        let (mut seg_base, mut seg_size) = (active.base_offset(), active.size());
        let overflow = |b: &BatchInfo| LogError::OffsetOverflow {
            reason: format!(
                "offsets {}..={} cannot be indexed in one segment",
                b.base_offset, b.last_offset
            ),
        };
        if one_segment {
            let (Some(first), Some(last)) = (checked.batches.first(), checked.batches.last())
            else {
                return Ok(Vec::new());
            };
            let total = checked.data.len() as u64;
            if total > segment_bytes {
                return Err(LogError::AppendTooLarge {
                    size: checked.data.len(),
                    segment_bytes,
                });
            }
            let roll_first = seg_size > 0
                && (roll_next
                    || seg_size + total > segment_bytes
                    || last.last_offset - seg_base > max_relative);
            if roll_first {
                seg_base = first.base_offset;
            }
            if last.last_offset - seg_base > max_relative {
                return Err(overflow(last));
            }
            return Ok(vec![Run {
                start: 0,
                end: checked.batches.len(),
                roll_first,
            }]);
        }
        let mut runs: Vec<Run> = Vec::new();
        for (i, b) in checked.batches.iter().enumerate() {
            let roll = seg_size > 0
                && (roll_next
                    || seg_size + b.size > segment_bytes
                    || b.last_offset - seg_base > max_relative);
            if roll {
                seg_base = b.base_offset;
                seg_size = 0;
                roll_next = false;
            }
            if b.last_offset - seg_base > max_relative {
                return Err(overflow(b));
            }
            match runs.last_mut() {
                Some(run) if !roll => run.end = i + 1,
                _ => runs.push(Run {
                    start: i,
                    end: i + 1,
                    roll_first: roll,
                }),
            }
            seg_size += b.size;
        }
        Ok(runs)
    }
}

/// Where a batch error happened, for [`LogError::InvalidBatch`].
fn source_position(e: &RecordBatchError) -> usize {
    match e {
        RecordBatchError::Truncated { position, .. }
        | RecordBatchError::PartialBatch { position, .. }
        | RecordBatchError::BatchLengthTooSmall { position, .. }
        | RecordBatchError::TrailingBytes { position, .. }
        | RecordBatchError::UnsupportedMagic { position, .. }
        | RecordBatchError::UnknownCompression { position, .. }
        | RecordBatchError::NegativeRecordCount { position, .. }
        | RecordBatchError::RecordCountImplausible { position, .. }
        | RecordBatchError::CrcMismatch { position, .. } => *position,
        _ => 0,
    }
}

/// Describes already-checked batches (positions within `data`).
fn describe(data: Bytes) -> Result<Checked> {
    let mut batches = Vec::new();
    let mut record_count = 0i64;
    for batch in Batches::new(data.clone()) {
        let batch = batch.map_err(|source| LogError::InvalidBatch {
            position: source_position(&source),
            source,
        })?;
        record_count += i64::from(batch.record_count().max(0));
        batches.push(BatchInfo::of(&batch, batch.position() as u64));
    }
    Ok(Checked {
        data,
        batches,
        record_count,
    })
}
