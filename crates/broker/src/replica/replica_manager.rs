//! `ReplicaManager`: the broker's hosted partitions and the waiting around them.
//!
//! It applies committed metadata (as a [`MetadataPublisher`] after the cache): a partition
//! this broker is assigned is opened (or created) through the [`LogManager`] and made
//! leader or follower at the metadata's leader epoch; followers are handed to the
//! [`ReplicaFetcherManager`]; partitions moved away or deleted are stopped and their logs
//! removed. Requests come from `KafkaApis`: produce appends through
//! [`Partition::append_as_leader`] and, for `acks=all`, waits (the produce purgatory) until
//! the HW covers the batch or the request's timeout; fetches read outside the partition's
//! lock and, with too little data, wait (the fetch purgatory) for an append or HW move.
//! Waiting is on each partition's [`Notify`], pulsed on every append, HW move and role
//! change. ISR changes the partitions ask for go to the controller through the
//! [`AlterPartitionManager`]; a periodic task shrinks lagging ISRs, applies retention and
//! checkpoints HWs.

use std::collections::{BTreeMap, HashMap};
use std::future::poll_fn;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use kraftd_controller::image::{ConfigResourceType, PartitionRegistration};
use kraftd_controller::publisher::MetadataPublisher;
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_log::{LogConfig, LogError};
use kraftd_protocol::{ErrorCode, Uuid};
use tokio::sync::Notify;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::fetch_session::{PartitionFetchParams, TopicIdPartition};
use super::fetcher::{FetcherConfig, ReplicaFetcherManager};
use super::log_manager::LogManager;
use super::partition::{
    FetchIsolation, IsrChange, LeaderAppend, Partition, PartitionConfig, PartitionError,
    PartitionState, ReadParams, Role,
};
use crate::kafka_apis::describe_configs::effective_topic_configs;
use crate::metadata::MetadataCache;
use crate::server::alter_partition_manager::{AlterPartitionItem, AlterPartitionManager};

/// How the ReplicaManager runs; Kafka's names in the field docs.
#[derive(Debug, Clone)]
pub struct ReplicaManagerConfig {
    pub broker_id: i32,
    /// `log.dirs`.
    pub log_dirs: Vec<PathBuf>,
    /// The properties file, for topic config defaults (`log.retention.ms`, ...).
    pub static_configs: BTreeMap<String, String>,
    /// `replica.lag.time.max.ms`.
    pub replica_lag_time_max_ms: i64,
    /// `replica.high.watermark.checkpoint.interval.ms`.
    pub hw_checkpoint_interval: Duration,
    /// `log.retention.check.interval.ms`.
    pub retention_check_interval: Duration,
    /// The follower side.
    pub fetcher: FetcherConfig,
}

impl ReplicaManagerConfig {
    pub fn new(broker_id: i32, log_dirs: Vec<PathBuf>) -> Self {
        ReplicaManagerConfig {
            broker_id,
            log_dirs,
            static_configs: BTreeMap::new(),
            replica_lag_time_max_ms: super::partition::DEFAULT_REPLICA_LAG_TIME_MAX_MS,
            hw_checkpoint_interval: Duration::from_millis(5000),
            retention_check_interval: Duration::from_millis(300_000),
            fetcher: FetcherConfig::new(broker_id),
        }
    }
}

/// One hosted partition: its state machine under a mutex, and the pulse waiters watch.
#[derive(Debug)]
pub struct HostedPartition {
    pub tp: TopicIdPartition,
    state: Mutex<Partition>,
    /// Pulsed (`notify_waiters`) on every append, HW move, truncation and role change.
    pub changed: Arc<Notify>,
}

impl HostedPartition {
    /// The partition's state; a panic while it was held does not make it unusable (every
    /// mutation leaves the partition consistent before it can panic).
    pub fn lock(&self) -> MutexGuard<'_, Partition> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One partition's produce outcome, as the response reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceResult {
    pub error: ErrorCode,
    pub message: Option<String>,
    pub base_offset: i64,
    pub log_append_time: i64,
    pub log_start_offset: i64,
}

impl ProduceResult {
    pub fn error(error: ErrorCode, message: Option<String>) -> Self {
        ProduceResult {
            error,
            message,
            base_offset: -1,
            log_append_time: -1,
            log_start_offset: -1,
        }
    }
}

/// Who is fetching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchOrigin {
    Consumer,
    /// A follower replica with the broker epoch its request carried (KIP-903).
    Follower {
        replica_id: i32,
        broker_epoch: i64,
    },
}

/// A fetch request's limits.
#[derive(Debug, Clone, Copy)]
pub struct FetchLimits {
    pub max_wait: Duration,
    pub min_bytes: usize,
    pub max_bytes: usize,
}

/// One partition's read outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResult {
    pub error: ErrorCode,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub diverging_epoch: Option<(i32, i64)>,
    pub records: Bytes,
    /// The leader as this broker knows it, for NOT_LEADER_OR_FOLLOWER / FENCED answers.
    pub current_leader: Option<(i32, i32)>,
}

impl FetchResult {
    fn error(error: ErrorCode) -> Self {
        FetchResult {
            error,
            high_watermark: -1,
            log_start_offset: -1,
            log_end_offset: -1,
            diverging_epoch: None,
            records: Bytes::new(),
            current_leader: None,
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
    alter_partition: AlterPartitionManager,
    fetchers: ReplicaFetcherManager,
    broker_epoch: Arc<AtomicI64>,
    metrics: ReplicaMetrics,
}

/// Counters behind Kafka's ReplicaManager and BrokerTopicMetrics meters (exported as
/// Prometheus counters; rates are the scraper's to compute).
#[derive(Debug, Default)]
pub struct ReplicaMetrics {
    pub isr_shrinks: AtomicU64,
    pub isr_expands: AtomicU64,
    pub messages_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    pub failed_produce_requests: AtomicU64,
    pub failed_fetch_requests: AtomicU64,
}

use kraftd_log::clock::unix_ms;

impl ReplicaManager {
    /// Opens the log dirs; partitions are opened as the metadata names them. Call
    /// [`ReplicaManager::start_background`] from within the runtime afterwards.
    pub fn new(
        config: ReplicaManagerConfig,
        cache: MetadataCache,
        alter_partition: AlterPartitionManager,
        broker_epoch: Arc<AtomicI64>,
    ) -> Result<Arc<ReplicaManager>, super::log_manager::LogManagerError> {
        let log_manager = LogManager::open(config.log_dirs.clone())?;
        let fetchers = ReplicaFetcherManager::new(
            config.fetcher.clone(),
            cache.clone(),
            Arc::clone(&broker_epoch),
        );
        Ok(Arc::new(ReplicaManager {
            config,
            log_manager,
            partitions: RwLock::new(HashMap::new()),
            cache,
            alter_partition,
            fetchers,
            broker_epoch,
            metrics: ReplicaMetrics::default(),
        }))
    }

    /// Starts the periodic work: ISR shrink checks (every half `replica.lag.time.max.ms`,
    /// as Kafka), HW checkpoints and retention. Ends when the manager is dropped.
    pub fn start_background(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        let isr_every =
            Duration::from_millis((self.config.replica_lag_time_max_ms / 2).max(10) as u64);
        let hw_every = self.config.hw_checkpoint_interval;
        let retention_every = self.config.retention_check_interval;
        tokio::spawn(async move {
            let mut isr = tokio::time::interval(isr_every);
            let mut hw = tokio::time::interval(hw_every);
            let mut retention = tokio::time::interval(retention_every);
            for t in [&mut isr, &mut hw, &mut retention] {
                t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            }
            loop {
                tokio::select! {
                    _ = isr.tick() => {
                        let Some(rm) = weak.upgrade() else { return };
                        rm.maybe_shrink_isrs();
                    }
                    _ = hw.tick() => {
                        let Some(rm) = weak.upgrade() else { return };
                        let _ = tokio::task::spawn_blocking(move || rm.checkpoint_high_watermarks()).await;
                    }
                    _ = retention.tick() => {
                        let Some(rm) = weak.upgrade() else { return };
                        let _ = tokio::task::spawn_blocking(move || rm.apply_retention()).await;
                    }
                }
            }
        })
    }

    pub fn broker_id(&self) -> i32 {
        self.config.broker_id
    }

    pub fn fetchers(&self) -> &ReplicaFetcherManager {
        &self.fetchers
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
    pub fn all_partitions(&self) -> Vec<Arc<HostedPartition>> {
        self.partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// The error for a partition this broker does not host: unknown to the metadata, or
    /// hosted elsewhere.
    fn missing_partition_error(&self, topic_id: Uuid, partition: i32) -> ErrorCode {
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

    // ---- metadata --------------------------------------------------------------------

    /// Applies what a committed metadata delta changed (Kafka's `applyDelta`).
    pub fn apply_delta(&self, delta: &MetadataDelta, image: &MetadataImage) {
        let full = delta.image().is_empty();
        let changes = delta.changes();
        let local = self.config.broker_id;
        let now = unix_ms();
        // Deleted topics (or, on a snapshot load, anything the image no longer has).
        let doomed: Vec<Arc<HostedPartition>> = self
            .all_partitions()
            .into_iter()
            .filter(|h| {
                changes.deleted_topics.contains(&h.tp.topic_id)
                    || (full && image.topics.get(&h.tp.topic_id).is_none())
            })
            .collect();
        for hosted in doomed {
            self.remove_partition(&hosted, true);
        }
        let topics: Vec<Uuid> = if full {
            image.topics.iter().map(|t| t.id).collect()
        } else {
            changes.changed_topics.iter().copied().collect()
        };
        let config_changed = full
            || changes.features_changed
            || changes
                .changed_configs
                .iter()
                .any(|r| r.resource_type == ConfigResourceType::Broker);
        for topic_id in topics {
            let Some(topic) = image.topics.get(&topic_id) else {
                continue;
            };
            for (&index, registration) in topic.partitions.iter() {
                let tp = TopicIdPartition {
                    topic_id,
                    topic: topic.name.clone(),
                    partition: index,
                };
                if registration.replicas.contains(&local) {
                    if let Err(e) = self.apply_partition(&tp, registration, image, now) {
                        warn!(topic = %tp.topic, partition = index, error = %e, "cannot host partition");
                    }
                } else if let Some(hosted) = self.partition(topic_id, index) {
                    info!(topic = %tp.topic, partition = index, "replica moved away; removing");
                    self.remove_partition(&hosted, true);
                }
            }
        }
        // Topic config changes apply to hosted partitions at once.
        let changed_topic_configs: Vec<&str> = changes
            .changed_configs
            .iter()
            .filter(|r| r.resource_type == ConfigResourceType::Topic)
            .map(|r| r.name.as_str())
            .collect();
        if config_changed || !changed_topic_configs.is_empty() {
            for hosted in self.all_partitions() {
                if config_changed || changed_topic_configs.contains(&hosted.tp.topic.as_str()) {
                    let (log_config, partition_config) = self.configs_for(image, &hosted.tp.topic);
                    let mut p = hosted.lock();
                    if let Err(e) = p.log_mut().set_config(log_config) {
                        warn!(topic = %hosted.tp.topic, error = %e, "invalid topic config ignored");
                    }
                    if p.set_config(partition_config, now) {
                        hosted.changed.notify_waiters();
                    }
                }
            }
        }
        if full {
            self.remove_stray_partitions(image);
        }
        if changes.changed_brokers.iter().any(|b| *b != local) {
            self.fetchers.endpoints_changed();
            // A follower fenced or re-registered may no longer hold the HW back.
            let eligible = |broker: i32, epoch: i64| Self::isr_eligible(image, broker, epoch);
            for hosted in self.all_partitions() {
                let moved = hosted.lock().update_isr_eligibility(&eligible, now);
                if moved {
                    hosted.changed.notify_waiters();
                }
            }
        }
    }

    /// Partition directories on disk that the image does not assign to this broker (a topic
    /// deleted, or a replica moved, while the broker was down) are removed, as Kafka's
    /// stray-replica cleanup does on the first image. A directory without a readable topic
    /// id is left alone: nothing proves it stray.
    fn remove_stray_partitions(&self, image: &MetadataImage) {
        let local = self.config.broker_id;
        for (path, topic, partition, id) in self.log_manager.partition_dirs() {
            let Some(id) = id else { continue };
            if self.partition(id, partition).is_some() {
                continue;
            }
            let assigned = image
                .topics
                .partition(&id, partition)
                .is_some_and(|p| p.replicas.contains(&local));
            if assigned {
                continue;
            }
            match self.log_manager.delete_dir(&path) {
                Ok(()) => info!(%topic, partition, topic_id = %id, "removed stray partition log"),
                Err(e) => {
                    warn!(path = %path.display(), error = %e, "removing a stray partition log failed")
                }
            }
        }
    }

    /// Opens a partition if needed and applies its registration as leader or follower.
    fn apply_partition(
        &self,
        tp: &TopicIdPartition,
        registration: &PartitionRegistration,
        image: &MetadataImage,
        now: i64,
    ) -> Result<(), String> {
        let hosted = match self.partition(tp.topic_id, tp.partition) {
            Some(h) => h,
            None => {
                let (log_config, partition_config) = self.configs_for(image, &tp.topic);
                let log = self
                    .log_manager
                    .get_or_create(&tp.topic, tp.topic_id, tp.partition, log_config, now)
                    .map_err(|e| e.to_string())?;
                let hw = self
                    .log_manager
                    .recovered_high_watermark(&tp.topic, tp.partition);
                let mut partition = Partition::new(
                    tp.clone(),
                    self.config.broker_id,
                    log,
                    partition_config,
                    hw,
                    now,
                )
                .map_err(|e| e.to_string())?;
                partition.set_local_broker_epoch(self.broker_epoch.load(Ordering::Relaxed));
                let hosted = Arc::new(HostedPartition {
                    tp: tp.clone(),
                    state: Mutex::new(partition),
                    changed: Arc::new(Notify::new()),
                });
                self.partitions
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert((tp.topic_id, tp.partition), Arc::clone(&hosted));
                hosted
            }
        };
        let state = partition_state(registration);
        let mut p = hosted.lock();
        p.set_local_broker_epoch(self.broker_epoch.load(Ordering::Relaxed));
        if registration.leader == self.config.broker_id {
            let became = p.make_leader(&state, now).map_err(|e| e.to_string())?;
            drop(p);
            if became {
                self.fetchers.remove_partition(tp);
            }
        } else {
            let moved = p.make_follower(&state);
            drop(p);
            if moved {
                self.fetchers.remove_partition(tp);
                if registration.leader >= 0 {
                    self.fetchers
                        .add_partition(registration.leader, Arc::clone(&hosted));
                }
            }
        }
        hosted.changed.notify_waiters();
        Ok(())
    }

    /// Stops a partition: no more fetching, waiters woken (they will find it gone), the
    /// log closed and, when asked, deleted.
    fn remove_partition(&self, hosted: &Arc<HostedPartition>, delete: bool) {
        self.fetchers.remove_partition(&hosted.tp);
        self.partitions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(hosted.tp.topic_id, hosted.tp.partition));
        // Requests still holding the partition find it neither leading nor following.
        hosted.lock().stop();
        hosted.changed.notify_waiters();
        if delete {
            let dir = hosted.lock().log().dir().to_path_buf();
            match self.log_manager.delete_dir(&dir) {
                Ok(()) => {
                    info!(topic = %hosted.tp.topic, partition = hosted.tp.partition, "deleted partition log")
                }
                Err(e) => {
                    warn!(path = %dir.display(), error = %e, "deleting a partition's log failed")
                }
            }
        }
    }

    /// The topic's log and replication settings as this broker runs them.
    fn configs_for(&self, image: &MetadataImage, topic: &str) -> (LogConfig, PartitionConfig) {
        let values = effective_topic_configs(
            image,
            self.config.broker_id,
            &self.config.static_configs,
            topic,
        );
        let mut log = LogConfig::default();
        for key in [
            "segment.bytes",
            "segment.ms",
            "segment.index.bytes",
            "retention.ms",
            "retention.bytes",
            "flush.messages",
            "flush.ms",
            "index.interval.bytes",
            "max.message.bytes",
            "message.timestamp.type",
        ] {
            if let Some(v) = values.get(key) {
                if let Err(e) = log.set(key, v) {
                    warn!(topic, key, value = %v, error = %e, "topic config not applied");
                }
            }
        }
        let min_isr = values
            .get("min.insync.replicas")
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(1)
            .max(1);
        let partition = PartitionConfig {
            min_insync_replicas: min_isr,
            replica_lag_time_max_ms: self.config.replica_lag_time_max_ms,
            elr_enabled: image.features.level("eligible.leader.replicas.version") >= 1,
        };
        (log, partition)
    }

    /// Whether `broker` may join an ISR now (Kafka's `isReplicaIsrEligible`).
    fn isr_eligible(image: &MetadataImage, broker: i32, broker_epoch: i64) -> bool {
        image.cluster.broker(broker).is_some_and(|b| {
            !b.fenced && !b.in_controlled_shutdown && (broker_epoch < 0 || b.epoch == broker_epoch)
        })
    }

    // ---- ISR changes -------------------------------------------------------------------

    /// Sends an ISR change to the controller and applies the answer when it comes.
    fn submit_isr_change(&self, hosted: &Arc<HostedPartition>, change: IsrChange) {
        let rx = self.alter_partition.submit(AlterPartitionItem {
            topic_id: hosted.tp.topic_id,
            partition: hosted.tp.partition,
            leader_epoch: change.leader_epoch,
            new_isr: change.new_isr,
            leader_recovery_state: change.leader_recovery_state,
            partition_epoch: change.partition_epoch,
        });
        let hosted = Arc::clone(hosted);
        tokio::spawn(async move {
            let result = match rx.await {
                Ok(Ok(state)) => Ok((state.leader_epoch, state.partition_epoch, state.isr)),
                Ok(Err(code)) => Err(code),
                Err(_) => Err(ErrorCode::UnknownServerError),
            };
            let moved = hosted.lock().complete_isr_change(result, unix_ms());
            if moved {
                hosted.changed.notify_waiters();
            }
        });
    }

    fn maybe_shrink_isrs(&self) {
        let now = unix_ms();
        for hosted in self.all_partitions() {
            let change = hosted.lock().maybe_shrink_isr(now);
            if let Some(change) = change {
                self.metrics.isr_shrinks.fetch_add(1, Ordering::Relaxed);
                self.submit_isr_change(&hosted, change);
            }
        }
    }

    fn checkpoint_high_watermarks(&self) {
        let hws: Vec<_> = self
            .all_partitions()
            .into_iter()
            .map(|h| {
                let p = h.lock();
                (
                    h.tp.topic.clone(),
                    h.tp.partition,
                    p.log().dir().to_path_buf(),
                    p.high_watermark(),
                )
            })
            .collect();
        if let Err(e) = self.log_manager.checkpoint_high_watermarks(&hws) {
            warn!(error = %e, "high watermark checkpoint failed");
        }
    }

    fn apply_retention(&self) {
        let now = unix_ms();
        for hosted in self.all_partitions() {
            let result = hosted.lock().apply_retention(now);
            if let Err(e) = result {
                warn!(topic = %hosted.tp.topic, partition = hosted.tp.partition, error = %e, "retention failed");
            }
        }
    }

    /// Clean shutdown: flush every log, snapshot producer state, checkpoint HWs.
    pub fn shutdown(&self) {
        self.fetchers.shutdown();
        for hosted in self.all_partitions() {
            let mut p = hosted.lock();
            if let Err(e) = p.log_mut().flush() {
                warn!(topic = %hosted.tp.topic, partition = hosted.tp.partition, error = %e, "flush at shutdown failed");
            }
            p.snapshot_producer_state();
        }
        self.checkpoint_high_watermarks();
    }

    // ---- produce -----------------------------------------------------------------------

    /// Appends each partition's batch as leader and, for `acks=all`, waits until the ISR
    /// holds it or `timeout` passes (REQUEST_TIMED_OUT). One bad partition never fails the
    /// others. [`ReplicaManager::append_records_now`] then [`PendingProduce::complete`].
    pub async fn append_records(
        &self,
        acks: i16,
        timeout: Duration,
        entries: Vec<(TopicIdPartition, Bytes)>,
    ) -> Vec<(TopicIdPartition, ProduceResult)> {
        self.append_records_now(acks, timeout, entries)
            .complete()
            .await
    }

    /// The append half of a produce, done at once: the request handler calls it before it
    /// takes the connection's next request, so batches are appended in the order a client
    /// sent them (as Kafka handles one request per connection at a time), while the
    /// `acks=all` waits of pipelined requests overlap.
    pub fn append_records_now(
        &self,
        acks: i16,
        timeout: Duration,
        entries: Vec<(TopicIdPartition, Bytes)>,
    ) -> PendingProduce {
        let deadline = Instant::now() + timeout;
        let now = unix_ms();
        let mut results = Vec::with_capacity(entries.len());
        let mut waiting = Vec::new();
        for (tp, records) in entries {
            let Some(hosted) = self.partition(tp.topic_id, tp.partition) else {
                let code = self.missing_partition_error(tp.topic_id, tp.partition);
                results.push((tp, ProduceResult::error(code, None)));
                continue;
            };
            let size = records.len() as u64;
            let outcome = hosted.lock().append_as_leader(records, acks, now);
            match outcome {
                Ok(append) => {
                    if !append.duplicate {
                        let m = &self.metrics;
                        m.bytes_in.fetch_add(size, Ordering::Relaxed);
                        let count = (append.last_offset - append.first_offset + 1).max(0) as u64;
                        m.messages_in.fetch_add(count, Ordering::Relaxed);
                    }
                    hosted.changed.notify_waiters();
                    let result = produce_ok(&append);
                    // A retried duplicate waits like the original: its ack must not
                    // come before the ISR holds the original batch.
                    if acks == -1 {
                        waiting.push((results.len(), hosted, append.last_offset + 1));
                    }
                    results.push((tp, result));
                }
                Err(e) => {
                    debug!(topic = %tp.topic, partition = tp.partition, error = %e, "produce refused");
                    self.metrics
                        .failed_produce_requests
                        .fetch_add(1, Ordering::Relaxed);
                    let message = Some(e.to_string());
                    results.push((tp, ProduceResult::error(e.error_code(), message)));
                }
            }
        }
        PendingProduce {
            results,
            waiting,
            deadline,
        }
    }

    // ---- fetch -------------------------------------------------------------------------

    /// Reads every partition once; if that gives fewer than `min_bytes` and nothing to
    /// report at once (errors, divergence), waits for appends or HW moves on the
    /// partitions read, up to `max_wait`, and reads again.
    pub async fn fetch_messages(
        &self,
        origin: FetchOrigin,
        limits: FetchLimits,
        partitions: &[(TopicIdPartition, PartitionFetchParams)],
    ) -> Vec<(TopicIdPartition, FetchResult)> {
        let deadline = Instant::now() + limits.max_wait;
        let hosted: Vec<Option<Arc<HostedPartition>>> = partitions
            .iter()
            .map(|(tp, _)| self.partition(tp.topic_id, tp.partition))
            .collect();
        loop {
            let mut notified: Vec<Pin<Box<tokio::sync::futures::OwnedNotified>>> = hosted
                .iter()
                .flatten()
                .map(|h| Box::pin(Arc::clone(&h.changed).notified_owned()))
                .collect();
            for n in &mut notified {
                n.as_mut().enable();
            }
            let results = self.read_all(origin, limits.max_bytes, partitions, &hosted);
            let bytes: usize = results.iter().map(|(_, r)| r.records.len()).sum();
            // Errors and divergence are news at once; so is a HW above the one a follower
            // says it knows (KIP-1166), or its HW would lag until the next append.
            let urgent = results.iter().zip(partitions).any(|((_, r), (_, params))| {
                r.error != ErrorCode::None
                    || r.diverging_epoch.is_some()
                    || (matches!(origin, FetchOrigin::Follower { .. })
                        && r.high_watermark > params.high_watermark)
            });
            if bytes >= limits.min_bytes
                || urgent
                || Instant::now() >= deadline
                || notified.is_empty()
            {
                return self.count_fetched(results);
            }
            let woke = tokio::time::timeout_at(
                deadline,
                poll_fn(|cx| {
                    for n in notified.iter_mut() {
                        if std::future::Future::poll(n.as_mut(), cx).is_ready() {
                            return Poll::Ready(());
                        }
                    }
                    Poll::Pending
                }),
            )
            .await;
            if woke.is_err() {
                let results = self.read_all(origin, limits.max_bytes, partitions, &hosted);
                return self.count_fetched(results);
            }
        }
    }

    fn count_fetched(
        &self,
        results: Vec<(TopicIdPartition, FetchResult)>,
    ) -> Vec<(TopicIdPartition, FetchResult)> {
        let bytes: usize = results.iter().map(|(_, r)| r.records.len()).sum();
        let m = &self.metrics;
        m.bytes_out.fetch_add(bytes as u64, Ordering::Relaxed);
        if results.iter().any(|(_, r)| r.error != ErrorCode::None) {
            m.failed_fetch_requests.fetch_add(1, Ordering::Relaxed);
        }
        results
    }

    /// Prometheus text for the ReplicaManager's gauges (partition and leader counts,
    /// under-replicated and under-min-ISR partitions) and the counters above, with Kafka's
    /// metric names.
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        let (mut partitions, mut leaders, mut under_replicated, mut under_min_isr) = (0, 0, 0, 0);
        for hosted in self.all_partitions() {
            let p = hosted.lock();
            partitions += 1;
            if p.is_leader() {
                leaders += 1;
                if p.isr().len() < p.replicas().len() {
                    under_replicated += 1;
                }
                if p.isr().len() < p.config().min_insync_replicas {
                    under_min_isr += 1;
                }
            }
        }
        let mut metric = |group: &str, name: &str, kind: &str, help: &str, value: u64| {
            kraftd_raft::driver::metrics::write_prometheus_metric(
                out, group, name, kind, help, node_id, value,
            );
        };
        let rm = "kafka_server_replicamanager";
        metric(
            rm,
            "partitioncount",
            "gauge",
            "Partitions hosted on this broker.",
            partitions,
        );
        metric(
            rm,
            "leadercount",
            "gauge",
            "Partitions this broker leads.",
            leaders,
        );
        metric(
            rm,
            "underreplicatedpartitions",
            "gauge",
            "Led partitions whose ISR is smaller than the replica set.",
            under_replicated,
        );
        metric(
            rm,
            "underminisrpartitioncount",
            "gauge",
            "Led partitions whose ISR is below min.insync.replicas.",
            under_min_isr,
        );
        let m = &self.metrics;
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        metric(
            rm,
            "isrshrinks_total",
            "counter",
            "ISR shrinks proposed to the controller.",
            load(&m.isr_shrinks),
        );
        metric(
            rm,
            "isrexpands_total",
            "counter",
            "ISR expansions proposed to the controller.",
            load(&m.isr_expands),
        );
        let bt = "kafka_server_brokertopicmetrics";
        metric(
            bt,
            "messagesin_total",
            "counter",
            "Records appended by produce requests.",
            load(&m.messages_in),
        );
        metric(
            bt,
            "bytesin_total",
            "counter",
            "Bytes appended by produce requests.",
            load(&m.bytes_in),
        );
        metric(
            bt,
            "bytesout_total",
            "counter",
            "Record bytes returned to fetches (consumers and followers).",
            load(&m.bytes_out),
        );
        metric(
            bt,
            "failedproducerequests_total",
            "counter",
            "Partitions of produce requests refused.",
            load(&m.failed_produce_requests),
        );
        metric(
            bt,
            "failedfetchrequests_total",
            "counter",
            "Fetch requests with a partition error.",
            load(&m.failed_fetch_requests),
        );
    }

    fn read_all(
        &self,
        origin: FetchOrigin,
        max_bytes: usize,
        partitions: &[(TopicIdPartition, PartitionFetchParams)],
        hosted: &[Option<Arc<HostedPartition>>],
    ) -> Vec<(TopicIdPartition, FetchResult)> {
        let now = unix_ms();
        let mut budget = max_bytes;
        let mut first = true;
        let image = self.cache.image();
        let eligible = |broker: i32, epoch: i64| Self::isr_eligible(&image, broker, epoch);
        let mut out = Vec::with_capacity(partitions.len());
        for ((tp, params), hosted) in partitions.iter().zip(hosted) {
            let Some(hosted) = hosted else {
                let code = self.missing_partition_error(tp.topic_id, tp.partition);
                let mut r = FetchResult::error(code);
                r.current_leader = self.current_leader(tp);
                out.push((tp.clone(), r));
                continue;
            };
            // Kafka returns at least one batch (the first partition's first) even past
            // the limits, so a batch larger than max.bytes can always be consumed.
            let limit = if first {
                (params.max_bytes.max(0) as usize).min(budget.max(1))
            } else {
                (params.max_bytes.max(0) as usize).min(budget)
            };
            let result = self.read_partition(origin, hosted, params, limit, now, &eligible);
            if !result.records.is_empty() {
                first = false;
                budget = budget.saturating_sub(result.records.len());
            }
            out.push((tp.clone(), result));
        }
        out
    }

    fn read_partition(
        &self,
        origin: FetchOrigin,
        hosted: &Arc<HostedPartition>,
        params: &PartitionFetchParams,
        limit: usize,
        now: i64,
        eligible: &dyn Fn(i32, i64) -> bool,
    ) -> FetchResult {
        let read_params = ReadParams {
            fetch_offset: params.fetch_offset,
            max_bytes: limit,
            current_leader_epoch: params.current_leader_epoch,
            last_fetched_epoch: params.last_fetched_epoch,
            isolation: match origin {
                FetchOrigin::Consumer => FetchIsolation::HighWatermark,
                FetchOrigin::Follower { .. } => FetchIsolation::LogEnd,
            },
        };
        for _attempt in 0..3 {
            let planned = {
                let mut p = hosted.lock();
                let planned = p.read(&read_params);
                if let (
                    Ok(info),
                    FetchOrigin::Follower {
                        replica_id,
                        broker_epoch,
                    },
                ) = (&planned, origin)
                {
                    if info.diverging_epoch.is_none() {
                        match p.update_follower_fetch_state(
                            replica_id,
                            broker_epoch,
                            params.fetch_offset,
                            params.log_start_offset,
                            now,
                            &eligible,
                        ) {
                            Ok(update) => {
                                if update.high_watermark_changed || update.log_start_changed {
                                    hosted.changed.notify_waiters();
                                }
                                if let Some(change) = update.isr_change {
                                    self.metrics.isr_expands.fetch_add(1, Ordering::Relaxed);
                                    self.submit_isr_change(hosted, change);
                                }
                            }
                            Err(e) => {
                                let mut r = FetchResult::error(e.error_code());
                                r.current_leader = Some((p.leader_id(), p.leader_epoch()));
                                return r;
                            }
                        }
                    }
                }
                (planned, p.leader_epoch(), p.role())
            };
            let (planned, leader_epoch, role) = planned;
            let info = match planned {
                Ok(info) => info,
                Err(e) => {
                    let mut r = FetchResult::error(e.error_code());
                    if let PartitionError::OffsetOutOfRange {
                        log_start_offset,
                        log_end_offset,
                        ..
                    } = e
                    {
                        r.log_start_offset = log_start_offset;
                        r.log_end_offset = log_end_offset;
                    }
                    r.current_leader = match role {
                        Role::Leader => Some((self.config.broker_id, leader_epoch)),
                        Role::Follower { leader } => Some((leader, leader_epoch)),
                        Role::None => self.current_leader(&hosted.tp),
                    };
                    return r;
                }
            };
            let mut result = FetchResult {
                error: ErrorCode::None,
                high_watermark: info.high_watermark,
                log_start_offset: info.log_start_offset,
                log_end_offset: info.log_end_offset,
                diverging_epoch: info.diverging_epoch,
                records: Bytes::new(),
                current_leader: None,
            };
            match info.read.map(|r| r.execute()) {
                None => return result,
                Some(Ok(read)) => {
                    result.records = read.bytes;
                    return result;
                }
                Some(Err(LogError::ConcurrentTruncation { .. })) => continue,
                Some(Err(e)) => {
                    warn!(topic = %hosted.tp.topic, partition = hosted.tp.partition, error = %e, "read failed");
                    return FetchResult::error(ErrorCode::KafkaStorageError);
                }
            }
        }
        FetchResult::error(ErrorCode::NotLeaderOrFollower)
    }

    // ---- offsets -----------------------------------------------------------------------

    /// ListOffsets for one partition as leader: (offset, timestamp, leader epoch) for the
    /// special timestamps -2 earliest, -1 latest (HW; a follower replica asking gets the
    /// log end), -3 max timestamp, -4 earliest local, or the first offset at or after a
    /// timestamp.
    pub fn list_offset(
        &self,
        tp: &TopicIdPartition,
        current_leader_epoch: i32,
        timestamp: i64,
        replica_id: i32,
    ) -> Result<(i64, i64, i32), ErrorCode> {
        let Some(hosted) = self.partition(tp.topic_id, tp.partition) else {
            return Err(self.missing_partition_error(tp.topic_id, tp.partition));
        };
        let p = hosted.lock();
        // Debug replicas (-2) may ask any replica; others only the leader.
        if replica_id != -2 {
            p.check_offset_for_leader_epoch(current_leader_epoch)
                .map_err(|e| e.error_code())?;
        }
        let epoch_at = |offset: i64| {
            let (e, _) = p.end_offset_for_epoch(i32::MAX);
            let mut found = e;
            for entry in p.log().epoch_entries() {
                if entry.start_offset <= offset {
                    found = entry.epoch;
                }
            }
            found
        };
        match timestamp {
            -2 | -4 => {
                let o = p.log_start_offset();
                Ok((o, -1, epoch_at(o)))
            }
            -1 => {
                let o = if replica_id >= 0 {
                    p.log_end_offset()
                } else {
                    p.high_watermark()
                };
                Ok((o, -1, epoch_at(o.saturating_sub(1).max(0))))
            }
            -3 => {
                let found = p
                    .log()
                    .max_timestamp_and_offset()
                    .map_err(|_| ErrorCode::KafkaStorageError)?;
                match found {
                    Some((ts, off)) if off < p.high_watermark() => Ok((off, ts, epoch_at(off))),
                    _ => Ok((-1, -1, -1)),
                }
            }
            ts if ts >= 0 => {
                let found = p
                    .log()
                    .offset_for_timestamp(ts)
                    .map_err(|_| ErrorCode::KafkaStorageError)?;
                match found {
                    Some((off, ts)) if off < p.high_watermark() => Ok((off, ts, epoch_at(off))),
                    _ => Ok((-1, -1, -1)),
                }
            }
            _ => Err(ErrorCode::UnsupportedVersion),
        }
    }

    /// OffsetForLeaderEpoch for one partition (KIP-279): the largest epoch ≤ `epoch` and
    /// its end offset, as leader (or from any replica for a debug request).
    pub fn offset_for_leader_epoch(
        &self,
        tp: &TopicIdPartition,
        current_leader_epoch: i32,
        epoch: i32,
        replica_id: i32,
    ) -> Result<(i32, i64), ErrorCode> {
        let Some(hosted) = self.partition(tp.topic_id, tp.partition) else {
            return Err(self.missing_partition_error(tp.topic_id, tp.partition));
        };
        let p = hosted.lock();
        if replica_id == -2 {
            p.check_leader_epoch(current_leader_epoch)
                .map_err(|e| e.error_code())?;
        } else {
            p.check_offset_for_leader_epoch(current_leader_epoch)
                .map_err(|e| e.error_code())?;
        }
        Ok(p.end_offset_for_epoch(epoch))
    }

    /// DeleteRecords (Kafka's `ReplicaManager.deleteRecords` and `DelayedDeleteRecords`):
    /// moves each partition's log start on the leader, then waits until its low watermark
    /// (the smallest log start among the leader and its in-sync followers, which learn the
    /// leader's from their fetches) reaches it, or `timeout` (REQUEST_TIMED_OUT). Returns
    /// each partition's low watermark. One bad partition never fails the others.
    pub async fn delete_records(
        &self,
        timeout: Duration,
        entries: Vec<(TopicIdPartition, i64)>,
    ) -> Vec<(TopicIdPartition, Result<i64, ErrorCode>)> {
        let mut results = Vec::with_capacity(entries.len());
        let mut waiting = Vec::new();
        for (tp, offset) in entries {
            let Some(hosted) = self.partition(tp.topic_id, tp.partition) else {
                let code = self.missing_partition_error(tp.topic_id, tp.partition);
                results.push((tp, Err(code)));
                continue;
            };
            let outcome = hosted.lock().delete_records_on_leader(offset);
            match outcome {
                Ok(low_watermark) => {
                    // Kafka waits for the offset asked for (the HW for -1, which the log
                    // start then is), not for the log start, which may be above it.
                    let log_start = hosted.lock().log_start_offset();
                    let required = if offset == -1 { log_start } else { offset };
                    hosted.changed.notify_waiters();
                    if low_watermark < required {
                        waiting.push((results.len(), hosted, required));
                    }
                    results.push((tp, Ok(low_watermark)));
                }
                Err(e) => {
                    debug!(topic = %tp.topic, partition = tp.partition, error = %e, "delete records refused");
                    results.push((tp, Err(e.error_code())));
                }
            }
        }
        let deadline = Instant::now() + timeout;
        for (i, hosted, required) in waiting {
            // A follower's fetch that moves its log start pulses the partition.
            let outcome = wait_for(&hosted, deadline, |p| {
                if !p.is_leader() {
                    return Some(Err(ErrorCode::NotLeaderOrFollower));
                }
                let low_watermark = p.low_watermark();
                (low_watermark >= required).then_some(Ok(low_watermark))
            })
            .await
            .unwrap_or(Err(ErrorCode::RequestTimedOut));
            results[i].1 = outcome;
        }
        results
    }
}

/// A produce whose batches are appended; for `acks=all`, the waits for the ISR remain.
#[derive(Debug)]
pub struct PendingProduce {
    results: Vec<(TopicIdPartition, ProduceResult)>,
    /// (index in `results`, partition, offset the HW must reach).
    waiting: Vec<(usize, Arc<HostedPartition>, i64)>,
    deadline: Instant,
}

impl PendingProduce {
    /// Waits until every `acks=all` partition's HW covers its batch (or the request's
    /// timeout: REQUEST_TIMED_OUT) and gives each partition's answer.
    pub async fn complete(mut self) -> Vec<(TopicIdPartition, ProduceResult)> {
        for (i, hosted, required) in std::mem::take(&mut self.waiting) {
            let error = wait_for(&hosted, self.deadline, |p| {
                p.check_enough_replicas_reach_offset(required)
            })
            .await
            .unwrap_or(ErrorCode::RequestTimedOut);
            if error != ErrorCode::None {
                self.results[i].1 = ProduceResult::error(error, None);
            }
        }
        self.results
    }
}

/// The registration's fields a partition acts on.
pub fn partition_state(r: &PartitionRegistration) -> PartitionState {
    PartitionState {
        leader: r.leader,
        leader_epoch: r.leader_epoch,
        partition_epoch: r.partition_epoch,
        replicas: r.replicas.clone(),
        isr: r.isr.clone(),
        elr: r.elr.clone(),
        leader_recovery_state: r.leader_recovery_state.code(),
    }
}

fn produce_ok(append: &LeaderAppend) -> ProduceResult {
    ProduceResult {
        error: ErrorCode::None,
        message: None,
        base_offset: append.first_offset,
        log_append_time: append.log_append_time,
        log_start_offset: append.log_start_offset,
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

/// The ReplicaManager as a metadata publisher, after the cache.
#[derive(Debug, Clone)]
pub struct ReplicaManagerPublisher(pub Arc<ReplicaManager>);

impl MetadataPublisher for ReplicaManagerPublisher {
    fn name(&self) -> &str {
        "ReplicaManager"
    }

    fn on_metadata_update(&mut self, delta: &MetadataDelta, image: &MetadataImage) {
        self.0.apply_delta(delta, image);
    }
}
