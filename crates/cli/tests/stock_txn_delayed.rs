//! KAFKA-17754, the anomaly Jepsen found in Kafka's transactions in 2024: a request of
//! transaction N that is delayed in the network until transaction N+1 is open (a produce,
//! or the EndTxn itself) must not land in N+1 — it would commit N+1 early (aborted reads,
//! lost writes) or slip N's record into it. Transactions V2 (KIP-890) closes it: every
//! EndTxn bumps the producer epoch, so anything of N carries an epoch N+1 has fenced.
//!
//! The delay is injected by sending, late, the very request a client sent earlier with the
//! producer id and epoch it had then (what a proxy holding the request would deliver); the
//! same requests go to a kraftd broker and to an Apache Kafka 4.4.0 broker from the jars,
//! and every answer, and the last stable offset after each step, must match — with the late
//! requests refused on both.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kraftd_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kraftd_protocol::messages::{
    CreateTopicsRequest, DescribeTransactionsRequest, EndTxnRequest, ListOffsetsRequest,
    ProduceRequest,
};
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};

use common::kafka_jars::kafka_cluster;
use common::python::{python, wait_until_brokers_listed};
use common::raw::Raw;
use common::{all_logs, formatted_cluster, stop_gracefully};

const TXN: &str = "delayed";
const TOPIC: &str = "dt";

fn produce(raw: &mut Raw, pid: i64, epoch: i16, seq: i32, value: &'static [u8]) -> i16 {
    let mut b = RecordBatchBuilder::new(0)
        .producer(pid, epoch, seq)
        .transactional(true);
    b.append(0, None, Some(Bytes::from_static(value)), Vec::new())
        .unwrap();
    let request = ProduceRequest {
        transactional_id: Some(TXN.into()),
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: TOPIC.into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(b.build().unwrap()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // v12: a transactions-V2 client's Produce (the broker adds the partition).
    match raw.call(12, RequestBody::Produce(request)) {
        ResponseBody::Produce(r) => r.responses[0].partition_responses[0].error_code,
        other => panic!("Produce answered with {other:?}"),
    }
}

/// EndTxn v5 (transactions V2): (error, producer id, new epoch).
fn end_txn(raw: &mut Raw, pid: i64, epoch: i16, commit: bool) -> (i16, i64, i16) {
    let request = EndTxnRequest {
        transactional_id: TXN.into(),
        producer_id: pid,
        producer_epoch: epoch,
        committed: commit,
        ..Default::default()
    };
    match raw.call(5, RequestBody::EndTxn(request)) {
        ResponseBody::EndTxn(r) => (r.error_code, r.producer_id, r.producer_epoch),
        other => panic!("EndTxn answered with {other:?}"),
    }
}

/// The partition's last stable offset (ListOffsets latest, read_committed).
fn last_stable_offset(raw: &mut Raw) -> i64 {
    let request = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: 1,
        topics: vec![ListOffsetsTopic {
            name: TOPIC.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                current_leader_epoch: -1,
                timestamp: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    match raw.call(7, RequestBody::ListOffsets(request)) {
        ResponseBody::ListOffsets(r) => r.topics[0].partitions[0].offset,
        other => panic!("ListOffsets answered with {other:?}"),
    }
}

fn state(raw: &mut Raw) -> String {
    let describe = DescribeTransactionsRequest {
        transactional_ids: vec![TXN.into()],
        ..Default::default()
    };
    match raw.call(0, RequestBody::DescribeTransactions(describe)) {
        ResponseBody::DescribeTransactions(r) => r.transaction_states[0].transaction_state.clone(),
        other => panic!("DescribeTransactions answered with {other:?}"),
    }
}

/// Until the transaction's markers are written (the coordinator says Complete*).
fn wait_complete(raw: &mut Raw) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = state(raw);
        if s.starts_with("Complete") {
            return;
        }
        assert!(Instant::now() < deadline, "the transaction stayed {s}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn retrying(mut call: impl FnMut() -> i16) -> i16 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let code = call();
        let again = [
            ErrorCode::CoordinatorLoadInProgress,
            ErrorCode::CoordinatorNotAvailable,
            ErrorCode::NotCoordinator,
            ErrorCode::ConcurrentTransactions,
            ErrorCode::NotEnoughReplicas,
        ]
        .iter()
        .any(|e| e.code() == code);
        if !again || Instant::now() > deadline {
            return code;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn scenario(address: &str) -> Vec<(&'static str, String)> {
    let mut raw = Raw::connect(address);
    raw.call(
        7,
        RequestBody::CreateTopics(CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: TOPIC.into(),
                num_partitions: 1,
                replication_factor: 1,
                ..Default::default()
            }],
            timeout_ms: 30_000,
            ..Default::default()
        }),
    );
    retrying(|| raw.find_coordinator(1, TXN));
    let (mut pid, mut e0) = (-1, -1);
    let code = retrying(|| {
        let (code, new_id, new_epoch) = raw.init_producer_id(5, TXN);
        (pid, e0) = (new_id, new_epoch);
        code
    });
    assert_eq!(code, 0, "InitProducerId");
    let code = |c: i16| format!("{:?}", ErrorCode::from_code(c));
    let mut steps = Vec::new();
    // Transaction N: one record, committed; the epoch moves on.
    steps.push((
        "N: produce",
        code(retrying(|| produce(&mut raw, pid, e0, 0, b"n"))),
    ));
    let (c, pid1, e1) = end_txn(&mut raw, pid, e0, true);
    steps.push(("N: EndTxn commit", code(c)));
    steps.push((
        "N: the epoch moved on",
        format!("{}", e1 > e0 || pid1 != pid),
    ));
    wait_complete(&mut raw);
    // Transaction N+1: one record, open.
    steps.push((
        "N+1: produce",
        code(retrying(|| produce(&mut raw, pid1, e1, 0, b"n+1"))),
    ));
    let lso_open = last_stable_offset(&mut raw);
    steps.push(("N+1 open: LSO", lso_open.to_string()));
    // The delayed requests of N arrive now.
    let (late_end, _, _) = end_txn(&mut raw, pid, e0, true);
    steps.push(("N's delayed EndTxn commit", code(late_end)));
    steps.push(("N+1 after it", state(&mut raw)));
    steps.push(("LSO after it", last_stable_offset(&mut raw).to_string()));
    steps.push((
        "N's delayed produce",
        code(produce(&mut raw, pid, e0, 1, b"late")),
    ));
    steps.push(("LSO after that", last_stable_offset(&mut raw).to_string()));
    // N+1 aborts: only N's record is ever committed.
    let (c, _, _) = end_txn(&mut raw, pid1, e1, false);
    steps.push(("N+1: EndTxn abort", code(c)));
    wait_complete(&mut raw);
    steps.push(("N+1 in the end", state(&mut raw)));
    steps
}

#[test]
fn delayed_requests_of_an_ended_transaction_never_land_in_the_next_one() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    brokers[0].add_config(&[
        "transaction.state.log.num.partitions=4",
        "offsets.topic.num.partitions=4",
    ]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    wait_until_brokers_listed(&brokers[0].address(), 1, || all_logs(&brokers));
    let ours = scenario(&brokers[0].address());
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);

    let kafka_root = tempfile::tempdir().unwrap();
    let (mut kafka_controller, mut kafka_brokers) = kafka_cluster(
        kafka_root.path(),
        1,
        "transaction.state.log.num.partitions=4\noffsets.topic.num.partitions=4",
    );
    let theirs = scenario(&kafka_brokers[0].address());
    for n in kafka_brokers
        .iter_mut()
        .chain(std::iter::once(&mut kafka_controller))
    {
        n.kill9();
    }
    let table: Vec<String> = ours
        .iter()
        .zip(&theirs)
        .map(|((label, a), (_, b))| format!("{label}: kraftd {a} / Kafka {b}"))
        .collect();
    eprintln!("{}", table.join("\n"));
    assert_eq!(
        ours,
        theirs,
        "kraftd and Kafka 4.4.0 disagree:\n{}",
        table.join("\n")
    );
    let step = |label: &str| ours.iter().find(|(l, _)| *l == label).unwrap().1.clone();
    assert_ne!(
        step("N's delayed EndTxn commit"),
        "Some(None)",
        "the late EndTxn was accepted"
    );
    assert_eq!(step("N+1 after it"), "Ongoing", "the late EndTxn ended N+1");
    assert_eq!(
        step("LSO after it"),
        step("N+1 open: LSO"),
        "N+1's record became visible"
    );
    assert_ne!(
        step("N's delayed produce"),
        "Some(None)",
        "the late produce landed in N+1"
    );
    assert_eq!(step("N+1 in the end"), "CompleteAbort");
}
