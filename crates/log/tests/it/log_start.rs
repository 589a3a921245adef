//! Kafka's log start offset inside a segment (DeleteRecords): reads below it are out of
//! range, it only moves forward and never past the high watermark or the log end, whole
//! segments below it are deleted, retention respects it, and it survives a reopen through
//! the partition directory's `log-start-offset` file.

use kraftd_log::{Log, LogConfig, LogError};

use crate::common::*;

const FILE: &str = "log-start-offset";

/// A log with `batches` leader batches of 2 records each (epoch 1 then 2 from offset 10).
fn filled(dir: &std::path::Path, config: LogConfig, batches: usize) -> Log {
    let mut log = Log::open(dir, config, 0).unwrap();
    for i in 0..batches {
        let epoch = if i < 5 { 1 } else { 2 };
        log.append_as_leader(producer_batch(2, 30, 1000 + i as i64), epoch, 0)
            .unwrap();
    }
    log
}

#[test]
fn reads_below_the_log_start_are_out_of_range() {
    let dir = tempdir();
    let mut log = filled(dir.path(), LogConfig::default(), 10);
    assert_eq!(log.segment_count(), 1);
    assert!(log.maybe_increment_log_start_offset(7, 20).unwrap());
    assert_eq!(log.log_start_offset(), 7);
    for offset in [0, 5, 6] {
        let e = log.read(offset, 1 << 20, 20).unwrap_err();
        assert!(e.is_offset_out_of_range(), "{e:?}");
    }
    // A read at the start returns the whole batch holding it, as Kafka does.
    let r = log.read(7, 1 << 20, 20).unwrap();
    assert_eq!(r.base_offset, 6);
    assert_eq!(r.log_start_offset, 7);
    // The segment is the active one: nothing is deleted, the bytes stay.
    assert_eq!(log.segment_base_offsets(), vec![0]);
    // ListOffsets by time never answers below the start.
    assert_eq!(log.offset_for_timestamp(0).unwrap().unwrap().0, 7);
}

#[test]
fn the_log_start_only_moves_forward_and_never_past_the_high_watermark_or_the_end() {
    let dir = tempdir();
    let mut log = filled(dir.path(), LogConfig::default(), 5);
    assert!(log.maybe_increment_log_start_offset(4, 8).unwrap());
    assert!(!log.maybe_increment_log_start_offset(4, 8).unwrap());
    assert!(!log.maybe_increment_log_start_offset(2, 8).unwrap());
    assert_eq!(log.log_start_offset(), 4);
    let past_hw = log.maybe_increment_log_start_offset(9, 8).unwrap_err();
    assert!(matches!(
        past_hw,
        LogError::OffsetOutOfRange { offset: 9, .. }
    ));
    let past_end = log
        .maybe_increment_log_start_offset(11, i64::MAX)
        .unwrap_err();
    assert!(past_end.is_offset_out_of_range());
    assert_eq!(log.log_start_offset(), 4);
    // Up to the end is allowed: the log is then empty for readers.
    assert!(log.maybe_increment_log_start_offset(10, 10).unwrap());
    assert_eq!(log.read(10, 1 << 20, 10).unwrap().bytes.len(), 0);
    assert!(log.epoch_entries().is_empty());
}

#[test]
fn whole_segments_below_the_log_start_are_deleted_and_the_epoch_cache_truncated() {
    let dir = tempdir();
    let mut log = filled(dir.path(), small_config(), 30);
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 4, "{bases:?}");
    // Inside the third segment: the first two go, the third stays.
    let start = bases[2] + 1;
    assert!(log.maybe_increment_log_start_offset(start, 60).unwrap());
    assert_eq!(log.segment_base_offsets()[0], bases[2]);
    assert_eq!(log.log_start_offset(), start);
    assert_eq!(log.stats().segments_deleted, 2);
    let epochs = log.epoch_entries();
    assert_eq!(epochs[0].start_offset, start.max(epochs[0].start_offset));
    assert!(epochs[0].start_offset >= start);
    assert_eq!(read_all(&log)[0].base_offset(), start - 1);
}

#[test]
fn the_log_start_survives_a_reopen_and_a_truncation_resets_it() {
    let dir = tempdir();
    let mut log = filled(dir.path(), small_config(), 30);
    let start = log.segment_base_offsets()[1] + 1;
    log.maybe_increment_log_start_offset(start, 60).unwrap();
    let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
    assert_eq!(text, format!("0\n1\n{start}\n"));
    let epochs = log.epoch_entries().to_vec();
    drop(log);

    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    assert_eq!(log.log_start_offset(), start);
    assert_eq!(log.epoch_entries(), epochs.as_slice());
    assert!(log
        .read(start - 1, 100, 60)
        .unwrap_err()
        .is_offset_out_of_range());
    log.close().unwrap();
    let log = Log::open_after_clean_shutdown(dir.path(), small_config(), 0).unwrap();
    assert_eq!(log.log_start_offset(), start);
    drop(log);

    // A full truncation (snapshot install, a follower below the leader's start) resets it.
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    log.truncate_fully_and_start_at(3).unwrap();
    assert_eq!(log.log_start_offset(), 3);
    assert!(!dir.path().join(FILE).exists());
    drop(log);
    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    assert_eq!(log.log_start_offset(), 3);
}

#[test]
fn a_stored_start_below_the_first_segment_is_ignored_and_one_past_the_end_empties_the_log() {
    let dir = tempdir();
    let log = filled(dir.path(), small_config(), 30);
    drop(log);
    std::fs::write(dir.path().join(FILE), "0\n1\n0\n").unwrap();
    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    assert_eq!(log.log_start_offset(), 0);
    assert_eq!(log.log_end_offset(), 60);
    drop(log);

    // Recovery lost what the start pointed into (or files were lost): start empty there.
    std::fs::write(dir.path().join(FILE), "0\n1\n75\n").unwrap();
    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    assert_eq!(log.log_start_offset(), 75);
    assert_eq!(log.log_end_offset(), 75);
    assert_eq!(log.segment_base_offsets(), vec![75]);
    drop(log);

    std::fs::write(dir.path().join(FILE), "garbage").unwrap();
    let e = Log::open(dir.path(), small_config(), 0).unwrap_err();
    assert!(matches!(e, LogError::Corrupt { .. }), "{e:?}");
}

#[test]
fn retention_keeps_respecting_the_log_start() {
    let dir = tempdir();
    let mut log = filled(dir.path(), small_config(), 30);
    let bases = log.segment_base_offsets();
    let start = bases[1] + 1;
    log.maybe_increment_log_start_offset(start, 60).unwrap();
    // Retention by bytes deletes whole segments beyond it; the start follows the first
    // segment's base only when that passes it.
    let first_size = std::fs::metadata(dir.path().join(format!("{:020}.log", bases[1])))
        .unwrap()
        .len();
    let config = LogConfig {
        retention_bytes: (log.size_in_bytes() - first_size) as i64,
        ..small_config()
    };
    log.set_config(config).unwrap();
    assert_eq!(log.apply_retention(0, 60).unwrap(), 1);
    assert_eq!(log.segment_base_offsets()[0], bases[2]);
    assert_eq!(log.log_start_offset(), bases[2]);
    // A retention pass that deletes nothing by its limits leaves the start alone.
    log.set_config(small_config()).unwrap();
    log.maybe_increment_log_start_offset(bases[2] + 3, 60)
        .unwrap();
    assert_eq!(log.apply_retention(0, 60).unwrap(), 0);
    assert_eq!(log.log_start_offset(), bases[2] + 3);
    // Truncating below the start (a follower's divergence) empties the log there.
    log.truncate_to(bases[2] + 1).unwrap();
    assert_eq!(log.log_start_offset(), bases[2] + 1);
    assert_eq!(log.log_end_offset(), bases[2] + 1);
}
