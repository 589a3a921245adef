//! Share groups (KIP-932) on a real kraftd node, driven by raw ShareGroupHeartbeat and
//! ShareGroupDescribe requests: `share.version` 1 is finalized at format, so the APIs are
//! served; two members join one group, a describe shows both, ListGroups lists the group
//! as a share group, DescribeGroups answers as Kafka does for one, a member leaves, the
//! other's session expires (`group.share.session.timeout.ms`), and the empty group is
//! deleted. Kafka's error answers for an unknown member and a stale epoch.

mod common;

use std::time::Duration;

use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::share_group_describe_response::DescribedGroup;
use kraftd_protocol::messages::{
    ApiVersionsRequest, CreateTopicsRequest, DeleteGroupsRequest, DescribeGroupsRequest,
    ListGroupsRequest, ShareGroupDescribeRequest, ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};

use common::raw::Raw;
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

#[test]
fn share_members_join_describe_leave_and_expire() {
    let root = tempfile::tempdir().unwrap();
    let (mut node, client) = formatted_combined_node(
        root.path(),
        "offsets.topic.replication.factor=1\noffsets.topic.num.partitions=3\n\
         group.share.min.session.timeout.ms=1000\ngroup.share.session.timeout.ms=6000\n\
         group.share.min.heartbeat.interval.ms=500\ngroup.share.heartbeat.interval.ms=1000\n\
         group.share.assignment.interval.ms=0\n",
    );
    node.start();
    let address = format!("127.0.0.1:{client}");
    let logs = || node.logs();
    let mut raw = eventually("the broker listens", Duration::from_secs(60), logs, || {
        std::net::TcpStream::connect(&address)
            .map(|_| Raw::connect(&address))
            .map_err(|e| e.to_string())
    });

    // Both APIs advertised at Kafka 4.4.0's version.
    let ResponseBody::ApiVersions(versions) =
        raw.call(3, RequestBody::ApiVersions(ApiVersionsRequest::default()))
    else {
        panic!("not an ApiVersions answer");
    };
    for key in [ApiKey::ShareGroupHeartbeat, ApiKey::ShareGroupDescribe] {
        let v = versions
            .api_keys
            .iter()
            .find(|k| k.api_key == key.code())
            .unwrap_or_else(|| panic!("{key:?} not advertised"));
        assert_eq!((v.min_version, v.max_version), (1, 1), "{key:?}");
    }
    assert!(
        versions
            .finalized_features
            .iter()
            .any(|f| f.name == "share.version" && f.max_version_level == 1),
        "share.version 1 finalized at format: {:?}",
        versions.finalized_features
    );

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
    assert_eq!(created.topics[0].error_code, 0, "{:?}", created.topics[0]);
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
    assert_eq!(a.member_id.as_deref(), Some("member-a"));
    assert_eq!(a.member_epoch, 1);
    assert_eq!(a.heartbeat_interval_ms, 1000);
    assert!(
        a.assignment.is_some(),
        "a join is answered with the assignment"
    );
    let b = heartbeat(&mut raw, "member-b", 0, Some(&["t"]));
    assert_eq!((b.error_code, b.member_epoch), (0, 2));

    // Kafka's errors: an unknown member, an epoch ahead of the coordinator's, an empty id.
    let e = heartbeat(&mut raw, "member-x", 1, None);
    assert_eq!(e.error_code, ErrorCode::UnknownMemberId.code());
    let e = heartbeat(&mut raw, "member-a", 9, None);
    assert_eq!(e.error_code, ErrorCode::FencedMemberEpoch.code());
    let e = heartbeat(&mut raw, "", 0, Some(&["t"]));
    assert_eq!(e.error_code, ErrorCode::InvalidRequest.code());

    let d = describe(&mut raw);
    assert_eq!(d.error_code, 0);
    assert_eq!(d.group_state, "Stable");
    assert_eq!(d.assignor_name, "simple");
    assert_eq!(d.group_epoch, 2);
    let mut members: Vec<&str> = d.members.iter().map(|m| m.member_id.as_str()).collect();
    members.sort();
    assert_eq!(members, ["member-a", "member-b"]);
    assert!(d.members.iter().all(|m| m.subscribed_topic_names == ["t"]));
    assert!(d.members.iter().all(|m| m.client_id == "raw"));

    let list = ListGroupsRequest {
        types_filter: vec!["share".into()],
        ..Default::default()
    };
    let ResponseBody::ListGroups(listed) = raw.call(5, RequestBody::ListGroups(list)) else {
        panic!("not a ListGroups answer");
    };
    let g = listed
        .groups
        .iter()
        .find(|g| g.group_id == GROUP)
        .expect("the share group listed");
    assert_eq!(
        (
            g.group_type.as_str(),
            g.protocol_type.as_str(),
            g.group_state.as_str()
        ),
        ("share", "share", "Stable")
    );
    let ResponseBody::DescribeGroups(classic) = raw.call(
        6,
        RequestBody::DescribeGroups(DescribeGroupsRequest {
            groups: vec![GROUP.into()],
            ..Default::default()
        }),
    ) else {
        panic!("not a DescribeGroups answer");
    };
    assert_eq!(classic.groups[0].group_state, "Dead");
    assert_eq!(
        classic.groups[0].error_code,
        ErrorCode::GroupIdNotFound.code()
    );

    // a leaves; b, silent, is fenced once its session (6 s) passes.
    let left = heartbeat(&mut raw, "member-a", a.member_epoch, None);
    assert_eq!(left.error_code, 0);
    let left = heartbeat(&mut raw, "member-a", -1, None);
    assert_eq!((left.error_code, left.member_epoch), (0, -1));
    assert!(
        describe(&mut raw)
            .members
            .iter()
            .all(|m| m.member_id == "member-b"),
        "a left"
    );
    let empty = eventually("b's session expires", Duration::from_secs(30), logs, || {
        let d = describe(&mut raw);
        if d.members.is_empty() {
            Ok(d)
        } else {
            Err(format!("{:?}", d.members))
        }
    });
    assert_eq!(empty.group_state, "Empty");
    let e = heartbeat(&mut raw, "member-b", 2, None);
    assert_eq!(e.error_code, ErrorCode::UnknownMemberId.code());

    // The empty group is deleted.
    let ResponseBody::DeleteGroups(deleted) = raw.call(
        2,
        RequestBody::DeleteGroups(DeleteGroupsRequest {
            groups_names: vec![GROUP.into()],
            ..Default::default()
        }),
    ) else {
        panic!("not a DeleteGroups answer");
    };
    assert_eq!(deleted.results[0].error_code, 0);
    assert_eq!(
        describe(&mut raw).error_code,
        ErrorCode::GroupIdNotFound.code()
    );
}
