//! A record of `__consumer_offsets` as the shard writes and replays it: a typed key and an
//! optional typed value (none is a tombstone) with the version it is written at. The bytes
//! are Kafka's (`kraftd_protocol`'s generated coordinator records), so Kafka and kraftd read
//! each other's offsets topic.

use bytes::Bytes;
use kraftd_protocol::codec::{DecodeResult, EncodeError};
use kraftd_protocol::{
    GroupCoordinatorRecordKey, GroupCoordinatorRecordType, GroupCoordinatorRecordValue,
};

/// One coordinator record.
#[derive(Debug, Clone, PartialEq)]
pub struct CoordinatorRecord {
    pub key: GroupCoordinatorRecordKey,
    /// The value and its version; `None` is a tombstone.
    pub value: Option<(GroupCoordinatorRecordValue, i16)>,
}

impl CoordinatorRecord {
    /// A record with a value at `version`.
    pub fn new(
        key: GroupCoordinatorRecordKey,
        value: GroupCoordinatorRecordValue,
        version: i16,
    ) -> Self {
        CoordinatorRecord {
            key,
            value: Some((value, version)),
        }
    }

    /// A tombstone for `key`.
    pub fn tombstone(key: GroupCoordinatorRecordKey) -> Self {
        CoordinatorRecord { key, value: None }
    }

    pub fn record_type(&self) -> GroupCoordinatorRecordType {
        self.key.key()
    }

    /// The record's key and value bytes, as Kafka's `CoordinatorRecordSerde` writes them.
    pub fn encode(&self) -> Result<(Bytes, Option<Bytes>), EncodeError> {
        let key = self.key.to_record_key()?;
        let value = match &self.value {
            Some((v, version)) => GroupCoordinatorRecordValue::to_record_value(Some(v), *version)?,
            None => None,
        };
        Ok((key, value))
    }

    /// Reads a record's key and value bytes.
    pub fn decode(key: Bytes, value: Option<Bytes>) -> DecodeResult<Self> {
        let key = GroupCoordinatorRecordKey::from_record_key(key)?;
        let value = GroupCoordinatorRecordValue::from_record_value(key.key(), value)?;
        Ok(CoordinatorRecord { key, value })
    }
}
