//! The pool's order and limits, on a private [`Pool`] (the process's pool is shared by
//! every test running at once).

use std::time::{Duration, Instant};

use super::*;

fn file(dir: &Path, i: u64) -> Arc<File> {
    let p = dir.join(format!("{i}.log"));
    std::fs::write(&p, [i as u8]).unwrap();
    Arc::new(File::open(&p).unwrap())
}

fn put(pool: &mut Pool, id: u64, f: Arc<File>, owner: &Arc<AtomicUsize>, at: Instant) {
    let seq = pool.next_seq;
    pool.next_seq += 1;
    pool.order.insert(seq, id);
    owner.fetch_add(1, Ordering::Relaxed);
    pool.entries.insert(
        id,
        Entry {
            file: f,
            writable: false,
            seq,
            last_used: at,
            owner: Arc::clone(owner),
        },
    );
}

#[test]
fn evicts_least_recently_used_and_idle_and_keeps_handles_in_use_alive() {
    let dir = tempfile::tempdir().unwrap();
    let owner = Arc::new(AtomicUsize::new(0));
    let mut pool = Pool::default();
    let t0 = Instant::now();
    let f0 = file(dir.path(), 0);
    put(&mut pool, 0, Arc::clone(&f0), &owner, t0);
    put(&mut pool, 1, file(dir.path(), 1), &owner, t0);
    assert!(
        pool.touch(0, t0).is_some(),
        "0 is now the most recently used"
    );
    put(&mut pool, 2, file(dir.path(), 2), &owner, t0);
    let evicted = pool.evict(2, None, t0);
    assert_eq!(evicted.len(), 1);
    assert!(
        pool.entries.get(&1).is_none(),
        "1 was the least recently used"
    );
    put(&mut pool, 3, file(dir.path(), 3), &owner, t0);
    pool.evict(2, None, t0);
    assert!(pool.entries.get(&0).is_none());
    // The evicted handle still reads.
    let mut b = [0u8; 1];
    std::os::unix::fs::FileExt::read_exact_at(&*f0, &mut b, 0).unwrap();
    assert_eq!(b, [0]);
    assert_eq!(owner.load(Ordering::Relaxed), 2);
    // Idle: 3 used later than 2; only 2 has been idle for a second.
    let later = t0 + Duration::from_millis(1500);
    pool.touch(3, t0 + Duration::from_millis(1000));
    let evicted = pool.evict(10, Some(Duration::from_millis(1000)), later);
    assert_eq!(evicted.len(), 1);
    assert!(pool.entries.contains_key(&3) && !pool.entries.contains_key(&2));
    assert!(pool.remove(3).is_some());
    assert_eq!(owner.load(Ordering::Relaxed), 0);
    assert!(pool.order.is_empty());
}
