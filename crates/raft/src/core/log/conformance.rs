//! The behaviour every [`RaftLog`] must have, as one function a driver's log can be run
//! through (`conformance::check(|| MyLog::open(..))`): the core relies on exactly this.
//! Compiled with the cargo feature `testing` only (the crate's own tests turn it on).

use bytes::Bytes;
use kraftd_protocol::records::{Batches, RecordBatchBuilder};

use kraftd_log::SnapshotId;

use super::RaftLog;

fn batch(records: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(0);
    for i in 0..records {
        b.append(0, None, Some(Bytes::from(vec![i as u8; 8])), Vec::new())
            .expect("append to a fresh batch");
    }
    b.build().expect("a batch builds")
}

/// Panics with a description of the first contract the log `make` returns breaks.
pub fn check<L: RaftLog>(make: impl Fn() -> L) {
    let mut log = make();
    assert_eq!(log.end_offset(), 0, "an empty log ends at 0");
    assert_eq!(log.last_epoch(), 0, "an empty log's last epoch is 0");
    assert_eq!(log.end_offset_for_epoch(5), (0, log.start_offset()));
    assert!(log.read(0, 1 << 20).is_empty());

    // The leader's appends: offsets assigned, epoch stamped.
    assert_eq!(log.append_as_leader(batch(3), 1).expect("append"), (0, 2));
    assert_eq!(log.append_as_leader(batch(2), 1).expect("append"), (3, 4));
    assert_eq!(log.append_as_leader(batch(4), 3).expect("append"), (5, 8));
    assert_eq!(log.end_offset(), 9);
    assert_eq!(log.last_epoch(), 3);
    assert!(
        log.append_as_leader(batch(1), 2).is_err(),
        "epochs never go back"
    );
    assert_eq!(log.end_offset(), 9, "a refused append changes nothing");

    // KIP-279: the largest epoch ≤ the one asked, and where it ends.
    assert_eq!(log.end_offset_for_epoch(1), (1, 5));
    assert_eq!(log.end_offset_for_epoch(2), (1, 5));
    assert_eq!(log.end_offset_for_epoch(3), (3, 9));
    assert_eq!(log.end_offset_for_epoch(7), (3, 9));

    // Reads are whole batches from a boundary: at least one, more while they fit.
    let one = log.read(0, 1);
    assert_eq!(Batches::new(one).count(), 1);
    let all = log.read(3, 1 << 20);
    let bases: Vec<i64> = Batches::new(all.clone())
        .map(|b| b.expect("whole batches").base_offset())
        .collect();
    assert_eq!(bases, vec![3, 5]);

    // Flush makes everything durable.
    assert_eq!(log.flush(), 9);
    assert_eq!(log.flushed_offset(), 9);

    // A follower appends the leader's batches unchanged, and refuses gaps, repeats and
    // epochs above its own.
    let mut follower = make();
    follower
        .append_as_follower(log.read(0, 1 << 20), 3)
        .expect("the leader's batches");
    assert_eq!(follower.end_offset(), 9);
    assert_eq!(follower.read(0, 1 << 20), log.read(0, 1 << 20));
    assert!(follower
        .append_as_follower(log.read(5, 1 << 20), 3)
        .is_err());
    let mut behind = make();
    assert!(behind.append_as_follower(log.read(0, 1 << 20), 2).is_err());
    assert_eq!(
        behind.end_offset(),
        0,
        "nothing of a refused fetch is appended"
    );

    // Truncation removes whole batches from the offset on.
    follower.truncate_to(5);
    assert_eq!(follower.end_offset(), 5);
    assert_eq!(follower.last_epoch(), 1);
    assert!(follower.flushed_offset() <= 5);
    follower.truncate_to(0);
    assert_eq!(follower.end_offset(), 0);

    check_snapshots(&make);
}

/// KIP-630: storing, reading by position, deleting the log before, installing.
fn check_snapshots<L: RaftLog>(make: &impl Fn() -> L) {
    let mut log = make();
    assert_eq!(log.latest_snapshot(), None);
    log.append_as_leader(batch(3), 1).expect("append");
    log.append_as_leader(batch(2), 2).expect("append");
    log.append_as_leader(batch(4), 2).expect("append");
    log.flush();
    let too_far = SnapshotId {
        end_offset: 10,
        epoch: 2,
    };
    assert!(
        log.store_snapshot(too_far, b"x").is_err(),
        "a snapshot past the end is refused"
    );
    let id = SnapshotId {
        end_offset: 5,
        epoch: 2,
    };
    let data: Vec<u8> = (0..100u8).collect();
    log.store_snapshot(id, &data).expect("snapshot");
    assert!(log.store_snapshot(id, &data).is_err(), "exists already");
    assert_eq!(log.latest_snapshot(), Some(id));
    let (chunk, size) = log.read_snapshot(id, 0, 30).expect("held");
    assert_eq!((&chunk[..], size), (&data[..30], 100));
    let (chunk, _) = log.read_snapshot(id, 90, 30).expect("held");
    assert_eq!(&chunk[..], &data[90..]);
    assert!(log.read_snapshot(id, 100, 30).expect("held").0.is_empty());
    assert_eq!(log.read_snapshot(too_far, 0, 30), None);

    // Deleting before the snapshot keeps everything from its end offset readable.
    let start = log.delete_before_latest_snapshot();
    assert!(start <= 5, "the start offset never passes the snapshot");
    assert_eq!(log.start_offset(), start);
    assert_eq!(log.end_offset(), 9);
    assert_eq!(log.last_epoch(), 2);
    let bases: Vec<i64> = Batches::new(log.read(5, 1 << 20))
        .map(|b| b.expect("whole batches").base_offset())
        .collect();
    assert_eq!(bases, vec![5]);
    assert_eq!(log.latest_snapshot(), Some(id));

    // A follower far behind installs the snapshot and continues from its end offset.
    let mut follower = make();
    follower
        .append_as_leader(batch(1), 1)
        .expect("a stale local batch");
    follower.install_snapshot(id, &data).expect("install");
    assert_eq!(follower.start_offset(), 5);
    assert_eq!(follower.end_offset(), 5);
    assert_eq!(follower.last_epoch(), 2, "the snapshot's epoch");
    assert_eq!(follower.flushed_offset(), 5);
    assert_eq!(follower.latest_snapshot(), Some(id));
    assert_eq!(follower.end_offset_for_epoch(2), (2, 5));
    assert_eq!(
        follower.read_snapshot(id, 0, 1 << 20).expect("held").0,
        &data[..]
    );
    follower
        .append_as_follower(log.read(5, 1 << 20), 2)
        .expect("the batches after the snapshot");
    assert_eq!(follower.end_offset(), 9);
    assert_eq!(follower.read(5, 1 << 20), log.read(5, 1 << 20));

    // The same by download, in chunks.
    let mut fresh = make();
    assert!(fresh.append_snapshot_download(id, b"x").is_err());
    fresh.begin_snapshot_download(id).expect("begin");
    assert_eq!(fresh.latest_snapshot(), None, "incomplete until finished");
    assert_eq!(fresh.append_snapshot_download(id, &data[..60]), Ok(60));
    assert_eq!(fresh.append_snapshot_download(id, &data[60..]), Ok(100));
    fresh.finish_snapshot_download(id).expect("finish");
    assert_eq!(fresh.latest_snapshot(), Some(id));
    assert_eq!((fresh.start_offset(), fresh.end_offset()), (5, 5));
    assert_eq!(
        fresh.read_snapshot(id, 0, 1 << 20).expect("held").0,
        &data[..]
    );
    assert!(
        fresh.finish_snapshot_download(id).is_err(),
        "finished already"
    );
}
