//! Committed metadata on the data plane (Kafka's `ReplicaManager.applyDelta`): partitions
//! opened and made leader or follower, moved away or deleted, stray logs removed, topic
//! configs applied; the [`ReplicaManagerPublisher`] that feeds it.

use std::sync::atomic::Ordering;
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
                    changed: Arc::new(ChangeNotify::new(tp.clone())),
                });
                self.partitions
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert((tp.topic_id, tp.partition), Arc::clone(&hosted));
                self.resume_move(&hosted);
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
