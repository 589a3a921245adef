//! Streams groups (KIP-1071) on a real kraftd node, driven by raw StreamsGroupHeartbeat and
//! StreamsGroupDescribe requests, and the same scenario against Apache Kafka 4.4.0 (from the
//! jars): every observation must match. `streams.version` 1 is finalized at format, so the
//! APIs are served. A member joins with a topology whose source topic is missing
//! (MISSING_SOURCE_TOPICS), then present: the broker creates the repartition and changelog
//! topics the coordinator reports missing (MISSING_INTERNAL_TOPICS), after which the member
//! runs every task. A second member joins: the first gives up half its tasks (revoking them
//! before the second gets them). Kafka's errors for a join without a topology, an unknown
//! member and an epoch ahead; the group in StreamsGroupDescribe, ListGroups (type streams)
//! and DescribeGroups (not a classic group); StreamsGroupTopologyDescriptionUpdate without a
//! description plugin; both members leave; static members (leave with -2, a rejoin under
//! another member id, fenced, unreleased and unknown instance ids, owned tasks outside the
//! topology), errors compared with their messages; the empty group is deleted.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::streams_group_describe_response::DescribedGroup;
use kraftd_protocol::messages::streams_group_heartbeat_request::{
    KeyValue, Subtopology, TaskIds, TopicInfo, Topology,
};
use kraftd_protocol::messages::streams_group_topology_description_update_request::TopologyDescription;
use kraftd_protocol::messages::{
    CreateTopicsRequest, DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest,
    MetadataRequest, StreamsGroupDescribeRequest, StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse, StreamsGroupTopologyDescriptionUpdateRequest,
};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody};

use common::kafka_jars::kafka_cluster;
use common::raw::{advertised, finalized, Raw};
use common::{eventually, formatted_combined_node};

const GROUP: &str = "app";

/// A word count's topology: subtopology `0` reads `in` and writes the repartition topic
/// `app-rep`, which `1` reads; `1` keeps a store whose changelog is `app-log`.
fn topology() -> Topology {
    let info = |name: &str, configs: &[(&str, &str)]| TopicInfo {
        name: name.into(),
        topic_configs: configs
            .iter()
            .map(|(k, v)| KeyValue {
                key: k.to_string(),
                value: v.to_string(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    Topology {
        epoch: 0,
        subtopologies: vec![
            Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec!["in".into()],
                repartition_sink_topics: vec!["app-rep".into()],
                ..Default::default()
            },
            Subtopology {
                subtopology_id: "1".into(),
                repartition_source_topics: vec![info(
                    "app-rep",
                    &[("cleanup.policy", "delete"), ("retention.ms", "-1")],
                )],
                state_changelog_topics: vec![info("app-log", &[("cleanup.policy", "compact")])],
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

fn ids(t: &BTreeMap<String, Vec<i32>>) -> Vec<TaskIds> {
    t.iter()
        .map(|(s, p)| TaskIds {
            subtopology_id: s.clone(),
            partitions: p.clone(),
            ..Default::default()
        })
        .collect()
}

/// One member as a client keeps it: its epoch and the active tasks it runs.
#[derive(Debug, Default)]
struct Member {
    id: &'static str,
    epoch: i32,
    tasks: BTreeMap<String, Vec<i32>>,
}

impl Member {
    fn count(&self) -> usize {
        self.tasks.values().map(Vec::len).sum()
    }
}

/// One heartbeat of `m` (a join at epoch 0, with the topology), its answer applied as a
/// client applies it: the new epoch, and the tasks when the answer carries them.
fn beat(raw: &mut Raw, m: &mut Member) -> StreamsGroupHeartbeatResponse {
    let join = m.epoch == 0;
    let request = StreamsGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: m.id.into(),
        member_epoch: m.epoch,
        rebalance_timeout_ms: if join { 30_000 } else { -1 },
        topology: join.then(topology),
        process_id: join.then(|| format!("process-{}", m.id)),
        active_tasks: Some(ids(&m.tasks)),
        standby_tasks: Some(Vec::new()),
        warmup_tasks: Some(Vec::new()),
        ..Default::default()
    };
    let r = match raw.call(1, RequestBody::StreamsGroupHeartbeat(request)) {
        ResponseBody::StreamsGroupHeartbeat(r) => r,
        other => panic!("StreamsGroupHeartbeat answered with {other:?}"),
    };
    if r.error_code == 0 {
        m.epoch = r.member_epoch;
        if let Some(active) = &r.active_tasks {
            m.tasks = active
                .iter()
                .map(|t| (t.subtopology_id.clone(), t.partitions.clone()))
                .collect();
        }
    }
    r
}

fn codes(r: &StreamsGroupHeartbeatResponse) -> Vec<i8> {
    let mut c: Vec<i8> = r.status.iter().flatten().map(|s| s.status_code).collect();
    c.sort_unstable();
    c
}

/// A raw heartbeat with its own fields: the error code.
fn raw_beat(raw: &mut Raw, request: StreamsGroupHeartbeatRequest) -> i16 {
    match raw.call(1, RequestBody::StreamsGroupHeartbeat(request)) {
        ResponseBody::StreamsGroupHeartbeat(r) => r.error_code,
        other => panic!("StreamsGroupHeartbeat answered with {other:?}"),
    }
}

fn describe(raw: &mut Raw) -> DescribedGroup {
    let request = StreamsGroupDescribeRequest {
        group_ids: vec![GROUP.into()],
        include_authorized_operations: false,
        ..Default::default()
    };
    match raw.call(0, RequestBody::StreamsGroupDescribe(request)) {
        ResponseBody::StreamsGroupDescribe(mut r) => r.groups.remove(0),
        other => panic!("StreamsGroupDescribe answered with {other:?}"),
    }
}

/// Partition counts of `topics` in Metadata (-1: absent).
fn partitions(raw: &mut Raw, topics: &[&str]) -> Vec<i32> {
    let request = MetadataRequest {
        topics: Some(
            topics
                .iter()
                .map(
                    |t| kraftd_protocol::messages::metadata_request::MetadataRequestTopic {
                        name: Some(t.to_string()),
                        ..Default::default()
                    },
                )
                .collect(),
        ),
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    let ResponseBody::Metadata(m) = raw.call(12, RequestBody::Metadata(request)) else {
        panic!("not a Metadata answer");
    };
    topics
        .iter()
        .map(|t| {
            m.topics
                .iter()
                .find(|x| x.name.as_deref() == Some(*t) && x.error_code == 0)
                .map_or(-1, |x| x.partitions.len() as i32)
        })
        .collect()
}

/// Records an observation (and prints it: a failing run shows how far it got).
fn note(seen: &mut Vec<(&'static str, String)>, entry: (&'static str, String)) {
    eprintln!("{}: {}", entry.0, entry.1);
    seen.push(entry);
}

/// Both clusters' group settings: members fenced soon, the first assignment at once.
const GROUP_SETTINGS: &str = "group.streams.min.session.timeout.ms=1000\n\
     group.streams.session.timeout.ms=6000\ngroup.streams.min.heartbeat.interval.ms=500\n\
     group.streams.heartbeat.interval.ms=1000\ngroup.streams.initial.rebalance.delay.ms=0\n";

/// The scenario against the broker at `address`: what it answered, step by step.
fn scenario(address: &str, logs: &dyn Fn() -> String) -> Vec<(&'static str, String)> {
    let logs = || logs();
    let mut seen: Vec<(&'static str, String)> = Vec::new();
    let mut raw = Raw::connect_when_listening(address, logs);
    let versions = raw.api_versions();
    for (label, key) in [
        (
            "StreamsGroupHeartbeat advertised",
            ApiKey::StreamsGroupHeartbeat,
        ),
        (
            "StreamsGroupDescribe advertised",
            ApiKey::StreamsGroupDescribe,
        ),
        (
            "StreamsGroupTopologyDescriptionUpdate advertised",
            ApiKey::StreamsGroupTopologyDescriptionUpdate,
        ),
    ] {
        note(&mut seen, (label, advertised(&versions, key)));
    }
    let finalized = finalized(&versions, "streams.version");
    note(
        &mut seen,
        ("streams.version finalized", format!("{finalized:?}")),
    );
    eventually(
        "the group's coordinator",
        Duration::from_secs(60),
        logs,
        || match raw.find_coordinator(0, GROUP) {
            0 => Ok(()),
            code => Err(format!("FindCoordinator error {code}")),
        },
    );

    // A join without a topology is refused; the source topic is missing.
    let mut a = Member {
        id: "member-a",
        ..Default::default()
    };
    let no_topology = StreamsGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: "member-a".into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        process_id: Some("p".into()),
        active_tasks: Some(Vec::new()),
        standby_tasks: Some(Vec::new()),
        warmup_tasks: Some(Vec::new()),
        ..Default::default()
    };
    note(
        &mut seen,
        (
            "join without topology",
            raw_beat(&mut raw, no_topology).to_string(),
        ),
    );
    // The coordinator may still be loading its partition.
    let r = eventually(
        "the coordinator loaded",
        Duration::from_secs(60),
        logs,
        || {
            let r = beat(&mut raw, &mut a);
            match r.error_code {
                14..=16 => Err(format!("{r:?}")),
                _ => Ok(r),
            }
        },
    );
    note(
        &mut seen,
        (
            "a joins, no source topic",
            format!("{} {:?}", r.error_code, codes(&r)),
        ),
    );
    note(&mut seen, ("a joins: epoch", r.member_epoch.to_string()));
    note(
        &mut seen,
        ("a's tasks without source", a.count().to_string()),
    );
    note(
        &mut seen,
        ("state without source", describe(&mut raw).group_state),
    );

    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "in".into(),
            num_partitions: 2,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    let ResponseBody::CreateTopics(created) = raw.call(5, RequestBody::CreateTopics(create)) else {
        panic!("not a CreateTopics answer");
    };
    note(
        &mut seen,
        ("create in", created.topics[0].error_code.to_string()),
    );
    // The next heartbeat reports the internal topics missing, and the broker creates them.
    let r = eventually(
        "the source topic seen",
        Duration::from_secs(30),
        logs,
        || {
            let r = beat(&mut raw, &mut a);
            if codes(&r).contains(&1) {
                Err(format!("{r:?}"))
            } else {
                Ok(r)
            }
        },
    );
    // ASSIGNMENT_DELAYED (5) joins it only when this heartbeat comes within the assignment
    // interval of the join's assignment: a matter of timing on both brokers, left out.
    let missing: Vec<i8> = codes(&r).into_iter().filter(|c| *c != 5).collect();
    note(
        &mut seen,
        (
            "internal topics missing",
            format!("{} {missing:?}", r.error_code),
        ),
    );
    eventually(
        "the internal topics",
        Duration::from_secs(30),
        logs,
        || match partitions(&mut raw, &["app-rep", "app-log"]).as_slice() {
            [2, 2] => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    note(&mut seen, ("internal topics created", "2 2".into()));
    eventually("a runs every task", Duration::from_secs(30), logs, || {
        let r = beat(&mut raw, &mut a);
        if a.count() == 4 && codes(&r).is_empty() {
            Ok(())
        } else {
            Err(format!("{r:?}"))
        }
    });
    note(&mut seen, ("a's tasks", format!("{:?}", a.tasks)));
    let d = describe(&mut raw);
    note(
        &mut seen,
        (
            "describe alone",
            format!("{} {} members", d.group_state, d.members.len()),
        ),
    );

    // Kafka's errors for an unknown member and an epoch ahead.
    let mut ghost = Member {
        id: "ghost",
        epoch: 3,
        ..Default::default()
    };
    note(
        &mut seen,
        (
            "unknown member",
            beat(&mut raw, &mut ghost).error_code.to_string(),
        ),
    );
    let mut ahead = Member {
        id: "member-a",
        epoch: a.epoch + 10,
        ..Default::default()
    };
    note(
        &mut seen,
        (
            "epoch ahead",
            beat(&mut raw, &mut ahead).error_code.to_string(),
        ),
    );

    // b joins: a gives up half its tasks before b gets them.
    let mut b = Member {
        id: "member-b",
        ..Default::default()
    };
    let r = beat(&mut raw, &mut b);
    note(
        &mut seen,
        ("b joins", format!("{} {:?}", r.error_code, codes(&r))),
    );
    let mut revoking_seen = false;
    eventually(
        "a and b share the tasks",
        Duration::from_secs(30),
        logs,
        || {
            let ra = beat(&mut raw, &mut a);
            // While a still runs a task b is given, b must not have it.
            for (s, ps) in &b.tasks {
                if a.tasks
                    .get(s)
                    .is_some_and(|mine| ps.iter().any(|p| mine.contains(p)))
                {
                    panic!("a task runs on both members: {a:?} {b:?}");
                }
            }
            revoking_seen |= a.count() < 4;
            let rb = beat(&mut raw, &mut b);
            if a.count() == 2 && b.count() == 2 {
                Ok(())
            } else {
                Err(format!("{ra:?} {rb:?}"))
            }
        },
    );
    note(
        &mut seen,
        ("a and b", format!("{} {}", a.count(), b.count())),
    );
    let d = describe(&mut raw);
    let topology = d
        .topology
        .as_ref()
        .map(|t| (t.epoch, t.subtopologies.as_ref().map_or(0, Vec::len)));
    note(
        &mut seen,
        (
            "describe two",
            format!(
                "{} {} members, topology {topology:?}",
                d.group_state,
                d.members.len()
            ),
        ),
    );

    let ResponseBody::ListGroups(listed) = raw.call(
        5,
        RequestBody::ListGroups(ListGroupsRequest {
            types_filter: vec!["streams".into()],
            ..Default::default()
        }),
    ) else {
        panic!("not a ListGroups answer");
    };
    note(
        &mut seen,
        (
            "ListGroups streams",
            format!(
                "{:?}",
                listed
                    .groups
                    .iter()
                    .map(|g| (
                        g.group_id.clone(),
                        g.group_type.clone(),
                        g.protocol_type.clone()
                    ))
                    .collect::<Vec<_>>()
            ),
        ),
    );
    let ResponseBody::DescribeGroups(dg) = raw.call(
        6,
        RequestBody::DescribeGroups(DescribeGroupsRequest {
            groups: vec![GROUP.into()],
            ..Default::default()
        }),
    ) else {
        panic!("not a DescribeGroups answer");
    };
    let g = &dg.groups[0];
    note(
        &mut seen,
        (
            "DescribeGroups",
            format!("{} {} {:?}", g.error_code, g.group_state, g.error_message),
        ),
    );
    let update = StreamsGroupTopologyDescriptionUpdateRequest {
        group_id: GROUP.into(),
        member_id: "member-a".into(),
        topology_epoch: 0,
        topology_description: TopologyDescription::default(),
        ..Default::default()
    };
    let ResponseBody::StreamsGroupTopologyDescriptionUpdate(u) = raw.call(
        0,
        RequestBody::StreamsGroupTopologyDescriptionUpdate(update),
    ) else {
        panic!("not a StreamsGroupTopologyDescriptionUpdate answer");
    };
    note(
        &mut seen,
        (
            "TopologyDescriptionUpdate",
            format!("{} {:?}", u.error_code, u.error_message),
        ),
    );

    // Both leave; the empty group goes.
    for m in [&mut a, &mut b] {
        m.epoch = -1;
        let r = beat(&mut raw, m);
        note(
            &mut seen,
            ("leave", format!("{} {}", r.error_code, r.member_epoch)),
        );
    }
    note(
        &mut seen,
        ("state after leaving", describe(&mut raw).group_state),
    );
    static_members(&mut raw, &mut seen, logs);
    let ResponseBody::DeleteGroups(deleted) = raw.call(
        2,
        RequestBody::DeleteGroups(DeleteGroupsRequest {
            groups_names: vec![GROUP.into()],
            ..Default::default()
        }),
    ) else {
        panic!("not a DeleteGroups answer");
    };
    note(
        &mut seen,
        ("DeleteGroups", deleted.results[0].error_code.to_string()),
    );
    note(
        &mut seen,
        (
            "describe deleted",
            describe(&mut raw).error_code.to_string(),
        ),
    );
    seen
}

/// A static member's heartbeat (`group.instance.id` = `instance`) reporting `active`.
fn static_request(
    member: &str,
    instance: &str,
    epoch: i32,
    active: Vec<TaskIds>,
) -> StreamsGroupHeartbeatRequest {
    let join = epoch == 0;
    StreamsGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        instance_id: Some(instance.into()),
        member_epoch: epoch,
        rebalance_timeout_ms: if join { 30_000 } else { -1 },
        topology: join.then(topology),
        process_id: join.then(|| format!("process-{instance}")),
        active_tasks: Some(active),
        standby_tasks: Some(Vec::new()),
        warmup_tasks: Some(Vec::new()),
        ..Default::default()
    }
}

/// The answer's error code, message, epoch and active task count.
fn answer(raw: &mut Raw, request: StreamsGroupHeartbeatRequest) -> StreamsGroupHeartbeatResponse {
    match raw.call(1, RequestBody::StreamsGroupHeartbeat(request)) {
        ResponseBody::StreamsGroupHeartbeat(r) => r,
        other => panic!("StreamsGroupHeartbeat answered with {other:?}"),
    }
}

fn active_count(r: &StreamsGroupHeartbeatResponse) -> Option<usize> {
    r.active_tasks
        .as_ref()
        .map(|t| t.iter().map(|t| t.partitions.len()).sum())
}

/// Static membership on the (empty) group: leaving with -2 keeps the member and its tasks
/// for a new member id under the instance id; the old id is fenced, a third id is refused
/// while the instance id is owned, an unknown instance id is unknown; an owned task outside
/// the topology is refused. Codes and messages are compared with Kafka's.
fn static_members(
    raw: &mut Raw,
    seen: &mut Vec<(&'static str, String)>,
    logs: impl Fn() -> String,
) {
    let outcome =
        |r: &StreamsGroupHeartbeatResponse| format!("{} {:?}", r.error_code, r.error_message);
    let r = answer(raw, static_request("member-x", "nobody", -2, Vec::new()));
    note(seen, ("static leave, unknown instance", outcome(&r)));

    // c runs every task alone.
    let r = answer(raw, static_request("member-c", "i-c", 0, Vec::new()));
    note(seen, ("static c joins", outcome(&r)));
    let mut c = Member {
        id: "member-c",
        epoch: r.member_epoch,
        tasks: r
            .active_tasks
            .iter()
            .flatten()
            .map(|t| (t.subtopology_id.clone(), t.partitions.clone()))
            .collect(),
    };
    eventually("c runs every task", Duration::from_secs(30), &logs, || {
        let r = answer(raw, static_request(c.id, "i-c", c.epoch, ids(&c.tasks)));
        c.epoch = r.member_epoch;
        if let Some(t) = &r.active_tasks {
            c.tasks = t
                .iter()
                .map(|t| (t.subtopology_id.clone(), t.partitions.clone()))
                .collect();
        }
        match c.count() {
            4 => Ok(()),
            n => Err(format!("{n} tasks: {r:?}")),
        }
    });
    let group_epoch = describe(raw).group_epoch;
    let r = answer(raw, static_request(c.id, "i-c", -2, Vec::new()));
    note(
        seen,
        (
            "static c leaves -2",
            format!("{} {}", outcome(&r), r.member_epoch),
        ),
    );
    let d = describe(raw);
    note(
        seen,
        (
            "after -2: members, epoch",
            format!(
                "{} {}",
                d.members.len(),
                d.members.first().map_or(0, |m| m.member_epoch)
            ),
        ),
    );

    // d takes the instance id over: c's tasks, no rebalance.
    let r = answer(raw, static_request("member-d", "i-c", 0, Vec::new()));
    note(
        seen,
        (
            "static d rejoins as i-c",
            format!("{} tasks {:?}", outcome(&r), active_count(&r)),
        ),
    );
    let d_epoch = r.member_epoch;
    note(
        seen,
        (
            "rejoin moved the group epoch",
            (describe(raw).group_epoch != group_epoch).to_string(),
        ),
    );
    let r = answer(raw, static_request("member-c", "i-c", c.epoch, Vec::new()));
    note(seen, ("old member id under i-c", outcome(&r)));
    let r = answer(raw, static_request("member-e", "i-c", 0, Vec::new()));
    note(seen, ("third member id under i-c", outcome(&r)));
    let bad = vec![TaskIds {
        subtopology_id: "9".into(),
        partitions: vec![0],
        ..Default::default()
    }];
    let r = answer(raw, static_request("member-d", "i-c", d_epoch, bad));
    note(seen, ("owned task of no subtopology", outcome(&r)));
    let out_of_range = vec![TaskIds {
        subtopology_id: "0".into(),
        partitions: vec![7],
        ..Default::default()
    }];
    let r = answer(
        raw,
        static_request("member-d", "i-c", d_epoch, out_of_range),
    );
    note(seen, ("owned task out of range", outcome(&r)));
    let r = answer(raw, static_request("member-d", "i-c", -1, Vec::new()));
    note(
        seen,
        (
            "static d leaves -1",
            format!("{} {}", outcome(&r), r.member_epoch),
        ),
    );
    note(seen, ("state after static", describe(raw).group_state));
}

#[test]
fn streams_members_join_share_tasks_and_leave_as_in_kafka() {
    let root = tempfile::tempdir().unwrap();
    let (mut node, client) = formatted_combined_node(
        root.path(),
        &format!(
            "offsets.topic.replication.factor=1\noffsets.topic.num.partitions=3\n{GROUP_SETTINGS}"
        ),
    );
    node.start();
    let ours = scenario(&format!("127.0.0.1:{client}"), &|| node.logs());
    let get = |label: &str| {
        ours.iter()
            .find(|(l, _)| *l == label)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    // What kraftd must answer on its own, whatever Kafka says.
    assert_eq!(get("streams.version finalized"), "Some(1)");
    assert_eq!(get("StreamsGroupHeartbeat advertised"), "Some((0, 1))");
    assert_eq!(get("a joins, no source topic"), "0 [1]");
    assert_eq!(get("internal topics missing"), "0 [3]");
    assert_eq!(get("a and b"), "2 2");
    assert_eq!(get("DeleteGroups"), "0");
    node.kill9();

    let kafka_root = tempfile::tempdir().unwrap();
    let (mut kafka_controller, mut kafka_brokers) =
        kafka_cluster(kafka_root.path(), 1, GROUP_SETTINGS);
    let kafka_address = kafka_brokers[0].address();
    let theirs = {
        let broker = &kafka_brokers[0];
        scenario(&kafka_address, &|| broker.logs())
    };
    for n in kafka_brokers
        .iter_mut()
        .chain(std::iter::once(&mut kafka_controller))
    {
        n.kill9();
    }
    // Epochs are each coordinator's own count of its records' epochs.
    let comparable = |seen: &[(&'static str, String)]| -> Vec<(&'static str, String)> {
        seen.iter()
            .filter(|(label, _)| !label.ends_with(": epoch"))
            .cloned()
            .collect()
    };
    let (ours, theirs) = (comparable(&ours), comparable(&theirs));
    let table: Vec<String> = ours
        .iter()
        .zip(&theirs)
        .map(|((label, a), (_, b))| {
            let mark = if a == b { " " } else { "*" };
            format!("{mark} {label}: kraftd {a} | kafka {b}")
        })
        .collect();
    assert_eq!(
        ours,
        theirs,
        "kraftd and Kafka 4.4.0 differ (*):\n{}",
        table.join("\n")
    );
}
