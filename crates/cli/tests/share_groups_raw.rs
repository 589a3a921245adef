//! Share groups (KIP-932) on a real kraftd node, driven by raw ShareGroupHeartbeat and
//! ShareGroupDescribe requests: `share.version` 2 is finalized at format, so the APIs are
//! served; two members join one group, a describe shows both, ListGroups lists the group
//! as a share group, DescribeGroups answers as Kafka does for one, a member leaves, the
//! other's session expires (`group.share.session.timeout.ms`), and the empty group is
//! deleted. Kafka's error answers for an unknown member and a stale epoch; with
//! `share.version` downgraded to 0 both APIs answer UNSUPPORTED_VERSION. The same scenario
//! runs against Apache Kafka 4.4.0 (from the jars) and every observation must match.

mod common;

use std::time::Duration;

use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::share_group_describe_response::DescribedGroup;
use kraftd_protocol::messages::update_features_request::FeatureUpdateKey;
use kraftd_protocol::messages::{
    CreateTopicsRequest, DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest,
    ShareGroupDescribeRequest, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
    UpdateFeaturesRequest,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};

use common::kafka_jars::kafka_cluster;
use common::raw::{advertised, finalized, Raw};
use common::{eventually, formatted_combined_node};

const GROUP: &str = "queue";

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

fn describe(raw: &mut Raw) -> DescribedGroup {
    let request = ShareGroupDescribeRequest {
        group_ids: vec![GROUP.into()],
        include_authorized_operations: false,
        ..Default::default()
    };
    match raw.call(1, RequestBody::ShareGroupDescribe(request)) {
        ResponseBody::ShareGroupDescribe(mut r) => r.groups.remove(0),
        other => panic!("ShareGroupDescribe answered with {other:?}"),
    }
}

/// The group settings both clusters run with: short sessions so expiry is quick, and every
/// heartbeat free to compute an assignment.
const GROUP_SETTINGS: &str = "group.share.min.session.timeout.ms=1000\n\
     group.share.session.timeout.ms=6000\ngroup.share.min.heartbeat.interval.ms=500\n\
     group.share.heartbeat.interval.ms=1000\ngroup.share.assignment.interval.ms=0\n";

/// The scenario against the broker at `address`: what it answered, step by step.
fn scenario(address: &str, logs: &dyn Fn() -> String) -> Vec<(&'static str, String)> {
    let logs = || logs();
    let mut seen: Vec<(&'static str, String)> = Vec::new();
    let mut raw = Raw::connect_when_listening(address, logs);

    let versions = raw.api_versions();
    for (label, key) in [
        (
            "ShareGroupHeartbeat advertised",
            ApiKey::ShareGroupHeartbeat,
        ),
        ("ShareGroupDescribe advertised", ApiKey::ShareGroupDescribe),
    ] {
        seen.push((label, advertised(&versions, key)));
    }
    let finalized = finalized(&versions, "share.version");
    // Kafka 4.4.0's format finalizes level 2 (KIP-1191's dead-letter queues), kraftd 1:
    // both serve share groups.
    seen.push((
        "share groups on",
        finalized.is_some_and(|level| level >= 1).to_string(),
    ));
    seen.push(("share.version finalized: level", format!("{finalized:?}")));

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
    eventually(
        "the group's coordinator",
        Duration::from_secs(60),
        logs,
        || match raw.find_coordinator(0, GROUP) {
            0 => Ok(()),
            code => Err(format!("FindCoordinator error {code}")),
        },
    );

    // a joins (retried while __consumer_offsets loads), then b.
    let a = eventually("a joins", Duration::from_secs(60), logs, || {
        let r = heartbeat(&mut raw, "member-a", 0, Some(&["t"]));
        if r.error_code == 0 {
            Ok(r)
        } else {
            Err(format!("{r:?}"))
        }
    });
    seen.push((
        "a joins",
        format!(
            "{:?} interval {} assignment {}",
            a.member_id,
            a.heartbeat_interval_ms,
            a.assignment.is_some()
        ),
    ));
    seen.push(("a joins: epoch", a.member_epoch.to_string()));
    let b = heartbeat(&mut raw, "member-b", 0, Some(&["t"]));
    seen.push(("b joins", b.error_code.to_string()));
    seen.push(("b joins: epoch", b.member_epoch.to_string()));

    // Kafka's errors: an unknown member, an epoch ahead of the coordinator's, an empty id.
    let e = heartbeat(&mut raw, "member-x", 1, None);
    seen.push(("unknown member", e.error_code.to_string()));
    let e = heartbeat(&mut raw, "member-a", 9, None);
    seen.push(("epoch ahead", e.error_code.to_string()));
    let e = heartbeat(&mut raw, "", 0, Some(&["t"]));
    seen.push(("empty member id", e.error_code.to_string()));

    let d = describe(&mut raw);
    let mut members: Vec<String> = d
        .members
        .iter()
        .map(|m| {
            format!(
                "{} {:?} {}",
                m.member_id, m.subscribed_topic_names, m.client_id
            )
        })
        .collect();
    members.sort();
    seen.push((
        "describe",
        format!(
            "{} {} {} {members:?}",
            d.error_code, d.group_state, d.assignor_name
        ),
    ));
    seen.push(("describe: epoch", d.group_epoch.to_string()));

    let list = ListGroupsRequest {
        types_filter: vec!["share".into()],
        ..Default::default()
    };
    let ResponseBody::ListGroups(listed) = raw.call(5, RequestBody::ListGroups(list)) else {
        panic!("not a ListGroups answer");
    };
    let listed: Vec<String> = listed
        .groups
        .iter()
        .map(|g| {
            format!(
                "{} {} {} {}",
                g.group_id, g.group_type, g.protocol_type, g.group_state
            )
        })
        .collect();
    seen.push(("ListGroups share", format!("{listed:?}")));
    let ResponseBody::DescribeGroups(classic) = raw.call(
        5,
        RequestBody::DescribeGroups(DescribeGroupsRequest {
            groups: vec![GROUP.into()],
            ..Default::default()
        }),
    ) else {
        panic!("not a DescribeGroups answer");
    };
    seen.push((
        "DescribeGroups v5",
        format!(
            "{} {} {:?}",
            classic.groups[0].group_state,
            classic.groups[0].error_code,
            classic.groups[0].protocol_type
        ),
    ));

    // a leaves; b, silent, is fenced once its session (6 s) passes.
    let r = heartbeat(&mut raw, "member-a", a.member_epoch, None);
    seen.push(("a heartbeats", r.error_code.to_string()));
    seen.push(("a heartbeats: epoch", r.member_epoch.to_string()));
    let left = heartbeat(&mut raw, "member-a", -1, None);
    seen.push((
        "a leaves",
        format!("{} epoch {}", left.error_code, left.member_epoch),
    ));
    let after: Vec<String> = describe(&mut raw)
        .members
        .iter()
        .map(|m| m.member_id.clone())
        .filter(|m| m != "member-b")
        .collect();
    seen.push(("members besides b after a left", format!("{after:?}")));
    let empty = eventually("b's session expires", Duration::from_secs(30), logs, || {
        let d = describe(&mut raw);
        if d.members.is_empty() {
            Ok(d)
        } else {
            Err(format!("{:?}", d.members))
        }
    });
    seen.push(("expired", empty.group_state.clone()));
    let e = heartbeat(&mut raw, "member-b", 2, None);
    seen.push(("b after expiry", e.error_code.to_string()));

    // The empty group is deleted (its share state first).
    let ResponseBody::DeleteGroups(deleted) = raw.call(
        2,
        RequestBody::DeleteGroups(DeleteGroupsRequest {
            groups_names: vec![GROUP.into()],
            ..Default::default()
        }),
    ) else {
        panic!("not a DeleteGroups answer");
    };
    seen.push(("DeleteGroups", deleted.results[0].error_code.to_string()));
    seen.push((
        "describe deleted",
        describe(&mut raw).error_code.to_string(),
    ));

    // share.version downgraded to 0: share groups are off, as Kafka's
    // isShareGroupProtocolEnabled says.
    let downgrade = UpdateFeaturesRequest {
        timeout_ms: 30_000,
        feature_updates: vec![FeatureUpdateKey {
            feature: "share.version".into(),
            max_version_level: 0,
            upgrade_type: 2,
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::UpdateFeatures(updated) = raw.call(1, RequestBody::UpdateFeatures(downgrade))
    else {
        panic!("not an UpdateFeatures answer");
    };
    seen.push(("downgrade share.version", updated.error_code.to_string()));
    eventually("share groups off", Duration::from_secs(30), logs, || {
        let r = heartbeat(&mut raw, "member-c", 0, Some(&["t"]));
        if r.error_code == ErrorCode::UnsupportedVersion.code() {
            Ok(())
        } else {
            Err(format!("{r:?}"))
        }
    });
    seen.push((
        "describe when off",
        describe(&mut raw).error_code.to_string(),
    ));
    seen
}

#[test]
fn share_members_join_describe_leave_and_expire_as_in_kafka() {
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
    assert_eq!(get("ShareGroupHeartbeat advertised"), "Some((1, 1))");
    assert_eq!(get("share.version finalized: level"), "Some(2)");
    assert_eq!(
        get("a joins"),
        "Some(\"member-a\") interval 1000 assignment true"
    );
    assert_eq!(get("a joins: epoch"), "1");
    assert_eq!(get("b joins"), "0");
    assert_eq!(get("b joins: epoch"), "2");
    assert_eq!(get("describe: epoch"), "2");
    assert_eq!(
        get("unknown member"),
        ErrorCode::UnknownMemberId.code().to_string()
    );
    assert_eq!(
        get("epoch ahead"),
        ErrorCode::FencedMemberEpoch.code().to_string()
    );
    assert_eq!(get("expired"), "Empty");
    assert_eq!(get("DeleteGroups"), "0");
    assert_eq!(
        get("describe when off"),
        ErrorCode::UnsupportedVersion.code().to_string()
    );
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
    // Epochs are kraftd's own until its brokers run the share coordinator: Kafka's
    // persister initializes the topic's state, and the next heartbeat after that bumps the
    // group epoch to assign the initialized partition (`initializedAssignmentPending`).
    let comparable = |seen: &[(&'static str, String)]| -> Vec<(&'static str, String)> {
        seen.iter()
            .filter(|(label, _)| !label.ends_with(": epoch") && !label.ends_with(": level"))
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
