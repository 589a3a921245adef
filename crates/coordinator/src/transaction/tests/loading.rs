//! Loading (replay of Kafka's bytes, marker work re-emitted) and the timers (timed-out
//! transactions aborted, idle transactional ids expired).

use kraftd_protocol::coordinator::TransactionLogValue;
use kraftd_protocol::{ErrorCode, TransactionCoordinatorRecordValue};

use super::*;
use crate::shard::ReplayFailure;
use crate::transaction::metadata::TxnState;
use crate::transaction::partition_for;

fn persisted(mut m: TransactionMetadata) -> TransactionMetadata {
    // Kafka does not write the last epoch.
    m.last_producer_epoch = -1;
    m
}

#[test]
fn replay_of_everything_written_reproduces_the_state() {
    let mut h = H::new();
    // a: committed (TV1); b: ongoing; c: preparing an abort; d: TV2 ended once; e: empty.
    let (pa, ea) = h.init("a");
    h.add("a", pa, ea, &[("t", 0)]);
    h.end(3, "a", pa, ea, true);
    let marker = h.markers[0].clone();
    h.markers_written(&marker);
    let (pb, eb) = h.init("b");
    h.add("b", pb, eb, &[("t", 1), ("u", 2)]);
    let (pc, ec) = h.init("c");
    h.add("c", pc, ec, &[("t", 3)]);
    assert_eq!(h.add_offsets(3, "c", pc, ec, 9), 0);
    h.end(3, "c", pc, ec, false);
    let (pd, ed) = h.init("d");
    h.add_batched(5, "d", pd, ed, false, &[("v", 0)]);
    h.end(5, "d", pd, ed, true);
    let marker = h.markers[0].clone();
    h.markers_written(&marker);
    h.init("e");
    h.init("e");

    let (loaded, markers) = h.reload();
    assert_eq!(loaded.transaction_count(), 5);
    for id in ["a", "b", "c", "d", "e"] {
        assert_eq!(
            loaded.transaction(id).cloned().map(persisted),
            Some(persisted(h.txn(id))),
            "{id}"
        );
    }
    assert_eq!(
        loaded.transaction("a").unwrap().state,
        TxnState::CompleteCommit
    );
    assert_eq!(loaded.transaction("d").unwrap().producer_epoch, 1);
    assert_eq!(loaded.transaction("e").unwrap().producer_epoch, 1);
    assert_eq!(
        loaded.transaction("e").unwrap().prev_producer_id,
        loaded.transaction("e").unwrap().producer_id
    );
    // The abort of c was being written: its markers go out again, at the new leader epoch.
    assert_eq!(
        markers,
        vec![MarkerRequest {
            transactional_id: "c".into(),
            producer_id: pc,
            producer_epoch: ec,
            coordinator_epoch: COORDINATOR_EPOCH + 1,
            commit: false,
            partitions: vec![tp("__consumer_offsets", 9), tp("t", 3)],
        }]
    );
    assert_eq!(loaded.next_deadline(), Some(h.now + 10_000));
}

#[test]
fn loaded_prepare_commit_completes_on_markers() {
    let mut h = H::new();
    let (pid, epoch) = h.init(TXN);
    h.add(TXN, pid, epoch, &[("t", 0), ("t", 5)]);
    h.end(3, TXN, pid, epoch, true);
    let (mut loaded, markers) = h.reload();
    assert_eq!(markers.len(), 1);
    assert!(markers[0].commit);
    assert_eq!(markers[0].partitions, vec![tp("t", 0), tp("t", 5)]);
    loaded.on_markers_written(h.now, TXN, pid, epoch);
    let out = loaded.take_output();
    assert_eq!(out.records.len(), 1);
    let m = loaded.transaction(TXN).unwrap();
    assert_eq!(m.state, TxnState::CompleteCommit);
    assert!(m.partitions.is_empty());
}

#[test]
fn records_are_kafkas() {
    let mut h = H::new();
    let (pid, epoch) = h.init(TXN);
    // Empty is written with null partitions, at value version 1 on a TV2 cluster.
    match &h.records[0].value {
        Some((TransactionCoordinatorRecordValue::TransactionLog(v), version)) => {
            assert_eq!(*version, 1);
            assert_eq!(v.transaction_partitions, None);
            assert_eq!(v.transaction_status, 0);
            assert_eq!(v.producer_id, pid);
            assert_eq!(v.transaction_start_timestamp_ms, -1);
        }
        other => panic!("{other:?}"),
    }
    // The key is the int16 type 0 and the id as a classic string.
    let (key, _) = h.log[0].clone();
    let mut expected = vec![0u8, 0, 0, TXN.len() as u8];
    expected.extend_from_slice(TXN.as_bytes());
    assert_eq!(key.as_ref(), expected.as_slice());
    // On a TV1 cluster values are version 0 (no tagged fields).
    h.shard.set_transaction_version_level(1);
    h.add(TXN, pid, epoch, &[("t", 2)]);
    match &h.records[0].value {
        Some((TransactionCoordinatorRecordValue::TransactionLog(v), version)) => {
            assert_eq!(*version, 0);
            assert_eq!(v.transaction_status, 1);
            assert_eq!(v.previous_producer_id, -1);
            assert_eq!(v.transaction_partitions.as_ref().map(|p| p.len()), Some(1));
        }
        other => panic!("{other:?}"),
    }
    // A status Kafka does not know fails the load.
    let bad = TransactionRecord {
        value: Some((
            TransactionCoordinatorRecordValue::TransactionLog(TransactionLogValue {
                transaction_status: 9,
                ..Default::default()
            }),
            0,
        )),
        ..h.records[0].clone()
    };
    let err = h.shard.replay(42, -1, bad).unwrap_err();
    let at = format!("record at offset 42 of __transaction_state-{PARTITION}: ");
    assert!(
        matches!(&err, ReplayFailure::Corrupt(r) if r.starts_with(&at)),
        "{err:?}"
    );
    // The partition is the group coordinator's mapping.
    assert_eq!(partition_for("console-consumer-12345", 50), 6);
}

#[test]
fn timed_out_transactions_are_aborted() {
    let mut h = H::new();
    let (pid, epoch) = h.init(TXN);
    let (p2, e2) = h.init("young");
    h.add(TXN, pid, epoch, &[("t", 0)]);
    let start = h.now;
    // Not yet: the check runs every 10 s and the timeout is 60 s.
    h.advance(50_000);
    h.add("young", p2, e2, &[("t", 1)]);
    h.advance(10_000);
    assert_eq!(h.txn(TXN).state, TxnState::Ongoing);
    h.advance(10_000);
    assert!(h.now > start + i64::from(TIMEOUT));
    let m = h.txn(TXN);
    assert_eq!(m.state, TxnState::PrepareAbort);
    assert_eq!(m.producer_epoch, 2);
    assert_eq!(h.markers.len(), 1);
    let marker = h.markers[0].clone();
    assert_eq!((marker.producer_epoch, marker.commit), (2, false));
    assert_eq!(h.txn("young").state, TxnState::Ongoing);
    // The timed-out producer is fenced.
    assert_eq!(
        h.end(3, TXN, pid, epoch, true).error_code,
        c(ErrorCode::ProducerFenced)
    );
    h.markers_written(&marker);
    assert_eq!(h.txn(TXN).state, TxnState::CompleteAbort);
}

#[test]
fn idle_transactional_ids_expire() {
    let mut h = H::new();
    let (pid, epoch) = h.init(TXN);
    let (po, eo) = h.init("open");
    h.add("open", po, eo, &[("t", 0)]);
    h.add(TXN, pid, epoch, &[("t", 1)]);
    h.end(3, TXN, pid, epoch, true);
    let marker = h.markers[0].clone();
    h.markers_written(&marker);
    let done = h.now;
    // "open" times out and is aborted; its markers are never acknowledged here, so it
    // stays PrepareAbort, which never expires.
    let mut expired_at = None;
    for _ in 0..200 {
        h.advance(3_600_000);
        if h.shard.transaction(TXN).is_none() {
            expired_at = Some(h.now);
            break;
        }
    }
    let at = expired_at.expect("expired");
    assert!(at - done >= 604_800_000);
    assert!(at - done < 604_800_000 + 3_600_000);
    // A tombstone removed it, and a reload agrees.
    assert!(h.log.iter().any(|(_, v)| v.is_none()));
    let (loaded, _) = h.reload();
    assert!(loaded.transaction(TXN).is_none());
    assert_eq!(h.txn("open").state, TxnState::PrepareAbort);
    assert_eq!(
        loaded.transaction("open").unwrap().state,
        TxnState::PrepareAbort
    );
    assert_eq!(
        h.add_v(3, TXN, pid, epoch, &[("t", 0)]),
        vec![c(ErrorCode::InvalidProducerIdMapping)]
    );
}
