//! Opening after a clean shutdown skips the active segment's full re-validation (Kafka
//! skips recovery the same way) and yields the same log a full recovery does; a marker
//! that lies (a torn tail anyway) falls back to recovery.

use std::path::Path;

use kraftd_log::{take_clean_shutdown_marker, write_clean_shutdown_marker, Log, LogConfig};

use crate::common::*;

/// A config whose active segment holds many index entries, so skipping its scan matters.
fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 16 * 1024,
        index_interval_bytes: 200,
        ..small_config()
    }
}

/// A cleanly closed log of a few segments, several epochs, and a truncation inside the
/// active segment.
fn closed_log(dir: &Path) {
    let mut log = Log::open(dir, config(), 0).unwrap();
    for i in 0..300 {
        log.append_as_leader(
            producer_batch(1 + i % 4, 30, 1000 + i as i64),
            (i / 70) as i32,
            0,
        )
        .unwrap();
    }
    let end = log.log_end_offset();
    log.truncate_to(end - 5).unwrap();
    log.append_as_leader(producer_batch(3, 30, 5000), 9, 0)
        .unwrap();
    assert!(log.segment_count() >= 3);
    log.close().unwrap();
    write_clean_shutdown_marker(dir, 1).unwrap();
}

/// The owner's side: trust the log only if the directory's marker says so.
fn open_as_owner(dir: &Path) -> Log {
    if take_clean_shutdown_marker(dir).unwrap().is_some() {
        Log::open_after_clean_shutdown(dir, config(), 0).unwrap()
    } else {
        Log::open(dir, config(), 0).unwrap()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn assert_same(a: &Log, b: &Log) {
    assert_eq!(a.log_start_offset(), b.log_start_offset());
    assert_eq!(a.log_end_offset(), b.log_end_offset());
    assert_eq!(a.flushed_offset(), b.flushed_offset());
    assert_eq!(a.epoch_entries(), b.epoch_entries());
    assert_eq!(a.segment_base_offsets(), b.segment_base_offsets());
    let (ra, rb) = (read_all(a), read_all(b));
    assert_eq!(ra.len(), rb.len());
    for (x, y) in ra.iter().zip(&rb) {
        assert_eq!(x.as_bytes(), y.as_bytes());
    }
    for ts in [0, 1100, 1250, 5000, 5001, 9999] {
        assert_eq!(
            a.offset_for_timestamp(ts).unwrap(),
            b.offset_for_timestamp(ts).unwrap()
        );
    }
}

#[test]
fn a_clean_shutdown_skips_the_active_segments_recovery() {
    let dir = tempdir();
    closed_log(dir.path());
    let full_dir = tempdir();
    copy_dir(dir.path(), full_dir.path());

    let mut clean = open_as_owner(dir.path());
    assert_eq!(clean.stats().segments_recovered, 0);
    assert_eq!(clean.stats().index_rebuilds, 0);
    let mut full = Log::open(full_dir.path(), config(), 0).unwrap();
    assert_eq!(full.stats().segments_recovered, 1);
    assert_eq!(full.stats().recovery_truncations, 0);
    assert_same(&clean, &full);

    // Both go on the same way: appends, a roll by time (the segment.ms clock restarted
    // from the first batch), a truncation, a reopen without the marker.
    let now = 1_000_000_000_000;
    for log in [&mut clean, &mut full] {
        let before = log.segment_count();
        log.append_as_leader(producer_batch(2, 30, now), 9, now)
            .unwrap();
        log.append_as_leader(producer_batch(2, 30, now + 1), 10, now + 1)
            .unwrap();
        assert_eq!(log.segment_count(), before + 1, "segment.ms rolled once");
        let end = log.log_end_offset();
        log.truncate_to(end - 1).unwrap();
    }
    assert_eq!(clean.segment_count(), full.segment_count());
    assert_same(&clean, &full);
    drop(clean);
    drop(full);
    let clean = open_as_owner(dir.path());
    assert_eq!(
        clean.stats().segments_recovered,
        1,
        "no marker: full recovery"
    );
    let full = Log::open(full_dir.path(), config(), 0).unwrap();
    assert_same(&clean, &full);
}

#[test]
fn a_lying_marker_falls_back_to_recovery() {
    let dir = tempdir();
    closed_log(dir.path());
    let log = Log::open(dir.path(), config(), 0).unwrap();
    let expected = read_all(&log);
    let active = dir.path().join(format!(
        "{:020}.log",
        log.segment_base_offsets().last().unwrap()
    ));
    log.close().unwrap();
    // The tail was torn after the marker was written (or the marker was copied over).
    let len = std::fs::metadata(&active).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&active)
        .unwrap()
        .set_len(len - 7)
        .unwrap();
    write_clean_shutdown_marker(dir.path(), 1).unwrap();
    let log = open_as_owner(dir.path());
    assert_eq!(log.stats().segments_recovered, 1);
    assert_eq!(log.stats().recovery_truncations, 1);
    let got = read_all(&log);
    assert_eq!(got.len(), expected.len() - 1);
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!(g.as_bytes(), e.as_bytes());
    }
    assert_eq!(
        log.log_end_offset(),
        expected[expected.len() - 2].next_offset()
    );
}

/// An epoch a leader begins is kept in memory until data follows it, and one dropped at
/// the log end is dropped in memory only (every open drops such entries from what it
/// reads): stepping up or down on an idle partition writes nothing. Data appended after
/// either — even of an older epoch, which assigns nothing new — rewrites the file first,
/// so no reopen takes a dropped epoch for one describing that data, and every epoch with
/// data is in the file before its data.
#[test]
fn epochs_at_the_log_end_reach_the_file_before_data_follows_them() {
    let dir = tempdir();
    let path = dir
        .path()
        .join(kraftd_log::epoch::LEADER_EPOCH_CHECKPOINT_FILE);
    let entries = |log: &Log| -> Vec<(i32, i64)> {
        log.epoch_entries()
            .iter()
            .map(|e| (e.epoch, e.start_offset))
            .collect()
    };
    let mut log = Log::open(dir.path(), config(), 0).unwrap();
    log.append_as_follower(leader_batch(0, 5, 10, 1000), 0)
        .unwrap();
    let five = "0\n1\n5 0\n";
    assert_eq!(std::fs::read_to_string(&path).unwrap(), five);

    // Leader at epoch 7 with nothing written, then follower again: no write at all.
    log.assign_epoch_start_offset(7).unwrap();
    assert_eq!(entries(&log), vec![(5, 0), (7, 10)]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), five);
    log.truncate_to(10).unwrap();
    assert_eq!(entries(&log), vec![(5, 0)]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), five);
    log.close().unwrap();

    // A file holding an empty epoch at the log end (as an older kraftd, or a crash between
    // an epoch's write and its data, leaves it): dropped on open, the file untouched.
    let stale = "0\n2\n5 0\n7 10\n";
    std::fs::write(&path, stale).unwrap();
    let mut log = Log::open_after_clean_shutdown(dir.path(), config(), 0).unwrap();
    assert_eq!(entries(&log), vec![(5, 0)]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), stale);

    // More data of epoch 5 (a new leader replicating older batches): the file is
    // rewritten before it, so neither a clean nor an unclean reopen sees epoch 7 at 10.
    log.append_as_follower(leader_batch(10, 5, 10, 2000), 0)
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), five);

    // Leading epoch 8, then writing in it: the entry is in the file with the data.
    log.assign_epoch_start_offset(8).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), five);
    log.append_as_leader(producer_batch(3, 30, 3000), 8, 0)
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "0\n2\n5 0\n8 20\n");
    log.close().unwrap();
    let log = Log::open_after_clean_shutdown(dir.path(), config(), 0).unwrap();
    assert_eq!(entries(&log), vec![(5, 0), (8, 20)]);
    drop(log);
    let log = Log::open(dir.path(), config(), 0).unwrap();
    assert_eq!(entries(&log), vec![(5, 0), (8, 20)]);
}
