//! The `__cluster_metadata` snapshot format of `kraftd_raft::snapshot` against Apache Kafka's:
//! byte-for-byte equality with snapshots written by Kafka 4.4.0's own `RecordsSnapshotWriter`
//! (kept here as hex), the layout of the header and footer control batches spelled out
//! field by field, round trips, and every truncated or corrupted input read as a typed error.
//!
//! The Kafka snapshots were made from the Maven Central jars (`kafka-raft`, `kafka-metadata`,
//! `kafka-clients` 4.4.0) by a small Java program: `FileRawSnapshotWriter.create(dir,
//! new OffsetAndEpoch(end, 7))`, then `new RecordsSnapshotWriter.Builder()
//! .setLastContainedLogTimestamp(1700000000000L).setTime(<fixed at 1700000000123 ms>)
//! .setMaxBatchSizeBytes(N).setRawSnapshotWriter(raw).setKraftVersion(K)
//! .build(MetadataRecordSerde.INSTANCE)`, one `append(List.of(record))` per record
//! (`FeatureLevelRecord("metadata.version", 27)` v0, then `TopicRecord("topic-i",
//! Uuid(0, i + 1))` v0 for i in 0..n), `freeze()`. The same program read them back with
//! `RecordsSnapshotReader.of(raw, MetadataRecordSerde.INSTANCE, ..., 8 MiB, true, ...)`.

use bytes::Bytes;
use kraftd_protocol::messages::SnapshotHeaderRecord;
use kraftd_protocol::metadata::{FeatureLevelRecord, TopicRecord};
use kraftd_protocol::metadata_record::encode_metadata_record;
use kraftd_protocol::records::{
    Batches, ControlRecord, ControlRecordType, RecordBatchBuilder, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID, NO_SEQUENCE,
};
use kraftd_protocol::{MetadataRecord, Uuid};
use kraftd_raft::snapshot::{
    read_snapshot, SnapshotError, SnapshotReader, SnapshotWriter, DEFAULT_MAX_BATCH_BYTES,
};

const EPOCH: i32 = 7;
const LAST_CONTAINED_LOG_TIMESTAMP: i64 = 1_700_000_000_000;
const APPEND_TIME: i64 = 1_700_000_000_123;

/// Kafka 4.4.0, max batch 8 MiB, kraft.version 0, n = 3 (`...05-0000000007.checkpoint`).
const KAFKA_8MIB_3: &str = "\
00000000000000000000004700000007024fd9c2b60020000000000000018bcfe5687b0000018bcfe5687bffffffffffffffffffffffffffff000000012a0000\
0008000000031600000000018bcfe5680000000000000000000001000000b8000000070293baafb40000000000030000018bcfe5687b0000018bcfe5687bffff\
ffffffffffffffffffffffff000000043a000000012e010c00116d657461646174612e76657273696f6e001b000044000002013801020008746f7069632d3000\
000000000000000000000000000001000044000004013801020008746f7069632d3100000000000000000000000000000002000044000006013801020008746f\
7069632d3200000000000000000000000000000003000000000000000000050000003f000000070283eb1ec30020000000000000018bcfe5687b0000018bcfe5\
687bffffffffffffffffffffffffffff000000011a00000008000000040600000000";

/// Kafka 4.4.0, max batch 150 bytes, n = 6: batches of 2, 1, 2, 1, 1 records.
const KAFKA_150_6: &str = "\
00000000000000000000004700000007024fd9c2b60020000000000000018bcfe5687b0000018bcfe5687bffffffffffffffffffffffffffff000000012a0000\
0008000000031600000000018bcfe568000000000000000000000100000072000000070260d847a00000000000010000018bcfe5687b0000018bcfe5687bffff\
ffffffffffffffffffffffff000000023a000000012e010c00116d657461646174612e76657273696f6e001b000044000002013801020008746f7069632d3000\
0000000000000000000000000000010000000000000000000300000054000000070252fd51d70000000000000000018bcfe5687b0000018bcfe5687bffffffff\
ffffffffffffffffffff0000000144000000013801020008746f7069632d31000000000000000000000000000000020000000000000000000400000077000000\
07029d25525f0000000000010000018bcfe5687b0000018bcfe5687bffffffffffffffffffffffffffff0000000244000000013801020008746f7069632d3200\
000000000000000000000000000003000044000002013801020008746f7069632d33000000000000000000000000000000040000000000000000000600000054\
00000007027003a7270000000000000000018bcfe5687b0000018bcfe5687bffffffffffffffffffffffffffff0000000144000000013801020008746f706963\
2d34000000000000000000000000000000050000000000000000000700000054000000070223162bb30000000000000000018bcfe5687b0000018bcfe5687bff\
ffffffffffffffffffffffffff0000000144000000013801020008746f7069632d3500000000000000000000000000000006000000000000000000080000003f\
000000070283eb1ec30020000000000000018bcfe5687b0000018bcfe5687bffffffffffffffffffffffffffff000000011a00000008000000040600000000";

/// Kafka 4.4.0, max batch 200 bytes, n = 6: batches of 4, 1, 2 records.
const KAFKA_200_6: &str = "\
00000000000000000000004700000007024fd9c2b60020000000000000018bcfe5687b0000018bcfe5687bffffffffffffffffffffffffffff000000012a0000\
0008000000031600000000018bcfe5680000000000000000000001000000b8000000070293baafb40000000000030000018bcfe5687b0000018bcfe5687bffff\
ffffffffffffffffffffffff000000043a000000012e010c00116d657461646174612e76657273696f6e001b000044000002013801020008746f7069632d3000\
000000000000000000000000000001000044000004013801020008746f7069632d3100000000000000000000000000000002000044000006013801020008746f\
7069632d320000000000000000000000000000000300000000000000000005000000540000000702f4d648ff0000000000000000018bcfe5687b0000018bcfe5\
687bffffffffffffffffffffffffffff0000000144000000013801020008746f7069632d33000000000000000000000000000000040000000000000000000600\
0000770000000702f84530d40000000000010000018bcfe5687b0000018bcfe5687bffffffffffffffffffffffffffff0000000244000000013801020008746f\
7069632d3400000000000000000000000000000005000044000002013801020008746f7069632d35000000000000000000000000000000060000000000000000\
00080000003f000000070283eb1ec30020000000000000018bcfe5687b0000018bcfe5687bffffffffffffffffffffffffffff000000011a0000000800000004\
0600000000";

/// Kafka 4.4.0, max batch 8 MiB, kraft.version 1 (no voter set), n = 1: the header batch
/// also holds a KRaftVersionRecord, so data starts at offset 2.
const KAFKA_KRAFT_V1_1: &str = "\
00000000000000000000005700000007022abc8c800020000000010000018bcfe5687b0000018bcfe5687bffffffffffffffffffffffffffff000000022a0000\
0008000000031600000000018bcfe5680000001e00000208000000050a000000010000000000000000000200000072000000070260d847a00000000000010000\
018bcfe5687b0000018bcfe5687bffffffffffffffffffffffffffff000000023a000000012e010c00116d657461646174612e76657273696f6e001b00004400\
0002013801020008746f7069632d3000000000000000000000000000000001000000000000000000040000003f000000070283eb1ec30020000000000000018b\
cfe5687b0000018bcfe5687bffffffffffffffffffffffffffff000000011a00000008000000040600000000";

fn unhex(s: &str) -> Bytes {
    assert!(s.len() % 2 == 0);
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect::<Vec<u8>>()
        .into()
}

/// The records the Java program appended, framed as Kafka's `MetadataRecordSerde` does.
fn kafka_values(n: u64) -> Vec<Bytes> {
    let mut out = vec![encode_metadata_record(
        &MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: "metadata.version".into(),
            feature_level: 27,
            ..Default::default()
        }),
        0,
    )
    .unwrap()];
    for i in 0..n {
        let mut id = [0u8; 16];
        id[8..].copy_from_slice(&(i + 1).to_be_bytes());
        out.push(
            encode_metadata_record(
                &MetadataRecord::Topic(TopicRecord {
                    name: format!("topic-{i}"),
                    topic_id: Uuid(id),
                    ..Default::default()
                }),
                0,
            )
            .unwrap(),
        );
    }
    out
}

fn write(values: &[Bytes], max_batch_bytes: usize) -> Bytes {
    let mut w = SnapshotWriter::with_max_batch_bytes(
        EPOCH,
        LAST_CONTAINED_LOG_TIMESTAMP,
        APPEND_TIME,
        max_batch_bytes,
    )
    .unwrap();
    for v in values {
        w.append(v.clone()).unwrap();
    }
    w.finish().unwrap()
}

fn batch_sizes(bytes: &Bytes) -> Vec<i32> {
    Batches::new(bytes.clone())
        .map(|b| b.unwrap().record_count())
        .collect()
}

#[test]
fn writes_the_bytes_kafka_4_4_writes() {
    for (golden, n, max, sizes) in [
        (KAFKA_8MIB_3, 3, DEFAULT_MAX_BATCH_BYTES, vec![1, 4, 1]),
        (KAFKA_150_6, 6, 150, vec![1, 2, 1, 2, 1, 1, 1]),
        (KAFKA_200_6, 6, 200, vec![1, 4, 1, 2, 1]),
    ] {
        let golden = unhex(golden);
        let ours = write(&kafka_values(n), max);
        assert_eq!(batch_sizes(&ours), sizes, "batching with max {max}");
        assert_eq!(
            ours, golden,
            "snapshot with max batch {max} differs from Kafka's"
        );
    }
}

#[test]
fn reads_what_kafka_4_4_writes() {
    for (golden, n) in [
        (KAFKA_8MIB_3, 3),
        (KAFKA_150_6, 6),
        (KAFKA_200_6, 6),
        (KAFKA_KRAFT_V1_1, 1),
    ] {
        let snapshot = read_snapshot(unhex(golden)).unwrap();
        assert_eq!(snapshot.epoch, EPOCH);
        assert_eq!(
            snapshot.header.last_contained_log_timestamp,
            LAST_CONTAINED_LOG_TIMESTAMP
        );
        assert_eq!(snapshot.header.version, 0);
        let values: Vec<Bytes> = snapshot.values().cloned().collect();
        assert_eq!(values, kafka_values(n));
    }
    let v1 = read_snapshot(unhex(KAFKA_KRAFT_V1_1)).unwrap();
    assert_eq!(v1.kraft_version.unwrap().k_raft_version, 1);
    assert!(v1.voters.is_none());
    assert_eq!(v1.batches[0].base_offset, 2);
}

/// The layout of Kafka's snapshot batches, field by field, as `RecordsSnapshotWriter`,
/// `MemoryRecordsBuilder.appendSnapshotHeaderMessage`/`appendSnapshotFooterMessage` and
/// `BatchBuilder` write them.
#[test]
fn header_and_footer_batches_have_kafkas_layout() {
    let bytes = write(&kafka_values(2), DEFAULT_MAX_BATCH_BYTES);
    let batches: Vec<_> = Batches::new(bytes.clone()).map(|b| b.unwrap()).collect();
    assert_eq!(batches.len(), 3);
    let mut expected_base = 0;
    for b in &batches {
        b.validate_crc().unwrap();
        assert_eq!(b.magic(), 2);
        assert_eq!(b.base_offset(), expected_base, "contiguous offsets from 0");
        expected_base = b.next_offset();
        assert_eq!(b.partition_leader_epoch(), EPOCH, "the snapshot's epoch");
        assert_eq!(b.producer_id(), NO_PRODUCER_ID);
        assert_eq!(b.producer_epoch(), NO_PRODUCER_EPOCH);
        assert_eq!(b.base_sequence(), NO_SEQUENCE);
        assert!(!b.is_transactional());
        assert_eq!(b.base_timestamp(), APPEND_TIME);
        assert_eq!(b.max_timestamp(), APPEND_TIME);
        // CreateTime, no compression; only the control bit (0x20) may be set.
        let control = b.attributes() == 0x20;
        assert!(control || b.attributes() == 0);
        for r in b.records().unwrap() {
            let r = r.unwrap();
            assert_eq!(r.timestamp_delta, 0);
            assert!(r.headers.is_empty());
            assert_eq!(r.attributes, 0);
            assert_eq!(r.key.is_some(), control, "data records have null keys");
        }
    }
    let (header, data, footer) = (&batches[0], &batches[1], &batches[2]);
    assert!(header.is_control() && !data.is_control() && footer.is_control());
    assert_eq!((header.base_offset(), header.record_count()), (0, 1));
    assert_eq!((data.base_offset(), data.record_count()), (1, 3));
    assert_eq!((footer.base_offset(), footer.record_count()), (4, 1));

    let header_record = header.records().unwrap().next().unwrap().unwrap();
    // Key: int16 version 0, int16 type 3 (SNAPSHOT_HEADER).
    assert_eq!(&header_record.key.unwrap()[..], &[0, 0, 0, 3]);
    // Value: int16 version 0, int64 lastContainedLogTimestamp, empty tagged fields.
    let mut want = vec![0u8, 0];
    want.extend_from_slice(&LAST_CONTAINED_LOG_TIMESTAMP.to_be_bytes());
    want.push(0);
    assert_eq!(&header_record.value.unwrap()[..], &want[..]);

    let footer_record = footer.records().unwrap().next().unwrap().unwrap();
    // Key: version 0, type 4 (SNAPSHOT_FOOTER); value: int16 version 0, no tagged fields.
    assert_eq!(&footer_record.key.unwrap()[..], &[0, 0, 0, 4]);
    assert_eq!(&footer_record.value.unwrap()[..], &[0, 0, 0]);

    // Data record values are the framed metadata records, unchanged.
    let values: Vec<Bytes> = data
        .records()
        .unwrap()
        .map(|r| r.unwrap().value.unwrap())
        .collect();
    assert_eq!(values, kafka_values(2));
}

#[test]
fn round_trips_many_records_with_groups_kept_together() {
    // Values of varied sizes, some larger than a small batch limit.
    let values: Vec<Bytes> = (0..2000u32)
        .map(|i| Bytes::from(vec![(i % 251) as u8; (i as usize * 37) % 700 + 1]))
        .collect();
    for max in [64, 1000, 4096, DEFAULT_MAX_BATCH_BYTES] {
        let mut w = SnapshotWriter::with_max_batch_bytes(3, 42, 43, max).unwrap();
        for group in values.chunks(7) {
            w.append_group(group).unwrap();
        }
        assert_eq!(w.records(), 2000);
        let bytes = w.finish().unwrap();
        let snapshot = read_snapshot(bytes.clone()).unwrap();
        assert_eq!(snapshot.epoch, 3);
        assert_eq!(snapshot.header.last_contained_log_timestamp, 42);
        let back: Vec<Bytes> = snapshot.values().cloned().collect();
        assert_eq!(back, values, "max {max}");
        // A group never straddles two batches; batches stay within the limit unless one
        // group alone is larger.
        for b in Batches::new(bytes)
            .map(Result::unwrap)
            .filter(|b| !b.is_control())
        {
            assert_eq!((b.base_offset() - 1) % 7, 0, "batch starts a group");
            assert!(b.size_in_bytes() <= max || b.record_count() <= 7);
        }
    }
}

#[test]
fn an_empty_snapshot_is_header_then_footer() {
    let bytes = SnapshotWriter::new(5, 10, 11).unwrap().finish().unwrap();
    assert_eq!(batch_sizes(&bytes), vec![1, 1]);
    let snapshot = read_snapshot(bytes).unwrap();
    assert!(snapshot.batches.is_empty());
    assert_eq!(snapshot.epoch, 5);
}

#[test]
fn the_reader_streams_batches_and_ends_only_after_the_footer() {
    let bytes = write(&kafka_values(6), 150);
    let mut reader = SnapshotReader::new(bytes).unwrap();
    assert_eq!(reader.epoch(), EPOCH);
    assert_eq!(
        reader.last_contained_log_timestamp(),
        LAST_CONTAINED_LOG_TIMESTAMP
    );
    let bases: Vec<i64> = reader.by_ref().map(|b| b.unwrap().base_offset).collect();
    assert_eq!(bases, vec![1, 3, 4, 6, 7]);
    assert!(reader.next().is_none());
}

fn read_err(bytes: impl Into<Bytes>) -> SnapshotError {
    match read_snapshot(bytes.into()) {
        Ok(s) => panic!("read a bad snapshot: {s:?}"),
        Err(e) => e,
    }
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = write(&kafka_values(6), 150);
    for len in 0..bytes.len() {
        let err = read_err(bytes.slice(..len));
        match err {
            SnapshotError::Empty
            | SnapshotError::Truncated { .. }
            | SnapshotError::MissingFooter { .. } => {}
            other => panic!("cut at {len}: unexpected {other:?}"),
        }
    }
}

#[test]
fn every_flipped_byte_is_an_error() {
    let bytes = write(&kafka_values(6), 150);
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut bad = bytes.to_vec();
            bad[i] ^= mask;
            let _ = read_err(bad);
        }
    }
}

#[test]
fn bytes_after_the_footer_are_an_error() {
    let bytes = write(&kafka_values(1), DEFAULT_MAX_BATCH_BYTES);
    let mut longer = bytes.to_vec();
    longer.push(0);
    assert!(matches!(
        read_err(longer),
        SnapshotError::TrailingBytes { extra: 1, .. }
    ));
    // A whole second snapshot after the first.
    let mut twice = bytes.to_vec();
    twice.extend_from_slice(&bytes);
    assert!(matches!(
        read_err(twice),
        SnapshotError::TrailingBytes { .. }
    ));
}

/// Builds a snapshot batch by batch, for malformed layouts the writer never makes.
fn control(base: i64, epoch: i32, records: &[ControlRecord]) -> Vec<u8> {
    let mut b = RecordBatchBuilder::new(base)
        .partition_leader_epoch(epoch)
        .control(true);
    for r in records {
        b.append(
            0,
            Some(r.key()),
            Some(r.encode_value().unwrap()),
            Vec::new(),
        )
        .unwrap();
    }
    b.build().unwrap().to_vec()
}

fn data(base: i64, epoch: i32, values: &[Option<&[u8]>]) -> Vec<u8> {
    let mut b = RecordBatchBuilder::new(base).partition_leader_epoch(epoch);
    for v in values {
        b.append(0, None, v.map(Bytes::copy_from_slice), Vec::new())
            .unwrap();
    }
    b.build().unwrap().to_vec()
}

fn header() -> ControlRecord {
    ControlRecord::SnapshotHeader(SnapshotHeaderRecord::default())
}

fn footer() -> ControlRecord {
    ControlRecord::SnapshotFooter(Default::default())
}

#[test]
fn malformed_layouts_are_typed_errors() {
    let v: &[u8] = b"x";
    // No header: a data batch first.
    let bytes = [data(0, 1, &[Some(v)]), control(1, 1, &[footer()])].concat();
    assert!(matches!(
        read_err(bytes),
        SnapshotError::MissingHeader { .. }
    ));
    // A control batch first, but not opening with the header.
    let bytes = [control(0, 1, &[footer()])].concat();
    assert!(matches!(
        read_err(bytes),
        SnapshotError::MissingHeader { .. }
    ));
    // Header not at offset 0.
    let bytes = [control(5, 1, &[header()]), control(6, 1, &[footer()])].concat();
    assert!(matches!(read_err(bytes), SnapshotError::OffsetGap { .. }));
    // No footer.
    let bytes = [control(0, 1, &[header()]), data(1, 1, &[Some(v)])].concat();
    assert!(matches!(
        read_err(bytes),
        SnapshotError::MissingFooter { .. }
    ));
    // An offset gap between data batches.
    let bytes = [
        control(0, 1, &[header()]),
        data(1, 1, &[Some(v)]),
        data(3, 1, &[Some(v)]),
        control(4, 1, &[footer()]),
    ]
    .concat();
    assert!(matches!(
        read_err(bytes),
        SnapshotError::OffsetGap {
            expected: 2,
            actual: 3,
            ..
        }
    ));
    // Another epoch in the middle.
    let bytes = [
        control(0, 1, &[header()]),
        data(1, 2, &[Some(v)]),
        control(2, 1, &[footer()]),
    ]
    .concat();
    assert!(matches!(
        read_err(bytes),
        SnapshotError::EpochMismatch {
            expected: 1,
            actual: 2,
            ..
        }
    ));
    // A null value.
    let bytes = [
        control(0, 1, &[header()]),
        data(1, 1, &[Some(v), None]),
        control(3, 1, &[footer()]),
    ]
    .concat();
    assert!(matches!(
        read_err(bytes),
        SnapshotError::NullValue { offset: 2 }
    ));
    // A second header in the middle.
    let bytes = [
        control(0, 1, &[header()]),
        control(1, 1, &[header()]),
        control(2, 1, &[footer()]),
    ]
    .concat();
    assert!(matches!(
        read_err(bytes),
        SnapshotError::UnexpectedControlRecord {
            record_type: ControlRecordType::SnapshotHeader,
            ..
        }
    ));
    // Records after the footer in its batch, or a footer batch followed by more batches.
    let bytes = [
        control(0, 1, &[header()]),
        control(1, 1, &[footer(), footer()]),
    ]
    .concat();
    assert!(matches!(read_err(bytes), SnapshotError::BadFooter { .. }));
    let bytes = [
        control(0, 1, &[header()]),
        control(1, 1, &[footer()]),
        data(2, 1, &[Some(v)]),
    ]
    .concat();
    assert!(matches!(
        read_err(bytes),
        SnapshotError::TrailingBytes { .. }
    ));
    // Two headers in the header batch.
    let bytes = [
        control(0, 1, &[header(), header()]),
        control(2, 1, &[footer()]),
    ]
    .concat();
    assert!(matches!(
        read_err(bytes),
        SnapshotError::UnexpectedControlRecord { .. }
    ));
    // Garbage.
    assert!(matches!(
        read_err(vec![0u8; 100]),
        SnapshotError::Batch { .. }
    ));
    assert!(matches!(read_err(Vec::new()), SnapshotError::Empty));
}
