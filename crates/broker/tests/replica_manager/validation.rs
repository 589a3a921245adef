//! Kafka's `LogValidator` as a producer meets it through the `ReplicaManager`: record
//! timestamps against `message.timestamp.before/after.max.ms`, `LogAppendTime` batches from
//! clients, the batch checks (record count, control, base sequence), and
//! `compression.type` re-compressing on the leader (topic and broker level), checked on
//! the bytes a consumer then fetches.

use bytes::BytesMut;
use kraftd_protocol::records::{
    Batches, Compression, ControlRecordType, Header, RecordBatch, RecordBatchMut, TimestampType,
};

use super::*;

const HOUR_MS: i64 = 3_600_000;

/// One record as a test writes and reads it: offset, timestamp, key, value, headers.
type Rec = (i64, i64, Option<Bytes>, Option<Bytes>, Vec<Header>);

/// A client batch in `codec` of `records` (timestamp, value), keyed `k{i}`.
fn batch_of(codec: Compression, records: &[(i64, &str)]) -> Bytes {
    let mut b = RecordBatchBuilder::new(0).compression(codec);
    for (i, (ts, v)) in records.iter().enumerate() {
        b.append(
            *ts,
            Some(Bytes::from(format!("k{i}"))),
            Some(Bytes::from(v.to_string())),
            vec![Header::new("h", Some(Bytes::from_static(b"x")))],
        )
        .unwrap();
    }
    b.build().unwrap()
}

/// The bytes of `sent` after `patch`, with the CRC recomputed (as a client that wrote
/// those fields would have).
fn patched(sent: &Bytes, patch: impl FnOnce(&mut [u8])) -> Bytes {
    let mut buf = BytesMut::from(&sent[..]);
    patch(&mut buf);
    let mut view = RecordBatchMut::new(&mut buf).unwrap();
    let max = RecordBatch::parse(sent.clone()).unwrap().max_timestamp();
    // Setting the max timestamp away and back recomputes the CRC over the patched bytes.
    view.set_max_timestamp(TimestampType::CreateTime, max.wrapping_add(1));
    view.set_max_timestamp(TimestampType::CreateTime, max);
    buf.freeze()
}

/// The one batch stored at `offset`, fetched as a consumer reads it.
async fn stored_batch(b: &Broker, tp: &TopicIdPartition, offset: i64) -> RecordBatch {
    let r = b.fetch(tp, offset, 1, Duration::ZERO).await;
    assert_eq!(r.error, ErrorCode::None, "{r:?}");
    let batch = Batches::new(r.records).next().unwrap().unwrap();
    batch.validate_crc().unwrap();
    batch
}

fn records_of(batch: &RecordBatch) -> Vec<Rec> {
    batch
        .records()
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (
                r.offset(batch),
                r.timestamp(batch),
                r.key.clone(),
                r.value.clone(),
                r.headers.clone(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn record_timestamps_outside_the_window_are_invalid_timestamp() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    let now = unix_ms();
    for codec in [Compression::None, Compression::Lz4] {
        // Kafka 4's default: at most an hour ahead, any age.
        let sent = batch_of(
            codec,
            &[
                (now, "a"),
                (now + 2 * HOUR_MS, "b"),
                (0, "c"),
                (now + 3 * HOUR_MS, "d"),
            ],
        );
        let r = b.produce(1, &tp, sent).await;
        assert_eq!(r.error, ErrorCode::InvalidTimestamp, "{codec}: {r:?}");
        assert_eq!(
            r.message.as_deref(),
            Some("One or more records have been rejected due to invalid timestamp")
        );
        let indexes: Vec<i32> = r.record_errors.iter().map(|e| e.batch_index).collect();
        assert_eq!(indexes, [1, 3], "{codec}");
        let m = &r.record_errors[0].message;
        let prefix = format!(
            "Timestamp {} of message with offset 1 is out of range. The timestamp should be \
             within [",
            now + 2 * HOUR_MS,
        );
        assert!(m.starts_with(&prefix), "{m}");
        // The window is the broker's clock at the append, a little after the test's `now`.
        let (lo, hi) = m[prefix.len()..m.len() - 1].split_once(", ").unwrap();
        let (lo, hi): (i64, i64) = (lo.parse().unwrap(), hi.parse().unwrap());
        let lo_now = lo.wrapping_add(i64::MAX);
        assert!((now..now + 60_000).contains(&lo_now), "{m}");
        assert!((now + HOUR_MS..now + HOUR_MS + 60_000).contains(&hi), "{m}");
        // Nothing of the refused batch was appended.
        assert_eq!(b.rm.list_offset(&tp, -1, -1, -1), Ok((0, -1, LEADER_EPOCH)));
    }
    // Within the window (an hour ahead minus a margin, and very old) goes in.
    let ok = batch_of(
        Compression::None,
        &[(now + HOUR_MS - 60_000, "a"), (0, "b")],
    );
    assert_eq!(b.produce_ok(1, &tp, ok).await, 0);

    // A lower bound, set live; and a key error wins over a timestamp error for a record.
    b.apply(&[
        topic_config(TOPIC, "message.timestamp.before.max.ms", Some("60000")),
        topic_config(TOPIC, "message.timestamp.after.max.ms", Some("86400000")),
    ]);
    let r = b
        .produce(
            1,
            &tp,
            batch_of(Compression::None, &[(now - HOUR_MS, "old")]),
        )
        .await;
    assert_eq!(r.error, ErrorCode::InvalidTimestamp, "{r:?}");
    assert!(r.record_errors[0]
        .message
        .contains("of message with offset 0 is out of range"));
    let future = batch_of(Compression::Gzip, &[(now + 2 * HOUR_MS, "tomorrow-ish")]);
    assert_eq!(b.produce_ok(1, &tp, future).await, 2);

    // LogAppendTime topics do not check the producer's timestamps.
    b.apply(&[
        topic_config(TOPIC, "message.timestamp.type", Some("LogAppendTime")),
        topic_config(TOPIC, "message.timestamp.before.max.ms", None),
        topic_config(TOPIC, "message.timestamp.after.max.ms", None),
    ]);
    let far = batch_of(Compression::None, &[(now + 100 * HOUR_MS, "far")]);
    assert_eq!(b.produce_ok(1, &tp, far).await, 3);
}

#[tokio::test(flavor = "current_thread")]
async fn a_client_batch_claiming_log_append_time_is_invalid_timestamp() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    b.apply(&[topic_config(
        TOPIC,
        "message.timestamp.type",
        Some("LogAppendTime"),
    )]);
    let mut builder = RecordBatchBuilder::new(0).log_append_time(unix_ms());
    for v in ["a", "b"] {
        builder
            .append(unix_ms(), None, Some(Bytes::from(v)), Vec::new())
            .unwrap();
    }
    let r = b.produce(1, &tp, builder.build().unwrap()).await;
    assert_eq!(r.error, ErrorCode::InvalidTimestamp, "{r:?}");
    assert_eq!(r.record_errors.len(), 2);
    let m = &r.record_errors[1].message;
    assert!(
        m.starts_with("Invalid timestamp type in message DefaultRecord(offset=1, ")
            && m.ends_with("Producer should not set timestamp type to LogAppendTime."),
        "{m}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn batch_checks_refuse_what_kafka_refuses() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    let now = unix_ms();
    // A lower timestamp bound, so that uncompressed batches' records are read too (with
    // Kafka's default bounds the header's max timestamp settles the timestamp check, and
    // an uncompressed batch's records are then not read).
    b.apply(&[topic_config(
        TOPIC,
        "message.timestamp.before.max.ms",
        Some("86400000"),
    )]);
    let expect = |r: ProduceResult, code: ErrorCode, text: &str| {
        assert_eq!(r.error, code, "{r:?}");
        let m = r.message.unwrap_or_default();
        assert!(m.contains(text), "{m:?} lacks {text:?}");
    };
    // An idempotent producer's batch without a base sequence.
    let mut builder = RecordBatchBuilder::new(0).producer(7, 0, -1);
    builder
        .append(now, None, Some(Bytes::from_static(b"v")), Vec::new())
        .unwrap();
    let r = b.produce(1, &tp, builder.build().unwrap()).await;
    expect(
        r,
        ErrorCode::InvalidRecord,
        "Invalid sequence number -1 in record batch with producerId 7 in topic partition orders-0",
    );
    // A control batch.
    let mut builder = RecordBatchBuilder::new(0).control(true);
    builder
        .append(
            now,
            Some(ControlRecordType::Commit.encode_key()),
            None,
            Vec::new(),
        )
        .unwrap();
    let r = b.produce(1, &tp, builder.build().unwrap()).await;
    expect(
        r,
        ErrorCode::InvalidRecord,
        "Clients are not allowed to write control records in topic partition orders-0",
    );
    // Offset range and count disagree (lastOffsetDelta at byte 23).
    let sent = batch_of(Compression::None, &[(now, "a"), (now, "b")]);
    let r = b
        .produce(
            1,
            &tp,
            patched(&sent, |buf| {
                buf[23..27].copy_from_slice(&5i32.to_be_bytes())
            }),
        )
        .await;
    expect(
        r,
        ErrorCode::InvalidRecord,
        "Inconsistent batch offset range [0, 5] and count of records 2 in topic partition orders-0",
    );
    // Both claim three records but two are inside (recordCount at byte 57), compressed or
    // not: the records are read and do not add up.
    for codec in [Compression::None, Compression::Snappy] {
        let sent = batch_of(codec, &[(now, "a"), (now, "b")]);
        let three = patched(&sent, |buf| {
            buf[23..27].copy_from_slice(&2i32.to_be_bytes());
            buf[57..61].copy_from_slice(&3i32.to_be_bytes());
        });
        let r = b.produce(1, &tp, three).await;
        assert_eq!(r.error, ErrorCode::InvalidRecord, "{codec}: {r:?}");
    }
    assert_eq!(b.rm.list_offset(&tp, -1, -1, -1), Ok((0, -1, LEADER_EPOCH)));
}

#[tokio::test(flavor = "current_thread")]
async fn compression_type_recompresses_on_the_leader() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    let now = unix_ms();
    b.apply(&[topic_config(TOPIC, "compression.type", Some("gzip"))]);
    // An idempotent producer's uncompressed batch is stored gzip'd, records unchanged.
    let mut builder = RecordBatchBuilder::new(0)
        .producer(9, 2, 40)
        .compression(Compression::None);
    for (i, ts) in [now - 5, now - 9, now].into_iter().enumerate() {
        builder
            .append(
                ts,
                Some(Bytes::from(format!("key{i}"))),
                (i != 1).then(|| Bytes::from(format!("value{i}"))),
                vec![Header::new("n", Some(Bytes::from(i.to_string())))],
            )
            .unwrap();
    }
    let sent = builder.build().unwrap();
    let sent_batch = RecordBatch::parse(sent.clone()).unwrap();
    assert_eq!(b.produce_ok(1, &tp, sent.clone()).await, 0);
    let stored = stored_batch(&b, &tp, 0).await;
    assert_eq!(stored.compression(), Compression::Gzip);
    assert_eq!(
        (
            stored.producer_id(),
            stored.producer_epoch(),
            stored.base_sequence()
        ),
        (9, 2, 40)
    );
    assert_eq!(stored.partition_leader_epoch(), LEADER_EPOCH);
    assert_eq!(stored.max_timestamp(), now);
    assert_eq!(records_of(&stored), records_of(&sent_batch));
    // The producer's retry is still a duplicate, answered with the original offset.
    assert_eq!(b.produce_ok(1, &tp, sent).await, 0);

    // lz4 from the producer becomes gzip too; offsets continue.
    let lz4 = batch_of(Compression::Lz4, &[(now, "a"), (now, "b")]);
    assert_eq!(b.produce_ok(1, &tp, lz4.clone()).await, 3);
    let stored = stored_batch(&b, &tp, 3).await;
    assert_eq!(stored.compression(), Compression::Gzip);
    let mut want = records_of(&RecordBatch::parse(lz4).unwrap());
    for r in &mut want {
        r.0 += 3;
    }
    assert_eq!(records_of(&stored), want);

    // A compressed batch whose inner offsets skip (0, 2 under a consistent header) is
    // rebuilt with consecutive offsets, as Kafka does, even in its own codec.
    let mut gapped = RecordBatchBuilder::new(0).compression(Compression::Gzip);
    gapped
        .append_with_offset(0, now, None, Some(Bytes::from_static(b"x")), Vec::new())
        .unwrap();
    gapped
        .append_with_offset(2, now, None, Some(Bytes::from_static(b"y")), Vec::new())
        .unwrap();
    let gapped = patched(&gapped.build().unwrap(), |buf| {
        buf[23..27].copy_from_slice(&1i32.to_be_bytes())
    });
    assert_eq!(b.produce_ok(1, &tp, gapped).await, 5);
    let stored = stored_batch(&b, &tp, 5).await;
    let offsets: Vec<i64> = records_of(&stored).iter().map(|r| r.0).collect();
    assert_eq!(offsets, [5, 6]);

    // uncompressed: a gzip batch is stored plain.
    b.apply(&[topic_config(
        TOPIC,
        "compression.type",
        Some("uncompressed"),
    )]);
    let gz = batch_of(Compression::Gzip, &[(now, "z")]);
    assert_eq!(b.produce_ok(1, &tp, gz).await, 7);
    assert_eq!(
        stored_batch(&b, &tp, 7).await.compression(),
        Compression::None
    );

    // producer (the default): the batch is stored as sent, byte for byte but the stamps.
    b.apply(&[topic_config(TOPIC, "compression.type", None)]);
    let snappy = batch_of(Compression::Snappy, &[(now, "s")]);
    assert_eq!(b.produce_ok(1, &tp, snappy.clone()).await, 8);
    let r = b.fetch(&tp, 8, 1, Duration::ZERO).await;
    assert_eq!(&r.records[..], &stamped(&snappy, 8)[..]);

    // The broker's compression.type is the default for topics without their own.
    b.apply(&[MetadataRecord::Config(ConfigRecord {
        resource_type: 4,
        resource_name: String::new(),
        name: "compression.type".into(),
        value: Some("zstd".into()),
        ..Default::default()
    })]);
    let plain = batch_of(Compression::None, &[(now, "p")]);
    assert_eq!(b.produce_ok(1, &tp, plain).await, 9);
    assert_eq!(
        stored_batch(&b, &tp, 9).await.compression(),
        Compression::Zstd
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_batch_too_large_once_decompressed_is_message_too_large() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    b.apply(&[
        topic_config(TOPIC, "compression.type", Some("uncompressed")),
        topic_config(TOPIC, "max.message.bytes", Some("2000")),
    ]);
    let big = "x".repeat(10_000);
    let sent = batch_of(Compression::Gzip, &[(unix_ms(), big.as_str())]);
    assert!(sent.len() < 2000);
    let r = b.produce(1, &tp, sent).await;
    assert_eq!(r.error, ErrorCode::MessageTooLarge, "{r:?}");
}
