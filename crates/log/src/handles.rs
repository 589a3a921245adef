//! The open `.log` handles of a log's sealed segments: a small least-recently-used cache
//! capped at [`MAX_OPEN_SEGMENT_FILES`], so a log of thousands of segments holds a bounded
//! number of file descriptors (a broker hosts thousands of partitions, and the process's
//! descriptor limit is shared by all of them and every client connection).
//!
//! Only sealed segments go through the cache: the active segment keeps its own handles
//! (it is written on every append), and a sealed segment's indexes need no handle at all
//! (their content is in memory). Handles are `Arc<File>`: a read planned with a handle
//! keeps it alive after the cache evicts it, so eviction never breaks a read in flight; the
//! descriptor closes when the last holder drops it.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::config::MAX_OPEN_SEGMENT_FILES;
use crate::error::{LogError, Result};

/// The cache of one log's sealed-segment handles, shared by the log and its segments.
///
/// Entries are keyed by a segment's identity ([`SegmentFiles::new_id`]), not its base
/// offset: a read that opened a file just before its segment was deleted may cache that
/// handle after the fact, and a later segment of the same name (the log truncated and
/// grew again) must never find it.
#[derive(Debug)]
pub(crate) struct SegmentFiles {
    /// (segment id, handle), least recently used first. A `Vec` because the cap is small:
    /// a linear scan of a few entries beats any map, and there is nothing to allocate per
    /// lookup.
    lru: Mutex<Vec<(u64, Arc<File>)>>,
    capacity: usize,
    /// How many times a sealed segment's file was opened (cache misses), for [`crate::LogStats`].
    opens: AtomicU64,
    next_id: AtomicU64,
}

impl SegmentFiles {
    pub fn new() -> Arc<SegmentFiles> {
        Self::with_capacity(MAX_OPEN_SEGMENT_FILES)
    }

    pub fn with_capacity(capacity: usize) -> Arc<SegmentFiles> {
        Arc::new(SegmentFiles {
            lru: Mutex::new(Vec::with_capacity(capacity + 1)),
            capacity: capacity.max(1),
            opens: AtomicU64::new(0),
            next_id: AtomicU64::new(0),
        })
    }

    /// A fresh identity for a segment being created or opened.
    pub fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The lock never guards an invariant a panic could break halfway (each operation is
    /// one push, remove or rotate), so a poisoned lock is still usable.
    fn lock(&self) -> MutexGuard<'_, Vec<(u64, Arc<File>)>> {
        self.lru.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached handle of segment `id`, marked most recently used.
    pub fn get(&self, id: u64) -> Option<Arc<File>> {
        let mut lru = self.lock();
        let i = lru.iter().position(|(b, _)| *b == id)?;
        let entry = lru.remove(i);
        let file = Arc::clone(&entry.1);
        lru.push(entry);
        Some(file)
    }

    /// The handle of segment `id`, opening `path` read-only on a miss. The open happens
    /// outside the cache's lock, so a slow open never stalls other readers' lookups.
    pub fn get_or_open(&self, id: u64, path: &Path) -> Result<Arc<File>> {
        if let Some(file) = self.get(id) {
            return Ok(file);
        }
        let file = OpenOptions::new()
            .read(true)
            .open(path)
            .map(Arc::new)
            .map_err(LogError::io("open", path))?;
        self.opens.fetch_add(1, Ordering::Relaxed);
        Ok(self.insert(id, file))
    }

    /// Caches `file` as segment `id`'s handle (most recently used), closing the least
    /// recently used handle beyond the cap. If another reader cached one meanwhile, that
    /// one is kept and returned, so the cache never holds two handles for one segment
    /// (both are handles of the same file: ids are never reused).
    pub fn insert(&self, id: u64, file: Arc<File>) -> Arc<File> {
        let mut lru = self.lock();
        if let Some(i) = lru.iter().position(|(b, _)| *b == id) {
            let entry = lru.remove(i);
            let kept = Arc::clone(&entry.1);
            lru.push(entry);
            return kept;
        }
        lru.push((id, Arc::clone(&file)));
        let evicted = (lru.len() > self.capacity).then(|| lru.remove(0));
        drop(lru);
        // Closing a descriptor is a system call: done after releasing the lock.
        drop(evicted);
        file
    }

    /// Removes segment `id`'s handle (the segment is deleted or becomes active again).
    pub fn remove(&self, id: u64) {
        let removed = {
            let mut lru = self.lock();
            lru.iter()
                .position(|(b, _)| *b == id)
                .map(|i| lru.remove(i))
        };
        drop(removed);
    }

    /// Handles currently cached (at most the cap).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// How many times a sealed segment's file was opened.
    pub fn opens(&self) -> u64 {
        self.opens.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_least_recently_used_and_keeps_handles_in_use_alive() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<_> = (0..4)
            .map(|i| {
                let p = dir.path().join(format!("{i}.log"));
                std::fs::write(&p, [i as u8]).unwrap();
                p
            })
            .collect();
        let cache = SegmentFiles::with_capacity(2);
        let f0 = cache.get_or_open(0, &paths[0]).unwrap();
        cache.get_or_open(1, &paths[1]).unwrap();
        assert!(cache.get(0).is_some(), "0 is now the most recently used");
        cache.get_or_open(2, &paths[2]).unwrap();
        assert_eq!(cache.len(), 2);
        assert!(cache.get(1).is_none(), "1 was the least recently used");
        cache.get_or_open(3, &paths[3]).unwrap();
        assert!(cache.get(0).is_none());
        // The evicted handle still reads.
        let mut b = [0u8; 1];
        std::os::unix::fs::FileExt::read_exact_at(&*f0, &mut b, 0).unwrap();
        assert_eq!(b, [0]);
        assert_eq!(cache.opens(), 4);
        cache.remove(3);
        assert_eq!(cache.len(), 1);
    }
}
