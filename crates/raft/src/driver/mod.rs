//! The tokio edge of the Raft crate: [`RaftDriver`] runs one [`RaftCore`] over the metadata
//! log in `crates/log` ([`log::MetadataLog`]), the Kafka-protocol [`crate::transport`] and
//! tokio timers, following the core's call order (see [`crate::core`]): feed an input, drain
//! every output in order, sleep until the next deadline or input.
//!
//! - Durability first: a [`Output::PersistQuorumState`] is written (temp file, fsync,
//!   rename) before the outputs after it are acted on, so no vote or epoch is promised on
//!   the wire before it is on disk; a failed write stops the node.
//! - Network: one [`Channel`] per destination voter, and per bootstrap server that names no
//!   voter (its negative id, [`bootstrap`]) (client id `raft-client-<node.id>`,
//!   `controller.quorum.request.timeout.ms`, reconnect backoff), and the controller
//!   listener ([`serve`]) answering ApiVersions and DescribeQuorum (from v2 with the
//!   voters' endpoints under [`DriverConfig::controller_listener_name`], as Kafka's
//!   `Nodes`) and routing Vote,
//!   BeginQuorumEpoch, EndQuorumEpoch and Fetch into the core. A request that times out or
//!   cannot be sent is reported to the core ([`RaftCore::handle_request_failed`]); the core
//!   keeps at most one Fetch in flight.
//! - Time: the core's `now_ms` is the Unix time read at start plus monotonic time since, so
//!   it never goes back and DescribeQuorum's timestamps read as Unix milliseconds.
//! - The loop runs on one tokio task and does the log's disk I/O inline (the core calls the
//!   log synchronously, as Kafka's single Raft I/O thread does): run it on a multi-thread
//!   runtime. The leader's fsync ([`Output::Flush`]) is the exception: it runs on a blocking
//!   thread ([`MetadataLog::plan_flush`]) while the loop goes on answering fetches and
//!   taking proposals, so it overlaps replication; when it completes, the core's flush
//!   counts the leader's end offset toward the HW only as far as the fsync covered. A
//!   node that sends a Fetch (a follower, or a leader that stepped down) first flushes
//!   whatever it holds unflushed, so an end offset a voter reports is always durable.
//! - [`RaftHandle`] proposes records, reads committed data, subscribes to committed batches
//!   and leader changes ([`RaftEvent`], in order, exactly once per incarnation unless the
//!   subscriber lags behind [`EVENT_CHANNEL_CAPACITY`]) and watches [`RaftMetrics`].
//! - A disk failure of the metadata log ([`log::LogFailure`]) is fatal, as in Kafka: the
//!   driver checks the log after every call into the core, before acting on anything the
//!   core queued, and stops with the failure (directory and operation) as its error
//!   ([`DriverError::Fatal`], [`RaftHandle::stop_reason`]); so does a fatal core error. The
//!   loop holds the only strong sender of the event channel, so when it stops, for any
//!   reason, subscribers see the channel close after the events already sent.
//! - [`RaftDriver::shutdown`] resigns first (EndQuorumEpoch to the voters, bounded by the
//!   request timeout), then stops; [`RaftDriver::kill`] stops at once, as a crash would.

pub mod bootstrap;
pub mod log;
pub mod metrics;
pub mod stats;
pub mod voters;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use kraftd_log::{CompletedFlush, LogConfig};
use kraftd_protocol::api_versions::{supported_range, ApiVersionsTable, ListenerType};
use kraftd_protocol::messages::{DescribeQuorumRequest, DescribeQuorumResponse};
use kraftd_protocol::records::Batches;
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody, VersionRange};
use tokio::net::TcpListener;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, Instant};
use tracing::{error, info, warn};

pub use self::bootstrap::{parse_bootstrap_servers, BootstrapServersParseError};
use self::log::{MetadataLog, MetadataLogError};
pub use self::metrics::{DestinationMetrics, RaftMetrics};
pub use self::voters::{parse_voters, VoterEndpoint, VotersParseError};

use crate::core::log::{LogError, SnapshotId};
use crate::core::message::{ApiKind, RaftMessage};
use crate::core::{CommittedBatch, NotLeader, Output, ProposeError, RaftCore, RoleName};
use crate::transport::{
    serve, Channel, ClientConfig, ClientError, InboundRequest, RequestHandler, ServerConfig,
};
use crate::RaftConfig;

/// Committed batches and leader changes buffered for a slow subscriber before it lags.
pub const EVENT_CHANNEL_CAPACITY: usize = 16 * 1024;
/// Commands (proposals, reads) queued for the driver before callers wait.
pub const COMMAND_CHANNEL_CAPACITY: usize = 1024;
/// Inbound requests and outbound results queued for the driver before connections wait.
pub const NETWORK_CHANNEL_CAPACITY: usize = 4096;
/// The reconnect backoff's starting value (`reconnect.backoff.ms`).
pub const RECONNECT_BACKOFF_MS: u64 = 50;
/// The reconnect backoff's cap (`reconnect.backoff.max.ms`).
pub const RECONNECT_BACKOFF_MAX_MS: u64 = 1000;

/// [`DriverConfig::controller_listener_name`]'s default (Kafka's conventional name).
pub const DEFAULT_CONTROLLER_LISTENER_NAME: &str = "CONTROLLER";

/// Everything a node's driver needs.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// `node.id`.
    pub node_id: i32,
    /// `controller.quorum.*`.
    pub raft: RaftConfig,
    /// `controller.quorum.voters`, parsed by [`parse_voters`].
    pub voters: BTreeMap<i32, VoterEndpoint>,
    /// `controller.quorum.bootstrap.servers`, parsed by [`parse_bootstrap_servers`]: each
    /// entry the voter it names or a negative id with its own endpoint. When not empty, its
    /// ids replace `raft.bootstrap_servers` (empty: the core asks the voters).
    pub bootstrap_servers: Vec<VoterEndpoint>,
    /// The metadata log's directory (`<metadata.log.dir>/__cluster_metadata-0`).
    pub log_dir: PathBuf,
    /// The log store's policy, normally [`LogConfig::metadata_log`]; its `flush.messages`
    /// and `flush.ms` are overridden, since the core says when to flush (see
    /// [`MetadataLog::open`]).
    pub log_config: LogConfig,
    /// The controller listener's limits.
    pub server: ServerConfig,
    /// Seeds the core's RNG (election timeouts); differ per node and incarnation.
    pub seed: u64,
    /// Subscribers that get every event from the start ([`RaftDriver::take_events`]): the
    /// node's state machines (the controller, and a broker sharing this Raft client).
    pub early_subscribers: usize,
    /// The listener name the voters' endpoints are reported under in DescribeQuorum v2's
    /// `Nodes` (Kafka: the first of `controller.listener.names`).
    pub controller_listener_name: String,
}

impl DriverConfig {
    /// Kafka's defaults for a node of `voters` keeping its log in `log_dir`.
    pub fn new(
        node_id: i32,
        cluster_id: &str,
        voters: BTreeMap<i32, VoterEndpoint>,
        log_dir: PathBuf,
    ) -> Self {
        DriverConfig {
            node_id,
            raft: RaftConfig::new(cluster_id),
            voters,
            bootstrap_servers: Vec::new(),
            log_dir,
            log_config: LogConfig::metadata_log(),
            server: ServerConfig::default(),
            seed: node_id as u64,
            early_subscribers: 1,
            controller_listener_name: DEFAULT_CONTROLLER_LISTENER_NAME.to_string(),
        }
    }
}

/// Why the driver could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    Log(#[from] MetadataLogError),
    #[error("node {0} is neither a voter nor an observer with bootstrap servers")]
    NoQuorum(i32),
    #[error("the driver has stopped")]
    Stopped,
    #[error(transparent)]
    Propose(#[from] ProposeError),
    #[error("creating the snapshot failed: {0}")]
    Snapshot(LogError),
    /// The driver stopped on its own: a disk failure of the metadata log, a fatal core
    /// error, or a quorum-state write that failed.
    #[error("the raft driver stopped: {0}")]
    Fatal(String),
}

/// What subscribers see, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum RaftEvent {
    /// A batch below the high watermark.
    Committed(CommittedBatch),
    /// The epoch or its leader changed. `log_end_offset` is the log's end when the event
    /// was sent: on a new leader, just past its epoch-start record, where its state machine's
    /// first write will land.
    LeaderChange {
        epoch: i32,
        leader_id: Option<i32>,
        log_end_offset: i64,
    },
    /// Load this committed snapshot first: the batches below its end offset are gone
    /// (KIP-630); `Committed` batches continue from its end offset.
    Snapshot { id: SnapshotId, bytes: Bytes },
}

/// A running node: its handle and its tasks.
#[derive(Debug)]
pub struct RaftDriver {
    handle: RaftHandle,
    /// `None` once [`RaftDriver::shutdown`] or [`RaftDriver::kill`] took it; dropping the
    /// driver aborts whatever still runs (a kill).
    driver: Option<JoinHandle<Result<(), String>>>,
    server: Option<JoinHandle<()>>,
    /// Subscribed before the loop started, so their first events are not missed.
    first_events: Vec<broadcast::Receiver<RaftEvent>>,
}

/// Talks to a running driver; cheap to clone.
#[derive(Debug, Clone)]
pub struct RaftHandle {
    node_id: i32,
    commands: mpsc::Sender<Command>,
    /// [`RaftHandle::schedule_atomic_append`]s, in order. Unbounded so the controller's
    /// synchronous event loop never blocks on it; the controller bounds it by its own queue.
    atomic: mpsc::UnboundedSender<Scheduled>,
    /// Weak: the driver loop holds the only strong sender, so the channel closes when it
    /// stops.
    events: broadcast::WeakSender<RaftEvent>,
    metrics: watch::Receiver<RaftMetrics>,
    /// Why the driver loop stopped on its own, set before the event channel closes.
    stop_reason: Arc<OnceLock<String>>,
}

#[derive(Debug)]
enum Command {
    Propose {
        records: Vec<Bytes>,
        /// Answer once committed rather than once appended.
        wait_for_commit: bool,
        reply: oneshot::Sender<Result<(i64, i64), ProposeError>>,
    },
    ReadCommitted {
        from: i64,
        max_bytes: usize,
        reply: oneshot::Sender<Bytes>,
    },
    CreateSnapshot {
        id: SnapshotId,
        bytes: Bytes,
        reply: oneshot::Sender<Result<i64, LogError>>,
    },
    Shutdown,
}

/// What the controller's synchronous event loop hands the driver, in order.
#[derive(Debug)]
enum Scheduled {
    Append(AtomicAppend),
    /// Give up leadership of this epoch (Kafka's `RaftClient.resign`).
    Resign(i32),
}

/// A batch that must land at exactly `base_offset` in `epoch` (Kafka's
/// `scheduleAtomicAppend`), or not at all.
#[derive(Debug)]
struct AtomicAppend {
    epoch: i32,
    base_offset: i64,
    records: Vec<Bytes>,
    /// Told when the append is refused; success is seen as the batch committing.
    on_refused: mpsc::UnboundedSender<AtomicAppendRefused>,
}

/// An atomic append the driver refused: the proposer must give up leadership of `epoch`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("append at {base_offset} in epoch {epoch} refused: {reason}")]
pub struct AtomicAppendRefused {
    pub epoch: i32,
    pub base_offset: i64,
    pub reason: String,
}

/// Network input for the driver loop.
#[derive(Debug)]
enum NetEvent {
    Request {
        from: i32,
        correlation_id: i32,
        msg: RaftMessage,
        reply: oneshot::Sender<ResponseBody>,
    },
    Response {
        from: i32,
        correlation_id: i32,
        kind: ApiKind,
        result: Result<RaftMessage, String>,
    },
    /// Answered by the driver from the core's state (not a core input).
    DescribeQuorum {
        request: DescribeQuorumRequest,
        /// The request's version: `Nodes` exists from v2.
        version: i16,
        reply: oneshot::Sender<ResponseBody>,
    },
}

impl RaftDriver {
    /// Opens the log in `config.log_dir`, restores the quorum state, and starts serving on
    /// `listener` (already bound, so tests and callers choose the port) and driving the
    /// core. Must run inside a multi-thread tokio runtime.
    pub async fn start(
        config: DriverConfig,
        listener: TcpListener,
    ) -> Result<RaftDriver, DriverError> {
        let server_config = config.server.clone();
        let (mut driver, router) = RaftDriver::start_detached(config)?;
        let mut table = ApiVersionsTable::new(ListenerType::Controller);
        RaftRequestRouter::advertise(&mut table);
        driver.server = Some(tokio::spawn(serve(
            listener,
            Arc::new(table),
            server_config,
            Arc::new(router),
        )));
        Ok(driver)
    }

    /// [`RaftDriver::start`] without a listener of its own: the caller serves the controller
    /// listener (adding its own APIs, as a Kafka controller's listener carries both the Raft
    /// RPCs and the controller APIs) and hands the Raft requests to the returned router.
    pub fn start_detached(
        config: DriverConfig,
    ) -> Result<(RaftDriver, RaftRequestRouter), DriverError> {
        let node_id = config.node_id;
        if config.voters.is_empty() {
            return Err(DriverError::NoQuorum(node_id));
        }
        let log = MetadataLog::open(&config.log_dir, config.log_config.clone())?;
        let persisted = log.read_quorum_state()?;
        let started = Instant::now();
        let base_ms = unix_ms();
        let mut raft = config.raft.clone();
        raft.listener_name = config.controller_listener_name.clone();
        raft.voter_endpoints = config
            .voters
            .iter()
            .map(|(id, v)| (*id, v.wire_endpoint()))
            .collect();
        if !config.bootstrap_servers.is_empty() {
            raft.bootstrap_servers = config.bootstrap_servers.iter().map(|b| b.id).collect();
        }
        // The entries that name no voter: reached by their own endpoint.
        let bootstrap_endpoints: BTreeMap<i32, VoterEndpoint> = config
            .bootstrap_servers
            .iter()
            .filter(|b| !config.voters.contains_key(&b.id))
            .map(|b| (b.id, b.clone()))
            .collect();
        let core = RaftCore::new(
            raft,
            node_id,
            config.voters.keys().copied(),
            persisted,
            log,
            config.seed,
            base_ms,
        );
        info!(node = node_id, ?persisted, "raft driver starting");
        let (commands_tx, commands) = mpsc::channel(COMMAND_CHANNEL_CAPACITY);
        let (net_tx, net_rx) = mpsc::channel(NETWORK_CHANNEL_CAPACITY);
        let (results_tx, results_rx) = mpsc::unbounded_channel();
        let (flushed_tx, flushed_rx) = mpsc::unbounded_channel();
        let (events, _) = broadcast::channel(EVENT_CHANNEL_CAPACITY);
        let (metrics_tx, metrics) = watch::channel(RaftMetrics::default());
        let stop_reason = Arc::new(OnceLock::new());
        let router = RaftRequestRouter { tx: net_tx };
        let (atomic_tx, atomic_rx) = mpsc::unbounded_channel();
        let client = ClientConfig {
            request_timeout: Duration::from_millis(config.raft.request_timeout_ms),
            reconnect_backoff: Duration::from_millis(RECONNECT_BACKOFF_MS),
            reconnect_backoff_max: Duration::from_millis(RECONNECT_BACKOFF_MAX_MS),
            ..ClientConfig::new(format!("raft-client-{node_id}"))
        };
        let driver_loop = DriverLoop {
            node_id,
            core,
            started,
            base_ms,
            voters: config.voters.clone(),
            bootstrap_endpoints,
            controller_listener_name: config.controller_listener_name.clone(),
            client,
            channels: HashMap::new(),
            routes: HashMap::new(),
            inbound: HashMap::new(),
            net_rx,
            commands,
            atomic_rx,
            events: events.clone(),
            metrics: metrics_tx,
            results_tx,
            results_rx,
            failures: VecDeque::new(),
            proposals: VecDeque::new(),
            counters: Counters::default(),
            shutdown_until: None,
            end_quorum_answered: Vec::new(),
            flush_due: false,
            flush_in_flight: false,
            flushed_tx,
            flushed_rx,
            stop_reason: Arc::clone(&stop_reason),
        };
        let first_events = (0..config.early_subscribers)
            .map(|_| events.subscribe())
            .collect();
        let weak_events = events.downgrade();
        drop(events);
        let driver = tokio::spawn(driver_loop.run());
        let driver = RaftDriver {
            first_events,
            handle: RaftHandle {
                node_id,
                commands: commands_tx,
                atomic: atomic_tx,
                events: weak_events,
                metrics,
                stop_reason,
            },
            driver: Some(driver),
            server: None,
        };
        Ok((driver, router))
    }

    pub fn handle(&self) -> RaftHandle {
        self.handle.clone()
    }

    /// Every event since the driver started, for a listener that must not miss the first
    /// committed batches (a node's state machine; [`DriverConfig::early_subscribers`] of
    /// them); once those are taken, a subscription from now.
    pub fn take_events(&mut self) -> broadcast::Receiver<RaftEvent> {
        self.first_events
            .pop()
            .unwrap_or_else(|| self.handle.subscribe())
    }

    /// Graceful shutdown: a leader resigns and tells the voters (EndQuorumEpoch, waiting at
    /// most the request timeout for their answers), then the node stops and its log is
    /// closed.
    pub async fn shutdown(mut self) -> Result<(), DriverError> {
        let _ = self.handle.commands.send(Command::Shutdown).await;
        let result = match self.driver.take() {
            Some(d) => d.await,
            None => return Err(DriverError::Stopped),
        };
        if let Some(s) = self.server.take() {
            s.abort();
            let _ = s.await;
        }
        match result {
            Ok(Ok(())) => Ok(()),
            Ok(Err(reason)) => Err(DriverError::Fatal(reason)),
            Err(_) => Err(DriverError::Stopped),
        }
    }

    /// Stops at once, as a crash would: no resignation, nothing more written. Returns once
    /// the tasks are gone (the log's files closed, the listener's port free).
    pub async fn kill(mut self) {
        let driver = self.driver.take();
        let server = self.server.take();
        if let Some(d) = &driver {
            d.abort();
        }
        if let Some(s) = &server {
            s.abort();
        }
        if let Some(d) = driver {
            let _ = d.await;
        }
        if let Some(s) = server {
            let _ = s.await;
        }
    }
}

impl Drop for RaftDriver {
    fn drop(&mut self) {
        if let Some(d) = self.driver.take() {
            d.abort();
        }
        if let Some(s) = self.server.take() {
            s.abort();
        }
    }
}

impl RaftHandle {
    pub fn node_id(&self) -> i32 {
        self.node_id
    }

    /// Appends `records` as one batch if this node leads; returns its first and last
    /// offset. Committed once the high watermark passes the last one.
    pub async fn propose(&self, records: Vec<Bytes>) -> Result<(i64, i64), DriverError> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Command::Propose {
                records,
                wait_for_commit: false,
                reply,
            })
            .await
            .map_err(|_| DriverError::Stopped)?;
        Ok(rx.await.map_err(|_| DriverError::Stopped)??)
    }

    /// [`RaftHandle::propose`], answered once the batch is committed (the leader's high
    /// watermark passed it). If this node stops leading first, the answer is
    /// [`ProposeError::NotLeader`]: the batch may still commit under the next leader, or be
    /// truncated, as a Kafka controller's pending write is after a leader change.
    pub async fn propose_committed(&self, records: Vec<Bytes>) -> Result<(i64, i64), DriverError> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Command::Propose {
                records,
                wait_for_commit: true,
                reply,
            })
            .await
            .map_err(|_| DriverError::Stopped)?;
        Ok(rx.await.map_err(|_| DriverError::Stopped)??)
    }

    /// Whole committed batches from `from` (a batch boundary), up to about `max_bytes`
    /// (at least one batch when any is committed there).
    pub async fn read_committed(&self, from: i64, max_bytes: usize) -> Result<Bytes, DriverError> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Command::ReadCommitted {
                from,
                max_bytes,
                reply,
            })
            .await
            .map_err(|_| DriverError::Stopped)?;
        rx.await.map_err(|_| DriverError::Stopped)
    }

    /// Appends `records` as one batch at exactly `base_offset` in `epoch`, without waiting
    /// (Kafka's `scheduleAtomicAppend`): the QuorumController predicts its offsets (a broker
    /// epoch is the offset of its registration record) and proposes from a synchronous event
    /// loop. Appends are applied in call order; one that cannot land where asked (another
    /// epoch, another end offset, not the leader) is refused whole and reported on
    /// `on_refused`, and so is everything after it in that epoch, since its base offset no
    /// longer matches. Returns the batch's predicted first and last offset.
    pub fn schedule_atomic_append(
        &self,
        epoch: i32,
        base_offset: i64,
        records: Vec<Bytes>,
        on_refused: mpsc::UnboundedSender<AtomicAppendRefused>,
    ) -> Result<(i64, i64), DriverError> {
        if records.is_empty() {
            return Err(ProposeError::BadRecordCount(0).into());
        }
        let last = base_offset + records.len() as i64 - 1;
        self.atomic
            .send(Scheduled::Append(AtomicAppend {
                epoch,
                base_offset,
                records,
                on_refused,
            }))
            .map_err(|_| DriverError::Stopped)?;
        Ok((base_offset, last))
    }

    /// Resigns leadership of `epoch` if this node still holds it (Kafka's `resign`): the
    /// controller gives up after a refused append; the voters elect again.
    pub fn resign(&self, epoch: i32) {
        let _ = self.atomic.send(Scheduled::Resign(epoch));
    }

    /// Stores a snapshot of the state machine after every committed record below
    /// `id.end_offset` (KIP-630) and deletes the log before it; returns the new log start
    /// offset. Fetchers below it are then sent the snapshot.
    pub async fn create_snapshot(&self, id: SnapshotId, bytes: Bytes) -> Result<i64, DriverError> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Command::CreateSnapshot { id, bytes, reply })
            .await
            .map_err(|_| DriverError::Stopped)?;
        rx.await
            .map_err(|_| DriverError::Stopped)?
            .map_err(DriverError::Snapshot)
    }

    /// Committed batches and leader changes from now on; once the driver stopped, a
    /// receiver that is closed already.
    pub fn subscribe(&self) -> broadcast::Receiver<RaftEvent> {
        match self.events.upgrade() {
            Some(events) => events.subscribe(),
            None => broadcast::channel(1).1,
        }
    }

    /// Why the driver stopped on its own (a disk failure of the metadata log naming the
    /// directory and operation, or a fatal core error); `None` while it runs and after an
    /// orderly shutdown or a kill. Set before the event channel closes, so a subscriber
    /// that sees it close can read it.
    pub fn stop_reason(&self) -> Option<String> {
        self.stop_reason.get().cloned()
    }

    /// The latest metrics snapshot, and a way to wait for changes.
    pub fn metrics(&self) -> watch::Receiver<RaftMetrics> {
        self.metrics.clone()
    }

    /// Waits until `condition` holds for the metrics, or `deadline` passes (`false`).
    pub async fn wait_for(
        &self,
        deadline: Instant,
        mut condition: impl FnMut(&RaftMetrics) -> bool,
    ) -> bool {
        let mut rx = self.metrics.clone();
        tokio::time::timeout_at(deadline, async {
            loop {
                if condition(&rx.borrow_and_update()) {
                    return true;
                }
                if rx.changed().await.is_err() {
                    return false;
                }
            }
        })
        .await
        .unwrap_or(false)
    }
}

/// Routes a listener's Raft requests (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch,
/// FetchSnapshot, DescribeQuorum) into the driver loop. A listener that serves more than Raft
/// (the controller's) asks [`RaftRequestRouter::handles`] and passes these on.
#[derive(Debug, Clone)]
pub struct RaftRequestRouter {
    tx: mpsc::Sender<NetEvent>,
}

impl RaftRequestRouter {
    /// The api keys this router answers.
    pub const API_KEYS: [ApiKey; 6] = [
        ApiKey::Vote,
        ApiKey::BeginQuorumEpoch,
        ApiKey::EndQuorumEpoch,
        ApiKey::Fetch,
        ApiKey::FetchSnapshot,
        ApiKey::DescribeQuorum,
    ];

    pub fn handles(api_key: ApiKey) -> bool {
        Self::API_KEYS.contains(&api_key)
    }

    /// Adds the Raft RPCs, at the versions the core speaks, and DescribeQuorum to `table`.
    pub fn advertise(table: &mut ApiVersionsTable) {
        for kind in [
            ApiKind::Vote,
            ApiKind::BeginQuorumEpoch,
            ApiKind::EndQuorumEpoch,
            ApiKind::Fetch,
            ApiKind::FetchSnapshot,
        ] {
            let v = kind.version();
            table
                .add(kind.api_key(), VersionRange { min: v, max: v })
                .expect("the pinned Raft versions are stable controller APIs");
        }
        table
            .add(
                ApiKey::DescribeQuorum,
                supported_range(ApiKey::DescribeQuorum),
            )
            .expect("DescribeQuorum is a controller API");
    }
}

impl RequestHandler for RaftRequestRouter {
    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let version = request.header.request_api_version;
        let (from, msg) = match request.body {
            RequestBody::Vote(r) => {
                let from = r
                    .topics
                    .first()
                    .and_then(|t| t.partitions.first())
                    .map_or(-1, |p| p.replica_id);
                (from, RaftMessage::VoteRequest(r))
            }
            RequestBody::BeginQuorumEpoch(r) => {
                let from = r
                    .topics
                    .first()
                    .and_then(|t| t.partitions.first())
                    .map_or(-1, |p| p.leader_id);
                (from, RaftMessage::BeginQuorumEpochRequest(r))
            }
            RequestBody::EndQuorumEpoch(r) => {
                let from = r
                    .topics
                    .first()
                    .and_then(|t| t.partitions.first())
                    .map_or(-1, |p| p.leader_id);
                (from, RaftMessage::EndQuorumEpochRequest(r))
            }
            RequestBody::Fetch(r) => {
                let from = if r.replica_state.replica_id >= 0 {
                    r.replica_state.replica_id
                } else {
                    r.replica_id
                };
                (from, RaftMessage::FetchRequest(r))
            }
            RequestBody::FetchSnapshot(r) => (r.replica_id, RaftMessage::FetchSnapshotRequest(r)),
            RequestBody::DescribeQuorum(request) => {
                let (reply, rx) = oneshot::channel();
                let event = NetEvent::DescribeQuorum {
                    request,
                    version,
                    reply,
                };
                self.tx.send(event).await.ok()?;
                return Some(rx);
            }
            // The listener advertises nothing else; refusing closes the connection.
            _ => return None,
        };
        let (reply, rx) = oneshot::channel();
        let event = NetEvent::Request {
            from,
            correlation_id: request.header.correlation_id,
            msg,
            reply,
        };
        self.tx.send(event).await.ok()?;
        Some(rx)
    }
}

/// Wall-clock Unix time in ms (read once per incarnation; the loop then counts monotonic
/// time from it).
fn unix_ms() -> u64 {
    kraftd_log::clock::unix_ms().max(0) as u64
}

/// Where a request to node `to` goes: its `controller.quorum.voters` endpoint, else its
/// bootstrap server's (a negative id), else the endpoint a Raft message named for it
/// (KIP-853: `learned`, as `host:port`). The configuration comes first for a static voter:
/// the operator wrote the address this node can reach, while an advertised one may be
/// unroutable from here (D2) or stale; a learned endpoint serves the ids the configuration
/// lacks. (Kafka prefers the endpoints of the messages; with static voters they match.)
fn route(
    to: i32,
    voters: &BTreeMap<i32, VoterEndpoint>,
    bootstrap: &BTreeMap<i32, VoterEndpoint>,
    learned: Option<String>,
) -> Option<String> {
    voters
        .get(&to)
        .or_else(|| bootstrap.get(&to))
        .map(VoterEndpoint::address)
        .or(learned)
}

fn request_body(msg: RaftMessage) -> Option<RequestBody> {
    Some(match msg {
        RaftMessage::VoteRequest(r) => RequestBody::Vote(r),
        RaftMessage::BeginQuorumEpochRequest(r) => RequestBody::BeginQuorumEpoch(r),
        RaftMessage::EndQuorumEpochRequest(r) => RequestBody::EndQuorumEpoch(r),
        RaftMessage::FetchRequest(r) => RequestBody::Fetch(r),
        RaftMessage::FetchSnapshotRequest(r) => RequestBody::FetchSnapshot(r),
        _ => return None,
    })
}

fn response_body(msg: RaftMessage) -> Option<ResponseBody> {
    Some(match msg {
        RaftMessage::VoteResponse(r) => ResponseBody::Vote(r),
        RaftMessage::BeginQuorumEpochResponse(r) => ResponseBody::BeginQuorumEpoch(r),
        RaftMessage::EndQuorumEpochResponse(r) => ResponseBody::EndQuorumEpoch(r),
        RaftMessage::FetchResponse(r) => ResponseBody::Fetch(*r),
        RaftMessage::FetchSnapshotResponse(r) => ResponseBody::FetchSnapshot(*r),
        _ => return None,
    })
}

fn raft_response(body: ResponseBody) -> Option<RaftMessage> {
    Some(match body {
        ResponseBody::Vote(r) => RaftMessage::VoteResponse(r),
        ResponseBody::BeginQuorumEpoch(r) => RaftMessage::BeginQuorumEpochResponse(r),
        ResponseBody::EndQuorumEpoch(r) => RaftMessage::EndQuorumEpochResponse(r),
        ResponseBody::Fetch(r) => RaftMessage::FetchResponse(Box::new(r)),
        ResponseBody::FetchSnapshot(r) => RaftMessage::FetchSnapshotResponse(Box::new(r)),
        _ => return None,
    })
}

/// The top-level error code of a response, and its partitions' (for the per-destination
/// error counters).
fn error_codes(msg: &RaftMessage) -> Vec<i16> {
    let mut codes = Vec::new();
    match msg {
        RaftMessage::VoteResponse(r) => {
            codes.push(r.error_code);
            codes.extend(
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            );
        }
        RaftMessage::BeginQuorumEpochResponse(r) => {
            codes.push(r.error_code);
            codes.extend(
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            );
        }
        RaftMessage::EndQuorumEpochResponse(r) => {
            codes.push(r.error_code);
            codes.extend(
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            );
        }
        RaftMessage::FetchResponse(r) => {
            codes.push(r.error_code);
            codes.extend(
                r.responses
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            );
        }
        RaftMessage::FetchSnapshotResponse(r) => {
            codes.push(r.error_code);
            codes.extend(
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            );
        }
        _ => {}
    }
    codes.retain(|c| *c != 0);
    codes
}

/// Records carried by a Fetch response's batches.
fn fetched_records(r: &kraftd_protocol::messages::FetchResponse) -> u64 {
    r.responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .filter_map(|p| p.records.clone())
        .flat_map(Batches::new)
        .map_while(Result::ok)
        .map(|b| (b.next_offset() - b.base_offset()).max(0) as u64)
        .sum()
}

#[derive(Debug, Default)]
struct Counters {
    commit_latency_total_ms: f64,
    commits: u64,
    elections: u64,
    /// Since when no leader is known (`None` while one is).
    leaderless_since: Option<Instant>,
    /// The windowed raft-metrics, refreshed at least every [`metrics::METRICS_REFRESH_MS`].
    sensors: metrics::RaftSensors,
    /// When (core ms) the next metrics refresh is due.
    metrics_refresh_ms: u64,
    fetch_records_total: u64,
    append_records_total: u64,
    destinations: BTreeMap<i32, DestinationMetrics>,
}

/// A batch this leader appended and has not yet seen commit.
#[derive(Debug)]
struct Proposal {
    /// First and last offset.
    range: (i64, i64),
    at: Instant,
    /// The caller of [`RaftHandle::propose_committed`].
    waiter: Option<oneshot::Sender<Result<(i64, i64), ProposeError>>>,
}

/// An inbound request waiting for the core's response.
#[derive(Debug)]
struct Inbound {
    reply: oneshot::Sender<ResponseBody>,
    received_ms: u64,
}

struct DriverLoop {
    node_id: i32,
    core: RaftCore<MetadataLog>,
    started: Instant,
    /// The Unix time in ms at `started`: the core's clock is `base_ms` plus monotonic time
    /// since, so it never goes back yet its timestamps (DescribeQuorum) read as Unix ms.
    base_ms: u64,
    voters: BTreeMap<i32, VoterEndpoint>,
    /// The bootstrap servers that name no voter, by their negative ids.
    bootstrap_endpoints: BTreeMap<i32, VoterEndpoint>,
    /// [`DriverConfig::controller_listener_name`].
    controller_listener_name: String,
    client: ClientConfig,
    channels: HashMap<i32, Channel>,
    /// The address each of `channels` connects to.
    routes: HashMap<i32, String>,
    /// Requests awaiting the core's answer, by (sender, correlation id).
    inbound: HashMap<(i32, i32), Inbound>,
    net_rx: mpsc::Receiver<NetEvent>,
    commands: mpsc::Receiver<Command>,
    atomic_rx: mpsc::UnboundedReceiver<Scheduled>,
    events: broadcast::Sender<RaftEvent>,
    metrics: watch::Sender<RaftMetrics>,
    /// Outcomes of outbound requests, sent by the channels' tasks. Unbounded, yet bounded
    /// in practice: one message per request, and each channel holds at most
    /// `CHANNEL_QUEUE_CAPACITY` queued plus `max_in_flight` outstanding requests (the core
    /// itself keeps one Fetch and one request per voter and RPC outstanding).
    results_tx: mpsc::UnboundedSender<NetEvent>,
    results_rx: mpsc::UnboundedReceiver<NetEvent>,
    /// Requests that could not be sent, to report to the core after the drain.
    failures: VecDeque<(i32, i32, ApiKind)>,
    /// Proposals awaiting commit, oldest first.
    proposals: VecDeque<Proposal>,
    counters: Counters,
    shutdown_until: Option<Instant>,
    end_quorum_answered: Vec<i32>,
    /// The core asked for a flush ([`Output::Flush`]); started on a blocking thread once
    /// the drain is over (and none is in flight).
    flush_due: bool,
    /// A flush runs on a blocking thread; its outcome comes on `flushed_rx`.
    flush_in_flight: bool,
    flushed_tx: mpsc::UnboundedSender<Result<CompletedFlush, kraftd_log::LogError>>,
    flushed_rx: mpsc::UnboundedReceiver<Result<CompletedFlush, kraftd_log::LogError>>,
    /// Shared with the handles: why the loop stopped.
    stop_reason: Arc<OnceLock<String>>,
}

impl std::fmt::Debug for DriverLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriverLoop")
            .field("node_id", &self.node_id)
            .finish()
    }
}

enum Input {
    Command(Option<Command>),
    Flushed(Result<CompletedFlush, kraftd_log::LogError>),
    Atomic(Scheduled),
    Net(NetEvent),
    Timeout,
    MetricsRefresh,
}

impl DriverLoop {
    fn now_ms(&self) -> u64 {
        self.base_ms + self.started.elapsed().as_millis() as u64
    }

    /// When the loop wakes to refresh the windowed metrics if nothing woke it sooner.
    fn metrics_refresh_at(&self) -> Instant {
        let due_ms = self
            .counters
            .metrics_refresh_ms
            .saturating_sub(self.base_ms);
        self.started + Duration::from_millis(due_ms)
    }

    async fn run(mut self) -> Result<(), String> {
        let result = self.run_inner().await;
        if let Err(reason) = &result {
            error!(node = self.node_id, "raft driver stopped: {reason}");
            let _ = self.stop_reason.set(reason.clone());
        }
        let DriverLoop { core, .. } = self;
        if let Err(e) = core.into_log().close() {
            warn!("closing the metadata log failed: {e}");
        }
        result
    }

    async fn run_inner(&mut self) -> Result<(), String> {
        self.drain()?;
        self.start_flush_if_due();
        loop {
            if self.shutdown_done() {
                return Ok(());
            }
            let deadline = self.core.poll_timeout();
            let wake = if deadline == u64::MAX {
                Instant::now() + Duration::from_secs(3600)
            } else {
                self.started + Duration::from_millis(deadline.saturating_sub(self.base_ms))
            };
            let wake = match self.shutdown_until {
                Some(s) => wake.min(s),
                None => wake,
            };
            let refresh_at = self.metrics_refresh_at();
            let idle_from = Instant::now();
            let input = tokio::select! {
                cmd = self.commands.recv(), if self.shutdown_until.is_none() => Input::Command(cmd),
                Some(a) = self.atomic_rx.recv(), if self.shutdown_until.is_none() => Input::Atomic(a),
                Some(ev) = self.net_rx.recv() => Input::Net(ev),
                Some(ev) = self.results_rx.recv() => Input::Net(ev),
                Some(done) = self.flushed_rx.recv() => Input::Flushed(done),
                () = sleep_until(wake) => Input::Timeout,
                () = sleep_until(refresh_at) => Input::MetricsRefresh,
            };
            let idle_ms = idle_from.elapsed().as_secs_f64() * 1000.0;
            let now = self.now_ms();
            self.counters.sensors.record_poll_idle(idle_ms, now);
            match input {
                Input::Command(None) => {
                    // Every handle is gone: nobody can propose or read; stop as on shutdown.
                    self.begin_shutdown(now);
                }
                Input::Command(Some(cmd)) => self.on_command(now, cmd),
                Input::Atomic(first) => {
                    self.on_scheduled(now, first);
                    // Appends queued together go out together (one flush, one fetch wake).
                    while let Ok(next) = self.atomic_rx.try_recv() {
                        self.on_scheduled(now, next);
                    }
                }
                Input::Net(ev) => self.on_net(now, ev)?,
                Input::Timeout => self.core.handle_timeout(now),
                Input::MetricsRefresh => {
                    // Republished by the drain below, decayed to `now`.
                    self.counters.sensors.measure_poll_idle();
                    self.counters.metrics_refresh_ms = now + metrics::METRICS_REFRESH_MS;
                }
                Input::Flushed(done) => self.on_flushed(now, done),
            }
            self.drain()?;
            self.start_flush_if_due();
            self.check_log()?;
            if self.core.is_fatal() {
                return Err("the raft core hit a fatal error".into());
            }
        }
    }

    /// Starts the flush the core asked for on a blocking thread: the Fetch responses sent
    /// before it go out meanwhile, so the followers fetch and fsync while the leader does,
    /// and the loop keeps answering. At most one runs at a time (the core asks for the next
    /// only after [`RaftCore::flush`]).
    fn start_flush_if_due(&mut self) {
        if !self.flush_due || self.flush_in_flight {
            return;
        }
        self.flush_due = false;
        // `None`: the log failed, and the loop stops on it.
        let Some(pending) = self.core.log().plan_flush() else {
            return;
        };
        self.flush_in_flight = true;
        let tx = self.flushed_tx.clone();
        tokio::task::spawn_blocking(move || {
            let _ = tx.send(pending.execute());
        });
    }

    /// A flush started by [`DriverLoop::start_flush_if_due`] finished: the core's flush
    /// takes it (the leader's end offset counts up to what it covered), or the log fails.
    fn on_flushed(&mut self, now: u64, done: Result<CompletedFlush, kraftd_log::LogError>) {
        self.flush_in_flight = false;
        self.core.log().flush_completed(done);
        if self.core.log().failure().is_some() {
            return;
        }
        self.core.flush(now);
        self.core.log().discard_completed_flush();
    }

    /// A Fetch tells the leader our end offset, which it counts toward the HW: flush first
    /// whatever is unflushed (only an ex-leader whose flush had not completed has any; a
    /// follower flushes as it appends), synchronously.
    fn flush_before_fetch(&mut self) -> Result<(), String> {
        use crate::core::log::RaftLog;
        let log = self.core.log();
        if log.flushed_offset() < log.end_offset() {
            let now = self.now_ms();
            self.core.flush(now);
            self.check_log()?;
            let log = self.core.log();
            if log.flushed_offset() < log.end_offset() {
                return Err("the metadata log could not be flushed before a fetch".into());
            }
        }
        Ok(())
    }

    /// Err with the metadata log's disk failure, if it had one: the node must stop.
    fn check_log(&self) -> Result<(), String> {
        match self.core.log().failure() {
            Some(failure) => Err(failure.to_string()),
            None => Ok(()),
        }
    }

    fn shutdown_done(&self) -> bool {
        let Some(until) = self.shutdown_until else {
            return false;
        };
        let others = self.voters.keys().filter(|v| **v != self.node_id).count();
        Instant::now() >= until
            || self.core.role() != RoleName::Resigned
            || self.end_quorum_answered.len() >= others
    }

    fn begin_shutdown(&mut self, now: u64) {
        if self.shutdown_until.is_some() {
            return;
        }
        info!(
            node = self.node_id,
            role = self.core.role().as_str(),
            "raft driver shutting down"
        );
        let was_leader = self.core.role() == RoleName::Leader;
        self.core.resign(now);
        self.shutdown_until = Some(if was_leader {
            Instant::now() + self.client.request_timeout
        } else {
            Instant::now()
        });
    }

    fn on_command(&mut self, now: u64, cmd: Command) {
        match cmd {
            Command::Propose {
                records,
                wait_for_commit,
                reply,
            } => {
                // Commit latency counts from here: the leader's own append and flush too.
                let at = Instant::now();
                let result = self.core.propose(now, &records);
                if self.core.log().failure().is_some() {
                    // Not appended: the caller sees the driver stop.
                    return;
                }
                let Ok(range) = result else {
                    let _ = reply.send(result);
                    return;
                };
                self.counters.append_records_total += records.len() as u64;
                self.counters
                    .sensors
                    .record_append_records(records.len() as u64, now);
                let waiter = if wait_for_commit {
                    Some(reply)
                } else {
                    let _ = reply.send(Ok(range));
                    None
                };
                self.proposals.push_back(Proposal { range, at, waiter });
            }
            Command::ReadCommitted {
                from,
                max_bytes,
                reply,
            } => {
                let bytes = self.read_committed(from, max_bytes);
                if self.core.log().failure().is_none() {
                    let _ = reply.send(bytes);
                }
            }
            Command::CreateSnapshot { id, bytes, reply } => {
                let result = self.core.create_snapshot(id, &bytes).map(|()| {
                    let start = self.core.delete_log_before_latest_snapshot();
                    info!(
                        node = self.node_id,
                        ?id,
                        log_start = start,
                        "snapshot created"
                    );
                    start
                });
                if self.core.log().failure().is_none() {
                    let _ = reply.send(result);
                }
            }
            Command::Shutdown => self.begin_shutdown(now),
        }
    }

    fn on_scheduled(&mut self, now: u64, scheduled: Scheduled) {
        match scheduled {
            Scheduled::Append(append) => self.on_atomic_append(now, append),
            Scheduled::Resign(epoch) => {
                if self.core.role() == RoleName::Leader && self.core.epoch() == epoch {
                    info!(
                        node = self.node_id,
                        epoch, "resigning at the controller's request"
                    );
                    self.core.resign(now);
                }
            }
        }
    }

    fn on_atomic_append(&mut self, now: u64, append: AtomicAppend) {
        use crate::core::log::RaftLog;
        let AtomicAppend {
            epoch,
            base_offset,
            records,
            on_refused,
        } = append;
        let refuse = |reason: String| {
            warn!(node = self.node_id, epoch, base_offset, %reason, "atomic append refused");
            let _ = on_refused.send(AtomicAppendRefused {
                epoch,
                base_offset,
                reason,
            });
        };
        if self.core.role() != RoleName::Leader || self.core.epoch() != epoch {
            return refuse(format!(
                "this node is {} in epoch {}",
                self.core.role().as_str(),
                self.core.epoch()
            ));
        }
        let end = self.core.log().end_offset();
        if end != base_offset {
            return refuse(format!("the log ends at {end}"));
        }
        let at = Instant::now();
        let result = self.core.propose(now, &records);
        if self.core.log().failure().is_some() {
            // Not appended; the driver stops and the controller sees its events end.
            return;
        }
        match result {
            Ok(range) => {
                self.counters.append_records_total += records.len() as u64;
                self.counters
                    .sensors
                    .record_append_records(records.len() as u64, now);
                self.proposals.push_back(Proposal {
                    range,
                    at,
                    waiter: None,
                });
            }
            Err(e) => refuse(e.to_string()),
        }
    }

    fn read_committed(&self, from: i64, max_bytes: usize) -> Bytes {
        use crate::core::log::RaftLog;
        let hw = self.core.high_watermark();
        if from >= hw {
            return Bytes::new();
        }
        let bytes = self.core.log().read(from, max_bytes);
        let mut end = 0;
        for batch in Batches::new(bytes.clone()) {
            match batch {
                Ok(b) if b.next_offset() <= hw => end += b.as_bytes().len(),
                _ => break,
            }
        }
        bytes.slice(..end)
    }

    fn on_net(&mut self, now: u64, ev: NetEvent) -> Result<(), String> {
        match ev {
            NetEvent::DescribeQuorum {
                request,
                version,
                reply,
            } => {
                let mut response = self.core.describe_quorum(&request, now);
                if version >= 2 {
                    self.fill_nodes(&mut response);
                }
                let _ = reply.send(ResponseBody::DescribeQuorum(response));
            }
            NetEvent::Request {
                from,
                correlation_id,
                msg,
                reply,
            } => {
                self.inbound.insert(
                    (from, correlation_id),
                    Inbound {
                        reply,
                        received_ms: now,
                    },
                );
                self.feed(now, from, correlation_id, msg)?;
            }
            NetEvent::Response {
                from,
                correlation_id,
                kind,
                result,
            } => match result {
                Ok(msg) => {
                    if let RaftMessage::FetchResponse(r) = &msg {
                        let records = fetched_records(r);
                        self.counters.fetch_records_total += records;
                        self.counters.sensors.record_fetch_records(records, now);
                    }
                    let stats = self.counters.destinations.entry(from).or_default();
                    stats.responses_received += 1;
                    for code in error_codes(&msg) {
                        *stats.errors_by_code.entry(code).or_default() += 1;
                    }
                    if kind == ApiKind::EndQuorumEpoch
                        && error_codes(&msg).is_empty()
                        && !self.end_quorum_answered.contains(&from)
                    {
                        self.end_quorum_answered.push(from);
                    }
                    self.feed(now, from, correlation_id, msg)?;
                }
                Err(reason) => {
                    tracing::debug!(node = self.node_id, to = from, ?kind, %reason, "request failed");
                    self.counters
                        .destinations
                        .entry(from)
                        .or_default()
                        .request_failures += 1;
                    self.core
                        .handle_request_failed(now, from, correlation_id, kind);
                }
            },
        }
        Ok(())
    }

    /// DescribeQuorum v2's `Nodes`: each voter of the leader's answer with its endpoint
    /// under the controller listener's name (Kafka's `RaftUtil.singletonDescribeQuorumResponse`
    /// lists the voters only, and only in a leader's answer).
    fn fill_nodes(&self, response: &mut DescribeQuorumResponse) {
        use kraftd_protocol::messages::describe_quorum_response::{Listener, Node};
        let voters = response
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .filter(|p| p.error_code == 0)
            .flat_map(|p| p.current_voters.iter().map(|v| v.replica_id));
        let mut nodes: Vec<Node> = Vec::new();
        for id in voters {
            let Some(endpoint) = self.voters.get(&id) else {
                continue;
            };
            if nodes.iter().any(|n| n.node_id == id) {
                continue;
            }
            nodes.push(Node {
                node_id: id,
                listeners: vec![Listener {
                    name: self.controller_listener_name.clone(),
                    // A bracketed IPv6 literal is reported bare, as Java's getHostString.
                    host: endpoint
                        .host
                        .trim_start_matches('[')
                        .trim_end_matches(']')
                        .to_string(),
                    port: endpoint.port,
                    ..Default::default()
                }],
                ..Default::default()
            });
        }
        response.nodes = nodes;
    }

    fn feed(
        &mut self,
        now: u64,
        from: i32,
        correlation_id: i32,
        msg: RaftMessage,
    ) -> Result<(), String> {
        self.core
            .handle_message(now, from, correlation_id, msg)
            .map_err(|e| e.to_string())
    }

    /// Acts on every output, in order; then reports unsendable requests and drains again.
    fn drain(&mut self) -> Result<(), String> {
        loop {
            // Nothing the core queued after a disk failure is acted on.
            self.check_log()?;
            while let Some(out) = self.core.poll_output() {
                match out {
                    Output::PersistQuorumState(state) => {
                        self.core
                            .log()
                            .write_quorum_state(&state)
                            .map_err(|e| format!("persisting the quorum state failed: {e}"))?;
                    }
                    Output::Send {
                        to,
                        correlation_id,
                        msg,
                    } => {
                        if matches!(
                            msg,
                            RaftMessage::FetchRequest(_) | RaftMessage::FetchSnapshotRequest(_)
                        ) {
                            self.flush_before_fetch()?;
                        }
                        self.send(to, correlation_id, msg)
                    }
                    Output::Flush => self.flush_due = true,
                    Output::Committed(batch) => {
                        let _ = self.events.send(RaftEvent::Committed(batch));
                    }
                    Output::Snapshot { id, bytes } => {
                        info!(node = self.node_id, ?id, "snapshot for listeners");
                        let _ = self.events.send(RaftEvent::Snapshot { id, bytes });
                    }
                    Output::LeaderChange { epoch, leader_id } => {
                        info!(node = self.node_id, epoch, ?leader_id, "leader change");
                        let log_end_offset = {
                            use crate::core::log::RaftLog;
                            self.core.log().end_offset()
                        };
                        let _ = self.events.send(RaftEvent::LeaderChange {
                            epoch,
                            leader_id,
                            log_end_offset,
                        });
                    }
                }
            }
            let Some((to, correlation_id, kind)) = self.failures.pop_front() else {
                break;
            };
            let now = self.now_ms();
            self.core
                .handle_request_failed(now, to, correlation_id, kind);
        }
        self.expire_inbound();
        self.publish_metrics();
        Ok(())
    }

    fn send(&mut self, to: i32, correlation_id: i32, msg: RaftMessage) {
        let kind = msg.kind();
        if !msg.is_request() {
            let Some(inbound) = self.inbound.remove(&(to, correlation_id)) else {
                tracing::debug!(
                    node = self.node_id,
                    to,
                    correlation_id,
                    "response to a request no longer waiting"
                );
                return;
            };
            if let Some(body) = response_body(msg) {
                let _ = inbound.reply.send(body);
            }
            return;
        }
        let Some(body) = request_body(msg) else {
            return;
        };
        let learned = self.core.learned_endpoint(to).map(|l| l.endpoint.address());
        let Some(address) = route(to, &self.voters, &self.bootstrap_endpoints, learned) else {
            warn!(node = self.node_id, to, "no endpoint known for node");
            self.failures.push_back((to, correlation_id, kind));
            return;
        };
        let channel = match self.channels.get(&to) {
            Some(c) if self.routes.get(&to) == Some(&address) => c.clone(),
            _ => {
                // A learned endpoint can change with the epoch (a leader restarted
                // elsewhere): the old channel goes with its address.
                let c = Channel::spawn(address.clone(), self.client.clone());
                self.channels.insert(to, c.clone());
                self.routes.insert(to, address);
                c
            }
        };
        self.counters
            .destinations
            .entry(to)
            .or_default()
            .requests_sent += 1;
        let tx = self.results_tx.clone();
        let on_reply = Box::new(move |outcome: Result<ResponseBody, ClientError>| {
            let result = match outcome {
                Ok(body) => {
                    raft_response(body).ok_or_else(|| "response of another api".to_string())
                }
                Err(e) => Err(e.to_string()),
            };
            let _ = tx.send(NetEvent::Response {
                from: to,
                correlation_id,
                kind,
                result,
            });
        });
        if let Err(e) = channel.send_with(correlation_id, kind.version(), body, on_reply) {
            tracing::debug!(node = self.node_id, to, ?kind, "request not sent: {e}");
            self.failures.push_back((to, correlation_id, kind));
        }
    }

    /// Requests the core never answered (it answers all, parked Fetches within their max
    /// wait) are dropped after twice the request timeout so the map stays bounded; the
    /// connection then skips them.
    fn expire_inbound(&mut self) {
        let now = self.now_ms();
        let limit = 2 * self.client.request_timeout.as_millis() as u64;
        self.inbound
            .retain(|_, i| now.saturating_sub(i.received_ms) <= limit && !i.reply.is_closed());
    }

    fn publish_metrics(&mut self) {
        use crate::core::log::RaftLog;
        let now = self.now_ms();
        let hw = self.core.high_watermark();
        if self.core.role() != RoleName::Leader {
            let not_leader = NotLeader {
                epoch: self.core.epoch(),
                leader_id: self.core.leader_id(),
            };
            for p in self.proposals.drain(..) {
                if let Some(w) = p.waiter {
                    let _ = w.send(Err(not_leader.into()));
                }
            }
        }
        while let Some(p) = self.proposals.front() {
            if p.range.1 >= hw {
                break;
            }
            let Some(p) = self.proposals.pop_front() else {
                break;
            };
            if let Some(w) = p.waiter {
                let _ = w.send(Ok(p.range));
            }
            let ms = p.at.elapsed().as_secs_f64() * 1000.0;
            self.counters.commits += 1;
            self.counters.commit_latency_total_ms += ms;
            self.counters.sensors.record_commit_latency(ms, now);
        }
        match (self.core.leader_id(), self.counters.leaderless_since) {
            (None, None) => self.counters.leaderless_since = Some(Instant::now()),
            (Some(_), Some(since)) => {
                let ms = since.elapsed().as_secs_f64() * 1000.0;
                self.counters.leaderless_since = None;
                self.counters.elections += 1;
                self.counters.sensors.record_election_latency(ms, now);
            }
            _ => {}
        }
        let durable = self.core.durable_state();
        let role = self.core.role();
        let current_state =
            if !self.core.is_voter() && matches!(role, RoleName::Follower | RoleName::Unattached) {
                "observer"
            } else if role == RoleName::Unattached && durable.voted_id >= 0 {
                "voted"
            } else {
                role.as_str()
            };
        let c = &self.counters;
        let mut m = RaftMetrics {
            current_state,
            current_leader: self.core.leader_id().unwrap_or(-1),
            current_vote: durable.voted_id,
            current_epoch: self.core.epoch(),
            high_watermark: hw,
            leader_high_watermark: self.core.leader_high_watermark(),
            log_end_offset: self.core.log().end_offset(),
            log_end_epoch: self.core.log().last_epoch(),
            number_of_voters: self.voters.len(),
            number_of_observers: self.core.leader_state().map_or(0, |l| l.observers.len()),
            commits: c.commits,
            commit_latency_total_ms: c.commit_latency_total_ms,
            elections: c.elections,
            fetch_records_total: c.fetch_records_total,
            append_records_total: c.append_records_total,
            not_leader_or_follower_replies: self.core.stats().not_leader_or_follower_replies,
            destinations: c.destinations.clone(),
            learned_endpoints: self
                .core
                .learned_endpoints()
                .iter()
                .map(|(id, l)| (*id, l.endpoint.address()))
                .collect(),
            // Windowed: set by the sensors below.
            ..RaftMetrics::default()
        };
        self.counters.sensors.fill(&mut m, now);
        self.metrics.send_if_modified(|old| {
            if *old == m {
                false
            } else {
                *old = m;
                true
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(id: i32, host: &str, port: u16) -> VoterEndpoint {
        VoterEndpoint {
            id,
            host: host.to_string(),
            port,
        }
    }

    #[test]
    fn a_configured_voter_is_routed_by_its_configuration_and_a_learned_endpoint_fills_the_rest() {
        let voters = BTreeMap::from([(1, endpoint(1, "controller-1", 9093))]);
        let bootstrap = BTreeMap::from([(-2, endpoint(-2, "localhost", 9093))]);
        let learned = |a: &str| Some(a.to_string());
        assert_eq!(
            route(1, &voters, &bootstrap, learned("10.0.0.1:19093")),
            Some("controller-1:9093".to_string()),
            "the configuration wins for a static voter"
        );
        assert_eq!(
            route(-2, &voters, &bootstrap, None),
            Some("localhost:9093".to_string())
        );
        assert_eq!(
            route(2, &voters, &bootstrap, learned("10.0.0.2:9093")),
            Some("10.0.0.2:9093".to_string()),
            "an id the configuration lacks goes where the messages named it"
        );
        assert_eq!(route(3, &voters, &bootstrap, None), None);
    }
}
