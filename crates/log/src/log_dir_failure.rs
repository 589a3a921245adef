//! Kafka's `LogDirFailureChannel`: the one place an I/O error on a log dir is turned into
//! "this log dir is offline". A [`Log`](crate::Log) opened by the
//! [`LogManager`](crate::log_manager::LogManager) reports every [`LogError::Io`] of its
//! write, flush, roll, truncate, retention and read paths here (and the log dir's checkpoint
//! writes report theirs), naming its log dir; errors that say nothing about the disk (an
//! offset out of range, a refused batch, a corrupt file) are not reported, as Kafka only
//! takes a dir offline on an `IOException`.
//!
//! A dir is added once: the first error wins, later ones for the same dir are only
//! logged. The owner (the broker's ReplicaManager) is told through its listener, which
//! must not block: it is called from inside a log operation, possibly under a partition's
//! lock, so it hands the dir to a task that stops serving the dir's partitions (Kafka's
//! `LogDirFailureHandler` thread taking from the channel's queue).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::error::LogError;

/// What is called with a log dir the first time it goes offline.
pub type OfflineListener = Box<dyn Fn(PathBuf) + Send + Sync>;

/// The offline log dirs of one broker and who to tell (see the module docs).
#[derive(Default)]
pub struct LogDirFailureChannel {
    /// Each offline dir with the error that took it offline, and whether it was offline
    /// from the start (see [`LogDirFailureChannel::add_offline_at_start`]).
    offline: Mutex<BTreeMap<PathBuf, (String, bool)>>,
    listener: OnceLock<OfflineListener>,
}

impl fmt::Debug for LogDirFailureChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogDirFailureChannel")
            .field("offline", &self.offline_log_dirs())
            .finish_non_exhaustive()
    }
}

impl LogDirFailureChannel {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets who learns of each newly offline dir (once; a second listener is returned).
    /// Dirs that failed before it was set are handed to it at once; those offline from
    /// the start are not.
    pub fn set_listener(&self, listener: OfflineListener) -> Result<(), OfflineListener> {
        self.listener.set(listener)?;
        let failed: Vec<PathBuf> = self
            .offline
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, (_, at_start))| !at_start)
            .map(|(dir, _)| dir.clone())
            .collect();
        for dir in failed {
            if let Some(listener) = self.listener.get() {
                listener(dir);
            }
        }
        Ok(())
    }

    /// Takes `dir` offline before the broker starts serving (Kafka's
    /// `createAndValidateLogDirs`: its `meta.properties` unreadable, or the path not a
    /// readable directory). No listener hears of it: nothing in it was ever served, and
    /// the broker registers without it, so the controller already takes its replicas for
    /// offline (Kafka's `handleLogDirFailure` skips a dir that was never online).
    pub fn add_offline_at_start(&self, dir: &Path, error: &dyn fmt::Display) {
        tracing::error!(dir = %dir.display(), %error, "log directory offline at start");
        self.offline
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(dir.to_path_buf())
            .or_insert_with(|| (error.to_string(), true));
    }

    /// Takes `dir` offline because of `error` (Kafka's `maybeAddOfflineLogDir`); true if it
    /// was online until now.
    pub fn maybe_add_offline_log_dir(&self, dir: &Path, error: &dyn fmt::Display) -> bool {
        let added = {
            let mut offline = self.offline.lock().unwrap_or_else(PoisonError::into_inner);
            if offline.contains_key(dir) {
                false
            } else {
                offline.insert(dir.to_path_buf(), (error.to_string(), false));
                true
            }
        };
        if added {
            tracing::error!(dir = %dir.display(), %error, "log directory failed: taking it offline");
            if let Some(listener) = self.listener.get() {
                listener(dir.to_path_buf());
            }
        } else {
            tracing::debug!(dir = %dir.display(), %error, "I/O error on an offline log directory");
        }
        added
    }

    /// Reports `result`'s error when it is an I/O error on `dir`; the result is returned
    /// unchanged.
    pub fn report<T>(&self, dir: &Path, result: Result<T, LogError>) -> Result<T, LogError> {
        if let Err(e @ LogError::Io { .. }) = &result {
            self.maybe_add_offline_log_dir(dir, e);
        }
        result
    }

    /// Whether `dir` has gone offline.
    pub fn is_offline(&self, dir: &Path) -> bool {
        self.offline
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(dir)
    }

    /// Every offline dir, in path order.
    pub fn offline_log_dirs(&self) -> Vec<PathBuf> {
        self.offline
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// The dirs `channel`'s listener (set now) is handed, as they come.
    fn listen(channel: &LogDirFailureChannel) -> Arc<Mutex<Vec<PathBuf>>> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        channel
            .set_listener(Box::new(move |dir| s.lock().unwrap().push(dir)))
            .map_err(|_| "a listener was already set")
            .unwrap();
        seen
    }

    fn io_error(path: &str) -> LogError {
        LogError::Io {
            op: "write",
            path: PathBuf::from(path),
            source: io::Error::from(io::ErrorKind::StorageFull),
        }
    }

    #[test]
    fn an_io_error_takes_the_dir_offline_once_and_tells_the_listener() {
        let channel = LogDirFailureChannel::new();
        let seen = listen(&channel);
        let dir = Path::new("/data/d1");
        assert!(channel
            .report::<()>(dir, Err(io_error("/data/d1/t-0/0.log")))
            .is_err());
        assert!(channel
            .report::<()>(dir, Err(io_error("/data/d1/t-1/0.log")))
            .is_err());
        assert!(channel.is_offline(dir));
        assert!(!channel.is_offline(Path::new("/data/d2")));
        assert_eq!(*seen.lock().unwrap(), vec![dir.to_path_buf()]);
    }

    #[test]
    fn errors_that_are_not_io_leave_the_dir_online() {
        let channel = LogDirFailureChannel::new();
        let dir = Path::new("/data/d1");
        let out_of_range: Result<(), LogError> = Err(LogError::OffsetOutOfRange {
            offset: 10,
            log_start_offset: 0,
            log_end_offset: 5,
        });
        assert!(channel.report(dir, out_of_range).is_err());
        assert!(!channel.is_offline(dir));
    }

    #[test]
    fn a_dir_offline_at_start_is_offline_but_not_handed_to_the_listener() {
        let channel = LogDirFailureChannel::new();
        channel.add_offline_at_start(Path::new("/data/d0"), &"not a directory");
        channel.maybe_add_offline_log_dir(Path::new("/data/d1"), &"boom");
        assert!(!channel.maybe_add_offline_log_dir(Path::new("/data/d0"), &"again"));
        let seen = listen(&channel);
        assert_eq!(*seen.lock().unwrap(), vec![PathBuf::from("/data/d1")]);
        assert!(channel.is_offline(Path::new("/data/d0")));
        assert_eq!(channel.offline_log_dirs().len(), 2);
    }

    #[test]
    fn a_listener_set_late_hears_of_dirs_already_offline() {
        let channel = LogDirFailureChannel::new();
        channel.maybe_add_offline_log_dir(Path::new("/data/d1"), &"boom");
        let seen = listen(&channel);
        assert_eq!(*seen.lock().unwrap(), vec![PathBuf::from("/data/d1")]);
    }
}
