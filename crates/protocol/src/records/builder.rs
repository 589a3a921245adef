//! Writing a new v2 batch ([`RecordBatchBuilder`]): client tools, control batches and KRaft's
//! own log.

use bytes::{BufMut, Bytes, BytesMut};

use super::batch::{
    put_at, TimestampType, ATTRIBUTES_AT, BASE_OFFSET_AT, BASE_SEQUENCE_AT, BASE_TIMESTAMP_AT,
    BATCH_HEADER_SIZE, BATCH_LENGTH_AT, BATCH_OVERHEAD, CONTROL_BIT, CRC_AT, CURRENT_MAGIC,
    DELETE_HORIZON_BIT, LAST_OFFSET_DELTA_AT, MAGIC_AT, MAX_TIMESTAMP_AT,
    NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP,
    PARTITION_LEADER_EPOCH_AT, PRODUCER_EPOCH_AT, PRODUCER_ID_AT, RECORD_COUNT_AT,
    TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT,
};
use super::compression::{self, Compression};
use super::record::{Header, Record};
use super::RecordBatchError;
use crate::codec::Encoder;

/// A record waiting in a [`RecordBatchBuilder`].
#[derive(Debug, Clone)]
struct Pending {
    offset_delta: i32,
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
    headers: Vec<Header>,
}

/// Writes one v2 batch: set the header fields, append records, [`build`](Self::build).
///
/// Derived fields are computed as Kafka's `MemoryRecordsBuilder` does: the base timestamp is
/// the first record's (unless set), the max timestamp the largest (or the log append time),
/// `lastOffsetDelta` the last record's offset delta, and the CRC32C over the finished bytes.
#[derive(Debug, Clone)]
pub struct RecordBatchBuilder {
    base_offset: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    control: bool,
    timestamp_type: TimestampType,
    log_append_time: Option<i64>,
    base_timestamp: Option<i64>,
    delete_horizon: bool,
    compression: Compression,
    records: Vec<Pending>,
}

impl RecordBatchBuilder {
    /// A builder for a batch whose first offset is `base_offset` (clients write 0; the
    /// leader re-stamps it), with no producer, no leader epoch, `CreateTime`, no compression.
    pub fn new(base_offset: i64) -> Self {
        RecordBatchBuilder {
            base_offset,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            transactional: false,
            control: false,
            timestamp_type: TimestampType::CreateTime,
            log_append_time: None,
            base_timestamp: None,
            delete_horizon: false,
            compression: Compression::None,
            records: Vec::new(),
        }
    }

    /// The partition leader epoch to stamp.
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// The idempotent producer's id and epoch, and the first record's sequence number.
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Marks the batch as part of a transaction.
    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }

    /// Marks the batch as holding control records (see [`super::ControlRecordType`]).
    pub fn control(mut self, control: bool) -> Self {
        self.control = control;
        self
    }

    /// What the timestamps mean. With `LogAppendTime` and no
    /// [`log_append_time`](Self::log_append_time), record timestamps are written as given.
    pub fn timestamp_type(mut self, timestamp_type: TimestampType) -> Self {
        self.timestamp_type = timestamp_type;
        self
    }

    /// Stamps the batch as the broker does for a `LogAppendTime` topic: the type becomes
    /// `LogAppendTime` and every record's timestamp, and the max timestamp, become `time`.
    pub fn log_append_time(mut self, time: i64) -> Self {
        self.timestamp_type = TimestampType::LogAppendTime;
        self.log_append_time = Some(time);
        self
    }

    /// The timestamp deltas are relative to, instead of the first record's timestamp (to
    /// reproduce another writer's bytes, or re-encode a batch's records unchanged).
    pub fn base_timestamp(mut self, base_timestamp: i64) -> Self {
        self.base_timestamp = Some(base_timestamp);
        self
    }

    /// Sets the delete horizon (attributes bit 6), which Kafka stores as the base timestamp.
    pub fn delete_horizon(mut self, delete_horizon_ms: i64) -> Self {
        self.delete_horizon = true;
        self.base_timestamp = Some(delete_horizon_ms);
        self
    }

    /// The codec for the records section.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// How many records were appended.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no record was appended.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The offset the next [`append`](Self::append) would get.
    pub fn next_offset(&self) -> i64 {
        match self.records.last() {
            None => self.base_offset,
            Some(last) => self
                .base_offset
                .wrapping_add(i64::from(last.offset_delta))
                .wrapping_add(1),
        }
    }

    /// Appends a record at the next offset and returns that offset.
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<Bytes>,
        value: Option<Bytes>,
        headers: Vec<Header>,
    ) -> Result<i64, RecordBatchError> {
        let offset = self.next_offset();
        self.append_with_offset(offset, timestamp, key, value, headers)?;
        Ok(offset)
    }

    /// Appends a record at `offset`, which must be above the previous record's (gaps are
    /// allowed, as in compacted batches) and within `int32` of the base offset.
    pub fn append_with_offset(
        &mut self,
        offset: i64,
        timestamp: i64,
        key: Option<Bytes>,
        value: Option<Bytes>,
        headers: Vec<Header>,
    ) -> Result<(), RecordBatchError> {
        let out_of_range = RecordBatchError::OffsetDeltaOutOfRange {
            offset,
            base_offset: self.base_offset,
        };
        let delta = offset
            .checked_sub(self.base_offset)
            .ok_or(out_of_range.clone())?;
        let delta = i32::try_from(delta).map_err(|_| out_of_range.clone())?;
        if delta < 0 {
            return Err(out_of_range);
        }
        if let Some(last) = self.records.last() {
            if delta <= last.offset_delta {
                return Err(RecordBatchError::OffsetNotIncreasing {
                    offset,
                    previous: self.base_offset.wrapping_add(i64::from(last.offset_delta)),
                });
            }
        }
        self.records.push(Pending {
            offset_delta: delta,
            timestamp,
            key,
            value,
            headers,
        });
        Ok(())
    }

    /// Writes the batch. An empty builder gives a valid batch with no records (as the log
    /// cleaner keeps to preserve producer state), both timestamps [`NO_TIMESTAMP`].
    pub fn build(self) -> Result<Bytes, RecordBatchError> {
        let stamp = |t: i64| self.log_append_time.unwrap_or(t);
        let base_timestamp = self
            .base_timestamp
            .or_else(|| self.records.first().map(|r| stamp(r.timestamp)))
            .unwrap_or(NO_TIMESTAMP);
        let max_timestamp = match self.log_append_time {
            Some(t) => t,
            None => self
                .records
                .iter()
                .map(|r| r.timestamp)
                .max()
                .unwrap_or(NO_TIMESTAMP),
        };
        let last_offset_delta = self.records.last().map_or(0, |r| r.offset_delta);
        let record_count =
            i32::try_from(self.records.len()).map_err(|_| RecordBatchError::TooLarge {
                field: "recordCount",
                len: self.records.len(),
            })?;

        let mut enc = Encoder::new();
        if self.compression == Compression::None {
            enc.put_slice(&[0; BATCH_HEADER_SIZE]);
        }
        for p in self.records {
            let timestamp = self.log_append_time.unwrap_or(p.timestamp);
            let timestamp_delta = timestamp.checked_sub(base_timestamp).ok_or(
                RecordBatchError::TimestampDeltaOutOfRange {
                    timestamp,
                    base_timestamp,
                },
            )?;
            Record {
                attributes: 0,
                timestamp_delta,
                offset_delta: p.offset_delta,
                key: p.key,
                value: p.value,
                headers: p.headers,
            }
            .encode(&mut enc)?;
        }
        let mut out = if self.compression == Compression::None {
            BytesMut::from(enc.into_bytes())
        } else {
            let plain = enc.into_bytes();
            let mut out = BytesMut::with_capacity(BATCH_HEADER_SIZE + plain.len() / 2);
            out.put_bytes(0, BATCH_HEADER_SIZE);
            compression::compress(self.compression, &plain, &mut out)?;
            out
        };

        let batch_length =
            i32::try_from(out.len() - BATCH_OVERHEAD).map_err(|_| RecordBatchError::TooLarge {
                field: "batch",
                len: out.len(),
            })?;
        let mut attributes = i16::from(self.compression.id());
        if self.timestamp_type == TimestampType::LogAppendTime {
            attributes |= TIMESTAMP_TYPE_BIT;
        }
        if self.transactional {
            attributes |= TRANSACTIONAL_BIT;
        }
        if self.control {
            attributes |= CONTROL_BIT;
        }
        if self.delete_horizon {
            attributes |= DELETE_HORIZON_BIT;
        }
        let header = &mut out[..];
        put_at(header, BASE_OFFSET_AT, self.base_offset.to_be_bytes());
        put_at(header, BATCH_LENGTH_AT, batch_length.to_be_bytes());
        put_at(
            header,
            PARTITION_LEADER_EPOCH_AT,
            self.partition_leader_epoch.to_be_bytes(),
        );
        put_at(header, MAGIC_AT, CURRENT_MAGIC.to_be_bytes());
        put_at(header, ATTRIBUTES_AT, attributes.to_be_bytes());
        put_at(
            header,
            LAST_OFFSET_DELTA_AT,
            last_offset_delta.to_be_bytes(),
        );
        put_at(header, BASE_TIMESTAMP_AT, base_timestamp.to_be_bytes());
        put_at(header, MAX_TIMESTAMP_AT, max_timestamp.to_be_bytes());
        put_at(header, PRODUCER_ID_AT, self.producer_id.to_be_bytes());
        put_at(header, PRODUCER_EPOCH_AT, self.producer_epoch.to_be_bytes());
        put_at(header, BASE_SEQUENCE_AT, self.base_sequence.to_be_bytes());
        put_at(header, RECORD_COUNT_AT, record_count.to_be_bytes());
        let crc = crc32c::crc32c(header.get(ATTRIBUTES_AT..).unwrap_or_default());
        put_at(header, CRC_AT, crc.to_be_bytes());
        Ok(out.freeze())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::RecordBatch;

    #[test]
    fn empty_batch_is_valid() {
        let bytes = RecordBatchBuilder::new(5).build().unwrap();
        assert_eq!(bytes.len(), BATCH_HEADER_SIZE);
        let batch = RecordBatch::parse(bytes).unwrap();
        batch.validate_crc().unwrap();
        assert_eq!(batch.record_count(), 0);
        assert_eq!(batch.base_timestamp(), NO_TIMESTAMP);
        assert_eq!(batch.records().unwrap().count(), 0);
    }

    #[test]
    fn builder_rejects_bad_offsets() {
        let mut b = RecordBatchBuilder::new(10);
        assert!(matches!(
            b.append_with_offset(9, 0, None, None, vec![]),
            Err(RecordBatchError::OffsetDeltaOutOfRange { .. })
        ));
        assert!(matches!(
            b.append_with_offset(10 + (1 << 31), 0, None, None, vec![]),
            Err(RecordBatchError::OffsetDeltaOutOfRange { .. })
        ));
        b.append_with_offset(12, 0, None, None, vec![]).unwrap();
        assert!(matches!(
            b.append_with_offset(12, 0, None, None, vec![]),
            Err(RecordBatchError::OffsetNotIncreasing { .. })
        ));
        let mut b = RecordBatchBuilder::new(0).base_timestamp(i64::MIN);
        b.append(i64::MAX, None, None, vec![]).unwrap();
        assert!(matches!(
            b.build(),
            Err(RecordBatchError::TimestampDeltaOutOfRange { .. })
        ));
    }

    #[test]
    fn attribute_bits() {
        let mut b = RecordBatchBuilder::new(0)
            .transactional(true)
            .control(true)
            .delete_horizon(123)
            .log_append_time(456)
            .compression(Compression::Zstd);
        b.append(1, None, None, vec![]).unwrap();
        let batch = RecordBatch::parse(b.build().unwrap()).unwrap();
        assert_eq!(batch.attributes(), 4 | 0x08 | 0x10 | 0x20 | 0x40);
        assert!(batch.is_transactional() && batch.is_control());
        assert_eq!(batch.delete_horizon_ms(), Some(123));
        assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(batch.max_timestamp(), 456);
    }
}
