//! The `quorum-state` file of the Raft metadata log: Kafka keeps the durable election state
//! (epoch, leader, vote) as a small JSON file next to the `__cluster_metadata-0` segments,
//! and this module stores and loads its bytes. The Raft crate owns the JSON form
//! (`kraftd_raft::driver::log::quorum_state_file`, Kafka's JSON of the generated
//! `QuorumStateData`); this crate only makes the write atomic and
//! durable, because only `crates/log` opens data files (architecture invariant).
//!
//! A write is temp file, fsync, rename, directory fsync: a crash leaves the old state or the
//! new one, never a torn mix, and a vote promised on the wire after [`QuorumStateStore::write`]
//! returned survives the crash. A leftover `quorum-state.tmp` is ignored here (and removed
//! by [`crate::Log::open`], which cleans every `.tmp` file of the directory).

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{LogError, Result};
use crate::fsutil;

/// Kafka's file name (`FileQuorumStateStore.DEFAULT_FILE_NAME`).
pub const QUORUM_STATE_FILE: &str = "quorum-state";

/// The largest `quorum-state` file read back. Kafka's holds a few hundred bytes; anything
/// near this is not ours and is reported as corrupt rather than loaded into memory.
pub const MAX_QUORUM_STATE_BYTES: u64 = 64 * 1024;

/// Reads and writes one directory's `quorum-state` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumStateStore {
    path: PathBuf,
}

impl QuorumStateStore {
    /// The store of the `quorum-state` file in `dir` (the metadata log's directory). Creates
    /// nothing until the first write.
    pub fn new(dir: &Path) -> Self {
        QuorumStateStore {
            path: dir.join(QUORUM_STATE_FILE),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes last written, or `None` when the file does not exist (a node that has
    /// never voted or followed).
    pub fn read(&self) -> Result<Option<Vec<u8>>> {
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LogError::io("open", &self.path)(e)),
        };
        let mut contents = Vec::new();
        file.take(MAX_QUORUM_STATE_BYTES + 1)
            .read_to_end(&mut contents)
            .map_err(LogError::io("read", &self.path))?;
        if contents.len() as u64 > MAX_QUORUM_STATE_BYTES {
            return Err(LogError::corrupt(
                &self.path,
                MAX_QUORUM_STATE_BYTES,
                format!("larger than {MAX_QUORUM_STATE_BYTES} bytes"),
            ));
        }
        Ok(Some(contents))
    }

    /// Replaces the file with `contents` durably and atomically (creating the directory if
    /// needed). When this returns `Ok`, the new state survives a crash.
    pub fn write(&self, contents: &[u8]) -> Result<()> {
        assert!(
            contents.len() as u64 <= MAX_QUORUM_STATE_BYTES,
            "a quorum state of {} bytes would not read back",
            contents.len()
        );
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(LogError::io("create directory", dir))?;
        }
        fsutil::atomic_write(&self.path, contents)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_is_none_and_writes_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = QuorumStateStore::new(dir.path());
        assert_eq!(store.read().unwrap(), None);
        store.write(b"{\"leaderEpoch\":1}").unwrap();
        assert_eq!(
            store.read().unwrap().as_deref(),
            Some(&b"{\"leaderEpoch\":1}"[..])
        );
        store.write(b"{\"leaderEpoch\":2}").unwrap();
        assert_eq!(
            store.read().unwrap().as_deref(),
            Some(&b"{\"leaderEpoch\":2}"[..])
        );
        assert!(!dir.path().join("quorum-state.tmp").exists());
    }

    #[test]
    fn oversized_file_is_corrupt_not_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let store = QuorumStateStore::new(dir.path());
        std::fs::write(
            store.path(),
            vec![b' '; MAX_QUORUM_STATE_BYTES as usize + 1],
        )
        .unwrap();
        assert!(matches!(store.read(), Err(LogError::Corrupt { .. })));
    }

    #[test]
    fn creates_the_directory_on_first_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = QuorumStateStore::new(&dir.path().join("__cluster_metadata-0"));
        store.write(b"{}").unwrap();
        assert_eq!(store.read().unwrap().as_deref(), Some(&b"{}"[..]));
    }
}
