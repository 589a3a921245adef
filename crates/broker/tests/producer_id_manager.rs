//! The producer id manager against a fake controller served by the real transport server:
//! AllocateProducerIds crosses a loopback socket in Kafka's wire format through the real
//! `ControllerChannel`. (The controller's allocation is tested on its own in
//! kraftd-controller; a fake with small blocks makes block boundaries and the prefetch
//! visible.) One test runs against a real in-process controller node, across its block
//! boundary.

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kraftd_broker::server::producer_id_manager::ProducerIdManager;
use kraftd_net::{InboundRequest, RequestHandler};
use kraftd_protocol::messages::{AllocateProducerIdsRequest, AllocateProducerIdsResponse};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use kraftd_raft::driver::RaftMetrics;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use common::{eventually, register_broker, serve_fake, soon, AbortOnDrop, Recorded};

const BROKER: i32 = 2;
const BLOCK: i32 = 10;

type Respond =
    dyn Fn(usize, &AllocateProducerIdsRequest) -> AllocateProducerIdsResponse + Send + Sync;

/// A controller that records every AllocateProducerIds and answers as `respond` says.
struct FakeController {
    requests: Recorded<AllocateProducerIdsRequest>,
    respond: Box<Respond>,
}

impl RequestHandler for FakeController {
    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let RequestBody::AllocateProducerIds(body) = request.body else {
            return None;
        };
        let n = self.requests.push(body.clone());
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(ResponseBody::AllocateProducerIds((self.respond)(n, &body)));
        Some(rx)
    }
}

impl FakeController {
    fn count(&self) -> usize {
        self.requests.count()
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
    _server: AbortOnDrop,
}

async fn setup(respond: Box<Respond>) -> Setup {
    let fake = Arc::new(FakeController {
        requests: Recorded::default(),
        respond,
    });
    let (server, channel, raft) = serve_fake(
        Arc::clone(&fake),
        ApiKey::AllocateProducerIds,
        format!("broker-{BROKER}-producer-id-channel"),
    )
    .await;
    let (epoch, epoch_rx) = watch::channel(17);
    Setup {
        fake,
        manager: ProducerIdManager::new(BROKER, epoch_rx, channel),
        _epoch: epoch,
        _raft: raft,
        _server: server,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_are_contiguous_across_blocks_and_a_spare_block_is_always_prefetched() {
    // The first request meets a standby (NOT_CONTROLLER), which the channel retries.
    let s = setup(Box::new(|n, _| match n {
        0 => error(ErrorCode::NotController),
        n => block(n - 1),
    }))
    .await;
    // The first id waits for the first block (NOT_CONTROLLER, then the block); taking the
    // block into use fetches the next one at once, before it is needed.
    assert_eq!(s.manager.generate(soon()).await, Ok(0));
    eventually("the prefetch", || s.fake.count() == 3).await;
    for expected in 1..35 {
        assert_eq!(s.manager.generate(soon()).await, Ok(expected));
    }
    // Blocks 0-3 in use, block 4 the spare: one request per block, never two at once.
    eventually("the spare block", || s.fake.count() == 6).await;
    assert_eq!(s.fake.count(), 6);
    for request in s.fake.requests.all().iter() {
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

const CLUSTER_ID: &str = "producer-ids-cluster-1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_from_a_real_controller_are_contiguous_across_its_block_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let (node, channel, _raft) = common::start_controller(dir.path(), CLUSTER_ID, BROKER).await;
    let broker_epoch = register_broker(&channel, CLUSTER_ID, BROKER).await;
    let (_epoch, epoch_rx) = watch::channel(broker_epoch);
    let manager = ProducerIdManager::new(BROKER, epoch_rx, channel);

    let block = i64::from(kraftd_controller::control::producer_ids::PRODUCER_ID_BLOCK_SIZE);
    for expected in 0..block + 5 {
        assert_eq!(manager.generate(soon()).await, Ok(expected));
    }
    drop(manager);
    node.shutdown().await.unwrap();
}
