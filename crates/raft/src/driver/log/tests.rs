//! [`MetadataLog`](super::MetadataLog)'s tests: the core's contract, Kafka's `quorum-state`
//! bytes, reopening, snapshots, disk failures and flushes run elsewhere.

use std::cell::RefCell;

use super::*;
use crate::core::log::conformance;

#[test]
fn metadata_log_meets_the_core_contract() {
    let dirs = RefCell::new(Vec::new());
    conformance::check(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).expect("open");
        dirs.borrow_mut().push(dir);
        log
    });
}

#[test]
fn quorum_state_round_trips_in_kafkas_json() {
    let dir = tempfile::tempdir().unwrap();
    let log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).unwrap();
    assert_eq!(log.read_quorum_state().unwrap(), None);
    let state = QuorumStateData {
        leader_epoch: 7,
        leader_id: 2,
        voted_id: 2,
    };
    log.write_quorum_state(&state).unwrap();
    drop(log);
    let log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).unwrap();
    assert_eq!(log.read_quorum_state().unwrap(), Some(state));
}

#[test]
fn a_partial_batch_at_the_end_of_a_fetch_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut leader = MetadataLog::open(&dir.path().join("l"), LogConfig::metadata_log()).unwrap();
    for _ in 0..2 {
        let mut b = kraftd_protocol::records::RecordBatchBuilder::new(0);
        b.append(0, None, Some(Bytes::from_static(b"x")), Vec::new())
            .unwrap();
        leader.append_as_leader(b.build().unwrap(), 1).unwrap();
    }
    let all = leader.read(0, 1 << 20);
    let cut = all.slice(..all.len() - 3);
    let mut follower = MetadataLog::open(&dir.path().join("f"), LogConfig::metadata_log()).unwrap();
    follower.append_as_follower(cut, 1).unwrap();
    assert_eq!(follower.end_offset(), 1);
    // Garbage is refused and appends nothing.
    assert!(follower
        .append_as_follower(Bytes::from_static(&[0xff; 80]), 1)
        .is_err());
    assert_eq!(follower.end_offset(), 1);
}

#[test]
fn data_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).unwrap();
    let mut b = kraftd_protocol::records::RecordBatchBuilder::new(0);
    b.append(0, None, Some(Bytes::from_static(b"x")), Vec::new())
        .unwrap();
    log.append_as_leader(b.build().unwrap(), 3).unwrap();
    assert_eq!(log.flush(), 1);
    drop(log);
    let log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).unwrap();
    assert_eq!((log.end_offset(), log.last_epoch()), (1, 3));
}

#[test]
fn an_installed_snapshot_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).unwrap();
    let id = SnapshotId {
        end_offset: 42,
        epoch: 5,
    };
    log.install_snapshot(id, b"state").unwrap();
    drop(log);
    let log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).unwrap();
    assert_eq!(log.latest_snapshot(), Some(id));
    assert_eq!(
        (log.start_offset(), log.end_offset(), log.last_epoch()),
        (42, 42, 5)
    );
    assert_eq!(&log.read_snapshot(id, 0, 100).unwrap().0[..], b"state");
}

fn one_record(bytes: usize) -> Bytes {
    let mut b = kraftd_protocol::records::RecordBatchBuilder::new(0);
    b.append(0, None, Some(Bytes::from(vec![b'x'; bytes])), Vec::new())
        .unwrap();
    b.build().unwrap()
}

#[test]
fn a_disk_failure_is_recorded_and_fails_the_log_without_a_panic() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("__cluster_metadata-0");
    let mut config = LogConfig::metadata_log();
    // Small segments: the second append rolls, which creates a file in the directory.
    config.segment_bytes = 400;
    let mut log = MetadataLog::open(&dir, config).unwrap();
    assert_eq!(log.append_as_leader(one_record(200), 1), Ok((0, 0)));
    assert_eq!(log.flush(), 1);
    assert_eq!(log.failure(), None);
    std::fs::remove_dir_all(&dir).unwrap();

    // The roll cannot create the next segment: recorded, no panic, nothing appended.
    let range = log.append_as_leader(one_record(200), 1);
    assert_eq!(
        range,
        Ok((1, 1)),
        "a failed log answers with the would-be range"
    );
    let failure = log.failure().cloned().expect("the failure is recorded");
    assert_eq!(failure.dir, dir);
    assert_eq!(failure.op, "append");
    let text = failure.to_string();
    assert!(
        text.contains(&dir.display().to_string()) && text.contains("append failed"),
        "{text}"
    );

    // Failed: nothing more is written, read or reported durable.
    assert_eq!(log.end_offset(), 1);
    assert_eq!(log.flush(), 1);
    assert_eq!(log.flushed_offset(), 1);
    assert_eq!(log.append_as_leader(one_record(10), 1), Ok((1, 1)));
    assert_eq!(log.end_offset(), 1);
    assert!(log.read(0, 1 << 20).is_empty());
    assert!(log
        .append_as_follower(Bytes::from_static(&[0; 10]), 1)
        .is_err());
    let id = SnapshotId {
        end_offset: 1,
        epoch: 1,
    };
    assert!(log.store_snapshot(id, b"s").is_err());
    assert!(log.begin_snapshot_download(id).is_err());
    assert!(log.install_snapshot(id, b"s").is_err());
    log.truncate_to(0);
    assert_eq!(log.end_offset(), 1);
    assert_eq!(log.failure(), Some(&failure), "the first failure is kept");
    match log.close() {
        Err(MetadataLogError::Failed(f)) => assert_eq!(f, failure),
        other => panic!("closing a failed log: {other:?}"),
    }
}

#[test]
fn a_flush_run_elsewhere_is_taken_by_the_next_flush_and_covers_only_what_it_synced() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).unwrap();
    log.append_as_leader(one_record(10), 1).unwrap();
    let pending = log.plan_flush().expect("not failed");
    log.append_as_leader(one_record(10), 1).unwrap();
    let done = std::thread::spawn(move || pending.execute())
        .join()
        .unwrap();
    assert_eq!(log.flushed_offset(), 0);
    log.flush_completed(done);
    assert_eq!(log.flush(), 1, "what was appended meanwhile is not covered");
    assert_eq!(log.flush(), 2, "a flush without one handed in is complete");

    // One handed in and not taken is discarded: the next flush is complete.
    log.append_as_leader(one_record(10), 1).unwrap();
    let pending = log.plan_flush().unwrap();
    log.append_as_leader(one_record(10), 1).unwrap();
    log.flush_completed(pending.execute());
    log.discard_completed_flush();
    assert_eq!(log.flush(), 4);
}

#[test]
fn a_failed_flush_run_elsewhere_fails_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).unwrap();
    log.flush_completed(Err(kraftd_log::LogError::Io {
        op: "fsync",
        path: dir.path().join("00000000000000000000.log"),
        source: std::io::Error::other("injected"),
    }));
    let failure = log.failure().expect("failed");
    assert_eq!(failure.op, "flush");
    assert!(failure.reason.contains("injected"), "{failure}");
    assert!(log.plan_flush().is_none());
}

#[test]
fn a_refused_batch_is_no_disk_failure() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).unwrap();
    assert!(log
        .append_as_follower(Bytes::from_static(&[0xff; 80]), 1)
        .is_err());
    assert!(log.append_as_leader(one_record(1), 2).is_ok());
    assert!(log.append_as_leader(one_record(1), 1).is_err());
    assert_eq!(log.failure(), None);
}

#[test]
fn deleting_before_a_snapshot_removes_whole_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).unwrap();
    for _ in 0..3 {
        let mut b = kraftd_protocol::records::RecordBatchBuilder::new(0);
        b.append(0, None, Some(Bytes::from_static(b"x")), Vec::new())
            .unwrap();
        log.append_as_leader(b.build().unwrap(), 1).unwrap();
        log.log.roll().unwrap();
    }
    let id = SnapshotId {
        end_offset: 2,
        epoch: 1,
    };
    log.store_snapshot(id, b"s").unwrap();
    assert_eq!(log.delete_before_latest_snapshot(), 2);
    assert_eq!((log.start_offset(), log.end_offset()), (2, 3));
}

/// What Kafka 4.4.0's `FileQuorumStateStore` wrote for `withElectedLeader(7, 3,
/// Optional.of(ReplicaKey.of(3, NO_DIRECTORY_ID)), {1,2,3})` at `KRAFT_VERSION_1`.
const KAFKA_QUORUM_STATE_V1: &str = r#"{"leaderId":3,"leaderEpoch":7,"votedId":3,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}"#;

#[test]
fn the_quorum_state_file_holds_kafkas_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).unwrap();
    let state = QuorumStateData {
        leader_epoch: 7,
        leader_id: 3,
        voted_id: 3,
    };
    log.write_quorum_state(&state).unwrap();
    let path = dir.path().join(kraftd_log::quorum_state::QUORUM_STATE_FILE);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        KAFKA_QUORUM_STATE_V1.as_bytes()
    );

    // A file Kafka wrote under kraft.version 0 (data_version 0) reads too.
    std::fs::write(
        &path,
        r#"{"clusterId":"","leaderId":-1,"leaderEpoch":5,"votedId":2,"appliedOffset":0,"currentVoters":[{"voterId":2},{"voterId":3},{"voterId":1}],"data_version":0}"#,
    )
    .unwrap();
    assert_eq!(
        log.read_quorum_state().unwrap(),
        Some(QuorumStateData {
            leader_epoch: 5,
            leader_id: -1,
            voted_id: 2,
        })
    );
}

#[test]
fn a_bad_quorum_state_file_is_an_error_naming_the_file_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let log = MetadataLog::open(dir.path(), LogConfig::metadata_log()).unwrap();
    let path = dir.path().join(kraftd_log::quorum_state::QUORUM_STATE_FILE);
    for (contents, problem) in [
        ("{\"leaderId\":3,", "not valid JSON"),
        (
            &KAFKA_QUORUM_STATE_V1.replace("\"data_version\":1", "\"data_version\":2"),
            "data_version 2 is not within the supported versions 0 to 1",
        ),
        (
            &KAFKA_QUORUM_STATE_V1.replace("\"leaderEpoch\":7", "\"leaderEpoch\":\"7\""),
            "leaderEpoch is a string",
        ),
    ] {
        std::fs::write(&path, contents).unwrap();
        let e = log.read_quorum_state().unwrap_err().to_string();
        assert!(
            e.contains(&path.display().to_string()) && e.contains(problem),
            "{e}"
        );
    }
}

/// Cuts the active segment of the log in `dir` after the last batch below `durable`:
/// what a crash leaves when nothing appended since the last fsync reached the disk.
fn lose_unflushed_tail(dir: &Path, durable: i64) {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let active = logs.last().expect("a segment");
    let bytes = std::fs::read(active).unwrap();
    let mut pos = 0;
    while pos + 12 <= bytes.len() {
        let base = i64::from_be_bytes(bytes[pos..pos + 8].try_into().unwrap());
        if base >= durable {
            break;
        }
        let len = i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().unwrap());
        pos += 12 + len as usize;
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(active)
        .unwrap();
    file.set_len(pos as u64).unwrap();
    file.sync_all().unwrap();
}

/// A leader's HW counts the followers' durable offsets, so with three voters it can pass
/// the leader's own flushed offset (its fsync runs off the driver's task), and the
/// controller may snapshot there and delete the log before it. A crash then must not
/// leave the log ending below the snapshot, nor a hole between them.
#[test]
fn a_snapshot_above_the_flushed_offset_survives_a_crash_consistently() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("__cluster_metadata-0");
    let mut config = LogConfig::metadata_log();
    config.segment_bytes = 1000;
    let mut log = MetadataLog::open(&dir, config.clone()).unwrap();
    // Offsets 0..6 in rolled segments of two batches each (a roll syncs what it seals).
    for _ in 0..6 {
        log.append_as_leader(one_record(150), 1).unwrap();
    }
    let active_base = *log.inner().segment_base_offsets().last().unwrap();
    assert!(active_base >= 4, "{:?}", log.inner().segment_base_offsets());
    assert_eq!(log.flushed_offset(), active_base);
    // The leader's asynchronous flush covers one more batch; two more stay unflushed.
    log.append_as_leader(one_record(10), 1).unwrap();
    let pending = log.plan_flush().unwrap();
    log.flush_completed(pending.execute());
    let flushed = log.flush();
    assert_eq!(flushed, 7);
    log.append_as_leader(one_record(10), 1).unwrap();
    log.append_as_leader(one_record(10), 1).unwrap();
    assert_eq!(log.end_offset(), 9);

    // The HW (from two followers) is 8: snapshot there and delete before it.
    let id = SnapshotId {
        end_offset: 8,
        epoch: 1,
    };
    assert!(id.end_offset > log.flushed_offset());
    log.store_snapshot(id, b"state at 8").unwrap();
    assert!(
        log.flushed_offset() >= id.end_offset,
        "the log is durable through the snapshot before it exists"
    );
    let start = log.delete_before_latest_snapshot();
    assert!(start <= id.end_offset);
    let durable = log.flushed_offset();
    eprintln!(
        "DEBUG durable {durable} segs {:?}",
        log.inner().segment_base_offsets()
    );
    drop(log);

    // Crash: whatever was not fsynced is gone.
    lose_unflushed_tail(&dir, durable);
    let log = MetadataLog::open(&dir, config).unwrap();
    assert_eq!(log.latest_snapshot(), Some(id));
    let (start, end) = (log.start_offset(), log.end_offset());
    assert!(
        start <= id.end_offset,
        "log start {start} above the snapshot"
    );
    assert!(
        end >= id.end_offset,
        "the log ends at {end}, below the snapshot at {}",
        id.end_offset
    );
    assert_eq!(log.flushed_offset(), end, "recovery point");
    assert_eq!(log.last_epoch(), 1);
    // No hole: every offset from the start to the end reads back in order.
    let mut next = start;
    while next < end {
        let bytes = log.read(next, 1 << 20);
        assert!(!bytes.is_empty(), "nothing readable at {next} below {end}");
        for batch in Batches::new(bytes) {
            let batch = batch.unwrap();
            assert_eq!(batch.base_offset(), next);
            next = batch.next_offset();
        }
    }
    assert_eq!(next, end);
}
