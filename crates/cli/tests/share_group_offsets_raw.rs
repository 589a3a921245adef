//! The share-group offsets admin APIs (KIP-932: DescribeShareGroupOffsets v0–1,
//! AlterShareGroupOffsets, DeleteShareGroupOffsets) on a real kraftd node, driven by raw
//! requests: a share group joins a topic with ShareGroupHeartbeat (so its share state is
//! initialized), the offsets are described (start offset, lag); alter and delete are
//! refused while the member is in (NON_EMPTY_GROUP); once it left, the offsets are altered
//! and described again, then deleted and described as gone. Then Kafka's own
//! `kafka-share-groups` does the same: `--reset-offsets --to-earliest --execute`,
//! `--describe --offsets`, `--delete-offsets`. The same scenario runs against Apache Kafka
//! 4.4.0 (from the jars) and every observation must match. Nothing is consumed: the share
//! partitions' start offsets are the initialization's and the alter's.

mod common;

use std::time::Duration;

use kraftd_protocol::messages::alter_share_group_offsets_request::{
    AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
};
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic;
use kraftd_protocol::messages::describe_share_group_offsets_request::{
    DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
};
use kraftd_protocol::messages::describe_share_group_offsets_response::DescribeShareGroupOffsetsResponseGroup;
use kraftd_protocol::messages::{
    AlterShareGroupOffsetsRequest, CreateTopicsRequest, DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};

use common::kafka_jars::{kafka_cluster, output_text, run_tool};
use common::raw::{advertised, Raw};
use common::{eventually, formatted_combined_node};

const GROUP: &str = "offsets-queue";

/// Records produced to `t` before the group joins.
const RECORDS: usize = 5;

/// The group settings both clusters run with (as `share_groups_raw.rs`).
const GROUP_SETTINGS: &str = "group.share.min.session.timeout.ms=1000\n\
     group.share.session.timeout.ms=6000\ngroup.share.min.heartbeat.interval.ms=500\n\
     group.share.heartbeat.interval.ms=1000\ngroup.share.assignment.interval.ms=0\n";

fn heartbeat(
    raw: &mut Raw,
    member: &str,
    epoch: i32,
    topics: Option<&[&str]>,
) -> ShareGroupHeartbeatResponse {
    let request = ShareGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        member_epoch: epoch,
        subscribed_topic_names: topics.map(|t| t.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    };
    match raw.call(1, RequestBody::ShareGroupHeartbeat(request)) {
        ResponseBody::ShareGroupHeartbeat(r) => r,
        other => panic!("ShareGroupHeartbeat answered with {other:?}"),
    }
}

/// DescribeShareGroupOffsets v1 for `GROUP`: all its topics (`None`) or the named ones.
fn describe(
    raw: &mut Raw,
    topics: Option<&[(&str, &[i32])]>,
) -> DescribeShareGroupOffsetsResponseGroup {
    let request = DescribeShareGroupOffsetsRequest {
        groups: vec![DescribeShareGroupOffsetsRequestGroup {
            group_id: GROUP.into(),
            topics: topics.map(|ts| {
                ts.iter()
                    .map(|(name, ps)| DescribeShareGroupOffsetsRequestTopic {
                        topic_name: name.to_string(),
                        partitions: ps.to_vec(),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        }],
        ..Default::default()
    };
    match raw.call(1, RequestBody::DescribeShareGroupOffsets(request)) {
        ResponseBody::DescribeShareGroupOffsets(mut r) => r.groups.remove(0),
        other => panic!("DescribeShareGroupOffsets answered with {other:?}"),
    }
}

/// A described group as one comparable line: its error, then each topic's partitions
/// (index, start offset, lag, error) in name order.
fn shown(g: &DescribeShareGroupOffsetsResponseGroup) -> String {
    let mut topics: Vec<String> = g
        .topics
        .iter()
        .map(|t| {
            let mut ps: Vec<String> = t
                .partitions
                .iter()
                .map(|p| {
                    format!(
                        "{}@{} lag {} err {}",
                        p.partition_index, p.start_offset, p.lag, p.error_code
                    )
                })
                .collect();
            ps.sort();
            format!(
                "{} zero-id {} {ps:?}",
                t.topic_name,
                t.topic_id == Default::default()
            )
        })
        .collect();
    topics.sort();
    format!("err {} {topics:?}", g.error_code)
}

fn alter(raw: &mut Raw, group: &str, topics: &[(&str, i32, i64)]) -> String {
    let request = AlterShareGroupOffsetsRequest {
        group_id: group.into(),
        topics: topics
            .iter()
            .map(|(name, p, offset)| AlterShareGroupOffsetsRequestTopic {
                topic_name: name.to_string(),
                partitions: vec![AlterShareGroupOffsetsRequestPartition {
                    partition_index: *p,
                    start_offset: *offset,
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    match raw.call(0, RequestBody::AlterShareGroupOffsets(request)) {
        ResponseBody::AlterShareGroupOffsets(r) => {
            let mut parts: Vec<String> = r
                .responses
                .iter()
                .flat_map(|t| {
                    t.partitions.iter().map(move |p| {
                        format!("{}-{} {}", t.topic_name, p.partition_index, p.error_code)
                    })
                })
                .collect();
            parts.sort();
            format!("err {} {parts:?}", r.error_code)
        }
        other => panic!("AlterShareGroupOffsets answered with {other:?}"),
    }
}

fn delete(raw: &mut Raw, group: &str, topics: &[&str]) -> String {
    let request = DeleteShareGroupOffsetsRequest {
        group_id: group.into(),
        topics: topics
            .iter()
            .map(|t| DeleteShareGroupOffsetsRequestTopic {
                topic_name: t.to_string(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    match raw.call(0, RequestBody::DeleteShareGroupOffsets(request)) {
        ResponseBody::DeleteShareGroupOffsets(r) => {
            let mut topics: Vec<String> = r
                .responses
                .iter()
                .map(|t| format!("{} {}", t.topic_name, t.error_code))
                .collect();
            topics.sort();
            format!("err {} {topics:?}", r.error_code)
        }
        other => panic!("DeleteShareGroupOffsets answered with {other:?}"),
    }
}

/// `kafka-share-groups --bootstrap-server <address> <args>`: its table's lines naming the
/// group or the topic, each split on whitespace and joined by one space, sorted.
fn tool(address: &str, args: &[&str], logs: &dyn Fn() -> String) -> String {
    let mut all = vec!["--bootstrap-server", address];
    all.extend(args);
    let out = run_tool(
        "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
        &all,
    );
    assert!(
        out.status.success(),
        "kafka-share-groups {args:?}: {}\n{}",
        output_text(&out),
        logs()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<String> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| l.starts_with(GROUP) || l.starts_with("t "))
        .collect();
    lines.sort();
    format!("{lines:?}")
}

/// The scenario against the broker at `address`: what it answered, step by step.
fn scenario(address: &str, logs: &dyn Fn() -> String) -> Vec<(&'static str, String)> {
    let logs = || logs();
    let mut seen: Vec<(&'static str, String)> = Vec::new();
    let mut raw = Raw::connect_when_listening(address, logs);

    let versions = raw.api_versions();
    for (label, key) in [
        (
            "DescribeShareGroupOffsets advertised",
            ApiKey::DescribeShareGroupOffsets,
        ),
        (
            "AlterShareGroupOffsets advertised",
            ApiKey::AlterShareGroupOffsets,
        ),
        (
            "DeleteShareGroupOffsets advertised",
            ApiKey::DeleteShareGroupOffsets,
        ),
    ] {
        seen.push((label, advertised(&versions, key)));
    }

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
    let ResponseBody::CreateTopics(created) = raw.call(7, RequestBody::CreateTopics(create)) else {
        panic!("not a CreateTopics answer");
    };
    seen.push(("create topic", created.topics[0].error_code.to_string()));
    let records: Vec<(String, String)> = (0..RECORDS)
        .map(|i| (format!("k{i}"), format!("v{i}")))
        .collect();
    common::kcat::produce_and_check(address, "t", 0, &records, 0);
    eventually(
        "the group's coordinator",
        Duration::from_secs(60),
        logs,
        || match raw.find_coordinator(0, GROUP) {
            0 => Ok(()),
            code => Err(format!("FindCoordinator error {code}")),
        },
    );

    // No such group yet: nothing to describe, nothing to delete (asked again while the
    // group's __consumer_offsets partition loads: FindCoordinator may answer first).
    let retriable = |answer: &str| {
        ["err 14 ", "err 15 ", "err 16 "]
            .iter()
            .any(|c| answer.starts_with(c))
    };
    let before = eventually(
        "the coordinator loaded",
        Duration::from_secs(60),
        logs,
        || {
            let d = shown(&describe(&mut raw, None));
            if retriable(&d) {
                Err(d)
            } else {
                Ok(d)
            }
        },
    );
    seen.push(("describe before the group", before));
    seen.push(("delete before the group", delete(&mut raw, GROUP, &["t"])));

    // a joins; its heartbeats go on until the share state of t-0 is initialized.
    let a = eventually("a joins", Duration::from_secs(60), logs, || {
        let r = heartbeat(&mut raw, "member-a", 0, Some(&["t"]));
        if r.error_code == 0 {
            Ok(r)
        } else {
            Err(format!("{r:?}"))
        }
    });
    let mut epoch = a.member_epoch;
    let initialized = eventually("t-0 initialized", Duration::from_secs(60), logs, || {
        let r = heartbeat(&mut raw, "member-a", epoch, None);
        if r.error_code == 0 {
            epoch = r.member_epoch;
        }
        let d = describe(&mut raw, None);
        if d.topics.is_empty() {
            Err(shown(&d))
        } else {
            Ok(d)
        }
    });
    seen.push(("describe all while a is in", shown(&initialized)));
    seen.push((
        "alter while a is in",
        alter(&mut raw, GROUP, &[("t", 0, 2)]),
    ));
    seen.push(("delete while a is in", delete(&mut raw, GROUP, &["t"])));
    let left = heartbeat(&mut raw, "member-a", -1, None);
    seen.push(("a leaves", left.error_code.to_string()));

    seen.push(("describe all", shown(&describe(&mut raw, None))));
    seen.push((
        "describe named",
        shown(&describe(&mut raw, Some(&[("t", &[0]), ("nope", &[0, 1])]))),
    ));
    seen.push(("describe no topics", shown(&describe(&mut raw, Some(&[])))));
    seen.push((
        "alter t-0 to 2, t-3, nope-0",
        alter(&mut raw, GROUP, &[("t", 0, 2), ("t", 3, 0), ("nope", 0, 0)]),
    ));
    let altered = eventually("the alter shows", Duration::from_secs(30), logs, || {
        let d = describe(&mut raw, None);
        let start = d
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .map(|p| p.start_offset);
        if start == Some(2) {
            Ok(d)
        } else {
            Err(shown(&d))
        }
    });
    seen.push(("describe after alter", shown(&altered)));
    seen.push((
        "alter with an empty group id",
        alter(&mut raw, "", &[("t", 0, 0)]),
    ));
    seen.push(("delete t and nope", delete(&mut raw, GROUP, &["t", "nope"])));
    seen.push((
        "describe all after delete",
        shown(&describe(&mut raw, None)),
    ));
    seen.push(("delete again", delete(&mut raw, GROUP, &["t"])));
    seen.push((
        "delete unknown group",
        delete(&mut raw, "no-such-group", &["t"]),
    ));

    // Kafka's tool.
    seen.push((
        "tool reset to earliest",
        tool(
            address,
            &[
                "--reset-offsets",
                "--to-earliest",
                "--execute",
                "--topic",
                "t",
                "--group",
                GROUP,
            ],
            &logs,
        ),
    ));
    let described = eventually(
        "the tool describes t",
        Duration::from_secs(30),
        logs,
        || {
            let out = tool(
                address,
                &["--describe", "--offsets", "--group", GROUP],
                &logs,
            );
            if out.contains(" t ") {
                Ok(out)
            } else {
                Err(out)
            }
        },
    );
    seen.push(("tool describe offsets", described));
    seen.push((
        "tool delete offsets",
        tool(
            address,
            &["--delete-offsets", "--topic", "t", "--group", GROUP],
            &logs,
        ),
    ));
    seen.push((
        "describe after the tool deleted",
        shown(&describe(&mut raw, None)),
    ));
    seen
}

#[test]
fn share_group_offsets_are_described_altered_and_deleted_as_in_kafka() {
    let root = tempfile::tempdir().unwrap();
    let (mut node, client) = formatted_combined_node(
        root.path(),
        &format!(
            "offsets.topic.replication.factor=1\noffsets.topic.num.partitions=3\n{GROUP_SETTINGS}"
        ),
    );
    node.start();
    let ours = scenario(&format!("127.0.0.1:{client}"), &|| node.logs());
    // What kraftd must answer on its own, whatever Kafka says.
    let get = |label: &str| {
        ours.iter()
            .find(|(l, _)| *l == label)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_eq!(get("DescribeShareGroupOffsets advertised"), "Some((0, 1))");
    assert_eq!(get("AlterShareGroupOffsets advertised"), "Some((0, 0))");
    assert_eq!(get("DeleteShareGroupOffsets advertised"), "Some((0, 0))");
    let non_empty = ErrorCode::NonEmptyGroup.code();
    assert_eq!(get("alter while a is in"), format!("err {non_empty} []"));
    assert_eq!(get("delete while a is in"), format!("err {non_empty} []"));
    assert_eq!(
        get("describe after alter"),
        format!(
            "err 0 [\"t zero-id false [\\\"0@2 lag {} err 0\\\"]\"]",
            RECORDS - 2
        )
    );
    assert_eq!(get("describe all after delete"), "err 0 []");
    node.kill9();

    let kafka_root = tempfile::tempdir().unwrap();
    let (mut kafka_controller, mut kafka_brokers) = kafka_cluster(
        kafka_root.path(),
        1,
        &format!(
            "share.coordinator.state.topic.replication.factor=1\n\
             share.coordinator.state.topic.min.isr=1\n{GROUP_SETTINGS}"
        ),
    );
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
