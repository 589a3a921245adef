//! `ReplicaManager`: the broker's hosted partitions and the waiting around them.
//!
//! It applies committed metadata (as a
//! [`MetadataPublisher`](kraftd_controller::publisher::MetadataPublisher) after the
//! cache): a partition this broker is assigned is opened (or created) through the
//! [`LogManager`] and made leader or follower at the metadata's leader epoch; followers are
//! handed to the [`ReplicaFetcherManager`]; partitions moved away or deleted are stopped
//! and their logs removed. Requests come from `KafkaApis`: produce appends through
//! [`Partition::append_as_leader`] and, for `acks=all`, waits (the produce purgatory) until
//! the HW covers the batch or the request's timeout; fetches read outside the partition's
//! lock and, with too little data, wait (the fetch purgatory) for an append or HW move.
//! Waiting is on each partition's [`ChangeNotify`](super::fetch_session::ChangeNotify), pulsed on every append, HW move and role
//! change. ISR changes the partitions ask for go to the controller through an
//! [`AlterPartitionManager`] (the replica layer's contract, which the server implements);
//! a periodic task shrinks lagging ISRs, applies retention and
//! checkpoints HWs. A replica whose log lives in another directory than the metadata
//! names (KIP-858) is reported to the [`DirectoryEventHandler`] the server sets.
//!
//! The rooms, one `impl ReplicaManager` each:
//! - `mod.rs`: the manager, its construction and the partition lookups the rooms share;
//! - `apply_delta.rs`: committed metadata — becoming leader or follower, stopping and
//!   deleting replicas, stray logs, topic configs; the [`ReplicaManagerPublisher`];
//! - `background.rs`: the periodic ISR shrink, HW checkpoint and retention, the ISR changes
//!   sent to the controller, and the clean shutdown;
//! - `produce.rs`: appends and the produce purgatory ([`PendingProduce`]);
//! - `fetch.rs`: reads and the fetch purgatory (a follower's throttled partitions answered
//!   empty while over the leader's replication quota, `replication_quota.rs`);
//! - `offsets.rs`: ListOffsets, OffsetForLeaderEpoch and DeleteRecords;
//! - `metrics.rs`: the counters and the Prometheus output;
//! - `log_dirs.rs`: DescribeLogDirs, AlterReplicaLogDirs and the copier moving a replica;
//! - `log_dir_failure.rs`: a log dir an I/O error took offline, its replicas no longer
//!   served (Kafka's `handleLogDirFailure`).

mod apply_delta;
mod background;
mod coordinator;
mod fetch;
mod log_dir_failure;
mod log_dirs;
mod log_metrics;
mod metrics;
mod offsets;
mod produce;
mod txn_markers;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::Duration;

use kraftd_controller::publisher::DynamicConfigs;
use kraftd_controller::quota::QuotaWindow;
use kraftd_controller::MetadataImage;
use kraftd_protocol::{ErrorCode, Uuid};
use tokio::time::Instant;

use super::alter_partition::AlterPartitionManager;
use super::directory_events::DirectoryEventHandler;
use super::fetcher::{FetcherConfig, ReplicaFetcherManager};
use super::log_manager::{LogManager, LogManagerOptions};
use super::partition::{HostedPartition, Partition};
use super::replication_quota::ReplicationQuotas;
use super::TopicIdPartition;
use crate::metadata::MetadataCache;

pub use self::apply_delta::{partition_state, ReplicaManagerPublisher};
pub use self::fetch::{FetchLimits, FetchOrigin, FetchResult};
pub(crate) use self::log_metrics::escape_label;
pub use self::metrics::ReplicaMetrics;
pub use self::produce::{PendingProduce, ProduceResult};
pub use self::txn_markers::TxnMarkerWrite;

/// Kafka's default `num.recovery.threads.per.data.dir`.
pub const DEFAULT_RECOVERY_THREADS_PER_DATA_DIR: usize = 2;

/// How the ReplicaManager runs; Kafka's names in the field docs.
#[derive(Debug, Clone)]
pub struct ReplicaManagerConfig {
    pub broker_id: i32,
    /// `log.dirs`.
    pub log_dirs: Vec<PathBuf>,
    /// The `directory.id` of each of `log_dirs` (their `meta.properties`): what the
    /// replicas' directories are reported as (KIP-858). Empty: nothing is reported.
    pub directory_ids: BTreeMap<PathBuf, Uuid>,
    /// Those of `log_dirs` offline from the start, with why (their `meta.properties`
    /// could not be read: Kafka's `errorLogDirs`); they have no directory id here.
    pub offline_log_dirs: Vec<(PathBuf, String)>,
    /// `metadata.log.dir` (else the first of `log.dirs`): the broker stops when this dir
    /// fails, as Kafka halts.
    pub metadata_log_dir: Option<PathBuf>,
    /// The properties file, for topic config defaults (`log.retention.ms`, ...).
    pub static_configs: BTreeMap<String, String>,
    /// `replica.lag.time.max.ms`.
    pub replica_lag_time_max_ms: i64,
    /// `replica.high.watermark.checkpoint.interval.ms`.
    pub hw_checkpoint_interval: Duration,
    /// `log.retention.check.interval.ms`.
    pub retention_check_interval: Duration,
    /// `log.flush.scheduler.interval.ms`: how often every log is flushed whose `flush.ms`
    /// has passed since its last flush (Kafka's `LogManager.flushDirtyLogs`), so an idle
    /// log is flushed by time too; `None` (Kafka's default, `Long.MAX_VALUE`): never.
    pub flush_scheduler_interval: Option<Duration>,
    /// `producer.id.expiration.check.interval.ms`: how often every hosted log forgets the
    /// producers idle longer than `producer.id.expiration.ms` (Kafka's
    /// `PeriodicProducerExpirationCheck`).
    pub producer_id_expiration_check_interval: Duration,
    /// `producer.id.expiration.ms` from the properties file; this broker's dynamic value
    /// (its own, else the cluster default) wins, read at every check.
    pub producer_id_expiration_ms: i64,
    /// `log.flush.offset.checkpoint.interval.ms`: how often each log dir's
    /// `recovery-point-offset-checkpoint` is rewritten (when one of its partitions changed).
    pub recovery_point_checkpoint_interval: Duration,
    /// `log.flush.start.offset.checkpoint.interval.ms`: the same for
    /// `log-start-offset-checkpoint`.
    pub log_start_checkpoint_interval: Duration,
    /// `num.recovery.threads.per.data.dir`: threads per log dir opening (and, at a restart,
    /// recovering) the logs of a metadata delta that brings many partitions at once.
    pub recovery_threads_per_data_dir: usize,
    /// Every log dir held the clean-shutdown marker at start: logs are opened trusting
    /// their segments.
    pub clean_shutdown: bool,
    /// The follower side.
    pub fetcher: FetcherConfig,
    /// `replication.quota.window.num` × `replication.quota.window.size.seconds`.
    pub replication_quota_window: QuotaWindow,
    /// `alter.log.dirs.replication.quota.window.num` × `...window.size.seconds`.
    pub alter_log_dirs_quota_window: QuotaWindow,
    /// The dynamic configs the replication throttles read (rates and throttled replicas);
    /// an unfed handle throttles nothing.
    pub dynamic_configs: DynamicConfigs,
}

/// Kafka's `producer.id.expiration.check.interval.ms` default (ten minutes).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS: u64 = 600_000;

impl ReplicaManagerConfig {
    pub fn new(broker_id: i32, log_dirs: Vec<PathBuf>) -> Self {
        ReplicaManagerConfig {
            broker_id,
            log_dirs,
            directory_ids: BTreeMap::new(),
            offline_log_dirs: Vec::new(),
            metadata_log_dir: None,
            static_configs: BTreeMap::new(),
            replica_lag_time_max_ms: super::partition::DEFAULT_REPLICA_LAG_TIME_MAX_MS,
            hw_checkpoint_interval: Duration::from_millis(5000),
            retention_check_interval: Duration::from_millis(300_000),
            flush_scheduler_interval: None,
            producer_id_expiration_check_interval: Duration::from_millis(
                DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS,
            ),
            producer_id_expiration_ms:
                kraftd_log::producer_state::DEFAULT_PRODUCER_ID_EXPIRATION_MS,
            recovery_point_checkpoint_interval: Duration::from_millis(
                kraftd_log::checkpoint::DEFAULT_RECOVERY_POINT_CHECKPOINT_INTERVAL_MS,
            ),
            log_start_checkpoint_interval: Duration::from_millis(
                kraftd_log::checkpoint::DEFAULT_LOG_START_CHECKPOINT_INTERVAL_MS,
            ),
            recovery_threads_per_data_dir: DEFAULT_RECOVERY_THREADS_PER_DATA_DIR,
            clean_shutdown: false,
            fetcher: FetcherConfig::new(broker_id),
            replication_quota_window: QuotaWindow::default(),
            alter_log_dirs_quota_window: QuotaWindow::default(),
            dynamic_configs: DynamicConfigs::new(broker_id),
        }
    }
}

/// The broker's hosted partitions (see the module docs).
#[derive(Debug)]
pub struct ReplicaManager {
    config: ReplicaManagerConfig,
    log_manager: LogManager,
    partitions: RwLock<HashMap<(Uuid, i32), Arc<HostedPartition>>>,
    cache: MetadataCache,
    alter_partition: Box<dyn AlterPartitionManager>,
    fetchers: ReplicaFetcherManager,
    broker_epoch: Arc<AtomicI64>,
    metrics: ReplicaMetrics,
    /// The replication throttles, shared with the fetchers.
    replication_quotas: Arc<ReplicationQuotas>,
    /// Itself, for the tasks it spawns (the copiers of replicas moving between log dirs).
    me: Weak<ReplicaManager>,
    /// Serializes AlterReplicaLogDirs (Kafka's `replicaStateChangeLock`).
    state_change: Mutex<()>,
    /// Set by [`ReplicaManager::stop_applying_metadata`]: a delta being applied stops at
    /// the next partition.
    stopping: AtomicBool,
    /// Where replicas' real directories are reported (Kafka's `directoryEventHandler`,
    /// `NOOP` until the server sets one).
    directory_events: OnceLock<Arc<dyn DirectoryEventHandler>>,
    /// Partitions whose replica was in a log dir that failed (Kafka's
    /// `HostedPartition.Offline`): answered KAFKA_STORAGE_ERROR, never opened again.
    offline_partitions: RwLock<HashSet<(Uuid, i32)>>,
    /// Where a fatal log dir failure stops the broker (set by the server).
    stop_signal: OnceLock<tokio::sync::watch::Sender<Option<String>>>,
}

impl ReplicaManager {
    /// Opens the log dirs; partitions are opened as the metadata names them. Call
    /// [`ReplicaManager::start_background`] from within the runtime afterwards.
    pub fn new(
        config: ReplicaManagerConfig,
        cache: MetadataCache,
        alter_partition: impl AlterPartitionManager + 'static,
        broker_epoch: Arc<AtomicI64>,
    ) -> Result<Arc<ReplicaManager>, super::log_manager::LogManagerError> {
        let log_manager = LogManager::open_with(
            config.log_dirs.clone(),
            LogManagerOptions {
                clean_shutdown: config.clean_shutdown,
                offline_dirs: config.offline_log_dirs.clone(),
            },
        )?;
        let replication_quotas = Arc::new(ReplicationQuotas::new(
            config.replication_quota_window,
            config.alter_log_dirs_quota_window,
            config.dynamic_configs.clone(),
        ));
        log_metrics::install_flush_timer();
        let fetchers = ReplicaFetcherManager::new(
            config.fetcher.clone(),
            cache.clone(),
            Arc::clone(&broker_epoch),
            Arc::clone(&replication_quotas),
        );
        Ok(Arc::new_cyclic(|me| ReplicaManager {
            config,
            log_manager,
            partitions: RwLock::new(HashMap::new()),
            cache,
            alter_partition: Box::new(alter_partition),
            fetchers,
            broker_epoch,
            metrics: ReplicaMetrics::default(),
            replication_quotas,
            me: me.clone(),
            state_change: Mutex::new(()),
            stopping: AtomicBool::new(false),
            directory_events: OnceLock::new(),
            offline_partitions: RwLock::new(HashSet::new()),
            stop_signal: OnceLock::new(),
        }))
    }

    /// The broker is stopping: metadata is no longer applied, and a delta being applied
    /// stops at its next partition. A controlled shutdown of a broker leading many
    /// partitions otherwise waited for the broker to step down from each of them (an
    /// epoch-checkpoint fsync apiece: 7 s for 10,000) only to exit, and the log changes
    /// could land after the shutdown's flush and checkpoints.
    pub fn stop_applying_metadata(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    pub fn broker_id(&self) -> i32 {
        self.config.broker_id
    }

    pub fn fetchers(&self) -> &ReplicaFetcherManager {
        &self.fetchers
    }

    /// The replication throttles and byte counters.
    pub fn replication_quotas(&self) -> &Arc<ReplicationQuotas> {
        &self.replication_quotas
    }

    /// Where the replica layer reports replicas' directories; set once, before metadata is
    /// applied (a second handler is refused and returned).
    pub fn set_directory_event_handler(
        &self,
        handler: Arc<dyn DirectoryEventHandler>,
    ) -> Result<(), Arc<dyn DirectoryEventHandler>> {
        self.directory_events.set(handler)
    }

    /// The `directory.id` of the log dir holding the log at `log_dir` (a partition's own
    /// directory, `<log dir>/<topic>-<partition>`), if known.
    fn directory_id_of(&self, log_dir: &Path) -> Option<Uuid> {
        self.config.directory_ids.get(log_dir.parent()?).copied()
    }

    /// Reports that the replica of `hosted` lives in the log dir of `log_dir` when
    /// `assigned` (the metadata's directory for it) says otherwise (Kafka's
    /// `maybeUpdateTopicAssignment`).
    fn maybe_report_directory(
        &self,
        hosted: &HostedPartition,
        log_dir: &Path,
        assigned: Option<Uuid>,
        reason: &str,
    ) {
        let (Some(handler), Some(actual)) =
            (self.directory_events.get(), self.directory_id_of(log_dir))
        else {
            return;
        };
        if assigned != Some(actual) {
            handler.handle_assignment(hosted.tp.topic_id, hosted.tp.partition, actual, reason);
        }
    }

    /// Where the broker is told to stop when a log dir failure is fatal (the metadata log
    /// dir, or the last online one): the first reason is kept. Set once.
    pub fn set_stop_signal(&self, stop: tokio::sync::watch::Sender<Option<String>>) {
        let _ = self.stop_signal.set(stop);
    }

    /// The hosted partition, if this broker holds a replica of it.
    pub fn partition(&self, topic_id: Uuid, partition: i32) -> Option<Arc<HostedPartition>> {
        self.partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(topic_id, partition))
            .cloned()
    }

    /// Every hosted partition.
    /// The log directories (the log cleaner keeps its checkpoints there).
    pub fn log_manager(&self) -> &LogManager {
        &self.log_manager
    }

    pub fn all_partitions(&self) -> Vec<Arc<HostedPartition>> {
        self.partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// The error for a partition this broker does not host: in a failed log dir, unknown
    /// to the metadata, or hosted elsewhere.
    fn missing_partition_error(&self, topic_id: Uuid, partition: i32) -> ErrorCode {
        if self.is_partition_offline(topic_id, partition) {
            return ErrorCode::KafkaStorageError;
        }
        let image = self.cache.image();
        match image.topics.partition(&topic_id, partition) {
            Some(_) => ErrorCode::NotLeaderOrFollower,
            None => ErrorCode::UnknownTopicOrPartition,
        }
    }

    fn current_leader(&self, tp: &TopicIdPartition) -> Option<(i32, i32)> {
        let image = self.cache.image();
        image
            .topics
            .partition(&tp.topic_id, tp.partition)
            .map(|p| (p.leader, p.leader_epoch))
    }

    /// Whether `broker` may join an ISR now (Kafka's `isReplicaIsrEligible`).
    fn isr_eligible(image: &MetadataImage, broker: i32, broker_epoch: i64) -> bool {
        image.cluster.broker(broker).is_some_and(|b| {
            !b.fenced && !b.in_controlled_shutdown && (broker_epoch < 0 || b.epoch == broker_epoch)
        })
    }
}

/// Waits until `check` answers (re-checked on every pulse of the partition) or `deadline`.
async fn wait_for<T>(
    hosted: &Arc<HostedPartition>,
    deadline: Instant,
    check: impl Fn(&Partition) -> Option<T>,
) -> Option<T> {
    loop {
        let notified = Arc::clone(&hosted.changed).notified_owned();
        let mut notified = std::pin::pin!(notified);
        notified.as_mut().enable();
        if let Some(v) = check(&hosted.lock()) {
            return Some(v);
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return check(&hosted.lock());
        }
    }
}
