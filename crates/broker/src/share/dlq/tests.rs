//! Tests of the dead-letter queue writer's sans-IO parts: the config checks with Kafka's
//! messages, the `__dlq.errors.*` headers in Kafka's order, the batch layout and copy.record,
//! the split at `max.message.bytes`, and reading the source records within a round's
//! budget.

use std::collections::HashMap;

use bytes::Bytes;
use kraftd_protocol::records::{Batches, Compression, RecordBatchBuilder, TimestampType};
use kraftd_protocol::Uuid;

use super::*;

fn param(cause: Option<DlqCause>) -> ShareGroupDlqRecordParameter {
    ShareGroupDlqRecordParameter {
        group_id: "g1".into(),
        tp: TopicIdPartition {
            topic_id: Uuid([7; 16]),
            topic: "orders".into(),
            partition: 3,
        },
        first_offset: 10,
        last_offset: 12,
        delivery_count: Some(2),
        cause,
    }
}

fn settings(name: &str) -> DlqSettings {
    DlqSettings {
        topic_name: (!name.is_empty()).then(|| name.to_string()),
        copy_record: false,
        auto_create_topics: false,
        topic_name_prefix: "dlq.".into(),
    }
}

fn text(h: &Header) -> (&str, &str) {
    (
        h.key.as_str(),
        std::str::from_utf8(h.value.as_deref().unwrap_or_default()).unwrap(),
    )
}

#[test]
fn headers_are_kafkas_in_kafkas_order() {
    let p = param(Some(DlqCause::ClientReject));
    let got: Vec<(String, String)> = headers(&p, 11)
        .iter()
        .map(|h| {
            let (k, v) = text(h);
            (k.to_string(), v.to_string())
        })
        .collect();
    let want = [
        ("__dlq.errors.topic", "orders"),
        ("__dlq.errors.partition", "3"),
        ("__dlq.errors.offset", "11"),
        ("__dlq.errors.group", "g1"),
        ("__dlq.errors.delivery.count", "2"),
        ("__dlq.errors.message", "Offset rejected by client."),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(got, want);
    let exceeded = headers(&param(Some(DlqCause::DeliveryCountExceeded)), 10);
    assert_eq!(
        text(&exceeded[5]),
        (
            "__dlq.errors.message",
            "Offset delivery count exceeded the threshold."
        )
    );
    // Without a count or cause those headers are absent, as Kafka's Optional.empty().
    let bare = ShareGroupDlqRecordParameter {
        delivery_count: None,
        ..param(None)
    };
    assert_eq!(headers(&bare, 10).len(), 4);
}

#[test]
fn the_batch_holds_one_record_per_offset_with_the_source_key_and_value_when_copied() {
    let p = param(Some(DlqCause::ClientReject));
    let mut originals = HashMap::new();
    originals.insert(10, (Some(Bytes::from("k10")), Some(Bytes::from("v10"))));
    originals.insert(12, (None, Some(Bytes::from("v12"))));
    let (batch, last) = dlq_records(&p, 10, 12, &originals, 1_700_000_000_000, 1 << 20);
    assert_eq!(last, 12);
    let batches: Vec<_> = Batches::new(batch).map(Result::unwrap).collect();
    assert_eq!(batches.len(), 1);
    let b = &batches[0];
    assert_eq!(b.compression(), kraftd_protocol::records::Compression::None);
    assert_eq!(b.timestamp_type(), TimestampType::CreateTime);
    assert!(!b.is_transactional() && !b.is_control());
    assert_eq!(b.producer_id(), -1);
    let records: Vec<_> = b.records().unwrap().map(Result::unwrap).collect();
    assert_eq!(records.len(), 3);
    assert_eq!(records[0].key.as_deref(), Some(&b"k10"[..]));
    assert_eq!(records[0].value.as_deref(), Some(&b"v10"[..]));
    // Offset 11 was not read (copy.record off, or gone): null key and value.
    assert_eq!(
        (records[1].key.clone(), records[1].value.clone()),
        (None, None)
    );
    assert_eq!(records[2].key, None);
    assert_eq!(records[2].value.as_deref(), Some(&b"v12"[..]));
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.timestamp(b), 1_700_000_000_000);
        assert_eq!(
            text(&r.headers[2]),
            ("__dlq.errors.offset", &*(10 + i).to_string())
        );
    }
}

#[test]
fn a_batch_stops_at_the_topics_max_message_bytes_but_always_carries_one_record() {
    let p = param(None);
    let (one, last) = dlq_records(&p, 10, 12, &HashMap::new(), 0, 1);
    assert_eq!(last, 10);
    assert_eq!(Batches::new(one).next().unwrap().unwrap().record_count(), 1);
    let (rest, last) = dlq_records(&p, 11, 12, &HashMap::new(), 0, 1 << 20);
    assert_eq!(last, 12);
    assert_eq!(
        Batches::new(rest).next().unwrap().unwrap().record_count(),
        2
    );
    // The size Kafka's DefaultRecord.sizeInBytes gives: what the builder wrote.
    let (batch, _) = dlq_records(&param(None), 10, 12, &HashMap::new(), 0, 1 << 20);
    let b = Batches::new(batch.clone()).next().unwrap().unwrap();
    let computed: usize = (0..3)
        .map(|i| record_size(&None, &None, &headers(&param(None), 10 + i), i as usize))
        .sum();
    assert_eq!(b.size_in_bytes(), RECORD_BATCH_OVERHEAD + computed);
}

/// A batch of `n` records from `base`, keys `k<i>` and values of `value_len` bytes.
fn source_batch(base: i64, n: usize, value_len: usize, compression: Compression) -> Bytes {
    let mut builder = RecordBatchBuilder::new(base).compression(compression);
    for i in 0..n {
        builder
            .append(
                5,
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from(vec![b'x'; value_len])),
                Vec::new(),
            )
            .unwrap();
    }
    builder.build().unwrap()
}

#[test]
fn source_records_are_read_back_from_the_log_batches() {
    let bytes = source_batch(8, 5, 0, Compression::None);
    let mut read = SourceRead::new(9, 10, 1 << 20);
    let next = read.collect(&bytes, 9);
    assert_eq!(next, 11, "the read stops past the range");
    assert_eq!(read.records.len(), 2);
    assert_eq!(read.records[&9].0.as_deref(), Some(&b"k1"[..]));
    assert_eq!(read.records[&10].0.as_deref(), Some(&b"k2"[..]));
    assert_eq!(read.last_resolved, 10);
    assert!(!read.was_deferred());
}

/// Kafka's decompression budget: a round keeps no more than the DLQ topic's
/// max.message.bytes of records; the rest waits for the next round, and a compressed batch
/// too large for any round is passed over, its records sent with headers only.
#[test]
fn a_round_reads_within_the_dlq_topics_max_message_bytes() {
    // Ten records of ~1 KiB, uncompressed, under a budget of ~3 of them.
    let bytes = source_batch(0, 10, 1000, Compression::None);
    let mut read = SourceRead::new(0, 9, 3_100);
    let next = read.collect(&bytes, 0);
    assert_eq!(read.records.len(), 3);
    assert_eq!((next, read.last_resolved), (3, 2));
    assert!(read.was_deferred() && read.is_done());
    // The next round goes on from there with a budget of its own.
    let mut again = SourceRead::new(3, 9, 3_100);
    assert_eq!(again.collect(&bytes, 3), 6);
    assert_eq!(again.records.keys().min(), Some(&3));

    // A gzip batch of 200 KiB that compresses to little, under a 64 KiB budget: too large
    // for any round, so it is passed over whole; the batch after it is read.
    let mut log = source_batch(0, 200, 1024, Compression::Gzip).to_vec();
    log.extend_from_slice(&source_batch(200, 2, 10, Compression::Gzip));
    let log = Bytes::from(log);
    assert!(log.len() < 64 * 1024, "the batch compresses well");
    let mut read = SourceRead::new(0, 201, 64 * 1024);
    assert_eq!(read.collect(&log, 0), 202);
    assert_eq!(read.last_resolved, 201);
    let mut copied: Vec<_> = read.records.keys().copied().collect();
    copied.sort();
    assert_eq!(copied, vec![200, 201]);

    // One uncompressed record larger than the budget on its own: headers only.
    let big = source_batch(0, 1, 5_000, Compression::None);
    let mut read = SourceRead::new(0, 0, 1_000);
    assert_eq!(read.collect(&big, 0), 1);
    assert!(read.records.is_empty());
    assert_eq!(read.last_resolved, 0);

    // A read given up on resolves the whole range (headers only for what is missing).
    let mut failed = SourceRead::new(4, 9, 1 << 20);
    failed.give_up();
    assert_eq!(failed.last_resolved, 9);
    // And the DLQ batch stops at what a round resolved.
    let p = param(None);
    let (batch, last) = dlq_records(&p, 10, 10, &HashMap::new(), 0, 1 << 20);
    assert_eq!(last, 10);
    assert_eq!(
        Batches::new(batch).next().unwrap().unwrap().record_count(),
        1
    );
}

#[test]
fn a_misconfigured_dlq_is_refused_with_kafkas_messages() {
    let missing = DlqTopicState::Missing;
    let enabled = DlqTopicState::Exists { dlq_enabled: true };
    let disabled = DlqTopicState::Exists { dlq_enabled: false };
    let err = |s: &DlqSettings, t| validate_dlq_topic("g1", s, t).unwrap_err().to_string();
    assert_eq!(
        err(&settings(""), enabled),
        "Configured DLQ topic name in share group: g1 is empty."
    );
    assert_eq!(
        err(&settings("__dlq"), enabled),
        "Configured DLQ topic name in share group: g1 cannot start with __, topic: __dlq."
    );
    assert_eq!(
        err(&settings("dlq.a"), disabled),
        "DLQ is not enabled on configured DLQ topic for share group: g1, topic: dlq.a."
    );
    assert_eq!(
        err(&settings("dlq.a"), missing),
        "DLQ topic does not exist and auto create is disabled on cluster for share group: g1, topic: dlq.a."
    );
    assert_eq!(
        err(&settings("other"), enabled),
        "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: g1, topic: other, prefix: dlq.."
    );
    assert!(validate_dlq_topic("g1", &settings("dlq.a"), enabled).is_ok());
    let auto = DlqSettings {
        auto_create_topics: true,
        ..settings("dlq.a")
    };
    assert!(validate_dlq_topic("g1", &auto, missing).is_ok());
    let no_prefix = DlqSettings {
        topic_name_prefix: String::new(),
        ..settings("other")
    };
    assert!(validate_dlq_topic("g1", &no_prefix, enabled).is_ok());
}
