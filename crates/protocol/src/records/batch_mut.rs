//! In-place patching of one batch in a buffer the caller owns ([`RecordBatchMut`]): the fields
//! a broker rewrites on append, without copying or decoding records.

use super::batch::{
    check_header, frame, i16_at, i32_at, i64_at, partial_to_truncated, put_at, u32_at,
    TimestampType, ATTRIBUTES_AT, BASE_OFFSET_AT, CRC_AT, LAST_OFFSET_DELTA_AT, MAX_TIMESTAMP_AT,
    PARTITION_LEADER_EPOCH_AT, RECORD_COUNT_AT, TIMESTAMP_TYPE_BIT,
};
use super::RecordBatchError;

/// A mutable view over one batch in a buffer the caller owns, for the fields a broker
/// rewrites: base offset and partition leader epoch (outside the CRC, so patched without
/// recomputing it), and the log-append-time stamp (inside it, so the CRC is recomputed).
#[derive(Debug)]
pub struct RecordBatchMut<'a> {
    pub(super) buf: &'a mut [u8],
    pub(super) position: usize,
}

impl<'a> RecordBatchMut<'a> {
    /// Views `buf` as exactly one batch, with the same checks as
    /// [`RecordBatch::parse`](super::RecordBatch::parse).
    pub fn new(buf: &'a mut [u8]) -> Result<RecordBatchMut<'a>, RecordBatchError> {
        let size = frame(buf, 0).map_err(partial_to_truncated)?;
        if size < buf.len() {
            return Err(RecordBatchError::TrailingBytes {
                position: 0,
                extra: buf.len() - size,
            });
        }
        check_header(buf, 0)?;
        Ok(RecordBatchMut { buf, position: 0 })
    }

    /// Where this batch started in the buffer it was iterated from.
    pub fn position(&self) -> usize {
        self.position
    }

    /// The batch's bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.buf
    }

    /// The batch's total size: `batchLength` + 12.
    pub fn size_in_bytes(&self) -> usize {
        self.buf.len()
    }

    /// The current base offset.
    pub fn base_offset(&self) -> i64 {
        i64_at(self.buf, BASE_OFFSET_AT)
    }

    /// The current partition leader epoch.
    pub fn partition_leader_epoch(&self) -> i32 {
        i32_at(self.buf, PARTITION_LEADER_EPOCH_AT)
    }

    /// The last offset delta (to advance the next offset past this batch).
    pub fn last_offset_delta(&self) -> i32 {
        i32_at(self.buf, LAST_OFFSET_DELTA_AT)
    }

    /// The declared record count.
    pub fn record_count(&self) -> i32 {
        i32_at(self.buf, RECORD_COUNT_AT)
    }

    /// The stored CRC.
    pub fn crc(&self) -> u32 {
        u32_at(self.buf, CRC_AT)
    }

    /// The CRC32C the stored one should equal.
    pub fn compute_crc(&self) -> u32 {
        crc32c::crc32c(self.buf.get(ATTRIBUTES_AT..).unwrap_or_default())
    }

    /// Sets the base offset (the leader assigns offsets on append). Outside the CRC.
    pub fn set_base_offset(&mut self, base_offset: i64) {
        put_at(self.buf, BASE_OFFSET_AT, base_offset.to_be_bytes());
    }

    /// Sets the partition leader epoch (the leader stamps its epoch on append). Outside the
    /// CRC.
    pub fn set_partition_leader_epoch(&mut self, epoch: i32) {
        put_at(self.buf, PARTITION_LEADER_EPOCH_AT, epoch.to_be_bytes());
    }

    /// Sets the timestamp type and max timestamp (a `LogAppendTime` topic stamps the append
    /// time here), then recomputes the CRC, which covers both. Does nothing, as Kafka's
    /// `setMaxTimestamp`, when both already hold these values.
    pub fn set_max_timestamp(&mut self, timestamp_type: TimestampType, max_timestamp: i64) {
        let attributes = i16_at(self.buf, ATTRIBUTES_AT);
        let current_type = if attributes & TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        };
        if current_type == timestamp_type && i64_at(self.buf, MAX_TIMESTAMP_AT) == max_timestamp {
            return;
        }
        let attributes = match timestamp_type {
            TimestampType::CreateTime => attributes & !TIMESTAMP_TYPE_BIT,
            TimestampType::LogAppendTime => attributes | TIMESTAMP_TYPE_BIT,
        };
        put_at(self.buf, ATTRIBUTES_AT, attributes.to_be_bytes());
        put_at(self.buf, MAX_TIMESTAMP_AT, max_timestamp.to_be_bytes());
        let crc = self.compute_crc();
        put_at(self.buf, CRC_AT, crc.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;
    use crate::records::batch::tests::sample;
    use crate::records::{Compression, RecordBatch};

    #[test]
    fn patching_keeps_crc_valid() {
        let mut buf = BytesMut::from(&sample(Compression::Lz4)[..]);
        let crc = {
            let mut view = RecordBatchMut::new(&mut buf).unwrap();
            view.set_base_offset(1 << 40);
            view.set_partition_leader_epoch(99);
            assert_eq!(view.crc(), view.compute_crc());
            view.crc()
        };
        let batch = RecordBatch::parse(buf.clone().freeze()).unwrap();
        assert_eq!(batch.base_offset(), 1 << 40);
        assert_eq!(batch.partition_leader_epoch(), 99);
        assert_eq!(batch.crc(), crc);
        batch.validate_crc().unwrap();

        let mut view = RecordBatchMut::new(&mut buf).unwrap();
        view.set_max_timestamp(TimestampType::LogAppendTime, 77);
        let batch = RecordBatch::parse(buf.freeze()).unwrap();
        batch.validate_crc().unwrap();
        assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(batch.max_timestamp(), 77);
        for r in batch.records().unwrap() {
            assert_eq!(r.unwrap().timestamp(&batch), 77);
        }
    }
}
