//! Committed metadata on the data plane (Kafka's `ReplicaManager.applyDelta`): partitions
//! opened and made leader or follower, moved away or deleted, stray logs removed, topic
//! configs applied; the [`ReplicaManagerPublisher`] that feeds it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::replica::fetch_session::ChangeNotify;
use kraftd_controller::image::{ConfigResourceType, PartitionRegistration};
use kraftd_controller::publisher::MetadataPublisher;
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_log::clock::unix_ms;
use kraftd_log::LogConfig;
use kraftd_protocol::Uuid;
use tracing::{info, warn};

use super::{HostedPartition, ReplicaManager};
use crate::kafka_apis::describe_configs::effective_topic_configs;
use crate::replica::partition::{Partition, PartitionConfig, PartitionState};
use crate::replica::TopicIdPartition;

impl ReplicaManager {
    /// Applies what a committed metadata delta changed (Kafka's `applyDelta`), in time
    /// proportional to what it changed, not to the partitions hosted: deleted topics are
    /// looked up by the partitions the previous image gave them, changed ones by the
    /// partitions the delta changed. Partitions new to this broker (a creation, or every
    /// partition at the first image after a restart) are opened in parallel,
    /// `num.recovery.threads.per.data.dir` threads per log dir (Kafka's log loading).
    pub fn apply_delta(&self, delta: &MetadataDelta, image: &MetadataImage) {
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
                let tp = TopicIdPartition {
                    topic_id,
                    topic: topic.name.clone(),
                    partition: index,
                };
                if registration.replicas.contains(&local) {
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
        for (tp, registration) in &assigned {
            if let Err(e) = self.apply_partition(tp, registration, image, now) {
                warn!(topic = %tp.topic, partition = tp.partition, error = %e, "cannot host partition");
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
        let threads = (self.config.recovery_threads_per_data_dir.max(1)
            * self.config.log_dirs.len().max(1))
        .min(new.len());
        let opened: Vec<Result<Partition, String>> = if threads <= 1 {
            new.iter().map(|tp| open(tp)).collect()
        } else {
            let next = AtomicUsize::new(0);
            let slots: Vec<Mutex<Option<Result<Partition, String>>>> =
                new.iter().map(|_| Mutex::new(None)).collect();
            std::thread::scope(|scope| {
                for _ in 0..threads {
                    scope.spawn(|| loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(tp) = new.get(i) else { break };
                        *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(open(tp));
                    });
                }
            });
            slots
                .into_iter()
                .map(|m| {
                    m.into_inner()
                        .unwrap_or_else(|p| p.into_inner())
                        .unwrap_or_else(|| Err("not opened".into()))
                })
                .collect()
        };
        let elapsed_ms = started.elapsed().as_millis() as u64;
        if new.len() >= 100 {
            info!(
                partitions = new.len(),
                threads, elapsed_ms, "opened partition logs"
            );
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
            let hosted = Arc::new(HostedPartition {
                tp: (*tp).clone(),
                state: Mutex::new(partition),
                changed: Arc::new(ChangeNotify::new((*tp).clone())),
            });
            self.partitions
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert((tp.topic_id, tp.partition), Arc::clone(&hosted));
            self.resume_move(&hosted);
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
    ) -> Result<(), String> {
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
