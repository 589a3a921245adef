//! A broker following a big metadata log publishes each delta in time proportional to the
//! delta, not to the cluster (issue 19; a benchmark, not a test). The broker's
//! MetadataLoader with its publishers (the MetadataCache and the dynamic-config, SCRAM, ACL
//! and client-quota publishers; the ReplicaManager's and the coordinators' are benchmarked
//! with the replica layer) loads a snapshot of a cluster of 10,000 and of 1,000,000
//! partitions (topics of 100, RF 3 over 10 brokers), then is fed committed batches of a
//! given size, each one timed from the batch to the end of its publication (decoding,
//! replay, publishers):
//! - create: topics of 100 partitions (`TopicRecord` + `PartitionRecord`s);
//! - move: `PartitionChangeRecord`s moving leadership of existing partitions;
//! - delete: `RemoveTopicRecord`s of those created.
//!
//! Printed per cluster size and delta size: µs per batch and per record. Equal per-record
//! figures at 10k and 1M mean no work over all partitions per delta.
//!
//! `cargo bench -p kraftd-broker --bench metadata_publish`; `KRAFTD_BENCH_SIZES` (default
//! `10000,1000000`) and `KRAFTD_BENCH_DELTAS` (partitions per batch, default `100,1000,10000`).

use std::time::Instant;

use bytes::Bytes;
use kraftd_broker::metadata::{MetadataCache, MetadataLoader};
use kraftd_controller::publisher::{AuthorizerConfig, NodePublishers};
use kraftd_controller::snapshot::write_image_snapshot;
use kraftd_controller::testing::records::{feature, partition, topic};
use kraftd_controller::{MetadataImage, MetadataPublisher};
use kraftd_log::SnapshotId;
use kraftd_protocol::metadata::{PartitionChangeRecord, RegisterBrokerRecord, RemoveTopicRecord};
use kraftd_protocol::metadata_record::encode_metadata_record;
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::{MetadataRecord, Uuid};
use kraftd_raft::CommittedBatch;

const BROKERS: i32 = 10;
const TOPIC_PARTITIONS: i32 = 100;

fn list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .ok()
        .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

fn topic_id(n: usize) -> Uuid {
    let mut b = [7u8; 16];
    b[8..].copy_from_slice(&(n as u64).to_be_bytes());
    Uuid(b)
}

fn replicas(t: usize, p: i32) -> Vec<i32> {
    let first = (t as i32 * 7 + p) % BROKERS;
    (0..3).map(|i| (first + i) % BROKERS).collect()
}

/// A topic's records: the topic and its partitions, led by their first replica.
fn topic_records(n: usize, out: &mut Vec<MetadataRecord>) {
    let id = topic_id(n);
    out.push(topic(&format!("t{n:07}"), id));
    for p in 0..TOPIC_PARTITIONS {
        let r = replicas(n, p);
        out.push(partition(id, p, &r, &r, r[0]));
    }
}

fn cluster_records(partitions: usize) -> Vec<MetadataRecord> {
    let mut records = vec![feature("metadata.version", 25)];
    for b in 0..BROKERS {
        records.push(MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            broker_id: b,
            broker_epoch: 10 + i64::from(b),
            fenced: false,
            ..Default::default()
        }));
    }
    for t in 0..partitions / TOPIC_PARTITIONS as usize {
        topic_records(t, &mut records);
    }
    records
}

fn batch(base: i64, records: &[MetadataRecord]) -> CommittedBatch {
    let mut builder = RecordBatchBuilder::new(base).partition_leader_epoch(1);
    for r in records {
        let value: Bytes = encode_metadata_record(r, r.key().valid_versions().max).unwrap();
        builder.append(0, None, Some(value), Vec::new()).unwrap();
    }
    let last_offset = builder.next_offset() - 1;
    CommittedBatch {
        base_offset: base,
        last_offset,
        epoch: 1,
        is_control: false,
        bytes: builder.build().unwrap(),
    }
}

struct Follower {
    loader: MetadataLoader,
    next_offset: i64,
    next_topic: usize,
}

impl Follower {
    fn new(image: &MetadataImage) -> (Follower, f64) {
        let mut publishers: Vec<Box<dyn MetadataPublisher + Send>> =
            vec![Box::new(MetadataCache::new(1, "bench"))];
        publishers.extend(NodePublishers::new(1, AuthorizerConfig::default()).publishers());
        let mut loader = MetadataLoader::new(1, publishers);
        let bytes = write_image_snapshot(image, 1, 0).expect("snapshot writes");
        let end_offset = 1_000;
        let t0 = Instant::now();
        loader.handle_snapshot(
            SnapshotId {
                end_offset,
                epoch: 1,
            },
            bytes,
            0,
        );
        loader.handle_high_watermark(end_offset, 0);
        assert!(loader.caught_up());
        let secs = t0.elapsed().as_secs_f64();
        (
            Follower {
                loader,
                next_offset: end_offset,
                next_topic: 0,
            },
            secs,
        )
    }

    /// Feeds one committed batch; its time in µs.
    fn feed(&mut self, records: &[MetadataRecord]) -> f64 {
        let b = batch(self.next_offset, records);
        self.next_offset = b.last_offset + 1;
        let t0 = Instant::now();
        self.loader.handle_commit(&b, 0);
        let us = t0.elapsed().as_secs_f64() * 1e6;
        assert_eq!(self.loader.last_applied_offset(), b.last_offset);
        assert!(self.loader.last_load_error().is_none());
        us
    }
}

fn main() {
    let sizes = list("KRAFTD_BENCH_SIZES", &[10_000, 1_000_000]);
    let deltas = list("KRAFTD_BENCH_DELTAS", &[100, 1_000, 10_000]);
    println!(
        "broker metadata publication: MetadataLoader + MetadataCache + dynamic-config, SCRAM, \
         ACL and client-quota publishers; {BROKERS} brokers, topics of {TOPIC_PARTITIONS}, RF 3"
    );
    println!(
        "{:>10} {:>7} | {:>12} {:>9} | {:>12} {:>9} | {:>12} {:>9}",
        "partitions", "delta", "create µs", "µs/rec", "move µs", "µs/rec", "delete µs", "µs/rec"
    );
    for &size in &sizes {
        let image = MetadataImage::empty()
            .replay_all(&cluster_records(size))
            .expect("replays");
        let (mut follower, load_secs) = Follower::new(&image);
        follower.next_topic = size / TOPIC_PARTITIONS as usize;
        eprintln!("{size} partitions: snapshot loaded and published in {load_secs:.2} s");
        for &delta in &deltas {
            let topics = (delta / TOPIC_PARTITIONS as usize).max(1);
            // create
            let mut records = Vec::new();
            let first = follower.next_topic;
            for t in first..first + topics {
                topic_records(t, &mut records);
            }
            follower.next_topic += topics;
            let create = follower.feed(&records);
            let create_per = create / records.len() as f64;
            // move: leadership of `delta` existing partitions to their second replica
            let moves: Vec<MetadataRecord> = (0..delta)
                .map(|i| {
                    let t = i / TOPIC_PARTITIONS as usize;
                    let p = (i % TOPIC_PARTITIONS as usize) as i32;
                    let r = replicas(t, p);
                    let current = follower
                        .loader
                        .image()
                        .topics
                        .partition(&topic_id(t), p)
                        .expect("exists")
                        .leader;
                    let leader = if current == r[0] { r[1] } else { r[0] };
                    MetadataRecord::PartitionChange(PartitionChangeRecord {
                        topic_id: topic_id(t),
                        partition_id: p,
                        leader,
                        ..Default::default()
                    })
                })
                .collect();
            let moved = follower.feed(&moves);
            // delete what was created
            let removes: Vec<MetadataRecord> = (first..first + topics)
                .map(|t| {
                    MetadataRecord::RemoveTopic(RemoveTopicRecord {
                        topic_id: topic_id(t),
                        ..Default::default()
                    })
                })
                .collect();
            let deleted = follower.feed(&removes);
            println!(
                "{:>10} {:>7} | {:>12.0} {:>9.2} | {:>12.0} {:>9.2} | {:>12.0} {:>9.2}",
                size,
                delta,
                create,
                create_per,
                moved,
                moved / delta as f64,
                deleted,
                deleted / delta as f64
            );
        }
        // one-record deltas: the fixed cost per publication
        let mut samples = Vec::new();
        for _ in 0..200 {
            let t = 0usize;
            let current = follower
                .loader
                .image()
                .topics
                .partition(&topic_id(t), 0)
                .expect("exists")
                .leader;
            let r = replicas(t, 0);
            let leader = if current == r[0] { r[1] } else { r[0] };
            samples.push(follower.feed(&[MetadataRecord::PartitionChange(
                PartitionChangeRecord {
                    topic_id: topic_id(t),
                    partition_id: 0,
                    leader,
                    ..Default::default()
                },
            )]));
        }
        samples.sort_by(f64::total_cmp);
        println!(
            "{:>10} {:>7} | one PartitionChangeRecord per batch: p50 {:.1} µs, p99 {:.1} µs",
            size,
            1,
            samples[samples.len() / 2],
            samples[samples.len() * 99 / 100]
        );
    }
    println!(
        "create: one batch of TopicRecord + PartitionRecords (µs/rec over all its records); \
         move: PartitionChangeRecords; delete: RemoveTopicRecords (µs per removed partition)"
    );
}
