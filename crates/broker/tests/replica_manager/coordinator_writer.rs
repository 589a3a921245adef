//! The coordinators' log over a real partition: `CoordinatorPartitionWriter` passes
//! `kraftd_coordinator`'s `PartitionWriter` conformance check (the one `MemoryWriter`
//! passes) on a partition this broker leads alone, refuses every call once it no longer
//! leads at the writer's epoch.

use kraftd_broker::coordinator::partition_writer::CoordinatorPartitionWriter;
use kraftd_coordinator::shard::OutputBatch;
use kraftd_coordinator::testing::writer::check;
use kraftd_coordinator::writer::PartitionWriter;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_partition_writer_meets_the_coordinator_log_contract() {
    let (_dir, b) = Broker::bootstrapped();
    let rm = Arc::clone(&b.rm);
    check(|| CoordinatorPartitionWriter::new(Arc::clone(&rm), TOPIC_ID, 0, LEADER_EPOCH));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_partition_writer_is_fenced_by_a_newer_leader_epoch() {
    let (_dir, mut b) = Broker::started_with(&bootstrap_with_follower());
    let mut w = CoordinatorPartitionWriter::new(Arc::clone(&b.rm), TOPIC_ID, 0, LEADER_EPOCH);
    let batch = OutputBatch {
        producer: None,
        records: vec![(Bytes::from_static(b"k"), Some(Bytes::from_static(b"v")))],
    };
    w.append(&batch).expect("the leader at its epoch appends");

    // Leadership moves (epoch + 1): the writer's shard belongs to an epoch that is over.
    b.apply(&[MetadataRecord::PartitionChange(PartitionChangeRecord {
        partition_id: 0,
        topic_id: TOPIC_ID,
        leader: REMOTE,
        ..Default::default()
    })]);
    assert_eq!(w.append(&batch), Err(ErrorCode::NotLeaderOrFollower));
    assert_eq!(
        w.append_end_txn(1, 0, 0, true),
        Err(ErrorCode::NotLeaderOrFollower)
    );
    assert_eq!(w.log_end_offset(), Err(ErrorCode::NotLeaderOrFollower));
    assert_eq!(w.high_watermark(), Err(ErrorCode::NotLeaderOrFollower));
    assert!(w.read(0, 10).is_err(), "a fenced writer reads nothing");
    let hosted = b.rm.partition(TOPIC_ID, 0).expect("still hosted");
    assert_eq!(
        hosted.lock().log_end_offset(),
        1,
        "nothing landed after the move"
    );
    b.rm.shutdown();
}
