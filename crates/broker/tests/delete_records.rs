//! DeleteRecords at the partition level, with real logs: the leader moves its log start
//! (offset -1 meaning the HW; past the HW refused), the low watermark waits for the
//! in-sync follower, which follows the leader's log start from its fetches (bounded by its
//! own HW); a follower refuses DeleteRecords.

use bytes::Bytes;
use kraftd_broker::replica::partition::{Partition, PartitionConfig, PartitionState};
use kraftd_broker::replica::TopicIdPartition;
use kraftd_log::{Log, LogConfig};
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::{ErrorCode, Uuid};

fn tp() -> TopicIdPartition {
    TopicIdPartition {
        topic_id: Uuid([7; 16]),
        topic: "t".into(),
        partition: 0,
    }
}

fn partition(dir: &std::path::Path, id: i32) -> Partition {
    let log = Log::open(dir, LogConfig::default(), 0).unwrap();
    Partition::new(tp(), id, log, PartitionConfig::default(), 0, 0).unwrap()
}

fn batch(n: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(0);
    for i in 0..n {
        b.append(i as i64, None, Some(Bytes::from_static(b"v")), Vec::new())
            .unwrap();
    }
    b.build().unwrap()
}

/// One follower fetch: the follower appends what the leader has past its end, takes the
/// leader's HW and log start, and the leader records the fetch.
fn fetch(leader: &mut Partition, follower: &mut Partition) {
    let offset = follower.log_end_offset();
    let read = leader
        .log()
        .read(offset, 1 << 20, leader.log_end_offset())
        .unwrap();
    if !read.bytes.is_empty() {
        follower
            .append_as_follower(read.bytes, leader.high_watermark(), 0)
            .unwrap();
    } else {
        follower.update_follower_high_watermark(leader.high_watermark());
    }
    follower.maybe_follow_leader_log_start(read.log_start_offset);
    leader
        .update_follower_fetch_state(
            2,
            -1,
            follower.log_end_offset(),
            follower.log_start_offset(),
            0,
            &|_: i32, _: i64| true,
        )
        .unwrap();
}

#[test]
fn delete_records_moves_the_leaders_log_start_and_the_follower_follows() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut leader = partition(d1.path(), 1);
    let mut follower = partition(d2.path(), 2);
    let state = PartitionState {
        leader: 1,
        leader_epoch: 1,
        partition_epoch: 1,
        replicas: vec![1, 2],
        isr: vec![1, 2],
        elr: Vec::new(),
        leader_recovery_state: 0,
    };
    leader.make_leader(&state, 0).unwrap();
    follower.make_follower(&state);
    for _ in 0..5 {
        leader.append_as_leader(batch(2), -1, 0).unwrap();
    }
    fetch(&mut leader, &mut follower);
    fetch(&mut leader, &mut follower);
    assert_eq!(leader.high_watermark(), 10);

    // A follower refuses; past the HW is out of range.
    let e = follower.delete_records_on_leader(3).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::NotLeaderOrFollower);
    let e = leader.delete_records_on_leader(11).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::OffsetOutOfRange);

    // The low watermark waits for the follower's log start.
    assert_eq!(leader.delete_records_on_leader(3).unwrap(), 0);
    assert_eq!(leader.log_start_offset(), 3);
    assert!(leader.log().read(2, 100, 10).is_err());
    fetch(&mut leader, &mut follower);
    assert_eq!(follower.log_start_offset(), 3);
    assert_eq!(leader.low_watermark(), 3);

    // -1 means the HW.
    leader.append_as_leader(batch(2), -1, 0).unwrap();
    assert_eq!(leader.high_watermark(), 10);
    assert_eq!(leader.delete_records_on_leader(-1).unwrap(), 3);
    assert_eq!(leader.log_start_offset(), 10);
    // The follower appends 10..12 and learns start 10 in one fetch, bounded by its HW.
    fetch(&mut leader, &mut follower);
    fetch(&mut leader, &mut follower);
    assert_eq!(follower.log_start_offset(), 10);
    assert_eq!(leader.low_watermark(), 10);

    // A follower never passes its own HW, whatever the leader says.
    follower.maybe_follow_leader_log_start(1_000);
    assert_eq!(follower.log_start_offset(), follower.high_watermark());

    // Both survive a reopen.
    drop(follower);
    let follower = partition(d2.path(), 2);
    assert_eq!(
        follower.log_start_offset(),
        12.min(follower.log_end_offset())
    );
}
