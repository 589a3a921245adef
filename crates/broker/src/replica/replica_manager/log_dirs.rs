//! Log directories (Kafka's `ReplicaManager.describeLogDirs`/`alterReplicaLogDirs` and its
//! `ReplicaAlterLogDirsThread`): what each of `log.dirs` holds (and, from metadata.version
//! 4.3-IV0, whether it is cordoned), and moving a replica to another of them (never into a
//! cordoned one: INVALID_REPLICA_ASSIGNMENT, KIP-1066).
//!
//! A move creates a future log in the target dir (`LogManager::create_future`) and starts
//! one copier task for the partition: it plans a read of the current log from the future
//! log's end under the partition's lock, reads outside it, and appends under it again
//! (dropped if the future log was cut meanwhile). When the future log's end equals the
//! current log's — checked under the same lock every produce and replica append takes —
//! it is closed, swapped in by renames, reopened and put in place of the current log, all
//! before the lock is released; the old directory is deleted afterwards. Reads planned on
//! the old log keep their open files, or retry on the new log. A future log found at start
//! (the broker stopped mid-move) is opened when the partition is and the copier resumes.
//!
//! Once the move is done the new directory is reported to the controller through the
//! [`DirectoryEventHandler`](crate::replica::directory_events::DirectoryEventHandler)
//! (KIP-858 AssignReplicasToDirs, the server's `AssignmentsManager`), so the partition's
//! `Directories` in the metadata follow the replica. Kafka reports the target first and
//! swaps only once the controller accepted it; here the swap comes first and the report
//! follows at once, so the metadata names the old directory for one round trip after the
//! move (a reader of the metadata sees a directory that the broker has just left, never
//! one it has not reached).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kraftd_controller::MetadataImage;
use kraftd_log::clock::unix_ms;
use kraftd_log::log_manager::{absolute_path, disk_space, LogManager};
use kraftd_log::LogError;
use kraftd_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kraftd_protocol::ErrorCode;
use tracing::{info, warn};

use super::ReplicaManager;
use crate::replica::partition::{FutureStep, HostedPartition, Partition, PartitionError};

/// Bytes the copier moves per step (the lock is held only to plan and to append).
const COPY_BYTES: usize = 1024 * 1024;
/// How long the copier waits for new data when it has nothing to copy.
const IDLE_WAIT: Duration = Duration::from_millis(200);
/// How long a copier over `replica.alter.log.dirs.io.max.bytes.per.second` waits before it
/// looks at the quota again.
const QUOTA_BACKOFF: Duration = Duration::from_millis(100);

/// One log of a log dir as DescribeLogDirs reports it.
struct DirLog {
    topic: String,
    partition: i32,
    size: i64,
    offset_lag: i64,
    is_future: bool,
}

impl ReplicaManager {
    /// Every configured log dir with its logs (those `filter` names, all when `None`),
    /// sizes, lags and disk space (Kafka's `describeLogDirs`). A dir that cannot be listed
    /// or measured answers KAFKA_STORAGE_ERROR.
    pub fn describe_log_dirs(
        &self,
        filter: Option<&BTreeSet<(String, i32)>>,
    ) -> Vec<DescribeLogDirsResult> {
        let mut by_dir: BTreeMap<std::path::PathBuf, Vec<DirLog>> = BTreeMap::new();
        for hosted in self.all_partitions() {
            let p = hosted.lock();
            let (topic, partition) = (hosted.tp.topic.clone(), hosted.tp.partition);
            let current = p.log();
            if let Some(parent) = current.dir().parent() {
                by_dir
                    .entry(parent.to_path_buf())
                    .or_default()
                    .push(DirLog {
                        topic: topic.clone(),
                        partition,
                        size: current.size_in_bytes() as i64,
                        offset_lag: (p.high_watermark() - current.log_end_offset()).max(0),
                        is_future: false,
                    });
            }
            if let Some(future) = p.future_log() {
                if let Some(parent) = future.dir().parent() {
                    by_dir
                        .entry(parent.to_path_buf())
                        .or_default()
                        .push(DirLog {
                            topic,
                            partition,
                            size: future.size_in_bytes() as i64,
                            offset_lag: current.log_end_offset() - future.log_end_offset(),
                            is_future: true,
                        });
                }
            }
        }
        let cordoned_supported = self
            .cache
            .image()
            .features
            .version()
            .is_cordoned_log_dirs_supported();
        self.log_manager
            .dirs()
            .iter()
            .map(|dir| {
                let log_dir = absolute_path(dir);
                let space = if self.log_manager.is_log_dir_online(dir) {
                    disk_space(dir).ok()
                } else {
                    None
                };
                let Some((total_bytes, usable_bytes)) = space else {
                    warn!(dir = %log_dir, "log dir offline: cannot describe it");
                    return DescribeLogDirsResult {
                        error_code: ErrorCode::KafkaStorageError.code(),
                        log_dir,
                        ..Default::default()
                    };
                };
                let mut topics: BTreeMap<String, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
                for log in by_dir.remove(dir.as_path()).unwrap_or_default() {
                    // Kafka lists every topic with a log here, its partitions filtered.
                    let partitions = topics.entry(log.topic.clone()).or_default();
                    if filter.is_none_or(|f| f.contains(&(log.topic, log.partition))) {
                        partitions.push(DescribeLogDirsPartition {
                            partition_index: log.partition,
                            partition_size: log.size,
                            offset_lag: log.offset_lag,
                            is_future_key: log.is_future,
                            ..Default::default()
                        });
                    }
                }
                DescribeLogDirsResult {
                    error_code: 0,
                    log_dir,
                    topics: topics
                        .into_iter()
                        .map(|(name, mut partitions)| {
                            partitions.sort_by_key(|p| (p.partition_index, p.is_future_key));
                            DescribeLogDirsTopic {
                                name,
                                partitions,
                                ..Default::default()
                            }
                        })
                        .collect(),
                    total_bytes,
                    usable_bytes,
                    // As Kafka: reported only from metadata.version 4.3-IV0 (KIP-1066).
                    is_cordoned: cordoned_supported && self.log_manager.is_cordoned(dir),
                    ..Default::default()
                }
            })
            .collect()
    }

    /// Moves one replica to the log dir whose absolute path is `path` (Kafka's
    /// `alterReplicaLogDirs`, one partition): NONE once the move started (or nothing is to
    /// move), else Kafka's per-partition error. A replica not hosted yet gets its dir
    /// remembered for its creation and REPLICA_NOT_AVAILABLE.
    pub fn alter_replica_log_dir(
        &self,
        image: &MetadataImage,
        topic: &str,
        partition: i32,
        path: &str,
    ) -> ErrorCode {
        let _serial = self.state_change.lock().unwrap_or_else(|p| p.into_inner());
        // Kafka's KAFKA-4893 limit: the future directory's name must fit a file name.
        if format!("{topic}-{partition}.{:032}-future", 0).len() > 255 {
            return ErrorCode::InvalidTopicException;
        }
        let Some(dir) = self.log_manager.log_dir_by_path(path) else {
            return ErrorCode::LogDirNotFound;
        };
        let dir = dir.to_path_buf();
        if !self.log_manager.is_log_dir_online(&dir) {
            return ErrorCode::KafkaStorageError;
        }
        // Kafka's "Log directory <dir> is cordoned" (KIP-1066).
        if self.log_manager.is_cordoned(&dir) {
            info!(topic, partition, dir = %dir.display(), "refusing a move into a cordoned log dir");
            return ErrorCode::InvalidReplicaAssignment;
        }
        let topic_id = image.topics.get_by_name(topic).map(|t| t.id);
        let hosted = topic_id.and_then(|id| self.partition(id, partition));
        if let Some(hosted) = &hosted {
            let mut p = hosted.lock();
            let future_dir = p
                .future_log()
                .and_then(|f| f.dir().parent().map(Path::to_path_buf));
            if future_dir.is_some_and(|f| f != dir) {
                info!(topic, partition, "cancelling the move to another log dir");
                if let Some(future) = p.take_future_log() {
                    let path = future.dir().to_path_buf();
                    drop(future);
                    drop(p);
                    if let Err(e) = self.log_manager.delete_dir(&path) {
                        warn!(path = %path.display(), error = %e, "deleting a cancelled future log failed");
                    }
                }
            }
        }
        let in_place = hosted.as_ref().is_some_and(|h| {
            let p = h.lock();
            let parent_is = |l: &kraftd_log::Log| l.dir().parent() == Some(dir.as_path());
            parent_is(p.log()) || p.future_log().is_some_and(parent_is)
        });
        if !in_place {
            self.log_manager
                .set_preferred_dir(topic, partition, dir.clone());
        }
        let (Some(topic_id), Some(hosted)) = (topic_id, hosted) else {
            let known = topic_id.is_some_and(|id| image.topics.partition(&id, partition).is_some());
            return if known {
                ErrorCode::ReplicaNotAvailable
            } else {
                ErrorCode::UnknownTopicOrPartition
            };
        };
        let mut p = hosted.lock();
        if p.log().dir().parent() == Some(dir.as_path()) || p.future_log().is_some() {
            return ErrorCode::None;
        }
        // Kafka creates no future log while any log dir is offline (it could otherwise end
        // with the partition's logs in two dirs).
        if let Some(offline) = self
            .log_manager
            .dirs()
            .iter()
            .find(|d| !self.log_manager.is_log_dir_online(d))
        {
            warn!(topic, partition, dir = %offline.display(), "log dir offline: no future log created");
            return ErrorCode::KafkaStorageError;
        }
        let now = unix_ms();
        let config = p.log().config().clone();
        let _ = self.log_manager.take_preferred_dir(topic, partition);
        let future = match self
            .log_manager
            .create_future(topic, topic_id, partition, &dir, config, now)
        {
            Ok(f) => f,
            Err(e) => {
                warn!(topic, partition, error = %e, "creating a future log failed");
                return ErrorCode::KafkaStorageError;
            }
        };
        if let Err(e) = p.set_future_log(future, now) {
            warn!(topic, partition, error = %e, "starting a move failed");
            return e.error_code();
        }
        drop(p);
        info!(topic, partition, dir = %dir.display(), "moving replica to another log dir");
        self.spawn_copier(hosted);
        ErrorCode::None
    }

    /// A future log left on disk by a move the broker was making when it stopped: opened
    /// beside the partition's log, and the copier resumes.
    pub(super) fn resume_move(&self, hosted: &Arc<HostedPartition>) {
        let tp = &hosted.tp;
        let Some(path) = self
            .log_manager
            .find_future(&tp.topic, tp.topic_id, tp.partition)
        else {
            return;
        };
        let mut p = hosted.lock();
        if p.future_log().is_some() {
            return;
        }
        let now = unix_ms();
        let failure = Arc::clone(self.log_manager.failure_channel());
        let opened = LogManager::open_future(&path, p.log().config().clone(), now)
            .map_err(|e| e.to_string())
            .and_then(|mut log| {
                log.set_failure_channel(failure);
                p.set_future_log(log, now).map_err(|e| e.to_string())
            });
        drop(p);
        match opened {
            Ok(()) => {
                info!(topic = %tp.topic, partition = tp.partition, path = %path.display(), "resuming a move to another log dir");
                self.spawn_copier(Arc::clone(hosted));
            }
            Err(e) => {
                warn!(path = %path.display(), error = %e, "a future log found at start cannot be opened; removing it");
                let _ = self.log_manager.delete_dir(&path);
            }
        }
    }

    fn spawn_copier(&self, hosted: Arc<HostedPartition>) {
        let Some(me) = self.me.upgrade() else { return };
        tokio::spawn(async move { me.copy_to_future(hosted).await });
    }

    /// The copier (Kafka's `ReplicaAlterLogDirsThread` for one partition).
    async fn copy_to_future(self: Arc<Self>, hosted: Arc<HostedPartition>) {
        let tp = hosted.tp.clone();
        loop {
            // Kafka's ReplicaAlterLogDirsThread fetches nothing while over
            // `replica.alter.log.dirs.io.max.bytes.per.second`.
            if self
                .replication_quotas
                .alter_log_dirs
                .is_quota_exceeded(unix_ms() as u64)
            {
                tokio::time::sleep(QUOTA_BACKOFF).await;
                continue;
            }
            let notified = Arc::clone(&hosted.changed).notified_owned();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let step = {
                let mut p = hosted.lock();
                match p.next_future_step(COPY_BYTES, unix_ms()) {
                    Ok(FutureStep::CaughtUp) => Err(self.swap_in_future(&mut p)),
                    other => Ok(other),
                }
            };
            let step = match step {
                Ok(step) => step,
                Err(swapped) => {
                    hosted.changed.notify_waiters();
                    match swapped {
                        Ok(doomed) => {
                            info!(topic = %tp.topic, partition = tp.partition, "replica moved to its new log dir");
                            self.report_moved_directory(&hosted);
                            let me = Arc::clone(&self);
                            let _ = tokio::task::spawn_blocking(move || {
                                if let Err(e) = me.log_manager.remove_doomed(&doomed) {
                                    warn!(error = %e, "deleting a moved replica's old log failed");
                                }
                            })
                            .await;
                        }
                        Err(e) => {
                            warn!(topic = %tp.topic, partition = tp.partition, error = %e, "swapping in the future log failed; the move is abandoned")
                        }
                    }
                    return;
                }
            };
            let (read, at) = match step {
                Ok(FutureStep::Gone) => return,
                // Swapped under the lock above.
                Ok(FutureStep::CaughtUp) => return,
                Ok(FutureStep::Copy { read, at }) => (read, at),
                Err(e) => {
                    self.abandon_move(&hosted, &e);
                    return;
                }
            };
            let read = tokio::task::spawn_blocking(move || read.execute()).await;
            let bytes = match read {
                Ok(Ok(r)) => r.bytes,
                Ok(Err(LogError::ConcurrentTruncation { .. })) => continue,
                Ok(Err(e)) => {
                    self.abandon_move(&hosted, &PartitionError::from(e));
                    return;
                }
                Err(_) => return,
            };
            if bytes.is_empty() {
                let _ = tokio::time::timeout(IDLE_WAIT, notified).await;
                continue;
            }
            let copied = bytes.len();
            let appended = hosted.lock().append_to_future(at, bytes, unix_ms());
            self.replication_quotas.alter_log_dirs.record_throttled(
                [(tp.topic.as_str(), tp.partition, copied)],
                unix_ms() as u64,
            );
            if let Err(e) = appended {
                self.abandon_move(&hosted, &e);
                return;
            }
        }
    }

    /// Reports a moved replica's new directory to the controller (Kafka's "Future replica
    /// promotion" assignment), when the metadata carries directories.
    fn report_moved_directory(&self, hosted: &HostedPartition) {
        let image = self.cache.image();
        if !image.features.version().is_directory_assignment_supported() {
            return;
        }
        let assigned = image
            .topics
            .partition(&hosted.tp.topic_id, hosted.tp.partition)
            .and_then(|r| r.directory(self.config.broker_id));
        let log_dir = hosted.lock().log().dir().to_path_buf();
        self.maybe_report_directory(hosted, &log_dir, assigned, "Future replica promotion");
    }

    /// Swaps the caught-up future log in, under the partition's lock; returns the old
    /// directory (renamed for deletion).
    fn swap_in_future(&self, p: &mut Partition) -> Result<std::path::PathBuf, String> {
        let current = p.log().dir().to_path_buf();
        let config = p.log().config().clone();
        let future = p.close_future_for_swap().map_err(|e| e.to_string())?;
        let (target, doomed) = match self.log_manager.swap_in_future(&current, &future) {
            Ok(renamed) => renamed,
            Err(e) => {
                // The current log stays; the copy is dropped (a later request starts over).
                let _ = self.log_manager.delete_dir(&future);
                return Err(e.to_string());
            }
        };
        let mut log = kraftd_log::Log::open_after_clean_shutdown(&target, config, unix_ms())
            .map_err(|e| format!("reopening {}: {e}", target.display()))?;
        let tp = p.tp().clone();
        self.log_manager.track(&mut log, &tp.topic, tp.partition);
        let old = p.replace_log(log, unix_ms()).map_err(|e| e.to_string())?;
        if let Err(e) = old.close() {
            warn!(error = %e, "closing the moved replica's old log failed");
        }
        Ok(doomed)
    }

    /// A storage failure while moving: the future log is dropped and deleted, the replica
    /// stays where it was.
    fn abandon_move(&self, hosted: &HostedPartition, error: &PartitionError) {
        warn!(topic = %hosted.tp.topic, partition = hosted.tp.partition, %error, "moving the replica failed; the move is abandoned");
        let future = hosted.lock().take_future_log();
        if let Some(future) = future {
            let path = future.dir().to_path_buf();
            drop(future);
            let _ = self.log_manager.delete_dir(&path);
        }
    }
}
