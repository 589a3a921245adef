//! The keys of control records: what kind of control record a record of a control batch is.
//!
//! Control batches (attributes bit 5) carry transaction markers and, in the KRaft metadata
//! log, the leader-change, snapshot and voter records. Each such record's key is
//! `int16 version` + `int16 type`; its value is the generated message chosen by the type
//! ([`ControlRecord`]). The key is all a reader needs to route a control record, and an
//! unknown type must be an error, never a silent guess.

use bytes::Bytes;

use super::RecordBatchError;
use crate::codec::{DecodeError, DecodeErrorKind, EncodeError, Encoder};
use crate::messages::{
    EndTxnMarker, KRaftVersionRecord, LeaderChangeMessage, SnapshotFooterRecord,
    SnapshotHeaderRecord, VotersRecord,
};
use crate::Message;

/// The version Kafka writes control record values at (`ControlRecordUtils`), and the version
/// prefix of a transaction marker's value.
pub const CONTROL_VALUE_VERSION: i16 = 0;

/// A control record's value, typed by its key.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlRecord {
    /// A transaction abort marker; the value is `int16 version` + EndTxnMarker.
    Abort(EndTxnMarker),
    /// A transaction commit marker; the value is `int16 version` + EndTxnMarker.
    Commit(EndTxnMarker),
    /// The first record of a Raft leader's epoch.
    LeaderChange(LeaderChangeMessage),
    /// The first record of a metadata snapshot.
    SnapshotHeader(SnapshotHeaderRecord),
    /// The last record of a metadata snapshot.
    SnapshotFooter(SnapshotFooterRecord),
    /// The `kraft.version` feature level.
    KRaftVersion(KRaftVersionRecord),
    /// The voter set of a dynamic quorum.
    KRaftVoters(VotersRecord),
}

impl ControlRecord {
    pub fn record_type(&self) -> ControlRecordType {
        match self {
            ControlRecord::Abort(_) => ControlRecordType::Abort,
            ControlRecord::Commit(_) => ControlRecordType::Commit,
            ControlRecord::LeaderChange(_) => ControlRecordType::LeaderChange,
            ControlRecord::SnapshotHeader(_) => ControlRecordType::SnapshotHeader,
            ControlRecord::SnapshotFooter(_) => ControlRecordType::SnapshotFooter,
            ControlRecord::KRaftVersion(_) => ControlRecordType::KRaftVersion,
            ControlRecord::KRaftVoters(_) => ControlRecordType::KRaftVoters,
        }
    }

    /// The record's key bytes.
    pub fn key(&self) -> Bytes {
        self.record_type().encode_key()
    }

    /// The record's value bytes, as Kafka writes them.
    pub fn encode_value(&self) -> Result<Bytes, EncodeError> {
        let v = CONTROL_VALUE_VERSION;
        match self {
            ControlRecord::Abort(m) | ControlRecord::Commit(m) => {
                let mut e = Encoder::new();
                e.put_i16(v);
                m.encode(&mut e, v)?;
                Ok(e.into_bytes())
            }
            ControlRecord::LeaderChange(m) => m.to_bytes(v),
            ControlRecord::SnapshotHeader(m) => m.to_bytes(v),
            ControlRecord::SnapshotFooter(m) => m.to_bytes(v),
            ControlRecord::KRaftVersion(m) => m.to_bytes(v),
            ControlRecord::KRaftVoters(m) => m.to_bytes(v),
        }
    }

    /// Decodes a control record from its key and value. Like Kafka, values are read at the
    /// current version; a value with bytes past its end is corrupt.
    pub fn decode(key: &[u8], value: Bytes) -> Result<ControlRecord, RecordBatchError> {
        let kind = ControlRecordType::decode_key(key)?;
        let mut b = value;
        let v = CONTROL_VALUE_VERSION;
        let record = match kind {
            ControlRecordType::Abort | ControlRecordType::Commit => {
                let prefix = crate::codec::read_i16(&mut b, "EndTxnMarker.(version prefix)")
                    .map_err(|e| e.within("EndTxnMarker", v))?;
                if prefix < 0 {
                    return Err(DecodeError::new(
                        "EndTxnMarker.(version prefix)",
                        DecodeErrorKind::Invalid("transaction marker version is negative"),
                    )
                    .within("EndTxnMarker", prefix)
                    .into());
                }
                let marker = EndTxnMarker::decode(&mut b, v)?;
                if kind == ControlRecordType::Abort {
                    ControlRecord::Abort(marker)
                } else {
                    ControlRecord::Commit(marker)
                }
            }
            ControlRecordType::LeaderChange => {
                ControlRecord::LeaderChange(LeaderChangeMessage::decode(&mut b, v)?)
            }
            ControlRecordType::SnapshotHeader => {
                ControlRecord::SnapshotHeader(SnapshotHeaderRecord::decode(&mut b, v)?)
            }
            ControlRecordType::SnapshotFooter => {
                ControlRecord::SnapshotFooter(SnapshotFooterRecord::decode(&mut b, v)?)
            }
            ControlRecordType::KRaftVersion => {
                ControlRecord::KRaftVersion(KRaftVersionRecord::decode(&mut b, v)?)
            }
            ControlRecordType::KRaftVoters => {
                ControlRecord::KRaftVoters(VotersRecord::decode(&mut b, v)?)
            }
        };
        if !b.is_empty() {
            return Err(DecodeError::new(
                "(end)",
                DecodeErrorKind::Invalid("control record value has bytes past its end"),
            )
            .within("ControlRecord", v)
            .into());
        }
        Ok(record)
    }
}

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

    #[test]
    fn control_values_round_trip() {
        let leader = ControlRecord::LeaderChange(LeaderChangeMessage {
            leader_id: 3,
            voters: vec![crate::messages::leader_change_message::Voter {
                voter_id: 3,
                ..Default::default()
            }],
            ..Default::default()
        });
        let commit = ControlRecord::Commit(EndTxnMarker {
            coordinator_epoch: 9,
        });
        for record in [leader, commit] {
            let value = record.encode_value().unwrap();
            let back = ControlRecord::decode(&record.key(), value.clone()).unwrap();
            assert_eq!(back, record);
            let mut longer = value.to_vec();
            longer.push(0);
            assert!(ControlRecord::decode(&record.key(), Bytes::from(longer)).is_err());
        }
        // A commit marker as Kafka writes it: version 0, coordinator epoch 9.
        let commit = ControlRecord::Commit(EndTxnMarker {
            coordinator_epoch: 9,
        });
        assert_eq!(&commit.encode_value().unwrap()[..], &[0, 0, 0, 0, 0, 9]);
    }

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
