//! Open file handles are bounded: every segment `.log` handle lives in the process's pool
//! (at most `log.segment.open.files.max`, here [`CAP`]; index files hold none between
//! writes), and reads across every segment still return the right bytes, including reads
//! planned before their handle was evicted.
//!
//! The pool is the process's: every test of this binary sets the same tiny cap (the bound
//! each asserts is its own log's share, and the directory's descriptors).

use std::path::Path;

use bytes::Bytes;
use kraftd_log::{Log, LogError};

use crate::common::*;

/// The pool's cap in these tests.
const CAP: usize = 8;
const MAX_OPEN_SEGMENT_FILES: usize = CAP;

/// Applies the tiny cap (and a short idle close) to the process's pool.
pub fn tiny_pool() {
    kraftd_log::handles::configure(CAP, 50);
}

/// Descriptors of this process pointing into `dir` (`None` without `/proc`).
fn open_files_in(dir: &Path) -> Option<usize> {
    let dir = dir.canonicalize().unwrap();
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    Some(
        entries
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target.starts_with(&dir))
            .count(),
    )
}

fn assert_bounded(log: &Log, dir: &Path, when: &str) {
    let stats = log.stats();
    assert!(
        stats.open_segment_files as usize <= CAP,
        "{when}: {stats:?}"
    );
    assert!(kraftd_log::handles::open_segment_files() <= CAP, "{when}");
    if let Some(n) = open_files_in(dir) {
        assert!(n <= CAP, "{when}: {n} files open in the log directory");
    }
}

/// A log of many more segments than the cap, appended as a follower so the test knows
/// every stored byte. Returns the log and its batches in order.
fn many_segments(dir: &Path) -> (Log, Vec<Bytes>) {
    tiny_pool();
    let mut log = Log::open(dir, small_config(), 0).unwrap();
    let mut stored = Vec::new();
    let mut next = 0;
    for i in 0..400 {
        let b = leader_batch(next, (i / 50) as i32, 1 + i % 3, i as i64);
        log.append_as_follower(b.clone(), 0).unwrap();
        next = log.log_end_offset();
        stored.push(b);
    }
    assert!(
        log.segment_count() > 4 * MAX_OPEN_SEGMENT_FILES,
        "{} segments",
        log.segment_count()
    );
    (log, stored)
}

fn check_read_all(log: &Log, stored: &[Bytes]) {
    let got = read_all(log);
    assert_eq!(got.len(), stored.len());
    for (g, s) in got.iter().zip(stored) {
        assert_eq!(g.as_bytes(), &s[..]);
    }
}

#[test]
fn open_handles_are_bounded_and_reads_cross_every_segment() {
    let dir = tempdir();
    let (log, stored) = many_segments(dir.path());
    assert_bounded(&log, dir.path(), "after appending");
    check_read_all(&log, &stored);
    assert_bounded(&log, dir.path(), "after a sequential scan");
    assert!(log.stats().segment_file_opens > 0);

    // Random access, newest segments first, every batch on its own.
    for b in stored.iter().rev() {
        let batch = &batches(b)[0];
        let r = log.read(batch.base_offset(), 1, i64::MAX).unwrap();
        assert_eq!(&r.bytes[..], &b[..]);
    }
    assert_bounded(&log, dir.path(), "after random reads");
    // Timestamp lookups and a full verify go through the cache as well.
    assert_eq!(log.offset_for_timestamp(0).unwrap(), Some((0, 0)));
    log.verify().unwrap();
    assert_bounded(&log, dir.path(), "after verify");
    log.close().unwrap();

    // Opening loads every segment, and keeps few of them open.
    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    assert_bounded(&log, dir.path(), "after reopening");
    check_read_all(&log, &stored);
    drop(log);
    assert_eq!(open_files_in(dir.path()).unwrap_or(0), 0);
}

#[test]
fn truncating_into_a_sealed_segment_makes_it_writable_again() {
    let dir = tempdir();
    let (mut log, mut stored) = many_segments(dir.path());
    check_read_all(&log, &stored);
    // Into the middle of an old segment whose handles were closed long ago.
    let keep = stored.len() / 3;
    let cut = batches(&stored[keep])[0].base_offset();
    log.truncate_to(cut).unwrap();
    stored.truncate(keep);
    assert_eq!(log.log_end_offset(), cut);
    let b = leader_batch(cut, 20, 2, 0);
    log.append_as_follower(b.clone(), 0).unwrap();
    stored.push(b);
    check_read_all(&log, &stored);
    assert_bounded(&log, dir.path(), "after truncation");
    log.close().unwrap();
    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    check_read_all(&log, &stored);
}

#[test]
fn a_planned_read_outlives_the_eviction_of_its_handle() {
    let dir = tempdir();
    let (mut log, stored) = many_segments(dir.path());
    let bases = log.segment_base_offsets();
    let first = |base: i64| {
        stored
            .iter()
            .find(|b| batches(b)[0].base_offset() == base)
            .unwrap()
            .clone()
    };
    // Segment 0's handle is cached when the read is planned: the read holds it.
    log.read(bases[0], 1, i64::MAX).unwrap();
    let holding = log.plan_read(bases[0], 1, i64::MAX).unwrap();
    // Evict it, and segment 1's, by reading newer segments.
    for &base in &bases[2..2 + 2 * MAX_OPEN_SEGMENT_FILES] {
        log.read(base, 1, i64::MAX).unwrap();
    }
    // Segment 1's handle is not cached now: its read opens the file when it runs.
    let lazy = log.plan_read(bases[1], 1, i64::MAX).unwrap();
    let lazy_too = log.plan_read(bases[1], 1, i64::MAX).unwrap();
    assert_eq!(&lazy_too.execute().unwrap().bytes[..], &first(bases[1])[..]);
    // Retention removes segments 0 and 1 meanwhile.
    assert_eq!(log.delete_segments_before(bases[2]).unwrap(), 2);
    assert_eq!(&holding.execute().unwrap().bytes[..], &first(bases[0])[..]);
    // Segment 1's file was cached by `lazy_too` and closed when deleted: `lazy` finds no
    // file and asks to be planned again, which then reports the offset out of range.
    let err = lazy.execute().unwrap_err();
    assert!(err.is_retriable(), "{err}");
    assert!(matches!(
        log.plan_read(bases[1], 1, i64::MAX),
        Err(LogError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn concurrent_readers_of_old_segments_while_retention_deletes_them() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, RwLock};
    let dir = tempdir();
    tiny_pool();
    let log = Arc::new(RwLock::new(
        Log::open(dir.path(), small_config(), 0).unwrap(),
    ));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (log, done) = (log.clone(), done.clone());
        std::thread::spawn(move || {
            for i in 0..1500 {
                let mut log = log.write().unwrap();
                let end = log.log_end_offset();
                // Each batch's timestamps are its offsets: readers check what they get.
                log.append_as_follower(leader_batch(end, 0, 2, end), 0)
                    .unwrap();
                if i % 25 == 0 {
                    log.delete_segments_before(end - 200).unwrap();
                }
                drop(log);
                std::thread::yield_now();
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let readers: Vec<_> = (0..3u64)
        .map(|r| {
            let (log, done) = (log.clone(), done.clone());
            std::thread::spawn(move || {
                let (mut ok, mut retried) = (0, 0);
                let mut seed = 0x2545_f491_4f6c_dd1d_u64 ^ r;
                while !done.load(Ordering::SeqCst) || ok < 100 {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let (pending, offset) = {
                        let log = log.read().unwrap();
                        let (start, end) = (log.log_start_offset(), log.log_end_offset());
                        let offset = start + (seed % (end - start + 1) as u64) as i64;
                        (log.plan_read(offset, 256, i64::MAX).unwrap(), offset)
                    };
                    match pending.execute() {
                        Ok(result) => {
                            let bs = batches(&result.bytes);
                            assert!(bs.first().is_none_or(|b| b.last_offset() >= offset));
                            let mut next = result.base_offset;
                            for b in &bs {
                                b.validate_crc().unwrap();
                                assert_eq!(b.base_offset(), next);
                                assert_eq!(b.max_timestamp(), b.last_offset());
                                next = b.next_offset();
                            }
                            ok += 1;
                        }
                        Err(e) if e.is_retriable() => retried += 1,
                        Err(e) => panic!("{e}"),
                    }
                }
                (ok, retried)
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        let (ok, retried) = r.join().unwrap();
        eprintln!("reader: {ok} reads, {retried} retried after a deletion");
        assert!(ok >= 100);
    }
    let log = log.read().unwrap();
    assert!(log.segment_count() > 1);
    assert_bounded(&log, dir.path(), "after concurrent reads and deletions");
}

#[test]
fn many_logs_of_many_segments_stay_under_the_bound_while_all_are_read() {
    const LOGS: usize = 120;
    tiny_pool();
    let root = tempdir();
    let mut logs = Vec::new();
    let mut stored: Vec<Vec<Bytes>> = Vec::new();
    for l in 0..LOGS {
        let dir = root.path().join(format!("t-{l}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut log = Log::open(&dir, small_config(), 0).unwrap();
        let mut mine = Vec::new();
        for i in 0..40 {
            let b = leader_batch(log.log_end_offset(), 0, 1 + i % 3, i as i64);
            log.append_as_follower(b.clone(), 0).unwrap();
            mine.push(b);
        }
        assert!(log.segment_count() >= 4, "{} segments", log.segment_count());
        logs.push(log);
        stored.push(mine);
        if let Some(n) = open_files_in(root.path()) {
            assert!(n <= CAP, "{n} files open with {} logs", l + 1);
        }
    }
    // Everything read, twice, log after log: every handle is reopened on demand.
    for _ in 0..2 {
        for (log, mine) in logs.iter().zip(&stored) {
            check_read_all(log, mine);
            if let Some(n) = open_files_in(root.path()) {
                assert!(n <= CAP, "{n} files open while reading");
            }
        }
    }
    // Appends to every log again (handles reopened read-write), then a restart.
    for log in &mut logs {
        let b = leader_batch(log.log_end_offset(), 0, 1, 0);
        log.append_as_follower(b, 0).unwrap();
        log.flush().unwrap();
    }
    assert!(open_files_in(root.path()).unwrap_or(0) <= CAP);
    for log in logs.drain(..) {
        log.close().unwrap();
    }
    assert_eq!(open_files_in(root.path()).unwrap_or(0), 0);
    for l in 0..LOGS {
        let log = Log::open(&root.path().join(format!("t-{l}")), small_config(), 0).unwrap();
        assert_eq!(read_all(&log).len(), stored[l].len() + 1);
        logs.push(log);
    }
    assert!(open_files_in(root.path()).unwrap_or(0) <= CAP);
}
