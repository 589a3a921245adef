//! Where partition logs live on disk (Kafka's `LogManager`): one directory per partition,
//! `<topic>-<partition>/`, in one of `log.dirs`, with Kafka's `partition.metadata` file
//! naming the topic id (so a topic deleted and created again under the same name is told
//! apart from the old one's leftovers); each log dir's `replication-offset-checkpoint`,
//! `log-start-offset-checkpoint` and `recovery-point-offset-checkpoint` (written at
//! O(changed) per interval through each log's [`crate::checkpoint::PartitionOffsets`]) hold
//! the high watermarks, log start offsets and recovery points, so a restarted broker serves
//! what was committed at once and recovers only what was not flushed; each log dir's
//! `cleaner-offset-checkpoint` holds where each compacted log's dirty section starts (all in
//! Kafka's offset-checkpoint format, [`crate::checkpoint`]).
//!
//! Cost per partition is constant: the log dirs are listed once, at [`LogManager::open`],
//! and from then on the manager knows in memory which partition (and future) directory is
//! in which dir with which topic id, so creating a log probes nothing and lists nothing,
//! and the dir for a new one (the one holding the fewest partitions, as Kafka picks, and not
//! cordoned: `cordoned.log.dirs`, KIP-1066) is chosen from counts.
//!
//! `future.rs`: the future logs of replicas moving between log dirs (AlterReplicaLogDirs,
//! Kafka's `<topic>-<partition>.<id>-future` directories), the swap that replaces a current
//! log by its future one, and each log dir's disk space (DescribeLogDirs).

mod future;

pub use self::future::{absolute_path, disk_space, parse_future_dir_name, FUTURE_DIR_SUFFIX};

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::checkpoint::{self, CheckpointKind, Checkpoints, OffsetCheckpoint};
use crate::log_dir_failure::LogDirFailureChannel;
use crate::{Log, LogConfig};
use kraftd_protocol::Uuid;
use tracing::{debug, warn};

/// Kafka's file naming the topic id inside a partition directory.
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";
/// Kafka's per-log-dir log-cleaner checkpoint: the first dirty offset of each compacted log.
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";
/// Suffix of a partition directory scheduled for deletion (Kafka's `-delete`).
const DELETE_SUFFIX: &str = "-delete";
/// The metadata log's topic. Its directory (`__cluster_metadata-0`) sits among the
/// partitions in the metadata log dir, with a `partition.metadata` when Kafka wrote it, but
/// belongs to Raft, not to this manager: Kafka's `LogManager.loadLogs` skips it too. Taken
/// for a partition, it would be a stray one (no topic in the image has its id) and deleted
/// under the running Raft log.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// Why a log could not be opened, created or removed.
#[derive(Debug, thiserror::Error)]
pub enum LogManagerError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("log {path}: {source}")]
    Log {
        path: PathBuf,
        source: crate::LogError,
    },
    #[error("no log directory configured")]
    NoLogDirs,
    /// The log dir failed (an I/O error took it offline): nothing is opened or created in
    /// it (Kafka's KafkaStorageException).
    #[error("log directory {dir} is offline")]
    LogDirOffline { dir: PathBuf },
}

/// `(topic, partition)`.
type Key = (String, i32);

/// What the manager knows of one log dir's contents.
#[derive(Debug, Default)]
struct DirIndex {
    /// Partition directories (those holding a `partition.metadata`, or created here), with
    /// the topic id it names (None when unreadable).
    partitions: HashMap<Key, Option<Uuid>>,
    /// Future log directories: their path and topic id.
    futures: HashMap<Key, (PathBuf, Option<Uuid>)>,
}

/// How [`LogManager::open_with`] opens the logs.
#[derive(Debug, Clone, Default)]
pub struct LogManagerOptions {
    /// Every log dir held the clean-shutdown marker (KIP-966) at start: logs are opened
    /// trusting their segments ([`Log::open_after_clean_shutdown`]).
    pub clean_shutdown: bool,
    /// Log dirs offline from the start (their `meta.properties` unreadable, or the path
    /// not a directory: Kafka's `initialOfflineDirs`), with why: neither created, listed
    /// nor written to; nothing is opened in them.
    pub offline_dirs: Vec<(PathBuf, String)>,
}

/// The partition directories of one broker.
#[derive(Debug)]
pub struct LogManager {
    dirs: Vec<PathBuf>,
    options: LogManagerOptions,
    /// By position in `dirs`.
    index: Mutex<Vec<DirIndex>>,
    checkpoints: Checkpoints,
    /// Partition directories still holding the `log-start-offset` file older kraftd wrote
    /// in each: removed once the dir's `log-start-offset-checkpoint` holds their value.
    legacy_start_files: Mutex<Vec<PathBuf>>,
    /// Where a replica not hosted yet is to be created (AlterReplicaLogDirs before the
    /// replica exists: Kafka's `preferredLogDirs`), by (topic, partition).
    preferred_dirs: Mutex<BTreeMap<(String, i32), PathBuf>>,
    /// Where an I/O error on a log dir takes it offline; every log opened here reports
    /// to it.
    failure: Arc<LogDirFailureChannel>,
    /// The cordoned log dirs (`cordoned.log.dirs`, KIP-1066; Kafka's `cordonedLogDirs`),
    /// by position in `dirs`: no new partition is created in them while another online
    /// dir is not cordoned. Replaced whole when the setting changes.
    cordoned: Mutex<Vec<bool>>,
}

impl LogManager {
    /// [`LogManager::open_with`] after an unclean shutdown (or the first start).
    pub fn open(dirs: Vec<PathBuf>) -> Result<LogManager, LogManagerError> {
        Self::open_with(dirs, LogManagerOptions::default())
    }

    /// Takes `log.dirs` (created if missing), lists each once (partition and future
    /// directories with their topic ids) and reads their offset checkpoints; leftovers of
    /// interrupted deletions are removed. The dirs of `options.offline_dirs` are left
    /// alone and offline from the start.
    pub fn open_with(
        dirs: Vec<PathBuf>,
        options: LogManagerOptions,
    ) -> Result<LogManager, LogManagerError> {
        if dirs.is_empty() {
            return Err(LogManagerError::NoLogDirs);
        }
        let failure = Arc::new(LogDirFailureChannel::new());
        let mut index = Vec::with_capacity(dirs.len());
        for dir in &dirs {
            if let Some((_, why)) = options.offline_dirs.iter().find(|(d, _)| d == dir) {
                failure.add_offline_at_start(dir, why);
                index.push(DirIndex::default());
                continue;
            }
            fs::create_dir_all(dir).map_err(|source| LogManagerError::Io {
                op: "create",
                path: dir.clone(),
                source,
            })?;
            index.push(scan_dir(dir));
        }
        let checkpoints = Checkpoints::load(&dirs, |d| failure.is_offline(d));
        let dirs_len = dirs.len();
        Ok(LogManager {
            dirs,
            options,
            index: Mutex::new(index),
            checkpoints,
            legacy_start_files: Mutex::new(Vec::new()),
            preferred_dirs: Mutex::new(BTreeMap::new()),
            failure,
            cordoned: Mutex::new(vec![false; dirs_len]),
        })
    }

    /// Cordons exactly `cordoned` among the log dirs (Kafka's `updateCordonedLogDirs`); a
    /// path that is not one of them is ignored (the caller checked the setting).
    pub fn set_cordoned_dirs(&self, cordoned: &[PathBuf]) {
        let flags: Vec<bool> = self.dirs.iter().map(|d| cordoned.contains(d)).collect();
        *self.cordoned.lock().unwrap_or_else(|p| p.into_inner()) = flags;
    }

    /// Whether `dir` is cordoned: it takes no new partition.
    pub fn is_cordoned(&self, dir: &Path) -> bool {
        let cordoned = self.cordoned.lock().unwrap_or_else(|p| p.into_inner());
        self.dir_index_of(dir)
            .is_some_and(|i| cordoned.get(i).copied().unwrap_or(false))
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The channel the logs opened here report their log dir's I/O errors to.
    pub fn failure_channel(&self) -> &Arc<LogDirFailureChannel> {
        &self.failure
    }

    /// Whether some log dir is offline (failed, or offline from the start).
    pub fn has_offline_dirs(&self) -> bool {
        self.dirs.iter().any(|d| self.failure.is_offline(d))
    }

    /// Whether a log of the partition is in one of the online log dirs (listed at open or
    /// created since).
    pub fn has_log(&self, topic: &str, partition: i32) -> bool {
        let key = (topic.to_string(), partition);
        self.index().iter().any(|d| d.partitions.contains_key(&key))
    }

    /// [`LogManagerError::LogDirOffline`] when `dir` has failed.
    fn check_online(&self, dir: &Path) -> Result<(), LogManagerError> {
        if self.failure.is_offline(dir) {
            return Err(LogManagerError::LogDirOffline {
                dir: dir.to_path_buf(),
            });
        }
        Ok(())
    }

    fn index(&self) -> MutexGuard<'_, Vec<DirIndex>> {
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn dir_index_of(&self, dir: &Path) -> Option<usize> {
        self.dirs.iter().position(|d| d == dir)
    }

    /// The HW the checkpoint held for a partition at start (0 when none).
    pub fn recovered_high_watermark(&self, topic: &str, partition: i32) -> i64 {
        self.checkpoints
            .stored_anywhere(
                CheckpointKind::HighWatermark,
                &(topic.to_string(), partition),
            )
            .unwrap_or(0)
    }

    /// Opens the partition's log where it already is, or creates it in the log dir an
    /// AlterReplicaLogDirs asked for, else in the log dir holding the fewest partitions.
    /// A future log left complete by a swap a crash interrupted (the current directory was
    /// already renamed for deletion) becomes the current one. A directory of the same name
    /// whose `partition.metadata` names another topic id belongs to a deleted topic and is
    /// removed first. An existing log is opened trusting its segments after a clean
    /// shutdown, else recovering only what lies past its checkpointed recovery point. The
    /// log stores its recovery point and log start in the dir's checkpoints from then on.
    /// Safe to call from several threads at once for different partitions.
    pub fn get_or_create(
        &self,
        topic: &str,
        topic_id: Uuid,
        partition: i32,
        config: LogConfig,
        now_ms: i64,
    ) -> Result<Log, LogManagerError> {
        let key = (topic.to_string(), partition);
        let name = partition_dir_name(topic, partition);
        let found = {
            let index = self.index();
            index
                .iter()
                .position(|d| d.partitions.contains_key(&key))
                .map(|i| (i, index[i].partitions[&key]))
        };
        let mut existing = match found {
            Some((i, Some(id))) if id != topic_id => {
                let path = self.dirs[i].join(&name);
                warn!(path = %path.display(), found = %id, expected = %topic_id,
                    "partition directory belongs to another incarnation of the topic; removing it");
                self.delete_dir(&path)?;
                None
            }
            Some((i, id)) => Some((i, id.is_some())),
            None => None,
        };
        if existing.is_none() {
            if let Some(path) = self.promote_orphan_future(topic, topic_id, partition)? {
                let i = path
                    .parent()
                    .and_then(|p| self.dir_index_of(p))
                    .unwrap_or(0);
                self.index()[i]
                    .partitions
                    .insert(key.clone(), Some(topic_id));
                existing = Some((i, true));
            }
        }
        let (dir, path, log) = match existing {
            Some((i, has_id)) => {
                self.check_online(&self.dirs[i])?;
                let path = self.dirs[i].join(&name);
                if !has_id {
                    write_partition_metadata(&path, topic_id)?;
                    self.index()[i]
                        .partitions
                        .insert(key.clone(), Some(topic_id));
                }
                let log = self.open_existing(i, &key, &path, config, now_ms)?;
                (i, path, log)
            }
            None => {
                // The dir is chosen and the partition counted in it at once (Kafka creates
                // logs under its `logCreationOrDeletionLock`): partitions of one delta are
                // opened in parallel and would otherwise all see the same counts and go
                // to the same dir. Uncounted again if the creation fails.
                let i = {
                    let mut index = self.index();
                    let i = self.dir_for_new(&index, topic, partition);
                    index[i].partitions.insert(key.clone(), Some(topic_id));
                    i
                };
                let created = self.check_online(&self.dirs[i]).and_then(|()| {
                    let path = self.dirs[i].join(&name);
                    match fs::create_dir(&path) {
                        Ok(()) => {}
                        // A directory without a `partition.metadata` (not indexed): take it.
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(source) => {
                            return Err(LogManagerError::Io {
                                op: "create",
                                path,
                                source,
                            })
                        }
                    }
                    write_partition_metadata(&path, topic_id)?;
                    Ok(path)
                });
                let path = match created {
                    Ok(path) => path,
                    Err(e) => {
                        self.index()[i].partitions.remove(&key);
                        return Err(e);
                    }
                };
                // Stale entries of an earlier log of the same name must not be taken for
                // this one's.
                self.checkpoints.forget(i, topic, partition);
                debug!(path = %path.display(), %topic_id, "created partition log");
                let log =
                    Log::open(&path, config, now_ms).map_err(|source| LogManagerError::Log {
                        path: path.clone(),
                        source,
                    })?;
                (i, path, log)
            }
        };
        let mut log = log;
        log.set_failure_channel(Arc::clone(&self.failure));
        let tracker = self.checkpoints.track(topic, partition, dir);
        log.track_offsets(Arc::clone(&tracker));
        if log.had_legacy_start_file() {
            self.legacy_start_files
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(path);
        }
        Ok(log)
    }

    /// Has a log opened outside [`LogManager::get_or_create`] (a future log just swapped
    /// in) store its offsets in its log dir's checkpoints.
    pub fn track(&self, log: &mut Log, topic: &str, partition: i32) {
        log.set_failure_channel(Arc::clone(&self.failure));
        let Some(dir) = log.dir().parent().and_then(|p| self.dir_index_of(p)) else {
            return;
        };
        log.track_offsets(self.checkpoints.track(topic, partition, dir));
    }

    /// Opens a log found on disk: see [`LogManager::get_or_create`].
    fn open_existing(
        &self,
        dir: usize,
        key: &Key,
        path: &Path,
        config: LogConfig,
        now_ms: i64,
    ) -> Result<Log, LogManagerError> {
        let stored_start = self.checkpoints.stored(dir, CheckpointKind::LogStart, key);
        let opened = if self.options.clean_shutdown {
            Log::open_after_clean_shutdown(path, config, now_ms)
        } else {
            match self
                .checkpoints
                .stored(dir, CheckpointKind::RecoveryPoint, key)
            {
                Some(rp) => Log::open_from_recovery_point(path, config, now_ms, rp),
                None => Log::open(path, config, now_ms),
            }
        };
        let mut log = opened.map_err(|source| LogManagerError::Log {
            path: path.to_path_buf(),
            source,
        })?;
        if let Some(start) = stored_start {
            log.restore_log_start_offset(start)
                .map_err(|source| LogManagerError::Log {
                    path: path.to_path_buf(),
                    source,
                })?;
        }
        Ok(log)
    }

    /// Every partition directory on disk: (path, topic, partition, topic id from
    /// `partition.metadata` if readable). The ReplicaManager compares them with the first
    /// metadata image to find stray replicas (a topic deleted while the broker was down).
    pub fn partition_dirs(&self) -> Vec<(PathBuf, String, i32, Option<Uuid>)> {
        let index = self.index();
        let mut out = Vec::new();
        for (dir, d) in self.dirs.iter().zip(index.iter()) {
            for ((topic, partition), id) in &d.partitions {
                out.push((
                    dir.join(partition_dir_name(topic, *partition)),
                    topic.clone(),
                    *partition,
                    *id,
                ));
            }
        }
        out
    }

    /// Removes a partition's directory (topic deleted, replica moved away, stray): renamed
    /// to `...-delete` first, so a crash midway leaves nothing that looks like live data.
    /// Its `Log` may still be held elsewhere a moment longer; open files stay readable
    /// until closed. Its checkpoint entries go too.
    pub fn delete_dir(&self, path: &Path) -> Result<(), LogManagerError> {
        self.unindex(path);
        remove_partition_dir(path)
    }

    /// Forgets a partition or future directory at `path` (deleted or renamed).
    fn unindex(&self, path: &Path) {
        let Some(i) = path.parent().and_then(|p| self.dir_index_of(p)) else {
            return;
        };
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            return;
        };
        if let Some(key) = parse_future_dir_name(&name) {
            let mut index = self.index();
            if index[i].futures.get(&key).is_some_and(|(p, _)| p == path) {
                index[i].futures.remove(&key);
            }
        } else if let Some(key) = parse_partition_dir_name(&name) {
            self.index()[i].partitions.remove(&key);
            self.checkpoints.forget(i, &key.0, key.1);
        }
    }

    /// Writes the `kind` checkpoint file of every log dir one of whose partitions changed it
    /// since it was last written (and of no other); returns how many files were written.
    /// After the log start offsets are written, the `log-start-offset` files older kraftd
    /// kept in partition directories are removed.
    pub fn write_checkpoints(&self, kind: CheckpointKind) -> Result<usize, LogManagerError> {
        let written = self
            .checkpoints
            .write(&self.dirs, kind, &self.failure)
            .map_err(|source| LogManagerError::Log {
                path: PathBuf::from(kind.file_name()),
                source,
            })?;
        if kind == CheckpointKind::LogStart {
            let legacy = std::mem::take(
                &mut *self
                    .legacy_start_files
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()),
            );
            for dir in legacy {
                crate::log::remove_legacy_start_file(&dir);
            }
        }
        Ok(written)
    }

    /// Writes all three offset checkpoints where anything changed (clean shutdown).
    pub fn write_all_checkpoints(&self) -> Result<(), LogManagerError> {
        for kind in CheckpointKind::ALL {
            self.write_checkpoints(kind)?;
        }
        Ok(())
    }

    /// How many times this process wrote `kind`'s file in the log dir `dir`.
    pub fn checkpoint_writes(&self, dir: &Path, kind: CheckpointKind) -> u64 {
        self.dir_index_of(dir)
            .map_or(0, |i| self.checkpoints.writes_of(i, kind))
    }

    /// How many `kind` checkpoint files this process wrote in all.
    pub fn total_checkpoint_writes(&self, kind: CheckpointKind) -> u64 {
        self.checkpoints.total_writes(kind)
    }

    /// Every log dir's `cleaner-offset-checkpoint` as read now: (topic, partition) → first
    /// dirty offset. A partition missing from it is cleaned from its log start.
    pub fn read_cleaner_checkpoints(&self) -> OffsetCheckpoint {
        let mut out = OffsetCheckpoint::new();
        for dir in &self.dirs {
            out.extend(checkpoint::read(&dir.join(CLEANER_OFFSET_CHECKPOINT)));
        }
        out
    }

    /// Rewrites every log dir's `cleaner-offset-checkpoint` from `offsets` ((topic,
    /// partition, partition directory, first dirty offset)); each entry goes to the log dir
    /// holding its partition directory. The owner passes every compacted partition, since a
    /// file is replaced whole (Kafka's `updateCheckpoints` merges into what it read).
    pub fn checkpoint_cleaner_offsets(
        &self,
        offsets: &[(String, i32, PathBuf, i64)],
    ) -> Result<(), LogManagerError> {
        for dir in &self.dirs {
            if self.failure.is_offline(dir) {
                continue;
            }
            let path = dir.join(CLEANER_OFFSET_CHECKPOINT);
            let mine = offsets
                .iter()
                .filter(|(_, _, p, _)| p.parent() == Some(dir.as_path()))
                .map(|(t, p, _, o)| (t.as_str(), *p, *o));
            self.failure
                .report(dir, checkpoint::write(&path, mine))
                .map_err(|source| LogManagerError::Log { path, source })?;
        }
        Ok(())
    }

    /// The dir a new partition goes to: the one an AlterReplicaLogDirs named, else the
    /// online, not cordoned one holding the fewest partitions (from the counts in memory).
    /// As Kafka's `nextLogDirs`: a broker with one online dir uses it, cordoned or not, and
    /// one whose online dirs are all cordoned uses the first (the controller may have
    /// placed a replica here just before the last dir was cordoned).
    fn dir_for_new(&self, index: &[DirIndex], topic: &str, partition: i32) -> usize {
        if let Some(preferred) = self.take_preferred_dir(topic, partition) {
            if let Some(i) = self.dir_index_of(&preferred) {
                return i;
            }
        }
        // Only online dirs take new partitions (Kafka's `nextLogDirs` lists live dirs).
        let online: Vec<usize> = (0..self.dirs.len())
            .filter(|&i| !self.failure.is_offline(&self.dirs[i]))
            .collect();
        let cordoned = self
            .cordoned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        online
            .iter()
            .copied()
            .filter(|&i| online.len() == 1 || !cordoned.get(i).copied().unwrap_or(false))
            .min_by_key(|&i| index[i].partitions.len())
            .or_else(|| online.first().copied())
            .unwrap_or(0)
    }
}

/// Lists one log dir: partition directories (with their topic ids) and future ones;
/// `-delete` leftovers are removed.
fn scan_dir(dir: &Path) -> DirIndex {
    let mut out = DirIndex::default();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.ends_with(DELETE_SUFFIX) {
            let _ = fs::remove_dir_all(&path);
        } else if let Some(key) = parse_future_dir_name(&name) {
            let id = read_partition_metadata(&path);
            out.futures.insert(key, (path, id));
        } else if let Some(key) = parse_partition_dir_name(&name) {
            if key.0 == METADATA_TOPIC {
                continue;
            }
            match fs::read_to_string(path.join(PARTITION_METADATA_FILE)) {
                Ok(text) => {
                    out.partitions.insert(key, parse_partition_metadata(&text));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(_) => {
                    out.partitions.insert(key, None);
                }
            }
        }
    }
    out
}

/// `(topic, partition)` of a `<topic>-<partition>` directory name.
fn parse_partition_dir_name(name: &str) -> Option<Key> {
    let (topic, partition) = name.rsplit_once('-')?;
    let partition = partition.parse::<i32>().ok()?;
    (!topic.is_empty() && partition >= 0).then(|| (topic.to_string(), partition))
}

/// Kafka's directory name for a partition.
pub fn partition_dir_name(topic: &str, partition: i32) -> String {
    format!("{topic}-{partition}")
}

fn read_partition_metadata(dir: &Path) -> Option<Uuid> {
    parse_partition_metadata(&fs::read_to_string(dir.join(PARTITION_METADATA_FILE)).ok()?)
}

fn parse_partition_metadata(text: &str) -> Option<Uuid> {
    text.lines()
        .find_map(|l| l.strip_prefix("topic_id:"))
        .and_then(|v| Uuid::from_base64(v.trim()))
}

/// Writes `partition.metadata` (the callers know it is missing or names another id).
fn write_partition_metadata(dir: &Path, topic_id: Uuid) -> Result<(), LogManagerError> {
    let path = dir.join(PARTITION_METADATA_FILE);
    let text = format!("version: 0\ntopic_id: {}\n", topic_id.to_base64());
    crate::fsutil::atomic_write(&path, text.as_bytes())
        .map_err(|source| LogManagerError::Log { path, source })
}

fn remove_partition_dir(path: &Path) -> Result<(), LogManagerError> {
    let mut doomed = path.as_os_str().to_owned();
    doomed.push(format!(".{}{DELETE_SUFFIX}", std::process::id()));
    let doomed = PathBuf::from(doomed);
    fs::rename(path, &doomed).map_err(|source| LogManagerError::Io {
        op: "rename",
        path: path.to_path_buf(),
        source,
    })?;
    fs::remove_dir_all(&doomed).map_err(|source| LogManagerError::Io {
        op: "remove",
        path: doomed,
        source,
    })
}

#[cfg(test)]
mod tests;
