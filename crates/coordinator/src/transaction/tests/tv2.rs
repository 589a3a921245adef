//! Transaction version 2 (EndTxn v5, KIP-890 part 2): the epoch is bumped at every
//! transaction end and answered; retries are told apart by the epoch before the bump.

use std::collections::BTreeSet;

use kraftd_protocol::ErrorCode;

use super::*;
use crate::transaction::metadata::TxnState;

#[test]
fn end_txn_bumps_the_epoch_and_answers_it() {
    let mut h = H::new();
    let (pid, e0) = h.init(TXN);
    assert_eq!(h.add_batched(5, TXN, pid, e0, false, &[("t", 0)]), vec![0]);
    let r = h.end(5, TXN, pid, e0, true);
    assert_eq!((r.error_code, r.producer_id, r.producer_epoch), (0, pid, 1));
    let m = h.txn(TXN);
    assert_eq!(
        (m.state, m.producer_epoch, m.last_producer_epoch),
        (TxnState::PrepareCommit, 1, 0)
    );
    assert_eq!(m.client_transaction_version, 2);
    // Markers carry the bumped epoch.
    let marker = h.markers[0].clone();
    assert_eq!(
        (marker.producer_id, marker.producer_epoch, marker.commit),
        (pid, 1, true)
    );
    // A retry while markers are in flight.
    assert_eq!(
        h.end(5, TXN, pid, e0, true).error_code,
        c(ErrorCode::ConcurrentTransactions)
    );
    h.markers_written(&marker);
    let m = h.txn(TXN);
    assert_eq!(
        (m.state, m.producer_id, m.producer_epoch),
        (TxnState::CompleteCommit, pid, 1)
    );
    // A retry after completion answers success with the epoch to go on with.
    let r = h.end(5, TXN, pid, e0, true);
    assert_eq!((r.error_code, r.producer_id, r.producer_epoch), (0, pid, 1));
    assert!(h.records.is_empty());
    assert_eq!(
        h.end(5, TXN, pid, e0, false).error_code,
        c(ErrorCode::InvalidTxnState)
    );
    // At the new epoch: committing nothing is refused, aborting nothing bumps again and
    // completes at once (no partitions, no markers).
    assert_eq!(
        h.end(5, TXN, pid, 1, true).error_code,
        c(ErrorCode::InvalidTxnState)
    );
    let r = h.end(5, TXN, pid, 1, false);
    assert_eq!((r.error_code, r.producer_id, r.producer_epoch), (0, pid, 2));
    assert!(h.markers.is_empty());
    assert_eq!(h.records.len(), 2, "PrepareAbort then CompleteAbort");
    let m = h.txn(TXN);
    assert_eq!((m.state, m.producer_epoch), (TxnState::CompleteAbort, 2));
    // The old epochs are fenced now.
    assert_eq!(
        h.end(5, TXN, pid, e0, false).error_code,
        c(ErrorCode::ProducerFenced)
    );
    assert_eq!(
        h.add_batched(5, TXN, pid, 1, false, &[("t", 0)]),
        vec![c(ErrorCode::ProducerFenced)]
    );
}

#[test]
fn empty_transaction_abort_and_commit() {
    let mut h = H::new();
    let (pid, e0) = h.init(TXN);
    assert_eq!(
        h.end(5, TXN, pid, e0, true).error_code,
        c(ErrorCode::InvalidTxnState)
    );
    h.now += 7;
    let r = h.end(5, TXN, pid, e0, false);
    assert_eq!((r.error_code, r.producer_epoch), (0, 1));
    let m = h.txn(TXN);
    assert_eq!(m.state, TxnState::CompleteAbort);
    assert_eq!(m.txn_start_timestamp, h.now);
}

#[test]
fn epoch_overflow_moves_to_the_next_producer_id() {
    let mut h = H::new();
    let (pid, _) = h.init(TXN);
    let mut m = h.txn(TXN);
    m.producer_epoch = i16::MAX - 1;
    m.state = TxnState::Ongoing;
    m.partitions = BTreeSet::from([tp("t", 0)]);
    m.txn_start_timestamp = h.now;
    m.client_transaction_version = 2;
    h.shard
        .replay(5, -1, TransactionRecord::from_metadata(&m, 2))
        .unwrap();
    let r = h.end(5, TXN, pid, i16::MAX - 1, true);
    assert_eq!(r.error_code, 0);
    let next = r.producer_id;
    assert_ne!(next, pid);
    assert_eq!(r.producer_epoch, 0);
    let m = h.txn(TXN);
    assert_eq!(
        (m.producer_id, m.producer_epoch, m.next_producer_id),
        (pid, i16::MAX, next)
    );
    let marker = h.markers[0].clone();
    assert_eq!((marker.producer_id, marker.producer_epoch), (pid, i16::MAX));
    h.markers_written(&marker);
    let m = h.txn(TXN);
    assert_eq!(
        (m.state, m.producer_id, m.producer_epoch),
        (TxnState::CompleteCommit, next, 0)
    );
    assert_eq!(m.prev_producer_id, pid);
    assert_eq!(m.next_producer_id, -1);
    // The retry names the old producer id at its last epoch.
    let r = h.end(5, TXN, pid, i16::MAX - 1, true);
    assert_eq!(
        (r.error_code, r.producer_id, r.producer_epoch),
        (0, next, 0)
    );
    // The new producer goes on.
    assert_eq!(h.add_batched(5, TXN, next, 0, false, &[("t", 1)]), vec![0]);
}
