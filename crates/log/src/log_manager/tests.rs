//! The manager's memory of its dirs (partitions spread by counts, deletions, a reopen;
//! cordoned dirs skipped), the
//! offset checkpoints in Kafka's format written only for the dirs that changed, the old
//! per-partition `log-start-offset` file taken over, and what a restart recovers.

use super::*;
use crate::checkpoint::{
    LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
};
use crate::LogConfig;
use bytes::Bytes;
use kraftd_protocol::records::RecordBatchBuilder;

const ID: Uuid = Uuid([7; 16]);

fn batch(offset: i64) -> Bytes {
    let mut builder = RecordBatchBuilder::new(offset);
    builder
        .append(0, None, Some(Bytes::from_static(b"v")), Vec::new())
        .unwrap();
    builder.build().unwrap()
}

fn open(dirs: &[&Path]) -> LogManager {
    LogManager::open(dirs.iter().map(|d| d.to_path_buf()).collect()).unwrap()
}

/// Partitions created at once from several threads (a delta's logs opened in parallel)
/// still spread by count: each picks its dir and is counted there in one step.
#[test]
fn partitions_created_in_parallel_spread_over_the_dirs() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let lm = open(&[a.path(), b.path()]);
    let barrier = std::sync::Barrier::new(8);
    let dirs: Vec<PathBuf> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|p| {
                let (lm, barrier) = (&lm, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let log = lm
                        .get_or_create("t", ID, p, LogConfig::default(), 0)
                        .unwrap();
                    log.dir().parent().unwrap().to_path_buf()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let in_a = dirs.iter().filter(|d| d.as_path() == a.path()).count();
    assert_eq!(in_a, 4, "{dirs:?}");
}

/// A dir offline from the start is neither created nor listed, and takes nothing new.
#[test]
fn a_dir_offline_at_start_is_left_alone() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let broken = b.path().join("not-a-dir");
    std::fs::write(&broken, "x").unwrap();
    let lm = LogManager::open_with(
        vec![a.path().to_path_buf(), broken.clone()],
        LogManagerOptions {
            offline_dirs: vec![(broken.clone(), "unreadable".to_string())],
            ..Default::default()
        },
    )
    .unwrap();
    assert!(lm.has_offline_dirs());
    assert!(!lm.is_log_dir_online(&broken));
    for p in 0..4 {
        let log = lm
            .get_or_create("t", ID, p, LogConfig::default(), 0)
            .unwrap();
        assert_eq!(log.dir().parent(), Some(a.path()));
    }
    assert!(lm.has_log("t", 3) && !lm.has_log("t", 4));
    assert!(broken.is_file());
}

#[test]
fn partitions_spread_over_the_dirs_by_count_and_deletions_are_forgotten() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let lm = open(&[a.path(), b.path()]);
    let logs: Vec<Log> = (0..10)
        .map(|p| {
            lm.get_or_create("t", ID, p, LogConfig::default(), 0)
                .unwrap()
        })
        .collect();
    let in_a = logs
        .iter()
        .filter(|l| l.dir().parent() == Some(a.path()))
        .count();
    assert_eq!(in_a, 5);
    assert_eq!(lm.partition_dirs().len(), 10);
    let doomed = logs[3].dir().to_path_buf();
    drop(logs);
    lm.delete_dir(&doomed).unwrap();
    assert!(!doomed.exists());
    assert_eq!(lm.partition_dirs().len(), 9);

    // A new manager finds the same directories with their topic ids.
    let lm = open(&[a.path(), b.path()]);
    let mut found: Vec<(String, i32, Option<Uuid>)> = lm
        .partition_dirs()
        .into_iter()
        .map(|(_, t, p, id)| (t, p, id))
        .collect();
    found.sort();
    let expected: Vec<_> = (0..10)
        .filter(|p| *p != 3)
        .map(|p| ("t".to_string(), p, Some(ID)))
        .collect();
    assert_eq!(found, expected);
    // Reopened where it is, and a re-created partition 3 goes to the emptier dir.
    let log = lm
        .get_or_create("t", ID, 0, LogConfig::default(), 0)
        .unwrap();
    assert!(log.dir().ends_with("t-0"));
    let log = lm
        .get_or_create("t", ID, 3, LogConfig::default(), 0)
        .unwrap();
    assert_eq!(log.dir(), doomed);
}

#[test]
fn new_partitions_skip_cordoned_dirs_unless_every_dir_is_cordoned() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let lm = open(&[a.path(), b.path()]);
    lm.set_cordoned_dirs(&[a.path().to_path_buf()]);
    assert!(lm.is_cordoned(a.path()));
    assert!(!lm.is_cordoned(b.path()));
    let parent = |p: i32| {
        lm.get_or_create("t", ID, p, LogConfig::default(), 0)
            .unwrap()
            .dir()
            .parent()
            .unwrap()
            .to_path_buf()
    };
    // Although `a` holds fewer partitions, every new one goes to `b`.
    for p in 0..3 {
        assert_eq!(parent(p), b.path());
    }
    // All cordoned: Kafka's `nextLogDirs` falls back to the first live dir.
    lm.set_cordoned_dirs(&[a.path().to_path_buf(), b.path().to_path_buf()]);
    assert_eq!(parent(3), a.path());
    // Uncordoned: spread by counts again (`a` holds 1, `b` 3).
    lm.set_cordoned_dirs(&[]);
    assert!(!lm.is_cordoned(a.path()));
    assert_eq!(parent(4), a.path());
}

#[test]
fn a_directory_of_another_topic_incarnation_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let lm = open(&[dir.path()]);
    let old = Uuid([1; 16]);
    let new = Uuid([2; 16]);
    let log = lm
        .get_or_create("t", old, 0, LogConfig::default(), 0)
        .unwrap();
    std::fs::write(log.dir().join("marker"), b"x").unwrap();
    drop(log);
    let log = lm
        .get_or_create("t", new, 0, LogConfig::default(), 0)
        .unwrap();
    assert!(!log.dir().join("marker").exists());
    assert_eq!(read_partition_metadata(log.dir()), Some(new));
    let again = lm.get_or_create("t", new, 0, LogConfig::default(), 0);
    drop(log);
    assert!(again.is_ok());
}

#[test]
fn checkpoints_are_kafkas_files_written_only_for_the_dirs_that_changed() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let lm = open(&[a.path(), b.path()]);
    let mut logs: Vec<Log> = ["a-b", "orders"]
        .iter()
        .flat_map(|t| (0..2).map(move |p| (*t, p)))
        .map(|(t, p)| lm.get_or_create(t, ID, p, LogConfig::default(), 0).unwrap())
        .collect();
    for (i, log) in logs.iter_mut().enumerate() {
        for o in 0..=i as i64 {
            log.append_as_follower(batch(o), 0).unwrap();
        }
        log.flush().unwrap();
        log.note_high_watermark(i as i64);
    }
    for kind in CheckpointKind::ALL {
        assert_eq!(lm.write_checkpoints(kind).unwrap(), 2, "{kind:?}");
    }
    // What Kafka writes (version 0, the entry count, `topic partition offset` lines), read
    // back by the one parser.
    let mut entries = Vec::new();
    for dir in [a.path(), b.path()] {
        let text = std::fs::read_to_string(dir.join(RECOVERY_POINT_OFFSET_CHECKPOINT)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[..2], ["0", "2"], "{text}");
        let read = checkpoint::read(&dir.join(RECOVERY_POINT_OFFSET_CHECKPOINT));
        assert_eq!(read.len(), 2);
        entries.extend(read);
        let text = std::fs::read_to_string(dir.join(LOG_START_OFFSET_CHECKPOINT)).unwrap();
        assert!(text.starts_with("0\n2\n"), "{text}");
    }
    entries.sort();
    let expected = checkpoint::format([
        ("a-b", 0, 1),
        ("a-b", 1, 2),
        ("orders", 0, 3),
        ("orders", 1, 4),
    ]);
    assert_eq!(
        checkpoint::format(entries.iter().map(|((t, p), o)| (t.as_str(), *p, *o))),
        expected
    );
    assert_eq!(lm.recovered_high_watermark("orders", 1), 3);

    // One partition's recovery point moves: only its dir's file is rewritten, and nothing
    // else is written; an unchanged value changes nothing.
    let moved_dir = logs[0].dir().parent().unwrap().to_path_buf();
    let other_dir = if moved_dir == a.path() {
        b.path()
    } else {
        a.path()
    };
    logs[0].append_as_follower(batch(1), 0).unwrap();
    logs[0].flush().unwrap();
    logs[1].note_high_watermark(1);
    assert_eq!(
        lm.write_checkpoints(CheckpointKind::RecoveryPoint).unwrap(),
        1
    );
    assert_eq!(lm.write_checkpoints(CheckpointKind::LogStart).unwrap(), 0);
    assert_eq!(
        lm.write_checkpoints(CheckpointKind::HighWatermark).unwrap(),
        0
    );
    assert_eq!(
        lm.checkpoint_writes(&moved_dir, CheckpointKind::RecoveryPoint),
        2
    );
    assert_eq!(
        lm.checkpoint_writes(other_dir, CheckpointKind::RecoveryPoint),
        1
    );
    let read = checkpoint::read(&moved_dir.join(RECOVERY_POINT_OFFSET_CHECKPOINT));
    assert_eq!(read.get(&("a-b".to_string(), 0)), Some(&2));

    // A deleted partition leaves its dir's files at their next write.
    let path = logs[0].dir().to_path_buf();
    drop(logs);
    lm.delete_dir(&path).unwrap();
    assert_eq!(
        lm.write_checkpoints(CheckpointKind::HighWatermark).unwrap(),
        1
    );
    let read = checkpoint::read(&moved_dir.join(REPLICATION_OFFSET_CHECKPOINT));
    assert_eq!(read.get(&("a-b".to_string(), 0)), None);
    assert_eq!(read.len(), 1);
}

#[test]
fn the_old_log_start_file_is_taken_over_by_the_checkpoint_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = {
        let lm = open(&[dir.path()]);
        let mut log = lm
            .get_or_create("t", ID, 0, LogConfig::default(), 0)
            .unwrap();
        for o in 0..5 {
            log.append_as_follower(batch(o), 0).unwrap();
        }
        log.flush().unwrap();
        log.dir().to_path_buf()
    };
    // What older kraftd kept in the partition directory.
    std::fs::write(path.join("log-start-offset"), "0\n1\n3\n").unwrap();
    let lm = open(&[dir.path()]);
    let log = lm
        .get_or_create("t", ID, 0, LogConfig::default(), 0)
        .unwrap();
    assert_eq!(log.log_start_offset(), 3);
    lm.write_checkpoints(CheckpointKind::LogStart).unwrap();
    assert!(!path.join("log-start-offset").exists());
    drop(log);
    let text = std::fs::read_to_string(dir.path().join(LOG_START_OFFSET_CHECKPOINT)).unwrap();
    assert_eq!(text, "0\n1\nt 0 3\n");
    let lm = open(&[dir.path()]);
    let mut log = lm
        .get_or_create("t", ID, 0, LogConfig::default(), 0)
        .unwrap();
    assert_eq!(log.log_start_offset(), 3);
    // DeleteRecords on a managed log writes no file of its own.
    assert!(log.maybe_increment_log_start_offset(4, 5).unwrap());
    assert!(!path.join("log-start-offset").exists());
    lm.write_checkpoints(CheckpointKind::LogStart).unwrap();
    let read = checkpoint::read(&dir.path().join(LOG_START_OFFSET_CHECKPOINT));
    assert_eq!(read.get(&("t".to_string(), 0)), Some(&4));
}

#[test]
fn an_unclean_restart_recovers_only_logs_written_past_their_recovery_point() {
    let dir = tempfile::tempdir().unwrap();
    {
        let lm = open(&[dir.path()]);
        for p in 0..3 {
            let mut log = lm
                .get_or_create("t", ID, p, LogConfig::default(), 0)
                .unwrap();
            log.append_as_follower(batch(0), 0).unwrap();
            log.flush().unwrap();
            lm.write_checkpoints(CheckpointKind::RecoveryPoint).unwrap();
            if p == 2 {
                // Written after its last checkpointed flush: recovered.
                log.append_as_follower(batch(1), 0).unwrap();
            }
        }
    }
    let lm = open(&[dir.path()]);
    let recovered: Vec<u64> = (0..3)
        .map(|p| {
            let log = lm
                .get_or_create("t", ID, p, LogConfig::default(), 0)
                .unwrap();
            assert_eq!(log.log_end_offset(), if p == 2 { 2 } else { 1 });
            log.stats().segments_recovered
        })
        .collect();
    assert_eq!(recovered, vec![0, 0, 1]);

    // After a clean shutdown nothing is recovered.
    let lm = LogManager::open_with(
        vec![dir.path().to_path_buf()],
        LogManagerOptions {
            clean_shutdown: true,
            ..Default::default()
        },
    )
    .unwrap();
    let log = lm
        .get_or_create("t", ID, 2, LogConfig::default(), 0)
        .unwrap();
    assert_eq!(
        (log.log_end_offset(), log.stats().segments_recovered),
        (2, 0)
    );
}

#[test]
fn cleaner_checkpoints_go_to_the_partitions_log_dir() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let lm = open(&[d1.path(), d2.path()]);
    lm.checkpoint_cleaner_offsets(&[
        ("t".into(), 0, d1.path().join("t-0"), 10),
        ("t".into(), 1, d2.path().join("t-1"), 20),
    ])
    .unwrap();
    let one = std::fs::read_to_string(d1.path().join(CLEANER_OFFSET_CHECKPOINT)).unwrap();
    assert_eq!(one, "0\n1\nt 0 10\n");
    let all = lm.read_cleaner_checkpoints();
    assert_eq!(all.get(&("t".to_string(), 0)), Some(&10));
    assert_eq!(all.get(&("t".to_string(), 1)), Some(&20));
}

/// The metadata log's directory is Raft's: with the `partition.metadata` Kafka writes in it
/// (topic id AAAAAAAAAAAAAAAAAAAAAQ), it is still no partition of this manager, so nothing
/// takes it for a stray replica.
#[test]
fn the_metadata_log_directory_is_no_partition() {
    let dir = tempfile::tempdir().unwrap();
    let metadata = dir.path().join("__cluster_metadata-0");
    fs::create_dir_all(&metadata).unwrap();
    fs::write(
        metadata.join(PARTITION_METADATA_FILE),
        "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ",
    )
    .unwrap();
    let lm = open(&[dir.path()]);
    lm.get_or_create("t", ID, 0, LogConfig::default(), 0)
        .unwrap();
    let found: Vec<String> = lm
        .partition_dirs()
        .into_iter()
        .map(|(_, topic, partition, _)| format!("{topic}-{partition}"))
        .collect();
    assert_eq!(found, ["t-0"]);
    assert!(metadata.join(PARTITION_METADATA_FILE).exists());
}
