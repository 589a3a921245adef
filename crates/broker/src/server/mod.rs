//! The broker at the tokio edge (Kafka's `BrokerServer`): it follows the metadata log as a
//! Raft observer (or shares a combined node's voter), applies it through the
//! [`MetadataLoader`](crate::metadata), registers and heartbeats
//! ([`lifecycle::BrokerLifecycleManager`]), forwards mutations to the active controller
//! ([`forwarding::ForwardingManager`]) and serves clients on its listeners
//! ([`BrokerListener`], `listeners.rs`; [`apis::KafkaApis`]). Shutdown is controlled
//! (leaderships move first) and ends with the clean-shutdown markers, whose epoch the next
//! registration reports (KIP-966).

pub mod alter_partition_manager;
pub mod api_keys;
pub mod apis;
pub mod apis_context;
pub mod assignments_manager;
pub mod auth_helper;
pub mod broker_channels;
mod config_admin;
pub mod controller_channel;
pub mod data_plane;
mod features;
pub mod forwarding;
pub mod group_apis;
pub mod group_auth;
pub mod internal_topics;
pub mod lifecycle;
mod listeners;
pub mod log_dir_apis;
mod metadata_task;
pub mod node_endpoints;
pub mod producer_id_manager;
pub mod quota;
pub mod share_fetch_apis;
pub mod share_group_apis;
mod share_group_offsets;
pub mod share_state_apis;
pub mod streams_group_apis;
pub mod telemetry_apis;
pub mod token_apis;
pub mod txn_apis;
pub mod txn_auth;
pub mod txn_marker_channel;
pub mod txn_markers;
pub mod txn_verification;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kraftd_controller::control::config_defs::any_broker_config_def;
use kraftd_controller::publisher::{AuthorizerConfig, MetadataPublisher, NodePublishers};
use kraftd_net::ServerConfig;
use kraftd_protocol::messages::broker_registration_request::Listener;
use kraftd_protocol::Uuid;
use kraftd_raft::driver::{
    DriverConfig, DriverError, QuorumConfig, RaftDriver, RaftEvent, RaftHandle, RaftMetrics,
};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tracing::{info, warn};

use self::alter_partition_manager::DefaultAlterPartitionManager;
use self::apis_context::BrokerApisContext;
use self::assignments_manager::AssignmentsManager;
use self::broker_channels::BrokerChannels;
use self::controller_channel::ControllerChannel;
use self::data_plane::DataPlane;
pub use self::features::{
    supported_features, unsupported_finalized_feature, KRAFT_VERSION_SUPPORTED,
};
use self::forwarding::ForwardingManager;
use self::internal_topics::InternalTopics;
use self::lifecycle::{
    BrokerDirectoryEvents, BrokerLifecycleManager, CordonedDirsSource, LifecycleConfig,
    LifecycleState,
};
pub use self::listeners::BrokerListener;
use self::listeners::{serve_when_ready, ReadyGate};
pub use self::metadata_task::MetadataStatus;
use self::producer_id_manager::ProducerIdManager;
use self::quota::QuotaManagers;
use crate::coordinator::{
    GroupCoordinatorService, ShareCoordinatorService, TransactionCoordinatorService,
};
use crate::metadata::{BrokerMetadataMetrics, MetadataCache, MetadataLoader};
use crate::replica::cordoned_log_dirs::{
    parse_cordoned_log_dirs, CordonedLogDirs, CORDONED_LOG_DIRS_CONFIG,
};
use crate::replica::directory_events::DirectoryEventHandler;
use crate::replica::fetch_session::FetchManager;
use crate::replica::log_cleaner::{
    LogCleaner, LogCleanerConfig, LogCleanerMetrics, LogCleanerReconfigurer,
};
use crate::replica::replica_manager::{
    ReplicaManager, ReplicaManagerConfig, ReplicaManagerPublisher,
};
use crate::share::{DefaultStatePersister, Persister};
use kraftd_controller::quota::QuotaWindow;
use kraftd_coordinator::group::GroupCoordinatorConfig;
use kraftd_coordinator::share::ShareCoordinatorConfig;
use kraftd_coordinator::transaction::TransactionCoordinatorConfig;
use txn_marker_channel::TransactionMarkerChannelManager;

/// How long the share persister waits for another broker's share coordinator (Kafka's
/// `request.timeout.ms` default, which its persister's network client uses).
const SHARE_PERSISTER_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a controlled shutdown waits for the controller to move leaderships away.
pub const CONTROLLED_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// How long Kafka's broker lets its forwarding and directory-assignment channels retry a
/// request (`BrokerServer`'s `retryTimeoutMs` for those `NodeToControllerChannelManager`s;
/// the producer-id blocks go over the forwarding one).
pub const FORWARDING_RETRY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long one attempt of a forwarded request waits for the controller's answer before the
/// forwarding channel sends it again (to whoever leads then): Kafka's
/// `min(controller.socket.timeout.ms, retryTimeoutMs)`, 30 s by default (the AlterPartition
/// channel's retry timeout is unbounded: `controller.socket.timeout.ms` alone; the
/// heartbeats' a heartbeat interval). Not the Raft
/// request timeout (2 s): a forwarded admin request is not idempotent (CreateAcls creates an
/// ACL with a new id each time), and a controller cut off or paused may still read the
/// first copy from its socket later (TCP retransmits it once the path heals) and apply it
/// if it leads again by then — a second creation after the client saw the first succeed and
/// deleted it (`cargo xtask chaos --seed 12 --txn --zombie --meta`, docs/chaos.md). Waiting
/// as long as Kafka does leaves such a request to the client's own timeout: an error of
/// unknown outcome, not a success followed by a ghost.
pub fn forwarding_request_timeout(controller_socket_timeout: Duration) -> Duration {
    controller_socket_timeout.min(FORWARDING_RETRY_TIMEOUT)
}

/// Everything a broker needs; built by the CLI from Kafka's property names.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// `node.id`.
    pub node_id: i32,
    pub cluster_id: String,
    /// Where the controllers listen (`controller.quorum.voters`), whom this observer asks
    /// who leads when it knows no leader or cannot reach it
    /// (`controller.quorum.bootstrap.servers`), `controller.quorum.*`, and this broker's
    /// copy of `__cluster_metadata` (used in observer mode only).
    pub quorum: QuorumConfig,
    /// `log.dirs` with their `directory.id`s (clean-shutdown markers live there): those
    /// online at start, the ones the broker registers with.
    pub log_dirs: Vec<(PathBuf, Uuid)>,
    /// The rest of `log.dirs`, offline from the start, with why: their `meta.properties`
    /// could not be read (Kafka's `errorLogDirs`). Their replicas are not served.
    pub offline_log_dirs: Vec<(PathBuf, String)>,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// `broker.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// `controller.socket.timeout.ms`: how long one request to the controller may wait for
    /// its answer (forwarded requests, AlterPartition, directory assignments, producer id
    /// blocks; the heartbeat channel waits at most a heartbeat interval), as Kafka's
    /// `NodeToControllerChannelManager`s do.
    pub controller_socket_timeout: Duration,
    /// The listeners' limits (`socket.request.max.bytes`, ...).
    pub server: ServerConfig,
    /// The properties file as written, for DescribeConfigs' static values.
    pub static_configs: BTreeMap<String, String>,
    /// `auto.create.topics.enable` (Kafka's default: true).
    pub auto_create_topics_enable: bool,
    /// `authorizer.class.name`, `super.users` and `allow.everyone.if.no.acl.found`.
    pub authorizer: AuthorizerConfig,
    /// `delegation.token.*`: token logins and DescribeDelegationToken (the controller
    /// issues tokens with its own copy).
    pub delegation_tokens: kraftd_controller::control::DelegationTokenConfig,
    /// `replica.lag.time.max.ms`.
    pub replica_lag_time_max_ms: i64,
    /// `max.incremental.fetch.session.cache.slots`.
    pub max_incremental_fetch_session_cache_slots: usize,
    /// `inter.broker.listener.name`: the listener followers fetch from (default: a
    /// broker's first listener).
    pub inter_broker_listener_name: Option<String>,
    /// How this broker's clients reach other brokers' inter-broker listener.
    pub inter_broker_security: kraftd_net::ClientSecurity,
    /// How this broker's clients (Raft observer, controller channels) reach the controllers.
    pub controller_security: kraftd_net::ClientSecurity,
    /// `log.cleaner.enable` and `log.cleaner.*`.
    pub log_cleaner: LogCleanerConfig,
    /// `group.*` and `offsets.*`.
    pub group_coordinator: GroupCoordinatorConfig,
    /// `group.share.*`: the share-partition leaders' settings.
    pub share_group: crate::share::share_group_config::ShareGroupConfig,
    /// `transaction.*` and `transactional.id.*`.
    pub transaction_coordinator: TransactionCoordinatorConfig,
    /// `share.coordinator.*`.
    pub share_coordinator: ShareCoordinatorConfig,
    /// What takes this broker's own dynamic configs live beyond the values it reads (its
    /// listeners' TLS stores), validated before a change is forwarded and reconfigured as
    /// the change is replayed (Kafka's `DynamicBrokerConfig.addReconfigurable`).
    pub reconfigurables: Vec<Arc<dyn kraftd_controller::publisher::Reconfigurable>>,
}

/// Where the broker's metadata comes from.
#[derive(Debug)]
pub enum RaftSource {
    /// A broker-only process: its own Raft client, an observer of the quorum.
    Observer,
    /// A combined process: the controller's voter, shared; its events from the start.
    Shared {
        handle: RaftHandle,
        events: broadcast::Receiver<RaftEvent>,
    },
}

/// Why a broker could not start.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error(transparent)]
    Raft(#[from] DriverError),
    #[error("log directory {dir}: {reason}")]
    LogDir { dir: String, reason: String },
    #[error("{0}")]
    Config(String),
}

/// A running broker.
#[derive(Debug)]
pub struct BrokerServer {
    config: BrokerConfig,
    replica_manager: Arc<ReplicaManager>,
    /// The replica manager's periodic work and the broker-epoch relay.
    background: Vec<JoinHandle<()>>,
    /// Compaction of `cleanup.policy=compact` logs (its own threads).
    log_cleaner: Arc<std::sync::Mutex<Option<LogCleaner>>>,
    log_cleaner_metrics: Arc<LogCleanerMetrics>,
    group_coordinator: Arc<GroupCoordinatorService>,
    txn_coordinator: Arc<TransactionCoordinatorService>,
    share_coordinator: Arc<ShareCoordinatorService>,
    share_persister: DefaultStatePersister,
    own_raft: Option<RaftDriver>,
    lifecycle: Option<BrokerLifecycleManager>,
    /// The client listeners: one task that accepts on them once the broker is ready.
    servers: Vec<JoinHandle<()>>,
    /// True once the client listeners accept connections.
    serving: watch::Receiver<bool>,
    metadata: JoinHandle<()>,
    cache: MetadataCache,
    metadata_status: watch::Receiver<MetadataStatus>,
    metadata_metrics: BrokerMetadataMetrics,
    published: NodePublishers,
    /// Client quotas (their metrics).
    quotas: Arc<QuotaManagers>,
    /// Client telemetry (KIP-714): subscriptions served and the metrics clients push.
    client_metrics: Arc<crate::client_metrics::ClientMetricsManager>,
    /// The share-partition leaders (their metrics).
    share_partition_manager: Option<Arc<crate::share::SharePartitionManager>>,
    raft_metrics: watch::Receiver<RaftMetrics>,
    /// Why the broker's metadata stopped following the log, once it has: the process
    /// must stop too.
    stopped: watch::Receiver<Option<String>>,
}

impl BrokerServer {
    /// Starts following the metadata, registering, and serving `listeners` (already bound).
    pub async fn start(
        config: BrokerConfig,
        raft: RaftSource,
        listeners: Vec<BrokerListener>,
    ) -> Result<BrokerServer, BrokerError> {
        let quota_window = QuotaWindow::from_properties(&config.static_configs, "")
            .map_err(BrokerError::Config)?;
        let replication_quota_window =
            QuotaWindow::from_properties(&config.static_configs, "replication.")
                .map_err(BrokerError::Config)?;
        let alter_log_dirs_quota_window =
            QuotaWindow::from_properties(&config.static_configs, "alter.log.dirs.replication.")
                .map_err(BrokerError::Config)?;
        let previous_broker_epoch = take_clean_shutdown_epoch(&config)?;
        let (own_raft, handle, events) = match raft {
            RaftSource::Shared { handle, events } => (None, handle, events),
            RaftSource::Observer => {
                let mut driver_config = DriverConfig::new(config.node_id, config.quorum.clone());
                driver_config.client_security = config.controller_security.clone();
                let (mut driver, _router) = RaftDriver::start_detached(driver_config)?;
                let handle = driver.handle();
                let events = driver.take_events();
                (Some(driver), handle, events)
            }
        };
        let cache = MetadataCache::new(config.node_id, config.cluster_id.clone());
        let published = NodePublishers::new(config.node_id, config.authorizer.clone())
            .with_delegation_tokens(config.delegation_tokens.clone())
            .with_connection_quotas(Arc::clone(&config.server.connection_quotas));
        for r in &config.reconfigurables {
            published.dynamic_configs.add_reconfigurable(Arc::clone(r));
        }
        // SASL/SCRAM logins on the client listeners check this node's live credentials.
        let mut listeners = listeners;
        for l in &mut listeners {
            l.security
                .set_scram_credentials(Arc::new(published.sasl_credentials()));
        }
        // Each channel's attempt waits as Kafka's does before the request is sent again
        // ([`forwarding_request_timeout`] says why not the Raft client's 2 s).
        let channel_with = |name: &str, request_timeout: Duration| {
            ControllerChannel::new(
                format!("broker-{}-{name}-channel", config.node_id),
                config.quorum.voters.clone(),
                handle.metrics(),
                request_timeout,
                config.controller_security.clone(),
            )
        };
        let forwarding_timeout = forwarding_request_timeout(config.controller_socket_timeout);
        let channel = |name: &str| channel_with(name, forwarding_timeout);
        // The broker epoch, as registration sets it, for the data plane's requests.
        let (epoch_tx, epoch_rx) = watch::channel(-1i64);
        let broker_epoch = Arc::new(AtomicI64::new(-1));
        let alter_partition = DefaultAlterPartitionManager::start(
            config.node_id,
            epoch_rx.clone(),
            channel_with("alter-partition", config.controller_socket_timeout),
        );
        let assignments = AssignmentsManager::start(
            config.node_id,
            epoch_rx.clone(),
            channel("directory-assignments"),
            cache.clone(),
        );
        let producer_ids = ProducerIdManager::new(config.node_id, epoch_rx, channel("producer-id"));
        let mut replica_config = ReplicaManagerConfig::new(
            config.node_id,
            config
                .log_dirs
                .iter()
                .map(|(d, _)| d.clone())
                .chain(config.offline_log_dirs.iter().map(|(d, _)| d.clone()))
                .collect(),
        );
        replica_config.directory_ids = config.log_dirs.iter().cloned().collect();
        replica_config.offline_log_dirs = config.offline_log_dirs.clone();
        // The log dir holding the metadata log (`metadata.log.dir`), not the metadata
        // log's own `__cluster_metadata-0` directory the quorum names: the failure channel
        // reports log dirs.
        replica_config.metadata_log_dir = config
            .quorum
            .metadata_log_dir
            .parent()
            .map(Path::to_path_buf);
        replica_config.static_configs = config.static_configs.clone();
        replica_config.clean_shutdown = previous_broker_epoch >= 0;
        // A setting of the properties file checked by Kafka's definition (type, validator and
        // message), or its default.
        let defined = |key: &str, default: i64| -> Result<i64, BrokerError> {
            let Some(value) = config.static_configs.get(key) else {
                return Ok(default);
            };
            let def = any_broker_config_def(key)
                .ok_or_else(|| BrokerError::Config(format!("{key} has no definition")))?;
            def.validate(value)
                .map_err(|e| BrokerError::Config(format!("{e} (in the properties file)")))?;
            value
                .trim()
                .parse::<i64>()
                .map_err(|_| BrokerError::Config(format!("{key}={value}: expected a number")))
        };
        let period = |key: &str, default: i64| defined(key, default).map(scheduler_period);
        replica_config.recovery_threads_per_data_dir = defined(
            "num.recovery.threads.per.data.dir",
            replica_config.recovery_threads_per_data_dir as i64,
        )? as usize;
        replica_config.recovery_point_checkpoint_interval = period(
            "log.flush.offset.checkpoint.interval.ms",
            kraftd_log::checkpoint::DEFAULT_RECOVERY_POINT_CHECKPOINT_INTERVAL_MS as i64,
        )?;
        replica_config.log_start_checkpoint_interval = period(
            "log.flush.start.offset.checkpoint.interval.ms",
            kraftd_log::checkpoint::DEFAULT_LOG_START_CHECKPOINT_INTERVAL_MS as i64,
        )?;
        replica_config.hw_checkpoint_interval = period(
            "replica.high.watermark.checkpoint.interval.ms",
            replica_config.hw_checkpoint_interval.as_millis() as i64,
        )?;
        replica_config.retention_check_interval = period(
            "log.retention.check.interval.ms",
            replica_config.retention_check_interval.as_millis() as i64,
        )?;
        replica_config.flush_scheduler_interval =
            Some(period("log.flush.scheduler.interval.ms", i64::MAX)?);
        replica_config.producer_id_expiration_check_interval = period(
            "producer.id.expiration.check.interval.ms",
            replica_config
                .producer_id_expiration_check_interval
                .as_millis() as i64,
        )?;
        replica_config.producer_id_expiration_ms = defined(
            "producer.id.expiration.ms",
            replica_config.producer_id_expiration_ms,
        )?;
        let fetcher = &mut replica_config.fetcher;
        // Kafka's leader answers a negative wait or minimum as zero; the socket timeout is
        // at least a millisecond.
        fetcher.max_wait_ms =
            defined("replica.fetch.wait.max.ms", fetcher.max_wait_ms.into())?.max(0) as i32;
        fetcher.min_bytes =
            defined("replica.fetch.min.bytes", fetcher.min_bytes.into())?.max(0) as i32;
        fetcher.max_bytes =
            defined("replica.fetch.response.max.bytes", fetcher.max_bytes.into())? as i32;
        fetcher.partition_max_bytes = defined(
            "replica.fetch.max.bytes",
            fetcher.partition_max_bytes.into(),
        )? as i32;
        fetcher.backoff = Duration::from_millis(defined(
            "replica.fetch.backoff.ms",
            fetcher.backoff.as_millis() as i64,
        )? as u64);
        fetcher.request_timeout = Duration::from_millis(
            defined(
                "replica.socket.timeout.ms",
                fetcher.request_timeout.as_millis() as i64,
            )?
            .max(1) as u64,
        );
        replica_config.replica_lag_time_max_ms = config.replica_lag_time_max_ms;
        replica_config.replication_quota_window = replication_quota_window;
        replica_config.alter_log_dirs_quota_window = alter_log_dirs_quota_window;
        replica_config.dynamic_configs = published.dynamic_configs.clone();
        replica_config.fetcher.listener_name = config
            .inter_broker_listener_name
            .clone()
            .or_else(|| listeners.first().map(|l| l.name.clone()));
        replica_config.fetcher.security = config.inter_broker_security.clone();
        let replica_config_listener = replica_config.fetcher.listener_name.clone();
        let replica_manager = ReplicaManager::new(
            replica_config,
            cache.clone(),
            alter_partition,
            Arc::clone(&broker_epoch),
        )
        .map_err(|e| BrokerError::LogDir {
            dir: format!(
                "{:?}",
                config.log_dirs.iter().map(|(d, _)| d).collect::<Vec<_>>()
            ),
            reason: e.to_string(),
        })?;
        // cordoned.log.dirs (KIP-1066): the properties file's value is checked as Kafka's
        // KafkaConfig does at start, then kept live with this broker's dynamic value.
        let log_dir_paths: Vec<PathBuf> = config.log_dirs.iter().map(|(d, _)| d.clone()).collect();
        if let Some(value) = config.static_configs.get(CORDONED_LOG_DIRS_CONFIG) {
            parse_cordoned_log_dirs(value, &log_dir_paths).map_err(BrokerError::Config)?;
        }
        let (cordoned_log_dirs, cordoned_ids) = CordonedLogDirs::new(
            Arc::clone(&replica_manager),
            config.log_dirs.clone(),
            config.static_configs.clone(),
        );
        published
            .dynamic_configs
            .add_reconfigurable(cordoned_log_dirs);
        // Replicas' real directories go to the controller (KIP-858), and so do failed
        // directories, in the heartbeats.
        let (offline_dirs_tx, offline_dirs_rx) = tokio::sync::mpsc::unbounded_channel();
        let _ = replica_manager.set_directory_event_handler(Arc::new(BrokerDirectoryEvents {
            assignments,
            offline: offline_dirs_tx,
        })
            as Arc<dyn DirectoryEventHandler>);
        // Why the broker must stop: its metadata stopped following the log, or a log dir
        // failure it cannot serve past.
        let (stopped_tx, stopped) = watch::channel(None);
        replica_manager.set_stop_signal(stopped_tx.clone());
        let log_dir_failure_timeout = Duration::from_millis(defined(
            "log.dir.failure.timeout.ms",
            lifecycle::LOG_DIR_FAILURE_TIMEOUT_MS_DEFAULT as i64,
        )? as u64);
        let replica_background = replica_manager.start_background();
        let log_cleaner = LogCleaner::start(&replica_manager, &config.log_cleaner);
        let log_cleaner_metrics = Arc::clone(log_cleaner.metrics());
        // Kafka's LogCleaner is a Reconfigurable: log.cleaner.threads and the sizes change live.
        let (cleaner_reconfigurer, log_cleaner) = LogCleanerReconfigurer::new(log_cleaner);
        published
            .dynamic_configs
            .add_reconfigurable(cleaner_reconfigurer);
        // The replica layer applies each delta before the cache publishes it: a partition
        // is ready to lead (its log open, its state set) before a Metadata answer from this
        // broker names it leader, so a client producing at once is not told
        // NOT_LEADER_OR_FOLLOWER.
        let (share_coordinator, share_publisher) = ShareCoordinatorService::start_with_pruning(
            config.share_coordinator.clone(),
            config.node_id,
            Arc::clone(&replica_manager),
            cache.clone(),
        );
        let share_persister = DefaultStatePersister::new(
            config.node_id,
            cache.clone(),
            Arc::clone(&share_coordinator),
            BrokerChannels::new(
                format!("broker-{}-share-persister", config.node_id),
                replica_config_listener.clone(),
                config.inter_broker_security.clone(),
                SHARE_PERSISTER_REQUEST_TIMEOUT,
            ),
        );
        // The group coordinator initializes and deletes share groups' state through the
        // share coordinator's persister.
        let (group_coordinator, group_publisher) = GroupCoordinatorService::start_with_persister(
            config.group_coordinator.clone(),
            config.node_id,
            Arc::clone(&replica_manager),
            cache.clone(),
            Some(Arc::new(share_persister.clone()) as Arc<dyn Persister>),
        );
        let markers = TransactionMarkerChannelManager::new(
            config.node_id,
            cache.clone(),
            replica_config_listener.clone(),
            config.inter_broker_security.clone(),
        );
        let (txn_coordinator, txn_publisher) = TransactionCoordinatorService::start_with_markers(
            config.transaction_coordinator.clone(),
            config.node_id,
            Arc::clone(&replica_manager),
            cache.clone(),
            Arc::new(markers),
        );
        // The coordinators learn of their partitions after the replica layer made them
        // leaders, so a shard loads from a log that is ready to append to.
        let mut publishers: Vec<Box<dyn MetadataPublisher + Send>> = vec![
            Box::new(ReplicaManagerPublisher(Arc::clone(&replica_manager))),
            Box::new(group_publisher),
            Box::new(txn_publisher),
            Box::new(share_publisher),
            Box::new(cache.clone()),
        ];
        publishers.extend(published.publishers());
        let loader = MetadataLoader::new(config.node_id, publishers);
        let metadata_metrics = loader.metrics().clone();
        let (status_tx, metadata_status) = watch::channel(MetadataStatus::default());
        let metadata = tokio::spawn(metadata_task::run(
            events,
            handle.metrics(),
            loader,
            status_tx,
            handle.clone(),
            stopped_tx.clone(),
        ));
        let lifecycle_channel = channel_with(
            "heartbeat",
            config
                .controller_socket_timeout
                .min(config.heartbeat_interval),
        );
        let forwarding_channel = channel("forwarding");
        let advertised: Vec<Listener> =
            listeners.iter().map(BrokerListener::registration).collect();
        let lifecycle = BrokerLifecycleManager::start(
            LifecycleConfig {
                broker_id: config.node_id,
                cluster_id: config.cluster_id.clone(),
                incarnation_id: random_uuid(),
                listeners: advertised,
                features: supported_features(),
                rack: config.rack.clone(),
                log_dirs: config.log_dirs.iter().map(|(_, id)| *id).collect(),
                previous_broker_epoch,
                heartbeat_interval: config.heartbeat_interval,
                log_dir_failure_timeout,
            },
            lifecycle_channel,
            metadata_status.clone(),
            offline_dirs_rx,
            stopped_tx.clone(),
            CordonedDirsSource {
                ids: cordoned_ids,
                cache: cache.clone(),
            },
        );
        let epoch_relay = {
            let mut state = lifecycle.state();
            let broker_epoch = Arc::clone(&broker_epoch);
            tokio::spawn(async move {
                loop {
                    let epoch = state.borrow_and_update().broker_epoch;
                    broker_epoch.store(epoch, Ordering::Relaxed);
                    epoch_tx.send_if_modified(|e| std::mem::replace(e, epoch) != epoch);
                    if state.changed().await.is_err() {
                        return;
                    }
                }
            })
        };
        let quotas = Arc::new(QuotaManagers::new(
            published.client_quotas.clone(),
            quota_window,
        ));
        // The share-partition leaders, reaching the share coordinator through the persister.
        let share_partition_manager = Some(crate::share::SharePartitionManager::start(
            Arc::clone(&replica_manager),
            Arc::new(share_persister.clone()) as Arc<dyn Persister>,
            Some(cache.clone()),
            config.share_group,
        ));
        // The share groups' dead-letter queue writer (KIP-1191), a client of the DLQ topics'
        // leaders over the inter-broker listener (Kafka's DefaultShareGroupDLQManager).
        if let Some(manager) = &share_partition_manager {
            manager.set_dlq_manager(Arc::new(crate::share::dlq::ShareGroupDlqManager::new(
                config.node_id,
                Arc::clone(&replica_manager),
                cache.clone(),
                config.static_configs.clone(),
                Arc::clone(manager.metrics()),
                Arc::new(BrokerChannels::new(
                    format!("broker-{}-share-dlq", config.node_id),
                    replica_config_listener.clone(),
                    config.inter_broker_security.clone(),
                    SHARE_PERSISTER_REQUEST_TIMEOUT,
                )),
            )));
        }
        let client_metrics = Arc::new(crate::client_metrics::ClientMetricsManager::new(
            config
                .static_configs
                .get("telemetry.max.bytes")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(crate::client_metrics::TELEMETRY_MAX_BYTES_DEFAULT),
        ));
        let context = Arc::new(BrokerApisContext {
            node_id: config.node_id,
            cluster_id: config.cluster_id.clone(),
            cache: cache.clone(),
            forwarding: ForwardingManager::new(forwarding_channel, metadata_status.clone()),
            static_configs: config.static_configs.clone(),
            auto_create_topics_enable: config.auto_create_topics_enable,
            delegation_tokens: config.delegation_tokens.clone(),
            data: DataPlane {
                replica_manager: Arc::clone(&replica_manager),
                fetch_manager: FetchManager::new(config.max_incremental_fetch_session_cache_slots),
                producer_ids,
            },
            group_coordinator: Arc::clone(&group_coordinator),
            txn_coordinator: Arc::clone(&txn_coordinator),
            share_coordinator: Arc::clone(&share_coordinator),
            share_persister: Arc::new(share_persister.clone()) as Arc<dyn Persister>,
            leader_channels: Arc::new(BrokerChannels::new(
                format!("broker-{}-leader-channels", config.node_id),
                replica_config_listener.clone(),
                config.inter_broker_security.clone(),
                SHARE_PERSISTER_REQUEST_TIMEOUT,
            )),
            txn_verifier: txn_verification::TxnVerifier::new(
                config.node_id,
                Arc::clone(&replica_manager),
                replica_config_listener.clone(),
                config.inter_broker_security.clone(),
            ),
            internal_topics: Default::default(),
            metadata_metrics: metadata_metrics.clone(),
            auth: kraftd_controller::auth::AuthHelper::new(&published.authorizer),
            quotas: Arc::clone(&quotas),
            share_partition_manager: share_partition_manager.clone(),
            dynamic_configs: published.dynamic_configs.clone(),
            client_metrics: Arc::clone(&client_metrics),
        });
        // The persister creates a missing __share_group_state as FindCoordinator does; a
        // weak handle, since the context holds the persister.
        let weak_context = Arc::downgrade(&context);
        share_persister.set_create_state_topic(Box::new(move |image| {
            if let Some(context) = weak_context.upgrade() {
                InternalTopics::create_share_state_topic(&context, image);
            }
        }));
        let (serving_tx, serving) = watch::channel(false);
        let listeners_task = tokio::spawn(serve_when_ready(
            ReadyGate {
                node_id: config.node_id,
                lifecycle: lifecycle.state(),
                metadata: metadata_status.clone(),
                cache: cache.clone(),
            },
            listeners,
            context,
            config.server.clone(),
            serving_tx,
            stopped_tx,
        ));
        Ok(BrokerServer {
            replica_manager,
            background: vec![replica_background, epoch_relay],
            log_cleaner,
            log_cleaner_metrics,
            group_coordinator,
            txn_coordinator,
            share_coordinator,
            share_persister,
            stopped,
            raft_metrics: handle.metrics(),
            config,
            own_raft,
            lifecycle: Some(lifecycle),
            servers: vec![listeners_task],
            serving,
            metadata,
            cache,
            metadata_status,
            metadata_metrics,
            published,
            quotas,
            client_metrics,
            share_partition_manager,
        })
    }

    /// The node's authorizer, kept current by its ACL publisher (the console checks its
    /// signed-in users with it).
    pub fn auth_helper(&self) -> kraftd_controller::auth::AuthHelper {
        kraftd_controller::auth::AuthHelper::new(&self.published.authorizer)
    }

    /// The share-partition leaders (their metrics for `/metrics`).
    pub fn share_partition_manager(&self) -> Option<&Arc<crate::share::SharePartitionManager>> {
        self.share_partition_manager.as_ref()
    }

    /// Client telemetry (KIP-714): its `/metrics` lines.
    pub fn client_metrics(&self) -> &Arc<crate::client_metrics::ClientMetricsManager> {
        &self.client_metrics
    }

    /// The log cleaner's gauges.
    pub fn log_cleaner_metrics(&self) -> Option<Arc<LogCleanerMetrics>> {
        Some(Arc::clone(&self.log_cleaner_metrics))
    }

    /// Groups and their offsets.
    pub fn group_coordinator(&self) -> &Arc<GroupCoordinatorService> {
        &self.group_coordinator
    }

    /// Transactions.
    pub fn txn_coordinator(&self) -> &Arc<TransactionCoordinatorService> {
        &self.txn_coordinator
    }

    /// Share partitions' state led here.
    pub fn share_coordinator(&self) -> &Arc<ShareCoordinatorService> {
        &self.share_coordinator
    }

    /// How this broker reaches the share coordinator of any share partition.
    pub fn share_persister(&self) -> &DefaultStatePersister {
        &self.share_persister
    }

    /// The hosted partitions.
    pub fn replica_manager(&self) -> &Arc<ReplicaManager> {
        &self.replica_manager
    }

    /// The metadata the broker serves from (published once caught up).
    pub fn cache(&self) -> &MetadataCache {
        &self.cache
    }

    /// broker-metadata-metrics.
    pub fn metadata_metrics(&self) -> &BrokerMetadataMetrics {
        &self.metadata_metrics
    }

    /// The client quota managers (their sensors and metrics).
    pub fn quotas(&self) -> &Arc<QuotaManagers> {
        &self.quotas
    }

    /// Dynamic configs, SCRAM credentials and ACLs as committed, applied without a restart.
    pub fn published(&self) -> &NodePublishers {
        &self.published
    }

    /// Set once the broker can no longer follow the metadata log (its Raft driver stopped
    /// on a disk error, say), with the reason.
    pub fn stopped(&self) -> watch::Receiver<Option<String>> {
        self.stopped.clone()
    }

    /// True once the client listeners accept connections: the broker has caught up with the
    /// metadata log and is unfenced (as Kafka enables request processing only then).
    pub fn serving(&self) -> watch::Receiver<bool> {
        self.serving.clone()
    }

    /// The Raft client's metrics (the observer's own, or the shared voter's).
    pub fn raft_metrics(&self) -> watch::Receiver<RaftMetrics> {
        self.raft_metrics.clone()
    }

    pub fn metadata_status(&self) -> watch::Receiver<MetadataStatus> {
        self.metadata_status.clone()
    }

    /// Registration and fencing as the controller last answered.
    pub fn lifecycle_state(&self) -> Option<watch::Receiver<LifecycleState>> {
        self.lifecycle.as_ref().map(BrokerLifecycleManager::state)
    }

    /// SIGTERM: controlled shutdown (the controller moves leaderships away), listeners
    /// closed, the broker's own Raft client stopped, then the clean-shutdown markers written
    /// with the broker epoch, last, as Kafka does.
    pub async fn shutdown(mut self) {
        let state = match self.lifecycle.take() {
            Some(lifecycle) => {
                lifecycle
                    .controlled_shutdown(CONTROLLED_SHUTDOWN_TIMEOUT)
                    .await
            }
            None => LifecycleState::default(),
        };
        for server in self.servers.drain(..) {
            server.abort();
            let _ = server.await;
        }
        // No log may change after the flush and checkpoints below: the metadata task is
        // stopped, and awaited, first (a delta being applied stops at its next partition).
        self.replica_manager.stop_applying_metadata();
        self.metadata.abort();
        let _ = (&mut self.metadata).await;
        for task in self.background.drain(..) {
            task.abort();
        }
        let cleaner = self
            .log_cleaner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(cleaner) = cleaner {
            let _ = tokio::task::spawn_blocking(move || cleaner.shutdown()).await;
        }
        let replicas = Arc::clone(&self.replica_manager);
        let _ = tokio::task::spawn_blocking(move || replicas.shutdown()).await;
        if let Some(raft) = self.own_raft.take() {
            let _ = raft.shutdown().await;
        }
        if state.broker_epoch >= 0 {
            // Not in a failed dir (Kafka writes them in its live dirs only): its logs were
            // not flushed nor closed, so the next start must recover it.
            for (dir, _) in &self.config.log_dirs {
                if !self.replica_manager.log_manager().is_log_dir_online(dir) {
                    continue;
                }
                if let Err(e) = kraftd_log::write_clean_shutdown_marker(dir, state.broker_epoch) {
                    warn!(dir = %dir.display(), error = %e, "writing the clean-shutdown marker failed");
                }
            }
        }
        info!(
            node = self.config.node_id,
            epoch = state.broker_epoch,
            "broker stopped"
        );
    }

    /// Stops at once, as a crash would: no markers.
    pub async fn kill(mut self) {
        for server in self.servers.drain(..) {
            server.abort();
        }
        for task in self.background.drain(..) {
            task.abort();
        }
        self.replica_manager.fetchers().shutdown();
        self.metadata.abort();
        drop(self.lifecycle.take());
        if let Some(raft) = self.own_raft.take() {
            raft.kill().await;
        }
    }
}

impl Drop for BrokerServer {
    fn drop(&mut self) {
        for server in &self.servers {
            server.abort();
        }
        for task in &self.background {
            task.abort();
        }
        self.replica_manager.fetchers().shutdown();
        self.metadata.abort();
    }
}

/// The broker epoch the clean-shutdown markers of every log dir agree on, or -1 when any
/// is missing (an unclean shutdown, or the first start). The markers are removed: a crash
/// from here on is unclean.
fn take_clean_shutdown_epoch(config: &BrokerConfig) -> Result<i64, BrokerError> {
    let mut epoch: Option<i64> = None;
    let mut clean = true;
    for (dir, _) in &config.log_dirs {
        match kraftd_log::take_clean_shutdown_marker(dir) {
            Ok(Some(e)) => match epoch {
                Some(prev) if prev != e => clean = false,
                _ => epoch = Some(e),
            },
            Ok(None) => clean = false,
            Err(e) => {
                return Err(BrokerError::LogDir {
                    dir: dir.display().to_string(),
                    reason: e.to_string(),
                })
            }
        }
    }
    Ok(if clean { epoch.unwrap_or(-1) } else { -1 })
}

/// A fresh incarnation id: 16 random bytes from the OS (std's hasher keys are seeded from it).
pub(crate) fn random_uuid() -> Uuid {
    use std::hash::{BuildHasher, Hasher};
    let mut bytes = [0u8; 16];
    for chunk in bytes.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(kraftd_log::clock::unix_nanos());
        chunk.copy_from_slice(&h.finish().to_be_bytes());
    }
    Uuid(bytes)
}

/// The period of a broker task scheduled every `ms` milliseconds. As Kafka's
/// `KafkaScheduler`, a period of zero or less runs the task once (at start) and never again:
/// here a period so long the next run never comes.
fn scheduler_period(ms: i64) -> Duration {
    const NEVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    u64::try_from(ms)
        .ok()
        .filter(|ms| *ms > 0)
        .map_or(NEVER, |ms| Duration::from_millis(ms).min(NEVER))
}
