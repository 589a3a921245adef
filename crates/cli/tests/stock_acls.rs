//! ACLs enforced end to end, with real processes: `authorizer.class.name` set to Kafka's
//! StandardAuthorizer.
//!
//! Principals. The stock-client tests run with distinct authenticated users and no listener
//! that admits `User:ANONYMOUS`; `allow.everyone.if.no.acl.found` is off, so whatever is not
//! allowed by an ACL is refused:
//! - SASL: every listener is SASL_PLAINTEXT. The controller listener takes PLAIN, the nodes
//!   logging in as `User:kraft`; each broker's one listener serves both the clients and the
//!   other brokers: SCRAM-SHA-256/512 for `admin` and `alice`, whose credentials
//!   `kraftd format --add-scram` wrote into the bootstrap metadata, PLAIN for the brokers' own
//!   logins as `User:broker`. `super.users=User:admin;User:broker;User:kraft`: the nodes are
//!   super users because they authenticate as themselves (ANONYMOUS is not one). `User:bob`
//!   never logs in; ACLs name him so the refused resources are named by some ACL.
//! - Mutual TLS: every listener is SSL with client certificates required; the nodes'
//!   certificate (`CN=kraftd-node`) is the super user, and the brokers'
//!   `ssl.principal.mapping.rules` map a client certificate `CN=<name>,OU=eng,O=acme` to
//!   `User:<name>`.
//!
//! The differential test sends raw requests (no SASL) on PLAINTEXT to both kraftd and Apache
//! Kafka, so there every connection is `User:ANONYMOUS` and the clusters run with
//! `allow.everyone.if.no.acl.found=true` (a resource no ACL names is open, so the nodes
//! register, replicate and create internal topics); the resources under test are named by
//! `User:bob`'s ACLs, so each decision about them is a real ACL evaluation of ANONYMOUS.
//!
//! - `acl_matrix_as_sasl_users` (`tests/python/acl_matrix.py`, confluent-kafka and
//!   kafka-python, 2 brokers), as `User:alice` over SCRAM: produce to `orders` not
//!   `payments`, read with `g1` not `g2`, describe not alter configs, the missing ACL admits
//!   the same client on both brokers within a second, DENY beats ALLOW; a CreateTopics the
//!   broker forwards to the controller is refused while alice has no CREATE and runs once she
//!   has CREATE on the cluster (the Envelope carries her principal, not the broker's); and
//!   `User:admin`, a super user, is untouched by a DENY of everything.
//! - `a_certificate_principal_is_named_by_acls`: over mutual TLS, the principal the mapping
//!   rules make of a client certificate is refused with no ACL and admitted by an ACL naming
//!   it.
//! - `each_api_refuses_as_kafka_does`: the same raw requests to kraftd and to Apache Kafka
//!   4.4.0 run from its jars with the same settings, every error code and authorized
//!   operations field compared — data plane, groups, share groups, transactions, configs,
//!   and the requests a broker forwards to the controller (checked again there as the
//!   client). `KRAFTD_ACLS_AGAINST=kafka` prints Kafka's answers alone (to check a new step).
//! - `without_an_authorizer_the_acl_apis_answer_security_disabled`: Kafka's own
//!   `kafka-acls` tool and kafka-python's admin client.
//!
//! The tests take turns (one cluster at a time): the within-a-second checks want the
//! machine's cores.

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
use common::pki::Pki;
use common::python::wait_until_brokers_listed_as;
use common::python::{python, run_inline, run_until_all_ok, wait_until_brokers_listed};
use common::raw::Raw;
use common::secured::{sasl_acl_cluster, AUTHORIZER, FEW_OFFSETS_PARTITIONS};
use common::{addresses, all_logs, formatted_cluster, stop_gracefully, Node};

/// What every node of the PLAINTEXT clusters needs (see the module doc).
const OPEN_UNLESS_NAMED: &str = "allow.everyone.if.no.acl.found=true";

/// One cluster at a time (see the module doc).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

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

/// confluent-kafka settings (JSON) for logging in over SASL_PLAINTEXT.
fn sasl_login(mechanism: &str, user: &str, password: &str) -> String {
    format!(
        r#"{{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "{mechanism}", "sasl.username": "{user}", "sasl.password": "{password}"}}"#
    )
}

fn logs(controllers: &[Node], brokers: &[Node]) -> String {
    format!(
        "--- broker logs ---\n{}\n--- controller logs ---\n{}",
        all_logs(brokers),
        all_logs(controllers)
    )
}

#[test]
fn acl_matrix_as_sasl_users() {
    let _serial = serial();
    python();
    let root = tempfile::tempdir().unwrap();
    let (mut controllers, mut brokers) = sasl_acl_cluster(root.path(), 2);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = addresses(&brokers);
    let admin = sasl_login("SCRAM-SHA-512", "admin", "admin-secret");
    let alice = sasl_login("SCRAM-SHA-256", "alice", "alice-secret");
    wait_until_brokers_listed_as(&bootstrap, &admin, 2, || logs(&controllers, &brokers));
    for (mode, principal, client) in [
        ("matrix", "User:alice", &alice),
        ("forwarded", "User:alice", &alice),
        ("super", "User:admin", &admin),
    ] {
        run_until_all_ok(
            "acl_matrix.py",
            &[
                mode,
                "--bootstrap",
                &bootstrap,
                "--principal",
                principal,
                "--client-config",
                client,
                "--admin-config",
                &admin,
            ],
            || logs(&controllers, &brokers),
        );
    }
    let all = logs(&controllers, &brokers);
    assert!(
        !all.contains("SASL authentication failed"),
        "no node or client failed to log in:\n{all}"
    );
    assert!(
        !all.contains("alice-secret") && !all.contains("admin-secret"),
        "no password in the logs"
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}

#[test]
fn a_certificate_principal_is_named_by_acls() {
    let _serial = serial();
    python();
    let root = tempfile::tempdir().unwrap();
    let pki = Pki::new(&root.path().join("pki"));
    let subject = |cn| [("O", "acme"), ("OU", "eng"), ("CN", cn)];
    let (alice_cert, alice_key) = pki.client("alice", &subject("alice"));
    let (admin_cert, admin_key) = pki.client("admin", &subject("admin"));
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    let mut every_node = vec![
        AUTHORIZER.to_string(),
        FEW_OFFSETS_PARTITIONS.to_string(),
        "super.users=User:CN=kraftd-node;User:admin".to_string(),
    ];
    every_node.extend(pki.node_ssl_config());
    for n in controllers.iter().chain(&brokers) {
        n.add_config(&every_node.iter().map(String::as_str).collect::<Vec<_>>());
    }
    controllers[0].add_config(&[
        "listener.security.protocol.map=CONTROLLER:SSL",
        "listener.name.controller.ssl.client.auth=required",
    ]);
    let broker = &brokers[0];
    broker.add_config(&[
        &format!("listeners=MTLS://127.0.0.1:{}", broker.port),
        "listener.security.protocol.map=MTLS:SSL,CONTROLLER:SSL",
        "inter.broker.listener.name=MTLS",
        "listener.name.mtls.ssl.client.auth=required",
        // Client certificates of acme's eng to their CN; the nodes' by the default rule.
        "listener.name.mtls.ssl.principal.mapping.rules=\
         RULE:^CN=([^,]+),OU=eng,O=acme$/$1/L,DEFAULT",
    ]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let tls = |cert: &std::path::Path, key: &std::path::Path| {
        format!(
            r#"{{"security.protocol": "SSL", "ssl.ca.location": "{}", "ssl.certificate.location": "{}", "ssl.key.location": "{}"}}"#,
            pki.ca_path().display(),
            cert.display(),
            key.display()
        )
    };
    let admin = tls(&admin_cert, &admin_key);
    let alice = tls(&alice_cert, &alice_key);
    let bootstrap = addresses(&brokers);
    wait_until_brokers_listed_as(&bootstrap, &admin, 1, || logs(&controllers, &brokers));
    run_until_all_ok(
        "acl_matrix.py",
        &[
            "grant",
            "--bootstrap",
            &bootstrap,
            "--principal",
            "User:alice",
            "--client-config",
            &alice,
            "--admin-config",
            &admin,
        ],
        || logs(&controllers, &brokers),
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
    // payments' id, while ANONYMOUS may still see it (the share fetch below names it).
    let payments_id = metadata(
        &mut raw,
        MetadataRequest {
            topics: topics_named(&["payments"]),
            ..Default::default()
        },
    )
    .topics[0]
        .topic_id;
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
    // COORDINATOR_LOAD_IN_PROGRESS (14) is retriable: a loaded machine can catch Kafka's
    // coordinator still loading its partition of __consumer_offsets; a client retries.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (group, partition) = loop {
        let answer = fetch_offsets(&mut raw, "g1");
        if answer.0 != 14 || Instant::now() > deadline {
            break answer;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
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
    log_dir_steps(&mut raw, &mut steps);
    share_group_steps(&mut raw, &mut steps, payments_id);
    steps
}

/// Share groups (KIP-932): READ on the group (`g2` refused), READ on the topic (`payments`
/// refused, by name or by id), DESCRIBE and DELETE on the group for the admin APIs.
fn share_group_steps(
    raw: &mut Raw,
    steps: &mut Vec<(&'static str, i64)>,
    payments_id: kraftd_protocol::Uuid,
) {
    use kraftd_protocol::messages::alter_share_group_offsets_request::{
        AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
    };
    use kraftd_protocol::messages::delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic;
    use kraftd_protocol::messages::describe_share_group_offsets_request::{
        DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
    };
    use kraftd_protocol::messages::share_acknowledge_request::{
        AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch,
    };
    use kraftd_protocol::messages::share_fetch_request::{
        FetchPartition as ShareFetchPartition, FetchTopic as ShareFetchTopic,
    };
    let orders_id = metadata(
        raw,
        MetadataRequest {
            topics: topics_named(&["orders"]),
            ..Default::default()
        },
    )
    .topics[0]
        .topic_id;
    let member = "AAAAAAAAAAAAAAAAAAAAAQ";
    let heartbeat = |raw: &mut Raw, group: &str, topic: &str| {
        let request = ShareGroupHeartbeatRequest {
            group_id: group.into(),
            member_id: member.into(),
            member_epoch: 0,
            subscribed_topic_names: Some(vec![topic.into()]),
            ..Default::default()
        };
        let retriable = [14, 15, 16];
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ResponseBody::ShareGroupHeartbeat(r) =
                raw.call(1, RequestBody::ShareGroupHeartbeat(request.clone()))
            else {
                panic!("not a ShareGroupHeartbeat response")
            };
            if !retriable.contains(&r.error_code) || Instant::now() > deadline {
                return i64::from(r.error_code);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    steps.push(("share heartbeat g2", heartbeat(raw, "g2", "orders")));
    steps.push((
        "share heartbeat subscribing to payments",
        heartbeat(raw, "gs", "payments"),
    ));
    let ResponseBody::ShareGroupDescribe(d) = raw.call(
        1,
        RequestBody::ShareGroupDescribe(ShareGroupDescribeRequest {
            group_ids: vec!["g2".into()],
            ..Default::default()
        }),
    ) else {
        panic!("not a ShareGroupDescribe response")
    };
    steps.push(("share describe g2", i64::from(d.groups[0].error_code)));
    let fetch = |raw: &mut Raw, group: &str, topic_id| {
        let request = ShareFetchRequest {
            group_id: Some(group.into()),
            member_id: Some(member.into()),
            share_session_epoch: 0,
            max_wait_ms: 0,
            max_bytes: 1 << 20,
            max_records: 10,
            batch_size: 10,
            topics: vec![ShareFetchTopic {
                topic_id,
                partitions: vec![ShareFetchPartition {
                    partition_index: 0,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::ShareFetch(r) = raw.call(1, RequestBody::ShareFetch(request)) else {
            panic!("not a ShareFetch response")
        };
        let partition = r
            .responses
            .iter()
            .flat_map(|t| &t.partitions)
            .next()
            .map_or(-1, |p| i64::from(p.error_code));
        (i64::from(r.error_code), partition)
    };
    let (top, partition) = fetch(raw, "g2", orders_id);
    steps.push(("share fetch g2", top));
    steps.push(("share fetch g2: orders", partition));
    let (top, partition) = fetch(raw, "gs", payments_id);
    steps.push(("share fetch payments", top));
    steps.push(("share fetch payments: the partition", partition));
    let ack = ShareAcknowledgeRequest {
        group_id: Some("g2".into()),
        member_id: Some(member.into()),
        share_session_epoch: 1,
        topics: vec![AcknowledgeTopic {
            topic_id: orders_id,
            partitions: vec![AcknowledgePartition {
                partition_index: 0,
                acknowledgement_batches: vec![AcknowledgementBatch {
                    first_offset: 0,
                    last_offset: 0,
                    acknowledge_types: vec![1],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::ShareAcknowledge(a) = raw.call(1, RequestBody::ShareAcknowledge(ack)) else {
        panic!("not a ShareAcknowledge response")
    };
    steps.push(("share acknowledge g2", i64::from(a.error_code)));
    let describe = DescribeShareGroupOffsetsRequest {
        groups: vec![DescribeShareGroupOffsetsRequestGroup {
            group_id: "g2".into(),
            topics: Some(vec![DescribeShareGroupOffsetsRequestTopic {
                topic_name: "orders".into(),
                partitions: vec![0],
                ..Default::default()
            }]),
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::DescribeShareGroupOffsets(d) =
        raw.call(1, RequestBody::DescribeShareGroupOffsets(describe))
    else {
        panic!("not a DescribeShareGroupOffsets response")
    };
    steps.push((
        "describe share offsets g2",
        i64::from(d.groups[0].error_code),
    ));
    let alter = AlterShareGroupOffsetsRequest {
        group_id: "g2".into(),
        topics: vec![AlterShareGroupOffsetsRequestTopic {
            topic_name: "orders".into(),
            partitions: vec![AlterShareGroupOffsetsRequestPartition {
                partition_index: 0,
                start_offset: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::AlterShareGroupOffsets(a) =
        raw.call(0, RequestBody::AlterShareGroupOffsets(alter))
    else {
        panic!("not an AlterShareGroupOffsets response")
    };
    steps.push(("alter share offsets g2", i64::from(a.error_code)));
    let delete = DeleteShareGroupOffsetsRequest {
        group_id: "g2".into(),
        topics: vec![DeleteShareGroupOffsetsRequestTopic {
            topic_name: "orders".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::DeleteShareGroupOffsets(d) =
        raw.call(0, RequestBody::DeleteShareGroupOffsets(delete))
    else {
        panic!("not a DeleteShareGroupOffsets response")
    };
    steps.push(("delete share offsets g2", i64::from(d.error_code)));
}

/// DescribeTopicPartitions (DESCRIBE per topic: `payments` refused, last), DescribeLogDirs
/// and AlterReplicaLogDirs (open: no ACL names the cluster; a dir not configured).
fn log_dir_steps(raw: &mut Raw, steps: &mut Vec<(&'static str, i64)>) {
    use kraftd_protocol::messages::alter_replica_log_dirs_request::{
        AlterReplicaLogDir, AlterReplicaLogDirTopic,
    };
    use kraftd_protocol::messages::describe_topic_partitions_request::TopicRequest;
    let named = DescribeTopicPartitionsRequest {
        topics: ["payments", "zz-missing", "orders"]
            .iter()
            .map(|n| TopicRequest {
                name: n.to_string(),
                ..Default::default()
            })
            .collect(),
        response_partition_limit: 2000,
        ..Default::default()
    };
    let ResponseBody::DescribeTopicPartitions(dtp) =
        raw.call(0, RequestBody::DescribeTopicPartitions(named))
    else {
        panic!("not a DescribeTopicPartitions response")
    };
    let labels = [
        "describe topic partitions: first topic",
        "describe topic partitions: second topic",
        "describe topic partitions: third topic",
    ];
    for (label, t) in labels.iter().zip(&dtp.topics) {
        let name = t.name.as_deref().unwrap_or("");
        let code = i64::from(t.error_code) * 100 + t.partitions.len() as i64;
        // The name's first letter (o, p, z) then error code and partition count.
        steps.push((label, i64::from(name.as_bytes()[0]) * 1_000_000 + code));
    }
    steps.push(("describe topic partitions: topics", dtp.topics.len() as i64));
    let orders_ops = dtp
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some("orders"))
        .map_or(-1, |t| i64::from(t.topic_authorized_operations));
    steps.push(("describe topic partitions: orders' operations", orders_ops));
    let describe_dirs = |raw: &mut Raw| {
        let ResponseBody::DescribeLogDirs(d) = raw.call(
            4,
            RequestBody::DescribeLogDirs(DescribeLogDirsRequest {
                topics: None,
                ..Default::default()
            }),
        ) else {
            panic!("not a DescribeLogDirs response")
        };
        d
    };
    let alter_dir = |raw: &mut Raw| {
        let ResponseBody::AlterReplicaLogDirs(a) = raw.call(
            2,
            RequestBody::AlterReplicaLogDirs(AlterReplicaLogDirsRequest {
                dirs: vec![AlterReplicaLogDir {
                    path: "/no/such/log/dir".into(),
                    topics: vec![AlterReplicaLogDirTopic {
                        name: "orders".into(),
                        partitions: vec![0],
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }),
        ) else {
            panic!("not an AlterReplicaLogDirs response")
        };
        i64::from(a.results[0].partitions[0].error_code)
    };
    let dirs = describe_dirs(raw);
    steps.push(("describe log dirs", i64::from(dirs.error_code)));
    steps.push(("log dirs described", dirs.results.len() as i64));
    steps.push(("alter a replica's log dir to no dir", alter_dir(raw)));
    // (No ACL may name the cluster here: Kafka's own broker, ANONYMOUS too, would lose
    // CLUSTER_ACTION and stop; the refusals are unit-tested in server/log_dir_apis.)
}

#[test]
fn each_api_refuses_as_kafka_does() {
    let _serial = serial();
    python();
    let settings = format!("{AUTHORIZER}\n{OPEN_UNLESS_NAMED}\n{FEW_OFFSETS_PARTITIONS}");
    if std::env::var("KRAFTD_ACLS_AGAINST").is_ok_and(|v| v == "kafka") {
        // Checks the scenario itself: Kafka's answers only.
        let kafka_root = tempfile::tempdir().unwrap();
        let (_controller, brokers) = kafka_cluster(kafka_root.path(), 1, &settings);
        for (label, code) in scenario(&brokers[0].address()) {
            eprintln!("{label}: {code}");
        }
        return;
    }
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
    let _serial = serial();
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
