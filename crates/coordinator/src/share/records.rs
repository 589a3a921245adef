//! A record of `__share_group_state` as the share shard writes and replays it (Kafka's
//! `ShareCoordinatorRecordHelpers`): a ShareSnapshot (the whole state of one share
//! partition), a ShareUpdate (what one write changed, replayed onto the last snapshot), or a
//! ShareSnapshot tombstone (the share partition's state deleted). Both values are written at
//! version 0. The bytes are Kafka's (`kraftd_protocol`'s generated coordinator records), so
//! Kafka and kraftd read each other's share state topic.

use bytes::Bytes;
use kraftd_protocol::codec::{DecodeResult, EncodeError};
use kraftd_protocol::coordinator::{
    ShareSnapshotKey, ShareSnapshotValue, ShareUpdateKey, ShareUpdateValue,
};
use kraftd_protocol::{ShareCoordinatorRecordKey, ShareCoordinatorRecordValue, Uuid};

use super::offset::{PersisterStateBatch, ShareGroupOffset};
use super::SharePartitionKey;

/// The version both value types are written at, as Kafka writes them.
const VALUE_VERSION: i16 = 0;

/// One `__share_group_state` record.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareCoordinatorRecord {
    pub key: ShareCoordinatorRecordKey,
    /// The value and its version; `None` is a tombstone.
    pub value: Option<(ShareCoordinatorRecordValue, i16)>,
}

impl ShareCoordinatorRecord {
    /// A ShareSnapshot holding `offset` whole.
    pub fn snapshot(key: &SharePartitionKey, offset: &ShareGroupOffset) -> Self {
        let value = ShareSnapshotValue {
            snapshot_epoch: offset.snapshot_epoch,
            state_epoch: offset.state_epoch,
            leader_epoch: offset.leader_epoch,
            start_offset: offset.start_offset,
            delivery_complete_count: offset.delivery_complete_count,
            create_timestamp: offset.create_timestamp,
            write_timestamp: offset.write_timestamp,
            state_batches: offset.state_batches.iter().map(Into::into).collect(),
            ..Default::default()
        };
        ShareCoordinatorRecord {
            key: Self::snapshot_key(key),
            value: Some((
                ShareCoordinatorRecordValue::ShareSnapshot(value),
                VALUE_VERSION,
            )),
        }
    }

    /// A ShareUpdate: `offset`'s snapshot epoch, leader epoch, start offset, delivery
    /// complete count and batches (its state epoch and timestamps are not written).
    pub fn update(key: &SharePartitionKey, offset: &ShareGroupOffset) -> Self {
        let value = ShareUpdateValue {
            snapshot_epoch: offset.snapshot_epoch,
            leader_epoch: offset.leader_epoch,
            start_offset: offset.start_offset,
            delivery_complete_count: offset.delivery_complete_count,
            state_batches: offset.state_batches.iter().map(Into::into).collect(),
            ..Default::default()
        };
        ShareCoordinatorRecord {
            key: ShareCoordinatorRecordKey::ShareUpdate(ShareUpdateKey {
                group_id: key.group_id.clone(),
                topic_id: key.topic_id,
                partition: key.partition,
            }),
            value: Some((
                ShareCoordinatorRecordValue::ShareUpdate(value),
                VALUE_VERSION,
            )),
        }
    }

    /// The tombstone deleting a share partition's state (always of the snapshot type, as
    /// Kafka writes it).
    pub fn tombstone(key: &SharePartitionKey) -> Self {
        ShareCoordinatorRecord {
            key: Self::snapshot_key(key),
            value: None,
        }
    }

    fn snapshot_key(key: &SharePartitionKey) -> ShareCoordinatorRecordKey {
        ShareCoordinatorRecordKey::ShareSnapshot(ShareSnapshotKey {
            group_id: key.group_id.clone(),
            topic_id: key.topic_id,
            partition: key.partition,
        })
    }

    /// The share partition the record is about.
    pub fn share_partition_key(&self) -> SharePartitionKey {
        let (group_id, topic_id, partition): (&str, Uuid, i32) = match &self.key {
            ShareCoordinatorRecordKey::ShareSnapshot(k) => (&k.group_id, k.topic_id, k.partition),
            ShareCoordinatorRecordKey::ShareUpdate(k) => (&k.group_id, k.topic_id, k.partition),
        };
        SharePartitionKey::new(group_id, topic_id, partition)
    }

    /// The record's key and value bytes, as Kafka's share coordinator writes them.
    pub fn encode(&self) -> Result<(Bytes, Option<Bytes>), EncodeError> {
        let key = self.key.to_record_key()?;
        let value = match &self.value {
            Some((v, version)) => ShareCoordinatorRecordValue::to_record_value(Some(v), *version)?,
            None => None,
        };
        Ok((key, value))
    }

    /// Reads a record's key and value bytes.
    pub fn decode(key: Bytes, value: Option<Bytes>) -> DecodeResult<Self> {
        let key = ShareCoordinatorRecordKey::from_record_key(key)?;
        let value = ShareCoordinatorRecordValue::from_record_value(key.key(), value)?;
        Ok(ShareCoordinatorRecord { key, value })
    }
}

/// A snapshot value's state, as the shard keeps it (Kafka's `ShareGroupOffset.fromRecord`).
pub fn offset_from_snapshot(v: &ShareSnapshotValue) -> ShareGroupOffset {
    ShareGroupOffset {
        snapshot_epoch: v.snapshot_epoch,
        state_epoch: v.state_epoch,
        leader_epoch: v.leader_epoch,
        start_offset: v.start_offset,
        delivery_complete_count: v.delivery_complete_count,
        state_batches: v
            .state_batches
            .iter()
            .map(PersisterStateBatch::from)
            .collect(),
        create_timestamp: v.create_timestamp,
        write_timestamp: v.write_timestamp,
    }
}

/// An update value's batches.
pub fn update_batches(v: &ShareUpdateValue) -> Vec<PersisterStateBatch> {
    v.state_batches
        .iter()
        .map(PersisterStateBatch::from)
        .collect()
}
