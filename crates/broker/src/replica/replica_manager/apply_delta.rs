//! Committed metadata on the data plane (Kafka's `ReplicaManager.applyDelta`): partitions
//! opened and made leader or follower, moved away or deleted, stray logs removed, topic
//! configs applied; the [`ReplicaManagerPublisher`] that feeds it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kraftd_controller::image::{ConfigResourceType, PartitionRegistration, DIRECTORY_UNASSIGNED};
use kraftd_controller::publisher::MetadataPublisher;
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_log::clock::unix_ms;
use kraftd_log::LogConfig;
use kraftd_protocol::Uuid;
use tracing::{info, warn};

use super::ReplicaManager;
use crate::replica::partition::{HostedPartition, Partition, PartitionConfig, PartitionState};
use crate::replica::TopicIdPartition;
use kraftd_controller::config_helper::effective_topic_configs;

/// A delta changing at most this many partitions logs a line for each; more, a summary.
const LOG_EACH_UP_TO: usize = 20;

/// Role changes of a delta touching at least this many partitions run in parallel.
const PARALLEL_FROM: usize = 64;

/// Threads applying a large delta's role changes (fsync-bound, not CPU-bound).
const ROLE_CHANGE_THREADS: usize = 8;

/// What applying a registration did to a hosted partition.
enum Applied {
    Leader,
    Follower,
    Unchanged,
    /// Not applied: the broker is stopping.
    Skipped,
}

/// `f` over `items` on up to `threads` scoped threads, results in the items' order. The
/// threads enter the caller's Tokio runtime, if any: a role change starts replica fetchers,
/// which are tasks.
fn run_parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let runtime = tokio::runtime::Handle::try_current().ok();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let _entered = runtime.as_ref().map(|r| r.enter());
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(f(item));
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .expect("each item is taken by exactly one thread, which stores its result")
        })
        .collect()
}

impl ReplicaManager {
    /// Applies what a committed metadata delta changed (Kafka's `applyDelta`), in time
    /// proportional to what it changed, not to the partitions hosted: deleted topics are
    /// looked up by the partitions the previous image gave them, changed ones by the
    /// partitions the delta changed. Partitions new to this broker (a creation, or every
    /// partition at the first image after a restart) are opened in parallel,
    /// `num.recovery.threads.per.data.dir` threads per log dir (Kafka's log loading).
    pub fn apply_delta(&self, delta: &MetadataDelta, image: &MetadataImage) {
        if self.stopping() {
            return;
        }
        let full = delta.image().is_empty();
        let changes = delta.changes();
        let local = self.config.broker_id;
        let now = unix_ms();
        // Deleted topics (or, on a snapshot load, anything the image no longer has).
        let doomed: Vec<Arc<HostedPartition>> = if full {
            self.all_partitions()
                .into_iter()
                .filter(|h| image.topics.get(&h.tp.topic_id).is_none())
                .collect()
        } else {
            changes
                .deleted_topics
                .iter()
                .filter_map(|id| delta.image().topics.get(id).map(|t| (id, t)))
                .flat_map(|(id, t)| t.partitions.keys().map(move |&p| (*id, p)))
                .filter_map(|(id, p)| self.partition(id, p))
                .collect()
        };
        for hosted in doomed {
            self.remove_partition(&hosted, true);
        }
        let config_changed = full
            || changes.features_changed
            || changes
                .changed_configs
                .iter()
                .any(|r| r.resource_type == ConfigResourceType::Broker);
        // The partitions to act on: (partition, registration).
        let mut assigned: Vec<(TopicIdPartition, &PartitionRegistration)> = Vec::new();
        let mut visit = |topic_id: Uuid, indexes: &mut dyn Iterator<Item = i32>| {
            let Some(topic) = image.topics.get(&topic_id) else {
                return;
            };
            for index in indexes {
                let Some(registration) = topic.partitions.get(&index) else {
                    continue;
                };
                // A replica in a failed log dir stays offline whatever the metadata says
                // (Kafka skips `HostedPartition.Offline` partitions in its deltas).
                if self.is_partition_offline(topic_id, index) {
                    continue;
                }
                let tp = TopicIdPartition {
                    topic_id,
                    topic: topic.name.clone(),
                    partition: index,
                };
                if registration.replicas.contains(&local) {
                    if self.in_dir_offline_at_start(&tp, registration.directory(local)) {
                        continue;
                    }
                    assigned.push((tp, registration));
                } else if let Some(hosted) = self.partition(topic_id, index) {
                    info!(topic = %tp.topic, partition = index, "replica moved away; removing");
                    self.remove_partition(&hosted, true);
                }
            }
        };
        if full {
            for topic in image.topics.iter() {
                visit(topic.id, &mut topic.partitions.keys().copied());
            }
        } else {
            for &topic_id in &changes.changed_topics {
                match changes.changed_partitions.get(&topic_id) {
                    Some(indexes) => visit(topic_id, &mut indexes.iter().copied()),
                    None => {
                        let Some(topic) = image.topics.get(&topic_id) else {
                            continue;
                        };
                        visit(topic_id, &mut topic.partitions.keys().copied());
                    }
                }
            }
        }
        let new: Vec<&TopicIdPartition> = assigned
            .iter()
            .map(|(tp, _)| tp)
            .filter(|tp| self.partition(tp.topic_id, tp.partition).is_none())
            .collect();
        self.open_partitions(&new, image, now);
        self.apply_partitions(&assigned, image, now);
        if image.features.version().is_directory_assignment_supported() {
            // The directories only metadata versions with JBOD carry (Kafka's
            // `localChanges.directoryIds.forEach(maybeUpdateTopicAssignment)`).
            for (tp, registration) in &assigned {
                if let Some(hosted) = self.partition(tp.topic_id, tp.partition) {
                    let log_dir = hosted.lock().log().dir().to_path_buf();
                    self.maybe_report_directory(
                        &hosted,
                        &log_dir,
                        registration.directory(local),
                        "Applying metadata delta",
                    );
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
            // A follower fenced or re-registered may no longer hold the HW back; one
            // unfenced may join the ISR at its next read, which the signal brings.
            let eligible = |broker: i32, epoch: i64| Self::isr_eligible(image, broker, epoch);
            for hosted in self.all_partitions() {
                let changed = hosted.lock().update_isr_eligibility(&eligible, now);
                if changed {
                    hosted.changed.notify_waiters();
                }
            }
        }
    }

    /// Whether the replica of `tp`, not hosted and with no log in an online dir, may be in
    /// a log dir that is offline (`assigned`, the metadata's directory for it, names no
    /// online dir while some dir is offline): it is not created empty elsewhere but taken
    /// for offline (Kafka's `Partition.createLogInAssignedDirectoryId` skips creating
    /// it). A replica with no directory yet (UNASSIGNED, or a metadata version without
    /// directories) is created as usual.
    fn in_dir_offline_at_start(&self, tp: &TopicIdPartition, assigned: Option<Uuid>) -> bool {
        let Some(dir) = assigned else { return false };
        if dir == DIRECTORY_UNASSIGNED
            || self.config.directory_ids.values().any(|id| *id == dir)
            || !self.log_manager.has_offline_dirs()
            || self.partition(tp.topic_id, tp.partition).is_some()
            || self.log_manager.has_log(&tp.topic, tp.partition)
        {
            return false;
        }
        warn!(topic = %tp.topic, partition = tp.partition, directory = %dir,
            "not creating the log: its directory is not online and log dirs are offline; the replica is offline");
        self.offline_partitions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert((tp.topic_id, tp.partition));
        true
    }

    /// Partition directories on disk that the image does not assign to this broker (a topic
    /// deleted, or a replica moved, while the broker was down) are removed, as Kafka's
    /// stray-replica cleanup does on the first image; future logs (a move under way) of
    /// partitions not hosted too. A directory without a readable topic
    /// id is left alone: nothing proves it stray.
    fn remove_stray_partitions(&self, image: &MetadataImage) {
        let local = self.config.broker_id;
        let on_disk = self.log_manager.partition_dirs().into_iter();
        for (path, topic, partition, id) in on_disk.chain(self.log_manager.future_dirs()) {
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

    /// Opens the logs of partitions new to this broker and hosts them, in parallel:
    /// `num.recovery.threads.per.data.dir` threads per log dir (Kafka's log loading at
    /// start; here also for a delta creating many partitions). A partition that cannot be
    /// opened is left out (its registration is then reported by [`Self::apply_partition`]).
    fn open_partitions(&self, new: &[&TopicIdPartition], image: &MetadataImage, now: i64) {
        if new.is_empty() {
            return;
        }
        let mut configs: HashMap<&str, (LogConfig, PartitionConfig)> = HashMap::new();
        for tp in new {
            if !configs.contains_key(tp.topic.as_str()) {
                configs.insert(tp.topic.as_str(), self.configs_for(image, &tp.topic));
            }
        }
        let open = |tp: &TopicIdPartition| -> Result<Partition, String> {
            let (log_config, partition_config) = configs[tp.topic.as_str()].clone();
            let log = self
                .log_manager
                .get_or_create(&tp.topic, tp.topic_id, tp.partition, log_config, now)
                .map_err(|e| e.to_string())?;
            let hw = self
                .log_manager
                .recovered_high_watermark(&tp.topic, tp.partition);
            Partition::new(
                tp.clone(),
                self.config.broker_id,
                log,
                partition_config,
                hw,
                now,
            )
            .map_err(|e| e.to_string())
        };
        let started = std::time::Instant::now();
        let threads =
            self.config.recovery_threads_per_data_dir.max(1) * self.config.log_dirs.len().max(1);
        let opened = run_parallel(new, threads, |tp| {
            if self.stopping() {
                return Err("the broker is stopping".to_string());
            }
            open(tp)
        });
        let elapsed_ms = started.elapsed().as_millis() as u64;
        if new.len() > LOG_EACH_UP_TO {
            info!(
                partitions = new.len(),
                threads, elapsed_ms, "opened partition logs"
            );
        } else {
            for tp in new {
                info!(topic = %tp.topic, partition = tp.partition, "opened partition log");
            }
        }
        let epoch = self.broker_epoch.load(Ordering::Relaxed);
        for (tp, result) in new.iter().zip(opened) {
            let mut partition = match result {
                Ok(p) => p,
                Err(e) => {
                    warn!(topic = %tp.topic, partition = tp.partition, error = %e, "cannot open partition log");
                    continue;
                }
            };
            partition.set_local_broker_epoch(epoch);
            let hosted = Arc::new(HostedPartition::new((*tp).clone(), partition));
            self.partitions
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert((tp.topic_id, tp.partition), Arc::clone(&hosted));
            self.resume_move(&hosted);
        }
    }

    /// Applies the registrations of a delta's partitions, in parallel when they are many:
    /// a new leader epoch is recorded in each partition's `leader-epoch-checkpoint` with an
    /// fsync (as Kafka does), so one thread spent ~1 ms per partition waiting on the disk
    /// (10 s to lead 10,000 partitions after a restart); concurrent fsyncs share the
    /// device's flushes. Stops early when the broker is stopping. One line per partition
    /// for a few, one summary for many.
    fn apply_partitions(
        &self,
        assigned: &[(TopicIdPartition, &PartitionRegistration)],
        image: &MetadataImage,
        now: i64,
    ) {
        if assigned.is_empty() {
            return;
        }
        let started = std::time::Instant::now();
        let log_each = assigned.len() <= LOG_EACH_UP_TO;
        let threads = if assigned.len() >= PARALLEL_FROM {
            ROLE_CHANGE_THREADS
        } else {
            1
        };
        let results = run_parallel(assigned, threads, |(tp, registration)| {
            if self.stopping() {
                return Ok(Applied::Skipped);
            }
            self.apply_partition(tp, registration, image, now, log_each)
        });
        let (mut leaders, mut followers, mut skipped, mut failed) =
            (0usize, 0usize, 0usize, 0usize);
        for ((tp, _), result) in assigned.iter().zip(results) {
            match result {
                Ok(Applied::Leader) => leaders += 1,
                Ok(Applied::Follower) => followers += 1,
                Ok(Applied::Unchanged) => {}
                Ok(Applied::Skipped) => skipped += 1,
                Err(e) => {
                    failed += 1;
                    warn!(topic = %tp.topic, partition = tp.partition, error = %e, "cannot host partition");
                }
            }
        }
        if !log_each {
            info!(
                partitions = assigned.len(),
                became_leader = leaders,
                became_follower = followers,
                failed,
                skipped_stopping = skipped,
                threads,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "applied partition changes"
            );
        }
    }

    /// Applies a partition's registration as leader or follower; one not hosted yet is
    /// opened first.
    fn apply_partition(
        &self,
        tp: &TopicIdPartition,
        registration: &PartitionRegistration,
        image: &MetadataImage,
        now: i64,
        log_each: bool,
    ) -> Result<Applied, String> {
        let hosted = match self.partition(tp.topic_id, tp.partition) {
            Some(h) => h,
            None => {
                self.open_partitions(&[tp], image, now);
                self.partition(tp.topic_id, tp.partition)
                    .ok_or_else(|| "the partition's log cannot be opened".to_string())?
            }
        };
        let state = partition_state(registration);
        let mut p = hosted.lock();
        p.set_local_broker_epoch(self.broker_epoch.load(Ordering::Relaxed));
        let applied = if registration.leader == self.config.broker_id {
            let became = p.make_leader(&state, now).map_err(|e| e.to_string())?;
            let start_offset = p.log().log_end_offset();
            drop(p);
            if became {
                self.fetchers.remove_partition(tp);
                if log_each {
                    info!(topic = %tp.topic, partition = tp.partition, epoch = state.leader_epoch, start_offset, isr = ?state.isr, "became leader");
                }
                Applied::Leader
            } else {
                Applied::Unchanged
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
                if log_each {
                    info!(topic = %tp.topic, partition = tp.partition, epoch = state.leader_epoch, leader = registration.leader, "became follower");
                }
                Applied::Follower
            } else {
                Applied::Unchanged
            }
        };
        hosted.changed.notify_waiters();
        Ok(applied)
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
        let future = hosted.lock().take_future_log();
        if let Some(future) = future {
            let path = future.dir().to_path_buf();
            drop(future);
            if let Err(e) = self.log_manager.delete_dir(&path) {
                warn!(path = %path.display(), error = %e, "deleting a partition's future log failed");
            }
        }
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
        // A data partition's leader may hold cleaned segments from any time its topic was
        // compacted: a follower copies their gaps whatever the policy is now.
        let mut log = LogConfig {
            offset_gaps: true,
            ..LogConfig::default()
        };
        for &key in LogConfig::KEYS {
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
