//! Zombie fencing: InitProducerId bumps the epoch, old epochs are refused with Kafka's
//! per-version errors, an ongoing transaction is aborted first, KIP-360 recovery, epoch
//! exhaustion.

use std::collections::BTreeSet;

use kraftd_protocol::ErrorCode;

use super::*;
use crate::transaction::metadata::{TxnState, NO_PRODUCER_EPOCH};

#[test]
fn second_init_fences_the_old_epoch() {
    let mut h = H::new();
    let (pid, e0) = h.init(TXN);
    let (pid2, e1) = h.init(TXN);
    assert_eq!((pid2, e0, e1), (pid, 0, 1));
    // PRODUCER_FENCED from v2 of AddPartitionsToTxn/AddOffsetsToTxn/EndTxn, before it
    // INVALID_PRODUCER_EPOCH (KIP-588).
    assert_eq!(
        h.add_v(2, TXN, pid, e0, &[("t", 0)]),
        vec![c(ErrorCode::ProducerFenced)]
    );
    assert_eq!(
        h.add_v(1, TXN, pid, e0, &[("t", 0)]),
        vec![c(ErrorCode::InvalidProducerEpoch)]
    );
    assert_eq!(
        h.add_offsets(2, TXN, pid, e0, 1),
        c(ErrorCode::ProducerFenced)
    );
    assert_eq!(
        h.add_offsets(1, TXN, pid, e0, 1),
        c(ErrorCode::InvalidProducerEpoch)
    );
    h.add(TXN, pid, e1, &[("t", 0)]);
    assert_eq!(
        h.end(2, TXN, pid, e0, true).error_code,
        c(ErrorCode::ProducerFenced)
    );
    assert_eq!(
        h.end(1, TXN, pid, e0, true).error_code,
        c(ErrorCode::InvalidProducerEpoch)
    );
    assert_eq!(
        h.end(4, TXN, pid, e0, true).error_code,
        c(ErrorCode::ProducerFenced)
    );
    assert_eq!(h.txn(TXN).state, TxnState::Ongoing);
    assert_eq!(h.end(4, TXN, pid, e1, true).error_code, 0);
}

#[test]
fn init_during_a_transaction_aborts_it_first() {
    let mut h = H::new();
    let (pid, e0) = h.init(TXN);
    h.add(TXN, pid, e0, &[("t", 0), ("t", 1)]);
    // TV2 cluster (the default): the fence bumps once, the abort once more.
    let r = h.init_v(5, TXN, -1, -1);
    assert_eq!(r.error_code, c(ErrorCode::ConcurrentTransactions));
    assert_eq!((r.producer_id, r.producer_epoch), (-1, -1));
    let m = h.txn(TXN);
    assert_eq!(m.state, TxnState::PrepareAbort);
    assert_eq!((m.producer_epoch, m.last_producer_epoch), (2, 1));
    assert_eq!(h.markers.len(), 1);
    let marker = h.markers[0].clone();
    assert_eq!(
        (marker.producer_id, marker.producer_epoch, marker.commit),
        (pid, 2, false)
    );
    assert_eq!(marker.partitions, vec![tp("t", 0), tp("t", 1)]);
    // Still aborting: retry later.
    assert_eq!(
        h.init_v(5, TXN, -1, -1).error_code,
        c(ErrorCode::ConcurrentTransactions)
    );
    // The old producer is fenced.
    assert_eq!(
        h.end(3, TXN, pid, e0, true).error_code,
        c(ErrorCode::ProducerFenced)
    );
    h.markers_written(&marker);
    assert_eq!(h.txn(TXN).state, TxnState::CompleteAbort);
    let (pid2, e3) = h.init(TXN);
    assert_eq!((pid2, e3), (pid, 3));
    assert_eq!(h.txn(TXN).state, TxnState::Empty);
}

#[test]
fn init_during_a_transaction_on_a_tv1_cluster_bumps_once() {
    let mut h = H::new();
    h.shard.set_transaction_version_level(1);
    let (pid, e0) = h.init(TXN);
    h.add(TXN, pid, e0, &[("t", 0)]);
    assert_eq!(
        h.init_v(4, TXN, -1, -1).error_code,
        c(ErrorCode::ConcurrentTransactions)
    );
    let m = h.txn(TXN);
    assert_eq!(
        (m.state, m.producer_epoch, m.last_producer_epoch),
        (TxnState::PrepareAbort, 1, -1)
    );
    let marker = h.markers[0].clone();
    assert_eq!(marker.producer_epoch, 1);
    h.markers_written(&marker);
    assert_eq!(h.init(TXN), (pid, 2));
}

#[test]
fn kip_360_recovery() {
    let mut h = H::new();
    let (pid, e0) = h.init(TXN);
    // The producer names its id and epoch: bumped, the last epoch kept.
    let r = h.init_v(5, TXN, pid, e0);
    assert_eq!((r.error_code, r.producer_id, r.producer_epoch), (0, pid, 1));
    assert_eq!(h.txn(TXN).last_producer_epoch, 0);
    // A retry of that call answers the same epoch again.
    let r = h.init_v(5, TXN, pid, e0);
    assert_eq!((r.error_code, r.producer_id, r.producer_epoch), (0, pid, 1));
    // An epoch that is neither current nor last, or another producer id: fenced.
    assert_eq!(
        h.init_v(5, TXN, pid, 7).error_code,
        c(ErrorCode::ProducerFenced)
    );
    assert_eq!(
        h.init_v(5, TXN, pid + 50, 1).error_code,
        c(ErrorCode::ProducerFenced)
    );
    assert_eq!(
        h.init_v(3, TXN, pid + 50, 1).error_code,
        c(ErrorCode::InvalidProducerEpoch)
    );
    // A new id accepts any producer (recovering from UNKNOWN_PRODUCER_ID).
    let r = h.init_v(5, "fresh", 12, 3);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.producer_epoch, 0);
    assert_ne!(r.producer_id, 12);
}

#[test]
fn exhausted_epoch_moves_to_a_new_producer_id() {
    let mut h = H::new();
    let (pid, _) = h.init(TXN);
    // Load a transactional id whose epoch is exhausted.
    let mut m = h.txn(TXN);
    m.producer_epoch = i16::MAX - 1;
    m.state = TxnState::CompleteCommit;
    m.partitions = BTreeSet::new();
    m.txn_start_timestamp = 900;
    h.shard
        .replay(9, -1, TransactionRecord::from_metadata(&m, 2))
        .unwrap();
    let r = h.init_v(5, TXN, pid, i16::MAX - 1);
    assert_eq!(r.error_code, 0);
    assert_ne!(r.producer_id, pid);
    assert_eq!(r.producer_epoch, 0);
    let now = h.txn(TXN);
    assert_eq!(now.prev_producer_id, pid);
    assert_eq!(now.last_producer_epoch, i16::MAX - 1);
    assert_eq!(now.state, TxnState::Empty);
    // The old producer id at its exhausted epoch may still retry (a lost answer).
    let again = h.init_v(5, TXN, pid, i16::MAX - 1);
    assert_eq!(again.error_code, 0);
    assert_eq!(again.producer_id, r.producer_id);
    assert_ne!(h.txn(TXN).last_producer_epoch, NO_PRODUCER_EPOCH);
}

#[test]
fn hostile_values_are_answered_not_panicked_on() {
    let mut h = H::new();
    let (pid, _) = h.init(TXN);
    let (p2, e2) = h.init("open");
    h.add("open", p2, e2, &[("t", 0)]);
    let epochs = [i16::MIN, -1, 0, 1, i16::MAX - 1, i16::MAX];
    let pids = [i64::MIN, -1, 0, pid, p2, i64::MAX];
    for id in [TXN, "open", "", "unknown"] {
        for &p in &pids {
            for &e in &epochs {
                for v in 0..=5 {
                    h.end(v, id, p, e, v % 2 == 0);
                    h.add_batched(4 + v % 2, id, p, e, v % 3 == 0, &[("t", 0), ("t", -1)]);
                    if v <= 3 {
                        h.add_v(v, id, p, e, &[("t", i32::MAX)]);
                        h.add_offsets(v, id, p, e, -5);
                    }
                    h.init_v(v, id, p, e);
                }
            }
        }
    }
    // Whatever happened, every transaction is in a state Kafka allows.
    for id in [TXN, "open"] {
        let m = h.txn(id);
        assert!(m.producer_epoch >= 0, "{m:?}");
        assert!(!matches!(
            m.state,
            TxnState::Dead | TxnState::PrepareEpochFence
        ));
    }
    assert!(h.shard.transaction("").is_none());
}
