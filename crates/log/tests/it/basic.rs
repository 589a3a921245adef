//! The log's operations one by one: append (leader, follower), read, roll, truncate,
//! retention, timestamp lookup, snapshots, reopen.

use bytes::BytesMut;
use kraftd_log::{Log, LogConfig, LogError, SnapshotId};
use kraftd_protocol::records::TimestampType;

use crate::common::*;

#[test]
fn leader_append_assigns_offsets_and_stamps_epoch() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), LogConfig::default(), 0).unwrap();
    let a = log
        .append_as_leader(producer_batch(3, 10, 1000), 5, 0)
        .unwrap();
    assert_eq!(
        (a.first_offset, a.last_offset, a.log_append_time),
        (0, 2, -1)
    );
    let mut two = producer_batch(2, 10, 2000);
    two.extend_from_slice(&producer_batch(4, 10, 3000));
    let b = log.append_as_leader(two, 5, 0).unwrap();
    assert_eq!((b.first_offset, b.last_offset, b.batch_count), (3, 8, 2));
    assert_eq!(log.log_end_offset(), 9);
    let all = read_all(&log);
    assert_eq!(all.len(), 3);
    assert_eq!(
        all.iter()
            .map(|b| (b.base_offset(), b.last_offset()))
            .collect::<Vec<_>>(),
        vec![(0, 2), (3, 4), (5, 8)]
    );
    for b in &all {
        assert_eq!(b.partition_leader_epoch(), 5);
        b.validate_crc().unwrap();
    }
    assert_eq!(log.end_offset_for_epoch(5), Some((5, 9)));
}

#[test]
fn leader_append_refuses_bad_input_and_changes_nothing() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), LogConfig::default(), 0).unwrap();
    log.append_as_leader(producer_batch(1, 10, 0), 3, 0)
        .unwrap();
    let mut corrupt = producer_batch(2, 10, 0);
    let n = corrupt.len();
    corrupt[n - 1] ^= 1;
    assert!(matches!(
        log.append_as_leader(corrupt, 3, 0),
        Err(LogError::InvalidBatch { .. })
    ));
    let mut torn = producer_batch(2, 10, 0);
    torn.truncate(torn.len() - 3);
    assert!(matches!(
        log.append_as_leader(torn, 3, 0),
        Err(LogError::InvalidBatch { .. })
    ));
    assert!(matches!(
        log.append_as_leader(producer_batch(1, 10, 0), 2, 0),
        Err(LogError::EpochDecreased {
            epoch: 2,
            latest_epoch: 3
        })
    ));
    assert!(matches!(
        log.append_as_leader(producer_batch(1, 10, 0), -1, 0),
        Err(LogError::InvalidLeaderEpoch { .. })
    ));
    let small = LogConfig {
        max_message_bytes: 100,
        ..LogConfig::default()
    };
    log.set_config(small).unwrap();
    assert!(matches!(
        log.append_as_leader(producer_batch(5, 100, 0), 3, 0),
        Err(LogError::RecordTooLarge { .. })
    ));
    assert_eq!(log.log_end_offset(), 1);
    assert_eq!(read_all(&log).len(), 1);
}

#[test]
fn log_append_time_is_stamped() {
    let dir = tempdir();
    let config = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    };
    let mut log = Log::open(dir.path(), config, 0).unwrap();
    let info = log
        .append_as_leader(producer_batch(2, 10, 5), 0, 777)
        .unwrap();
    assert_eq!(info.log_append_time, 777);
    let b = &read_all(&log)[0];
    assert_eq!(b.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(b.max_timestamp(), 777);
    b.validate_crc().unwrap();
}

#[test]
fn follower_append_checks_contiguity_and_epochs() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), LogConfig::default(), 0).unwrap();
    let mut data = BytesMut::new();
    data.extend_from_slice(&leader_batch(0, 1, 3, 0));
    data.extend_from_slice(&leader_batch(3, 2, 2, 0));
    let info = log.append_as_follower(data.freeze(), 0).unwrap();
    assert_eq!((info.first_offset, info.last_offset), (0, 4));
    assert!(matches!(
        log.append_as_follower(leader_batch(6, 2, 1, 0), 0),
        Err(LogError::NonContiguousOffset {
            expected: 5,
            found: 6,
            ..
        })
    ));
    assert!(matches!(
        log.append_as_follower(leader_batch(5, 1, 1, 0), 0),
        Err(LogError::EpochDecreased {
            epoch: 1,
            latest_epoch: 2,
            ..
        })
    ));
    // A fetch response cut inside its last batch: the whole batches before it go in.
    let mut cut = BytesMut::new();
    cut.extend_from_slice(&leader_batch(5, 4, 1, 0));
    let next = leader_batch(6, 4, 3, 0);
    cut.extend_from_slice(&next[..next.len() - 5]);
    let info = log.append_as_follower(cut.freeze(), 0).unwrap();
    assert_eq!((info.first_offset, info.last_offset), (5, 5));
    assert_eq!(log.log_end_offset(), 6);
    let epochs: Vec<(i32, i64)> = log
        .epoch_entries()
        .iter()
        .map(|e| (e.epoch, e.start_offset))
        .collect();
    assert_eq!(epochs, vec![(1, 0), (2, 3), (4, 5)]);
    assert_eq!(log.end_offset_for_epoch(3), Some((2, 5)));
    assert_eq!(log.end_offset_for_epoch(0), Some((0, 0)));
    // Follower batches are stored byte for byte.
    let read = log.read(0, 1 << 20, i64::MAX).unwrap();
    assert_eq!(&read.bytes[..], &data_prefix(&read.bytes)[..]);
}

fn data_prefix(b: &bytes::Bytes) -> Vec<u8> {
    b.to_vec()
}

#[test]
fn read_bounds_and_errors() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    for i in 0..10 {
        log.append_as_leader(producer_batch(2, 30, i * 10), 0, 0)
            .unwrap();
    }
    assert_eq!(log.log_end_offset(), 20);
    assert!(log.segment_count() > 1);
    // Out of range.
    for bad in [-1, 21, 100] {
        let e = log.read(bad, 1000, i64::MAX).unwrap_err();
        assert!(e.is_offset_out_of_range(), "{bad}: {e}");
    }
    // At the end: nothing.
    let r = log.read(20, 1000, i64::MAX).unwrap();
    assert!(r.bytes.is_empty());
    assert_eq!(r.next_offset, 20);
    // From the middle of a batch: the whole batch.
    let r = log.read(5, 1, i64::MAX).unwrap();
    let bs = batches(&r.bytes);
    assert_eq!(bs.len(), 1, "at least one batch even over max_bytes");
    assert_eq!((bs[0].base_offset(), r.next_offset), (4, 6));
    // Upper bound (high watermark).
    let r = log.read(0, 1 << 20, 6).unwrap();
    assert_eq!(batches(&r.bytes).last().unwrap().last_offset(), 5);
    let r = log.read(6, 1 << 20, 6).unwrap();
    assert!(r.bytes.is_empty());
    let r = log.read(6, 1 << 20, 7).unwrap();
    assert!(
        r.bytes.is_empty(),
        "a batch straddling the bound is withheld"
    );
}

#[test]
fn roll_truncate_and_reopen() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    for i in 0..30 {
        log.append_as_leader(producer_batch(3, 20, i), (i / 10) as i32, 0)
            .unwrap();
    }
    let segments = log.segment_base_offsets();
    assert!(segments.len() >= 3, "{segments:?}");
    assert_eq!(log.take_truncated_floor(), None);
    log.truncate_to(45).unwrap();
    assert_eq!(log.log_end_offset(), 45);
    log.truncate_to(44).unwrap();
    assert_eq!(log.log_end_offset(), 42, "a straddling batch goes whole");
    // The log cleaner learns the lowest point truncated to since it last asked, once.
    assert_eq!(log.take_truncated_floor(), Some(44));
    assert_eq!(log.take_truncated_floor(), None);
    assert_eq!(log.latest_epoch(), Some(1));
    let before = read_all(&log);
    log.close().unwrap();
    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    assert_eq!(log.log_end_offset(), 42);
    assert_eq!(read_all(&log), before);
    assert_eq!(log.stats().recovery_truncations, 0);
    assert_eq!(
        log.epoch_entries()
            .iter()
            .map(|e| (e.epoch, e.start_offset))
            .collect::<Vec<_>>(),
        vec![(0, 0), (1, 30)]
    );
}

#[test]
fn truncate_fully_and_start_at() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    for i in 0..20 {
        log.append_as_leader(producer_batch(3, 20, i), 1, 0)
            .unwrap();
    }
    log.truncate_fully_and_start_at(1000).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (1000, 1000));
    assert!(log.epoch_entries().is_empty());
    assert!(log
        .read(999, 10, i64::MAX)
        .unwrap_err()
        .is_offset_out_of_range());
    log.append_as_follower(leader_batch(1000, 4, 2, 0), 0)
        .unwrap();
    drop(log);
    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (1000, 1002));
    assert_eq!(log.segment_base_offsets(), vec![1000]);
    assert_eq!(log.end_offset_for_epoch(4), Some((4, 1002)));
}

#[test]
fn retention_by_bytes_and_time() {
    let dir = tempdir();
    let mut config = small_config();
    config.retention_bytes = 2048;
    let mut log = Log::open(dir.path(), config.clone(), 0).unwrap();
    for i in 0..40 {
        log.append_as_leader(producer_batch(2, 40, 1000 + i), 0, 0)
            .unwrap();
    }
    let size = log.size_in_bytes();
    assert!(size > 4096);
    // Nothing above the high watermark goes.
    assert_eq!(log.apply_retention(0, 0).unwrap(), 0);
    let deleted = log.apply_retention(0, i64::MAX).unwrap();
    assert!(deleted > 0);
    assert!(log.size_in_bytes() <= 2048 + 1024);
    assert!(log.size_in_bytes() >= 2048 - 1024);
    let start = log.log_start_offset();
    assert!(start > 0);
    assert_eq!(log.epoch_entries()[0].start_offset, start);
    assert!(log
        .read(start - 1, 10, i64::MAX)
        .unwrap_err()
        .is_offset_out_of_range());
    // Time: everything older than retention.ms goes, the active segment after a roll.
    config.retention_bytes = -1;
    config.retention_ms = 100;
    log.set_config(config).unwrap();
    let end = log.log_end_offset();
    // The newest timestamp is 1040: at 1140 it is not yet expired, older segments are.
    log.apply_retention(1000 + 40 + 100, i64::MAX).unwrap();
    assert!(log.log_end_offset() > log.log_start_offset());
    assert!(log.apply_retention(1000 + 40 + 101, i64::MAX).unwrap() > 0);
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (end, end));
    assert_eq!(log.segment_count(), 1);
}

#[test]
fn timestamp_lookup() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    // Offsets 2i, 2i+1 get timestamps 100i, 100i+1.
    for i in 0..30 {
        log.append_as_leader(producer_batch(2, 30, 100 * i), 0, 0)
            .unwrap();
    }
    assert_eq!(log.offset_for_timestamp(0).unwrap(), Some((0, 0)));
    assert_eq!(log.offset_for_timestamp(1).unwrap(), Some((1, 1)));
    assert_eq!(log.offset_for_timestamp(2).unwrap(), Some((2, 100)));
    assert_eq!(log.offset_for_timestamp(1550).unwrap(), Some((32, 1600)));
    assert_eq!(log.offset_for_timestamp(2901).unwrap(), Some((59, 2901)));
    assert_eq!(log.offset_for_timestamp(2902).unwrap(), None);
    // Reopened, older segments answer from their loaded indexes.
    drop(log);
    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    for i in 0..30 {
        assert_eq!(
            log.offset_for_timestamp(100 * i - 50).unwrap(),
            Some((2 * i, 100 * i))
        );
    }
}

#[test]
fn snapshots_write_read_list_delete() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    let id = SnapshotId {
        end_offset: 10,
        epoch: 2,
    };
    let mut w = log.create_snapshot(id).unwrap();
    w.append(b"hello ").unwrap();
    w.append(b"snapshot").unwrap();
    assert!(dir
        .path()
        .join("00000000000000000010-0000000002.checkpoint.part")
        .exists());
    assert_eq!(log.commit_snapshot(w).unwrap(), id);
    assert!(dir
        .path()
        .join("00000000000000000010-0000000002.checkpoint")
        .exists());
    assert!(matches!(
        log.create_snapshot(id),
        Err(LogError::SnapshotExists { .. })
    ));
    let r = log.open_snapshot(id).unwrap();
    assert_eq!(r.size_in_bytes(), 14);
    assert_eq!(&r.read(0, 5).unwrap()[..], b"hello");
    assert_eq!(&r.read(6, 100).unwrap()[..], b"snapshot");
    assert!(r.read(14, 100).unwrap().is_empty());
    // An abandoned writer leaves nothing; a leftover .part is removed on open.
    drop(
        log.create_snapshot(SnapshotId {
            end_offset: 20,
            epoch: 2,
        })
        .unwrap(),
    );
    assert!(!dir
        .path()
        .join("00000000000000000020-0000000002.checkpoint.part")
        .exists());
    std::fs::write(
        dir.path()
            .join("00000000000000000030-0000000002.checkpoint.part"),
        b"x",
    )
    .unwrap();
    let id2 = SnapshotId {
        end_offset: 40,
        epoch: 3,
    };
    let w = log.create_snapshot(id2).unwrap();
    log.commit_snapshot(w).unwrap();
    drop(log);
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    assert!(!dir
        .path()
        .join("00000000000000000030-0000000002.checkpoint.part")
        .exists());
    assert_eq!(log.snapshots(), vec![id, id2]);
    assert_eq!(log.latest_snapshot(), Some(id2));
    // The metadata log's cleaning: segments below the snapshot, then old snapshots.
    for i in 0..30 {
        log.append_as_leader(producer_batch(2, 30, i), 3, 0)
            .unwrap();
    }
    assert!(log.delete_segments_before(40).unwrap() > 0);
    assert!(log.log_start_offset() <= 40 && log.log_start_offset() > 10);
    assert_eq!(log.delete_snapshots_before_log_start().unwrap(), 1);
    assert_eq!(log.snapshots(), vec![id2]);
    assert!(matches!(
        log.open_snapshot(id),
        Err(LogError::SnapshotNotFound { .. })
    ));
}

#[test]
fn corrupt_older_segment_is_an_error_naming_the_file() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    for i in 0..30 {
        log.append_as_leader(producer_batch(2, 30, i), 0, 0)
            .unwrap();
    }
    let first = dir.path().join("00000000000000000000.log");
    drop(log);
    // Remove the indexes so the segment is re-validated, and corrupt a batch's CRC-covered
    // bytes in the middle.
    std::fs::remove_file(dir.path().join("00000000000000000000.index")).unwrap();
    let mut bytes = std::fs::read(&first).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&first, &bytes).unwrap();
    let err = Log::open(dir.path(), small_config(), 0).unwrap_err();
    match err {
        LogError::Corrupt { path, .. } => assert_eq!(path, first),
        other => panic!("unexpected {other}"),
    }
    // A torn older segment (its indexes intact) is an error too, not a silent cut.
    let dir = tempdir();
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    for i in 0..30 {
        log.append_as_leader(producer_batch(2, 30, i), 0, 0)
            .unwrap();
    }
    drop(log);
    let first = dir.path().join("00000000000000000000.log");
    let len = std::fs::metadata(&first).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&first)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let err = Log::open(dir.path(), small_config(), 0).unwrap_err();
    assert!(
        matches!(err, LogError::Corrupt { ref path, .. } if *path == first),
        "{err}"
    );
}

#[test]
fn flush_policy_and_flushed_offset() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), LogConfig::metadata_log(), 0).unwrap();
    log.append_as_leader(producer_batch(2, 10, 0), 0, 0)
        .unwrap();
    assert_eq!(
        log.flushed_offset(),
        2,
        "the metadata log flushes every append"
    );
    let dir2 = tempdir();
    let mut data = Log::open(dir2.path(), LogConfig::default(), 0).unwrap();
    data.append_as_leader(producer_batch(2, 10, 0), 0, 0)
        .unwrap();
    assert_eq!(
        data.flushed_offset(),
        0,
        "data partitions never force by default"
    );
    data.flush().unwrap();
    assert_eq!(data.flushed_offset(), 2);
    assert_eq!(data.stats().flushes, 1);
    let config = LogConfig {
        flush_ms: 1000,
        ..LogConfig::default()
    };
    data.set_config(config).unwrap();
    data.append_as_leader(producer_batch(1, 10, 0), 0, 500)
        .unwrap();
    assert_eq!(data.flushed_offset(), 2);
    data.append_as_leader(producer_batch(1, 10, 0), 0, 1000)
        .unwrap();
    assert_eq!(data.flushed_offset(), 4);
    // An idle log is flushed by the owner's tick once flush.ms has passed.
    data.append_as_leader(producer_batch(1, 10, 0), 0, 1500)
        .unwrap();
    assert!(!data.maybe_flush(1999).unwrap());
    assert!(data.maybe_flush(2000).unwrap());
    assert_eq!(data.flushed_offset(), 5);
}

#[test]
fn segment_ms_rolls() {
    let dir = tempdir();
    let config = LogConfig {
        segment_ms: 1000,
        ..LogConfig::default()
    };
    let mut log = Log::open(dir.path(), config, 0).unwrap();
    log.append_as_leader(producer_batch(1, 10, 0), 0, 0)
        .unwrap();
    log.append_as_leader(producer_batch(1, 10, 0), 0, 1000)
        .unwrap();
    assert_eq!(log.segment_count(), 1);
    log.append_as_leader(producer_batch(1, 10, 0), 0, 1001)
        .unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);
}

#[test]
fn readers_plan_under_the_lock_and_read_outside_it() {
    // One writer appending and truncating; readers hold the lock only to plan.
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Log>();
    assert_send_sync::<kraftd_log::PendingRead>();
    let dir = tempdir();
    let log = std::sync::Arc::new(std::sync::RwLock::new(
        Log::open(dir.path(), small_config(), 0).unwrap(),
    ));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (log, done) = (log.clone(), done.clone());
        std::thread::spawn(move || {
            for i in 0..400 {
                let mut log = log.write().unwrap();
                log.append_as_leader(producer_batch(2, 20, i), 0, 0)
                    .unwrap();
                if i % 7 == 0 {
                    let end = log.log_end_offset();
                    log.truncate_to((end - 3).max(0)).unwrap();
                }
                drop(log);
                std::thread::yield_now();
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (log, done) = (log.clone(), done.clone());
            std::thread::spawn(move || {
                let (mut ok, mut raced) = (0, 0);
                let mut offset = 0i64;
                while !done.load(std::sync::atomic::Ordering::SeqCst) || ok < 50 {
                    let pending = {
                        let log = log.read().unwrap();
                        offset = offset.clamp(log.log_start_offset(), log.log_end_offset());
                        log.plan_read(offset, 300 + r * 200, i64::MAX).unwrap()
                    };
                    match pending.execute() {
                        Ok(result) => {
                            let bs = batches(&result.bytes);
                            let mut next = bs.first().map_or(offset, |b| b.base_offset());
                            assert!(bs.first().is_none_or(|b| b.last_offset() >= offset));
                            for b in &bs {
                                b.validate_crc().unwrap();
                                assert_eq!(b.base_offset(), next);
                                next = b.next_offset();
                            }
                            offset = if bs.is_empty() { 0 } else { result.next_offset };
                            ok += 1;
                        }
                        Err(LogError::ConcurrentTruncation { .. }) => raced += 1,
                        Err(e) => panic!("{e}"),
                    }
                }
                (ok, raced)
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        let (ok, raced) = r.join().unwrap();
        eprintln!("reader: {ok} reads, {raced} overlapped a truncation");
        assert!(ok >= 50);
    }
}

#[test]
fn verify_finds_corruption_open_trusts() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    for i in 0..30 {
        log.append_as_leader(producer_batch(2, 30, i), 0, 0)
            .unwrap();
    }
    log.verify().unwrap();
    log.close().unwrap();
    // Damage a record in the middle of the first (sealed) segment, indexes intact.
    let first = dir.path().join("00000000000000000000.log");
    let mut bytes = std::fs::read(&first).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&first, &bytes).unwrap();
    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    match log.verify().unwrap_err() {
        LogError::Corrupt { path, position, .. } => {
            assert_eq!(path, first);
            assert!(position <= mid as u64);
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn a_missing_middle_segment_is_an_error() {
    let dir = tempdir();
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    for i in 0..30 {
        log.append_as_leader(producer_batch(2, 30, i), 0, 0)
            .unwrap();
    }
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 3);
    drop(log);
    std::fs::remove_file(dir.path().join(format!("{:020}.log", bases[1]))).unwrap();
    let err = Log::open(dir.path(), small_config(), 0).unwrap_err();
    assert!(matches!(err, LogError::Corrupt { .. }), "{err}");
}

#[test]
fn interrupted_full_truncation_leaves_a_log_open_accepts() {
    // A crash after the old segments were renamed away and the new one created, before
    // the renamed files were removed.
    let dir = tempdir();
    let mut log = Log::open(dir.path(), small_config(), 0).unwrap();
    for i in 0..10 {
        log.append_as_leader(producer_batch(2, 30, i), 0, 0)
            .unwrap();
    }
    drop(log);
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "log") {
            let mut target = p.clone().into_os_string();
            target.push(".deleted");
            std::fs::rename(&p, target).unwrap();
        }
    }
    std::fs::write(dir.path().join("00000000000000000500.log"), b"").unwrap();
    let log = Log::open(dir.path(), small_config(), 0).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (500, 500));
    assert_eq!(log.segment_base_offsets(), vec![500]);
    assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".deleted")));
}

#[test]
fn rolls_when_the_index_is_full_or_offsets_would_not_fit() {
    // segment.index.bytes: two entries, one per batch (index.interval.bytes 0).
    let dir = tempdir();
    let config = LogConfig {
        segment_index_bytes: 16,
        index_interval_bytes: 0,
        ..LogConfig::default()
    };
    let mut log = Log::open(dir.path(), config, 0).unwrap();
    for _ in 0..6 {
        log.append_as_leader(producer_batch(1, 10, 0), 0, 0)
            .unwrap();
    }
    assert!(log.segment_count() >= 2, "{:?}", log.segment_base_offsets());

    // Relative offsets are u32 (Kafka: int32): a batch too far from the base rolls.
    let dir = tempdir();
    let mut log = Log::open(dir.path(), LogConfig::default(), 0).unwrap();
    let far = i64::from(i32::MAX) - 1;
    let mut b = kraftd_protocol::records::RecordBatchBuilder::new(0).partition_leader_epoch(0);
    b.append_with_offset(0, 0, None, None, Vec::new()).unwrap();
    b.append_with_offset(far, 0, None, None, Vec::new())
        .unwrap();
    log.append_as_follower(b.build().unwrap(), 0).unwrap();
    assert_eq!(log.log_end_offset(), far + 1);
    log.append_as_follower(leader_batch(far + 1, 0, 2, 0), 0)
        .unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, far + 1]);
    let r = log.read(far, 1000, i64::MAX).unwrap();
    assert_eq!(r.next_offset, far + 1);
    drop(log);
    let log = Log::open(dir.path(), LogConfig::default(), 0).unwrap();
    assert_eq!(log.log_end_offset(), far + 3);
}
