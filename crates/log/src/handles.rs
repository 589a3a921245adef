//! The open `.log` handles of every segment in the process, active or sealed: one bounded
//! pool, so a broker hosting 100,000 partitions holds at most
//! `log.segment.open.files.max` segment descriptors however many partitions and segments
//! it has (each segment used to hold its `.log`, `.index` and `.timeindex` for life: 300,000
//! descriptors at that scale), and a handle unused for `log.segment.idle.close.ms` is
//! closed even when the cap is not reached.
//!
//! - Handles are opened on first use and kept while used: a busy partition's active
//!   segment stays open, so its appends and reads cost no extra system call (a lookup under
//!   a short lock); an idle one is closed and reopened (read-write) on its next append.
//! - The pool is least-recently-used: past the cap, the handle unused longest is closed.
//! - Handles are `Arc<File>`: a read planned with a handle (or a flush running off the
//!   log's lock) keeps it alive after eviction, so eviction never breaks an operation in
//!   flight; the descriptor closes when its last holder drops it. A read that finds its
//!   handle evicted reopens the file, and a read of a segment deleted meanwhile fails as a
//!   concurrent truncation (the caller retries), never reads another file.
//! - Closing a handle loses nothing: data written through it is in the page cache, and an
//!   fdatasync through a handle opened later flushes the same file.
//! - Index files need no pooled handle: their entries are in memory and written in bulk
//!   (`index.rs` opens the file for each write and closes it).
//!
//! Entries are keyed by a segment's identity ([`SegmentFiles::new_id`], unique in the
//! process), not its name: a read that opened a file just before its segment was deleted
//! may cache that handle after the fact, and a later segment of the same name must never
//! find it.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::config::{DEFAULT_SEGMENT_IDLE_CLOSE_MS, DEFAULT_SEGMENT_OPEN_FILES_MAX};
use crate::error::{LogError, Result};

/// One pooled handle.
#[derive(Debug)]
struct Entry {
    file: Arc<File>,
    writable: bool,
    /// Its key in the pool's recency order.
    seq: u64,
    last_used: Instant,
    /// The owning log's count of pooled handles (for [`crate::LogStats`]).
    owner: Arc<AtomicUsize>,
}

#[derive(Debug, Default)]
struct Pool {
    entries: HashMap<u64, Entry>,
    /// seq → segment id, least recently used first.
    order: BTreeMap<u64, u64>,
    next_seq: u64,
}

impl Pool {
    fn touch(&mut self, id: u64, now: Instant) -> Option<&Entry> {
        let next_seq = self.next_seq;
        let e = self.entries.get_mut(&id)?;
        e.last_used = now;
        // Already the most recent: a busy partition hit again costs no reordering.
        if e.seq + 1 != next_seq {
            self.order.remove(&e.seq);
            e.seq = next_seq;
            self.order.insert(next_seq, id);
            self.next_seq += 1;
        }
        self.entries.get(&id)
    }

    fn remove(&mut self, id: u64) -> Option<Entry> {
        let e = self.entries.remove(&id)?;
        self.order.remove(&e.seq);
        e.owner.fetch_sub(1, Ordering::Relaxed);
        Some(e)
    }

    /// Takes out the handles beyond `cap` and those idle longer than `idle` (least
    /// recently used first), to be closed outside the lock.
    fn evict(&mut self, cap: usize, idle: Option<Duration>, now: Instant) -> Vec<Entry> {
        let mut out = Vec::new();
        while let Some((_, &id)) = self.order.first_key_value() {
            let over = self.entries.len() > cap;
            let stale = idle.is_some_and(|idle| {
                self.entries
                    .get(&id)
                    .is_some_and(|e| now.saturating_duration_since(e.last_used) >= idle)
            });
            if !over && !stale {
                break;
            }
            out.extend(self.remove(id));
        }
        out
    }
}

/// The process's pool of segment handles and its limits.
#[derive(Debug)]
struct FilePool {
    pool: Mutex<Pool>,
    cap: AtomicUsize,
    /// `log.segment.idle.close.ms`; `i64::MAX` never closes for idleness.
    idle_ms: AtomicI64,
    next_id: AtomicU64,
    sweeper: OnceLock<()>,
}

fn pool() -> &'static FilePool {
    static POOL: OnceLock<FilePool> = OnceLock::new();
    POOL.get_or_init(|| FilePool {
        pool: Mutex::new(Pool::default()),
        cap: AtomicUsize::new(DEFAULT_SEGMENT_OPEN_FILES_MAX),
        idle_ms: AtomicI64::new(DEFAULT_SEGMENT_IDLE_CLOSE_MS),
        next_id: AtomicU64::new(0),
        sweeper: OnceLock::new(),
    })
}

impl FilePool {
    /// The lock never guards an invariant a panic could break halfway, so a poisoned lock
    /// is still usable.
    fn lock(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn idle(&self) -> Option<Duration> {
        let ms = self.idle_ms.load(Ordering::Relaxed);
        (ms < i64::MAX).then(|| Duration::from_millis(ms.max(0) as u64))
    }

    /// Closes what is over the cap or idle.
    fn sweep(&self) {
        // Closed under the lock: a sweeper thread preempted between eviction and close
        // would otherwise leave the process above its cap for as long as it sleeps.
        let mut pool = self.lock();
        let evicted = pool.evict(
            self.cap.load(Ordering::Relaxed),
            self.idle(),
            Instant::now(),
        );
        drop(evicted);
        drop(pool);
    }

    /// Starts the thread that closes idle handles of logs nobody touches any more (once per
    /// process, when a handle is first pooled).
    fn ensure_sweeper(&'static self) {
        self.sweeper.get_or_init(|| {
            let spawned = std::thread::Builder::new()
                .name("segment-files".into())
                .spawn(move || loop {
                    let idle_ms = self.idle_ms.load(Ordering::Relaxed);
                    let period = (idle_ms / 2).clamp(5, 1000) as u64;
                    std::thread::sleep(Duration::from_millis(period));
                    if idle_ms < i64::MAX {
                        self.sweep();
                    }
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "no thread to close idle segment files: only the cap applies");
            }
        });
    }
}

/// Sets the pool's limits (the node's `log.segment.open.files.max` and
/// `log.segment.idle.close.ms`), applied at once.
pub fn configure(open_files_max: usize, idle_close_ms: i64) {
    let p = pool();
    p.cap.store(open_files_max.max(1), Ordering::Relaxed);
    p.idle_ms.store(idle_close_ms.max(0), Ordering::Relaxed);
    p.sweep();
}

/// Segment handles open in the process (pooled; reads in flight may hold a few more).
pub fn open_segment_files() -> usize {
    pool().lock().entries.len()
}

/// One log's view of the pool: its handles' count and how often it opened one.
#[derive(Debug)]
pub(crate) struct SegmentFiles {
    /// Handles of this log's segments in the pool.
    open: Arc<AtomicUsize>,
    /// How many times this log opened a segment file (pool misses), for [`crate::LogStats`].
    opens: AtomicU64,
}

impl SegmentFiles {
    pub fn new() -> Arc<SegmentFiles> {
        Arc::new(SegmentFiles {
            open: Arc::new(AtomicUsize::new(0)),
            opens: AtomicU64::new(0),
        })
    }

    /// A fresh identity for a segment being created or opened, unique in the process.
    pub fn new_id(&self) -> u64 {
        pool().next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The pooled handle of segment `id` (writable if asked), marked most recently used.
    pub fn get(&self, id: u64, write: bool) -> Option<Arc<File>> {
        let mut p = pool().lock();
        let e = p.touch(id, Instant::now())?;
        (e.writable || !write).then(|| Arc::clone(&e.file))
    }

    /// The handle of segment `id`, opening `path` on a miss (read-write if `write`, else
    /// read-only; a read-only handle is replaced when a write needs one). The open happens
    /// outside the pool's lock, so a slow open never stalls other segments.
    pub fn get_or_open(&self, id: u64, path: &Path, write: bool) -> Result<Arc<File>> {
        if let Some(file) = self.get(id, write) {
            return Ok(file);
        }
        let file = OpenOptions::new()
            .read(true)
            .write(write)
            .open(path)
            .map(Arc::new)
            .map_err(LogError::io("open", path))?;
        self.opens.fetch_add(1, Ordering::Relaxed);
        Ok(self.insert(id, file, write))
    }

    /// Pools `file` as segment `id`'s handle (most recently used), closing the least
    /// recently used handles beyond the cap. If another reader pooled one meanwhile that
    /// serves (writable, or no write is needed), that one is kept and returned, so the pool
    /// never holds two handles for one segment.
    pub fn insert(&self, id: u64, file: Arc<File>, writable: bool) -> Arc<File> {
        let fp = pool();
        let now = Instant::now();
        let mut p = fp.lock();
        if let Some(e) = p.touch(id, now) {
            if e.writable || !writable {
                return Arc::clone(&e.file);
            }
        }
        let replaced = p.remove(id);
        let seq = p.next_seq;
        p.next_seq += 1;
        p.order.insert(seq, id);
        self.open.fetch_add(1, Ordering::Relaxed);
        p.entries.insert(
            id,
            Entry {
                file: Arc::clone(&file),
                writable,
                seq,
                last_used: now,
                owner: Arc::clone(&self.open),
            },
        );
        // Closed under the lock, as in `sweep`: closing after it, a thread preempted in
        // between would leave the process above its cap while another pools a new handle.
        let evicted = p.evict(fp.cap.load(Ordering::Relaxed), fp.idle(), now);
        drop((replaced, evicted));
        drop(p);
        fp.ensure_sweeper();
        file
    }

    /// Removes segment `id`'s handle (the segment is deleted, renamed or dropped).
    pub fn remove(&self, id: u64) {
        let mut p = pool().lock();
        drop(p.remove(id));
    }

    /// This log's pooled handles.
    pub fn len(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// How many times this log opened a segment file.
    pub fn opens(&self) -> u64 {
        self.opens.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests;
