//! A record of `__transaction_state` as the shard writes and replays it: a
//! `TransactionLogKey` and an optional `TransactionLogValue` (none is a tombstone) with the
//! version it is written at. The bytes are Kafka's (`kraftd_protocol`'s generated coordinator
//! records), so Kafka and kraftd read each other's transaction state topic.
//!
//! As Kafka's `TransactionLog`: an Empty transaction is written without partitions (null),
//! the value's tagged fields (previous/next producer id, client transaction version) are
//! written at version 1, which a cluster at transaction version 2 uses, else version 0; the
//! last producer epoch is not written.

use std::collections::BTreeSet;

use bytes::Bytes;
use kraftd_protocol::codec::{DecodeResult, EncodeError};
use kraftd_protocol::coordinator::transaction_log_value::PartitionsSchema;
use kraftd_protocol::coordinator::{TransactionLogKey, TransactionLogValue};
use kraftd_protocol::{TransactionCoordinatorRecordKey, TransactionCoordinatorRecordValue};

use super::metadata::{TransactionMetadata, TxnState, NO_PRODUCER_EPOCH, TV_2};

/// One `__transaction_state` record.
#[derive(Debug, Clone, PartialEq)]
pub struct TransactionRecord {
    pub key: TransactionCoordinatorRecordKey,
    /// The value and its version; `None` is a tombstone.
    pub value: Option<(TransactionCoordinatorRecordValue, i16)>,
}

impl TransactionRecord {
    /// The record Kafka writes for `metadata`, at the value version of the cluster's
    /// transaction version `tv_level`.
    pub fn from_metadata(metadata: &TransactionMetadata, tv_level: i16) -> Self {
        let partitions = (metadata.state != TxnState::Empty).then(|| {
            metadata
                .partitions_by_topic()
                .into_iter()
                .map(|(topic, partition_ids)| PartitionsSchema {
                    topic,
                    partition_ids,
                    ..Default::default()
                })
                .collect()
        });
        let version = if tv_level >= TV_2 { 1 } else { 0 };
        let mut value = TransactionLogValue {
            producer_id: metadata.producer_id,
            producer_epoch: metadata.producer_epoch,
            transaction_timeout_ms: metadata.txn_timeout_ms,
            transaction_status: metadata.state.id(),
            transaction_partitions: partitions,
            transaction_last_update_timestamp_ms: metadata.txn_last_update_timestamp,
            transaction_start_timestamp_ms: metadata.txn_start_timestamp,
            client_transaction_version: metadata.client_transaction_version,
            ..Default::default()
        };
        if version >= 1 {
            value.previous_producer_id = metadata.prev_producer_id;
            value.next_producer_id = metadata.next_producer_id;
        }
        TransactionRecord {
            key: Self::key(&metadata.transactional_id),
            value: Some((
                TransactionCoordinatorRecordValue::TransactionLog(value),
                version,
            )),
        }
    }

    /// The tombstone removing a transactional id.
    pub fn tombstone(transactional_id: &str) -> Self {
        TransactionRecord {
            key: Self::key(transactional_id),
            value: None,
        }
    }

    fn key(transactional_id: &str) -> TransactionCoordinatorRecordKey {
        TransactionCoordinatorRecordKey::TransactionLog(TransactionLogKey {
            transactional_id: transactional_id.to_string(),
        })
    }

    pub fn transactional_id(&self) -> &str {
        match &self.key {
            TransactionCoordinatorRecordKey::TransactionLog(k) => &k.transactional_id,
        }
    }

    /// The metadata a value describes (Kafka's `TransactionLog.read`); `None` for a
    /// tombstone, an error for a status id Kafka does not know.
    pub fn to_metadata(&self) -> Result<Option<TransactionMetadata>, String> {
        let Some((TransactionCoordinatorRecordValue::TransactionLog(v), _)) = &self.value else {
            return Ok(None);
        };
        let state = TxnState::from_id(v.transaction_status)
            .ok_or_else(|| format!("unknown transaction status {}", v.transaction_status))?;
        let mut partitions = BTreeSet::new();
        if state != TxnState::Empty {
            for t in v.transaction_partitions.iter().flatten() {
                for p in &t.partition_ids {
                    partitions.insert((t.topic.clone(), *p));
                }
            }
        }
        Ok(Some(TransactionMetadata {
            transactional_id: self.transactional_id().to_string(),
            producer_id: v.producer_id,
            prev_producer_id: v.previous_producer_id,
            next_producer_id: v.next_producer_id,
            producer_epoch: v.producer_epoch,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms: v.transaction_timeout_ms,
            state,
            partitions,
            txn_start_timestamp: v.transaction_start_timestamp_ms,
            txn_last_update_timestamp: v.transaction_last_update_timestamp_ms,
            client_transaction_version: v.client_transaction_version,
        }))
    }

    /// The record's key and value bytes, as Kafka's `TransactionLog` writes them.
    pub fn encode(&self) -> Result<(Bytes, Option<Bytes>), EncodeError> {
        let key = self.key.to_record_key()?;
        let value = match &self.value {
            Some((v, version)) => {
                TransactionCoordinatorRecordValue::to_record_value(Some(v), *version)?
            }
            None => None,
        };
        Ok((key, value))
    }

    /// Reads a record's key and value bytes.
    pub fn decode(key: Bytes, value: Option<Bytes>) -> DecodeResult<Self> {
        let key = TransactionCoordinatorRecordKey::from_record_key(key)?;
        let value = TransactionCoordinatorRecordValue::from_record_value(key.key(), value)?;
        Ok(TransactionRecord { key, value })
    }
}
