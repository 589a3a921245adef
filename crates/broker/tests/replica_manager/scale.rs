//! Many partitions in one metadata delta: a delta creating 1,000 partitions and one deleting
//! 500 of them while creating 500 others are applied exactly (every created log present
//! with its topic id and hosted, every deleted one gone from memory and disk, replicas
//! assigned elsewhere never created), and all of them come back after a restart; the offset
//! checkpoints are written for the log dir that changed only.

use std::collections::BTreeSet;

use kraftd_log::checkpoint::CheckpointKind;
use kraftd_log::log_manager::PARTITION_METADATA_FILE;

use super::*;

const PARTITIONS: i32 = 100;

fn topic_id(n: u8) -> Uuid {
    let mut id = [0x70; 16];
    id[15] = n;
    Uuid(id)
}

fn name(n: u8) -> String {
    format!("scale-{n}")
}

/// `topics` topics of [`PARTITIONS`] partitions each led here, plus partition
/// [`PARTITIONS`] of each assigned to [`REMOTE`] alone (never created here).
fn create(topics: std::ops::Range<u8>) -> Vec<MetadataRecord> {
    let mut records = Vec::new();
    for n in topics {
        records.push(topic(&name(n), topic_id(n)));
        for p in 0..PARTITIONS {
            records.push(partition(topic_id(n), p, &[LOCAL], LOCAL));
        }
        records.push(partition(topic_id(n), PARTITIONS, &[REMOTE], REMOTE));
    }
    records
}

/// What must be hosted and on disk: `orders-0` and every led partition of `topics`.
fn expected(topics: impl Iterator<Item = u8>) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = topics
        .flat_map(|n| (0..PARTITIONS).map(move |p| format!("{}-{p}", name(n))))
        .collect();
    out.insert(format!("{TOPIC}-0"));
    out
}

/// The partition directories in the log dir (named `<topic>-<partition>`, holding a
/// `partition.metadata`), each checked to name its topic's id.
fn on_disk(b: &Broker) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(&b.log_dir).unwrap() {
        let path = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(path.join(PARTITION_METADATA_FILE)) else {
            continue;
        };
        let dir = path.file_name().unwrap().to_string_lossy().into_owned();
        let topic = dir.rsplit_once('-').unwrap().0;
        let id = b.image.topics.get_by_name(topic).map(|t| t.id);
        let id = id.unwrap_or_else(|| panic!("{dir} on disk belongs to no topic"));
        assert_eq!(
            text,
            format!("version: 0\ntopic_id: {}\n", id.to_base64()),
            "{dir}"
        );
        out.insert(dir);
    }
    out
}

fn hosted(b: &Broker) -> BTreeSet<String> {
    b.rm.all_partitions()
        .iter()
        .map(|h| format!("{}-{}", h.tp.topic, h.tp.partition))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn a_delta_of_a_thousand_creations_and_deletions_is_applied_exactly() {
    let (dir, mut b) = Broker::bootstrapped();
    b.apply(&create(0..10));
    assert_eq!(hosted(&b), expected(0..10));
    assert_eq!(on_disk(&b), expected(0..10));
    for n in 0..10 {
        let h = b.rm.partition(topic_id(n), 7).expect("hosted");
        assert_eq!(h.lock().role(), Role::Leader);
        assert!(b.rm.partition(topic_id(n), PARTITIONS).is_none());
    }

    // One delta: five topics (500 partitions) deleted, five (500) created.
    let mut records: Vec<MetadataRecord> = (0..5).map(|n| remove_topic(topic_id(n))).collect();
    records.extend(create(10..15));
    b.apply(&records);
    let now = expected(5..15);
    assert_eq!(hosted(&b), now);
    assert_eq!(on_disk(&b), now);
    for n in 0..5 {
        assert!(b.rm.partition(topic_id(n), 0).is_none());
    }

    // Data in one partition of each kept topic, then a clean restart: every log is back.
    for n in 5..15 {
        let tp = topic_partition(&name(n), topic_id(n), 3);
        assert_eq!(b.produce_ok(-1, &tp, batch(unix_ms(), &["x"])).await, 0);
    }
    b.rm.shutdown();
    let hws = std::fs::read_to_string(dir.path().join("replication-offset-checkpoint")).unwrap();
    assert!(hws.starts_with(&format!("0\n{}\n", now.len())), "{hws}");
    assert!(hws.contains(&format!("\n{} 3 1\n", name(9))), "{hws}");
    drop(b);
    let mut all = bootstrap(unused_port());
    all.extend(create(5..15));
    let b = Broker::started_on(dir.path(), &all);
    assert_eq!(hosted(&b), now);
    for n in 5..15 {
        let tp = topic_partition(&name(n), topic_id(n), 3);
        assert_eq!(b.rm.list_offset(&tp, -1, -1, -1), Ok((1, -1, LEADER_EPOCH)));
    }
    // Nothing changed since the restart: no checkpoint file is written.
    b.rm.log_manager()
        .write_checkpoints(CheckpointKind::RecoveryPoint)
        .unwrap();
    b.rm.log_manager()
        .write_checkpoints(CheckpointKind::LogStart)
        .unwrap();
    assert_eq!(
        b.rm.log_manager()
            .total_checkpoint_writes(CheckpointKind::RecoveryPoint)
            + b.rm
                .log_manager()
                .total_checkpoint_writes(CheckpointKind::LogStart),
        0,
        "values read back equal to the files' are no change"
    );
}

/// A stopping broker applies no more metadata (its clean shutdown flushes and checkpoints
/// next, and nothing may change a log after that): a delta arriving after
/// `stop_applying_metadata` creates no log and leaves the hosted partitions as they were.
#[tokio::test(flavor = "current_thread")]
async fn a_stopping_broker_applies_no_more_metadata() {
    let (_dir, mut b) = Broker::bootstrapped();
    b.apply(&create(0..2));
    assert_eq!(hosted(&b), expected(0..2));
    b.rm.stop_applying_metadata();
    b.apply(&create(2..4));
    assert_eq!(hosted(&b), expected(0..2));
    assert_eq!(on_disk(&b), expected(0..2));
    let h = b.rm.partition(topic_id(0), 7).expect("still hosted");
    assert_eq!(h.lock().role(), Role::Leader);
}

/// A delta following many partitions at once applies their role changes on threads; each
/// follower's fetcher is a task started from them (the threads enter the runtime: without
/// it every fetcher start panicked and the broker's metadata stopped, found by
/// `cargo xtask bench scale` at 10,000 followed partitions).
#[tokio::test(flavor = "current_thread")]
async fn a_delta_following_many_partitions_starts_their_fetchers() {
    let (_dir, mut b) = Broker::bootstrapped();
    let mut records = Vec::new();
    for n in 0..2 {
        records.push(topic(&name(n), topic_id(n)));
        for p in 0..PARTITIONS {
            records.push(partition(topic_id(n), p, &[REMOTE, LOCAL], REMOTE));
        }
    }
    b.apply(&records);
    for n in 0..2 {
        for p in 0..PARTITIONS {
            let h = b.rm.partition(topic_id(n), p).expect("hosted");
            assert_eq!(h.lock().role(), Role::Follower { leader: REMOTE });
        }
    }
    let assigned = b.rm.fetchers().assignments();
    assert_eq!(assigned.keys().copied().collect::<Vec<_>>(), vec![REMOTE]);
    assert_eq!(assigned[&REMOTE].len(), 2 * PARTITIONS as usize);
}
