//! [`RaftDriver`]: starts a node's Raft (opens the metadata log, restores the quorum state,
//! builds the core, spawns the driver loop and, unless detached, the controller listener) and
//! stops it, gracefully or as a crash would; with its configuration ([`DriverConfig`]) and
//! errors ([`DriverError`]). Kafka's `KafkaRaftManager`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kraftd_log::LogConfig;
use kraftd_protocol::api_versions::{ApiVersionsTable, ListenerType};
use tokio::net::TcpListener;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::info;

use super::driver_loop::DriverLoop;
use super::handle::{Command, RaftEvent, RaftHandle};
use super::log::{MetadataLog, MetadataLogError};
use super::metrics::{Counters, RaftMetrics};
use super::quorum_config::QuorumConfig;
use super::router::RaftRequestRouter;
use super::voters::VoterEndpoint;
use crate::core::log::LogError;
use crate::core::{ProposeError, RaftCore};
use kraftd_net::{serve, ClientConfig, ServerConfig};

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
    /// The voters, the bootstrap servers, `controller.quorum.*` and the metadata log's
    /// directory.
    pub quorum: QuorumConfig,
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
    /// How this node's Raft client reaches the controller listener of others.
    pub client_security: kraftd_net::ClientSecurity,
    /// KIP-853: the `directory.id` of the metadata log directory (`meta.properties`; zero
    /// when it has none).
    pub directory_id: kraftd_protocol::Uuid,
    /// KIP-853: this node's own controller listeners (name → advertised endpoint), what it
    /// names itself by in a voter set. Empty: its `controller.quorum.voters` entry, if any.
    pub local_listeners: BTreeMap<String, crate::core::endpoints::Endpoint>,
    /// `controller.quorum.auto.join.enable`.
    pub auto_join: bool,
}

impl DriverConfig {
    /// Kafka's defaults for node `node_id` of `quorum`.
    pub fn new(node_id: i32, quorum: QuorumConfig) -> Self {
        DriverConfig {
            node_id,
            quorum,
            log_config: LogConfig::metadata_log(),
            server: ServerConfig::default(),
            seed: node_id as u64,
            early_subscribers: 1,
            controller_listener_name: DEFAULT_CONTROLLER_LISTENER_NAME.to_string(),
            client_security: Default::default(),
            directory_id: kraftd_protocol::Uuid::ZERO,
            local_listeners: BTreeMap::new(),
            auto_join: false,
        }
    }
}

/// Why the driver could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    Log(#[from] MetadataLogError),
    #[error("node {0} has no controller.quorum.voters, no voter set in its metadata log and no controller.quorum.bootstrap.servers")]
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

impl RaftDriver {
    /// Opens the log in `config.quorum.metadata_log_dir`, restores the quorum state, and starts serving on
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
        let log = MetadataLog::open(&config.quorum.metadata_log_dir, config.log_config.clone())?;
        let persisted = log.read_quorum_state()?;
        let started = Instant::now();
        let base_ms = unix_ms();
        let mut raft = config.quorum.raft.clone();
        raft.listener_name = config.controller_listener_name.clone();
        raft.voter_endpoints = config
            .quorum
            .voters
            .iter()
            .map(|(id, v)| (*id, v.wire_endpoint()))
            .collect();
        if !config.quorum.bootstrap_servers.is_empty() {
            raft.bootstrap_servers = config
                .quorum
                .bootstrap_servers
                .iter()
                .map(|b| b.id)
                .collect();
        }
        // Either place may carry them (a node's `RaftConfig` or the driver's own fields).
        if config.directory_id != kraftd_protocol::Uuid::ZERO {
            raft.directory_id = config.directory_id;
        }
        raft.auto_join |= config.auto_join;
        if !config.local_listeners.is_empty() {
            raft.local_listeners = config.local_listeners.clone();
        }
        if raft.local_listeners.is_empty() {
            if let Some(own) = config.quorum.voters.get(&node_id) {
                raft.local_listeners
                    .insert(config.controller_listener_name.clone(), own.wire_endpoint());
            }
        }
        // The entries that name no voter: reached by their own endpoint.
        let bootstrap_endpoints: BTreeMap<i32, VoterEndpoint> = config
            .quorum
            .bootstrap_servers
            .iter()
            .filter(|b| !config.quorum.voters.contains_key(&b.id))
            .map(|b| (b.id, b.clone()))
            .collect();
        let core = RaftCore::new(
            raft,
            node_id,
            config.quorum.voters.keys().copied(),
            persisted,
            log,
            config.seed,
            base_ms,
        );
        if core.voter_set().is_empty() && config.quorum.bootstrap_servers.is_empty() {
            return Err(DriverError::NoQuorum(node_id));
        }
        info!(
            node = node_id,
            ?persisted,
            voters = %core.voter_set(),
            kraft_version = core.kraft_version(),
            "raft driver starting"
        );
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
            request_timeout: Duration::from_millis(config.quorum.raft.request_timeout_ms),
            reconnect_backoff: Duration::from_millis(RECONNECT_BACKOFF_MS),
            reconnect_backoff_max: Duration::from_millis(RECONNECT_BACKOFF_MAX_MS),
            security: config.client_security.clone(),
            ..ClientConfig::new(format!("raft-client-{node_id}"))
        };
        let driver_loop = DriverLoop {
            node_id,
            core,
            started,
            base_ms,
            voters: config.quorum.voters.clone(),
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
            voter_changes: HashMap::new(),
            next_voter_token: 0,
            own_voter_change: Default::default(),
            refused_epoch: None,
            known_end: None,
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

/// Wall-clock Unix time in ms (read once per incarnation; the loop then counts monotonic
/// time from it).
pub(super) fn unix_ms() -> u64 {
    kraftd_log::clock::unix_ms().max(0) as u64
}
