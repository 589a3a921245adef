//! Helpers shared by the broker's integration tests that talk to a controller: a
//! `ControllerChannel` to one controller on loopback, a fake controller served by the real
//! transport server, a real in-process `ControllerNode`, broker registration and unfencing
//! through the channel, and waiting on a condition with a deadline.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kraftd_broker::server::controller_channel::ControllerChannel;
use kraftd_controller::node::ControllerNode;
use kraftd_controller::testing::start_controller_node;
use kraftd_net::{serve, RequestHandler, ServerConfig};
use kraftd_protocol::api_versions::{supported_range, ApiVersionsTable, ListenerType};
use kraftd_protocol::messages::broker_registration_request::Listener;
use kraftd_protocol::messages::{BrokerHeartbeatRequest, BrokerRegistrationRequest};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody, Uuid};
use kraftd_raft::driver::{RaftMetrics, VoterEndpoint};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Ten seconds from now: the deadline of a request or a wait that must succeed.
pub fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

/// Polls `check` every 10 ms until it holds; fails the test after 10 s.
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The one voter `controller_id` at `127.0.0.1:port`.
pub fn voters_on(controller_id: i32, port: u16) -> BTreeMap<i32, VoterEndpoint> {
    BTreeMap::from([(
        controller_id,
        VoterEndpoint {
            id: controller_id,
            host: "127.0.0.1".into(),
            port,
        },
    )])
}

/// A channel named `name` to `voters`, with the raft metrics naming `leader` the leader
/// (keep the sender alive as long as the channel).
pub fn channel_to(
    name: String,
    voters: BTreeMap<i32, VoterEndpoint>,
    leader: i32,
    timeout: Duration,
) -> (ControllerChannel, watch::Sender<RaftMetrics>) {
    let (raft, raft_rx) = watch::channel(RaftMetrics {
        current_leader: leader,
        ..Default::default()
    });
    (
        ControllerChannel::new(name, voters, raft_rx, timeout, Default::default()),
        raft,
    )
}

/// What a fake controller was sent, in order.
pub struct Recorded<T>(Mutex<Vec<T>>);

impl<T: Clone> Default for Recorded<T> {
    fn default() -> Self {
        Recorded(Mutex::new(Vec::new()))
    }
}

impl<T: Clone> Recorded<T> {
    /// Records `t`; its index (0 for the first).
    pub fn push(&self, t: T) -> usize {
        let mut all = self.0.lock().unwrap();
        all.push(t);
        all.len() - 1
    }

    pub fn all(&self) -> Vec<T> {
        self.0.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// A spawned server task, aborted when this is dropped.
pub struct AbortOnDrop(pub JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `handler` served by the real transport server on loopback as controller 1 speaking only
/// `api` (stopped when the first value returned is dropped), and a channel (named
/// `channel_name`) to it.
pub async fn serve_fake<H: RequestHandler>(
    handler: Arc<H>,
    api: ApiKey,
    channel_name: String,
) -> (AbortOnDrop, ControllerChannel, watch::Sender<RaftMetrics>) {
    serve_fake_timed(handler, api, channel_name, Duration::from_secs(5)).await
}

/// [`serve_fake`] with a channel whose attempts time out after `request_timeout`.
pub async fn serve_fake_timed<H: RequestHandler>(
    handler: Arc<H>,
    api: ApiKey,
    channel_name: String,
    request_timeout: Duration,
) -> (AbortOnDrop, ControllerChannel, watch::Sender<RaftMetrics>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut table = ApiVersionsTable::new(ListenerType::Controller);
    table.add(api, supported_range(api)).unwrap();
    let server = tokio::spawn(serve(
        listener,
        Arc::new(table),
        ServerConfig::default(),
        handler,
    ));
    let (channel, raft) = channel_to(channel_name, voters_on(1, port), 1, request_timeout);
    (AbortOnDrop(server), channel, raft)
}

/// A real controller node (id 1) on loopback with bootstrap metadata (metadata.version 25),
/// active, and a channel to it named after `broker`.
pub async fn start_controller(
    dir: &std::path::Path,
    cluster_id: &str,
    broker: i32,
) -> (
    ControllerNode,
    ControllerChannel,
    watch::Sender<RaftMetrics>,
) {
    let (node, port) = start_controller_node(dir, cluster_id).await;
    let (channel, raft) = channel_to(
        format!("broker-{broker}-test-channel"),
        voters_on(1, port),
        1,
        Duration::from_secs(5),
    );
    (node, channel, raft)
}

/// Registers `broker` through `channel` (one PLAINTEXT listener, the broker's supported
/// features); its broker epoch.
pub async fn register_broker(channel: &ControllerChannel, cluster_id: &str, broker: i32) -> i64 {
    let registration = RequestBody::BrokerRegistration(BrokerRegistrationRequest {
        broker_id: broker,
        cluster_id: cluster_id.into(),
        incarnation_id: Uuid([9; 16]),
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
        panic!("not a BrokerRegistration response: {response:?}")
    };
    assert_eq!(r.error_code, 0);
    r.broker_epoch
}

/// Heartbeats as `broker` at `epoch` until unfenced (the broker reports it has caught up to
/// its registration).
pub async fn heartbeat_until_unfenced(channel: &ControllerChannel, broker: i32, epoch: i64) {
    let deadline = soon();
    loop {
        assert!(Instant::now() < deadline, "the broker was never unfenced");
        let heartbeat = RequestBody::BrokerHeartbeat(BrokerHeartbeatRequest {
            broker_id: broker,
            broker_epoch: epoch,
            current_metadata_offset: i64::MAX / 2,
            want_fence: false,
            ..Default::default()
        });
        let ResponseBody::BrokerHeartbeat(h) = channel
            .send(None, heartbeat, soon(), |_| false)
            .await
            .unwrap()
        else {
            panic!("not a BrokerHeartbeat response")
        };
        assert_eq!(h.error_code, 0);
        if !h.is_fenced {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A port nothing listens on (bound, then released).
pub fn unused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
