//! Hostile and stale group requests, answered as Apache Kafka 4.4.0 answers them: the same
//! raw requests go to a kraftd broker and to a Kafka broker run from the jars, and every
//! error code must match (Kafka is the reference for "the right error"). A JoinGroup
//! carrying 10 MB of protocol metadata, a heartbeat for a group that does not exist, an
//! OffsetCommit for a generation that is gone, a heartbeat with a stale generation; a calm
//! group on the same coordinator must be undisturbed throughout.

mod common;

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kraftd_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kraftd_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kraftd_protocol::messages::{
    CreateTopicsRequest, FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest,
    OffsetCommitRequest, SyncGroupRequest,
};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};

use common::kafka_jars::kafka_cluster;
use common::python::{python, wait_until_brokers_listed};
use common::raw::Raw;
use common::{all_logs, formatted_cluster, stop_gracefully};

/// A consumer protocol subscription (v0) to `topic` with `user_data`.
fn subscription(topic: &str, user_data: usize) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(0);
    b.put_i32(1);
    b.put_i16(topic.len() as i16);
    b.put_slice(topic.as_bytes());
    b.put_i32(user_data as i32);
    b.put_bytes(7, user_data);
    b.freeze()
}

fn join(raw: &mut Raw, group: &str, member: &str, metadata: Bytes) -> (i16, String, i32) {
    let request = JoinGroupRequest {
        group_id: group.into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 30_000,
        member_id: member.into(),
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata,
            ..Default::default()
        }],
        ..Default::default()
    };
    match raw.call(9, RequestBody::JoinGroup(request)) {
        ResponseBody::JoinGroup(r) => (r.error_code, r.member_id, r.generation_id),
        other => panic!("JoinGroup answered with {other:?}"),
    }
}

fn sync(raw: &mut Raw, group: &str, member: &str, generation: i32) -> i16 {
    let request = SyncGroupRequest {
        group_id: group.into(),
        generation_id: generation,
        member_id: member.into(),
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments: vec![SyncGroupRequestAssignment {
            member_id: member.into(),
            assignment: Bytes::from_static(&[0, 0, 0, 0, 0, 0, 255, 255, 255, 255]),
            ..Default::default()
        }],
        ..Default::default()
    };
    match raw.call(5, RequestBody::SyncGroup(request)) {
        ResponseBody::SyncGroup(r) => r.error_code,
        other => panic!("SyncGroup answered with {other:?}"),
    }
}

fn heartbeat(raw: &mut Raw, group: &str, member: &str, generation: i32) -> i16 {
    let request = HeartbeatRequest {
        group_id: group.into(),
        generation_id: generation,
        member_id: member.into(),
        ..Default::default()
    };
    match raw.call(4, RequestBody::Heartbeat(request)) {
        ResponseBody::Heartbeat(r) => r.error_code,
        other => panic!("Heartbeat answered with {other:?}"),
    }
}

fn commit(raw: &mut Raw, group: &str, member: &str, generation: i32, offset: i64) -> i16 {
    let request = OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: generation,
        member_id: member.into(),
        topics: vec![OffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                committed_leader_epoch: -1,
                committed_metadata: Some(String::new()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    match raw.call(8, RequestBody::OffsetCommit(request)) {
        ResponseBody::OffsetCommit(r) => r.topics[0].partitions[0].error_code,
        other => panic!("OffsetCommit answered with {other:?}"),
    }
}

/// Joins `group` as its only member (KIP-394's two steps) and syncs: (member, generation).
fn join_and_sync(raw: &mut Raw, group: &str, metadata: Bytes) -> (String, i32, i16) {
    let (code, member, _) = join(raw, group, "", metadata.clone());
    assert_eq!(
        code,
        ErrorCode::MemberIdRequired.code(),
        "first join of {group}"
    );
    let (code, member, generation) = join(raw, group, &member, metadata);
    assert_eq!(code, 0, "second join of {group}");
    let code = sync(raw, group, &member, generation);
    (member, generation, code)
}

/// The scenario on one broker; each step's label and error code.
fn scenario(address: &str) -> Vec<(&'static str, i16)> {
    let mut raw = Raw::connect(address);
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "t".into(),
            num_partitions: 1,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    raw.call(7, RequestBody::CreateTopics(create));
    // Until the coordinator of every group is known (the offsets topic is created on
    // first use).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let find = FindCoordinatorRequest {
            key_type: 0,
            coordinator_keys: vec!["calm".into(), "hostile-big".into(), "ghost".into()],
            ..Default::default()
        };
        let ResponseBody::FindCoordinator(r) = raw.call(4, RequestBody::FindCoordinator(find))
        else {
            panic!("FindCoordinator answered with another type");
        };
        if r.coordinators.iter().all(|c| c.error_code == 0) {
            break;
        }
        assert!(Instant::now() < deadline, "no coordinator: {r:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Joins can meet a shard still loading right after the topic is created.
    let deadline = Instant::now() + Duration::from_secs(60);
    while commit(&mut raw, "warmup", "", -1, 0) != 0 {
        assert!(Instant::now() < deadline, "offsets never accepted");
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut steps = Vec::new();
    let (calm, calm_generation, code) = join_and_sync(&mut raw, "calm", subscription("t", 0));
    steps.push(("calm sync", code));
    steps.push((
        "calm commit",
        commit(&mut raw, "calm", &calm, calm_generation, 1),
    ));
    steps.push((
        "heartbeat for a group that does not exist",
        heartbeat(&mut raw, "ghost", "nobody", 1),
    ));
    steps.push((
        "commit to a group that does not exist at generation 5",
        commit(&mut raw, "ghost", "nobody", 5, 3),
    ));
    steps.push((
        "commit for a generation that is gone",
        commit(&mut raw, "calm", &calm, calm_generation + 6, 2),
    ));
    steps.push((
        "heartbeat with a stale generation",
        heartbeat(&mut raw, "calm", &calm, calm_generation - 1),
    ));
    steps.push((
        "commit by an unknown member",
        commit(&mut raw, "calm", "intruder", calm_generation, 2),
    ));
    let (_, _, code) = join_and_sync(&mut raw, "hostile-big", subscription("t", 10 << 20));
    steps.push(("sync of a group with 10 MB of member metadata", code));
    steps.push((
        "calm heartbeat after",
        heartbeat(&mut raw, "calm", &calm, calm_generation),
    ));
    steps.push((
        "calm commit after",
        commit(&mut raw, "calm", &calm, calm_generation, 4),
    ));
    steps
}

#[test]
fn hostile_group_requests_get_kafkas_errors_and_disturb_nothing_else() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    brokers[0].add_config(&[
        "group.initial.rebalance.delay.ms=0",
        "offsets.topic.replication.factor=1",
    ]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    wait_until_brokers_listed(&brokers[0].address(), 1, || all_logs(&brokers));
    let ours = scenario(&brokers[0].address());
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);

    let kafka_root = tempfile::tempdir().unwrap();
    let (mut kafka_controller, mut kafka_brokers) = kafka_cluster(kafka_root.path(), 1, "");
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
    // The calm group was never disturbed.
    for (label, code) in &ours {
        if label.starts_with("calm") {
            assert_eq!(*code, 0, "{label}");
        }
    }
}

/// FindCoordinator, then one ConsumerGroupHeartbeat (v1, a new member of `group`) and one ConsumerGroupDescribe of
/// it: their error codes.
fn consumer_protocol_codes(address: &str, group: &str) -> (i16, i16) {
    use kraftd_protocol::messages::{ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest};
    let mut raw = Raw::connect(address);
    // Creates the offsets topic on first use, as a client's lookup does.
    raw.find_coordinator(0, group);
    let heartbeat = match raw.call(
        1,
        RequestBody::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatRequest {
            group_id: group.into(),
            member_id: format!("{group}-member"),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: Some(vec!["gated".into()]),
            topic_partitions: Some(vec![]),
            ..Default::default()
        }),
    ) {
        ResponseBody::ConsumerGroupHeartbeat(r) => r.error_code,
        other => panic!("ConsumerGroupHeartbeat answered {other:?}"),
    };
    let describe = match raw.call(
        0,
        RequestBody::ConsumerGroupDescribe(ConsumerGroupDescribeRequest {
            group_ids: vec![group.into()],
            ..Default::default()
        }),
    ) {
        ResponseBody::ConsumerGroupDescribe(r) => r.groups[0].error_code,
        other => panic!("ConsumerGroupDescribe answered {other:?}"),
    };
    (heartbeat, describe)
}

/// Kafka's `isConsumerGroupProtocolEnabled`: the consumer protocol's APIs answer
/// UNSUPPORTED_VERSION once `group.version` is downgraded to 0 with `kafka-features`, and on a
/// broker whose `group.coordinator.rebalance.protocols` leaves `consumer` out (which also logs
/// Kafka's deprecation warning naming what is disabled).
#[test]
fn the_consumer_protocol_answers_only_when_group_version_and_the_protocol_list_allow_it() {
    use common::kafka_jars::run_tool;
    let root = tempfile::tempdir().unwrap();
    let (mut node, client) = common::formatted_combined_node(
        root.path(),
        "group.initial.rebalance.delay.ms=0\noffsets.topic.replication.factor=1\n",
    );
    node.start();
    let address = format!("127.0.0.1:{client}");
    let log_path = node.log_path();
    let logs = || std::fs::read_to_string(&log_path).unwrap_or_default();
    drop(Raw::connect_when_listening(&address, logs));
    let ok = ErrorCode::None.code();
    let unsupported = ErrorCode::UnsupportedVersion.code();
    common::eventually(
        "a consumer-protocol member joins",
        Duration::from_secs(60),
        logs,
        || {
            let (heartbeat, _) = consumer_protocol_codes(&address, "g1");
            (heartbeat == ok)
                .then_some(())
                .ok_or(format!("heartbeat error {heartbeat}"))
        },
    );
    let features = |verb: &str, level: &str| {
        let out = run_tool(
            "org.apache.kafka.tools.FeatureCommand",
            &[
                "--bootstrap-server",
                &address,
                verb,
                "--feature",
                &format!("group.version={level}"),
            ],
        );
        assert!(
            out.status.success(),
            "kafka-features {verb}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    features("downgrade", "0");
    common::eventually(
        "group.version 0 reaches the broker",
        Duration::from_secs(30),
        logs,
        || {
            let codes = consumer_protocol_codes(&address, "g2");
            (codes == (unsupported, unsupported))
                .then_some(())
                .ok_or(format!("{codes:?}"))
        },
    );
    features("upgrade", "1");
    common::eventually(
        "group.version 1 reaches the broker",
        Duration::from_secs(30),
        logs,
        || {
            let (heartbeat, _) = consumer_protocol_codes(&address, "g3");
            (heartbeat == ok)
                .then_some(())
                .ok_or(format!("heartbeat error {heartbeat}"))
        },
    );

    common::stop_gracefully(std::slice::from_mut(&mut node));
    node.add_config(&["group.coordinator.rebalance.protocols=classic,streams"]);
    node.start();
    drop(Raw::connect_when_listening(&address, || node.logs()));
    assert_eq!(
        consumer_protocol_codes(&address, "g4"),
        (unsupported, unsupported)
    );
    assert!(
        node.logs()
            .contains("The following protocol(s) are currently disabled: CONSUMER."),
        "no deprecation warning naming CONSUMER in:\n{}",
        node.logs()
    );
}
