//! The per-log-directory offset checkpoints at a cost of O(changed) per interval (Kafka's
//! `replication-offset-checkpoint`, `log-start-offset-checkpoint` and
//! `recovery-point-offset-checkpoint`, one file of each per log dir, in Kafka's text format,
//! [`super`]).
//!
//! Each hosted partition shares a [`PartitionOffsets`] with the
//! [`LogManager`](crate::log_manager::LogManager):
//! its [`Log`](crate::Log) stores its recovery point (flushed offset) and log start offset
//! there, its owner its high watermark. A store that changes a value queues the partition
//! once (a flag says it is queued) on its log dir's dirty queue; the checkpointer drains
//! the queue into the dir's in-memory copy of each file and rewrites only the files of dirs
//! whose copy changed. No pass over all partitions finds out what changed, and a dir none of
//! whose partitions changed is not written at all.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::checkpoint;

/// Kafka's per-log-dir high-watermark checkpoint.
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
/// Kafka's per-log-dir log start offsets (written every
/// `log.flush.start.offset.checkpoint.interval.ms`).
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
/// Kafka's per-log-dir recovery points: below it a log was flushed (written every
/// `log.flush.offset.checkpoint.interval.ms`).
pub const RECOVERY_POINT_OFFSET_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
/// Kafka's default `log.flush.offset.checkpoint.interval.ms`.
pub const DEFAULT_RECOVERY_POINT_CHECKPOINT_INTERVAL_MS: u64 = 60_000;
/// Kafka's default `log.flush.start.offset.checkpoint.interval.ms`.
pub const DEFAULT_LOG_START_CHECKPOINT_INTERVAL_MS: u64 = 60_000;

/// One of the three offset checkpoint files of a log dir.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckpointKind {
    /// `replication-offset-checkpoint`: high watermarks.
    HighWatermark,
    /// `log-start-offset-checkpoint`.
    LogStart,
    /// `recovery-point-offset-checkpoint`.
    RecoveryPoint,
}

impl CheckpointKind {
    pub const ALL: [CheckpointKind; 3] = [
        CheckpointKind::HighWatermark,
        CheckpointKind::LogStart,
        CheckpointKind::RecoveryPoint,
    ];

    /// The file's name in a log dir.
    pub fn file_name(self) -> &'static str {
        match self {
            CheckpointKind::HighWatermark => REPLICATION_OFFSET_CHECKPOINT,
            CheckpointKind::LogStart => LOG_START_OFFSET_CHECKPOINT,
            CheckpointKind::RecoveryPoint => RECOVERY_POINT_OFFSET_CHECKPOINT,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Value of an offset not known yet: not written to the file.
const UNSET: i64 = -1;

/// One partition's checkpointed offsets, shared between its log, its owner and the
/// [`LogManager`](crate::log_manager::LogManager) (see the module docs).
#[derive(Debug)]
pub struct PartitionOffsets {
    topic: String,
    partition: i32,
    /// Index of the log dir in the manager's list.
    dir: usize,
    values: [AtomicI64; 3],
    /// On the dirty queue (set by the store that queued it, cleared by the drain).
    queued: AtomicBool,
    /// Cleared when the partition leaves the dir (deleted, moved): a queued entry is then
    /// ignored.
    live: AtomicBool,
    queue: Arc<DirtyQueue>,
}

impl PartitionOffsets {
    /// Stores `value` for `kind`; a change queues the partition for the next checkpoint.
    pub fn set(self: &Arc<Self>, kind: CheckpointKind, value: i64) {
        let old = self.values[kind.index()].swap(value, Ordering::AcqRel);
        if old != value && !self.queued.swap(true, Ordering::AcqRel) {
            self.queue
                .0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Arc::clone(self));
        }
    }

    /// The value last stored for `kind` (-1 when none).
    pub fn get(&self, kind: CheckpointKind) -> i64 {
        self.values[kind.index()].load(Ordering::Acquire)
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    pub fn partition(&self) -> i32 {
        self.partition
    }
}

/// Partitions whose offsets changed since the last drain.
#[derive(Debug, Default)]
struct DirtyQueue(Mutex<Vec<Arc<PartitionOffsets>>>);

/// One checkpoint file of one dir: what it holds (or will), whether it must be rewritten,
/// and how often it was.
#[derive(Debug, Default)]
struct FileState {
    entries: BTreeMap<(String, i32), i64>,
    dirty: bool,
    writes: u64,
}

/// Every dir's three files (see the module docs).
#[derive(Debug)]
pub(crate) struct Checkpoints {
    queue: Arc<DirtyQueue>,
    /// By dir, then by [`CheckpointKind`].
    files: Mutex<Vec<[FileState; 3]>>,
    /// Files written in all, by kind (for the tests and metrics).
    writes: [AtomicU64; 3],
    /// The live handle of each tracked partition, by (dir, topic, partition): a partition
    /// leaving its dir is marked dead through it, so values it queued are dropped.
    live: Mutex<HashMap<(usize, String, i32), Arc<PartitionOffsets>>>,
}

impl Checkpoints {
    /// Reads the three files of each of `dirs` (missing files, and those of `offline`
    /// dirs, read as empty).
    pub(crate) fn load(
        dirs: &[std::path::PathBuf],
        offline: impl Fn(&std::path::Path) -> bool,
    ) -> Checkpoints {
        let files = dirs
            .iter()
            .map(|dir| {
                CheckpointKind::ALL.map(|kind| FileState {
                    entries: if offline(dir) {
                        Default::default()
                    } else {
                        checkpoint::read(&dir.join(kind.file_name()))
                    },
                    dirty: false,
                    writes: 0,
                })
            })
            .collect();
        Checkpoints {
            queue: Arc::default(),
            files: Mutex::new(files),
            writes: Default::default(),
            live: Mutex::default(),
        }
    }

    /// The value a dir's file held at start, or the latest drained into it.
    pub(crate) fn stored(
        &self,
        dir: usize,
        kind: CheckpointKind,
        key: &(String, i32),
    ) -> Option<i64> {
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files.get(dir)?[kind.index()].entries.get(key).copied()
    }

    /// The value any dir's file holds for `key`.
    pub(crate) fn stored_anywhere(&self, kind: CheckpointKind, key: &(String, i32)) -> Option<i64> {
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files
            .iter()
            .find_map(|f| f[kind.index()].entries.get(key).copied())
    }

    /// A new tracked partition in `dir`; nothing is queued until a value is stored.
    pub(crate) fn track(&self, topic: &str, partition: i32, dir: usize) -> Arc<PartitionOffsets> {
        let handle = Arc::new(PartitionOffsets {
            topic: topic.to_string(),
            partition,
            dir,
            values: [UNSET, UNSET, UNSET].map(AtomicI64::new),
            queued: AtomicBool::new(false),
            live: AtomicBool::new(true),
            queue: Arc::clone(&self.queue),
        });
        let previous = self
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((dir, topic.to_string(), partition), Arc::clone(&handle));
        if let Some(previous) = previous {
            previous.live.store(false, Ordering::Release);
        }
        handle
    }

    /// The partition left `dir`: its entries go from the dir's files (rewritten at their
    /// next interval) and its handle stops counting.
    pub(crate) fn forget(&self, dir: usize, topic: &str, partition: i32) {
        let handle = self
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(dir, topic.to_string(), partition));
        if let Some(h) = handle {
            h.live.store(false, Ordering::Release);
        }
        let key = (topic.to_string(), partition);
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(dir_files) = files.get_mut(dir) {
            for f in dir_files.iter_mut() {
                if f.entries.remove(&key).is_some() {
                    f.dirty = true;
                }
            }
        }
    }

    /// Moves what changed since the last call into the dirs' copies of their files.
    fn drain(&self, files: &mut [[FileState; 3]]) {
        let queued = std::mem::take(&mut *self.queue.0.lock().unwrap_or_else(|p| p.into_inner()));
        for p in queued {
            p.queued.store(false, Ordering::Release);
            if !p.live.load(Ordering::Acquire) {
                continue;
            }
            let Some(dir_files) = files.get_mut(p.dir) else {
                continue;
            };
            for kind in CheckpointKind::ALL {
                let value = p.get(kind);
                if value == UNSET {
                    continue;
                }
                let f = &mut dir_files[kind.index()];
                let key = (p.topic.clone(), p.partition);
                if f.entries.insert(key, value) != Some(value) {
                    f.dirty = true;
                }
            }
        }
    }

    /// Rewrites the `kind` file of every dir one of whose partitions changed it since the
    /// last write; returns how many files were written.
    pub(crate) fn write(
        &self,
        dirs: &[std::path::PathBuf],
        kind: CheckpointKind,
        failure: &crate::LogDirFailureChannel,
    ) -> crate::Result<usize> {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        self.drain(&mut files);
        let mut written = 0;
        for (dir, dir_files) in dirs.iter().zip(files.iter_mut()) {
            let f = &mut dir_files[kind.index()];
            if !f.dirty {
                continue;
            }
            if failure.is_offline(dir) {
                continue;
            }
            // A failed write takes the dir offline (Kafka's checkpoint files report to the
            // LogDirFailureChannel); the other dirs' files are still written.
            if failure
                .report(dir, write_file(dir, kind, &f.entries))
                .is_err()
            {
                continue;
            }
            f.dirty = false;
            f.writes += 1;
            written += 1;
            self.writes[kind.index()].fetch_add(1, Ordering::Relaxed);
        }
        Ok(written)
    }

    /// How many times `kind`'s file of dir `dir` was written by this process.
    pub(crate) fn writes_of(&self, dir: usize, kind: CheckpointKind) -> u64 {
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files.get(dir).map_or(0, |f| f[kind.index()].writes)
    }

    /// How many `kind` files were written in all.
    pub(crate) fn total_writes(&self, kind: CheckpointKind) -> u64 {
        self.writes[kind.index()].load(Ordering::Relaxed)
    }
}

fn write_file(
    dir: &Path,
    kind: CheckpointKind,
    entries: &BTreeMap<(String, i32), i64>,
) -> crate::Result<()> {
    checkpoint::write(
        &dir.join(kind.file_name()),
        entries.iter().map(|((t, p), o)| (t.as_str(), *p, *o)),
    )
}
