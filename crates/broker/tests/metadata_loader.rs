//! The broker's MetadataLoader and MetadataCache driven the way the broker's tokio task will
//! drive them: real record batches of encoded metadata records, snapshots written by the
//! controller's snapshot writer, high watermark updates and the clock. What they pin down is
//! what a client or an operator would notice going wrong: stale topics served before
//! catch-up, batches skipped or published out of order, errors swallowed, a lag metric that
//! does not grow, Metadata answers that hide a fenced broker.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kraftd_broker::metadata::cache::{DIRECTORY_LOST, NO_CONTROLLER_ID, NO_LEADER_ID};
use kraftd_broker::metadata::{
    BrokerNode, MetadataCache, MetadataLoadError, MetadataLoader, PartitionMetadata,
};
use kraftd_controller::image::{DIRECTORY_MIGRATING, DIRECTORY_UNASSIGNED};
use kraftd_controller::snapshot::write_image_snapshot;
use kraftd_controller::testing::records::{feature, fence, partition, topic, unfence, uuid};
use kraftd_controller::{MetadataDelta, MetadataImage, MetadataPublisher};
use kraftd_log::SnapshotId;
use kraftd_protocol::metadata::register_broker_record::BrokerEndpoint;
use kraftd_protocol::metadata::*;
use kraftd_protocol::metadata_record::encode_metadata_record;
use kraftd_protocol::records::{ControlRecord, RecordBatchBuilder};
use kraftd_protocol::{ErrorCode, MetadataRecord, Uuid};
use kraftd_raft::driver::RaftEvent;
use kraftd_raft::CommittedBatch;

// ---- records and batches ----

fn broker(id: i32, epoch: i64, listeners: &[(&str, u16)], log_dirs: &[Uuid]) -> MetadataRecord {
    MetadataRecord::RegisterBroker(RegisterBrokerRecord {
        broker_id: id,
        broker_epoch: epoch,
        incarnation_id: uuid(100 + id as u8),
        end_points: listeners
            .iter()
            .map(|(name, port)| BrokerEndpoint {
                name: (*name).into(),
                host: format!("broker{id}.example"),
                port: *port,
                security_protocol: 0,
                ..Default::default()
            })
            .collect(),
        rack: Some(format!("rack{}", id % 2)),
        fenced: true,
        log_dirs: log_dirs.to_vec(),
        ..Default::default()
    })
}

fn metadata_version(level: i16) -> MetadataRecord {
    feature("metadata.version", level)
}

fn encode(record: &MetadataRecord) -> Bytes {
    encode_metadata_record(record, record.key().valid_versions().max).unwrap()
}

/// A committed batch of `values` (already encoded; `None` is a null value) starting at
/// `base`, appended at `timestamp`.
fn raw_batch(base: i64, epoch: i32, timestamp: i64, values: Vec<Option<Bytes>>) -> CommittedBatch {
    let mut builder = RecordBatchBuilder::new(base).partition_leader_epoch(epoch);
    for value in values {
        builder.append(timestamp, None, value, Vec::new()).unwrap();
    }
    let last_offset = builder.next_offset() - 1;
    CommittedBatch {
        base_offset: base,
        last_offset,
        epoch,
        is_control: false,
        bytes: builder.build().unwrap(),
    }
}

fn batch(base: i64, timestamp: i64, records: &[MetadataRecord]) -> CommittedBatch {
    raw_batch(
        base,
        1,
        timestamp,
        records.iter().map(|r| Some(encode(r))).collect(),
    )
}

/// A LeaderChange control batch, as a new Raft leader writes at the start of its epoch.
fn control_batch(base: i64, epoch: i32, timestamp: i64) -> CommittedBatch {
    let record = ControlRecord::LeaderChange(Default::default());
    let mut builder = RecordBatchBuilder::new(base)
        .partition_leader_epoch(epoch)
        .control(true);
    builder
        .append(
            timestamp,
            Some(record.key()),
            Some(record.encode_value().unwrap()),
            Vec::new(),
        )
        .unwrap();
    CommittedBatch {
        base_offset: base,
        last_offset: base,
        epoch,
        is_control: true,
        bytes: builder.build().unwrap(),
    }
}

// ---- publishers ----

/// What one publication carried.
#[derive(Debug, Clone)]
struct Publication {
    full_reload: bool,
    changed_topics: BTreeSet<Uuid>,
    image: MetadataImage,
}

#[derive(Debug, Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<Publication>>>,
}

impl Recorder {
    fn take(&self) -> Vec<Publication> {
        std::mem::take(&mut self.seen.lock().unwrap())
    }
}

impl MetadataPublisher for Recorder {
    fn name(&self) -> &str {
        "Recorder"
    }

    fn on_metadata_update(&mut self, delta: &MetadataDelta, image: &MetadataImage) {
        self.seen.lock().unwrap().push(Publication {
            full_reload: delta.image().is_empty(),
            changed_topics: delta.changes().changed_topics.clone(),
            image: image.clone(),
        });
    }
}

#[derive(Debug)]
struct Panics;

impl MetadataPublisher for Panics {
    fn name(&self) -> &str {
        "Panics"
    }

    fn on_metadata_update(&mut self, _delta: &MetadataDelta, _image: &MetadataImage) {
        panic!("publisher broke");
    }
}

fn loader() -> (MetadataLoader, Recorder) {
    let recorder = Recorder::default();
    let loader = MetadataLoader::new(7, vec![Box::new(recorder.clone())]);
    (loader, recorder)
}

fn topic_names(image: &MetadataImage) -> Vec<String> {
    image.topics.names().map(|(n, _)| n.clone()).collect()
}

// ---- catch-up ----

#[test]
fn nothing_is_published_until_the_high_watermark_is_reached_then_every_batch_in_order() {
    let (mut loader, recorder) = loader();
    loader.handle_event(
        RaftEvent::Committed(batch(
            0,
            1_000,
            &[metadata_version(20), topic("a", uuid(1))],
        )),
        2_000,
    );
    loader.handle_event(
        RaftEvent::Committed(batch(2, 1_100, &[topic("b", uuid(2))])),
        2_000,
    );
    // The HW is not known yet: a restarted broker's old log is not current.
    assert!(!loader.caught_up());
    assert!(recorder.take().is_empty());
    assert_eq!(loader.last_applied_offset(), -1);
    assert_eq!(loader.loaded_offset(), 2);
    assert!(loader.image().is_empty());

    loader.handle_high_watermark(5, 2_000);
    assert!(
        !loader.caught_up(),
        "offsets 3 and 4 are committed but not loaded"
    );
    assert!(recorder.take().is_empty());
    assert_eq!(loader.metrics().last_applied_record_offset(), -1);

    loader.handle_event(
        RaftEvent::Committed(batch(3, 1_200, &[topic("c", uuid(3)), topic("d", uuid(4))])),
        2_000,
    );
    assert!(loader.caught_up());
    assert_eq!(loader.caught_up_at_ms(), Some(2_000));
    let published = recorder.take();
    assert_eq!(published.len(), 1, "the catch-up is published once");
    assert!(published[0].full_reload);
    assert_eq!(
        published[0].changed_topics,
        (1..=4).map(uuid).collect::<BTreeSet<_>>()
    );
    assert_eq!(topic_names(&published[0].image), ["a", "b", "c", "d"]);
    assert_eq!(loader.last_applied_offset(), 4);
    assert_eq!(loader.image(), &published[0].image);

    // From now on every batch is published, in order, as an incremental delta.
    for (i, base) in [5, 6, 7].into_iter().enumerate() {
        let name = format!("t{base}");
        loader.handle_event(
            RaftEvent::Committed(batch(base, 1_300, &[topic(&name, uuid(10 + i as u8))])),
            2_000,
        );
        let published = recorder.take();
        assert_eq!(published.len(), 1);
        assert!(!published[0].full_reload);
        assert_eq!(
            published[0].changed_topics,
            BTreeSet::from([uuid(10 + i as u8)])
        );
        assert!(published[0].image.topics.get_by_name(&name).is_some());
        assert_eq!(loader.last_applied_offset(), base);
    }
    // HW updates after the catch-up publish nothing by themselves.
    loader.handle_high_watermark(8, 2_100);
    assert!(recorder.take().is_empty());
    assert_eq!(loader.metrics().metadata_load_error_count(), 0);
}

#[test]
fn the_high_watermark_arriving_after_the_batches_completes_the_catch_up() {
    let (mut loader, recorder) = loader();
    loader.handle_high_watermark(-1, 0);
    for base in 0..10 {
        let name = format!("t{base}");
        loader.handle_commit(
            &batch(base, 500, &[topic(&name, uuid(base as u8 + 1))]),
            600,
        );
    }
    assert!(recorder.take().is_empty());
    loader.handle_high_watermark(10, 700);
    let published = recorder.take();
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].image.topics.len(), 10);
    assert_eq!(loader.last_applied_offset(), 9);
    assert_eq!(loader.caught_up_at_ms(), Some(700));
}

#[test]
fn control_batches_alone_are_not_metadata_to_serve_but_move_the_offset() {
    let (mut loader, recorder) = loader();
    loader.handle_high_watermark(1, 0);
    loader.handle_commit(&control_batch(0, 1, 100), 0);
    assert!(
        !loader.caught_up(),
        "a log of one LeaderChange has no metadata yet (Kafka's hasSeenRecord)"
    );
    loader.handle_commit(&batch(1, 200, &[metadata_version(20)]), 0);
    loader.handle_high_watermark(2, 0);
    assert!(loader.caught_up());
    assert_eq!(recorder.take().len(), 1);

    // After the catch-up a control batch is published (an empty delta) and moves the
    // applied offset and the append time.
    loader.handle_commit(&control_batch(2, 2, 300), 0);
    let published = recorder.take();
    assert_eq!(published.len(), 1);
    assert!(published[0].changed_topics.is_empty());
    assert_eq!(loader.last_applied_offset(), 2);
    assert_eq!(loader.metrics().last_applied_record_timestamp(), 300);
    assert_eq!(loader.metrics().applied().epoch, 2);
}

#[test]
fn batches_already_loaded_are_skipped_and_a_gap_is_an_error() {
    let (mut loader, recorder) = loader();
    loader.handle_high_watermark(1, 0);
    loader.handle_commit(&batch(0, 0, &[topic("a", uuid(1))]), 0);
    assert_eq!(recorder.take().len(), 1);
    loader.handle_commit(&batch(0, 0, &[topic("a", uuid(1))]), 0);
    assert!(recorder.take().is_empty());
    assert_eq!(loader.metrics().metadata_load_error_count(), 0);

    loader.handle_commit(&batch(5, 0, &[topic("b", uuid(2))]), 0);
    assert_eq!(loader.metrics().metadata_load_error_count(), 1);
    assert_eq!(
        loader.last_load_error(),
        Some(&MetadataLoadError::Gap {
            offset: 1,
            next_base_offset: 5
        })
    );
    assert_eq!(
        recorder.take().len(),
        1,
        "the batch itself is still applied"
    );
    assert_eq!(loader.last_applied_offset(), 5);
}

// ---- snapshots ----

fn image_of(records: &[MetadataRecord]) -> MetadataImage {
    MetadataImage::empty().replay_all(records).unwrap()
}

#[test]
fn a_snapshot_then_batches() {
    let (mut loader, recorder) = loader();
    let snapshot_image = image_of(&[
        metadata_version(20),
        broker(1, 10, &[("PLAINTEXT", 9092)], &[]),
        unfence(1, 10),
        topic("a", uuid(1)),
        partition(uuid(1), 0, &[1], &[1], 1),
    ]);
    let bytes = write_image_snapshot(&snapshot_image, 3, 5_000).unwrap();
    let id = SnapshotId {
        end_offset: 100,
        epoch: 3,
    };
    loader.handle_event(RaftEvent::Snapshot { id, bytes }, 6_000);
    assert!(recorder.take().is_empty(), "the HW is not known yet");
    assert_eq!(loader.loaded_offset(), 99);

    loader.handle_event(
        RaftEvent::Committed(batch(100, 5_500, &[topic("b", uuid(2))])),
        6_000,
    );
    loader.handle_high_watermark(101, 6_000);
    let published = recorder.take();
    assert_eq!(published.len(), 1);
    assert!(published[0].full_reload);
    assert_eq!(topic_names(&published[0].image), ["a", "b"]);
    assert_eq!(loader.last_applied_offset(), 100);
    assert_eq!(loader.metrics().last_applied_record_timestamp(), 5_500);

    loader.handle_commit(
        &batch(101, 5_600, &[partition(uuid(2), 0, &[1], &[1], 1)]),
        6_000,
    );
    let published = recorder.take();
    assert_eq!(published.len(), 1);
    assert!(!published[0].full_reload);
    assert_eq!(published[0].changed_topics, BTreeSet::from([uuid(2)]));

    // A snapshot after the catch-up is a full reload: topics it lacks are gone.
    let next = image_of(&[metadata_version(20), topic("c", uuid(3))]);
    let bytes = write_image_snapshot(&next, 4, 7_000).unwrap();
    let id = SnapshotId {
        end_offset: 200,
        epoch: 4,
    };
    loader.handle_event(RaftEvent::Snapshot { id, bytes }, 8_000);
    let published = recorder.take();
    assert_eq!(published.len(), 1);
    assert!(published[0].full_reload);
    assert_eq!(topic_names(&published[0].image), ["c"]);
    assert_eq!(loader.image(), &next);
    assert_eq!(loader.last_applied_offset(), 199);
    assert_eq!(loader.metrics().applied().epoch, 4);
    assert_eq!(
        loader.metrics().last_applied_record_timestamp(),
        7_000,
        "a snapshot's lastContainedLogTimestamp"
    );
}

#[test]
fn a_snapshot_that_does_not_load_is_counted_and_the_image_kept() {
    let (mut loader, recorder) = loader();
    loader.handle_high_watermark(1, 0);
    loader.handle_commit(&batch(0, 0, &[topic("a", uuid(1))]), 0);
    assert_eq!(recorder.take().len(), 1);
    let id = SnapshotId {
        end_offset: 50,
        epoch: 2,
    };
    loader.handle_snapshot(id, Bytes::from_static(b"not a snapshot"), 0);
    assert_eq!(loader.metrics().metadata_load_error_count(), 1);
    assert!(matches!(
        loader.last_load_error(),
        Some(MetadataLoadError::Snapshot { offset: 49, .. })
    ));
    assert_eq!(loader.last_applied_offset(), 49);
    assert_eq!(topic_names(loader.image()), ["a"]);
}

// ---- errors ----

#[test]
fn a_record_that_does_not_decode_or_replay_is_counted_with_its_offset_and_loading_goes_on() {
    let (mut loader, recorder) = loader();
    loader.handle_high_watermark(1, 0);
    loader.handle_commit(&batch(0, 0, &[metadata_version(20)]), 0);
    assert_eq!(recorder.take().len(), 1);

    // Offsets 1..=4: a good topic, garbage, a partition of an unknown topic, a good topic.
    let values = vec![
        Some(encode(&topic("a", uuid(1)))),
        Some(Bytes::from_static(&[0xff, 0xff, 0xff])),
        Some(encode(&partition(uuid(9), 0, &[1], &[1], 1))),
        Some(encode(&topic("b", uuid(2)))),
    ];
    loader.handle_commit(&raw_batch(1, 1, 0, values), 0);
    assert_eq!(loader.metrics().metadata_load_error_count(), 2);
    match loader.last_load_error() {
        Some(MetadataLoadError::Replay { offset, .. }) => assert_eq!(*offset, 3),
        other => panic!("expected a replay error at offset 3, got {other:?}"),
    }
    // Kafka's MetadataBatchLoader goes on with the next record of the same batch.
    let published = recorder.take();
    assert_eq!(published.len(), 1);
    assert_eq!(topic_names(&published[0].image), ["a", "b"]);
    assert_eq!(loader.last_applied_offset(), 4);

    // The garbage alone, to see its own offset; a null value too.
    loader.handle_commit(
        &raw_batch(5, 1, 0, vec![Some(Bytes::from_static(&[0xff])), None]),
        0,
    );
    assert_eq!(loader.metrics().metadata_load_error_count(), 4);
    assert_eq!(
        loader.last_load_error(),
        Some(&MetadataLoadError::NullValue { offset: 6 })
    );
    loader.handle_commit(
        &raw_batch(7, 1, 0, vec![Some(Bytes::from_static(&[0xff]))]),
        0,
    );
    match loader.last_load_error() {
        Some(e @ MetadataLoadError::Decode { .. }) => assert_eq!(e.offset(), 7),
        other => panic!("expected a decode error at offset 7, got {other:?}"),
    }

    // And the next batch loads as usual.
    loader.handle_commit(&batch(8, 0, &[topic("c", uuid(3))]), 0);
    assert_eq!(loader.metrics().metadata_load_error_count(), 5);
    assert_eq!(topic_names(loader.image()), ["a", "b", "c"]);
    assert_eq!(loader.last_applied_offset(), 8);
    assert_eq!(loader.metrics().metadata_apply_error_count(), 0);
}

#[test]
fn a_batch_that_does_not_parse_is_counted_and_the_offset_moves_on() {
    let (mut loader, _recorder) = loader();
    loader.handle_high_watermark(1, 0);
    loader.handle_commit(&batch(0, 0, &[topic("a", uuid(1))]), 0);
    let mut broken = batch(1, 0, &[topic("b", uuid(2))]);
    broken.bytes = broken.bytes.slice(..broken.bytes.len() - 3);
    loader.handle_commit(&broken, 0);
    assert_eq!(loader.metrics().metadata_load_error_count(), 1);
    assert_eq!(loader.last_load_error().map(|e| e.offset()), Some(1));
    assert_eq!(loader.last_applied_offset(), 1);
    loader.handle_commit(&batch(2, 0, &[topic("c", uuid(3))]), 0);
    assert_eq!(topic_names(loader.image()), ["a", "c"]);
}

#[test]
fn a_failing_publisher_is_counted_and_the_others_still_get_the_image() {
    let recorder = Recorder::default();
    let mut loader = MetadataLoader::new(7, vec![Box::new(Panics), Box::new(recorder.clone())]);
    loader.handle_high_watermark(1, 0);
    loader.handle_commit(&batch(0, 0, &[topic("a", uuid(1))]), 0);
    assert_eq!(recorder.take().len(), 1);
    assert_eq!(loader.metrics().metadata_apply_error_count(), 1);
    let e = loader.last_apply_error().unwrap();
    assert_eq!(e.publisher, "Panics");
    assert_eq!(e.offset, 0);
    assert!(e.message.contains("publisher broke"));
    assert_eq!(loader.last_applied_offset(), 0);
    assert_eq!(loader.metrics().metadata_load_error_count(), 0);
}

// ---- transactions (KIP-868) ----

fn begin() -> MetadataRecord {
    MetadataRecord::BeginTransaction(Default::default())
}

fn end() -> MetadataRecord {
    MetadataRecord::EndTransaction(Default::default())
}

fn abort() -> MetadataRecord {
    MetadataRecord::AbortTransaction(Default::default())
}

#[test]
fn a_metadata_transaction_is_published_at_its_end_and_dropped_on_abort() {
    let (mut loader, recorder) = loader();
    loader.handle_high_watermark(1, 0);
    loader.handle_commit(&batch(0, 0, &[metadata_version(20)]), 0);
    assert_eq!(recorder.take().len(), 1);

    loader.handle_commit(&batch(1, 0, &[begin(), topic("a", uuid(1))]), 0);
    loader.handle_commit(&batch(3, 0, &[topic("b", uuid(2))]), 0);
    assert!(
        recorder.take().is_empty(),
        "held until the transaction ends"
    );
    assert_eq!(loader.last_applied_offset(), 0);
    assert_eq!(loader.loaded_offset(), 3);
    loader.handle_commit(&batch(4, 0, &[end()]), 0);
    let published = recorder.take();
    assert_eq!(published.len(), 1);
    assert_eq!(topic_names(&published[0].image), ["a", "b"]);
    assert_eq!(loader.last_applied_offset(), 4);

    loader.handle_commit(&batch(5, 0, &[begin(), topic("c", uuid(3))]), 0);
    loader.handle_commit(&batch(7, 0, &[abort(), topic("d", uuid(4))]), 0);
    let published = recorder.take();
    assert_eq!(published.len(), 1);
    assert_eq!(topic_names(&published[0].image), ["a", "b", "d"]);

    loader.handle_commit(&batch(9, 0, &[end()]), 0);
    assert!(matches!(
        loader.last_load_error(),
        Some(MetadataLoadError::Transaction { offset: 9, .. })
    ));
    assert_eq!(loader.metrics().metadata_load_error_count(), 1);
}

// ---- metrics ----

#[test]
fn metrics_follow_the_published_batches_and_lag_grows_with_the_clock() {
    let (mut loader, _recorder) = loader();
    let metrics = loader.metrics().clone();
    // Nothing published: Kafka's empty provenance.
    assert_eq!(metrics.last_applied_record_offset(), -1);
    assert_eq!(metrics.last_applied_record_timestamp(), -1);

    loader.handle_high_watermark(3, 10_000);
    loader.handle_commit(&batch(0, 9_000, &[topic("a", uuid(1))]), 10_000);
    // The batch's append time is its max timestamp.
    let mut builder = RecordBatchBuilder::new(1).partition_leader_epoch(1);
    builder
        .append(9_100, None, Some(encode(&topic("b", uuid(2)))), Vec::new())
        .unwrap();
    builder
        .append(9_400, None, Some(encode(&topic("c", uuid(3)))), Vec::new())
        .unwrap();
    let batch = CommittedBatch {
        base_offset: 1,
        last_offset: 2,
        epoch: 1,
        is_control: false,
        bytes: builder.build().unwrap(),
    };
    assert_eq!(
        metrics.last_applied_record_offset(),
        -1,
        "still catching up"
    );
    loader.handle_commit(&batch, 10_000);

    let values = metrics.values(10_000);
    assert_eq!(values.last_applied_record_offset, 2);
    assert_eq!(values.last_applied_record_timestamp, 9_400);
    assert_eq!(values.last_applied_record_lag_ms, 600);
    assert_eq!(values.metadata_load_error_count, 0);
    assert_eq!(values.metadata_apply_error_count, 0);
    // Seed 003: with nothing applied, the lag grows with the wall clock, read by read.
    assert_eq!(metrics.last_applied_record_lag_ms(70_000), 60_600);
    assert_eq!(metrics.last_applied_record_lag_ms(1_894_000), 1_884_600);
}

// ---- the MetadataCache ----

const DIR_A: Uuid = Uuid([0xD0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xA]);
const DIR_B: Uuid = Uuid([0xD0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xB]);

/// Brokers 1 (PLAINTEXT + INTERNAL, log dir A), 2 (fenced), 3 (PLAINTEXT only, no dirs
/// registered), 5 (in controlled shutdown); broker 4 never registered. Topic "orders":
/// p0 healthy on 1,3; p1 led by the fenced 2; p2 led by 3 with the unregistered 4; p3 with
/// replica 1 on a directory broker 1 does not have; p4 with replica 1's directory lost.
fn cluster_batches() -> Vec<CommittedBatch> {
    let orders = uuid(1);
    let with_dirs = |p: i32, replicas: &[i32], dirs: &[Uuid]| {
        MetadataRecord::Partition(PartitionRecord {
            partition_id: p,
            topic_id: orders,
            replicas: replicas.to_vec(),
            isr: replicas.to_vec(),
            leader: replicas[0],
            leader_epoch: 4,
            partition_epoch: 0,
            directories: dirs.to_vec(),
            ..Default::default()
        })
    };
    vec![
        batch(0, 0, &[metadata_version(21)]),
        batch(
            1,
            0,
            &[
                broker(1, 1, &[("PLAINTEXT", 9092), ("INTERNAL", 9093)], &[DIR_A]),
                broker(2, 2, &[("PLAINTEXT", 9092), ("INTERNAL", 9093)], &[]),
                broker(3, 3, &[("PLAINTEXT", 9092)], &[]),
                broker(5, 4, &[("PLAINTEXT", 9092)], &[]),
            ],
        ),
        batch(
            5,
            0,
            &[unfence(1, 1), unfence(2, 2), unfence(3, 3), unfence(5, 4)],
        ),
        batch(
            9,
            0,
            &[
                topic("orders", orders),
                with_dirs(0, &[1, 3], &[DIR_A, DIRECTORY_UNASSIGNED]),
                partition(orders, 1, &[2, 1, 3], &[2, 1, 3], 2),
                partition(orders, 2, &[3, 4], &[3], 3),
                with_dirs(3, &[3, 1], &[DIRECTORY_MIGRATING, DIR_B]),
                with_dirs(4, &[3, 1], &[DIRECTORY_UNASSIGNED, DIRECTORY_LOST]),
                topic("payments", uuid(2)),
                partition(uuid(2), 0, &[1], &[1], 1),
            ],
        ),
        batch(
            17,
            0,
            &[
                fence(2, 2),
                MetadataRecord::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
                    broker_id: 5,
                    broker_epoch: 4,
                    in_controlled_shutdown: 1,
                    ..Default::default()
                }),
            ],
        ),
    ]
}

fn loaded_cache() -> MetadataCache {
    let cache = MetadataCache::new(1, "bLGO4qbsQ36xkG5C46g65A");
    let mut loader = MetadataLoader::new(1, vec![Box::new(cache.clone())]);
    assert!(!cache.initialized());
    for b in cluster_batches() {
        loader.handle_event(RaftEvent::Committed(b), 0);
    }
    assert!(!cache.initialized(), "nothing served before the catch-up");
    assert!(cache.view().image().is_empty());
    loader.handle_high_watermark(19, 0);
    assert!(cache.initialized());
    assert_eq!(loader.metrics().metadata_load_error_count(), 0);
    cache
}

#[test]
fn cache_answers_topic_and_partition_questions() {
    let cache = loaded_cache();
    let view = cache.view();
    assert_eq!(view.cluster_id(), "bLGO4qbsQ36xkG5C46g65A");
    assert_eq!(view.metadata_version(), Some(21));
    assert_eq!(
        view.topic_names().collect::<Vec<_>>(),
        ["orders", "payments"]
    );
    assert_eq!(view.topic_id("orders"), Some(uuid(1)));
    assert_eq!(view.topic_id("missing"), None);
    assert_eq!(view.topic_name(&uuid(2)), Some("payments"));
    assert_eq!(view.topic_by_id(&uuid(1)).unwrap().name, "orders");
    assert_eq!(view.num_partitions("orders"), Some(5));
    assert!(view.contains_partition("orders", 4));
    assert!(!view.contains_partition("orders", 5));
    assert!(!view.contains_topic("missing"));
    let p1 = view.partition("orders", 1).unwrap();
    assert_eq!((p1.leader, p1.leader_epoch), (2, 0));
    assert_eq!(p1.isr, [2, 1, 3]);
    assert!(view
        .partition_metadata("missing", "PLAINTEXT", false, false)
        .is_none());

    let parts = view
        .partition_metadata("orders", "PLAINTEXT", false, false)
        .unwrap();
    let expect = |index, error, leader_id, leader_epoch, replicas: &[i32], offline: &[i32]| {
        PartitionMetadata {
            partition_index: index,
            error,
            leader_id,
            leader_epoch,
            replicas: replicas.to_vec(),
            isr: parts[index as usize].isr.clone(),
            offline_replicas: offline.to_vec(),
            eligible_leader_replicas: vec![],
            last_known_elr: vec![],
        }
    };
    assert_eq!(
        parts,
        [
            expect(0, ErrorCode::None, 1, 4, &[1, 3], &[]),
            // A fenced leader is still reported (as Kafka does) and shows as offline.
            expect(1, ErrorCode::None, 2, 0, &[2, 1, 3], &[2]),
            expect(2, ErrorCode::None, 3, 0, &[3, 4], &[4]),
            // Broker 1 does not have DIR_B online; MIGRATING counts as online.
            expect(3, ErrorCode::None, 3, 4, &[3, 1], &[1]),
            expect(4, ErrorCode::None, 3, 4, &[3, 1], &[1]),
        ]
    );

    // On INTERNAL, broker 3 has no endpoint: leaderless there, and offline.
    let internal = view
        .partition_metadata("orders", "INTERNAL", false, true)
        .unwrap();
    assert_eq!(internal[0].error, ErrorCode::None);
    assert_eq!(internal[0].offline_replicas, [3]);
    assert_eq!(internal[2].error, ErrorCode::ListenerNotFound);
    assert_eq!(internal[2].leader_id, NO_LEADER_ID);
    assert_eq!(internal[2].leader_epoch, 0);
    let internal = view
        .partition_metadata("orders", "INTERNAL", false, false)
        .unwrap();
    assert_eq!(internal[2].error, ErrorCode::LeaderNotAvailable);

    // Metadata v0 drops replicas that are not alive on the listener.
    let v0 = view
        .partition_metadata("orders", "PLAINTEXT", true, false)
        .unwrap();
    assert_eq!(v0[1].error, ErrorCode::ReplicaNotAvailable);
    assert_eq!(v0[1].replicas, [1, 3]);
    assert_eq!(v0[1].isr, [1, 3]);
    assert_eq!(v0[2].replicas, [3]);
    assert_eq!(v0[0].error, ErrorCode::None);
}

#[test]
fn cache_answers_broker_questions() {
    let cache = loaded_cache();
    let view = cache.view();
    let node = |id: i32, port: u16| BrokerNode {
        id,
        host: format!("broker{id}.example"),
        port,
        rack: Some(format!("rack{}", id % 2)),
    };
    assert_eq!(view.alive_broker_ids(), [1, 3, 5]);
    assert_eq!(
        view.alive_broker_nodes("PLAINTEXT"),
        [node(1, 9092), node(3, 9092), node(5, 9092)]
    );
    assert_eq!(view.alive_broker_nodes("INTERNAL"), [node(1, 9093)]);
    assert_eq!(
        view.broker_nodes("INTERNAL"),
        [node(1, 9093), node(2, 9093)],
        "fenced brokers included"
    );
    assert_eq!(view.alive_broker_node(1, "INTERNAL"), Some(node(1, 9093)));
    assert_eq!(view.alive_broker_node(2, "PLAINTEXT"), None);
    assert_eq!(view.alive_broker_node(3, "INTERNAL"), None);

    assert!(view.is_broker_fenced(2));
    assert!(!view.is_broker_fenced(1));
    assert!(!view.is_broker_fenced(4), "unregistered is not fenced");
    assert!(view.has_alive_broker(5), "shutting down is still alive");
    assert!(view.is_broker_shutting_down(5));
    assert!(!view.has_alive_broker(2));
    assert!(!view.has_alive_broker(4));
    assert_eq!(view.alive_broker_epoch(3), Some(3));
    assert_eq!(view.alive_broker_epoch(2), None);

    let endpoints = view.partition_replica_endpoints("orders", 1, "PLAINTEXT");
    assert_eq!(endpoints.keys().copied().collect::<Vec<_>>(), [1, 3]);

    // Metadata's controller_id in KRaft is a random alive broker.
    let picks: BTreeSet<i32> = (0..6).map(|r| view.controller_id_for_clients(r)).collect();
    assert_eq!(picks, BTreeSet::from([1, 3, 5]));
    assert_eq!(view.random_alive_broker_id(4), Some(3));
    let empty = MetadataCache::new(1, "c").view();
    assert_eq!(empty.controller_id_for_clients(3), NO_CONTROLLER_ID);
    assert_eq!(empty.random_alive_broker_id(3), None);
}

#[test]
fn a_view_keeps_its_image_while_the_cache_moves_on() {
    let cache = MetadataCache::new(1, "c");
    let mut loader = MetadataLoader::new(1, vec![Box::new(cache.clone())]);
    loader.handle_high_watermark(1, 0);
    loader.handle_commit(&batch(0, 0, &[topic("a", uuid(1))]), 0);
    let before = cache.view();
    loader.handle_commit(
        &batch(
            1,
            0,
            &[MetadataRecord::RemoveTopic(RemoveTopicRecord {
                topic_id: uuid(1),
                ..Default::default()
            })],
        ),
        0,
    );
    assert!(before.contains_topic("a"), "one request, one image");
    assert!(!cache.view().contains_topic("a"));
}

#[test]
fn a_publisher_added_after_the_catch_up_gets_the_whole_image() {
    let (mut loader, _first) = loader();
    let late = Recorder::default();
    loader.handle_high_watermark(1, 0);
    loader.handle_commit(&batch(0, 0, &[topic("a", uuid(1))]), 0);
    loader.add_publisher(Box::new(late.clone()));
    let published = late.take();
    assert_eq!(published.len(), 1);
    assert!(published[0].full_reload);
    assert_eq!(topic_names(&published[0].image), ["a"]);
    loader.handle_commit(&batch(1, 0, &[topic("b", uuid(2))]), 0);
    assert_eq!(late.take().len(), 1);
}

#[test]
fn the_loader_can_run_on_a_tokio_task_and_the_cache_be_shared() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send::<MetadataLoader>();
    send_sync::<MetadataCache>();
    send_sync::<kraftd_broker::metadata::MetadataView>();
    send_sync::<kraftd_broker::metadata::BrokerMetadataMetrics>();
}
