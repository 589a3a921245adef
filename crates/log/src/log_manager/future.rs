//! Moving a replica between log dirs (Kafka's future logs, KIP-113): the copy is built in a
//! `<topic>-<partition>.<id>-future` directory of the target log dir while the current log
//! keeps serving; once it has caught up, its owner swaps it in under the partition's lock
//! ([`LogManager::swap_in_future`]). The swap renames the current directory for deletion
//! first and the future one to the partition's name second, so whatever a crash interrupts
//! leaves either the current log (the move resumes from the future log's end) or only the
//! complete future log, which [`LogManager::get_or_create`] then takes as the current one.
//! Also each log dir's disk space and whether it is usable (DescribeLogDirs).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kraftd_protocol::Uuid;
use tracing::{info, warn};

use super::{
    partition_dir_name, read_partition_metadata, write_partition_metadata, LogManager,
    LogManagerError, DELETE_SUFFIX, PARTITION_METADATA_FILE,
};
use crate::{Log, LogConfig};

/// Kafka's suffix of a future log's directory.
pub const FUTURE_DIR_SUFFIX: &str = "-future";

/// A directory name unique to this process's life: time, process id and a counter (Kafka
/// uses a random UUID without dashes; any unique 32 hex digits do).
fn unique_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        "{nanos:016x}{:016x}",
        (u64::from(std::process::id()) << 32) ^ n
    )
}

/// `(topic, partition)` of a future log's directory name, `<topic>-<p>.<id>-future`.
pub fn parse_future_dir_name(name: &str) -> Option<(String, i32)> {
    let stem = name.strip_suffix(FUTURE_DIR_SUFFIX)?;
    let (current, id) = stem.rsplit_once('.')?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let (topic, partition) = current.rsplit_once('-')?;
    let partition = partition.parse::<i32>().ok()?;
    (partition_dir_name(topic, partition) == current).then(|| (topic.to_string(), partition))
}

/// A path as DescribeLogDirs names it and AlterReplicaLogDirs must name it: absolute
/// (Kafka compares `File.getAbsolutePath`).
pub fn absolute_path(dir: &Path) -> String {
    std::path::absolute(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// Total and usable bytes of the file system holding `dir` (Java's `FileStore`
/// `getTotalSpace`/`getUsableSpace`: all blocks, and the blocks available to an
/// unprivileged user).
pub fn disk_space(dir: &Path) -> io::Result<(i64, i64)> {
    let st = rustix::fs::statvfs(dir).map_err(io::Error::from)?;
    let bytes = |blocks: u64| i64::try_from(blocks.saturating_mul(st.f_frsize)).unwrap_or(i64::MAX);
    Ok((bytes(st.f_blocks), bytes(st.f_bavail)))
}

impl LogManager {
    /// The configured log dir whose absolute path is `path`.
    pub fn log_dir_by_path(&self, path: &str) -> Option<&Path> {
        self.dirs
            .iter()
            .find(|d| absolute_path(d) == path)
            .map(PathBuf::as_path)
    }

    /// Whether a log dir can be used: no I/O error has taken it offline (the
    /// [`LogDirFailureChannel`](crate::LogDirFailureChannel)) and it is still a directory
    /// we can list.
    pub fn is_log_dir_online(&self, dir: &Path) -> bool {
        !self.failure.is_offline(dir) && fs::read_dir(dir).is_ok()
    }

    /// Remembers where a replica this broker does not host yet is to be created (Kafka's
    /// `maybeUpdatePreferredLogDir`).
    pub fn set_preferred_dir(&self, topic: &str, partition: i32, dir: PathBuf) {
        self.preferred_dirs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((topic.to_string(), partition), dir);
    }

    pub fn take_preferred_dir(&self, topic: &str, partition: i32) -> Option<PathBuf> {
        self.preferred_dirs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(topic.to_string(), partition))
    }

    /// Every future log directory on disk: (path, topic, partition, topic id if readable),
    /// as the manager knows them (listed at open, kept since).
    pub fn future_dirs(&self) -> Vec<(PathBuf, String, i32, Option<Uuid>)> {
        let index = self.index();
        let mut out = Vec::new();
        for d in index.iter() {
            for ((topic, partition), (path, id)) in &d.futures {
                out.push((path.clone(), topic.clone(), *partition, *id));
            }
        }
        out
    }

    /// The future log directory of a partition, if one of this topic id is on disk.
    pub fn find_future(&self, topic: &str, topic_id: Uuid, partition: i32) -> Option<PathBuf> {
        let key = (topic.to_string(), partition);
        let index = self.index();
        index.iter().find_map(|d| {
            d.futures
                .get(&key)
                .filter(|(_, id)| *id == Some(topic_id))
                .map(|(path, _)| path.clone())
        })
    }

    /// Creates an empty future log for a partition in `target` (a configured log dir).
    pub fn create_future(
        &self,
        topic: &str,
        topic_id: Uuid,
        partition: i32,
        target: &Path,
        config: LogConfig,
        now_ms: i64,
    ) -> Result<Log, LogManagerError> {
        let name = format!(
            "{}.{}{FUTURE_DIR_SUFFIX}",
            partition_dir_name(topic, partition),
            unique_id()
        );
        self.check_online(target)?;
        let path = target.join(name);
        fs::create_dir_all(&path).map_err(|source| LogManagerError::Io {
            op: "create",
            path: path.clone(),
            source,
        })?;
        write_partition_metadata(&path, topic_id)?;
        if let Some(i) = self.dir_index_of(target) {
            self.index()[i].futures.insert(
                (topic.to_string(), partition),
                (path.clone(), Some(topic_id)),
            );
        }
        info!(path = %path.display(), %topic_id, "created future log");
        let mut log = Log::open(&path, config, now_ms)
            .map_err(|source| LogManagerError::Log { path, source })?;
        log.set_failure_channel(Arc::clone(&self.failure));
        Ok(log)
    }

    /// Opens a future log found on disk (a move the broker was making when it stopped).
    pub fn open_future(
        path: &Path,
        config: LogConfig,
        now_ms: i64,
    ) -> Result<Log, LogManagerError> {
        Log::open(path, config, now_ms).map_err(|source| LogManagerError::Log {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Swaps a caught-up future log in (the caller holds the partition's lock and has
    /// closed the future log): the current directory is renamed for deletion, then the
    /// future one to the partition's name in its own log dir. Returns the new current
    /// directory and the renamed old one, which [`LogManager::remove_doomed`] deletes once
    /// nobody reads it.
    pub fn swap_in_future(
        &self,
        current: &Path,
        future: &Path,
    ) -> Result<(PathBuf, PathBuf), LogManagerError> {
        let name = current
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut doomed = current.as_os_str().to_owned();
        doomed.push(format!(".{}{DELETE_SUFFIX}", unique_id()));
        let doomed = PathBuf::from(doomed);
        rename(current, &doomed)?;
        let target = future
            .parent()
            .map_or_else(|| PathBuf::from(&name), |p| p.join(&name));
        if let Err(e) = rename(future, &target) {
            // Put the current log back where its owner still has it.
            if let Err(back) = rename(&doomed, current) {
                warn!(path = %doomed.display(), error = %back, "restoring a log after a failed swap failed");
            }
            return Err(e);
        }
        self.unindex(current);
        self.unindex(future);
        if let (Some(i), Some(key)) = (
            target.parent().and_then(|p| self.dir_index_of(p)),
            super::parse_partition_dir_name(&name),
        ) {
            let id = read_partition_metadata(&target);
            self.index()[i].partitions.insert(key, id);
        }
        for dir in [current.parent(), target.parent()].into_iter().flatten() {
            if let Err(e) = crate::fsutil::sync_dir(dir) {
                warn!(dir = %dir.display(), error = %e, "fsync of a log dir after a swap failed");
            }
        }
        Ok((target, doomed))
    }

    /// Deletes a directory [`LogManager::swap_in_future`] renamed away (a leftover is removed
    /// at the next start, as every `-delete` directory is).
    pub fn remove_doomed(&self, doomed: &Path) -> Result<(), LogManagerError> {
        fs::remove_dir_all(doomed).map_err(|source| LogManagerError::Io {
            op: "remove",
            path: doomed.to_path_buf(),
            source,
        })
    }

    /// A future log without a current one: the crash came between the two renames of a
    /// swap, after the future log had caught up and been closed, so it is complete and
    /// becomes the current log.
    pub(super) fn promote_orphan_future(
        &self,
        topic: &str,
        topic_id: Uuid,
        partition: i32,
    ) -> Result<Option<PathBuf>, LogManagerError> {
        let Some(future) = self.find_future(topic, topic_id, partition) else {
            return Ok(None);
        };
        if !future.join(PARTITION_METADATA_FILE).exists() {
            return Ok(None);
        }
        let target = future
            .parent()
            .map_or_else(PathBuf::new, Path::to_path_buf)
            .join(partition_dir_name(topic, partition));
        rename(&future, &target)?;
        self.unindex(&future);
        info!(path = %target.display(), "a finished future log became the current log");
        Ok(Some(target))
    }
}

fn rename(from: &Path, to: &Path) -> Result<(), LogManagerError> {
    fs::rename(from, to).map_err(|source| LogManagerError::Io {
        op: "rename",
        path: from.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests;
