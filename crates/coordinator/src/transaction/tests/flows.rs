//! Transactions from InitProducerId to their completion, TV1 (EndTxn v0–4).

use std::collections::BTreeSet;

use kraftd_protocol::messages::{InitProducerIdRequest, ListTransactionsRequest};
use kraftd_protocol::ErrorCode;

use super::*;
use crate::transaction::metadata::TxnState;

#[test]
fn init_add_commit_markers_complete() {
    let mut h = H::new();
    let (pid, epoch) = h.init(TXN);
    assert_eq!((pid, epoch), (1_001, 0));
    let m = h.txn(TXN);
    assert_eq!(m.state, TxnState::Empty);
    assert_eq!(m.txn_timeout_ms, TIMEOUT);
    assert_eq!(h.records.len(), 1);

    h.now += 10;
    h.add(TXN, pid, epoch, &[("t", 0), ("t", 1), ("u", 4)]);
    let m = h.txn(TXN);
    assert_eq!(m.state, TxnState::Ongoing);
    assert_eq!(m.txn_start_timestamp, 1_010);
    assert_eq!(
        m.partitions,
        BTreeSet::from([tp("t", 0), tp("t", 1), tp("u", 4)])
    );
    // Adding what is there already writes nothing.
    h.add(TXN, pid, epoch, &[("t", 1)]);
    assert!(h.records.is_empty());

    h.now += 10;
    let r = h.end(3, TXN, pid, epoch, true);
    assert_eq!(r.error_code, 0);
    assert_eq!(h.txn(TXN).state, TxnState::PrepareCommit);
    assert_eq!(h.records.len(), 1);
    assert_eq!(
        h.markers,
        vec![MarkerRequest {
            transactional_id: TXN.into(),
            producer_id: pid,
            producer_epoch: 0,
            coordinator_epoch: COORDINATOR_EPOCH,
            commit: true,
            partitions: vec![tp("t", 0), tp("t", 1), tp("u", 4)],
        }]
    );
    let marker = h.markers[0].clone();
    // While markers are in flight the producer must wait.
    assert_eq!(
        h.add_v(3, TXN, pid, epoch, &[("t", 2)]),
        vec![c(ErrorCode::ConcurrentTransactions)]
    );
    assert_eq!(
        h.init_v(5, TXN, pid, epoch).error_code,
        c(ErrorCode::ConcurrentTransactions)
    );
    assert_eq!(
        h.end(3, TXN, pid, epoch, true).error_code,
        c(ErrorCode::ConcurrentTransactions)
    );
    assert_eq!(
        h.end(3, TXN, pid, epoch, false).error_code,
        c(ErrorCode::InvalidTxnState)
    );

    assert!(h.markers.is_empty(), "refused calls send no markers");
    h.now += 5;
    h.markers_written(&marker);
    let m = h.txn(TXN);
    assert_eq!(m.state, TxnState::CompleteCommit);
    assert!(m.partitions.is_empty());
    assert_eq!((m.producer_id, m.producer_epoch), (pid, 0));
    assert_eq!(m.txn_last_update_timestamp, 1_025);
    assert_eq!(h.records.len(), 1);
    // A second notice for the same markers changes nothing.
    h.markers_written(&marker);
    assert!(h.records.is_empty());

    // A retried EndTxn after completion succeeds; the other outcome is refused.
    assert_eq!(h.end(3, TXN, pid, epoch, true).error_code, 0);
    assert!(h.records.is_empty());
    assert_eq!(
        h.end(3, TXN, pid, epoch, false).error_code,
        c(ErrorCode::InvalidTxnState)
    );

    // The next transaction starts from CompleteCommit.
    h.now += 100;
    h.add(TXN, pid, epoch, &[("v", 0)]);
    let m = h.txn(TXN);
    assert_eq!(m.state, TxnState::Ongoing);
    assert_eq!(m.txn_start_timestamp, 1_125);
    assert_eq!(m.partitions, BTreeSet::from([tp("v", 0)]));
}

#[test]
fn abort_path_and_add_offsets() {
    let mut h = H::new();
    let (pid, epoch) = h.init(TXN);
    h.add(TXN, pid, epoch, &[("t", 0)]);
    assert_eq!(h.add_offsets(3, TXN, pid, epoch, 17), 0);
    assert_eq!(
        h.txn(TXN).partitions,
        BTreeSet::from([tp("__consumer_offsets", 17), tp("t", 0)])
    );
    let r = h.end(3, TXN, pid, epoch, false);
    assert_eq!(r.error_code, 0);
    assert_eq!(h.txn(TXN).state, TxnState::PrepareAbort);
    let marker = h.markers.pop().unwrap();
    assert!(!marker.commit);
    assert_eq!(
        marker.partitions,
        vec![tp("__consumer_offsets", 17), tp("t", 0)]
    );
    h.markers_written(&marker);
    assert_eq!(h.txn(TXN).state, TxnState::CompleteAbort);
    assert_eq!(h.end(3, TXN, pid, epoch, false).error_code, 0);
    assert_eq!(
        h.end(3, TXN, pid, epoch, true).error_code,
        c(ErrorCode::InvalidTxnState)
    );
}

#[test]
fn refusals() {
    let mut h = H::new();
    // Unknown ids.
    assert_eq!(
        h.add_v(3, "nope", 1, 0, &[("t", 0)]),
        vec![c(ErrorCode::InvalidProducerIdMapping)]
    );
    assert_eq!(
        h.end(3, "nope", 1, 0, true).error_code,
        c(ErrorCode::InvalidProducerIdMapping)
    );
    assert_eq!(
        h.add_offsets(3, "nope", 1, 0, 0),
        c(ErrorCode::InvalidProducerIdMapping)
    );
    assert_eq!(
        h.end(3, "", 1, 0, true).error_code,
        c(ErrorCode::InvalidRequest)
    );
    // The timeout is bounded by transaction.max.timeout.ms.
    let fresh = h.fresh_pid();
    let too_long = InitProducerIdRequest {
        transactional_id: Some(TXN.into()),
        transaction_timeout_ms: 900_001,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    match h.call(
        4,
        TxnShardRequest::InitProducerId {
            request: too_long,
            fresh_producer_id: fresh,
        },
    ) {
        TxnShardResponse::InitProducerId(r) => {
            assert_eq!(r.error_code, c(ErrorCode::InvalidTransactionTimeout));
            assert_eq!((r.producer_id, r.producer_epoch), (-1, -1));
        }
        other => panic!("{other:?}"),
    }
    assert!(h.shard.transaction(TXN).is_none());
    let empty = InitProducerIdRequest {
        transactional_id: Some(String::new()),
        transaction_timeout_ms: TIMEOUT,
        ..Default::default()
    };
    match h.call(
        4,
        TxnShardRequest::InitProducerId {
            request: empty,
            fresh_producer_id: 5,
        },
    ) {
        TxnShardResponse::InitProducerId(r) => {
            assert_eq!(r.error_code, c(ErrorCode::InvalidRequest))
        }
        other => panic!("{other:?}"),
    }

    let (pid, epoch) = h.init(TXN);
    // EndTxn of an Empty transaction (TV1) is an invalid state; a wrong id a wrong mapping.
    assert_eq!(
        h.end(3, TXN, pid, epoch, true).error_code,
        c(ErrorCode::InvalidTxnState)
    );
    assert_eq!(
        h.end(3, TXN, pid, epoch, false).error_code,
        c(ErrorCode::InvalidTxnState)
    );
    assert_eq!(
        h.end(3, TXN, pid + 1, epoch, true).error_code,
        c(ErrorCode::InvalidProducerIdMapping)
    );
    assert!(h.records.is_empty());
}

#[test]
fn verify_only_answers_membership() {
    let mut h = H::new();
    let (pid, epoch) = h.init(TXN);
    h.add(TXN, pid, epoch, &[("t", 0)]);
    // v5 callers learn TRANSACTION_ABORTABLE, v4 callers INVALID_TXN_STATE.
    assert_eq!(
        h.add_batched(5, TXN, pid, epoch, true, &[("t", 0), ("t", 1)]),
        vec![0, c(ErrorCode::TransactionAbortable)]
    );
    assert_eq!(
        h.add_batched(4, TXN, pid, epoch, true, &[("t", 0), ("t", 1)]),
        vec![0, c(ErrorCode::InvalidTxnState)]
    );
    assert!(h.records.is_empty(), "verification writes nothing");
    assert_eq!(
        h.add_batched(5, TXN, pid, epoch + 1, true, &[("t", 0)]),
        vec![c(ErrorCode::ProducerFenced)]
    );
    assert_eq!(
        h.add_batched(5, "other", pid, epoch, true, &[("t", 0)]),
        vec![c(ErrorCode::InvalidProducerIdMapping)]
    );
    // A batched add (TV2, from a broker) writes.
    assert_eq!(
        h.add_batched(5, TXN, pid, epoch, false, &[("t", 1)]),
        vec![0]
    );
    let m = h.txn(TXN);
    assert_eq!(m.partitions, BTreeSet::from([tp("t", 0), tp("t", 1)]));
    assert_eq!(m.client_transaction_version, 2);
    assert_eq!(
        h.add_batched(5, TXN, pid, epoch, true, &[("t", 1)]),
        vec![0]
    );
}

#[test]
fn describe_and_list() {
    let mut h = H::new();
    let (pa, ea) = h.init("a");
    let (pb, _) = h.init("b");
    h.now = 5_000;
    h.add("a", pa, ea, &[("t", 1), ("t", 0), ("s", 2)]);
    let described = match h.call(
        0,
        TxnShardRequest::DescribeTransactions(vec!["a".into(), "zzz".into(), String::new()]),
    ) {
        TxnShardResponse::DescribeTransactions(d) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!(described.len(), 3);
    let a = &described[0];
    assert_eq!(a.error_code, 0);
    assert_eq!(a.transactional_id, "a");
    assert_eq!(a.transaction_state, "Ongoing");
    assert_eq!((a.producer_id, a.producer_epoch), (pa, 0));
    assert_eq!(a.transaction_timeout_ms, TIMEOUT);
    assert_eq!(a.transaction_start_time_ms, 5_000);
    let topics: Vec<(String, Vec<i32>)> = a
        .topics
        .iter()
        .map(|t| (t.topic.clone(), t.partitions.clone()))
        .collect();
    assert_eq!(
        topics,
        vec![("s".into(), vec![2]), ("t".into(), vec![0, 1])]
    );
    assert_eq!(
        described[1].error_code,
        c(ErrorCode::TransactionalIdNotFound)
    );
    assert_eq!(described[2].error_code, c(ErrorCode::InvalidRequest));

    let list = |h: &mut H, v: i16, r: ListTransactionsRequest| match h
        .call(v, TxnShardRequest::ListTransactions(r))
    {
        TxnShardResponse::ListTransactions(r) => r,
        other => panic!("{other:?}"),
    };
    let all = list(&mut h, 0, ListTransactionsRequest::default());
    let names: Vec<(&str, i64, &str)> = all
        .transaction_states
        .iter()
        .map(|t| {
            (
                t.transactional_id.as_str(),
                t.producer_id,
                t.transaction_state.as_str(),
            )
        })
        .collect();
    assert_eq!(names, vec![("a", pa, "Ongoing"), ("b", pb, "Empty")]);

    let by_state = list(
        &mut h,
        0,
        ListTransactionsRequest {
            state_filters: vec!["Empty".into(), "Bogus".into()],
            ..Default::default()
        },
    );
    assert_eq!(by_state.unknown_state_filters, vec!["Bogus".to_string()]);
    assert_eq!(by_state.transaction_states.len(), 1);
    assert_eq!(by_state.transaction_states[0].transactional_id, "b");

    let by_pid = list(
        &mut h,
        0,
        ListTransactionsRequest {
            producer_id_filters: vec![pa],
            ..Default::default()
        },
    );
    assert_eq!(by_pid.transaction_states.len(), 1);
    assert_eq!(by_pid.transaction_states[0].transactional_id, "a");

    // v1: running longer than the duration (b has no transaction: start -1 is "long").
    h.now = 8_000;
    let long = list(
        &mut h,
        1,
        ListTransactionsRequest {
            duration_filter: 2_500,
            state_filters: vec!["Ongoing".into()],
            ..Default::default()
        },
    );
    assert_eq!(long.transaction_states.len(), 1);
    let short = list(
        &mut h,
        1,
        ListTransactionsRequest {
            duration_filter: 3_000,
            state_filters: vec!["Ongoing".into()],
            ..Default::default()
        },
    );
    assert!(short.transaction_states.is_empty());

    // v2: a pattern.
    let pattern = list(
        &mut h,
        2,
        ListTransactionsRequest {
            transactional_id_pattern: Some("b.*".into()),
            duration_filter: -1,
            ..Default::default()
        },
    );
    assert_eq!(pattern.transaction_states.len(), 1);
    assert_eq!(pattern.transaction_states[0].transactional_id, "b");
    let bad = list(
        &mut h,
        2,
        ListTransactionsRequest {
            transactional_id_pattern: Some("(".into()),
            duration_filter: -1,
            ..Default::default()
        },
    );
    assert_eq!(bad.error_code, c(ErrorCode::InvalidRegularExpression));
}
