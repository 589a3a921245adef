//! Share groups on a real ReplicaManager partition: the `SharePartitionManager` reading the
//! local log, several members acquiring from one partition, acknowledgements persisted
//! through a `Persister` (an in-memory share coordinator written for these tests), lock
//! expiry redelivering to another member, the delivery count limit archiving, and
//! read_committed skipping an aborted transaction.

use std::collections::BTreeMap;
use std::sync::Mutex;

use kraftd_broker::replica::replica_manager::TxnMarkerWrite;
use kraftd_broker::share::persister::{Persister, PersisterFuture};
use kraftd_broker::share::share_partition::{AcknowledgementBatch, ShareAcquireMode};
use kraftd_broker::share::share_partition_manager::{
    ShareFetchParams, ShareFetchPartition, ShareGroupConfig, SharePartitionManager,
};
use kraftd_protocol::messages::*;

use super::*;

const GROUP: &str = "workers";

/// The share coordinator's state of one partition as it would persist it: the start
/// offset and each offset's (state, delivery count) from it, merged write by write.
#[derive(Debug, Default)]
struct StoredState {
    start_offset: i64,
    state_epoch: i32,
    offsets: BTreeMap<i64, (i8, i16)>,
}

/// An in-memory share coordinator for one group: ReadShareGroupState answers what
/// WriteShareGroupState merged; a partition never written is uninitialized (start -1).
#[derive(Debug, Default)]
struct MemoryPersister {
    state: Mutex<BTreeMap<(Uuid, i32), StoredState>>,
    writes: Mutex<usize>,
}

impl MemoryPersister {
    fn stored(&self, tp: &TopicIdPartition) -> (i64, Vec<(i64, i8, i16)>) {
        let state = self.state.lock().unwrap();
        let s = state
            .get(&(tp.topic_id, tp.partition))
            .expect("state written");
        let offsets = s.offsets.iter().map(|(o, (st, c))| (*o, *st, *c)).collect();
        (s.start_offset, offsets)
    }
}

impl Persister for MemoryPersister {
    fn initialize_state(
        &self,
        _request: InitializeShareGroupStateRequest,
    ) -> PersisterFuture<InitializeShareGroupStateResponse> {
        unreachable!("the partition side never initializes state")
    }

    fn read_state(
        &self,
        request: ReadShareGroupStateRequest,
    ) -> PersisterFuture<ReadShareGroupStateResponse> {
        use kraftd_protocol::messages::read_share_group_state_response::{
            PartitionResult, ReadStateResult, StateBatch,
        };
        let state = self.state.lock().unwrap();
        let results = request
            .topics
            .iter()
            .map(|t| ReadStateResult {
                topic_id: t.topic_id,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| match state.get(&(t.topic_id, p.partition)) {
                        None => PartitionResult {
                            partition: p.partition,
                            start_offset: -1,
                            ..Default::default()
                        },
                        Some(s) => PartitionResult {
                            partition: p.partition,
                            start_offset: s.start_offset,
                            state_epoch: s.state_epoch,
                            state_batches: s
                                .offsets
                                .iter()
                                .map(|(o, (st, c))| StateBatch {
                                    first_offset: *o,
                                    last_offset: *o,
                                    delivery_state: *st,
                                    delivery_count: *c,
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        },
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        Box::pin(std::future::ready(ReadShareGroupStateResponse {
            results,
            ..Default::default()
        }))
    }

    fn write_state(
        &self,
        request: WriteShareGroupStateRequest,
    ) -> PersisterFuture<WriteShareGroupStateResponse> {
        use kraftd_protocol::messages::write_share_group_state_response::{
            PartitionResult, WriteStateResult,
        };
        *self.writes.lock().unwrap() += 1;
        let mut state = self.state.lock().unwrap();
        let mut results = Vec::new();
        for t in &request.topics {
            let mut partitions = Vec::new();
            for p in &t.partitions {
                let s = state.entry((t.topic_id, p.partition)).or_default();
                s.start_offset = p.start_offset;
                s.state_epoch = p.state_epoch;
                for b in &p.state_batches {
                    for o in b.first_offset..=b.last_offset {
                        s.offsets.insert(o, (b.delivery_state, b.delivery_count));
                    }
                }
                let start = s.start_offset;
                s.offsets.retain(|o, _| *o >= start);
                partitions.push(PartitionResult {
                    partition: p.partition,
                    ..Default::default()
                });
            }
            results.push(WriteStateResult {
                topic_id: t.topic_id,
                partitions,
                ..Default::default()
            });
        }
        Box::pin(std::future::ready(WriteShareGroupStateResponse {
            results,
            ..Default::default()
        }))
    }

    fn delete_state(
        &self,
        _request: DeleteShareGroupStateRequest,
    ) -> PersisterFuture<DeleteShareGroupStateResponse> {
        unreachable!("the partition side never deletes state")
    }

    fn read_summary(
        &self,
        _request: ReadShareGroupStateSummaryRequest,
    ) -> PersisterFuture<ReadShareGroupStateSummaryResponse> {
        unreachable!("the partition side never reads summaries")
    }
}

fn group_config(key: &str, value: &str) -> MetadataRecord {
    MetadataRecord::Config(ConfigRecord {
        resource_type: 32,
        resource_name: GROUP.into(),
        name: key.into(),
        value: Some(value.into()),
        ..Default::default()
    })
}

/// A manager over `b`'s ReplicaManager with the group reading from the earliest offset
/// and a short lock duration (a struct value below the config's minimum, for the test's
/// speed only).
fn manager(
    b: &mut Broker,
    persister: Arc<MemoryPersister>,
    lock_ms: i32,
) -> Arc<SharePartitionManager> {
    b.apply(&[group_config("share.auto.offset.reset", "earliest")]);
    let config = ShareGroupConfig {
        record_lock_duration_ms: lock_ms,
        delivery_count_limit: 2,
        ..ShareGroupConfig::default()
    };
    SharePartitionManager::new(Arc::clone(&b.rm), persister, Some(b.cache.clone()), config)
}

fn params(member: &str, max_records: i32, max_wait: Duration) -> ShareFetchParams {
    ShareFetchParams {
        group_id: GROUP.into(),
        member_id: member.into(),
        max_wait,
        min_bytes: 1,
        max_bytes: 1 << 20,
        max_records,
        batch_size: max_records,
        acquire_mode: ShareAcquireMode::RecordLimit,
    }
}

/// What `member` acquires: (first, last, delivery count) ranges.
async fn share_fetch(
    m: &SharePartitionManager,
    tp: &TopicIdPartition,
    member: &str,
    max_records: i32,
    max_wait: Duration,
) -> Vec<(i64, i64, i16)> {
    let partitions = [ShareFetchPartition {
        tp: tp.clone(),
        partition_max_bytes: 1 << 20,
    }];
    let mut answers = m
        .fetch_messages(&params(member, max_records, max_wait), &partitions)
        .await;
    assert_eq!(answers.len(), 1);
    let (_, data) = answers.pop().unwrap();
    assert_eq!(data.error, ErrorCode::None);
    if data.acquired_records.is_empty() {
        assert!(data.records.is_empty(), "records only with acquisitions");
    } else {
        assert!(!data.records.is_empty(), "the acquired records' batches");
    }
    data.acquired_records
        .iter()
        .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
        .collect()
}

async fn ack(
    m: &SharePartitionManager,
    tp: &TopicIdPartition,
    member: &str,
    first: i64,
    last: i64,
    ack_type: i8,
) -> ErrorCode {
    let batches = vec![AcknowledgementBatch {
        first_offset: first,
        last_offset: last,
        acknowledge_types: vec![ack_type],
    }];
    let mut answers = m
        .acknowledge(GROUP, member, vec![(tp.clone(), batches)])
        .await;
    answers.pop().unwrap().1
}

async fn produce_values(b: &Broker, tp: &TopicIdPartition, n: usize) {
    let t = unix_ms();
    for i in 0..n {
        b.produce_ok(-1, tp, batch(t, &[&format!("v{i}")])).await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn share_members_split_a_partition_and_acknowledgements_persist() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    produce_values(&b, &tp, 6).await;
    let persister = Arc::new(MemoryPersister::default());
    let m = manager(&mut b, Arc::clone(&persister), 30_000);

    // Two members take disjoint records from the one partition.
    assert_eq!(
        share_fetch(&m, &tp, "a", 3, Duration::ZERO).await,
        vec![(0, 2, 1)]
    );
    assert_eq!(
        share_fetch(&m, &tp, "b", 3, Duration::ZERO).await,
        vec![(3, 5, 1)]
    );
    assert!(share_fetch(&m, &tp, "c", 3, Duration::ZERO)
        .await
        .is_empty());

    // Acknowledging another member's records is INVALID_RECORD_STATE.
    assert_eq!(
        ack(&m, &tp, "b", 0, 0, 1).await,
        ErrorCode::InvalidRecordState
    );
    // a accepts 0-2; b accepts 3 and releases 4-5.
    assert_eq!(ack(&m, &tp, "a", 0, 2, 1).await, ErrorCode::None);
    assert_eq!(ack(&m, &tp, "b", 3, 3, 1).await, ErrorCode::None);
    assert_eq!(ack(&m, &tp, "b", 4, 5, 2).await, ErrorCode::None);
    assert_eq!(m.share_partition_offsets(GROUP, &tp), Some((4, 6)));
    let (start, offsets) = persister.stored(&tp);
    assert_eq!(start, 4);
    assert_eq!(offsets, vec![(4, 0, 1), (5, 0, 1)]);

    // The released records go to c, delivered a second time.
    assert_eq!(
        share_fetch(&m, &tp, "c", 10, Duration::ZERO).await,
        vec![(4, 5, 2)]
    );

    // A new manager (a new leader) loads the persisted state: nothing accepted comes back.
    let m2 = manager(&mut b, Arc::clone(&persister), 30_000);
    assert_eq!(
        share_fetch(&m2, &tp, "d", 10, Duration::ZERO).await,
        vec![(4, 5, 2)]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_share_fetch_waits_for_a_produce() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    let persister = Arc::new(MemoryPersister::default());
    let m = manager(&mut b, persister, 30_000);
    assert!(share_fetch(&m, &tp, "a", 10, Duration::ZERO)
        .await
        .is_empty());
    let waiting = {
        let m = Arc::clone(&m);
        let tp = tp.clone();
        tokio::spawn(async move { share_fetch(&m, &tp, "a", 10, LONG_WAIT).await })
    };
    let_tasks_park().await;
    produce_values(&b, &tp, 1).await;
    assert_eq!(
        answered(waiting, "the waiting share fetch").await,
        vec![(0, 0, 1)]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn expired_locks_redeliver_and_the_delivery_limit_archives() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    produce_values(&b, &tp, 2).await;
    let persister = Arc::new(MemoryPersister::default());
    b.apply(&[group_config("share.auto.offset.reset", "earliest")]);
    let config = ShareGroupConfig {
        record_lock_duration_ms: 50,
        delivery_count_limit: 2,
        ..ShareGroupConfig::default()
    };
    // With its lock timer, as the broker starts it.
    let m = SharePartitionManager::start(
        Arc::clone(&b.rm),
        Arc::clone(&persister) as Arc<dyn Persister>,
        Some(b.cache.clone()),
        config,
    );

    assert_eq!(
        share_fetch(&m, &tp, "a", 10, Duration::ZERO).await,
        vec![(0, 1, 1)]
    );
    // a never acknowledges: once its locks expire, b gets the records (second delivery).
    assert_eq!(share_fetch(&m, &tp, "b", 10, GUARD).await, vec![(0, 1, 2)]);
    assert_eq!(
        ack(&m, &tp, "a", 0, 1, 1).await,
        ErrorCode::InvalidRecordState
    );
    // b does not acknowledge either: at the limit (2) the expiry archives them.
    let deadline = tokio::time::Instant::now() + GUARD;
    while m.share_partition_offsets(GROUP, &tp) != Some((2, 2)) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "records never archived"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(persister.stored(&tp).0, 2);
    assert!(share_fetch(&m, &tp, "c", 10, Duration::ZERO)
        .await
        .is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn read_committed_share_fetch_skips_an_aborted_transaction() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    let t = unix_ms();
    let txn = |sequence, value: &str| {
        let builder = RecordBatchBuilder::new(0)
            .producer(10, 0, sequence)
            .transactional(true);
        built(builder, t, &[value])
    };
    // 0 plain, 1-2 a transaction of producer 10 that aborts (marker at 3), 4 plain.
    b.produce_ok(-1, &tp, batch(t, &["p0"])).await;
    b.produce_ok(-1, &tp, txn(0, "t1")).await;
    b.produce_ok(-1, &tp, txn(1, "t2")).await;
    let written =
        b.rm.write_txn_markers(
            Duration::from_secs(5),
            &[TxnMarkerWrite {
                producer_id: 10,
                producer_epoch: 0,
                coordinator_epoch: 1,
                commit: false,
                partitions: vec![tp.clone()],
            }],
        )
        .await;
    assert_eq!(written[0], vec![(tp.clone(), ErrorCode::None)]);
    b.produce_ok(-1, &tp, batch(t, &["p4"])).await;

    let persister = Arc::new(MemoryPersister::default());
    let m = manager(&mut b, persister, 30_000);
    b.apply(&[group_config("share.isolation.level", "read_committed")]);
    // The aborted records are archived, never delivered; the marker (3) is delivered for
    // the client to acknowledge as a gap.
    assert_eq!(
        share_fetch(&m, &tp, "a", 10, Duration::ZERO).await,
        vec![(0, 0, 1), (3, 4, 1)]
    );
    assert_eq!(ack(&m, &tp, "a", 0, 0, 1).await, ErrorCode::None);
    let batches = vec![AcknowledgementBatch {
        first_offset: 3,
        last_offset: 4,
        acknowledge_types: vec![0, 1],
    }];
    let answers = m.acknowledge(GROUP, "a", vec![(tp.clone(), batches)]).await;
    assert_eq!(answers, vec![(tp.clone(), ErrorCode::None)]);
    assert_eq!(m.share_partition_offsets(GROUP, &tp), Some((5, 5)));
}

#[tokio::test(flavor = "current_thread")]
async fn a_closed_session_releases_the_members_records() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    produce_values(&b, &tp, 3).await;
    let persister = Arc::new(MemoryPersister::default());
    let m = manager(&mut b, persister, 30_000);
    m.sessions()
        .new_context(
            GROUP,
            "a",
            &[(tp.topic_id, tp.partition)],
            &[],
            0,
            false,
            "conn-a",
        )
        .expect("a session");
    assert_eq!(
        share_fetch(&m, &tp, "a", 10, Duration::ZERO).await,
        vec![(0, 2, 1)]
    );
    // a's connection drops: its records go back at once, not after the lock duration.
    m.on_disconnect("conn-a").await;
    // It was the group's last session here: the share partition is dropped, and loaded
    // again (with the release persisted) by the next fetch.
    assert_eq!(m.share_partition_offsets(GROUP, &tp), None);
    assert_eq!(
        share_fetch(&m, &tp, "b", 10, Duration::ZERO).await,
        vec![(0, 2, 2)]
    );
    assert_eq!(
        m.release_session(GROUP, "a").await,
        Err(ErrorCode::ShareSessionNotFound)
    );
}

// ---- ShareFetch / ShareAcknowledge handlers ----

fn share_version(level: i16) -> MetadataRecord {
    MetadataRecord::FeatureLevel(FeatureLevelRecord {
        name: "share.version".into(),
        feature_level: level,
        ..Default::default()
    })
}

fn no_authorizer() -> kraftd_controller::auth::RequestAuth {
    kraftd_controller::auth::AuthHelper::disabled().request(
        &kraftd_net::KafkaPrincipal::anonymous(),
        std::net::IpAddr::from([127, 0, 0, 1]),
    )
}

fn share_fetch_request(
    member: &str,
    epoch: i32,
    tp: Option<&TopicIdPartition>,
    acks: Vec<(i64, i64, i8)>,
) -> ShareFetchRequest {
    use kraftd_protocol::messages::share_fetch_request::{
        AcknowledgementBatch as Batch, FetchPartition, FetchTopic,
    };
    ShareFetchRequest {
        group_id: Some(GROUP.into()),
        member_id: Some(member.into()),
        share_session_epoch: epoch,
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 1 << 20,
        max_records: 500,
        batch_size: 500,
        topics: tp
            .map(|tp| {
                vec![FetchTopic {
                    topic_id: tp.topic_id,
                    partitions: vec![FetchPartition {
                        partition_index: tp.partition,
                        acknowledgement_batches: acks
                            .iter()
                            .map(|(f, l, t)| Batch {
                                first_offset: *f,
                                last_offset: *l,
                                acknowledge_types: vec![*t],
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }]
            })
            .unwrap_or_default(),
        ..Default::default()
    }
}

fn acquired(r: &ShareFetchResponse) -> Vec<(i64, i64, i16)> {
    r.responses
        .iter()
        .flat_map(|t| &t.partitions)
        .flat_map(|p| &p.acquired_records)
        .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn share_fetch_answers_unsupported_version_without_share_version() {
    let (_dir, mut b) = Broker::bootstrapped();
    let m = manager(&mut b, Arc::new(MemoryPersister::default()), 30_000);
    let apis = kraftd_broker::server::share_fetch_apis::ShareApis { manager: &m };
    let r = apis
        .share_fetch(
            &b.image,
            1,
            share_fetch_request("a", 0, Some(&orders()), vec![]),
            "c",
            &no_authorizer(),
            None,
        )
        .await;
    assert_eq!(r.error_code, ErrorCode::UnsupportedVersion.code());
}

#[tokio::test(flavor = "current_thread")]
async fn share_fetch_sessions_acquire_and_piggyback_acknowledgements() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    produce_values(&b, &tp, 3).await;
    b.apply(&[share_version(1)]);
    let persister = Arc::new(MemoryPersister::default());
    let m = manager(&mut b, Arc::clone(&persister), 30_000);
    let apis = kraftd_broker::server::share_fetch_apis::ShareApis { manager: &m };
    let auth = no_authorizer();

    // Acknowledgements may not open a session.
    let r = apis
        .share_fetch(
            &b.image,
            1,
            share_fetch_request("a", 0, Some(&tp), vec![(0, 0, 1)]),
            "c",
            &auth,
            None,
        )
        .await;
    assert_eq!(r.error_code, ErrorCode::InvalidRequest.code());
    // Epoch 0 opens the session and acquires.
    let r = apis
        .share_fetch(
            &b.image,
            1,
            share_fetch_request("a", 0, Some(&tp), vec![]),
            "c",
            &auth,
            None,
        )
        .await;
    assert_eq!(r.error_code, 0);
    assert_eq!(r.acquisition_lock_timeout_ms, 30_000);
    assert_eq!(acquired(&r), vec![(0, 2, 1)]);
    // A wrong epoch is refused; an unknown member has no session.
    let r = apis
        .share_fetch(
            &b.image,
            1,
            share_fetch_request("a", 5, None, vec![]),
            "c",
            &auth,
            None,
        )
        .await;
    assert_eq!(r.error_code, ErrorCode::InvalidShareSessionEpoch.code());
    let r = apis
        .share_fetch(
            &b.image,
            1,
            share_fetch_request("x", 1, None, vec![]),
            "c",
            &auth,
            None,
        )
        .await;
    assert_eq!(r.error_code, ErrorCode::ShareSessionNotFound.code());
    // Epoch 1 acknowledges 0-1 (accept) piggybacked and 2 is released; the fetch of the
    // same request then gets 2 again.
    let mut req = share_fetch_request("a", 1, Some(&tp), vec![(0, 1, 1)]);
    req.topics[0].partitions[0].acknowledgement_batches.push(
        kraftd_protocol::messages::share_fetch_request::AcknowledgementBatch {
            first_offset: 2,
            last_offset: 2,
            acknowledge_types: vec![2],
            ..Default::default()
        },
    );
    let r = apis.share_fetch(&b.image, 1, req, "c", &auth, None).await;
    assert_eq!(r.error_code, 0);
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.acknowledge_error_code, 0);
    assert_eq!(acquired(&r), vec![(2, 2, 2)]);
    // ShareAcknowledge at the next epochs: offsets already accepted are ignored, offsets
    // past the in-flight records are INVALID_REQUEST for the partition.
    use kraftd_protocol::messages::share_acknowledge_request::{
        AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch as Batch,
    };
    let ack = |epoch, first, last| ShareAcknowledgeRequest {
        group_id: Some(GROUP.into()),
        member_id: Some("a".into()),
        share_session_epoch: epoch,
        topics: vec![AcknowledgeTopic {
            topic_id: tp.topic_id,
            partitions: vec![AcknowledgePartition {
                partition_index: tp.partition,
                acknowledgement_batches: vec![Batch {
                    first_offset: first,
                    last_offset: last,
                    acknowledge_types: vec![1],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = apis
        .share_acknowledge(&b.image, 1, ack(2, 0, 0), &auth)
        .await;
    assert_eq!(r.error_code, 0);
    assert_eq!(
        r.responses[0].partitions[0].error_code, 0,
        "below the SPSO: ignored"
    );
    let r = apis
        .share_acknowledge(&b.image, 1, ack(3, 7, 7), &auth)
        .await;
    assert_eq!(
        r.responses[0].partitions[0].error_code,
        ErrorCode::InvalidRequest.code()
    );
    let r = apis
        .share_acknowledge(&b.image, 1, ack(0, 2, 2), &auth)
        .await;
    assert_eq!(r.error_code, ErrorCode::InvalidShareSessionEpoch.code());
    // The final epoch accepts 2 and closes the session.
    let r = apis
        .share_acknowledge(&b.image, 1, ack(FINAL, 2, 2), &auth)
        .await;
    assert_eq!(r.responses[0].partitions[0].error_code, 0);
    // The group's last session here closed: its share partition is dropped (Kafka's
    // onGroupEmpty) with its state persisted, start offset 3.
    assert_eq!(m.share_partition_offsets(GROUP, &tp), None);
    assert_eq!(persister.stored(&tp).0, 3);
    let r = apis
        .share_acknowledge(&b.image, 1, ack(FINAL, 2, 2), &auth)
        .await;
    assert_eq!(r.error_code, ErrorCode::ShareSessionNotFound.code());
}

const FINAL: i32 = -1;

#[tokio::test(flavor = "current_thread")]
async fn a_leader_change_fences_the_share_partition() {
    let (_dir, mut b) = Broker::started_with(&bootstrap_with_follower());
    let tp = orders();
    b.produce_ok(1, &tp, batch(unix_ms(), &["a"])).await;
    // The follower catches up, so the HW covers the record.
    b.follower_fetch(&tp, 1).await;
    let m = manager(&mut b, Arc::new(MemoryPersister::default()), 30_000);
    assert_eq!(
        share_fetch(&m, &tp, "a", 10, Duration::ZERO).await,
        vec![(0, 0, 1)]
    );
    b.apply(&[MetadataRecord::PartitionChange(PartitionChangeRecord {
        partition_id: 0,
        topic_id: TOPIC_ID,
        leader: REMOTE,
        ..Default::default()
    })]);
    // As on Kafka, whose listener drops the share partition on the leader change.
    assert_eq!(
        ack(&m, &tp, "a", 0, 0, 1).await,
        ErrorCode::UnknownTopicOrPartition
    );
    assert_eq!(m.share_partition_offsets(GROUP, &tp), None, "dropped");
    let partitions = [ShareFetchPartition {
        tp: tp.clone(),
        partition_max_bytes: 1 << 20,
    }];
    let answers = m
        .fetch_messages(&params("a", 10, Duration::ZERO), &partitions)
        .await;
    assert_eq!(answers[0].1.error, ErrorCode::NotLeaderOrFollower);
    assert_eq!(answers[0].1.current_leader.map(|(id, _)| id), Some(REMOTE));
}

#[tokio::test(flavor = "current_thread")]
async fn below_min_bytes_a_share_fetch_acquires_at_its_max_wait() {
    let (_dir, mut b) = Broker::bootstrapped();
    let tp = orders();
    produce_values(&b, &tp, 2).await;
    let m = manager(&mut b, Arc::new(MemoryPersister::default()), 30_000);
    let partitions = [ShareFetchPartition {
        tp: tp.clone(),
        partition_max_bytes: 1 << 20,
    }];
    let mut p = params("a", 10, Duration::from_millis(50));
    p.min_bytes = 1 << 20;
    let answers = m.fetch_messages(&p, &partitions).await;
    let got: Vec<_> = answers[0]
        .1
        .acquired_records
        .iter()
        .map(|a| (a.first_offset, a.last_offset))
        .collect();
    assert_eq!(got, vec![(0, 1)]);
}
