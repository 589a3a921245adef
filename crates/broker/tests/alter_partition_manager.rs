//! The AlterPartition manager against a fake controller served by the real transport server:
//! requests and answers cross a loopback socket in Kafka's wire format, through the real
//! `ControllerChannel`. (The controller's side of AlterPartition is tested on its own in
//! kraftd-controller; the fake only answers, so the tests can hold a request in flight and
//! see exactly what was batched.) One test runs against a real in-process controller node.

mod common;

use std::sync::Arc;

use kraftd_broker::replica::alter_partition::{
    AlterPartitionItem, AlterPartitionManager, CommittedPartitionState,
};
use kraftd_broker::server::alter_partition_manager::DefaultAlterPartitionManager;
use kraftd_broker::server::controller_channel::ControllerChannel;
use kraftd_net::{InboundRequest, RequestHandler};
use kraftd_protocol::messages::alter_partition_response::{PartitionData, TopicData};
use kraftd_protocol::messages::{AlterPartitionRequest, AlterPartitionResponse};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, Uuid};
use kraftd_raft::driver::RaftMetrics;
use tokio::sync::{oneshot, watch, Semaphore};

use common::{
    eventually, heartbeat_until_unfenced, register_broker, serve_fake, soon, AbortOnDrop, Recorded,
};

const BROKER: i32 = 3;
const TOPIC_A: Uuid = Uuid([0xa; 16]);
const TOPIC_B: Uuid = Uuid([0xb; 16]);
/// The fake controller refuses this partition with FENCED_LEADER_EPOCH.
const FENCED_PARTITION: i32 = 99;

type Respond = dyn Fn(usize, &AlterPartitionRequest) -> AlterPartitionResponse + Send + Sync;

/// A controller that records every AlterPartition and answers one only once a permit is
/// available, so a test can keep a request in flight.
struct FakeController {
    requests: Recorded<(i16, AlterPartitionRequest)>,
    permits: Arc<Semaphore>,
    respond: Box<Respond>,
}

impl RequestHandler for FakeController {
    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let RequestBody::AlterPartition(body) = request.body else {
            return None;
        };
        let n = self
            .requests
            .push((request.header.request_api_version, body.clone()));
        let response = (self.respond)(n, &body);
        let permits = Arc::clone(&self.permits);
        let (tx, rx) = oneshot::channel();
        tokio::spawn(async move {
            permits.acquire().await.unwrap().forget();
            let _ = tx.send(ResponseBody::AlterPartition(response));
        });
        Some(rx)
    }
}

impl FakeController {
    fn requests(&self) -> Vec<(i16, AlterPartitionRequest)> {
        self.requests.all()
    }
}

/// The answer a controller that accepts every change gives (bumping the partition epoch),
/// except for [`FENCED_PARTITION`].
fn accept_all(request: &AlterPartitionRequest) -> AlterPartitionResponse {
    AlterPartitionResponse {
        topics: request
            .topics
            .iter()
            .map(|t| TopicData {
                topic_id: t.topic_id,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| PartitionData {
                        partition_index: p.partition_index,
                        error_code: if p.partition_index == FENCED_PARTITION {
                            ErrorCode::FencedLeaderEpoch.code()
                        } else {
                            0
                        },
                        leader_id: request.broker_id,
                        leader_epoch: p.leader_epoch,
                        isr: p.new_isr_with_epochs.iter().map(|b| b.broker_id).collect(),
                        leader_recovery_state: p.leader_recovery_state,
                        partition_epoch: p.partition_epoch + 1,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

struct Setup {
    fake: Arc<FakeController>,
    manager: DefaultAlterPartitionManager,
    epoch: watch::Sender<i64>,
    _raft: watch::Sender<RaftMetrics>,
    _server: AbortOnDrop,
}

async fn setup(initial_permits: usize, broker_epoch: i64, respond: Box<Respond>) -> Setup {
    let fake = Arc::new(FakeController {
        requests: Recorded::default(),
        permits: Arc::new(Semaphore::new(initial_permits)),
        respond,
    });
    let (server, channel, raft) = serve_fake(
        Arc::clone(&fake),
        ApiKey::AlterPartition,
        format!("broker-{BROKER}-alter-partition-channel"),
    )
    .await;
    let (epoch, epoch_rx) = watch::channel(broker_epoch);
    Setup {
        fake,
        manager: DefaultAlterPartitionManager::start(BROKER, epoch_rx, channel),
        epoch,
        _raft: raft,
        _server: server,
    }
}

fn item(topic_id: Uuid, partition: i32) -> AlterPartitionItem {
    AlterPartitionItem {
        topic_id,
        partition,
        leader_epoch: 4,
        new_isr: vec![(BROKER, 21), (1, -1)],
        leader_recovery_state: 0,
        partition_epoch: 10,
    }
}

fn committed() -> CommittedPartitionState {
    CommittedPartitionState {
        leader_id: BROKER,
        leader_epoch: 4,
        isr: vec![BROKER, 1],
        leader_recovery_state: 0,
        partition_epoch: 11,
    }
}

fn partitions(request: &AlterPartitionRequest) -> Vec<(Uuid, i32)> {
    request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_id, p.partition_index))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_queued_while_a_request_is_in_flight_go_in_one_request_with_per_partition_answers()
{
    let s = setup(0, 21, Box::new(|_, r| accept_all(r))).await;
    let first = s.manager.submit(item(TOPIC_A, 0));
    eventually("the first AlterPartition", || s.fake.requests().len() == 1).await;

    // While it is in flight: three more partitions, and the same partition again.
    let second = s.manager.submit(item(TOPIC_A, 1));
    let third = s.manager.submit(item(TOPIC_B, 0));
    let fenced = s.manager.submit(item(TOPIC_A, FENCED_PARTITION));
    let duplicate = s.manager.submit(item(TOPIC_A, 0));
    assert_eq!(
        duplicate.await.unwrap(),
        Err(ErrorCode::OperationNotAttempted)
    );
    assert_eq!(s.manager.pending(), 4);

    s.fake.permits.add_permits(100);
    assert_eq!(first.await.unwrap(), Ok(committed()));
    assert_eq!(second.await.unwrap(), Ok(committed()));
    assert_eq!(third.await.unwrap(), Ok(committed()));
    assert_eq!(fenced.await.unwrap(), Err(ErrorCode::FencedLeaderEpoch));

    let requests = s.fake.requests();
    assert_eq!(
        requests.len(),
        2,
        "the three queued changes went in one request"
    );
    assert_eq!(partitions(&requests[0].1), vec![(TOPIC_A, 0)]);
    assert_eq!(
        partitions(&requests[1].1),
        vec![(TOPIC_A, 1), (TOPIC_A, FENCED_PARTITION), (TOPIC_B, 0)]
    );
    for (version, request) in &requests {
        assert_eq!(*version, 3, "the highest version the controller speaks");
        assert_eq!((request.broker_id, request.broker_epoch), (BROKER, 21));
        let p = &request.topics[0].partitions[0];
        assert_eq!(
            p.new_isr_with_epochs
                .iter()
                .map(|b| (b.broker_id, b.broker_epoch))
                .collect::<Vec<_>>(),
            vec![(BROKER, 21), (1, -1)]
        );
        assert_eq!((p.leader_epoch, p.partition_epoch), (4, 10));
    }

    // Answered: the partition takes a new change again.
    assert_eq!(s.manager.pending(), 0);
    let again = s.manager.submit(item(TOPIC_A, 0));
    assert_eq!(again.await.unwrap(), Ok(committed()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_controller_is_retried_and_a_left_out_partition_is_sent_again() {
    // Unregistered at first, so both submits are queued before anything is sent.
    let s = setup(
        100,
        -1,
        Box::new(|n, r| match n {
            0 => AlterPartitionResponse {
                error_code: ErrorCode::NotController.code(),
                ..Default::default()
            },
            // Answers only the first partition of the request.
            1 => {
                let mut answer = accept_all(r);
                answer.topics.truncate(1);
                answer.topics[0].partitions.truncate(1);
                answer
            }
            _ => accept_all(r),
        }),
    )
    .await;
    let a = s.manager.submit(item(TOPIC_A, 0));
    let b = s.manager.submit(item(TOPIC_B, 0));
    s.epoch.send_replace(21);
    assert_eq!(a.await.unwrap(), Ok(committed()));
    assert_eq!(b.await.unwrap(), Ok(committed()));
    let requests = s.fake.requests();
    let sent: Vec<_> = requests.iter().map(|(_, r)| partitions(r)).collect();
    // The NOT_CONTROLLER request may have carried one or both (a submit may race the
    // first send); the retry carries both, and the left-out one goes once more.
    assert!(requests.len() >= 3, "{sent:?}");
    assert_eq!(sent[sent.len() - 1], vec![(TOPIC_B, 0)], "{sent:?}");
    assert!(
        sent.iter().any(|p| p == &vec![(TOPIC_A, 0), (TOPIC_B, 0)]),
        "{sent:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_top_level_error_fails_every_item_of_the_request() {
    let s = setup(
        0,
        21,
        Box::new(|_, _| AlterPartitionResponse {
            error_code: ErrorCode::StaleBrokerEpoch.code(),
            ..Default::default()
        }),
    )
    .await;
    let a = s.manager.submit(item(TOPIC_A, 0));
    eventually("the first AlterPartition", || s.fake.requests().len() == 1).await;
    let b = s.manager.submit(item(TOPIC_A, 1));
    s.fake.permits.add_permits(100);
    assert_eq!(a.await.unwrap(), Err(ErrorCode::StaleBrokerEpoch));
    assert_eq!(b.await.unwrap(), Err(ErrorCode::StaleBrokerEpoch));
    assert_eq!(s.fake.requests().len(), 2);
    assert_eq!(s.manager.pending(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_sent_before_the_broker_has_registered() {
    let s = setup(100, -1, Box::new(|_, r| accept_all(r))).await;
    let a = s.manager.submit(item(TOPIC_A, 0));
    // Let the sender run: it must wait for an epoch rather than send -1.
    tokio::task::yield_now().await;
    assert!(s.fake.requests().is_empty());
    s.epoch.send_replace(42);
    assert_eq!(a.await.unwrap(), Ok(committed()));
    let requests = s.fake.requests();
    assert!(requests.iter().all(|(_, r)| r.broker_epoch == 42));
}

const CLUSTER_ID: &str = "alter-partition-cluster";

/// A real controller node on loopback with bootstrap metadata, broker [`BROKER`] registered
/// and unfenced, and topic `t` (three partitions led by [`BROKER`]) created: the node, a
/// channel to it, the broker epoch and the topic id.
async fn start_controller_with_topic(
    dir: &std::path::Path,
) -> (
    kraftd_controller::node::ControllerNode,
    ControllerChannel,
    watch::Sender<RaftMetrics>,
    i64,
    Uuid,
) {
    use kraftd_protocol::messages::create_topics_request::CreatableTopic;
    use kraftd_protocol::messages::CreateTopicsRequest;

    let (node, channel, raft) = common::start_controller(dir, CLUSTER_ID, BROKER).await;
    let epoch = register_broker(&channel, CLUSTER_ID, BROKER).await;
    heartbeat_until_unfenced(&channel, BROKER, epoch).await;

    let create = RequestBody::CreateTopics(CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "t".into(),
            num_partitions: 3,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    });
    let ResponseBody::CreateTopics(c) =
        channel.send(None, create, soon(), |_| false).await.unwrap()
    else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(c.topics[0].error_code, 0, "{c:?}");
    let topic_id = c.topics[0].topic_id;
    (node, channel, raft, epoch, topic_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_controller_answers_each_partition_of_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let (node, channel, _raft, epoch, topic_id) = start_controller_with_topic(dir.path()).await;
    // Unregistered as far as the manager knows: everything below is queued, then goes in one
    // request once the epoch is published.
    let (epoch_tx, epoch_rx) = watch::channel(-1);
    let manager = DefaultAlterPartitionManager::start(BROKER, epoch_rx, channel);
    let change = |partition, leader_epoch, partition_epoch| AlterPartitionItem {
        topic_id,
        partition,
        leader_epoch,
        new_isr: vec![(BROKER, epoch)],
        leader_recovery_state: 0,
        partition_epoch,
    };
    let unchanged = manager.submit(change(0, 0, 0));
    // A partition epoch ahead of the controller's: it says it is behind, for this partition.
    let ahead = manager.submit(change(1, 0, 5));
    // A broker that holds no replica of the partition cannot join its ISR.
    let not_a_replica = manager.submit(AlterPartitionItem {
        new_isr: vec![(BROKER, epoch), (1, -1)],
        ..change(2, 0, 0)
    });
    let unknown_topic = manager.submit(AlterPartitionItem {
        topic_id: Uuid([0x77; 16]),
        ..change(0, 0, 0)
    });
    epoch_tx.send_replace(epoch);

    assert_eq!(
        unchanged.await.unwrap(),
        Ok(CommittedPartitionState {
            leader_id: BROKER,
            leader_epoch: 0,
            isr: vec![BROKER],
            leader_recovery_state: 0,
            partition_epoch: 0,
        })
    );
    assert_eq!(ahead.await.unwrap(), Err(ErrorCode::NotController));
    assert_eq!(not_a_replica.await.unwrap(), Err(ErrorCode::InvalidRequest));
    assert_eq!(unknown_topic.await.unwrap(), Err(ErrorCode::UnknownTopicId));
    drop(manager);
    node.shutdown().await.unwrap();
}
