//! Where partition logs live on disk (Kafka's `LogManager`): one directory per partition,
//! `<topic>-<partition>/`, in one of `log.dirs`, with Kafka's `partition.metadata` file
//! naming the topic id (so a topic deleted and created again under the same name is told
//! apart from the old one's leftovers), and each log dir's `replication-offset-checkpoint`
//! holding the high watermarks, so a restarted broker serves what was committed at once.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::{Log, LogConfig};
use kraftd_protocol::Uuid;
use tracing::{info, warn};

/// Kafka's file naming the topic id inside a partition directory.
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";
/// Kafka's per-log-dir high-watermark checkpoint.
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
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
            recovered_hw.extend(read_checkpoint(&dir.join(REPLICATION_OFFSET_CHECKPOINT)));
            if let Ok(entries) = fs::read_dir(dir) {
                for entry in entries.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if name.ends_with(DELETE_SUFFIX) {
                        let _ = fs::remove_dir_all(entry.path());
                    }
                }
            }
        }
        Ok(LogManager { dirs, recovered_hw })
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

    /// Opens the partition's log where it already is, or creates it in the log dir holding
    /// the fewest partitions. A directory of the same name whose `partition.metadata` names
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
        let path = match found {
            Some(p) => p,
            None => {
                let dir = self.least_loaded_dir();
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
        for dir in &self.dirs {
            let entries: Vec<_> = hws
                .iter()
                .filter(|(_, _, path, _)| path.parent() == Some(dir.as_path()))
                .collect();
            let mut text = format!("0\n{}\n", entries.len());
            for (topic, partition, _, hw) in entries {
                text.push_str(&format!("{topic} {partition} {hw}\n"));
            }
            let path = dir.join(REPLICATION_OFFSET_CHECKPOINT);
            atomic_write(&path, text.as_bytes()).map_err(|source| LogManagerError::Io {
                op: "write",
                path,
                source,
            })?;
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
    atomic_write(&path, text.as_bytes()).map_err(|source| LogManagerError::Io {
        op: "write",
        path,
        source,
    })
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

/// Reads Kafka's offset checkpoint text (`0`, count, then `topic partition offset` lines);
/// a malformed file is ignored with a warning (HWs are then relearned from the leaders).
fn read_checkpoint(path: &Path) -> BTreeMap<(String, i32), i64> {
    let Ok(text) = fs::read_to_string(path) else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("0") {
        warn!(path = %path.display(), "unsupported checkpoint version; ignored");
        return out;
    }
    let _count = lines.next();
    for line in lines {
        let mut parts = line.rsplitn(3, ' ');
        let (Some(offset), Some(partition), Some(topic)) =
            (parts.next(), parts.next(), parts.next())
        else {
            warn!(path = %path.display(), line, "malformed checkpoint line; ignored");
            continue;
        };
        if let (Ok(p), Ok(o)) = (partition.parse(), offset.parse()) {
            out.insert((topic.to_string(), p), o);
        }
    }
    out
}

/// Write to a temporary file, fsync, rename over the target, fsync the directory.
fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()?;
    }
    fs::rename(&tmp, path)?;
    if let Some(parent) = path.parent() {
        if let Ok(d) = fs::File::open(parent) {
            let _ = d.sync_all();
        }
    }
    Ok(())
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
