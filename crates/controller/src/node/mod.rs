//! A controller node at the tokio edge (Kafka's `ControllerServer`): the Raft driver as a
//! voter of `__cluster_metadata`, the sans-IO [`QuorumController`] on an event loop of its
//! own, and the controller listener ([`apis::ControllerApis`]) serving the Raft RPCs and the
//! controller APIs on one port, as a Kafka controller's listener does.
//!
//! Data flow: a request decoded by the transport is routed by api key; Raft's go to the
//! driver, the controller's become a write or read operation queued on the event loop, which
//! answers once the operation's records commit. The event loop follows Raft's committed
//! batches, snapshots and leader changes ([`RaftEvent`]) in order, proposes through
//! [`RaftHandle::schedule_atomic_append`] at the offsets the controller predicts, ticks the
//! controller's clock (no-op records, broker session expiry), and takes snapshots when the
//! [`SnapshotPolicy`](crate::snapshot::SnapshotPolicy) says so.

pub mod apis;
mod authz;
mod event_loop;
mod kraft_version;
pub mod registration;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kraftd_log::LogConfig;
use kraftd_net::{serve, ServerConfig};
use kraftd_protocol::MetadataRecord;
use kraftd_raft::driver::{
    DriverConfig, DriverError, QuorumConfig, RaftDriver, RaftEvent, RaftHandle,
};
use tokio::net::TcpListener;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;

use crate::metrics::{ControllerMetadataMetricsPublisher, ControllerMetrics};
use crate::publisher::{AuthorizerConfig, NodePublishers};
use crate::quorum_controller::{ManagersConfig, QuorumControllerConfig};
use crate::quota::{ControllerMutationQuotaManager, QuotaWindow};
use crate::MetadataImage;

pub use apis::ControllerApis;
pub use event_loop::{decode_committed, ControllerStatus};

/// Operations queued for the event loop before the listener's connections wait.
pub const CONTROLLER_REQUEST_CHANNEL_CAPACITY: usize = 1024;
/// How often the event loop ticks the controller's clock.
pub const TICK_INTERVAL: Duration = Duration::from_millis(50);

/// Everything a controller node needs; built by the CLI from Kafka's property names.
#[derive(Debug, Clone)]
pub struct ControllerNodeConfig {
    /// `node.id`.
    pub node_id: i32,
    /// The cluster id from `meta.properties`.
    pub cluster_id: String,
    /// `controller.quorum.voters`, `controller.quorum.bootstrap.servers`,
    /// `controller.quorum.*` and `<metadata.log.dir>/__cluster_metadata-0`.
    pub quorum: QuorumConfig,
    /// The first of `controller.listener.names`: how DescribeQuorum names the voters'
    /// endpoints.
    pub controller_listener_name: String,
    /// The metadata log store's policy (`metadata.log.segment.bytes`,
    /// `metadata.log.segment.ms`); flushing is Raft's to decide.
    pub log_config: LogConfig,
    /// The controller listener's limits (`socket.request.max.bytes`, ...).
    pub server: ServerConfig,
    /// How this node's Raft client reaches the other controllers' listener.
    pub client_security: kraftd_net::ClientSecurity,
    /// The control managers' settings (`broker.session.timeout.ms`, `num.partitions`,
    /// `default.replication.factor`, ...).
    pub managers: ManagersConfig,
    /// `metadata.max.idle.interval.ms`.
    pub metadata_max_idle_interval_ms: u64,
    /// `delete.topic.enable`: false refuses DeleteTopics.
    pub delete_topic_enable: bool,
    /// The sampling of `controller_mutation_rate` (`controller.quota.window.num`,
    /// `controller.quota.window.size.seconds`).
    pub mutation_quota_window: QuotaWindow,
    /// `leader.imbalance.check.interval.seconds` (in ms) when `auto.leader.rebalance.enable`.
    pub leader_imbalance_check_interval_ms: Option<u64>,
    /// `unclean.leader.election.interval.ms` (Kafka's internal config).
    pub unclean_leader_election_interval_ms: u64,
    /// The bootstrap metadata (`bootstrap.checkpoint`): written by the first active
    /// controller of an empty log.
    pub bootstrap_records: Vec<MetadataRecord>,
    /// `authorizer.class.name`, `super.users` and `allow.everyone.if.no.acl.found`.
    pub authorizer: AuthorizerConfig,
    /// Whether a broker in the same process shares this node's Raft client (`process.roles=
    /// broker,controller`): it then takes its events with [`ControllerNode::take_broker_events`].
    pub colocated_broker: bool,
    /// `metadata.log.max.record.bytes.between.snapshots`.
    pub snapshot_max_bytes: u64,
    /// `metadata.log.max.snapshot.interval.ms`.
    pub snapshot_max_interval_ms: i64,
    /// The advertised controller listeners (name, host, port, security protocol id) this
    /// controller registers (KIP-919); none, and it does not register.
    pub registration_listeners: Vec<(String, String, u16, i16)>,
    /// The feature ranges this controller supports (name, min, max), registered with them.
    pub supported_features: Vec<(String, i16, i16)>,
    /// The node's properties file as written: DescribeConfigs' STATIC_BROKER_CONFIG values
    /// (`kafka-configs --bootstrap-controller --describe`).
    pub static_configs: BTreeMap<String, String>,
    /// Components of this node that take its own dynamic broker configs live (the controller
    /// listener's TLS stores), as Kafka's ControllerServer registers its listeners'
    /// reconfigurables with its DynamicConfigPublisher.
    pub reconfigurables: Vec<Arc<dyn crate::publisher::Reconfigurable>>,
}

impl ControllerNodeConfig {
    /// The managers' settings with what UpdateFeatures checks locally (Kafka's
    /// `QuorumFeatures`): this node's id, the static voters, and the feature ranges it
    /// supports (when given; the managers' defaults otherwise).
    fn managers_with_features(&self) -> ManagersConfig {
        let mut managers = self.managers.clone();
        let features = &mut managers.features;
        features.node_id = self.node_id;
        features.quorum_node_ids = self.quorum.voters.keys().copied().collect();
        if !self.supported_features.is_empty() {
            features.supported = self
                .supported_features
                .iter()
                .map(|(name, min, max)| {
                    (
                        name.clone(),
                        crate::image::SupportedRange {
                            min: *min,
                            max: *max,
                        },
                    )
                })
                .collect();
        }
        managers
    }

    /// Kafka's defaults for node `node_id` of `quorum` (whose cluster id is the node's).
    pub fn new(node_id: i32, quorum: QuorumConfig) -> Self {
        let cluster_id = quorum.raft.cluster_id.clone();
        let mut managers = ManagersConfig::default();
        managers.cluster.cluster_id = cluster_id.clone();
        managers.cluster.node_id = node_id;
        managers.seed = u64::from(node_id.unsigned_abs()) ^ 0x6b72_6166_7464;
        // Ids seeded per process: a seed fixed by the node id would draw the same topic and
        // delegation-token ids again after every restart, handing a deleted topic's id to a
        // new topic (KIP-516 relies on ids never coming back) or an expired token's id, and
        // so its HMAC password, to a new owner; Kafka draws both from `Uuid.randomUuid`.
        managers.id_seed = Some(rand_seed(node_id) ^ 0x6964_7365_6564);
        ControllerNodeConfig {
            node_id,
            cluster_id,
            quorum,
            controller_listener_name: kraftd_raft::driver::DEFAULT_CONTROLLER_LISTENER_NAME
                .to_string(),
            log_config: LogConfig::metadata_log(),
            server: ServerConfig::default(),
            client_security: Default::default(),
            managers,
            metadata_max_idle_interval_ms:
                crate::quorum_controller::METADATA_MAX_IDLE_INTERVAL_MS_DEFAULT,
            mutation_quota_window: QuotaWindow::default(),
            delete_topic_enable: true,
            leader_imbalance_check_interval_ms: Some(
                crate::quorum_controller::LEADER_IMBALANCE_CHECK_INTERVAL_MS_DEFAULT,
            ),
            unclean_leader_election_interval_ms:
                crate::quorum_controller::UNCLEAN_LEADER_ELECTION_INTERVAL_MS_DEFAULT,
            bootstrap_records: Vec::new(),
            authorizer: AuthorizerConfig::default(),
            colocated_broker: false,
            snapshot_max_bytes: crate::snapshot::DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
            snapshot_max_interval_ms: crate::snapshot::DEFAULT_MAX_SNAPSHOT_INTERVAL_MS,
            registration_listeners: Vec::new(),
            supported_features: Vec::new(),
            static_configs: BTreeMap::new(),
            reconfigurables: Vec::new(),
        }
    }
}

/// Why a controller node could not start.
#[derive(Debug, thiserror::Error)]
pub enum ControllerNodeError {
    #[error(transparent)]
    Raft(#[from] DriverError),
}

/// A running controller node.
#[derive(Debug)]
pub struct ControllerNode {
    raft: Option<RaftDriver>,
    handle: RaftHandle,
    server: Option<JoinHandle<()>>,
    event_loop: Option<JoinHandle<()>>,
    /// The registration manager ([`registration`]), when the node registers.
    registration: Option<JoinHandle<()>>,
    status: watch::Receiver<ControllerStatus>,
    published: NodePublishers,
    broker_events: Option<broadcast::Receiver<RaftEvent>>,
    /// `controller_mutation_rate` sensors (their metrics).
    mutation_quotas: ControllerMutationQuotaManager,
    metrics: ControllerMetrics,
}

impl ControllerNode {
    /// Starts the Raft driver, the controller's event loop and the controller listener on
    /// `listener` (already bound). Must run inside a multi-thread tokio runtime.
    pub async fn start(
        config: ControllerNodeConfig,
        listener: TcpListener,
    ) -> Result<ControllerNode, ControllerNodeError> {
        let mut driver_config = DriverConfig::new(config.node_id, config.quorum.clone());
        driver_config.server = config.server.clone();
        driver_config.client_security = config.client_security.clone();
        driver_config.log_config = config.log_config.clone();
        driver_config.controller_listener_name = config.controller_listener_name.clone();
        driver_config.seed = rand_seed(config.node_id);
        driver_config.early_subscribers = if config.colocated_broker { 2 } else { 1 };
        let (mut driver, router) = RaftDriver::start_detached(driver_config)?;
        let handle = driver.handle();
        let events = driver.take_events();
        let broker_events = config.colocated_broker.then(|| driver.take_events());
        let (requests_tx, requests_rx) = mpsc::channel(CONTROLLER_REQUEST_CHANNEL_CAPACITY);
        let controller_config = QuorumControllerConfig {
            node_id: config.node_id,
            metadata_max_idle_interval_ms: config.metadata_max_idle_interval_ms,
            leader_imbalance_check_interval_ms: config.leader_imbalance_check_interval_ms,
            unclean_leader_election_interval_ms: config.unclean_leader_election_interval_ms,
            managers: config.managers_with_features(),
            bootstrap_records: config.bootstrap_records.clone(),
            ..Default::default()
        };
        let (status_tx, status) = watch::channel(ControllerStatus::default());
        let published = NodePublishers::new(config.node_id, config.authorizer.clone())
            .with_delegation_tokens(config.managers.delegation_tokens.clone())
            .with_connection_quotas(Arc::clone(&config.server.connection_quotas));
        for r in &config.reconfigurables {
            published.dynamic_configs.add_reconfigurable(Arc::clone(r));
        }
        let auth = crate::auth::AuthHelper::new(&published.authorizer);
        let metrics = ControllerMetrics::new();
        let mut publishers = published.publishers();
        publishers.push(Box::new(ControllerMetadataMetricsPublisher::new(
            metrics.clone(),
        )));
        let mutation_quotas = ControllerMutationQuotaManager::new(
            published.client_quotas.clone(),
            config.mutation_quota_window,
        );
        let event_loop = event_loop::EventLoop::new(
            controller_config,
            &config,
            handle.clone(),
            events,
            requests_rx,
            status_tx,
            publishers,
        )
        .with_metrics(metrics.clone());
        let event_loop = tokio::spawn(event_loop.run());
        let registration = (!config.registration_listeners.is_empty()).then(|| {
            let registration = registration::RegistrationConfig {
                node_id: config.node_id,
                incarnation_id: incarnation_id(config.node_id),
                listeners: config.registration_listeners.clone(),
                features: config.supported_features.clone(),
                controller_listener_name: config.controller_listener_name.clone(),
                voters: config.quorum.voters.clone(),
                client_security: config.client_security.clone(),
            };
            tokio::spawn(registration::run(
                registration,
                status.clone(),
                requests_tx.clone(),
            ))
        });
        let apis = ControllerApis::new(
            config.cluster_id.clone(),
            router,
            requests_tx,
            apis::ControllerListing {
                voters: config.quorum.voters.clone(),
                listener_name: config.controller_listener_name.clone(),
                supported_features: config.supported_features.clone(),
                node_id: config.node_id,
                static_configs: config.static_configs.clone(),
                delegation_tokens: config.managers.delegation_tokens.clone(),
            },
            handle.metrics(),
            status.clone(),
            apis::Admission {
                auth,
                mutation_quotas: mutation_quotas.clone(),
                delete_topic_enable: config.delete_topic_enable,
            },
        );
        let table = Arc::new(apis.api_versions());
        let mut server_config = config.server.clone();
        server_config
            .security
            .set_scram_credentials(Arc::new(published.sasl_credentials()));
        let server = tokio::spawn(serve(listener, table, server_config, Arc::new(apis)));
        Ok(ControllerNode {
            raft: Some(driver),
            handle,
            server: Some(server),
            event_loop: Some(event_loop),
            registration,
            status,
            published,
            broker_events,
            mutation_quotas,
            metrics,
        })
    }

    pub fn raft(&self) -> &RaftHandle {
        &self.handle
    }

    /// What the event loop last published: leader, committed offset, image.
    pub fn status(&self) -> watch::Receiver<ControllerStatus> {
        self.status.clone()
    }

    /// Every Raft event since start, for the broker of a combined node (once; `None` unless
    /// [`ControllerNodeConfig::colocated_broker`]).
    pub fn take_broker_events(&mut self) -> Option<broadcast::Receiver<RaftEvent>> {
        self.broker_events.take()
    }

    /// Dynamic configs, SCRAM credentials and ACLs as committed, applied without a restart.
    pub fn published(&self) -> &NodePublishers {
        &self.published
    }

    /// The controller mutation quotas (KIP-599) and their metrics.
    pub fn mutation_quotas(&self) -> &ControllerMutationQuotaManager {
        &self.mutation_quotas
    }

    /// Kafka's controller metrics (`kafka.controller:type=KafkaController` and friends).
    pub fn metrics(&self) -> &ControllerMetrics {
        &self.metrics
    }

    /// The committed image as the event loop last published it.
    pub fn committed_image(&self) -> MetadataImage {
        self.status.borrow().image.clone()
    }

    /// Graceful shutdown (SIGTERM): stop taking requests, resign leadership through Raft
    /// (EndQuorumEpoch to the voters), then stop.
    pub async fn shutdown(mut self) -> Result<(), ControllerNodeError> {
        self.stop_tasks().await;
        if let Some(raft) = self.raft.take() {
            raft.shutdown().await?;
        }
        Ok(())
    }

    /// Stops at once, as a crash would.
    pub async fn kill(mut self) {
        self.stop_tasks().await;
        if let Some(raft) = self.raft.take() {
            raft.kill().await;
        }
    }

    async fn stop_tasks(&mut self) {
        for task in [
            self.registration.take(),
            self.server.take(),
            self.event_loop.take(),
        ]
        .into_iter()
        .flatten()
        {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for ControllerNode {
    fn drop(&mut self) {
        for task in [
            self.registration.take(),
            self.server.take(),
            self.event_loop.take(),
        ]
        .into_iter()
        .flatten()
        {
            task.abort();
        }
    }
}

/// A fresh incarnation id for the controller registration: unique per start.
fn incarnation_id(node_id: i32) -> kraftd_protocol::Uuid {
    let nanos = kraftd_log::clock::unix_nanos();
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&nanos.to_be_bytes());
    bytes[8..12].copy_from_slice(&node_id.to_be_bytes());
    bytes[12..].copy_from_slice(&std::process::id().to_be_bytes());
    kraftd_protocol::Uuid(bytes)
}

/// A per-incarnation seed for the election timer, so two restarts do not draw the same
/// timeouts.
fn rand_seed(node_id: i32) -> u64 {
    let nanos = kraftd_log::clock::unix_nanos();
    nanos ^ (u64::from(node_id.unsigned_abs()) << 32) ^ u64::from(std::process::id())
}
