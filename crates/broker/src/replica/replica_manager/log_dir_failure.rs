//! A failed log dir (Kafka's `ReplicaManager.handleLogDirFailure`): the log layer's
//! [`LogDirFailureChannel`](kraftd_log::LogDirFailureChannel) names a dir an I/O error took
//! offline, and the broker stops serving every replica in it. Each such partition leaves the
//! hosted map for the offline set (Kafka's `HostedPartition.Offline`): produce, fetch and
//! the other partition requests are answered KAFKA_STORAGE_ERROR, its replica fetcher is
//! removed, requests waiting on it give up with the same error, and committed metadata no
//! longer opens it. A future log in the dir (a move under way) is dropped, the partition
//! staying where it was. The dir's `directory.id` goes to the [`DirectoryEventHandler`]
//! (the lifecycle manager reports it in every heartbeat's OfflineLogDirs, and the controller
//! moves leadership and ISR off the dir's replicas).
//!
//! As Kafka halts the broker, the broker stops when the failed dir holds the metadata log
//! or no log dir is left online, or when the dir has no `directory.id` to report it by;
//! here through the stop signal the server sets, which ends the process with that reason
//! (its clean-shutdown markers are written to online dirs only, so the next start recovers
//! the failed one).
//!
//! [`DirectoryEventHandler`]: crate::replica::directory_events::DirectoryEventHandler

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kraftd_log::log_manager::absolute_path;
use tracing::{error, warn};

use super::ReplicaManager;
use crate::replica::partition::HostedPartition;

impl ReplicaManager {
    /// Has the log layer's failed dirs handed to `handle_log_dir_failure` one at a time on
    /// the runtime (the channel's listener must not block: it runs inside a log operation,
    /// maybe under a partition's lock). Called once, from the background task's start; the
    /// queue holds at most one entry per log dir, each being added once.
    pub(super) fn watch_log_dir_failures(self: &Arc<Self>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<PathBuf>();
        let listener = Box::new(move |dir: PathBuf| {
            let _ = tx.send(dir);
        });
        if self
            .log_manager
            .failure_channel()
            .set_listener(listener)
            .is_err()
        {
            return;
        }
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(dir) = rx.recv().await {
                let Some(rm) = weak.upgrade() else { return };
                let _ = tokio::task::spawn_blocking(move || rm.handle_log_dir_failure(&dir)).await;
            }
        });
    }

    /// Stops serving the replicas in `dir`, which an I/O error took offline (see the
    /// module docs).
    pub fn handle_log_dir_failure(&self, dir: &Path) {
        let directory_id = self.config.directory_ids.get(dir).copied();
        warn!(dir = %dir.display(), ?directory_id, "stopping serving replicas in the failed log directory");
        let in_dir = |log: &kraftd_log::Log| log.dir().parent() == Some(dir);
        let (offline, futures_dropped) = {
            let _serial = self.state_change.lock().unwrap_or_else(|p| p.into_inner());
            let mut offline: Vec<Arc<HostedPartition>> = Vec::new();
            let mut futures_dropped = Vec::new();
            for hosted in self.all_partitions() {
                let mut p = hosted.lock();
                if in_dir(p.log()) {
                    p.stop_offline();
                    drop(p);
                    offline.push(hosted);
                } else if p.future_log().is_some_and(in_dir) {
                    // The copier stops once its future log is gone; the files stay for the
                    // dir's recovery, as Kafka's `removeFutureLocalReplica(deleteFromLogDir
                    // = false)`.
                    drop(p.take_future_log());
                    futures_dropped.push(hosted.tp.clone());
                }
            }
            {
                let mut partitions = self.partitions.write().unwrap_or_else(|p| p.into_inner());
                let mut offline_set = self
                    .offline_partitions
                    .write()
                    .unwrap_or_else(|p| p.into_inner());
                for hosted in &offline {
                    let key = (hosted.tp.topic_id, hosted.tp.partition);
                    partitions.remove(&key);
                    offline_set.insert(key);
                }
            }
            for hosted in &offline {
                self.fetchers.remove_partition(&hosted.tp);
                hosted.changed.notify_waiters();
            }
            (offline, futures_dropped)
        };
        warn!(
            dir = %dir.display(),
            partitions = ?offline.iter().map(|h| format!("{}-{}", h.tp.topic, h.tp.partition)).collect::<Vec<_>>(),
            moves_stopped = ?futures_dropped.iter().map(|tp| format!("{}-{}", tp.topic, tp.partition)).collect::<Vec<_>>(),
            "stopped fetchers and moves of the replicas in the failed log directory"
        );
        let channel = self.log_manager.failure_channel();
        let metadata_dir = self
            .config
            .metadata_log_dir
            .as_deref()
            .is_some_and(|m| absolute_path(m) == absolute_path(dir));
        if metadata_dir {
            self.stop_broker(format!(
                "Shutdown broker because the metadata log dir {} has failed",
                dir.display()
            ));
            return;
        }
        if self
            .log_manager
            .dirs()
            .iter()
            .all(|d| channel.is_offline(d))
        {
            self.stop_broker(format!(
                "Shutdown broker because all log dirs in {} have failed",
                self.log_manager
                    .dirs()
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            return;
        }
        match (directory_id, self.directory_events.get()) {
            (Some(id), Some(handler)) => handler.handle_failure(id),
            (None, _) => self.stop_broker(format!(
                "cannot report the failure of log dir {}: it has no directory id",
                dir.display()
            )),
            (Some(_), None) => {
                warn!(dir = %dir.display(), "no directory event handler: the failure is not reported")
            }
        }
        warn!(dir = %dir.display(), "stopped serving replicas in the failed log directory");
    }

    /// Whether this partition's replica was in a log dir that failed.
    pub fn is_partition_offline(&self, topic_id: kraftd_protocol::Uuid, partition: i32) -> bool {
        self.offline_partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&(topic_id, partition))
    }

    /// Asks the server to stop the broker (Kafka halts it), or logs it when no one listens.
    pub(super) fn stop_broker(&self, reason: String) {
        error!(%reason, "stopping the broker");
        match self.stop_signal.get() {
            Some(stop) => {
                stop.send_if_modified(|r| {
                    let first = r.is_none();
                    if first {
                        *r = Some(reason);
                    }
                    first
                });
            }
            None => error!("no stop signal set: the broker keeps running"),
        }
    }
}
