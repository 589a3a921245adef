//! ACLs enforced end to end, with real processes: `authorizer.class.name` set to Kafka's
//! StandardAuthorizer.
//!
//! Principals: every listener here is PLAINTEXT, so every connection is `User:ANONYMOUS` —
//! the clients' and the nodes' own. Two PLAINTEXT listeners cannot give two users, so these
//! clusters run with `allow.everyone.if.no.acl.found=true` and no super users: a resource no
//! ACL names is open (so the nodes register, replicate and create internal topics), and the
//! resources under test are named by ACLs — some for ANONYMOUS, some only for `User:bob` — so
//! every decision about them is a real ACL evaluation of the client's principal, refusals
//! included. `super_users_bypass_every_acl` turns `super.users=User:ANONYMOUS` on instead.
//! The matrix script takes its principal and connection settings as arguments, ready for
//! distinct SASL users: once brokers serve SASL_PLAINTEXT, give them a `SASL` listener with
//! PLAIN users in `sasl.jaas.config` (`user_admin`, `user_alice`, `user_bob`), replace
//! `allow.everyone.if.no.acl.found=true` with `super.users=User:admin;User:ANONYMOUS` (the
//! nodes keep talking PLAINTEXT), and run the script against the SASL addresses with
//! `--principal User:alice --client-config '{"security.protocol": "SASL_PLAINTEXT",
//! "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": ...}'` and the
//! same `--admin-config` for admin.
//!
//! - `acl_matrix_with_stock_clients`: confluent-kafka and kafka-python, 2 brokers: produce
//!   to `orders` not `payments`, read with `g1` not `g2`, describe not alter configs, the
//!   missing ACL admits the same client on both brokers within a second, DENY beats ALLOW.
//! - `each_api_refuses_as_kafka_does`: the same raw requests to kraftd and to Apache Kafka
//!   4.4.0 run from its jars with the same settings, every error code and authorized
//!   operations field compared — data plane, groups, transactions, configs, and the
//!   requests a broker forwards to the controller (checked again there as the client).
//! - `without_an_authorizer_the_acl_apis_answer_security_disabled`: Kafka's own
//!   `kafka-acls` tool and kafka-python's admin client.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kraftd_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kraftd_protocol::messages::create_acls_request::AclCreation;
use kraftd_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kraftd_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kraftd_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kraftd_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kraftd_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kraftd_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kraftd_protocol::messages::metadata_request::MetadataRequestTopic;
use kraftd_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kraftd_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kraftd_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kraftd_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kraftd_protocol::messages::*;
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};

use common::kafka_jars::{classpath, kafka_cluster, log4j_option};
use common::python::{python, run_inline, run_until_all_ok, wait_until_brokers_listed};
use common::raw::Raw;
use common::{addresses, all_logs, formatted_cluster, stop_gracefully, Node};

/// Kafka's StandardAuthorizer, on.
const AUTHORIZER: &str =
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer";
/// What every node of these clusters needs on PLAINTEXT (see the module doc).
const OPEN_UNLESS_NAMED: &str = "allow.everyone.if.no.acl.found=true";
/// Few offsets partitions: the test controllers' metadata segments are small.
const FEW_OFFSETS_PARTITIONS: &str = "offsets.topic.num.partitions=2";

/// A cluster of one controller and `brokers` brokers with `config` on every node, started,
/// every broker listed by every broker.
fn cluster(root: &std::path::Path, brokers: i32, config: &[&str]) -> (Vec<Node>, Vec<Node>) {
    let (_id, mut controllers, mut brokers) = formatted_cluster(root, 1, brokers);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.add_config(config);
        node.add_config(&[FEW_OFFSETS_PARTITIONS]);
        node.start();
    }
    let expected = brokers.len();
    wait_until_brokers_listed(&addresses(&brokers), expected, || all_logs(&brokers));
    (controllers, brokers)
}

#[test]
fn acl_matrix_with_stock_clients() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (mut controllers, mut brokers) = cluster(root.path(), 2, &[AUTHORIZER, OPEN_UNLESS_NAMED]);
    let bootstrap = addresses(&brokers);
    run_until_all_ok(
        "acl_matrix.py",
        &[
            "matrix",
            "--bootstrap",
            &bootstrap,
            "--principal",
            "User:ANONYMOUS",
        ],
        || all_logs(&brokers) + &all_logs(&controllers),
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}

#[test]
fn super_users_bypass_every_acl() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (mut controllers, mut brokers) =
        cluster(root.path(), 1, &[AUTHORIZER, "super.users=User:ANONYMOUS"]);
    run_until_all_ok(
        "acl_matrix.py",
        &[
            "super",
            "--bootstrap",
            &addresses(&brokers),
            "--principal",
            "User:ANONYMOUS",
        ],
        || all_logs(&brokers) + &all_logs(&controllers),
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}

/// Calls `f` until it returns something other than a "not ready yet" code (coordinator
/// loading, leader moving), for at most 30 s.
fn settled(mut f: impl FnMut() -> i64) -> i64 {
    let retry = [
        ErrorCode::CoordinatorLoadInProgress,
        ErrorCode::CoordinatorNotAvailable,
        ErrorCode::NotCoordinator,
        ErrorCode::LeaderNotAvailable,
        ErrorCode::NotLeaderOrFollower,
        ErrorCode::UnknownTopicOrPartition,
    ];
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let value = f();
        if !retry.iter().any(|e| i64::from(e.code()) == value) || Instant::now() > deadline {
            return value;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn topics_named(names: &[&str]) -> Option<Vec<MetadataRequestTopic>> {
    Some(
        names
            .iter()
            .map(|n| MetadataRequestTopic {
                name: Some(n.to_string()),
                ..Default::default()
            })
            .collect(),
    )
}

fn metadata(raw: &mut Raw, request: MetadataRequest) -> MetadataResponse {
    match raw.call(10, RequestBody::Metadata(request)) {
        ResponseBody::Metadata(r) => r,
        other => panic!("Metadata answered with {other:?}"),
    }
}

fn allow(resource_type: i8, name: &str, principal: &str, operation: i8) -> AclCreation {
    AclCreation {
        resource_type,
        resource_name: name.into(),
        resource_pattern_type: 3,
        principal: principal.into(),
        host: "*".into(),
        operation,
        permission_type: 3,
        ..Default::default()
    }
}

fn one_record() -> Bytes {
    let mut b = RecordBatchBuilder::new(0);
    b.append(0, None, Some(Bytes::from_static(b"v")), Vec::new())
        .unwrap();
    b.build().unwrap()
}

/// The same raw requests, as `User:ANONYMOUS`, with `payments`, group `g2` and transaction
/// `tx2` named only by `User:bob`'s ACLs: (step, error code or value) per request.
fn scenario(address: &str) -> Vec<(&'static str, i64)> {
    let mut raw = Raw::connect(address);
    let mut steps: Vec<(&'static str, i64)> = Vec::new();
    let created = raw.call(
        7,
        RequestBody::CreateTopics(CreateTopicsRequest {
            topics: ["orders", "payments"]
                .iter()
                .map(|n| CreatableTopic {
                    name: n.to_string(),
                    num_partitions: 1,
                    replication_factor: 1,
                    ..Default::default()
                })
                .collect(),
            timeout_ms: 30_000,
            ..Default::default()
        }),
    );
    let ResponseBody::CreateTopics(created) = created else {
        panic!("{created:?}")
    };
    for t in &created.topics {
        steps.push((
            "create topic (no ACL names the cluster)",
            i64::from(t.error_code),
        ));
    }
    // Both led before any ACL exists.
    settled(|| {
        let m = metadata(
            &mut raw,
            MetadataRequest {
                topics: topics_named(&["orders", "payments"]),
                ..Default::default()
            },
        );
        m.topics
            .iter()
            .flat_map(|t| {
                std::iter::once(t.error_code).chain(t.partitions.iter().map(|p| p.error_code))
            })
            .map(i64::from)
            .find(|c| *c != 0)
            .unwrap_or(0)
    });
    let acls = raw.call(
        3,
        RequestBody::CreateAcls(CreateAclsRequest {
            creations: vec![
                allow(2, "payments", "User:bob", 3),
                allow(3, "g2", "User:bob", 3),
                allow(5, "tx2", "User:bob", 4),
            ],
            ..Default::default()
        }),
    );
    let ResponseBody::CreateAcls(acls) = acls else {
        panic!("{acls:?}")
    };
    for r in &acls.results {
        steps.push(("create ACL", i64::from(r.error_code)));
    }
    // The ACLs reach the broker.
    let deadline = Instant::now() + Duration::from_secs(10);
    let hidden = loop {
        let m = metadata(
            &mut raw,
            MetadataRequest {
                topics: topics_named(&["payments"]),
                ..Default::default()
            },
        );
        let code = m.topics[0].error_code;
        if code == ErrorCode::TopicAuthorizationFailed.code() || Instant::now() > deadline {
            break m;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let t = &hidden.topics[0];
    steps.push(("metadata names payments", i64::from(t.error_code)));
    steps.push(("payments' partitions shown", t.partitions.len() as i64));
    steps.push(("payments' id shown", i64::from(t.topic_id.0 != [0; 16])));
    let all = metadata(
        &mut raw,
        MetadataRequest {
            topics: None,
            include_cluster_authorized_operations: true,
            include_topic_authorized_operations: true,
            ..Default::default()
        },
    );
    let listed = |name: &str| all.topics.iter().any(|t| t.name.as_deref() == Some(name));
    steps.push(("all topics list payments", i64::from(listed("payments"))));
    steps.push(("all topics list orders", i64::from(listed("orders"))));
    let orders_ops = all
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some("orders"))
        .map_or(-1, |t| i64::from(t.topic_authorized_operations));
    steps.push(("orders' authorized operations", orders_ops));
    steps.push((
        "the cluster's authorized operations",
        i64::from(all.cluster_authorized_operations),
    ));
    let cluster = raw.call(
        0,
        RequestBody::DescribeCluster(DescribeClusterRequest {
            include_cluster_authorized_operations: true,
            ..Default::default()
        }),
    );
    let ResponseBody::DescribeCluster(cluster) = cluster else {
        panic!("{cluster:?}")
    };
    steps.push((
        "DescribeCluster's authorized operations",
        i64::from(cluster.cluster_authorized_operations),
    ));

    // The data plane.
    let produce = |raw: &mut Raw, topic: &str| {
        let request = ProduceRequest {
            acks: -1,
            timeout_ms: 30_000,
            topic_data: vec![TopicProduceData {
                name: topic.into(),
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(one_record()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        match raw.call(9, RequestBody::Produce(request)) {
            ResponseBody::Produce(r) => i64::from(r.responses[0].partition_responses[0].error_code),
            other => panic!("{other:?}"),
        }
    };
    steps.push(("produce orders", settled(|| produce(&mut raw, "orders"))));
    steps.push(("produce payments", produce(&mut raw, "payments")));
    let fetch = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: "payments".into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                current_leader_epoch: -1,
                last_fetched_epoch: -1,
                log_start_offset: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::Fetch(f) = raw.call(12, RequestBody::Fetch(fetch)) else {
        panic!("not a Fetch response")
    };
    steps.push((
        "fetch payments",
        i64::from(f.responses[0].partitions[0].error_code),
    ));
    let list = ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: "payments".into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp: -1,
                current_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::ListOffsets(l) = raw.call(7, RequestBody::ListOffsets(list)) else {
        panic!("not a ListOffsets response")
    };
    steps.push((
        "list offsets payments",
        i64::from(l.topics[0].partitions[0].error_code),
    ));
    let delete = DeleteRecordsRequest {
        topics: vec![DeleteRecordsTopic {
            name: "payments".into(),
            partitions: vec![DeleteRecordsPartition {
                partition_index: 0,
                offset: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    };
    let ResponseBody::DeleteRecords(d) = raw.call(2, RequestBody::DeleteRecords(delete)) else {
        panic!("not a DeleteRecords response")
    };
    steps.push((
        "delete records payments",
        i64::from(d.topics[0].partitions[0].error_code),
    ));
    let describe = DescribeConfigsRequest {
        resources: ["orders", "payments"]
            .iter()
            .map(|n| DescribeConfigsResource {
                resource_type: 2,
                resource_name: n.to_string(),
                configuration_keys: Some(vec!["retention.ms".into()]),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let ResponseBody::DescribeConfigs(c) = raw.call(4, RequestBody::DescribeConfigs(describe))
    else {
        panic!("not a DescribeConfigs response")
    };
    for name in ["orders", "payments"] {
        let r = c.results.iter().find(|r| r.resource_name == name).unwrap();
        steps.push(("describe configs", i64::from(r.error_code)));
    }

    // Groups.
    let find = |raw: &mut Raw, key_type: i8, key: &str| {
        let request = FindCoordinatorRequest {
            key_type,
            coordinator_keys: vec![key.into()],
            ..Default::default()
        };
        match raw.call(4, RequestBody::FindCoordinator(request)) {
            ResponseBody::FindCoordinator(r) => i64::from(r.coordinators[0].error_code),
            other => panic!("{other:?}"),
        }
    };
    steps.push(("find coordinator g1", settled(|| find(&mut raw, 0, "g1"))));
    steps.push(("find coordinator g2", find(&mut raw, 0, "g2")));
    let join = JoinGroupRequest {
        group_id: "g2".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        member_id: String::new(),
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::new(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::JoinGroup(j) = raw.call(9, RequestBody::JoinGroup(join)) else {
        panic!("not a JoinGroup response")
    };
    steps.push(("join group g2", i64::from(j.error_code)));
    let commit = OffsetCommitRequest {
        group_id: "g1".into(),
        generation_id_or_member_epoch: -1,
        member_id: String::new(),
        topics: vec![OffsetCommitRequestTopic {
            name: "payments".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 0,
                committed_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::OffsetCommit(oc) = raw.call(8, RequestBody::OffsetCommit(commit)) else {
        panic!("not an OffsetCommit response")
    };
    steps.push((
        "commit g1's payments offsets",
        i64::from(oc.topics[0].partitions[0].error_code),
    ));
    let fetch_offsets = |raw: &mut Raw, group: &str| {
        let request = OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: group.into(),
                topics: Some(vec![OffsetFetchRequestTopics {
                    name: "payments".into(),
                    partition_indexes: vec![0],
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            ..Default::default()
        };
        match raw.call(8, RequestBody::OffsetFetch(request)) {
            ResponseBody::OffsetFetch(r) => {
                let g = &r.groups[0];
                let partition = g
                    .topics
                    .first()
                    .and_then(|t| t.partitions.first())
                    .map_or(-1, |p| i64::from(p.error_code));
                (i64::from(g.error_code), partition)
            }
            other => panic!("{other:?}"),
        }
    };
    let (group, partition) = fetch_offsets(&mut raw, "g1");
    steps.push(("fetch g1's offsets: the group", group));
    steps.push(("fetch g1's offsets: payments", partition));
    steps.push(("fetch g2's offsets", fetch_offsets(&mut raw, "g2").0));
    let ResponseBody::DescribeGroups(dg) = raw.call(
        5,
        RequestBody::DescribeGroups(DescribeGroupsRequest {
            groups: vec!["g2".into()],
            ..Default::default()
        }),
    ) else {
        panic!("not a DescribeGroups response")
    };
    steps.push(("describe group g2", i64::from(dg.groups[0].error_code)));
    let ResponseBody::DeleteGroups(del) = raw.call(
        2,
        RequestBody::DeleteGroups(DeleteGroupsRequest {
            groups_names: vec!["g2".into()],
            ..Default::default()
        }),
    ) else {
        panic!("not a DeleteGroups response")
    };
    steps.push(("delete group g2", i64::from(del.results[0].error_code)));

    // Transactions.
    steps.push(("find coordinator tx2", find(&mut raw, 1, "tx2")));
    let init = InitProducerIdRequest {
        transactional_id: Some("tx2".into()),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    let ResponseBody::InitProducerId(i) = raw.call(4, RequestBody::InitProducerId(init)) else {
        panic!("not an InitProducerId response")
    };
    steps.push(("init producer id tx2", i64::from(i.error_code)));
    let add = AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: "tx2".into(),
        v3_and_below_producer_id: 1,
        v3_and_below_producer_epoch: 0,
        v3_and_below_topics: vec![AddPartitionsToTxnTopic {
            name: "orders".into(),
            partitions: vec![0],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::AddPartitionsToTxn(a) = raw.call(3, RequestBody::AddPartitionsToTxn(add))
    else {
        panic!("not an AddPartitionsToTxn response")
    };
    steps.push((
        "add partitions to tx2",
        i64::from(a.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code),
    ));
    let end = EndTxnRequest {
        transactional_id: "tx2".into(),
        producer_id: 1,
        producer_epoch: 0,
        committed: true,
        ..Default::default()
    };
    let ResponseBody::EndTxn(e) = raw.call(3, RequestBody::EndTxn(end)) else {
        panic!("not an EndTxn response")
    };
    steps.push(("end tx2", i64::from(e.error_code)));

    let commit = TxnOffsetCommitRequest {
        transactional_id: "tx2".into(),
        group_id: "g1".into(),
        producer_id: 1,
        producer_epoch: 0,
        generation_id_or_member_epoch: -1,
        topics: vec![TxnOffsetCommitRequestTopic {
            name: "orders".into(),
            partitions: vec![TxnOffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 0,
                committed_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::TxnOffsetCommit(tc) = raw.call(3, RequestBody::TxnOffsetCommit(commit))
    else {
        panic!("not a TxnOffsetCommit response")
    };
    steps.push((
        "commit tx2's offsets",
        i64::from(tc.topics[0].partitions[0].error_code),
    ));
    let offsets = AddOffsetsToTxnRequest {
        transactional_id: "tx2".into(),
        producer_id: 1,
        producer_epoch: 0,
        group_id: "g1".into(),
        ..Default::default()
    };
    let ResponseBody::AddOffsetsToTxn(ao) = raw.call(3, RequestBody::AddOffsetsToTxn(offsets))
    else {
        panic!("not an AddOffsetsToTxn response")
    };
    steps.push(("add g1's offsets to tx2", i64::from(ao.error_code)));
    let describe = DescribeTransactionsRequest {
        transactional_ids: vec!["tx2".into()],
        ..Default::default()
    };
    let ResponseBody::DescribeTransactions(dt) =
        raw.call(0, RequestBody::DescribeTransactions(describe))
    else {
        panic!("not a DescribeTransactions response")
    };
    steps.push((
        "describe tx2",
        i64::from(dt.transaction_states[0].error_code),
    ));
    let producers = DescribeProducersRequest {
        topics: vec![
            kraftd_protocol::messages::describe_producers_request::TopicRequest {
                name: "payments".into(),
                partition_indexes: vec![0],
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let ResponseBody::DescribeProducers(dp) =
        raw.call(0, RequestBody::DescribeProducers(producers))
    else {
        panic!("not a DescribeProducers response")
    };
    steps.push((
        "describe payments' producers",
        i64::from(dp.topics[0].partitions[0].error_code),
    ));
    let delete_offsets = OffsetDeleteRequest {
        group_id: "g2".into(),
        ..Default::default()
    };
    let ResponseBody::OffsetDelete(od) = raw.call(0, RequestBody::OffsetDelete(delete_offsets))
    else {
        panic!("not an OffsetDelete response")
    };
    steps.push(("delete g2's offsets", i64::from(od.error_code)));
    let ResponseBody::DescribeAcls(da) = raw.call(
        3,
        RequestBody::DescribeAcls(DescribeAclsRequest {
            resource_type_filter: 1,
            resource_name_filter: None,
            principal_filter: None,
            host_filter: None,
            pattern_type_filter: 1,
            operation: 1,
            permission_type: 1,
            ..Default::default()
        }),
    ) else {
        panic!("not a DescribeAcls response")
    };
    steps.push(("describe ACLs", i64::from(da.error_code)));
    steps.push(("ACLs described", da.resources.len() as i64));

    // Forwarded to the controller, which checks the client again.
    let partitions = CreatePartitionsRequest {
        topics: vec![CreatePartitionsTopic {
            name: "payments".into(),
            count: 2,
            assignments: None,
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    };
    let ResponseBody::CreatePartitions(cp) = raw.call(3, RequestBody::CreatePartitions(partitions))
    else {
        panic!("not a CreatePartitions response")
    };
    steps.push((
        "create partitions payments",
        i64::from(cp.results[0].error_code),
    ));
    let alter = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: 2,
            resource_name: "payments".into(),
            configs: vec![AlterableConfig {
                name: "retention.ms".into(),
                config_operation: 0,
                value: Some("60000".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::IncrementalAlterConfigs(ia) =
        raw.call(1, RequestBody::IncrementalAlterConfigs(alter))
    else {
        panic!("not an IncrementalAlterConfigs response")
    };
    steps.push((
        "alter payments' configs",
        i64::from(ia.responses[0].error_code),
    ));
    steps
}

#[test]
fn each_api_refuses_as_kafka_does() {
    python();
    let settings = format!("{AUTHORIZER}\n{OPEN_UNLESS_NAMED}\n{FEW_OFFSETS_PARTITIONS}");
    let root = tempfile::tempdir().unwrap();
    let (mut controllers, mut brokers) = cluster(root.path(), 1, &[AUTHORIZER, OPEN_UNLESS_NAMED]);
    let ours = scenario(&brokers[0].address());
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);

    let kafka_root = tempfile::tempdir().unwrap();
    let (mut kafka_controller, mut kafka_brokers) = kafka_cluster(kafka_root.path(), 1, &settings);
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
    // And the refusals are refusals: the scenario is not vacuous.
    let refused = ErrorCode::TopicAuthorizationFailed.code();
    assert!(ours.contains(&("produce payments", i64::from(refused))));
    assert!(ours.contains(&(
        "join group g2",
        i64::from(ErrorCode::GroupAuthorizationFailed.code())
    )));
    assert!(ours.contains(&(
        "init producer id tx2",
        i64::from(ErrorCode::TransactionalIdAuthorizationFailed.code())
    )));
}

#[test]
fn without_an_authorizer_the_acl_apis_answer_security_disabled() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (mut controllers, mut brokers) = cluster(root.path(), 1, &[]);
    let bootstrap = brokers[0].address();
    // Kafka's own tool.
    let out = std::process::Command::new("java")
        .args(["-Xmx256m", "-XX:TieredStopAtLevel=1", &log4j_option()])
        .args(["-cp", &classpath(), "org.apache.kafka.tools.AclCommand"])
        .args(["--bootstrap-server", &bootstrap, "--list"])
        .output()
        .expect("java runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("SecurityDisabledException") && text.contains("No Authorizer is configured"),
        "kafka-acls --list: {text}"
    );
    // kafka-python's admin client: DescribeAcls and CreateAcls.
    let script = r#"
import sys
from kafka.admin import KafkaAdminClient, ACL, ACLFilter, ACLOperation, ACLPermissionType
from kafka.admin import ResourcePattern, ResourcePatternFilter, ResourceType, ACLResourcePatternType
import kafka.errors as errors
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1])
try:
    admin.describe_acls(ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)))
    print("describe allowed")
except errors.SecurityDisabledError as e:
    print("describe", e)
created = admin.create_acls([ACL("User:bob", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
    ResourcePattern(ResourceType.TOPIC, "t", ACLResourcePatternType.LITERAL))])
print("create", [type(f).__name__ if not isinstance(f, type) else f.__name__ for f in created["failed"]])
"#;
    let out = run_inline(script, &[&bootstrap]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("describe")
            && text.contains("No Authorizer is configured on the broker")
            && text.contains("create ['SecurityDisabledError']"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
