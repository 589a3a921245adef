//! The producer id manager against a fake controller served by the real transport server:
//! AllocateProducerIds crosses a loopback socket in Kafka's wire format through the real
//! `ControllerChannel`. (The controller's allocation is tested on its own in
//! kraftd-controller; a fake with small blocks makes block boundaries and the prefetch
//! visible.) One test runs against a real in-process controller node, across its block
//! boundary.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kraftd_broker::server::controller_channel::ControllerChannel;
use kraftd_broker::server::producer_id_manager::ProducerIdManager;
use kraftd_protocol::api_versions::{stable_range, ApiVersionsTable, ListenerType};
use kraftd_protocol::messages::{AllocateProducerIdsRequest, AllocateProducerIdsResponse};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use kraftd_raft::driver::{RaftMetrics, VoterEndpoint};
use kraftd_raft::transport::{serve, InboundRequest, RequestHandler, ServerConfig};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

const BROKER: i32 = 2;
const BLOCK: i32 = 10;

type Respond =
    dyn Fn(usize, &AllocateProducerIdsRequest) -> AllocateProducerIdsResponse + Send + Sync;

/// A controller that records every AllocateProducerIds and answers as `respond` says.
struct FakeController {
    requests: Mutex<Vec<AllocateProducerIdsRequest>>,
    respond: Box<Respond>,
}

impl RequestHandler for FakeController {
    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let RequestBody::AllocateProducerIds(body) = request.body else {
            return None;
        };
        let n = {
            let mut requests = self.requests.lock().unwrap();
            requests.push(body.clone());
            requests.len() - 1
        };
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(ResponseBody::AllocateProducerIds((self.respond)(n, &body)));
        Some(rx)
    }
}

impl FakeController {
    fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

/// The `block`-th block of [`BLOCK`] ids.
fn block(block: usize) -> AllocateProducerIdsResponse {
    AllocateProducerIdsResponse {
        producer_id_start: block as i64 * i64::from(BLOCK),
        producer_id_len: BLOCK,
        ..Default::default()
    }
}

fn error(code: ErrorCode) -> AllocateProducerIdsResponse {
    AllocateProducerIdsResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

struct Setup {
    fake: Arc<FakeController>,
    manager: ProducerIdManager,
    _epoch: watch::Sender<i64>,
    _raft: watch::Sender<RaftMetrics>,
    server: JoinHandle<()>,
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn setup(respond: Box<Respond>) -> Setup {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut table = ApiVersionsTable::new(ListenerType::Controller);
    table
        .add(
            ApiKey::AllocateProducerIds,
            stable_range(ApiKey::AllocateProducerIds),
        )
        .unwrap();
    let fake = Arc::new(FakeController {
        requests: Mutex::new(Vec::new()),
        respond,
    });
    let server = tokio::spawn(serve(
        listener,
        Arc::new(table),
        ServerConfig::default(),
        Arc::clone(&fake),
    ));
    let voters = BTreeMap::from([(
        1,
        VoterEndpoint {
            id: 1,
            host: "127.0.0.1".into(),
            port,
        },
    )]);
    let (raft, raft_rx) = watch::channel(RaftMetrics {
        current_leader: 1,
        ..Default::default()
    });
    let channel = ControllerChannel::new(
        format!("broker-{BROKER}-producer-id-channel"),
        voters,
        raft_rx,
        Duration::from_secs(5),
    );
    let (epoch, epoch_rx) = watch::channel(17);
    Setup {
        fake,
        manager: ProducerIdManager::new(BROKER, epoch_rx, channel),
        _epoch: epoch,
        _raft: raft,
        server,
    }
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_are_contiguous_across_blocks_and_the_next_block_is_prefetched_at_ninety_percent() {
    // The first request meets a standby (NOT_CONTROLLER), which the channel retries.
    let s = setup(Box::new(|n, _| match n {
        0 => error(ErrorCode::NotController),
        n => block(n - 1),
    }))
    .await;
    // 90% of the first block: no prefetch yet (two requests: NOT_CONTROLLER, then the block).
    for expected in 0..9 {
        assert_eq!(s.manager.generate(soon()).await, Ok(expected));
    }
    assert_eq!(s.fake.count(), 2);
    // The tenth id crosses the threshold: the next block is fetched before it is needed.
    assert_eq!(s.manager.generate(soon()).await, Ok(9));
    eventually("the prefetch", || s.fake.count() == 3).await;
    for expected in 10..35 {
        assert_eq!(s.manager.generate(soon()).await, Ok(expected));
    }
    for request in s.fake.requests.lock().unwrap().iter() {
        assert_eq!((request.broker_id, request.broker_epoch), (BROKER, 17));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_callers_never_get_the_same_id() {
    let s = setup(Box::new(|n, _| block(n))).await;
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let manager = s.manager.clone();
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for _ in 0..50 {
                    ids.push(manager.generate(soon()).await.unwrap());
                }
                ids
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    let unique: BTreeSet<i64> = all.iter().copied().collect();
    assert_eq!(unique.len(), all.len(), "an id was handed out twice");
    assert_eq!(unique, (0..200).collect::<BTreeSet<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_block_answers_coordinator_load_in_progress_and_retries_after_a_backoff() {
    let healthy = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&healthy);
    let s = setup(Box::new(move |n, _| {
        if flag.load(Ordering::SeqCst) {
            block(n)
        } else {
            error(ErrorCode::StaleBrokerEpoch)
        }
    }))
    .await;
    let started = Instant::now();
    let answer = s
        .manager
        .generate(Instant::now() + Duration::from_millis(300))
        .await;
    assert_eq!(answer, Err(ErrorCode::CoordinatorLoadInProgress));
    // Retried while waiting, but with a backoff between attempts, not in a loop.
    let attempts = s.fake.count();
    let bound = started.elapsed().as_millis() as usize / 50 + 2;
    assert!((1..=bound).contains(&attempts), "{attempts} attempts");

    healthy.store(true, Ordering::SeqCst);
    let id = s.manager.generate(soon()).await.unwrap();
    // The block starts where the controller said: after the failed attempts.
    assert_eq!(id % i64::from(BLOCK), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_overlapping_ids_already_handed_out_is_refused() {
    // The controller hands out block 0 twice, then block 1.
    let s = setup(Box::new(|n, _| block(n.saturating_sub(1)))).await;
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(s.manager.generate(soon()).await.unwrap());
    }
    assert_eq!(ids, (0..20).collect::<Vec<_>>());
    assert!(s.fake.count() >= 3);
}

/// A real controller node on loopback with bootstrap metadata, and a channel to it.
async fn start_controller(
    dir: &std::path::Path,
) -> (
    kraftd_controller::node::ControllerNode,
    ControllerChannel,
    watch::Sender<RaftMetrics>,
) {
    use kraftd_controller::node::{ControllerNode, ControllerNodeConfig};
    use kraftd_protocol::metadata::FeatureLevelRecord;
    use kraftd_protocol::MetadataRecord;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let voters = BTreeMap::from([(
        1,
        VoterEndpoint {
            id: 1,
            host: "127.0.0.1".into(),
            port,
        },
    )]);
    let mut config = ControllerNodeConfig::new(
        1,
        CLUSTER_ID,
        voters.clone(),
        dir.join("__cluster_metadata-0"),
    );
    config.bootstrap_records = vec![MetadataRecord::FeatureLevel(FeatureLevelRecord {
        name: "metadata.version".into(),
        feature_level: 25,
        ..Default::default()
    })];
    let node = ControllerNode::start(config, listener).await.unwrap();
    let mut status = node.status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(status.borrow().active && status.borrow().image.features.metadata_version == Some(25)) {
        assert!(Instant::now() < deadline, "no active controller");
        let _ = tokio::time::timeout(Duration::from_millis(200), status.changed()).await;
    }
    let (raft, raft_rx) = watch::channel(RaftMetrics {
        current_leader: 1,
        ..Default::default()
    });
    let channel = ControllerChannel::new(
        format!("broker-{BROKER}-test-channel"),
        voters,
        raft_rx,
        Duration::from_secs(5),
    );
    (node, channel, raft)
}

const CLUSTER_ID: &str = "producer-ids-cluster-1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_from_a_real_controller_are_contiguous_across_its_block_boundary() {
    use kraftd_protocol::messages::broker_registration_request::Listener;
    use kraftd_protocol::messages::BrokerRegistrationRequest;

    let dir = tempfile::tempdir().unwrap();
    let (node, channel, _raft) = start_controller(dir.path()).await;
    let registration = RequestBody::BrokerRegistration(BrokerRegistrationRequest {
        broker_id: BROKER,
        cluster_id: CLUSTER_ID.into(),
        incarnation_id: kraftd_protocol::Uuid([9; 16]),
        listeners: vec![Listener {
            name: "PLAINTEXT".into(),
            host: "localhost".into(),
            port: 9092,
            security_protocol: 0,
            ..Default::default()
        }],
        features: kraftd_broker::server::supported_features(),
        previous_broker_epoch: -1,
        ..Default::default()
    });
    let response = channel
        .send(None, registration, soon(), |_| false)
        .await
        .unwrap();
    let ResponseBody::BrokerRegistration(r) = response else {
        panic!("{response:?}")
    };
    assert_eq!(r.error_code, 0);
    let (_epoch, epoch_rx) = watch::channel(r.broker_epoch);
    let manager = ProducerIdManager::new(BROKER, epoch_rx, channel);

    let block = i64::from(kraftd_controller::control::producer_ids::PRODUCER_ID_BLOCK_SIZE);
    for expected in 0..block + 5 {
        assert_eq!(manager.generate(soon()).await, Ok(expected));
    }
    drop(manager);
    node.shutdown().await.unwrap();
}
