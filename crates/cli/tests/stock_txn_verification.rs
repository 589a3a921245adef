//! Transaction verification (KIP-890 part 1), answered as Apache Kafka 4.4.0 answers it:
//! the same raw requests go to a kraftd broker and to a Kafka broker run from the jars, and
//! every error code must match. A transactional batch for a partition its transaction never
//! added (a "hanging" write, which would hold the partition's LSO back for good) is
//! refused; once the partition is added the batch goes in; after the transaction commits
//! (DescribeTransactions says CompleteCommit: its markers are written), a late batch of it
//! is refused again.
//!
//! Then transactions V2's offsets: a TxnOffsetCommit v5 (no AddOffsetsToTxn before it, as a
//! V2 Java producer, Kafka Streams' exactly_once_v2, sends it) adds the group's
//! `__consumer_offsets` partition to the transaction, so the EndTxn v5 that commits this
//! offsets-only transaction succeeds and the offsets are committed (an OffsetFetch with
//! `require_stable` reads them) once its markers are written.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kraftd_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kraftd_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kraftd_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kraftd_protocol::messages::{
    AddPartitionsToTxnRequest, CreateTopicsRequest, DescribeTransactionsRequest, EndTxnRequest,
    OffsetFetchRequest, ProduceRequest, TxnOffsetCommitRequest,
};
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};

use common::kafka_jars::kafka_cluster;
use common::python::{python, wait_until_brokers_listed};
use common::raw::Raw;
use common::{all_logs, formatted_cluster, stop_gracefully};

const TXN: &str = "verified";

fn produce(raw: &mut Raw, pid: i64, epoch: i16, seq: i32) -> i16 {
    let mut b = RecordBatchBuilder::new(0)
        .producer(pid, epoch, seq)
        .transactional(true);
    b.append(0, None, Some(Bytes::from_static(b"v")), Vec::new())
        .unwrap();
    let request = ProduceRequest {
        transactional_id: Some(TXN.into()),
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: "vt".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(b.build().unwrap()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    match raw.call(9, RequestBody::Produce(request)) {
        ResponseBody::Produce(r) => r.responses[0].partition_responses[0].error_code,
        other => panic!("Produce answered with {other:?}"),
    }
}

/// Retries `call` while it answers a coordinator error that says "ask again".
fn until_ready(mut call: impl FnMut() -> i16) -> i16 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let code = call();
        let again = [
            ErrorCode::CoordinatorLoadInProgress,
            ErrorCode::CoordinatorNotAvailable,
            ErrorCode::NotCoordinator,
            ErrorCode::ConcurrentTransactions,
        ]
        .iter()
        .any(|e| e.code() == code);
        if !again || Instant::now() > deadline {
            return code;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn scenario(address: &str) -> Vec<(&'static str, i16)> {
    let mut raw = Raw::connect(address);
    raw.call(
        7,
        RequestBody::CreateTopics(CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: "vt".into(),
                num_partitions: 1,
                replication_factor: 1,
                ..Default::default()
            }],
            timeout_ms: 30_000,
            ..Default::default()
        }),
    );
    until_ready(|| raw.find_coordinator(1, TXN));
    let (mut pid, mut epoch) = (-1, -1);
    let code = until_ready(|| {
        let (code, new_id, new_epoch) = raw.init_producer_id(4, TXN);
        (pid, epoch) = (new_id, new_epoch);
        code
    });
    assert_eq!(code, 0, "InitProducerId");
    let mut steps = Vec::new();
    steps.push((
        "a batch of a transaction that never added the partition",
        produce(&mut raw, pid, epoch, 0),
    ));
    let add = |raw: &mut Raw| {
        let request = AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: TXN.into(),
            v3_and_below_producer_id: pid,
            v3_and_below_producer_epoch: epoch,
            v3_and_below_topics: vec![AddPartitionsToTxnTopic {
                name: "vt".into(),
                partitions: vec![0],
                ..Default::default()
            }],
            ..Default::default()
        };
        match raw.call(3, RequestBody::AddPartitionsToTxn(request)) {
            ResponseBody::AddPartitionsToTxn(r) => {
                r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
            }
            other => panic!("AddPartitionsToTxn answered with {other:?}"),
        }
    };
    steps.push(("AddPartitionsToTxn", until_ready(|| add(&mut raw))));
    steps.push((
        "the batch once its partition is in the transaction",
        produce(&mut raw, pid, epoch, 0),
    ));
    let end = EndTxnRequest {
        transactional_id: TXN.into(),
        producer_id: pid,
        producer_epoch: epoch,
        committed: true,
        ..Default::default()
    };
    let code = match raw.call(3, RequestBody::EndTxn(end)) {
        ResponseBody::EndTxn(r) => r.error_code,
        other => panic!("EndTxn answered with {other:?}"),
    };
    steps.push(("EndTxn commit", code));
    // The markers land asynchronously; the coordinator says CompleteCommit once they all
    // have. Then a late batch of the ended transaction must not open a new one.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let describe = DescribeTransactionsRequest {
            transactional_ids: vec![TXN.into()],
            ..Default::default()
        };
        let state = match raw.call(0, RequestBody::DescribeTransactions(describe)) {
            ResponseBody::DescribeTransactions(r) => {
                r.transaction_states[0].transaction_state.clone()
            }
            other => panic!("DescribeTransactions answered with {other:?}"),
        };
        if state == "CompleteCommit" {
            break;
        }
        assert!(Instant::now() < deadline, "the transaction stayed {state}");
        std::thread::sleep(Duration::from_millis(100));
    }
    steps.push((
        "a late batch after the transaction committed",
        produce(&mut raw, pid, epoch, 1),
    ));
    steps.extend(offsets_v2(&mut raw));
    steps
}

/// A transactions V2 producer commits an offsets-only transaction: TxnOffsetCommit v5 with
/// no AddOffsetsToTxn, EndTxn v5; then the offsets as a `require_stable` OffsetFetch sees
/// them.
fn offsets_v2(raw: &mut Raw) -> Vec<(&'static str, i16)> {
    const TXN_V2: &str = "offsets-v2";
    const GROUP: &str = "offsets-v2-group";
    for (key_type, key) in [(1, TXN_V2), (0, GROUP)] {
        until_ready(|| raw.find_coordinator(key_type, key));
    }
    let (mut pid, mut epoch) = (-1, -1);
    let code = until_ready(|| {
        let (code, new_id, new_epoch) = raw.init_producer_id(5, TXN_V2);
        (pid, epoch) = (new_id, new_epoch);
        code
    });
    assert_eq!(code, 0, "InitProducerId");
    let mut steps = Vec::new();
    let commit = TxnOffsetCommitRequest {
        transactional_id: TXN_V2.into(),
        group_id: GROUP.into(),
        producer_id: pid,
        producer_epoch: epoch,
        generation_id_or_member_epoch: -1,
        topics: vec![TxnOffsetCommitRequestTopic {
            name: "vt".into(),
            partitions: vec![TxnOffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 42,
                committed_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let code = until_ready(
        || match raw.call(5, RequestBody::TxnOffsetCommit(commit.clone())) {
            ResponseBody::TxnOffsetCommit(r) => r.topics[0].partitions[0].error_code,
            other => panic!("TxnOffsetCommit answered with {other:?}"),
        },
    );
    steps.push(("TxnOffsetCommit v5 without AddOffsetsToTxn", code));
    let end = EndTxnRequest {
        transactional_id: TXN_V2.into(),
        producer_id: pid,
        producer_epoch: epoch,
        committed: true,
        ..Default::default()
    };
    let code = until_ready(|| match raw.call(5, RequestBody::EndTxn(end.clone())) {
        ResponseBody::EndTxn(r) => r.error_code,
        other => panic!("EndTxn answered with {other:?}"),
    });
    steps.push(("EndTxn v5 commit of the offsets-only transaction", code));
    // Once the markers are written the offsets are stable.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (code, offset) = loop {
        let fetch = OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: GROUP.into(),
                topics: Some(vec![OffsetFetchRequestTopics {
                    name: "vt".into(),
                    partition_indexes: vec![0],
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            require_stable: true,
            ..Default::default()
        };
        let (code, offset) = match raw.call(8, RequestBody::OffsetFetch(fetch)) {
            ResponseBody::OffsetFetch(r) => {
                let p = &r.groups[0].topics[0].partitions[0];
                (p.error_code, p.committed_offset)
            }
            other => panic!("OffsetFetch answered with {other:?}"),
        };
        if (code == 0 && offset == 42) || Instant::now() > deadline {
            break (code, offset);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    steps.push(("OffsetFetch require_stable after the commit", code));
    steps.push((
        "the committed offset is the transaction's (1: yes)",
        i16::from(offset == 42),
    ));
    steps
}

#[test]
fn transactional_writes_outside_their_transaction_are_refused_as_kafka_refuses_them() {
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
    let name = |code: i16| format!("{code} {:?}", ErrorCode::from_code(code));
    let table: Vec<String> = ours
        .iter()
        .zip(&theirs)
        .map(|((label, a), (_, b))| format!("{label}: kraftd {} / Kafka {}", name(*a), name(*b)))
        .collect();
    eprintln!("{}", table.join("\n"));
    assert_eq!(
        ours,
        theirs,
        "kraftd and Kafka 4.4.0 disagree:\n{}",
        table.join("\n")
    );
    assert_ne!(ours[0].1, 0, "a hanging write was accepted");
    assert_eq!(ours[2].1, 0, "the verified write was refused");
    let v2: Vec<i16> = ours[ours.len() - 4..].iter().map(|s| s.1).collect();
    assert_eq!(v2, [0, 0, 0, 1], "transactions V2 offsets");
}
