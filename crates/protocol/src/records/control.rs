//! The keys of control records: what kind of control record a record of a control batch is.
//!
//! Control batches (attributes bit 5) carry transaction markers and, in the KRaft metadata
//! log, the leader-change, snapshot and voter records. Each such record's key is
//! `int16 version` + `int16 type`; its value is a generated message chosen by the type (those
//! live with the other generated messages, not here). The key is all a reader needs to route
//! a control record, and an unknown type must be an error, never a silent guess.

use bytes::Bytes;

use super::RecordBatchError;

/// The control record types Kafka defines, numbered as in the key's `type` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// A transaction was aborted (value: `EndTxnMarker`).
    Abort = 0,
    /// A transaction was committed (value: `EndTxnMarker`).
    Commit = 1,
    /// A KRaft leader was elected (value: `LeaderChangeMessage`).
    LeaderChange = 2,
    /// First record of a KRaft snapshot (value: `SnapshotHeaderRecord`).
    SnapshotHeader = 3,
    /// Last record of a KRaft snapshot (value: `SnapshotFooterRecord`).
    SnapshotFooter = 4,
    /// The KRaft protocol version in force (value: `KRaftVersionRecord`).
    KRaftVersion = 5,
    /// The KRaft voter set (value: `VotersRecord`).
    KRaftVoters = 6,
}

impl ControlRecordType {
    /// The key version this code writes; Kafka has only ever defined 0.
    pub const CURRENT_KEY_VERSION: i16 = 0;
    /// The size of an encoded key.
    pub const KEY_SIZE: usize = 4;

    /// The type with this id, if Kafka defines one.
    pub fn from_id(id: i16) -> Option<ControlRecordType> {
        Some(match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            2 => ControlRecordType::LeaderChange,
            3 => ControlRecordType::SnapshotHeader,
            4 => ControlRecordType::SnapshotFooter,
            5 => ControlRecordType::KRaftVersion,
            6 => ControlRecordType::KRaftVoters,
            _ => return None,
        })
    }

    /// The type's id in the key.
    pub fn id(self) -> i16 {
        self as i16
    }

    /// The record key for this type: version 0, then the type id.
    pub fn encode_key(self) -> Bytes {
        let mut key = [0u8; Self::KEY_SIZE];
        key[..2].copy_from_slice(&Self::CURRENT_KEY_VERSION.to_be_bytes());
        key[2..].copy_from_slice(&self.id().to_be_bytes());
        Bytes::copy_from_slice(&key)
    }

    /// Reads a control record key. As Kafka's `ControlRecordType.parse`, a version above the
    /// current one is read with the current schema (later versions may only append fields),
    /// while a negative version, a key shorter than four bytes, or an unknown type is an
    /// error.
    pub fn decode_key(key: &[u8]) -> Result<ControlRecordType, RecordBatchError> {
        let Some((version, rest)) = key.split_first_chunk::<2>() else {
            return Err(RecordBatchError::InvalidControlKey {
                reason: "key is shorter than 4 bytes",
            });
        };
        let Some((type_id, _)) = rest.split_first_chunk::<2>() else {
            return Err(RecordBatchError::InvalidControlKey {
                reason: "key is shorter than 4 bytes",
            });
        };
        let version = i16::from_be_bytes(*version);
        if version < 0 {
            return Err(RecordBatchError::InvalidControlKey {
                reason: "key version is negative",
            });
        }
        let type_id = i16::from_be_bytes(*type_id);
        ControlRecordType::from_id(type_id)
            .ok_or(RecordBatchError::UnknownControlType { version, type_id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [ControlRecordType; 7] = [
        ControlRecordType::Abort,
        ControlRecordType::Commit,
        ControlRecordType::LeaderChange,
        ControlRecordType::SnapshotHeader,
        ControlRecordType::SnapshotFooter,
        ControlRecordType::KRaftVersion,
        ControlRecordType::KRaftVoters,
    ];

    #[test]
    fn keys_round_trip_with_kafka_ids() {
        for (id, t) in ALL.into_iter().enumerate() {
            assert_eq!(t.id(), id as i16);
            let key = t.encode_key();
            assert_eq!(&key[..], &[0, 0, 0, id as u8]);
            assert_eq!(ControlRecordType::decode_key(&key).unwrap(), t);
        }
    }

    #[test]
    fn bad_keys_are_typed_errors() {
        assert_eq!(
            ControlRecordType::decode_key(&[0, 0, 0, 7]),
            Err(RecordBatchError::UnknownControlType {
                version: 0,
                type_id: 7
            })
        );
        assert_eq!(
            ControlRecordType::decode_key(&[0, 0, 0xff, 0xff]),
            Err(RecordBatchError::UnknownControlType {
                version: 0,
                type_id: -1
            })
        );
        assert!(matches!(
            ControlRecordType::decode_key(&[0, 0, 1]),
            Err(RecordBatchError::InvalidControlKey { .. })
        ));
        assert!(matches!(
            ControlRecordType::decode_key(&[]),
            Err(RecordBatchError::InvalidControlKey { .. })
        ));
        assert!(matches!(
            ControlRecordType::decode_key(&[0x80, 0, 0, 1]),
            Err(RecordBatchError::InvalidControlKey { .. })
        ));
    }

    #[test]
    fn newer_key_versions_are_read_with_the_current_schema() {
        assert_eq!(
            ControlRecordType::decode_key(&[0, 1, 0, 1, 9, 9]).unwrap(),
            ControlRecordType::Commit
        );
    }
}
