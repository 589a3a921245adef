//! Share-group requests that break the rules, sent raw to kraftd and to Apache Kafka 4.4.0:
//! both must answer every one with the same error code. The scenario joins a share group
//! with ShareGroupHeartbeat, opens a share session with ShareFetch and acknowledges with
//! ShareAcknowledge, and on the way sends an unknown member, a stale member epoch, a join
//! without a member id, a describe of an unknown group, a fetch without a session, a wrong
//! session epoch, an acknowledgement of a record never acquired, of one already
//! acknowledged, of one whose acquisition lock expired, an unknown acknowledge type and an
//! unknown topic id. One controller and one broker each; the acquisition lock is 1 s.

mod common;

use std::time::{Duration, Instant};

use common::kafka_jars::{kafka_cluster, output_text, run_tool};
use common::python::wait_until_brokers_listed;
use common::raw::Raw;
use common::{all_logs, formatted_cluster, stop_gracefully};
use kraftd_protocol::messages::metadata_request::MetadataRequestTopic;
use kraftd_protocol::messages::share_acknowledge_request::{
    AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch as AckBatch,
};
use kraftd_protocol::messages::share_fetch_request::{
    AcknowledgementBatch, FetchPartition, FetchTopic,
};
use kraftd_protocol::messages::{
    MetadataRequest, ShareAcknowledgeRequest, ShareFetchRequest, ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody, Uuid};

/// Both systems' broker settings: one broker, a short acquisition lock.
const SETTINGS: &str = "offsets.topic.replication.factor=1\n\
                        share.coordinator.state.topic.replication.factor=1\n\
                        share.coordinator.state.topic.min.isr=1\n\
                        group.share.min.record.lock.duration.ms=1000\n\
                        group.share.record.lock.duration.ms=1000\n";

const GROUP: &str = "hostile";
const TOPIC: &str = "h";

/// A random uuid (the std hasher's random keys; the tests need no crate for it).
fn random_uuid() -> Uuid {
    use std::hash::{BuildHasher, Hasher};
    let mut bytes = [0u8; 16];
    for half in bytes.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(Instant::now().elapsed().as_nanos());
        half.copy_from_slice(&h.finish().to_be_bytes());
    }
    Uuid(bytes)
}

/// A member id as Kafka's clients make one (a random UUID, base64).
fn member_id() -> String {
    random_uuid().to_base64()
}

fn heartbeat(
    raw: &mut Raw,
    member: &str,
    epoch: i32,
    topics: Option<Vec<String>>,
) -> (i16, i32, Vec<i32>) {
    let request = ShareGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        member_epoch: epoch,
        subscribed_topic_names: topics,
        ..Default::default()
    };
    match raw.call(1, RequestBody::ShareGroupHeartbeat(request)) {
        ResponseBody::ShareGroupHeartbeat(r) => {
            if r.error_code != 0 {
                eprintln!(
                    "heartbeat {member:?} at {epoch}: {} {:?}",
                    r.error_code, r.error_message
                );
            }
            (
                r.error_code,
                r.member_epoch,
                r.assignment
                    .map(|a| {
                        a.topic_partitions
                            .into_iter()
                            .flat_map(|t| t.partitions)
                            .collect()
                    })
                    .unwrap_or_default(),
            )
        }
        other => panic!("ShareGroupHeartbeat answered with {other:?}"),
    }
}

/// A share session of one member on partition 0 of the topic.
struct Session {
    member: String,
    topic_id: Uuid,
    epoch: i32,
}

/// A ShareFetch's top-level code, the partition's code, and the
/// acquired offsets.
struct Fetched {
    error: i16,
    partition_error: i16,
    acquired: Vec<i64>,
}

impl Session {
    fn fetch(
        &mut self,
        raw: &mut Raw,
        epoch: i32,
        topic_id: Uuid,
        acks: Vec<AcknowledgementBatch>,
    ) -> Fetched {
        let request = ShareFetchRequest {
            group_id: Some(GROUP.into()),
            member_id: Some(self.member.clone()),
            share_session_epoch: epoch,
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 1 << 20,
            max_records: 5,
            batch_size: 5,
            topics: vec![FetchTopic {
                topic_id,
                partitions: vec![FetchPartition {
                    partition_index: 0,
                    acknowledgement_batches: acks,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = match raw.call(1, RequestBody::ShareFetch(request)) {
            ResponseBody::ShareFetch(r) => r,
            other => panic!("ShareFetch answered with {other:?}"),
        };
        if r.error_code == 0 {
            self.epoch = epoch.wrapping_add(1);
        }
        // The answer for the topic asked about (the session may hold others, in any order).
        let partition = r
            .responses
            .iter()
            .filter(|t| t.topic_id == topic_id)
            .flat_map(|t| &t.partitions)
            .next();
        Fetched {
            error: r.error_code,
            partition_error: partition.map_or(-1, |p| p.error_code),
            acquired: partition
                .map(|p| {
                    p.acquired_records
                        .iter()
                        .flat_map(|a| a.first_offset..=a.last_offset)
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// ShareAcknowledge of `first..=last` as `kind` at the session's next epoch: the
    /// top-level code and the partition's.
    fn acknowledge(&mut self, raw: &mut Raw, first: i64, last: i64, kind: i8) -> (i16, i16) {
        let request = ShareAcknowledgeRequest {
            group_id: Some(GROUP.into()),
            member_id: Some(self.member.clone()),
            share_session_epoch: self.epoch,
            topics: vec![AcknowledgeTopic {
                topic_id: self.topic_id,
                partitions: vec![AcknowledgePartition {
                    partition_index: 0,
                    acknowledgement_batches: vec![AckBatch {
                        first_offset: first,
                        last_offset: last,
                        acknowledge_types: vec![kind],
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = match raw.call(1, RequestBody::ShareAcknowledge(request)) {
            ResponseBody::ShareAcknowledge(r) => r,
            other => panic!("ShareAcknowledge answered with {other:?}"),
        };
        if r.error_code == 0 {
            self.epoch = self.epoch.wrapping_add(1);
        }
        let partition = r.responses.iter().flat_map(|t| &t.partitions).next();
        (r.error_code, partition.map_or(-1, |p| p.error_code))
    }
}

fn topic_id(raw: &mut Raw) -> Uuid {
    let request = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some(TOPIC.into()),
            ..Default::default()
        }]),
        ..Default::default()
    };
    match raw.call(12, RequestBody::Metadata(request)) {
        ResponseBody::Metadata(r) => r.topics[0].topic_id,
        other => panic!("Metadata answered with {other:?}"),
    }
}

/// The scenario against one broker at `address`: each step's label and error code.
fn scenario(address: &str) -> Vec<(&'static str, i16)> {
    let tool = |class: &str, args: &[&str]| {
        let out = run_tool(class, args);
        assert!(
            out.status.success(),
            "{class} {args:?}: {}",
            output_text(&out)
        );
    };
    tool(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            address,
            "--create",
            "--topic",
            TOPIC,
            "--partitions",
            "1",
            "--replication-factor",
            "1",
        ],
    );
    tool(
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-server",
            address,
            "--alter",
            "--entity-type",
            "groups",
            "--entity-name",
            GROUP,
            "--add-config",
            "share.auto.offset.reset=earliest",
        ],
    );
    let records: Vec<(String, String)> = (0..10).map(|i| (i.to_string(), i.to_string())).collect();
    let out = common::kcat::produce(address, TOPIC, 0, &records, &["-X", "acks=all"]);
    assert!(
        out.status.success(),
        "kcat: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut raw = Raw::connect(address);
    let topic_id = topic_id(&mut raw);
    let mut steps = Vec::new();
    steps.push((
        "find the group's coordinator",
        raw.find_coordinator(0, GROUP),
    ));

    let member = member_id();
    // The group coordinator may still be loading its new partition: retried, as clients do.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (code, epoch) = loop {
        let (code, epoch, _) = heartbeat(&mut raw, &member, 0, Some(vec![TOPIC.into()]));
        let retriable = [
            ErrorCode::CoordinatorLoadInProgress,
            ErrorCode::CoordinatorNotAvailable,
            ErrorCode::NotCoordinator,
        ]
        .map(|e| e.code());
        if !retriable.contains(&code) || Instant::now() > deadline {
            break (code, epoch);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    steps.push(("join", code));
    steps.push((
        "heartbeat of an unknown member",
        heartbeat(&mut raw, &member_id(), 1, None).0,
    ));
    steps.push((
        "heartbeat at a stale epoch",
        heartbeat(&mut raw, &member, epoch + 5, None).0,
    ));
    steps.push((
        "join without a member id",
        heartbeat(&mut raw, "", 0, Some(vec![TOPIC.into()])).0,
    ));
    steps.push((
        "join without subscribed topics",
        heartbeat(&mut raw, &member_id(), 0, None).0,
    ));
    let describe = ShareGroupDescribeRequest {
        group_ids: vec!["no-such-group".into()],
        ..Default::default()
    };
    let code = match raw.call(1, RequestBody::ShareGroupDescribe(describe)) {
        ResponseBody::ShareGroupDescribe(r) => r.groups[0].error_code,
        other => panic!("ShareGroupDescribe answered with {other:?}"),
    };
    steps.push(("describe an unknown group", code));

    // Heartbeats until the partition is assigned.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut epoch = epoch;
    loop {
        let (code, e, assigned) = heartbeat(&mut raw, &member, epoch, None);
        assert_eq!(
            code, 0,
            "heartbeat at epoch {epoch} while waiting for the assignment"
        );
        epoch = e;
        if assigned == [0] {
            break;
        }
        assert!(Instant::now() < deadline, "partition 0 never assigned");
        std::thread::sleep(Duration::from_millis(200));
    }
    steps.push(("assigned", 0));

    let mut session = Session {
        member: member.clone(),
        topic_id,
        epoch: 0,
    };
    steps.push((
        "fetch without a session",
        session.fetch(&mut raw, 3, topic_id, vec![]).error,
    ));
    // Open the session and fetch until records are acquired.
    let deadline = Instant::now() + Duration::from_secs(60);
    let acquired = loop {
        let epoch = session.epoch;
        let fetched = session.fetch(&mut raw, epoch, topic_id, vec![]);
        assert_eq!(
            (fetched.error, fetched.partition_error),
            (0, 0),
            "fetch at epoch {epoch}"
        );
        if !fetched.acquired.is_empty() {
            break fetched.acquired;
        }
        assert!(Instant::now() < deadline, "no record acquired");
    };
    steps.push((
        "records acquired from offset 0",
        if acquired[0] == 0 { 0 } else { -1 },
    ));
    let wrong = session.epoch + 5;
    steps.push((
        "fetch at a wrong session epoch",
        session.fetch(&mut raw, wrong, topic_id, vec![]).error,
    ));

    let (top, partition) = session.acknowledge(&mut raw, 100, 100, 1);
    steps.push(("acknowledge a record never fetched (top)", top));
    steps.push(("acknowledge a record never fetched", partition));
    let (top, partition) = session.acknowledge(&mut raw, acquired[0], acquired[0], 1);
    steps.push(("accept an acquired record (top)", top));
    steps.push(("accept an acquired record", partition));
    let (_, partition) = session.acknowledge(&mut raw, acquired[0], acquired[0], 1);
    steps.push(("accept it again", partition));
    let (_, partition) = session.acknowledge(&mut raw, acquired[1], acquired[1], 9);
    steps.push(("acknowledge type 9", partition));
    // The lock is 1 s: past it, the acquired records are available again and not ours.
    std::thread::sleep(Duration::from_millis(2500));
    let (_, partition) = session.acknowledge(&mut raw, acquired[1], acquired[1], 1);
    steps.push(("accept after the lock expired", partition));
    let epoch = session.epoch;
    let fetched = session.fetch(&mut raw, epoch, random_uuid(), vec![]);
    steps.push(("fetch an unknown topic id (top)", fetched.error));
    steps.push(("fetch an unknown topic id", fetched.partition_error));
    let fetched = session.fetch(&mut raw, -1, topic_id, vec![]);
    steps.push(("close the session", fetched.error));
    steps.push(("leave", heartbeat(&mut raw, &member, -1, None).0));
    steps
}

#[test]
fn hostile_share_group_requests_get_kafkas_errors() {
    if std::env::var("KRAFTD_SHARE_AGAINST").is_ok_and(|v| v == "kafka") {
        // Checks the scenario itself: Kafka's answers only.
        let kafka_root = tempfile::tempdir().unwrap();
        let (_controller, brokers) = kafka_cluster(kafka_root.path(), 1, SETTINGS);
        for (label, code) in scenario(&brokers[0].address()) {
            eprintln!("{label}: {code} {:?}", ErrorCode::from_code(code));
        }
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    brokers[0].add_config(&SETTINGS.lines().collect::<Vec<_>>());
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    wait_until_brokers_listed(&brokers[0].address(), 1, || all_logs(&brokers));
    let ours = scenario(&brokers[0].address());
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);

    let kafka_root = tempfile::tempdir().unwrap();
    let (mut kafka_controller, mut kafka_brokers) = kafka_cluster(kafka_root.path(), 1, SETTINGS);
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
}
