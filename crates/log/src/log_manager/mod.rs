//! Where partition logs live on disk (Kafka's `LogManager`): one directory per partition,
//! `<topic>-<partition>/`, in one of `log.dirs`, with Kafka's `partition.metadata` file
//! naming the topic id (so a topic deleted and created again under the same name is told
//! apart from the old one's leftovers), and each log dir's `replication-offset-checkpoint`
//! holding the high watermarks, so a restarted broker serves what was committed at once;
//! each log dir's `cleaner-offset-checkpoint` holds where each compacted log's dirty section
//! starts (both in Kafka's offset-checkpoint format, [`crate::checkpoint`]).
//!
//! `future.rs`: the future logs of replicas moving between log dirs (AlterReplicaLogDirs,
//! Kafka's `<topic>-<partition>.<id>-future` directories), the swap that replaces a current
//! log by its future one, and each log dir's disk space (DescribeLogDirs).

mod future;

pub use self::future::{absolute_path, disk_space, parse_future_dir_name, FUTURE_DIR_SUFFIX};

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::checkpoint::{self, OffsetCheckpoint};
use crate::{Log, LogConfig};
use kraftd_protocol::Uuid;
use tracing::{info, warn};

/// Kafka's file naming the topic id inside a partition directory.
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";
/// Kafka's per-log-dir high-watermark checkpoint.
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
/// Kafka's per-log-dir log-cleaner checkpoint: the first dirty offset of each compacted log.
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";
/// Suffix of a partition directory scheduled for deletion (Kafka's `-delete`).
const DELETE_SUFFIX: &str = "-delete";

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
}

/// The partition directories of one broker.
#[derive(Debug)]
pub struct LogManager {
    dirs: Vec<PathBuf>,
    /// High watermarks read from the checkpoints at start, by (topic, partition).
    recovered_hw: BTreeMap<(String, i32), i64>,
    /// Where a replica not hosted yet is to be created (AlterReplicaLogDirs before the
    /// replica exists: Kafka's `preferredLogDirs`), by (topic, partition).
    preferred_dirs: Mutex<BTreeMap<(String, i32), PathBuf>>,
}

impl LogManager {
    /// Takes `log.dirs` (created if missing) and reads their HW checkpoints; leftovers of
    /// interrupted deletions are removed.
    pub fn open(dirs: Vec<PathBuf>) -> Result<LogManager, LogManagerError> {
        if dirs.is_empty() {
            return Err(LogManagerError::NoLogDirs);
        }
        let mut recovered_hw = BTreeMap::new();
        for dir in &dirs {
            fs::create_dir_all(dir).map_err(|source| LogManagerError::Io {
                op: "create",
                path: dir.clone(),
                source,
            })?;
            recovered_hw.extend(checkpoint::read(&dir.join(REPLICATION_OFFSET_CHECKPOINT)));
            if let Ok(entries) = fs::read_dir(dir) {
                for entry in entries.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if name.ends_with(DELETE_SUFFIX) {
                        let _ = fs::remove_dir_all(entry.path());
                    }
                }
            }
        }
        Ok(LogManager {
            dirs,
            recovered_hw,
            preferred_dirs: Mutex::new(BTreeMap::new()),
        })
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The HW the checkpoint held for a partition at start (0 when none).
    pub fn recovered_high_watermark(&self, topic: &str, partition: i32) -> i64 {
        self.recovered_hw
            .get(&(topic.to_string(), partition))
            .copied()
            .unwrap_or(0)
    }

    /// Opens the partition's log where it already is, or creates it in the log dir an
    /// AlterReplicaLogDirs asked for, else in the log dir holding the fewest partitions.
    /// A future log left complete by a swap a crash interrupted (the current directory was
    /// already renamed for deletion) becomes the current one. A directory of the same name whose `partition.metadata` names
    /// another topic id belongs to a deleted topic and is removed first.
    pub fn get_or_create(
        &self,
        topic: &str,
        topic_id: Uuid,
        partition: i32,
        config: LogConfig,
        now_ms: i64,
    ) -> Result<Log, LogManagerError> {
        let name = partition_dir_name(topic, partition);
        let mut found = None;
        for dir in &self.dirs {
            let path = dir.join(&name);
            if !path.is_dir() {
                continue;
            }
            match read_partition_metadata(&path) {
                Some(id) if id != topic_id => {
                    warn!(path = %path.display(), found = %id, expected = %topic_id,
                        "partition directory belongs to another incarnation of the topic; removing it");
                    remove_partition_dir(&path)?;
                }
                _ => {
                    found = Some(path);
                    break;
                }
            }
        }
        if found.is_none() {
            found = self.promote_orphan_future(topic, topic_id, partition)?;
        }
        let path = match found {
            Some(p) => p,
            None => {
                let preferred = self.take_preferred_dir(topic, partition);
                let dir = preferred
                    .as_deref()
                    .unwrap_or_else(|| self.least_loaded_dir());
                let path = dir.join(&name);
                fs::create_dir_all(&path).map_err(|source| LogManagerError::Io {
                    op: "create",
                    path: path.clone(),
                    source,
                })?;
                info!(path = %path.display(), %topic_id, "created partition log");
                path
            }
        };
        write_partition_metadata(&path, topic_id)?;
        Log::open(&path, config, now_ms).map_err(|source| LogManagerError::Log { path, source })
    }

    /// Every partition directory on disk: (path, topic, partition, topic id from
    /// `partition.metadata` if readable). The ReplicaManager compares them with the first
    /// metadata image to find stray replicas (a topic deleted while the broker was down).
    pub fn partition_dirs(&self) -> Vec<(PathBuf, String, i32, Option<Uuid>)> {
        let mut out = Vec::new();
        for dir in &self.dirs {
            let Ok(entries) = fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if !path.join(PARTITION_METADATA_FILE).exists() {
                    continue;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some((topic, partition)) = name.rsplit_once('-') else {
                    continue;
                };
                let Ok(partition) = partition.parse::<i32>() else {
                    continue;
                };
                let id = read_partition_metadata(&path);
                out.push((path, topic.to_string(), partition, id));
            }
        }
        out
    }

    /// Removes a partition's directory (topic deleted, replica moved away, stray): renamed
    /// to `...-delete` first, so a crash midway leaves nothing that looks like live data.
    /// Its `Log` may still be held elsewhere a moment longer; open files stay readable
    /// until closed.
    pub fn delete_dir(&self, path: &Path) -> Result<(), LogManagerError> {
        remove_partition_dir(path)
    }

    /// Writes every log dir's HW checkpoint from `hws` ((topic, partition) → (dir, HW)).
    pub fn checkpoint_high_watermarks(
        &self,
        hws: &[(String, i32, PathBuf, i64)],
    ) -> Result<(), LogManagerError> {
        self.write_checkpoints(REPLICATION_OFFSET_CHECKPOINT, hws)
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
        self.write_checkpoints(CLEANER_OFFSET_CHECKPOINT, offsets)
    }

    fn write_checkpoints(
        &self,
        file: &str,
        entries: &[(String, i32, PathBuf, i64)],
    ) -> Result<(), LogManagerError> {
        for dir in &self.dirs {
            let path = dir.join(file);
            let mine = entries
                .iter()
                .filter(|(_, _, p, _)| p.parent() == Some(dir.as_path()))
                .map(|(t, p, _, o)| (t.as_str(), *p, *o));
            checkpoint::write(&path, mine)
                .map_err(|source| LogManagerError::Log { path, source })?;
        }
        Ok(())
    }

    fn least_loaded_dir(&self) -> &Path {
        self.dirs
            .iter()
            .min_by_key(|d| {
                fs::read_dir(d).map_or(0, |entries| {
                    entries
                        .flatten()
                        .filter(|e| e.path().join(PARTITION_METADATA_FILE).exists())
                        .count()
                })
            })
            .expect("at least one log dir")
    }
}

/// Kafka's directory name for a partition.
pub fn partition_dir_name(topic: &str, partition: i32) -> String {
    format!("{topic}-{partition}")
}

fn read_partition_metadata(dir: &Path) -> Option<Uuid> {
    let text = fs::read_to_string(dir.join(PARTITION_METADATA_FILE)).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("topic_id:"))
        .and_then(|v| Uuid::from_base64(v.trim()))
}

fn write_partition_metadata(dir: &Path, topic_id: Uuid) -> Result<(), LogManagerError> {
    if read_partition_metadata(dir) == Some(topic_id) {
        return Ok(());
    }
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
mod tests {
    use super::*;

    #[test]
    fn checkpoint_round_trips_topics_with_dashes_and_spaces_in_lines() {
        let dir = tempfile::tempdir().unwrap();
        let lm = LogManager::open(vec![dir.path().to_path_buf()]).unwrap();
        let p = dir.path().join("a-b-0");
        lm.checkpoint_high_watermarks(&[("a-b".into(), 0, p, 42)])
            .unwrap();
        let lm = LogManager::open(vec![dir.path().to_path_buf()]).unwrap();
        assert_eq!(lm.recovered_high_watermark("a-b", 0), 42);
        assert_eq!(lm.recovered_high_watermark("a-b", 1), 0);
    }

    #[test]
    fn cleaner_checkpoints_go_to_the_partitions_log_dir() {
        let d1 = tempfile::tempdir().unwrap();
        let d2 = tempfile::tempdir().unwrap();
        let lm = LogManager::open(vec![d1.path().to_path_buf(), d2.path().to_path_buf()]).unwrap();
        lm.checkpoint_cleaner_offsets(&[
            ("t".into(), 0, d1.path().join("t-0"), 10),
            ("t".into(), 1, d2.path().join("t-1"), 20),
        ])
        .unwrap();
        let one = std::fs::read_to_string(d1.path().join(CLEANER_OFFSET_CHECKPOINT)).unwrap();
        assert_eq!(one, "0\n1\nt 0 10\n");
        let all = lm.read_cleaner_checkpoints();
        assert_eq!(all.get(&("t".to_string(), 0)), Some(&10));
        assert_eq!(all.get(&("t".to_string(), 1)), Some(&20));
    }

    #[test]
    fn a_directory_of_another_topic_incarnation_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let lm = LogManager::open(vec![dir.path().to_path_buf()]).unwrap();
        let old = Uuid([1; 16]);
        let new = Uuid([2; 16]);
        let log = lm
            .get_or_create("t", old, 0, LogConfig::default(), 0)
            .unwrap();
        std::fs::write(log.dir().join("marker"), b"x").unwrap();
        drop(log);
        let log = lm
            .get_or_create("t", new, 0, LogConfig::default(), 0)
            .unwrap();
        assert!(!log.dir().join("marker").exists());
        assert_eq!(read_partition_metadata(log.dir()), Some(new));
        let again = lm.get_or_create("t", new, 0, LogConfig::default(), 0);
        drop(log);
        assert!(again.is_ok());
    }
}
