//! The share coordinator (KIP-932) against real processes (one controller, three brokers,
//! `__share_group_state` with three replicas): raw InitializeShareGroupState, Write, Read,
//! ReadSummary and Delete requests, as a share-partition leader's persister sends them.
//! FindCoordinator with key type SHARE creates `__share_group_state` and names the leader of
//! the key's partition; the brokers that do not lead it answer NOT_COORDINATOR for that share
//! partition (a persister asks the right one again); the coordinator answers with Kafka's
//! fencing. The coordinator's broker is then killed with SIGKILL: the state written before
//! is read back from the next leader of the partition, and the recorded leader epoch still
//! fences an old share-partition leader there.

mod common;

use std::time::Duration;

use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::{
    create_topics_request, delete_share_group_state_request as del,
    initialize_share_group_state_request as init, read_share_group_state_request as read,
    read_share_group_state_summary_request as summary, write_share_group_state_request as write,
    CreateTopicsRequest, DeleteShareGroupStateRequest, FindCoordinatorRequest,
    InitializeShareGroupStateRequest, MetadataRequest, ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest, WriteShareGroupStateRequest,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, Uuid};

use common::raw::try_call;
use common::{eventually, formatted_cluster, kafka_jars, segment_files, stop_gracefully, Node};
use kraftd_coordinator::share::SHARE_GROUP_STATE_TOPIC_NAME;

const GROUP: &str = "share-group";
const WAIT: Duration = Duration::from_secs(60);

fn version(key: ApiKey) -> i16 {
    supported_range(key).max
}

/// The topic's id once it exists with every broker registered.
fn create_topic(broker: &Node, name: &str) -> Result<Uuid, String> {
    let metadata = try_call(
        &broker.address(),
        12,
        RequestBody::Metadata(MetadataRequest {
            topics: Some(Vec::new()),
            ..Default::default()
        }),
    )?;
    match metadata {
        ResponseBody::Metadata(m) if m.brokers.len() == 3 => {}
        other => return Err(format!("brokers not all registered: {other:?}")),
    }
    let create = RequestBody::CreateTopics(CreateTopicsRequest {
        topics: vec![create_topics_request::CreatableTopic {
            name: name.into(),
            num_partitions: 2,
            replication_factor: 3,
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    });
    match try_call(&broker.address(), 7, create)? {
        ResponseBody::CreateTopics(r) if r.topics[0].error_code == 0 => Ok(r.topics[0].topic_id),
        other => Err(format!("{other:?}")),
    }
}

/// The node id FindCoordinator v6 (key type SHARE) names for `key`.
fn share_coordinator(broker: &Node, key: &str) -> Result<i32, String> {
    let find = RequestBody::FindCoordinator(FindCoordinatorRequest {
        key_type: 2,
        coordinator_keys: vec![key.into()],
        ..Default::default()
    });
    match try_call(&broker.address(), 6, find)? {
        ResponseBody::FindCoordinator(r) if r.coordinators[0].error_code == 0 => {
            Ok(r.coordinators[0].node_id)
        }
        other => Err(format!("{other:?}")),
    }
}

fn initialize(topic: Uuid, state_epoch: i32, start: i64) -> RequestBody {
    RequestBody::InitializeShareGroupState(InitializeShareGroupStateRequest {
        group_id: GROUP.into(),
        topics: vec![init::InitializeStateData {
            topic_id: topic,
            partitions: vec![init::PartitionData {
                partition: 0,
                state_epoch,
                start_offset: start,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn write_state(topic: Uuid, leader_epoch: i32, start: i64) -> RequestBody {
    RequestBody::WriteShareGroupState(WriteShareGroupStateRequest {
        group_id: GROUP.into(),
        topics: vec![write::WriteStateData {
            topic_id: topic,
            partitions: vec![write::PartitionData {
                partition: 0,
                state_epoch: 1,
                leader_epoch,
                start_offset: start,
                delivery_complete_count: 3,
                state_batches: vec![
                    write::StateBatch {
                        first_offset: start,
                        last_offset: start + 4,
                        delivery_state: 2,
                        delivery_count: 1,
                        ..Default::default()
                    },
                    write::StateBatch {
                        first_offset: start + 5,
                        last_offset: start + 9,
                        delivery_state: 0,
                        delivery_count: 2,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn read_state(topic: Uuid, leader_epoch: i32) -> RequestBody {
    RequestBody::ReadShareGroupState(ReadShareGroupStateRequest {
        group_id: GROUP.into(),
        topics: vec![read::ReadStateData {
            topic_id: topic,
            partitions: vec![read::PartitionData {
                partition: 0,
                leader_epoch,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn read_summary(topic: Uuid) -> RequestBody {
    RequestBody::ReadShareGroupStateSummary(ReadShareGroupStateSummaryRequest {
        group_id: GROUP.into(),
        topics: vec![summary::ReadStateSummaryData {
            topic_id: topic,
            partitions: vec![summary::PartitionData {
                partition: 0,
                leader_epoch: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn delete_state(topic: Uuid) -> RequestBody {
    RequestBody::DeleteShareGroupState(DeleteShareGroupStateRequest {
        group_id: GROUP.into(),
        topics: vec![del::DeleteStateData {
            topic_id: topic,
            partitions: vec![del::PartitionData {
                partition: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// Sends `body` to `broker`: the one partition's error code, with the whole answer.
fn ask(broker: &Node, body: RequestBody) -> Result<(ErrorCode, ResponseBody), String> {
    let key = body.key();
    let answer = try_call(&broker.address(), version(key), body)?;
    let code = match &answer {
        ResponseBody::InitializeShareGroupState(r) => r.results[0].partitions[0].error_code,
        ResponseBody::WriteShareGroupState(r) => r.results[0].partitions[0].error_code,
        ResponseBody::ReadShareGroupState(r) => r.results[0].partitions[0].error_code,
        ResponseBody::ReadShareGroupStateSummary(r) => r.results[0].partitions[0].error_code,
        ResponseBody::DeleteShareGroupState(r) => r.results[0].partitions[0].error_code,
        other => return Err(format!("{key:?} answered with {other:?}")),
    };
    Ok((ErrorCode::from_code(code).unwrap(), answer))
}

/// Asks until the answer is not a coordinator-moving error; then it must be `expected`.
fn ask_settled(
    broker: &Node,
    body: RequestBody,
    expected: ErrorCode,
    logs: &dyn Fn() -> String,
) -> ResponseBody {
    let what = format!("{:?} on broker {}", body.key(), broker.id);
    eventually(&what, WAIT, logs, || {
        let (code, answer) = ask(broker, body.clone())?;
        match code {
            ErrorCode::CoordinatorLoadInProgress
            | ErrorCode::CoordinatorNotAvailable
            | ErrorCode::NotCoordinator
            | ErrorCode::UnknownTopicOrPartition => Err(format!("{code:?}")),
            code if code == expected => Ok(answer),
            code => panic!("{what}: {code:?}, not {expected:?}: {answer:?}\n{}", logs()),
        }
    })
}

/// Every log the nodes under `dirs` wrote (their `kraftd-<start>.log` files).
fn node_logs(dirs: &[std::path::PathBuf]) -> String {
    let mut out = String::new();
    for dir in dirs {
        for start in 1..10 {
            if let Ok(text) = std::fs::read_to_string(dir.join(format!("kraftd-{start}.log"))) {
                out.push_str(&text);
                out.push('\n');
            }
        }
    }
    out
}

/// A state batch as (first, last, state, count).
type Batch = (i64, i64, i8, i16);

/// (start offset, state epoch, batches as (first, last, state, count)) of a read.
fn state_of(answer: &ResponseBody) -> (i64, i32, Vec<Batch>) {
    let ResponseBody::ReadShareGroupState(r) = answer else {
        panic!("not a read: {answer:?}")
    };
    let p = &r.results[0].partitions[0];
    let batches = p
        .state_batches
        .iter()
        .map(|b| {
            (
                b.first_offset,
                b.last_offset,
                b.delivery_state,
                b.delivery_count,
            )
        })
        .collect();
    (p.start_offset, p.state_epoch, batches)
}

#[test]
fn share_state_lives_on_its_coordinator_and_survives_a_kill_9_of_it() {
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 3);
    for broker in &brokers {
        broker.add_config(&[
            "share.coordinator.state.topic.num.partitions=3",
            "replica.lag.time.max.ms=5000",
        ]);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let dirs: Vec<std::path::PathBuf> = brokers
        .iter()
        .chain(&controllers)
        .map(|n| n.dir.clone())
        .collect();
    let logs = move || node_logs(&dirs);
    let topic = eventually("topic t created", WAIT, &logs, || {
        create_topic(&brokers[0], "t")
    });
    let key = format!("{GROUP}:{topic}:0");
    // The first FindCoordinator creates __share_group_state; then its leader is named.
    let coordinator = eventually("the share coordinator named", WAIT, &logs, || {
        share_coordinator(&brokers[0], &key)
    });
    let ids: Vec<i32> = brokers.iter().map(|b| b.id).collect();
    let index = |id: i32| ids.iter().position(|b| *b == id).unwrap();
    let c = index(coordinator);
    let others: Vec<usize> = (0..3).filter(|i| *i != c).collect();

    ask_settled(&brokers[c], initialize(topic, 1, 0), ErrorCode::None, &logs);
    // Brokers that do not lead the key's partition answer NOT_COORDINATOR for it.
    for &o in &others {
        for body in [initialize(topic, 1, 0), read_state(topic, 1)] {
            let (code, _) = ask(&brokers[o], body).unwrap();
            assert_eq!(code, ErrorCode::NotCoordinator, "broker {}", brokers[o].id);
        }
    }
    ask_settled(
        &brokers[c],
        write_state(topic, 1, 10),
        ErrorCode::None,
        &logs,
    );
    let written = (10, 1, vec![(10, 14, 2, 1), (15, 19, 0, 2)]);
    let answer = ask_settled(&brokers[c], read_state(topic, 2), ErrorCode::None, &logs);
    assert_eq!(state_of(&answer), written);
    // Leader epoch 2 is recorded now: the leader at epoch 1 is fenced.
    let (code, _) = ask(&brokers[c], write_state(topic, 1, 12)).unwrap();
    assert_eq!(code, ErrorCode::FencedLeaderEpoch);
    let ResponseBody::ReadShareGroupStateSummary(s) =
        ask_settled(&brokers[c], read_summary(topic), ErrorCode::None, &logs)
    else {
        unreachable!()
    };
    let p = &s.results[0].partitions[0];
    assert_eq!(
        (
            p.start_offset,
            p.state_epoch,
            p.leader_epoch,
            p.delivery_complete_count
        ),
        (10, 1, 2, 3)
    );

    brokers[c].kill9();
    let next = eventually(
        "a new share coordinator",
        WAIT,
        &logs,
        || match share_coordinator(&brokers[others[0]], &key)? {
            id if id == coordinator => Err(format!("still {id}")),
            id => Ok(id),
        },
    );
    let n = index(next);
    let answer = ask_settled(&brokers[n], read_state(topic, 2), ErrorCode::None, &logs);
    assert_eq!(state_of(&answer), written, "the state after failover");
    let (code, _) = ask(&brokers[n], write_state(topic, 1, 12)).unwrap();
    assert_eq!(code, ErrorCode::FencedLeaderEpoch, "the epoch survives too");
    ask_settled(&brokers[n], delete_state(topic), ErrorCode::None, &logs);
    let ResponseBody::ReadShareGroupStateSummary(s) =
        ask_settled(&brokers[n], read_summary(topic), ErrorCode::None, &logs)
    else {
        unreachable!()
    };
    assert_eq!(s.results[0].partitions[0].start_offset, -1, "deleted");
    let (code, _) = ask(&brokers[n], read_state(topic, 2)).unwrap();
    assert_eq!(
        code,
        ErrorCode::InvalidRequest,
        "a deleted share partition reads as uninitialized"
    );

    let share_dirs: Vec<std::path::PathBuf> = (0..3)
        .map(|p| brokers[n].partition_dir(SHARE_GROUP_STATE_TOPIC_NAME, p))
        .collect();
    brokers.remove(c);
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);

    // Kafka's own tool reads kraftd's __share_group_state with Kafka's
    // ShareCoordinatorRecordSerde: the snapshot, the updates (their batches and the tagged
    // delivery complete count) and the tombstone.
    let key_dir = share_dirs
        .iter()
        .find(|d| !segment_files(d).is_empty() && dump(d).contains(GROUP))
        .expect("the key's __share_group_state partition has records");
    let text = dump(key_dir);
    let snapshot = format!(
        r#"key: {{"type":"0","data":{{"groupId":"{GROUP}","topicId":"{topic}","partition":0}}}}"#
    );
    assert!(text.contains(&snapshot), "a ShareSnapshot record:\n{text}");
    assert!(
        text.contains(r#"key: {"type":"1""#),
        "a ShareUpdate record:\n{text}"
    );
    assert!(
        text.contains(
            r#""deliveryCompleteCount":3,"stateBatches":[{"firstOffset":10,"lastOffset":14,"deliveryState":2,"deliveryCount":1},{"firstOffset":15,"lastOffset":19,"deliveryState":0,"deliveryCount":2}]"#
        ),
        "the written batches:\n{text}"
    );
    assert!(text.contains("payload: <DELETE>"), "the tombstone:\n{text}");
    assert!(
        !text.contains("Error at offset") && !text.contains("Unknown record type"),
        "every record decodes:\n{text}"
    );
}

/// Kafka's DumpLogSegments with `--share-group-state-decoder` over a partition's segments.
fn dump(partition_dir: &std::path::Path) -> String {
    let mut out = String::new();
    for segment in segment_files(partition_dir) {
        let (ok, stdout, stderr) = kafka_jars::dump_log_segment_with(
            &segment,
            &["--print-data-log", "--share-group-state-decoder"],
        );
        assert!(ok, "DumpLogSegments failed on {segment:?}: {stderr}");
        out.push_str(&stdout);
    }
    out
}
