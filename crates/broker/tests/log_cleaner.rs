//! The broker's log cleaner over a real `ReplicaManager` (logs in a tempdir, metadata
//! replayed as in `replica_manager.rs`): two compacted partitions are written with repeated
//! keys, one of them gets a sealed segment corrupted by hand, and the cleaner threads must
//! mark that one uncleanable (counted in `uncleanable-partitions-count`) and still clean
//! the other, whose checkpoint reaches the `cleaner-offset-checkpoint` file.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kraftd_broker::metadata::MetadataCache;
use kraftd_broker::replica::log_cleaner::{LogCleaner, LogCleanerConfig};
use kraftd_broker::replica::replica_manager::{ReplicaManager, ReplicaManagerConfig};
use kraftd_broker::replica::TopicIdPartition;
use kraftd_broker::server::alter_partition_manager::DefaultAlterPartitionManager;
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_log::cleaner::CleanerConfig;
use kraftd_protocol::metadata::register_broker_record::BrokerEndpoint;
use kraftd_protocol::metadata::*;
use kraftd_protocol::records::{Batches, RecordBatchBuilder};
use kraftd_protocol::{ErrorCode, MetadataRecord, Uuid};
use tokio::sync::watch;

use common::unused_port;

const LOCAL: i32 = 1;
const GOOD: (&str, Uuid) = ("good", Uuid([0x0a; 16]));
const BAD: (&str, Uuid) = ("bad", Uuid([0x0b; 16]));

fn metadata() -> Vec<MetadataRecord> {
    let mut records = vec![
        MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: "metadata.version".into(),
            feature_level: 25,
            ..Default::default()
        }),
        MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            broker_id: LOCAL,
            broker_epoch: 10,
            incarnation_id: Uuid([0xb1; 16]),
            end_points: vec![BrokerEndpoint {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 1,
                security_protocol: 0,
                ..Default::default()
            }],
            fenced: true,
            ..Default::default()
        }),
        MetadataRecord::UnfenceBroker(UnfenceBrokerRecord {
            id: LOCAL,
            epoch: 10,
            ..Default::default()
        }),
    ];
    for (name, id) in [GOOD, BAD] {
        records.push(MetadataRecord::Topic(TopicRecord {
            name: name.into(),
            topic_id: id,
            ..Default::default()
        }));
        records.push(MetadataRecord::Partition(PartitionRecord {
            partition_id: 0,
            topic_id: id,
            replicas: vec![LOCAL],
            isr: vec![LOCAL],
            leader: LOCAL,
            leader_epoch: 1,
            ..Default::default()
        }));
        for (key, value) in [
            ("cleanup.policy", "compact"),
            ("internal.segment.bytes", "2048"),
            ("min.cleanable.dirty.ratio", "0.01"),
        ] {
            records.push(MetadataRecord::Config(ConfigRecord {
                resource_type: 2,
                resource_name: name.into(),
                name: key.into(),
                value: Some(value.into()),
                ..Default::default()
            }));
        }
    }
    records
}

/// A keyed batch: `key-<k>` → `round-<round>` for every k in `keys`.
fn keyed(round: u32, keys: std::ops::Range<u32>) -> Bytes {
    let mut b = RecordBatchBuilder::new(0);
    for k in keys {
        b.append(
            0,
            Some(Bytes::from(format!("key-{k}"))),
            Some(Bytes::from(format!("round-{round}-{}", "x".repeat(40)))),
            Vec::new(),
        )
        .unwrap();
    }
    b.build().unwrap()
}

fn tp((name, id): (&str, Uuid)) -> TopicIdPartition {
    TopicIdPartition {
        topic_id: id,
        topic: name.into(),
        partition: 0,
    }
}

/// Every (offset, key, value) of the partition's log, read as a consumer would.
fn read_all(rm: &ReplicaManager, t: &TopicIdPartition) -> Vec<(i64, Bytes, Bytes)> {
    let hosted = rm.partition(t.topic_id, 0).unwrap();
    let p = hosted.lock();
    let log = p.log();
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let read = log.read(offset, 1 << 20, i64::MAX).unwrap();
        for batch in Batches::new(read.bytes.clone()) {
            let batch = batch.unwrap();
            for r in batch.records().unwrap() {
                let r = r.unwrap();
                out.push((r.offset(&batch), r.key.unwrap(), r.value.unwrap()));
            }
        }
        offset = read.next_offset;
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_partition_is_marked_uncleanable_and_the_others_are_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, _raft) = common::channel_to(
        format!("broker-{LOCAL}-alter-partition-channel"),
        common::voters_on(1000, unused_port()),
        1000,
        Duration::from_secs(1),
    );
    let (_epoch, epoch_rx) = watch::channel(10);
    let alter = DefaultAlterPartitionManager::start(LOCAL, epoch_rx, channel);
    let cache = MetadataCache::new(LOCAL, "log-cleaner-test");
    let config = ReplicaManagerConfig::new(LOCAL, vec![dir.path().to_path_buf()]);
    let rm =
        ReplicaManager::new(config, cache.clone(), alter, Arc::new(AtomicI64::new(10))).unwrap();
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    for r in metadata() {
        delta.replay(&r).unwrap();
    }
    let image = delta.apply();
    cache.set_image(image.clone());
    rm.apply_delta(&delta, &image);

    // Ten rounds over the same twenty keys: many sealed segments, 95% superseded.
    for t in [tp(GOOD), tp(BAD)] {
        for round in 0..10 {
            for part in 0..2 {
                let mut r = rm
                    .append_records(
                        1,
                        Duration::from_secs(5),
                        vec![(t.clone(), keyed(round, part * 10..part * 10 + 10))],
                    )
                    .await;
                let (_, result) = r.pop().unwrap();
                assert_eq!(result.error, ErrorCode::None, "{result:?}");
            }
        }
    }
    let end = |t: &TopicIdPartition| {
        let hosted = rm.partition(t.topic_id, 0).unwrap();
        let p = hosted.lock();
        (p.log().log_end_offset(), p.log().segment_base_offsets())
    };
    let (bad_end, bad_segments) = end(&tp(BAD));
    assert_eq!(bad_end, 200);
    assert!(bad_segments.len() >= 4, "{bad_segments:?}");

    // Corrupt the second batch of the bad partition's second sealed segment: its record
    // count says far more records than its bytes hold, so reading its records fails.
    let bad_dir = dir.path().join("bad-0");
    let segment = bad_dir.join(format!("{:020}.log", bad_segments[1]));
    let mut bytes = std::fs::read(&segment).unwrap();
    let first_len = i32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize + 12;
    let count_at = first_len + 57;
    assert!(
        bytes.len() > count_at + 4,
        "the segment holds a second batch"
    );
    bytes[count_at..count_at + 4].copy_from_slice(&1000i32.to_be_bytes());
    std::fs::write(&segment, &bytes).unwrap();
    let bad_before = std::fs::read_dir(&bad_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect::<std::collections::BTreeSet<_>>();

    let cleaner = LogCleaner::start(
        &rm,
        &LogCleanerConfig {
            enable: true,
            cleaner: CleanerConfig {
                threads: 1,
                dedupe_buffer_size: 1 << 20,
                backoff_ms: 20,
                ..CleanerConfig::default()
            },
        },
    );
    let metrics = Arc::clone(cleaner.metrics());
    let deadline = Instant::now() + Duration::from_secs(20);
    let good_end = end(&tp(GOOD)).0;
    loop {
        let good = read_all(&rm, &tp(GOOD));
        let cleaned = good.len() < 60;
        let marked = metrics.uncleanable_partitions_count.load(Ordering::Relaxed) == 1;
        if cleaned && marked {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "cleaned {cleaned} ({} records), marked {marked}",
            good.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The good partition: each key's latest value, at its original offset; the records of
    // the active segment are not cleaned yet, so a key may still appear twice there.
    let good = read_all(&rm, &tp(GOOD));
    let mut latest: BTreeMap<Bytes, (i64, Bytes)> = BTreeMap::new();
    let mut prev = -1;
    for (o, k, v) in &good {
        assert!(*o > prev, "offsets increase");
        prev = *o;
        latest.insert(k.clone(), (*o, v.clone()));
    }
    assert_eq!(latest.len(), 20);
    for (o, v) in latest.values() {
        assert!(*o >= 180, "{o}");
        assert!(v.starts_with(b"round-9-"), "{v:?}");
    }
    assert_eq!(end(&tp(GOOD)).0, good_end, "cleaning keeps the log end");
    // The cleaned log is visible before the cleaner writes its checkpoint file: wait for it.
    let checkpoint_path = dir.path().join("cleaner-offset-checkpoint");
    let checkpoint = loop {
        let text = std::fs::read_to_string(&checkpoint_path).unwrap_or_default();
        if text.contains("good 0 ") {
            break text;
        }
        assert!(Instant::now() < deadline, "checkpoint: {text:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(!checkpoint.contains("bad 0 "), "{checkpoint}");

    // The bad partition is left as it was, files and all, and is not tried again: new
    // dirty data in the good one makes the cleaner scan every compacted partition and clean
    // again, and the bad one is still counted once and untouched.
    let cleans = metrics.cleans.load(Ordering::Relaxed);
    for round in 10..14 {
        for part in 0..2 {
            let mut r = rm
                .append_records(
                    1,
                    Duration::from_secs(5),
                    vec![(tp(GOOD), keyed(round, part * 10..part * 10 + 10))],
                )
                .await;
            assert_eq!(r.pop().unwrap().1.error, ErrorCode::None);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while metrics.cleans.load(Ordering::Relaxed) == cleans {
        assert!(
            Instant::now() < deadline,
            "the good partition was not cleaned again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        metrics.uncleanable_partitions_count.load(Ordering::Relaxed),
        1
    );
    let bad_after = std::fs::read_dir(&bad_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect::<std::collections::BTreeSet<_>>();
    assert_eq!(bad_before, bad_after, "no .cleaned file left behind");
    assert_eq!(end(&tp(BAD)).0, 200);
    let mut prom = String::new();
    metrics.write_prometheus(LOCAL, &mut prom);
    assert!(
        prom.lines().any(|l| l
            .starts_with("kafka_log_logcleanermanager_uncleanable_partitions_count")
            && l.ends_with(" 1")),
        "{prom}"
    );
    cleaner.shutdown();
}
