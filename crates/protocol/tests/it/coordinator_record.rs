//! Coordinator records (`__consumer_offsets`, `__transaction_state`, `__share_group_state`):
//! every key and value of every coordinator at every valid version round-trips through its
//! framing (int16 type + key; int16 version + value; no value = tombstone), the framing of an
//! OffsetCommit record matches bytes written out by hand from the schema, and bad input is a
//! typed error.

use bytes::Bytes;
use kraftd_protocol::coordinator::{OffsetCommitKey, OffsetCommitValue};
use kraftd_protocol::testing::SampleRng;
use kraftd_protocol::{
    DecodeErrorKind, Encoder, GroupCoordinatorRecordKey, GroupCoordinatorRecordType,
    GroupCoordinatorRecordValue, ShareCoordinatorRecordKey, ShareCoordinatorRecordType,
    ShareCoordinatorRecordValue, TransactionCoordinatorRecordKey, TransactionCoordinatorRecordType,
    TransactionCoordinatorRecordValue, Uuid,
};
use proptest::prelude::*;

/// Every record type of one coordinator: a random key and, at each value version, a random
/// value; each encodes, decodes to the same thing, and re-encodes to the same bytes.
macro_rules! check_coordinator {
    ($rng:expr, $kind:ident, $key:ident, $value:ident) => {
        for &kind in $kind::ALL {
            let key = $key::sample(kind, $rng, kind.key_version());
            prop_assert_eq!(key.key(), kind);
            let bytes = key
                .to_record_key()
                .map_err(|e| TestCaseError::fail(format!("{kind:?} key: {e}")))?;
            prop_assert_eq!(
                &bytes[..2],
                &kind.code().to_be_bytes()[..],
                "{:?} key type",
                kind
            );
            let back = $key::from_record_key(bytes.clone())
                .map_err(|e| TestCaseError::fail(format!("{kind:?} key: {e}")))?;
            prop_assert_eq!(&back, &key, "{:?} key", kind);
            prop_assert_eq!(
                back.to_record_key().unwrap(),
                bytes,
                "{:?} key re-encodes",
                kind
            );

            prop_assert_eq!($value::to_record_value(None, 0).unwrap(), None);
            prop_assert_eq!($value::from_record_value(kind, None).unwrap(), None);
            for v in kind.value_versions().iter() {
                let value = $value::sample(kind, $rng, v);
                let bytes = $value::to_record_value(Some(&value), v)
                    .map_err(|e| TestCaseError::fail(format!("{kind:?} value v{v}: {e}")))?
                    .expect("a value is not a tombstone");
                prop_assert_eq!(&bytes[..2], &v.to_be_bytes()[..], "{:?} value v{}", kind, v);
                let (back, version) = $value::from_record_value(kind, Some(bytes.clone()))
                    .map_err(|e| TestCaseError::fail(format!("{kind:?} value v{v}: {e}")))?
                    .expect("a value is not a tombstone");
                prop_assert_eq!(version, v);
                prop_assert_eq!(&back, &value, "{:?} value v{}", kind, v);
                prop_assert_eq!(
                    $value::to_record_value(Some(&back), v).unwrap(),
                    Some(bytes),
                    "{:?} value v{} re-encodes",
                    kind,
                    v
                );
            }
        }
    };
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_coordinator_record_round_trips(seed in any::<u64>()) {
        let rng = &mut SampleRng::new(seed);
        check_coordinator!(rng, GroupCoordinatorRecordType, GroupCoordinatorRecordKey, GroupCoordinatorRecordValue);
        check_coordinator!(rng, TransactionCoordinatorRecordType, TransactionCoordinatorRecordKey, TransactionCoordinatorRecordValue);
        check_coordinator!(rng, ShareCoordinatorRecordType, ShareCoordinatorRecordKey, ShareCoordinatorRecordValue);
    }
}

#[test]
fn every_schema_has_a_record_type() {
    // 22 group record types (9 and 18 are unused), TransactionLog, ShareSnapshot and ShareUpdate.
    assert_eq!(GroupCoordinatorRecordType::ALL.len(), 22);
    assert_eq!(TransactionCoordinatorRecordType::ALL.len(), 1);
    assert_eq!(ShareCoordinatorRecordType::ALL.len(), 2);
    assert_eq!(GroupCoordinatorRecordType::OffsetCommit.code(), 1);
    assert_eq!(
        GroupCoordinatorRecordType::OffsetCommit.value_versions(),
        kraftd_protocol::VersionRange { min: 0, max: 4 }
    );
    assert_eq!(
        ShareCoordinatorRecordType::from_i16(1),
        Some(ShareCoordinatorRecordType::ShareUpdate)
    );
}

fn offset_commit() -> (GroupCoordinatorRecordKey, OffsetCommitValue) {
    let key = GroupCoordinatorRecordKey::OffsetCommit(OffsetCommitKey {
        group: "g1".into(),
        topic: "foo".into(),
        partition: 2,
    });
    let value = OffsetCommitValue {
        offset: 42,
        leader_epoch: 5,
        metadata: "m".into(),
        commit_timestamp: 1000,
        ..Default::default()
    };
    (key, value)
}

// The expected bytes below are also exactly what Apache Kafka 4.4.0's own
// `GroupCoordinatorRecordSerde` writes for the same records (checked with jshell against the
// jars the tests fetch): key `0001000267310003666f6f00000002`, value v3
// `0003000000000000002a0000000500016d00000000000003e8`, value v4 with topicId 07x16
// `0004000000000000002a00000005026d00000000000003e8010010` followed by 16 bytes of 07.

#[test]
fn offset_commit_key_bytes_match_the_schema() {
    let (key, _) = offset_commit();
    let bytes = key.to_record_key().unwrap();
    #[rustfmt::skip]
    let want: &[u8] = &[
        0, 1,                       // int16 record type 1 (OffsetCommitKey's apiKey)
        0, 2, b'g', b'1',           // group: int16 length + "g1"
        0, 3, b'f', b'o', b'o',     // topic: int16 length + "foo"
        0, 0, 0, 2,                 // partition: int32 2
    ];
    assert_eq!(&bytes[..], want);
    assert_eq!(
        GroupCoordinatorRecordKey::from_record_key(Bytes::from_static(want)).unwrap(),
        key
    );
}

#[test]
fn offset_commit_value_bytes_match_the_schema() {
    let (_, value) = offset_commit();
    let value = GroupCoordinatorRecordValue::OffsetCommit(value);
    // v3, the newest classic version: no expireTimestamp (v1 only), no tagged fields.
    let v3 = GroupCoordinatorRecordValue::to_record_value(Some(&value), 3)
        .unwrap()
        .unwrap();
    #[rustfmt::skip]
    let want_v3: &[u8] = &[
        0, 3,                       // int16 version 3
        0, 0, 0, 0, 0, 0, 0, 42,    // offset: int64 42
        0, 0, 0, 5,                 // leaderEpoch: int32 5 (v3+)
        0, 1, b'm',                 // metadata: int16 length + "m"
        0, 0, 0, 0, 0, 0, 3, 232,   // commitTimestamp: int64 1000
    ];
    assert_eq!(&v3[..], want_v3);
    // v4 is flexible: compact string (uvarint length + 1), then the tagged fields, where
    // topicId is tag 0 when set.
    let mut with_id = value.clone();
    let GroupCoordinatorRecordValue::OffsetCommit(v) = &mut with_id else {
        unreachable!()
    };
    v.topic_id = Uuid([7; 16]);
    let v4 = GroupCoordinatorRecordValue::to_record_value(Some(&with_id), 4)
        .unwrap()
        .unwrap();
    let mut want_v4 = vec![
        0, 4, // int16 version 4
        0, 0, 0, 0, 0, 0, 0, 42, // offset
        0, 0, 0, 5, // leaderEpoch
        2, b'm', // metadata: compact string, uvarint 1 + 1
        0, 0, 0, 0, 0, 0, 3, 232, // commitTimestamp
        1, 0, 16, // one tagged field: tag 0, 16 bytes
    ];
    want_v4.extend_from_slice(&[7; 16]); // topicId
    assert_eq!(&v4[..], &want_v4[..]);
    let kind = GroupCoordinatorRecordType::OffsetCommit;
    assert_eq!(
        GroupCoordinatorRecordValue::from_record_value(kind, Some(Bytes::from_static(want_v3)))
            .unwrap(),
        Some((value, 3))
    );
    assert_eq!(
        GroupCoordinatorRecordValue::from_record_value(kind, Some(Bytes::from(want_v4))).unwrap(),
        Some((with_id, 4))
    );
    // A tombstone: the offset was deleted.
    assert_eq!(
        GroupCoordinatorRecordValue::to_record_value(None, 3).unwrap(),
        None
    );
    assert_eq!(
        GroupCoordinatorRecordValue::from_record_value(kind, None).unwrap(),
        None
    );
}

#[test]
fn bad_coordinator_records_are_typed_errors() {
    let (key, value) = offset_commit();
    let key_bytes = key.to_record_key().unwrap();
    let kind = GroupCoordinatorRecordType::OffsetCommit;

    // Unknown record types: 9 is unused by the group coordinator, 2 by the share coordinator.
    let mut unknown = key_bytes.to_vec();
    unknown[1] = 9;
    let err = GroupCoordinatorRecordKey::from_record_key(Bytes::from(unknown)).unwrap_err();
    assert_eq!(err.kind, DecodeErrorKind::UnknownApiKey(9));
    let err = ShareCoordinatorRecordKey::from_record_key(Bytes::from_static(&[0, 2])).unwrap_err();
    assert_eq!(err.kind, DecodeErrorKind::UnknownApiKey(2));

    // Keys that are short, truncated or too long.
    for bad in [
        Bytes::new(),
        Bytes::from_static(&[0]),
        key_bytes.slice(..key_bytes.len() - 1),
        Bytes::from([&key_bytes[..], &[0][..]].concat()),
    ] {
        assert!(GroupCoordinatorRecordKey::from_record_key(bad).is_err());
    }

    // An unknown value version is an error, on both sides.
    let value = GroupCoordinatorRecordValue::OffsetCommit(value);
    assert!(GroupCoordinatorRecordValue::to_record_value(Some(&value), 5).is_err());
    let v3 = GroupCoordinatorRecordValue::to_record_value(Some(&value), 3)
        .unwrap()
        .unwrap();
    for version in [5i16, -1, i16::MAX] {
        let mut bad = v3.to_vec();
        bad[..2].copy_from_slice(&version.to_be_bytes());
        let err = GroupCoordinatorRecordValue::from_record_value(kind, Some(Bytes::from(bad)))
            .unwrap_err();
        assert!(
            matches!(err.kind, DecodeErrorKind::UnsupportedVersion { version: v, min: 0, max: 4 } if v == version),
            "{err}"
        );
    }
    // Values that are short, truncated or too long.
    for bad in [
        Bytes::from_static(&[0]),
        v3.slice(..v3.len() - 1),
        Bytes::from([&v3[..], &[0][..]].concat()),
    ] {
        assert!(GroupCoordinatorRecordValue::from_record_value(kind, Some(bad)).is_err());
    }
    // The empty value is not a tombstone (that is no value at all), but a missing version.
    assert!(GroupCoordinatorRecordValue::from_record_value(kind, Some(Bytes::new())).is_err());
    // Every byte prefix of a valid value of each version decodes or errors, never panics.
    for v in kind.value_versions().iter() {
        let mut e = Encoder::new();
        e.put_i16(v);
        let mut rng = SampleRng::new(v as u64);
        GroupCoordinatorRecordValue::sample(kind, &mut rng, v)
            .encode(&mut e, v)
            .unwrap();
        let full = e.into_bytes();
        for n in 0..full.len() {
            let _ = GroupCoordinatorRecordValue::from_record_value(kind, Some(full.slice(..n)));
        }
    }
}

/// A consumer-protocol member's ConsumerGroupMemberMetadataValue as Kafka 4.4 writes it: its
/// ClassicMemberMetadata (tag 0, nullable, `"default": null` in JSON) is null, and Kafka's
/// generator writes that null explicitly as tag 0, size 1, varint 0 — which kraftd once read
/// as a present struct and failed on ("SessionTimeoutMs: needs 4 more bytes"), leaving the
/// `__consumer_offsets` partition unloadable after a Kafka broker was swapped for kraftd.
#[test]
fn a_null_classic_member_metadata_written_by_kafka_reads_as_null() {
    use kraftd_protocol::coordinator::ConsumerGroupMemberMetadataValue;
    // Version 0, then the fields in schema order (flexible: compact strings and arrays).
    let mut kafka = vec![0u8, 0];
    kafka.push(0); // InstanceId: null
    kafka.push(0); // RackId: null
    kafka.extend([4, b'c', b'-', b'1']); // ClientId "c-1"
    kafka.extend([3, b'/', b'h']); // ClientHost "/h"
    kafka.extend([2, 2, b't']); // SubscribedTopicNames ["t"]
    kafka.push(0); // SubscribedTopicRegex: null
    kafka.extend(300_000i32.to_be_bytes()); // RebalanceTimeoutMs
    kafka.extend([8, b'u', b'n', b'i', b'f', b'o', b'r', b'm']); // ServerAssignor "uniform"
    kafka.extend([1, 0, 1, 0]); // one tagged field: tag 0, size 1, varint 0 (null)
    let (value, version) = GroupCoordinatorRecordValue::from_record_value(
        GroupCoordinatorRecordType::ConsumerGroupMemberMetadata,
        Some(Bytes::from(kafka.clone())),
    )
    .expect("decodes")
    .expect("not a tombstone");
    assert_eq!(version, 0);
    let GroupCoordinatorRecordValue::ConsumerGroupMemberMetadata(v) = &value else {
        panic!("{value:?}");
    };
    let expected = ConsumerGroupMemberMetadataValue {
        instance_id: None,
        rack_id: None,
        subscribed_topic_regex: None,
        client_id: "c-1".into(),
        client_host: "/h".into(),
        subscribed_topic_names: vec!["t".into()],
        rebalance_timeout_ms: 300_000,
        server_assignor: Some("uniform".into()),
        classic_member_metadata: None,
        ..Default::default()
    };
    assert_eq!(v, &expected);
    // And kraftd writes the same bytes Kafka does.
    let ours = GroupCoordinatorRecordValue::ConsumerGroupMemberMetadata(expected);
    assert_eq!(
        GroupCoordinatorRecordValue::to_record_value(Some(&ours), 0)
            .unwrap()
            .map(|b| b.to_vec()),
        Some(kafka)
    );
}
