//! The future log beside a follower's log: filled step by step, cut when the follower
//! truncates on divergence, restarted when the log restarts past it, caught up only when
//! its end is the log's.

use bytes::Bytes;
use kraftd_log::{Log, LogConfig};
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::Uuid;

use super::super::{Partition, PartitionConfig, PartitionState};
use super::FutureStep;
use crate::replica::TopicIdPartition;

/// A leader's batch of `n` records at `offset` in `epoch`.
fn batch(offset: i64, epoch: i32, n: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(offset).partition_leader_epoch(epoch);
    for _ in 0..n {
        b.append(0, None, Some(Bytes::from_static(b"v")), Vec::new())
            .unwrap();
    }
    b.build().unwrap()
}

fn follower(dir: &std::path::Path) -> Partition {
    let tp = TopicIdPartition {
        topic_id: Uuid([1; 16]),
        topic: "t".into(),
        partition: 0,
    };
    let log = Log::open(&dir.join("t-0"), LogConfig::default(), 0).unwrap();
    let mut p = Partition::new(tp, 1, log, PartitionConfig::default(), 0, 0).unwrap();
    p.make_follower(&PartitionState {
        leader: 2,
        leader_epoch: 1,
        partition_epoch: 0,
        replicas: vec![1, 2],
        isr: vec![1, 2],
        elr: vec![],
        leader_recovery_state: 0,
    });
    p
}

/// Runs the copier's steps until the future log has caught up.
fn copy_until_caught_up(p: &mut Partition) {
    for _ in 0..100 {
        match p.next_future_step(64, 0).unwrap() {
            FutureStep::CaughtUp => return,
            FutureStep::Gone => panic!("no future log"),
            FutureStep::Copy { read, at } => {
                let bytes = read.execute().unwrap().bytes;
                assert!(p.append_to_future(at, bytes, 0).unwrap());
            }
        }
    }
    panic!("never caught up");
}

#[test]
fn the_future_log_follows_truncations_and_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = follower(dir.path());
    for i in 0..10 {
        p.append_as_follower(batch(i * 3, 1, 3), 0, 0).unwrap();
    }
    let future = Log::open(&dir.path().join("t-0.00-future"), LogConfig::default(), 0).unwrap();
    p.set_future_log(future, 0).unwrap();
    copy_until_caught_up(&mut p);
    assert_eq!(p.future_log().unwrap().log_end_offset(), 30);
    // Divergence: the follower cuts its log at 12; the future log is cut with it, and a
    // read planned before the cut appends nothing.
    let Ok(FutureStep::CaughtUp) = p.next_future_step(64, 0) else {
        panic!("caught up")
    };
    p.truncate_to(12, 0).unwrap();
    assert_eq!(p.future_log().unwrap().log_end_offset(), 12);
    assert!(!p.append_to_future(30, batch(30, 1, 1), 0).unwrap());
    p.append_as_follower(batch(12, 2, 5), 0, 0).unwrap();
    copy_until_caught_up(&mut p);
    assert_eq!(p.future_log().unwrap().log_end_offset(), 17);
    assert_eq!(p.future_log().unwrap().latest_epoch(), Some(2));
    // The leader's log restarts past everything: so does the future log.
    p.truncate_fully_and_start_at(100, 0).unwrap();
    assert_eq!(p.future_log().unwrap().log_start_offset(), 100);
    assert_eq!(p.future_log().unwrap().log_end_offset(), 100);
    assert!(matches!(
        p.next_future_step(64, 0),
        Ok(FutureStep::CaughtUp)
    ));
    // The swap's part here: closed, then the reopened log replaces the current one.
    let path = p.close_future_for_swap().unwrap();
    assert!(p.future_log().is_none());
    let reopened = Log::open_after_clean_shutdown(&path, LogConfig::default(), 0).unwrap();
    let old = p.replace_log(reopened, 0).unwrap();
    assert_eq!(p.log().dir(), path);
    assert_eq!((p.log_start_offset(), p.log_end_offset()), (100, 100));
    drop(old);
}
