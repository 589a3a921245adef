//! The `ReplicaManager` in-process, on real logs in a tempdir, driven by real metadata: each
//! step replays metadata records (RegisterBroker, Topic, Partition, Config, RemoveTopic, ...)
//! through a `MetadataDelta`, publishes the image to the `MetadataCache` and then hands the
//! delta to `ReplicaManager::apply_delta`, as the metadata publisher does. What is checked is
//! what a client or the next broker start would notice: the partition directories, produce
//! answers, the exact bytes fetched, the fetch purgatory's wake-ups, ListOffsets, min ISR,
//! topic deletion, follower hosting and what survives a restart.
//!
//! The `DefaultAlterPartitionManager` gets a controller channel to an unused port: no ISR
//! change is ever sent, since the partitions this broker leads have one replica or an in-sync
//! follower (whose fetches the tests make by hand), and the periodic ISR shrink is not started.

mod common;
#[path = "replica_manager/coordinator_writer.rs"]
mod coordinator_writer;
#[path = "replica_manager/log_dirs.rs"]
mod log_dirs;
#[path = "replica_manager/scale.rs"]
mod scale;
#[path = "replica_manager/share.rs"]
mod share;
#[path = "replica_manager/transactions.rs"]
mod transactions;
#[path = "replica_manager/validation.rs"]
mod validation;

use kraftd_log::clock::unix_ms;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kraftd_broker::metadata::MetadataCache;
use kraftd_broker::replica::fetch_session::{PartitionFetchParams, SessionWatch};
use kraftd_broker::replica::partition::Role;
use kraftd_broker::replica::replica_manager::{
    FetchLimits, FetchOrigin, FetchResult, ProduceResult, ReplicaManager, ReplicaManagerConfig,
};
use kraftd_broker::replica::TopicIdPartition;
use kraftd_broker::server::alter_partition_manager::DefaultAlterPartitionManager;
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_protocol::metadata::register_broker_record::BrokerEndpoint;
use kraftd_protocol::metadata::*;
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::{ErrorCode, MetadataRecord, Uuid};
use kraftd_raft::driver::RaftMetrics;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use common::unused_port;

/// This broker.
const LOCAL: i32 = 1;
/// Another broker, leading the partitions this one follows.
const REMOTE: i32 = 2;
const LEADER_EPOCH: i32 = 3;
const TOPIC: &str = "orders";
const TOPIC_ID: Uuid = Uuid([0x0d; 16]);
/// Long enough that a fetch ending by its max wait could never pass for a woken one.
const LONG_WAIT: Duration = Duration::from_secs(30);
/// Bounds a wait that must end long before it; reaching it fails the test.
const GUARD: Duration = Duration::from_secs(10);

// ---- metadata records ----

fn metadata_version() -> MetadataRecord {
    MetadataRecord::FeatureLevel(FeatureLevelRecord {
        name: "metadata.version".into(),
        feature_level: 25,
        ..Default::default()
    })
}

fn register(id: i32, epoch: i64, port: u16) -> Vec<MetadataRecord> {
    let mut incarnation = [0u8; 16];
    incarnation[0] = 0xB0;
    incarnation[15] = id as u8;
    vec![
        MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            broker_id: id,
            broker_epoch: epoch,
            incarnation_id: Uuid(incarnation),
            end_points: vec![BrokerEndpoint {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port,
                security_protocol: 0,
                ..Default::default()
            }],
            fenced: true,
            ..Default::default()
        }),
        MetadataRecord::UnfenceBroker(UnfenceBrokerRecord {
            id,
            epoch,
            ..Default::default()
        }),
    ]
}

fn topic(name: &str, id: Uuid) -> MetadataRecord {
    MetadataRecord::Topic(TopicRecord {
        name: name.into(),
        topic_id: id,
        ..Default::default()
    })
}

fn partition(id: Uuid, p: i32, replicas: &[i32], leader: i32) -> MetadataRecord {
    MetadataRecord::Partition(PartitionRecord {
        partition_id: p,
        topic_id: id,
        replicas: replicas.to_vec(),
        isr: replicas.to_vec(),
        leader,
        leader_epoch: LEADER_EPOCH,
        partition_epoch: 0,
        ..Default::default()
    })
}

fn topic_config(name: &str, key: &str, value: Option<&str>) -> MetadataRecord {
    MetadataRecord::Config(ConfigRecord {
        resource_type: 2,
        resource_name: name.into(),
        name: key.into(),
        value: value.map(str::to_owned),
        ..Default::default()
    })
}

fn remove_topic(id: Uuid) -> MetadataRecord {
    MetadataRecord::RemoveTopic(RemoveTopicRecord {
        topic_id: id,
        ..Default::default()
    })
}

/// The cluster every test starts from: both brokers registered and unfenced, `orders`
/// with one partition led by this broker alone.
fn bootstrap(remote_port: u16) -> Vec<MetadataRecord> {
    let mut records = vec![metadata_version()];
    records.extend(register(LOCAL, 10, 1));
    records.extend(register(REMOTE, 11, remote_port));
    records.push(topic(TOPIC, TOPIC_ID));
    records.push(partition(TOPIC_ID, 0, &[LOCAL], LOCAL));
    records
}

/// [`bootstrap`] with `orders` led here and followed (in sync) by [`REMOTE`].
fn bootstrap_with_follower() -> Vec<MetadataRecord> {
    let mut metadata = bootstrap(unused_port());
    metadata.pop();
    metadata.push(partition(TOPIC_ID, 0, &[LOCAL, REMOTE], LOCAL));
    metadata
}

fn topic_partition(name: &str, id: Uuid, partition: i32) -> TopicIdPartition {
    TopicIdPartition {
        topic_id: id,
        topic: name.into(),
        partition,
    }
}

fn orders() -> TopicIdPartition {
    topic_partition(TOPIC, TOPIC_ID, 0)
}

// ---- record batches ----

/// A batch as a client sends it (base offset 0, no leader epoch) of `values` at `timestamp`.
fn batch(timestamp: i64, values: &[&str]) -> Bytes {
    built(RecordBatchBuilder::new(0), timestamp, values)
}

/// An idempotent producer's batch.
fn idempotent_batch(producer_id: i64, sequence: i32, timestamp: i64, values: &[&str]) -> Bytes {
    let builder = RecordBatchBuilder::new(0).producer(producer_id, 0, sequence);
    built(builder, timestamp, values)
}

fn built(mut builder: RecordBatchBuilder, timestamp: i64, values: &[&str]) -> Bytes {
    for v in values {
        builder
            .append(
                timestamp,
                None,
                Some(Bytes::from(v.to_string())),
                Vec::new(),
            )
            .unwrap();
    }
    builder.build().unwrap()
}

/// The batch as the leader stores it: the client's bytes with the base offset and the
/// partition leader epoch stamped (neither is covered by the CRC).
fn stamped(sent: &Bytes, base_offset: i64) -> Vec<u8> {
    let mut bytes = sent.to_vec();
    bytes[0..8].copy_from_slice(&base_offset.to_be_bytes());
    bytes[12..16].copy_from_slice(&LEADER_EPOCH.to_be_bytes());
    bytes
}

// ---- the broker under test ----

/// One broker's ReplicaManager with the metadata it was given so far.
struct Broker {
    rm: Arc<ReplicaManager>,
    cache: MetadataCache,
    image: MetadataImage,
    log_dir: PathBuf,
    _raft: watch::Sender<RaftMetrics>,
    _epoch: watch::Sender<i64>,
}

impl Broker {
    /// A manager on `log_dir` with nothing applied yet.
    fn start(log_dir: &Path) -> Broker {
        let (channel, raft) = common::channel_to(
            format!("broker-{LOCAL}-alter-partition-channel"),
            common::voters_on(1000, unused_port()),
            1000,
            Duration::from_secs(1),
        );
        let (epoch, epoch_rx) = watch::channel(10);
        let alter = DefaultAlterPartitionManager::start(LOCAL, epoch_rx, channel);
        let cache = MetadataCache::new(LOCAL, "replica-manager-test");
        let config = ReplicaManagerConfig::new(LOCAL, vec![log_dir.to_path_buf()]);
        let rm = ReplicaManager::new(config, cache.clone(), alter, Arc::new(AtomicI64::new(10)))
            .unwrap();
        Broker {
            rm,
            cache,
            image: MetadataImage::empty(),
            log_dir: log_dir.to_path_buf(),
            _raft: raft,
            _epoch: epoch,
        }
    }

    /// A manager on a new tempdir given the [`bootstrap`] cluster (and the tempdir).
    fn bootstrapped() -> (tempfile::TempDir, Broker) {
        Broker::started_with(&bootstrap(unused_port()))
    }

    /// A manager on a new tempdir given `records` (and the tempdir).
    fn started_with(records: &[MetadataRecord]) -> (tempfile::TempDir, Broker) {
        let dir = tempfile::tempdir().unwrap();
        let b = Broker::started_on(dir.path(), records);
        (dir, b)
    }

    /// A manager on `log_dir` given `records` (as at a start or a restart).
    fn started_on(log_dir: &Path, records: &[MetadataRecord]) -> Broker {
        let mut b = Broker::start(log_dir);
        b.apply(records);
        b
    }

    /// Replays `records` as one committed delta: the cache first, then the manager.
    fn apply(&mut self, records: &[MetadataRecord]) {
        let mut delta = MetadataDelta::new(&self.image);
        for r in records {
            delta
                .replay(r)
                .unwrap_or_else(|e| panic!("replay failed: {e}"));
        }
        let image = delta.apply();
        self.cache.set_image(image.clone());
        self.rm.apply_delta(&delta, &image);
        self.image = image;
    }

    /// Loads a snapshot holding `records` as the loader publishes one: an empty delta on
    /// the empty image (a full reload) with the new image.
    fn reload(&mut self, records: &[MetadataRecord]) {
        let image = MetadataImage::empty()
            .replay_all(records)
            .unwrap_or_else(|e| panic!("replay failed: {e}"));
        let delta = MetadataDelta::new(&MetadataImage::empty());
        self.cache.set_image(image.clone());
        self.rm.apply_delta(&delta, &image);
        self.image = image;
    }

    async fn produce(&self, acks: i16, tp: &TopicIdPartition, records: Bytes) -> ProduceResult {
        let mut results = self
            .rm
            .append_records(acks, Duration::from_secs(5), vec![(tp.clone(), records)])
            .await;
        assert_eq!(results.len(), 1);
        let (answered, result) = results.pop().unwrap();
        assert_eq!(&answered, tp);
        result
    }

    /// Produces and expects success; returns the base offset.
    async fn produce_ok(&self, acks: i16, tp: &TopicIdPartition, records: Bytes) -> i64 {
        let result = self.produce(acks, tp, records).await;
        assert_eq!(result.error, ErrorCode::None, "{result:?}");
        result.base_offset
    }

    async fn fetch(
        &self,
        tp: &TopicIdPartition,
        offset: i64,
        min_bytes: usize,
        max_wait: Duration,
    ) -> FetchResult {
        fetch(&self.rm, tp, offset, min_bytes, max_wait).await
    }

    /// A consumer fetch of `tp` from `offset` in another task, parked waiting for data.
    async fn waiting_fetch(&self, tp: &TopicIdPartition, offset: i64) -> JoinHandle<FetchResult> {
        let rm = Arc::clone(&self.rm);
        let waiting = {
            let tp = tp.clone();
            tokio::spawn(async move { fetch(&rm, &tp, offset, 1, LONG_WAIT).await })
        };
        let_tasks_park().await;
        assert!(!waiting.is_finished(), "the fetch did not wait");
        waiting
    }

    /// An acks=all produce of `records` in another task, parked waiting for the follower.
    async fn waiting_produce(
        &self,
        tp: &TopicIdPartition,
        records: Bytes,
    ) -> JoinHandle<ProduceResult> {
        let rm = Arc::clone(&self.rm);
        let tp = tp.clone();
        let waiting = tokio::spawn(async move {
            let mut r = rm.append_records(-1, LONG_WAIT, vec![(tp, records)]).await;
            r.pop().unwrap().1
        });
        let_tasks_park().await;
        assert!(
            !waiting.is_finished(),
            "acks=all did not wait for the follower"
        );
        waiting
    }

    /// The in-sync follower [`REMOTE`] fetches `tp` from `offset` (without waiting).
    async fn follower_fetch(
        &self,
        tp: &TopicIdPartition,
        offset: i64,
    ) -> Vec<(TopicIdPartition, FetchResult)> {
        self.follower_fetch_at(tp, offset, 0).await
    }

    /// [`Broker::follower_fetch`] reporting the follower's log start.
    async fn follower_fetch_at(
        &self,
        tp: &TopicIdPartition,
        offset: i64,
        log_start: i64,
    ) -> Vec<(TopicIdPartition, FetchResult)> {
        let (follower, limits, params) = follower_fetch_of(offset, log_start);
        self.rm
            .fetch_messages(follower, limits, &[(tp.clone(), params)])
            .await
    }

    fn partition_dir(&self, tp: &TopicIdPartition) -> PathBuf {
        self.log_dir.join(format!("{}-{}", tp.topic, tp.partition))
    }
}

/// What the in-sync follower [`REMOTE`] (broker epoch 11) asks of a partition from
/// `offset`, its log starting at `log_start`, without waiting.
fn follower_fetch_of(
    offset: i64,
    log_start: i64,
) -> (FetchOrigin, FetchLimits, PartitionFetchParams) {
    let params = PartitionFetchParams {
        fetch_offset: offset,
        log_start_offset: log_start,
        max_bytes: 1 << 20,
        current_leader_epoch: LEADER_EPOCH,
        last_fetched_epoch: LEADER_EPOCH,
        high_watermark: 0,
    };
    let limits = FetchLimits {
        max_wait: Duration::ZERO,
        min_bytes: 1,
        max_bytes: 1 << 20,
    };
    let follower = FetchOrigin::Follower {
        replica_id: REMOTE,
        broker_epoch: 11,
    };
    (follower, limits, params)
}

/// One consumer fetch of one partition.
async fn fetch(
    rm: &ReplicaManager,
    tp: &TopicIdPartition,
    offset: i64,
    min_bytes: usize,
    max_wait: Duration,
) -> FetchResult {
    let params = PartitionFetchParams {
        fetch_offset: offset,
        log_start_offset: -1,
        max_bytes: 1 << 20,
        current_leader_epoch: -1,
        last_fetched_epoch: -1,
        high_watermark: i64::MAX,
    };
    let limits = FetchLimits {
        max_wait,
        min_bytes,
        max_bytes: 1 << 20,
    };
    let mut results = rm
        .fetch_messages(FetchOrigin::Consumer, limits, &[(tp.clone(), params)])
        .await;
    assert_eq!(results.len(), 1);
    let (answered, result) = results.pop().unwrap();
    assert_eq!(&answered, tp);
    result
}

/// Lets every spawned task run until it waits (the tests run on one thread, and a fetch
/// does no I/O before it parks in the purgatory).
async fn let_tasks_park() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

/// What the task `waiting` answers, which must be soon ([`GUARD`]); `what` says what
/// should have answered it.
async fn answered<T>(waiting: JoinHandle<T>, what: &str) -> T {
    tokio::time::timeout(GUARD, waiting)
        .await
        .expect(what)
        .unwrap()
}

// ---- tests ----

#[tokio::test(flavor = "current_thread")]
async fn led_partition_is_hosted_and_serves_produce_and_fetch() {
    let (_dir, b) = Broker::bootstrapped();
    let tp = orders();

    let hosted = b.rm.partition(TOPIC_ID, 0).expect("hosted");
    assert_eq!(hosted.lock().role(), Role::Leader);
    assert_eq!(hosted.lock().leader_epoch(), LEADER_EPOCH);
    let pdir = b.partition_dir(&tp);
    assert!(pdir.is_dir(), "{} missing", pdir.display());
    let meta = std::fs::read_to_string(pdir.join("partition.metadata")).unwrap();
    assert!(meta.contains("topic_id"), "partition.metadata: {meta:?}");

    let now = unix_ms();
    let sent = [
        (1, batch(now, &["a"])),
        (-1, batch(now, &["b"])),
        (1, batch(now, &["c", "d"])),
        (-1, batch(now, &["e"])),
    ];
    let mut offsets = Vec::new();
    for (acks, records) in &sent {
        offsets.push(b.produce_ok(*acks, &tp, records.clone()).await);
    }
    assert_eq!(offsets, vec![0, 1, 2, 4]);

    let mut expected = Vec::new();
    for ((_, records), base) in sent.iter().zip(&offsets) {
        expected.extend(stamped(records, *base));
    }
    let r = b.fetch(&tp, 0, 1, Duration::ZERO).await;
    assert_eq!(r.error, ErrorCode::None);
    assert_eq!(r.high_watermark, 5);
    assert_eq!(r.log_end_offset, 5);
    assert_eq!(r.log_start_offset, 0);
    assert_eq!(&r.records[..], &expected[..]);

    // From the middle: the batch holding offset 2 onwards.
    let r = b.fetch(&tp, 2, 1, Duration::ZERO).await;
    assert_eq!(r.error, ErrorCode::None);
    let from_third = [stamped(&sent[2].1, 2), stamped(&sent[3].1, 4)].concat();
    assert_eq!(&r.records[..], &from_third[..]);
}

#[tokio::test(flavor = "current_thread")]
async fn fetch_at_log_end_waits_for_a_produce_or_its_max_wait() {
    let (_dir, b) = Broker::bootstrapped();
    let tp = orders();
    let first = batch(unix_ms(), &["first"]);
    assert_eq!(b.produce_ok(1, &tp, first).await, 0);

    // A fetch at the log end parks, then an append in another task wakes it.
    let waiting = b.waiting_fetch(&tp, 1).await;
    let second = batch(unix_ms(), &["second"]);
    let producer = {
        let rm = Arc::clone(&b.rm);
        let (tp, second) = (tp.clone(), second.clone());
        tokio::spawn(async move {
            rm.append_records(1, Duration::from_secs(5), vec![(tp, second)])
                .await
        })
    };
    let produced = producer.await.unwrap();
    assert_eq!(produced[0].1.base_offset, 1);
    let r = answered(waiting, "the waiting fetch was not woken by the append").await;
    assert_eq!(r.error, ErrorCode::None);
    assert_eq!(&r.records[..], &stamped(&second, 1)[..]);
    assert_eq!(r.high_watermark, 2);

    // With nothing produced it answers empty once max_wait has passed.
    let started = tokio::time::Instant::now();
    let max_wait = Duration::from_millis(200);
    let r = b.fetch(&tp, 2, 1, max_wait).await;
    assert_eq!(r.error, ErrorCode::None);
    assert!(r.records.is_empty());
    assert_eq!(r.high_watermark, 2);
    assert!(started.elapsed() >= max_wait, "answered before max_wait");
}

#[tokio::test(flavor = "current_thread")]
async fn fetch_outside_the_log_is_offset_out_of_range() {
    let (_dir, b) = Broker::bootstrapped();
    let tp = orders();
    for v in ["a", "b", "c"] {
        b.produce_ok(1, &tp, batch(unix_ms(), &[v])).await;
    }
    // Move the log start to 1 (RF 1: the low watermark is the leader's own).
    let deleted =
        b.rm.delete_records(Duration::from_secs(5), vec![(tp.clone(), 1)])
            .await;
    assert_eq!(deleted[0].1, Ok(1));

    for offset in [4, 100, 0] {
        let r = b.fetch(&tp, offset, 1, Duration::ZERO).await;
        assert_eq!(r.error, ErrorCode::OffsetOutOfRange, "offset {offset}");
        assert_eq!(r.log_start_offset, 1, "offset {offset}");
        assert_eq!(r.log_end_offset, 3, "offset {offset}");
        assert!(r.records.is_empty());
    }
    // The log end itself is in range (and empty).
    let r = b.fetch(&tp, 3, 1, Duration::ZERO).await;
    assert_eq!(r.error, ErrorCode::None);
    assert!(r.records.is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn list_offsets_earliest_latest_by_timestamp_and_max_timestamp() {
    let (_dir, b) = Broker::bootstrapped();
    let tp = orders();
    let t = unix_ms() - 60_000;
    // Offsets 0..=3 at t+100, t+300, t+200 and (two records) t+250.
    b.produce_ok(1, &tp, batch(t + 100, &["a"])).await;
    b.produce_ok(1, &tp, batch(t + 300, &["b"])).await;
    b.produce_ok(1, &tp, batch(t + 200, &["c"])).await;
    b.produce_ok(1, &tp, batch(t + 250, &["d", "e"])).await;

    let list = |ts: i64| b.rm.list_offset(&tp, -1, ts, -1);
    assert_eq!(list(-2), Ok((0, -1, LEADER_EPOCH)), "earliest");
    assert_eq!(list(-1), Ok((5, -1, LEADER_EPOCH)), "latest");
    assert_eq!(list(-3), Ok((1, t + 300, LEADER_EPOCH)), "max timestamp");
    assert_eq!(list(t), Ok((0, t + 100, LEADER_EPOCH)), "before all");
    assert_eq!(list(t + 100), Ok((0, t + 100, LEADER_EPOCH)), "exact first");
    assert_eq!(list(t + 150), Ok((1, t + 300, LEADER_EPOCH)), "between");
    assert_eq!(list(t + 300), Ok((1, t + 300, LEADER_EPOCH)), "exact max");
    assert_eq!(list(t + 301), Ok((-1, -1, -1)), "after all");
    // A stale leader epoch is fenced.
    assert_eq!(
        b.rm.list_offset(&tp, LEADER_EPOCH - 1, -1, -1),
        Err(ErrorCode::FencedLeaderEpoch)
    );
}

#[tokio::test(flavor = "current_thread")]
async fn min_insync_replicas_above_the_isr_refuses_acks_all_only() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();

    // Set after the partition exists, as kafka-configs would.
    b.apply(&[topic_config(TOPIC, "min.insync.replicas", Some("2"))]);
    let r = b.produce(-1, &tp, batch(unix_ms(), &["refused"])).await;
    assert_eq!(r.error, ErrorCode::NotEnoughReplicas, "{r:?}");
    assert_eq!(b.produce_ok(1, &tp, batch(unix_ms(), &["a"])).await, 0);
    assert_eq!(b.produce_ok(0, &tp, batch(unix_ms(), &["b"])).await, 1);
    // Nothing of the refused batch was appended.
    assert_eq!(b.rm.list_offset(&tp, -1, -1, -1), Ok((2, -1, LEADER_EPOCH)));

    // Removing the override lets acks=all through again.
    b.apply(&[topic_config(TOPIC, "min.insync.replicas", None)]);
    assert_eq!(b.produce_ok(-1, &tp, batch(unix_ms(), &["c"])).await, 2);

    // A topic created with the config refuses from the start.
    let other = topic_partition("strict", Uuid([0x5e; 16]), 0);
    b.apply(&[
        topic("strict", other.topic_id),
        topic_config("strict", "min.insync.replicas", Some("2")),
        partition(other.topic_id, 0, &[LOCAL], LOCAL),
    ]);
    let r = b.produce(-1, &other, batch(unix_ms(), &["refused"])).await;
    assert_eq!(r.error, ErrorCode::NotEnoughReplicas, "{r:?}");
    assert_eq!(b.produce_ok(1, &other, batch(unix_ms(), &["a"])).await, 0);
}

/// A batch larger than a whole segment is refused with RECORD_LIST_TOO_LARGE, as Kafka's
/// RecordBatchTooLargeException (not a retriable storage error a client would retry forever).
#[tokio::test(flavor = "current_thread")]
async fn a_batch_larger_than_a_segment_is_record_list_too_large() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    b.apply(&[topic_config(TOPIC, "internal.segment.bytes", Some("200"))]);
    let big = "x".repeat(300);
    let r = b.produce(1, &tp, batch(unix_ms(), &[big.as_str()])).await;
    assert_eq!(r.error, ErrorCode::RecordListTooLarge, "{r:?}");
    assert_eq!(b.produce_ok(1, &tp, batch(unix_ms(), &["small"])).await, 0);
}

/// Kafka's LogValidator: a compacted topic refuses a batch holding a record without a key,
/// INVALID_RECORD with the record's index in `record_errors`; keyed records go in, and a
/// policy change applies live.
#[tokio::test(flavor = "current_thread")]
async fn a_compacted_topic_refuses_records_without_a_key() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    b.apply(&[topic_config(TOPIC, "cleanup.policy", Some("compact"))]);
    let mut builder = RecordBatchBuilder::new(0);
    for key in [Some("k"), None, Some("k2"), None] {
        builder
            .append(
                unix_ms(),
                key.map(|k| Bytes::from(k.to_string())),
                Some(Bytes::from_static(b"v")),
                Vec::new(),
            )
            .unwrap();
    }
    let r = b.produce(1, &tp, builder.build().unwrap()).await;
    assert_eq!(r.error, ErrorCode::InvalidRecord, "{r:?}");
    let indexes: Vec<i32> = r.record_errors.iter().map(|e| e.batch_index).collect();
    assert_eq!(indexes, [1, 3]);
    assert_eq!(
        r.record_errors[0].message,
        format!("Compacted topic cannot accept message without key in topic partition {TOPIC}-0")
    );
    assert!(
        r.message
            .as_deref()
            .unwrap_or("")
            .starts_with("One or more records have been rejected due to 2 record errors in total"),
        "{r:?}"
    );
    // Nothing of the refused batch was appended.
    assert_eq!(b.rm.list_offset(&tp, -1, -1, -1), Ok((0, -1, LEADER_EPOCH)));
    let mut keyed = RecordBatchBuilder::new(0);
    keyed
        .append(unix_ms(), Some(Bytes::from_static(b"k")), None, Vec::new())
        .unwrap();
    assert_eq!(b.produce_ok(1, &tp, keyed.build().unwrap()).await, 0);
    // Back to delete: keyless records are fine again.
    b.apply(&[topic_config(TOPIC, "cleanup.policy", Some("delete"))]);
    assert_eq!(b.produce_ok(1, &tp, batch(unix_ms(), &["no key"])).await, 1);
}

#[tokio::test(flavor = "current_thread")]
async fn deleted_topic_is_removed_and_its_waiting_fetch_answers_at_once() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    b.produce_ok(1, &tp, batch(unix_ms(), &["a"])).await;
    let pdir = b.partition_dir(&tp);
    assert!(pdir.is_dir());

    let waiting = b.waiting_fetch(&tp, 1).await;

    b.apply(&[remove_topic(TOPIC_ID)]);
    assert!(!pdir.exists(), "{} still exists", pdir.display());
    assert!(b.rm.partition(TOPIC_ID, 0).is_none());
    let r = answered(waiting, "the waiting fetch was not woken by the deletion").await;
    assert_ne!(r.error, ErrorCode::None, "{r:?}");
    assert!(r.records.is_empty());

    let r = b.produce(1, &tp, batch(unix_ms(), &["late"])).await;
    assert_eq!(r.error, ErrorCode::UnknownTopicOrPartition);
    let r = b.fetch(&tp, 0, 1, Duration::ZERO).await;
    assert_eq!(r.error, ErrorCode::UnknownTopicOrPartition);
    assert_eq!(
        b.rm.list_offset(&tp, -1, -1, -1),
        Err(ErrorCode::UnknownTopicOrPartition)
    );
    // Only the deleted partition's directory went.
    assert!(b.log_dir.is_dir());
}

#[tokio::test(flavor = "current_thread")]
async fn partition_led_elsewhere_is_followed() {
    let (_dir, mut b) = Broker::bootstrapped();
    let followed = topic_partition("mirrored", Uuid([0x2f; 16]), 0);
    b.apply(&[
        topic("mirrored", followed.topic_id),
        partition(followed.topic_id, 0, &[REMOTE, LOCAL], REMOTE),
    ]);

    let hosted = b.rm.partition(followed.topic_id, 0).expect("hosted");
    assert_eq!(hosted.lock().role(), Role::Follower { leader: REMOTE });
    assert!(b
        .partition_dir(&followed)
        .join("partition.metadata")
        .is_file());
    let r = b.produce(1, &followed, batch(unix_ms(), &["x"])).await;
    assert_eq!(r.error, ErrorCode::NotLeaderOrFollower, "{r:?}");
    let r = b.produce(-1, &followed, batch(unix_ms(), &["x"])).await;
    assert_eq!(r.error, ErrorCode::NotLeaderOrFollower, "{r:?}");
    assert_eq!(
        b.rm.fetchers().assignments(),
        BTreeMap::from([(REMOTE, vec![followed.clone()])])
    );

    // Leadership moves here: the fetcher lets go and produce is taken.
    b.apply(&[MetadataRecord::PartitionChange(PartitionChangeRecord {
        partition_id: 0,
        topic_id: followed.topic_id,
        leader: LOCAL,
        isr: Some(vec![LOCAL]),
        ..Default::default()
    })]);
    assert_eq!(hosted.lock().role(), Role::Leader);
    assert!(b.rm.fetchers().assignments().values().all(Vec::is_empty));
    assert_eq!(
        b.produce_ok(1, &followed, batch(unix_ms(), &["x"])).await,
        0
    );
    b.rm.shutdown();
}

#[tokio::test(flavor = "current_thread")]
async fn clean_restart_keeps_data_high_watermark_and_producer_state() {
    restart_keeps_data_high_watermark_and_producer_state(true).await;
}

#[tokio::test(flavor = "current_thread")]
async fn unclean_restart_rebuilds_producer_state_from_the_log() {
    restart_keeps_data_high_watermark_and_producer_state(false).await;
}

async fn restart_keeps_data_high_watermark_and_producer_state(clean: bool) {
    const PRODUCER_ID: i64 = 4000;
    let dir = tempfile::tempdir().unwrap();
    let metadata = bootstrap(unused_port());
    let tp = orders();
    let now = unix_ms();
    let sent = [
        idempotent_batch(PRODUCER_ID, 0, now, &["a", "b"]),
        idempotent_batch(PRODUCER_ID, 2, now, &["c"]),
        idempotent_batch(PRODUCER_ID, 3, now, &["d", "e", "f"]),
    ];
    let mut expected = Vec::new();
    {
        let b = Broker::started_on(dir.path(), &metadata);
        let mut offsets = Vec::new();
        for records in &sent {
            offsets.push(b.produce_ok(-1, &tp, records.clone()).await);
        }
        assert_eq!(offsets, vec![0, 2, 3]);
        for (records, base) in sent.iter().zip(&offsets) {
            expected.extend(stamped(records, *base));
        }
        if clean {
            b.rm.shutdown();
        }
        let rm = Arc::clone(&b.rm);
        drop(b);
        assert_eq!(Arc::strong_count(&rm), 1, "the manager is still referenced");
    }

    let b = Broker::started_on(dir.path(), &metadata);
    // The data and the HW, with nothing produced since.
    let r = b.fetch(&tp, 0, 1, Duration::ZERO).await;
    assert_eq!(r.error, ErrorCode::None);
    assert_eq!(r.high_watermark, 6);
    assert_eq!(r.log_end_offset, 6);
    assert_eq!(&r.records[..], &expected[..]);

    // The producer's retry of its last batch is answered with the original offset and
    // appends nothing.
    assert_eq!(b.produce_ok(-1, &tp, sent[2].clone()).await, 3);
    if !clean {
        // Rebuilt from the log, the state holds the producer's last five batches; a
        // snapshot (Kafka's format) holds only its last one, as in Kafka.
        assert_eq!(b.produce_ok(-1, &tp, sent[1].clone()).await, 2);
    }
    assert_eq!(b.rm.list_offset(&tp, -1, -1, -1), Ok((6, -1, LEADER_EPOCH)));
    // A gap in its sequence is refused; the next one is appended.
    let gap = b
        .produce(-1, &tp, idempotent_batch(PRODUCER_ID, 9, now, &["g"]))
        .await;
    assert_eq!(gap.error, ErrorCode::OutOfOrderSequenceNumber, "{gap:?}");
    let next = idempotent_batch(PRODUCER_ID, 6, now, &["g"]);
    assert_eq!(b.produce_ok(-1, &tp, next).await, 6);
    b.rm.shutdown();
}

#[tokio::test(flavor = "current_thread")]
async fn leader_moving_away_wakes_a_waiting_fetch_and_refuses_produce() {
    let (_dir, mut b) = Broker::started_with(&bootstrap_with_follower());
    let tp = orders();
    assert_eq!(b.produce_ok(1, &tp, batch(unix_ms(), &["a"])).await, 0);

    // The HW waits for the other replica in the ISR, so the consumer sees nothing yet.
    let waiting = b.waiting_fetch(&tp, 0).await;

    b.apply(&[MetadataRecord::PartitionChange(PartitionChangeRecord {
        partition_id: 0,
        topic_id: TOPIC_ID,
        leader: REMOTE,
        ..Default::default()
    })]);
    let r = answered(
        waiting,
        "the waiting fetch was not woken by the leader change",
    )
    .await;
    assert_eq!(r.error, ErrorCode::NotLeaderOrFollower, "{r:?}");
    assert_eq!(r.current_leader, Some((REMOTE, LEADER_EPOCH + 1)));
    let hosted = b.rm.partition(TOPIC_ID, 0).expect("still hosted");
    assert_eq!(hosted.lock().role(), Role::Follower { leader: REMOTE });
    let r = b.produce(1, &tp, batch(unix_ms(), &["b"])).await;
    assert_eq!(r.error, ErrorCode::NotLeaderOrFollower, "{r:?}");
    assert_eq!(
        b.rm.fetchers().assignments(),
        BTreeMap::from([(REMOTE, vec![tp.clone()])])
    );
    b.rm.shutdown();
}

#[tokio::test(flavor = "current_thread")]
async fn clean_restart_recovers_the_checkpointed_high_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let metadata = bootstrap_with_follower();
    let tp = orders();
    let now = unix_ms();
    let (first, second) = (batch(now, &["a", "b", "c"]), batch(now, &["d", "e"]));
    {
        let b = Broker::started_on(dir.path(), &metadata);
        assert_eq!(b.produce_ok(1, &tp, first.clone()).await, 0);
        // The in-sync follower fetches past the first batch: the HW moves to 3.
        let r = b.follower_fetch(&tp, 3).await;
        // (The answer carries the HW read before the fetch moved it, as Kafka's does.)
        assert_eq!(r[0].1.error, ErrorCode::None, "{:?}", r[0].1);
        let r = b.fetch(&tp, 0, 1, Duration::ZERO).await;
        assert_eq!(r.high_watermark, 3);
        // The second batch is not replicated: it stays above the HW.
        assert_eq!(b.produce_ok(1, &tp, second).await, 3);
        let r = b.fetch(&tp, 0, 1, Duration::ZERO).await;
        assert_eq!((r.high_watermark, r.log_end_offset), (3, 5));
        b.rm.shutdown();
    }

    let b = Broker::started_on(dir.path(), &metadata);
    let r = b.fetch(&tp, 0, 1, Duration::ZERO).await;
    assert_eq!(r.error, ErrorCode::None);
    assert_eq!(r.high_watermark, 3);
    assert_eq!(r.log_end_offset, 5);
    assert_eq!(&r.records[..], &stamped(&first, 0)[..]);
    // Between the HW and the log end a consumer is in range and sees nothing.
    let r = b.fetch(&tp, 4, 1, Duration::ZERO).await;
    assert_eq!(r.error, ErrorCode::None);
    assert!(r.records.is_empty());
    b.rm.shutdown();
}

#[tokio::test(flavor = "current_thread")]
async fn snapshot_reload_drops_topics_it_no_longer_holds() {
    let port = unused_port();
    let (_dir, mut b) = Broker::started_with(&bootstrap(port));
    let tp = orders();
    b.produce_ok(1, &tp, batch(unix_ms(), &["a"])).await;
    let old_dir = b.partition_dir(&tp);

    // A snapshot in which `orders` was deleted and created again under a new id, with
    // another topic beside it.
    let new_id = Uuid([0x0e; 16]);
    let other = topic_partition("audit", Uuid([0xad; 16]), 0);
    let mut records = vec![metadata_version()];
    records.extend(register(LOCAL, 10, 1));
    records.extend(register(REMOTE, 11, port));
    records.extend([
        topic(TOPIC, new_id),
        partition(new_id, 0, &[LOCAL], LOCAL),
        topic("audit", other.topic_id),
        partition(other.topic_id, 0, &[LOCAL], LOCAL),
    ]);
    b.reload(&records);

    assert!(b.rm.partition(TOPIC_ID, 0).is_none());
    let recreated = topic_partition(TOPIC, new_id, 0);
    assert!(b.rm.partition(new_id, 0).is_some());
    assert!(b.rm.partition(other.topic_id, 0).is_some());
    // The old id's data is gone: the new topic starts empty in the same-named directory.
    assert_eq!(
        b.rm.list_offset(&recreated, -1, -1, -1),
        Ok((0, -1, LEADER_EPOCH))
    );
    let meta = std::fs::read_to_string(old_dir.join("partition.metadata")).unwrap();
    assert!(meta.contains(&new_id.to_base64()), "{meta:?}");
    let r = b.produce(1, &tp, batch(unix_ms(), &["stale id"])).await;
    assert_eq!(r.error, ErrorCode::UnknownTopicOrPartition);
    assert_eq!(
        b.produce_ok(1, &recreated, batch(unix_ms(), &["b"])).await,
        0
    );
    assert_eq!(b.produce_ok(1, &other, batch(unix_ms(), &["c"])).await, 0);
}

#[tokio::test(flavor = "current_thread")]
async fn acks_all_waits_for_the_in_sync_follower_or_the_partitions_end() {
    let (_dir, mut b) = Broker::started_with(&bootstrap_with_follower());
    let tp = orders();

    // Answered once the follower has fetched past the batch.
    let waiting = b.waiting_produce(&tp, batch(unix_ms(), &["a", "b"])).await;
    b.follower_fetch(&tp, 2).await;
    let r = answered(
        waiting,
        "acks=all was not answered when the follower caught up",
    )
    .await;
    assert_eq!(r.error, ErrorCode::None, "{r:?}");
    assert_eq!(r.base_offset, 0);

    // Still waiting when the topic is deleted: answered at once with an error.
    let waiting = b.waiting_produce(&tp, batch(unix_ms(), &["c"])).await;
    b.apply(&[remove_topic(TOPIC_ID)]);
    let r = answered(
        waiting,
        "acks=all was not answered when the topic was deleted",
    )
    .await;
    assert_eq!(r.error, ErrorCode::NotLeaderOrFollower, "{r:?}");
}

/// A follower that caught up while fenced (a broker restarting: its fetchers start before
/// its registration is unfenced) rejoins the ISR as soon as the metadata unfences it. Its
/// fetch session's incremental requests name no partition whose position did not move, and
/// the leader reads only the partitions named or signalled: the unfencing must signal the
/// partition, or the follower would wait for the session's full scan (up to 10 s; the
/// mixed-cluster benchmark saw returning brokers rejoin 5-10 s after unfencing).
#[tokio::test(flavor = "current_thread")]
async fn an_unfenced_caught_up_follower_is_read_at_its_sessions_next_fetch_and_joins_the_isr() {
    let mut metadata = vec![metadata_version()];
    metadata.extend(register(LOCAL, 10, 1));
    // REMOTE registered but still fenced, a replica of `orders` outside its ISR.
    metadata.push(register(REMOTE, 11, unused_port()).remove(0));
    metadata.push(topic(TOPIC, TOPIC_ID));
    let mut out_of_isr = partition(TOPIC_ID, 0, &[LOCAL, REMOTE], LOCAL);
    if let MetadataRecord::Partition(p) = &mut out_of_isr {
        p.isr = vec![LOCAL];
    }
    metadata.push(out_of_isr);
    let (_dir, mut b) = Broker::started_with(&metadata);
    let tp = orders();
    b.produce_ok(1, &tp, batch(unix_ms(), &["a", "b"])).await;

    let watch = SessionWatch::new();
    let session_fetch = |b: &Broker| {
        let rm = Arc::clone(&b.rm);
        let (tp, watch) = (tp.clone(), Arc::clone(&watch));
        async move {
            let (follower, limits, params) = follower_fetch_of(2, 0);
            let mut no_news = Vec::new;
            rm.fetch_messages_in_session(
                follower,
                limits,
                vec![(tp, params)],
                Some((&watch, &mut no_news)),
            )
            .await
        }
    };
    let pending = |b: &Broker| {
        let p = b.rm.partition(TOPIC_ID, 0).unwrap();
        let p = p.lock();
        (p.isr().to_vec(), p.pending_isr().map(<[i32]>::to_vec))
    };

    // Caught up, but fenced: no expansion.
    session_fetch(&b).await;
    assert_eq!(pending(&b), (vec![LOCAL], None));
    watch.take();

    // Unfenced: the partition is signalled to the session...
    b.apply(&[MetadataRecord::UnfenceBroker(UnfenceBrokerRecord {
        id: REMOTE,
        epoch: 11,
        ..Default::default()
    })]);
    let signalled: Vec<(Uuid, i32)> = watch
        .take()
        .into_iter()
        .map(|t| (t.topic_id, t.partition))
        .collect();
    assert_eq!(signalled, vec![(TOPIC_ID, 0)]);
    // ...whose next read of it proposes the expansion.
    session_fetch(&b).await;
    assert_eq!(pending(&b), (vec![LOCAL], Some(vec![LOCAL, REMOTE])));

    // A metadata change that makes nobody eligible signals nothing.
    watch.take();
    b.apply(&register(7, 70, unused_port()));
    assert!(watch.take().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn topic_deleted_and_created_again_in_one_delta_starts_empty() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    for v in ["a", "b", "c"] {
        b.produce_ok(1, &tp, batch(unix_ms(), &[v])).await;
    }
    let new_id = Uuid([0x0f; 16]);
    b.apply(&[
        remove_topic(TOPIC_ID),
        topic(TOPIC, new_id),
        partition(new_id, 0, &[LOCAL], LOCAL),
    ]);
    let recreated = topic_partition(TOPIC, new_id, 0);
    assert!(b.rm.partition(TOPIC_ID, 0).is_none());
    let r = b.fetch(&recreated, 0, 1, Duration::ZERO).await;
    assert_eq!(r.error, ErrorCode::None);
    assert_eq!((r.log_end_offset, r.high_watermark), (0, 0));
    assert!(r.records.is_empty());
    let meta = std::fs::read_to_string(b.partition_dir(&tp).join("partition.metadata")).unwrap();
    assert!(meta.contains(&new_id.to_base64()), "{meta:?}");
    let sent = batch(unix_ms(), &["new"]);
    assert_eq!(b.produce_ok(-1, &recreated, sent.clone()).await, 0);
    let r = b.fetch(&recreated, 0, 1, Duration::ZERO).await;
    assert_eq!(&r.records[..], &stamped(&sent, 0)[..]);
}

#[tokio::test(flavor = "current_thread")]
async fn replicas_of_a_topic_deleted_while_the_broker_was_down_are_removed_at_the_first_image() {
    let dir = tempfile::tempdir().unwrap();
    let metadata = bootstrap(unused_port());
    let tp = orders();
    let other = topic_partition("kept", Uuid([7; 16]), 0);
    let mut with_kept = metadata.clone();
    with_kept.push(topic("kept", other.topic_id));
    with_kept.push(partition(other.topic_id, 0, &[LOCAL], LOCAL));
    {
        let b = Broker::started_on(dir.path(), &with_kept);
        b.produce_ok(-1, &tp, batch(unix_ms(), &["a"])).await;
        b.produce_ok(-1, &other, batch(unix_ms(), &["b"])).await;
        assert!(b.partition_dir(&tp).exists());
        b.rm.shutdown();
    }
    // While the broker was down, `orders` was deleted: the first image it loads has only
    // `kept`.
    let mut b = Broker::start(dir.path());
    let mut without_orders: Vec<MetadataRecord> = metadata
        .iter()
        .filter(|r| !matches!(r, MetadataRecord::Topic(_) | MetadataRecord::Partition(_)))
        .cloned()
        .collect();
    without_orders.push(topic("kept", other.topic_id));
    without_orders.push(partition(other.topic_id, 0, &[LOCAL], LOCAL));
    b.reload(&without_orders);
    assert!(
        !dir.path().join("orders-0").exists(),
        "the stray replica's directory is removed"
    );
    assert!(
        b.partition_dir(&other).exists(),
        "an assigned replica stays"
    );
    let r = b.fetch(&other, 0, 1, Duration::ZERO).await;
    assert_eq!(r.error, ErrorCode::None);
    assert_eq!(r.high_watermark, 1);
}

#[tokio::test(flavor = "current_thread")]
async fn delete_records_waits_for_the_followers_log_start_and_its_fetch_wakes_it() {
    let (_dir, b) = Broker::started_with(&bootstrap_with_follower());
    let tp = orders();
    b.produce_ok(1, &tp, batch(unix_ms(), &["a", "b", "c", "d"]))
        .await;
    b.follower_fetch(&tp, 0).await;
    b.follower_fetch(&tp, 4).await;
    let rm = Arc::clone(&b.rm);
    let entry = tp.clone();
    let waiting = tokio::spawn(async move { rm.delete_records(LONG_WAIT, vec![(entry, 2)]).await });
    let_tasks_park().await;
    assert!(
        !waiting.is_finished(),
        "DeleteRecords did not wait for the follower's log start"
    );
    // The follower's next fetch says its log starts at 2: that fetch alone wakes the wait.
    b.follower_fetch_at(&tp, 4, 2).await;
    let answer = answered(waiting, "the follower's fetch did not wake DeleteRecords").await;
    assert_eq!(answer, vec![(tp, Ok(2))]);
}
