//! The DefaultStatePersister over a real ShareCoordinatorService (this broker, leading
//! `__share_group_state-0`) and a stand-in for another broker (leading
//! `__share_group_state-1`, a Kafka-protocol listener that answers NOT_COORDINATOR the first
//! time it is asked about a share partition): one request naming share partitions of both
//! coordinators is split, each part goes to its coordinator (the local shard directly, the
//! other over the network), NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS are retried as
//! Kafka's PersisterStateManager retries them, and every share partition is answered. With
//! no `__share_group_state` yet, the persister asks for it and, once Kafka's retries are
//! spent, answers COORDINATOR_NOT_AVAILABLE.

mod common;

use std::collections::HashMap;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kraftd_broker::coordinator::ShareCoordinatorService;
use kraftd_broker::metadata::MetadataCache;
use kraftd_broker::replica::replica_manager::{ReplicaManager, ReplicaManagerConfig};
use kraftd_broker::server::alter_partition_manager::DefaultAlterPartitionManager;
use kraftd_broker::server::broker_channels::BrokerChannels;
use kraftd_broker::share::{DefaultStatePersister, Persister};
use kraftd_controller::publisher::MetadataPublisher;
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_coordinator::share::{
    partition_for, ShareCoordinatorConfig, SharePartitionKey, SHARE_GROUP_STATE_TOPIC_NAME,
};
use kraftd_net::{serve, InboundRequest, RequestHandler, ServerConfig};
use kraftd_protocol::api_versions::{supported_range, ApiVersionsTable, ListenerType};
use kraftd_protocol::messages::{
    initialize_share_group_state_request as init, initialize_share_group_state_response,
    read_share_group_state_request as read, InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse, ReadShareGroupStateRequest,
};
use kraftd_protocol::metadata::register_broker_record::BrokerEndpoint;
use kraftd_protocol::metadata::*;
use kraftd_protocol::{ApiKey, ErrorCode, MetadataRecord, RequestBody, ResponseBody, Uuid};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use common::unused_port;

const LOCAL: i32 = 1;
const REMOTE: i32 = 2;
const TOPIC_ID: Uuid = Uuid([0x0d; 16]);
const STATE_ID: Uuid = Uuid([0x5e; 16]);

fn register(id: i32, port: u16) -> Vec<MetadataRecord> {
    vec![
        MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            broker_id: id,
            broker_epoch: 10,
            incarnation_id: Uuid([id as u8; 16]),
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
            epoch: 10,
            ..Default::default()
        }),
    ]
}

fn partition(id: Uuid, p: i32, leader: i32) -> MetadataRecord {
    MetadataRecord::Partition(PartitionRecord {
        partition_id: p,
        topic_id: id,
        replicas: vec![leader],
        isr: vec![leader],
        leader,
        leader_epoch: 1,
        ..Default::default()
    })
}

fn cluster(remote_port: u16) -> Vec<MetadataRecord> {
    let mut records = vec![MetadataRecord::FeatureLevel(FeatureLevelRecord {
        name: "metadata.version".into(),
        feature_level: 25,
        ..Default::default()
    })];
    records.extend(register(LOCAL, unused_port()));
    records.extend(register(REMOTE, remote_port));
    for (name, id) in [("t", TOPIC_ID), (SHARE_GROUP_STATE_TOPIC_NAME, STATE_ID)] {
        records.push(MetadataRecord::Topic(TopicRecord {
            name: name.into(),
            topic_id: id,
            ..Default::default()
        }));
    }
    for p in 0..4 {
        records.push(partition(TOPIC_ID, p, LOCAL));
    }
    records.push(partition(STATE_ID, 0, LOCAL));
    records.push(partition(STATE_ID, 1, REMOTE));
    records
}

/// The other broker's share coordinator: NOT_COORDINATOR the first time a share partition
/// is initialized, success after; every share partition it was asked about, counted.
#[derive(Default)]
struct OtherCoordinator {
    asked: Mutex<HashMap<i32, u32>>,
}

impl RequestHandler for OtherCoordinator {
    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let (tx, rx) = oneshot::channel();
        let RequestBody::InitializeShareGroupState(r) = request.body else {
            return None;
        };
        let mut asked = self.asked.lock().unwrap();
        let mut results = Vec::new();
        for t in &r.topics {
            for p in &t.partitions {
                let n = asked.entry(p.partition).or_insert(0);
                *n += 1;
                let code = if *n == 1 {
                    ErrorCode::NotCoordinator
                } else {
                    ErrorCode::None
                };
                results.push(
                    initialize_share_group_state_response::InitializeStateResult {
                        topic_id: t.topic_id,
                        partitions: vec![initialize_share_group_state_response::PartitionResult {
                            partition: p.partition,
                            error_code: code.code(),
                            ..Default::default()
                        }],
                        ..Default::default()
                    },
                );
            }
        }
        let _ = tx.send(ResponseBody::InitializeShareGroupState(
            InitializeShareGroupStateResponse {
                results,
                ..Default::default()
            },
        ));
        Some(rx)
    }
}

/// A group whose share partitions of `t` (partitions 0..4) have coordinators on both
/// brokers (`__share_group_state` has 2 partitions).
fn mixed_group() -> (String, Vec<i32>, Vec<i32>) {
    for i in 0.. {
        let group = format!("g{i}");
        let (local, remote): (Vec<i32>, Vec<i32>) = (0..4)
            .partition(|p| partition_for(&SharePartitionKey::new(&group, TOPIC_ID, *p), 2) == 0);
        if !local.is_empty() && !remote.is_empty() {
            return (group, local, remote);
        }
    }
    unreachable!()
}

/// This broker: a ReplicaManager, its share coordinator and its persister, given `records`.
struct Local {
    persister: DefaultStatePersister,
    _raft: tokio::sync::watch::Sender<kraftd_raft::driver::RaftMetrics>,
    _epoch: tokio::sync::watch::Sender<i64>,
}

impl Local {
    fn start(log_dir: &std::path::Path, records: Vec<MetadataRecord>) -> Local {
        let (channel, raft) = common::channel_to(
            format!("broker-{LOCAL}-alter-partition-channel"),
            common::voters_on(1000, unused_port()),
            1000,
            Duration::from_secs(1),
        );
        let (epoch, epoch_rx) = tokio::sync::watch::channel(10);
        let alter = DefaultAlterPartitionManager::start(LOCAL, epoch_rx, channel);
        let cache = MetadataCache::new(LOCAL, "share-persister-test");
        let rm = ReplicaManager::new(
            ReplicaManagerConfig::new(LOCAL, vec![log_dir.to_path_buf()]),
            cache.clone(),
            alter,
            Arc::new(AtomicI64::new(10)),
        )
        .unwrap();
        let config = ShareCoordinatorConfig {
            state_topic_partitions: 2,
            ..Default::default()
        };
        let (coordinator, mut publisher) =
            ShareCoordinatorService::start(config, LOCAL, Arc::clone(&rm), cache.clone(), None);
        let empty = MetadataImage::empty();
        let mut delta = MetadataDelta::new(&empty);
        for r in records {
            delta.replay(&r).unwrap();
        }
        let image = delta.apply();
        cache.set_image(image.clone());
        rm.apply_delta(&delta, &image);
        publisher.on_metadata_update(&delta, &image);
        let persister = DefaultStatePersister::new(
            LOCAL,
            cache.clone(),
            coordinator,
            BrokerChannels::new(
                "share-persister-test".into(),
                None,
                Default::default(),
                Duration::from_secs(5),
            ),
        );
        Local {
            persister,
            _raft: raft,
            _epoch: epoch,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_state_topic_is_asked_for_and_answered_coordinator_not_available() {
    // No __share_group_state yet.
    let mut records = cluster(unused_port());
    records.retain(|r| match r {
        MetadataRecord::Topic(t) => t.topic_id != STATE_ID,
        MetadataRecord::Partition(p) => p.topic_id != STATE_ID,
        _ => true,
    });
    let dir = tempfile::tempdir().unwrap();
    let local = Local::start(dir.path(), records);
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    local
        .persister
        .set_create_state_topic(Box::new(move |_image: &MetadataImage| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }));
    let request = InitializeShareGroupStateRequest {
        group_id: "g".into(),
        topics: vec![init::InitializeStateData {
            topic_id: TOPIC_ID,
            partitions: vec![init::PartitionData {
                partition: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Kafka's retries (1 + 2 + 4 + 8 s of backoff), then the last error is the answer.
    let answer = local.persister.initialize_state(request).await;
    let p = &answer.results[0].partitions[0];
    assert_eq!(p.error_code, ErrorCode::CoordinatorNotAvailable.code());
    assert_eq!(
        asked.load(std::sync::atomic::Ordering::Relaxed),
        kraftd_broker::share::default_persister::MAX_ATTEMPTS as usize,
        "the topic is asked for on every attempt"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_split_by_coordinator_and_retried_until_each_part_is_answered() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let remote_port = listener.local_addr().unwrap().port();
    let mut table = ApiVersionsTable::new(ListenerType::Broker);
    table
        .add(
            ApiKey::InitializeShareGroupState,
            supported_range(ApiKey::InitializeShareGroupState),
        )
        .unwrap();
    let other = Arc::new(OtherCoordinator::default());
    tokio::spawn(serve(
        listener,
        Arc::new(table),
        ServerConfig::default(),
        Arc::clone(&other),
    ));

    let dir = tempfile::tempdir().unwrap();
    let persister = Local::start(dir.path(), cluster(remote_port)).persister;
    let (group, local, remote) = mixed_group();
    let request = InitializeShareGroupStateRequest {
        group_id: group.clone(),
        topics: vec![init::InitializeStateData {
            topic_id: TOPIC_ID,
            partitions: (0..4)
                .map(|p| init::PartitionData {
                    partition: p,
                    state_epoch: 1,
                    start_offset: 100 + i64::from(p),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let answer = persister.initialize_state(request).await;
    assert_eq!(answer.results.len(), 1);
    let mut answered: Vec<(i32, i16)> = answer.results[0]
        .partitions
        .iter()
        .map(|p| (p.partition, p.error_code))
        .collect();
    answered.sort();
    assert_eq!(answered, (0..4).map(|p| (p, 0)).collect::<Vec<_>>());
    // The other broker was asked about its share partitions only, each again after its
    // NOT_COORDINATOR.
    let asked = other.asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        remote.iter().map(|p| (*p, 2)).collect::<HashMap<_, _>>()
    );

    // The local share partitions' state is on this broker's shard.
    let read = ReadShareGroupStateRequest {
        group_id: group,
        topics: vec![read::ReadStateData {
            topic_id: TOPIC_ID,
            partitions: local
                .iter()
                .map(|p| read::PartitionData {
                    partition: *p,
                    leader_epoch: 1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let state = persister.read_state(read).await;
    for p in &state.results[0].partitions {
        assert_eq!(p.error_code, 0, "{p:?}");
        assert_eq!(
            (p.start_offset, p.state_epoch),
            (100 + i64::from(p.partition), 1)
        );
    }
    assert_eq!(state.results[0].partitions.len(), local.len());
}
