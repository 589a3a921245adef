//! Timeouts, validation, static members, generated member ids, regex subscriptions,
//! classic group conversion, describe, and refused writes.

use kraftd_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kraftd_protocol::messages::OffsetCommitRequest;
use kraftd_protocol::ErrorCode;

use super::*;
use crate::group::consumer::member::MemberState;

#[test]
fn an_expired_session_fences_the_member() {
    let mut h = Harness::new(&[("t", 6)]);
    h.join("m1", &["t"]);
    h.join("m2", &["t"]);
    h.beat("m1", 1);
    h.beat("m1", 1);
    h.beat("m2", 2);
    assert_eq!(h.owned("m2", "t"), [3, 4, 5]);
    // m1 keeps heartbeating, m2 goes silent.
    h.advance(40_000);
    h.beat("m1", 2);
    assert!(h.group().member("m2").is_some());
    h.advance(SESSION_MS - 40_000);
    let g = h.group();
    assert!(g.member("m2").is_none());
    assert_eq!(g.group_epoch, 3);
    let r = h.beat("m2", 2);
    assert_eq!(error(&r), ErrorCode::UnknownMemberId);
    h.forget("m2");
    let r = h.beat("m1", 2);
    assert_eq!(r.member_epoch, 3);
    assert_eq!(assigned(&r, "t"), Some(vec![0, 1, 2, 3, 4, 5]));
    // m1's own session runs from its last heartbeat.
    h.advance(SESSION_MS - 1);
    assert!(h.group().member("m1").is_some());
    h.advance(1);
    assert!(h.shard.group(GROUP).is_some_and(|g| g.is_empty()));
}

#[test]
fn a_member_that_does_not_revoke_in_time_is_fenced() {
    let mut h = Harness::new(&[("t", 4)]);
    h.join("m1", &["t"]);
    h.join("m2", &["t"]);
    let r = h.beat("m1", 1);
    assert_eq!(assigned(&r, "t"), Some(vec![0, 1]));
    assert_eq!(
        h.group().member("m1").unwrap().state,
        MemberState::UnrevokedPartitions
    );
    // m1 keeps heartbeating but keeps 2 and 3.
    h.advance(20_000);
    let still = [(tid("t"), 0), (tid("t"), 1), (tid("t"), 2), (tid("t"), 3)].into();
    let r = h.heartbeat(beat_request("m1", 1, &still));
    assert_eq!(r.member_epoch, 1);
    h.beat("m2", 2);
    h.advance(10_000);
    assert!(
        h.group().member("m1").is_none(),
        "fenced at its rebalance timeout"
    );
    h.forget("m1");
    let r = h.beat("m2", 2);
    assert_eq!(r.member_epoch, 3);
    assert_eq!(assigned(&r, "t"), Some(vec![0, 1, 2, 3]));
}

#[test]
fn a_revocation_in_time_cancels_the_rebalance_timeout() {
    let mut h = Harness::new(&[("t", 4)]);
    h.join("m1", &["t"]);
    h.join("m2", &["t"]);
    h.beat("m1", 1);
    h.advance(1_000);
    h.beat("m1", 1);
    h.beat("m2", 2);
    h.advance(40_000);
    assert!(h.group().member("m1").is_some());
    assert_eq!(h.group().state_name(), "Stable");
}

#[test]
fn requests_are_validated() {
    let mut h = Harness::new(&[("t", 1)]);
    let mut j = join_request("m1", &["t"]);
    j.rebalance_timeout_ms = -1;
    assert_eq!(error(&h.heartbeat(j)), ErrorCode::InvalidRequest);
    let mut j = join_request("m1", &["t"]);
    j.subscribed_topic_names = None;
    let r = h.heartbeat(j);
    assert_eq!(error(&r), ErrorCode::InvalidRequest);
    assert!(r.error_message.unwrap().contains("SubscribedTopicNames"));
    let mut j = join_request("m1", &["t"]);
    j.topic_partitions = None;
    assert_eq!(error(&h.heartbeat(j)), ErrorCode::InvalidRequest);
    // v1 clients always send their member id.
    assert_eq!(error(&h.join("", &["t"])), ErrorCode::InvalidRequest);
    let mut j = join_request("m1", &["t"]);
    j.member_epoch = -3;
    assert_eq!(error(&h.heartbeat(j)), ErrorCode::InvalidRequest);
    let mut j = join_request("m1", &["t"]);
    j.server_assignor = Some("sticky".into());
    assert_eq!(error(&h.heartbeat(j)), ErrorCode::UnsupportedAssignor);
    let mut j = join_request("m1", &["t"]);
    j.subscribed_topic_regex = Some("(unclosed".into());
    assert_eq!(error(&h.heartbeat(j)), ErrorCode::InvalidRegularExpression);
    // A heartbeat for a group or member that does not exist.
    assert_eq!(error(&h.beat("m1", 1)), ErrorCode::GroupIdNotFound);
    h.join("m1", &["t"]);
    assert_eq!(error(&h.beat("m9", 1)), ErrorCode::UnknownMemberId);
    // Nothing was written by the refused requests but the one join.
    assert_eq!(h.group().members.len(), 1);
}

#[test]
fn the_group_has_a_maximum_size() {
    let config = GroupCoordinatorConfig {
        consumer_group_max_size: 2,
        ..Default::default()
    };
    let mut h = Harness::with_config(&[("t", 3)], config);
    h.join("m1", &["t"]);
    h.join("m2", &["t"]);
    assert_eq!(error(&h.join("m3", &["t"])), ErrorCode::GroupMaxSizeReached);
    // Members already in the group still heartbeat.
    assert_eq!(error(&h.beat("m2", 2)), ErrorCode::None);
}

#[test]
fn a_static_member_is_replaced_only_once_released() {
    let mut h = Harness::new(&[("t", 2)]);
    let mut j = join_request("a1", &["t"]);
    j.instance_id = Some("i".into());
    let r = h.heartbeat(j.clone());
    assert_eq!(assigned(&r, "t"), Some(vec![0, 1]));
    // Another member with the same instance id while a1 holds it.
    j.member_id = "a2".into();
    assert_eq!(
        error(&h.heartbeat(j.clone())),
        ErrorCode::UnreleasedInstanceId
    );
    // A heartbeat with the instance id and another member id is fenced.
    let mut b = beat_request("a2", 1, &Default::default());
    b.instance_id = Some("i".into());
    assert_eq!(error(&h.heartbeat(b)), ErrorCode::FencedInstanceId);
    // a1 leaves temporarily: it keeps its place and assignment, epoch -2.
    let mut leave = beat_request("a1", -2, &Default::default());
    leave.instance_id = Some("i".into());
    let r = h.heartbeat(leave);
    assert_eq!((error(&r), r.member_epoch), (ErrorCode::None, -2));
    h.forget("a1");
    assert_eq!(h.group().member("a1").unwrap().member_epoch, -2);
    assert_eq!(h.group().group_epoch, 1);
    // a2 takes over the instance and its partitions, without a new group epoch.
    let r = h.heartbeat(j);
    assert_eq!(error(&r), ErrorCode::None);
    assert_eq!(r.member_epoch, 1);
    assert_eq!(assigned(&r, "t"), Some(vec![0, 1]));
    let g = h.group();
    assert!(g.member("a1").is_none());
    assert_eq!(g.static_member_id("i"), Some("a2"));
    assert_eq!(g.group_epoch, 1);
    assert_eq!(g.target_assignment["a2"][&tid("t")], [0, 1].into());
}

#[test]
fn a_v0_member_without_an_id_gets_one() {
    let mut h = Harness::new(&[("t", 1)]);
    h.version = 0;
    let r = h.join("", &["t"]);
    assert_eq!(error(&r), ErrorCode::None);
    let id = r.member_id.clone().unwrap();
    assert_eq!(id.len(), 22);
    assert!(h.group().member(&id).is_some());
    // Deterministic: the same inputs give the same id.
    let mut again = Harness::new(&[("t", 1)]);
    again.version = 0;
    assert_eq!(again.join("", &["t"]).member_id.unwrap(), id);
    // A second one joining at the same time gets another.
    let r2 = h.join("", &["t"]);
    assert_ne!(r2.member_id.unwrap(), id);
}

#[test]
fn a_regex_picks_up_a_topic_created_later() {
    let mut h = Harness::new(&[("orders-eu", 2), ("payments", 1)]);
    let mut j = join_request("m1", &[]);
    j.subscribed_topic_names = None;
    j.subscribed_topic_regex = Some("orders-.*".into());
    let r = h.heartbeat(j);
    assert_eq!(assigned(&r, "orders-eu"), Some(vec![0, 1]));
    assert_eq!(assigned(&r, "payments"), Some(vec![]));
    let g = h.group();
    assert_eq!(
        g.resolved_regexes["orders-.*"].topics,
        ["orders-eu".to_string()].into()
    );
    assert!(g.is_subscribed_to_topic("orders-eu"));
    assert!(!g.is_subscribed_to_topic("payments"));
    let epoch = g.group_epoch;

    h.shard.on_metadata_update(Topics::of(&[
        ("orders-eu", 2),
        ("orders-us", 3),
        ("payments", 1),
    ]));
    let out = h.shard.take_output();
    h.log.extend(out.records);
    let g = h.group();
    assert_eq!(g.group_epoch, epoch + 1);
    assert!(g.resolved_regexes["orders-.*"].topics.contains("orders-us"));
    let r = h.beat("m1", epoch);
    assert_eq!(r.member_epoch, epoch + 1);
    assert_eq!(assigned(&r, "orders-us"), Some(vec![0, 1, 2]));
    assert_eq!(assigned(&r, "orders-eu"), Some(vec![0, 1]));

    // Nothing changed: no records, no bump.
    h.shard.on_metadata_update(Topics::of(&[
        ("orders-eu", 2),
        ("orders-us", 3),
        ("payments", 1),
    ]));
    assert!(h.shard.take_output().records.is_empty());

    // The last member subscribed to the regex drops it: its record goes.
    let mut change = beat_request("m1", epoch + 1, &h.client_owned["m1"].clone());
    change.subscribed_topic_regex = Some(String::new());
    change.subscribed_topic_names = Some(vec!["payments".into()]);
    h.heartbeat(change);
    assert!(h.group().resolved_regexes.is_empty());
}

#[test]
fn new_partitions_bump_the_group_epoch() {
    let mut h = Harness::new(&[("t", 2)]);
    h.join("m1", &["t"]);
    h.shard.on_metadata_update(Topics::of(&[("t", 3)]));
    h.log.extend(h.shard.take_output().records);
    assert_eq!(h.group().group_epoch, 2);
    let r = h.beat("m1", 1);
    assert_eq!(assigned(&r, "t"), Some(vec![0, 1, 2]));
}

#[test]
fn an_empty_classic_group_becomes_a_consumer_group_and_keeps_its_offsets() {
    let mut h = Harness::new(&[("t", 1)]);
    let commit = OffsetCommitRequest {
        group_id: GROUP.into(),
        generation_id_or_member_epoch: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 42,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    h.version = 9;
    h.request(ShardRequest::OffsetCommit(commit));
    assert!(matches!(h.shard.group(GROUP), Some(Group::Classic(_))));
    h.version = 1;
    // Only a join converts it; ConsumerGroupDescribe does not see it.
    assert_eq!(error(&h.beat("m1", 1)), ErrorCode::GroupIdNotFound);
    let ShardResponse::ConsumerGroupDescribe(d) =
        h.request(ShardRequest::ConsumerGroupDescribe(vec![GROUP.into()]))
    else {
        panic!()
    };
    assert_eq!(d[0].error_code, ErrorCode::GroupIdNotFound.code());
    assert!(d[0]
        .error_message
        .as_ref()
        .unwrap()
        .contains("not a consumer group"));
    let r = h.join("m1", &["t"]);
    assert_eq!(error(&r), ErrorCode::None);
    assert_eq!(h.group().state_name(), "Stable");
    assert_eq!(h.shard.offsets.get(GROUP, "t", 0).unwrap().offset, 42);
}

#[test]
fn describe_shows_members_and_assignments() {
    let mut h = Harness::new(&[("t", 2)]);
    h.join("m1", &["t"]);
    let ShardResponse::ConsumerGroupDescribe(d) =
        h.request(ShardRequest::ConsumerGroupDescribe(vec![
            GROUP.into(),
            "nope".into(),
        ]))
    else {
        panic!()
    };
    let g = &d[0];
    assert_eq!((g.error_code, g.group_state.as_str()), (0, "Stable"));
    assert_eq!((g.group_epoch, g.assignment_epoch), (1, 1));
    assert_eq!(g.assignor_name, "uniform");
    let m = &g.members[0];
    assert_eq!((m.member_id.as_str(), m.member_epoch), ("m1", 1));
    assert_eq!(m.client_host, "/127.0.0.1");
    assert_eq!(m.subscribed_topic_names, ["t"]);
    assert_eq!(m.assignment.topic_partitions[0].topic_name, "t");
    assert_eq!(m.assignment.topic_partitions[0].partitions, [0, 1]);
    assert_eq!(m.target_assignment.topic_partitions[0].partitions, [0, 1]);
    assert_eq!(m.member_type, 1);
    assert_eq!(d[1].error_code, ErrorCode::GroupIdNotFound.code());
    // The classic DescribeGroups does not describe it (v6 says why).
    h.version = 5;
    let ShardResponse::DescribeGroups(d) =
        h.request(ShardRequest::DescribeGroups(vec![GROUP.into()]))
    else {
        panic!()
    };
    assert_eq!((d[0].group_state.as_str(), d[0].error_code), ("Dead", 0));
    h.version = 6;
    let ShardResponse::DescribeGroups(d) =
        h.request(ShardRequest::DescribeGroups(vec![GROUP.into()]))
    else {
        panic!()
    };
    assert_eq!(d[0].error_code, ErrorCode::GroupIdNotFound.code());
    let ShardResponse::ListGroups(l) = h.request(ShardRequest::ListGroups {
        states: vec!["stable".into()],
        types: vec!["consumer".into()],
    }) else {
        panic!()
    };
    assert_eq!(l.len(), 1);
    assert_eq!(
        (l[0].group_state.as_str(), l[0].protocol_type.as_str()),
        ("Stable", "consumer")
    );
}

#[test]
fn a_refused_write_changes_nothing() {
    let config = GroupCoordinatorConfig {
        max_batch_bytes: 200,
        ..Default::default()
    };
    let mut h = Harness::with_config(&[("a-rather-long-topic-name", 64)], config);
    let r = h.join("m1", &["a-rather-long-topic-name"]);
    assert_eq!(error(&r), ErrorCode::RecordListTooLarge);
    assert!(h.shard.group(GROUP).is_none());
    assert!(h.log.is_empty());
    assert_eq!(h.shard.next_deadline(), None);
}
