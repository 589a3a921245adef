//! GroupMetadata records through the log: a reload reproduces the group, loaded members
//! must heartbeat again, tombstones delete, and subscriptions decide offset retention.

use super::*;
use crate::group::shard::ShardRequest;

/// A fresh shard loaded from `records` as the runtime would: each record through its
/// bytes (Kafka's format), then `on_loaded`.
fn reload(records: &[CoordinatorRecord], now: i64) -> H {
    let mut h = H::new();
    h.now = now;
    for (offset, r) in records.iter().enumerate() {
        let (k, v) = r.encode().expect("record encodes");
        let decoded = CoordinatorRecord::decode(k, v).expect("record decodes");
        assert_eq!(&decoded, r);
        h.shard
            .replay(offset as i64, -1, decoded)
            .expect("record replays");
    }
    h.shard.on_loaded(now);
    h
}

/// A Stable group of two dynamic members and a static one.
fn mixed_group(h: &mut H) -> (Vec<String>, i32) {
    let s = stable_group(h, &["a", "b"]);
    let jc = h.join(&JoinArgs::new("c").instance("i-c"));
    let ja = h.join(&JoinArgs::new("a").id(&s.members[0]));
    let jb = h.join(&JoinArgs::new("b").id(&s.members[1]));
    let rc = h.must_join(jc);
    let (ra, rb) = (h.must_join(ja), h.must_join(jb));
    let generation = ra.generation_id;
    assert_eq!(
        (rb.generation_id, rc.generation_id),
        (generation, generation)
    );
    let ids = vec![ra.member_id, rb.member_id, rc.member_id];
    let assignments: Vec<(&str, &[u8])> = vec![
        (ids[0].as_str(), b"A"),
        (ids[1].as_str(), b"B"),
        (ids[2].as_str(), b"C"),
    ];
    let leader = ra.leader.clone();
    for id in &ids {
        let a: &[(&str, &[u8])] = if *id == leader { &assignments } else { &[] };
        let instance = (id == &ids[2]).then_some("i-c");
        h.sync_as(GROUP, id, instance, generation, a);
    }
    assert_eq!(h.g().state_name(), "Stable");
    (ids, generation)
}

#[test]
fn replaying_the_written_records_reproduces_the_group() {
    let mut h = H::new();
    let (ids, generation) = mixed_group(&mut h);
    assert_eq!(h.commit(&ids[0], None, generation), 0);
    let before = h.g().clone();

    let mut h2 = reload(&h.records, h.now + 1_000);
    let after = h2.g().clone();
    assert_eq!(after.state_name(), "Stable");
    assert_eq!(after.generation_id(), generation);
    assert_eq!(after.leader_id(), before.leader_id());
    assert_eq!(after.protocol_type(), "consumer");
    assert_eq!(after.protocol_name(), Some("range"));
    assert_eq!(
        after.current_state_timestamp(),
        before.current_state_timestamp()
    );
    assert_eq!(after.static_member_id("i-c"), Some(ids[2].as_str()));
    assert_eq!(after.num_members(), 3);
    for m in before.members() {
        let n = after.member(m.member_id()).expect("member reloaded");
        assert_eq!(n.group_instance_id(), m.group_instance_id());
        assert_eq!(
            (n.client_id(), n.client_host()),
            (m.client_id(), m.client_host())
        );
        assert_eq!(n.session_timeout_ms(), m.session_timeout_ms());
        assert_eq!(n.rebalance_timeout_ms(), m.rebalance_timeout_ms());
        assert_eq!(n.metadata("range"), m.metadata("range"));
        assert_eq!(n.assignment(), m.assignment());
    }
    assert_eq!(after.describe(), before.describe());
    assert_eq!(after.subscribed_topics(), before.subscribed_topics());
    let t: Vec<&str> = after
        .subscribed_topics()
        .into_iter()
        .flatten()
        .map(|s| s.as_str())
        .collect();
    assert_eq!(t, vec!["t"]);

    // The reloaded group serves its members at their generation.
    assert_eq!(h2.heartbeat(&ids[1], generation), 0);
    let s = h2.sync(&ids[1], generation, &[]);
    assert_eq!(h2.must_sync(s).assignment.as_ref(), b"B");
    assert_eq!(h2.commit(&ids[0], None, generation), 0);
    assert_eq!(
        h2.commit(&ids[0], None, generation - 1),
        code(ErrorCode::IllegalGeneration)
    );
    // And a static member rejoining keeps its assignment there too.
    let jc = h2.join(&JoinArgs::new("c").instance("i-c").version(9));
    let rc = h2.must_join(jc);
    assert_eq!((rc.error_code, rc.generation_id), (0, generation));
    assert_ne!(rc.member_id, ids[2]);
}

#[test]
fn loaded_members_that_never_heartbeat_expire() {
    let mut h = H::new();
    let (ids, generation) = mixed_group(&mut h);
    let mut h2 = reload(&h.records, h.now + 60_000);
    let written = h2.records.len();
    // One keeps heartbeating; the two others are gone after their sessions.
    h2.advance(5_000);
    assert_eq!(h2.heartbeat(&ids[0], generation), 0);
    h2.advance(i64::from(SESSION) - 5_000);
    assert!(h2.g().has_member(&ids[0]));
    assert!(!h2.g().has_member(&ids[1]) && !h2.g().has_member(&ids[2]));
    assert_eq!(h2.g().state_name(), "PreparingRebalance");
    assert_eq!(
        h2.heartbeat(&ids[0], generation),
        code(ErrorCode::RebalanceInProgress)
    );
    // When the last one is silent too, the group empties and that is written.
    h2.advance(i64::from(REBALANCE));
    assert_eq!(h2.g().state_name(), "Empty");
    assert_eq!(h2.records.len(), written + 1);
    let v = h2.last_metadata(GROUP);
    assert_eq!((v.generation, v.members.len()), (generation + 1, 0));
    // The emptied group lists and describes as Empty.
    let l = h2.send(
        4,
        "admin",
        ShardRequest::ListGroups {
            states: vec![],
            types: vec![],
        },
    );
    let ShardResponse::ListGroups(listed) = &h2.replies[&l] else {
        panic!("not a ListGroups answer");
    };
    assert_eq!(listed[0].group_state, "Empty");
    assert_eq!(listed[0].protocol_type, "consumer");
}

#[test]
fn a_deleted_group_stays_deleted_after_a_reload() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a"]);
    let r = h.leave(&[(&s.members[0], None)]);
    assert_eq!(r.members[0].error_code, 0);
    let d = h.send(2, "admin", ShardRequest::DeleteGroups(vec![GROUP.into()]));
    let ShardResponse::DeleteGroups(results) = &h.replies[&d] else {
        panic!("not a DeleteGroups answer");
    };
    assert_eq!(results[0].error_code, 0);
    assert!(h.shard.group(GROUP).is_none());
    assert_eq!(h.metadata_records(GROUP).last(), Some(&None));
    let h2 = reload(&h.records, h.now);
    assert!(h2.shard.group(GROUP).is_none());
    // A Stable group cannot be deleted.
    let mut h3 = H::new();
    stable_group(&mut h3, &["a"]);
    let d = h3.send(2, "admin", ShardRequest::DeleteGroups(vec![GROUP.into()]));
    let ShardResponse::DeleteGroups(results) = &h3.replies[&d] else {
        panic!("not a DeleteGroups answer");
    };
    assert_eq!(results[0].error_code, code(ErrorCode::NonEmptyGroup));
}

#[test]
fn subscriptions_decide_which_offsets_a_group_keeps() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a"]);
    assert_eq!(h.commit(&s.members[0], None, s.generation), 0);
    let delete = |topic: &str| kraftd_protocol::messages::OffsetDeleteRequest {
        group_id: GROUP.into(),
        topics: vec![
            kraftd_protocol::messages::offset_delete_request::OffsetDeleteRequestTopic {
                name: topic.into(),
                partitions: vec![Default::default()],
            },
        ],
    };
    let d = h.send(0, "admin", ShardRequest::OffsetDelete(delete("t")));
    let ShardResponse::OffsetDelete(r) = &h.replies[&d] else {
        panic!("not an OffsetDelete answer");
    };
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        code(ErrorCode::GroupSubscribedToTopic)
    );
    let d = h.send(0, "admin", ShardRequest::OffsetDelete(delete("u")));
    let ShardResponse::OffsetDelete(r) = &h.replies[&d] else {
        panic!("not an OffsetDelete answer");
    };
    assert_eq!(r.topics[0].partitions[0].error_code, 0);

    // Metadata that does not parse: a consumer group keeps every topic's offsets.
    let mut h = H::new();
    let garbage = JoinArgs::new("a")
        .version(3)
        .protocols(&[("range", Bytes::from_static(&[0, 0, 0xff, 0xff, 0xff]))]);
    h.join(&garbage);
    h.advance(i64::from(DELAY));
    assert_eq!(h.g().state_name(), "CompletingRebalance");
    assert_eq!(h.g().subscribed_topics(), None);
    assert!(h.g().is_subscribed_to_topic("anything"));
    // Another protocol type is never read: its offsets are not held for it.
    let mut h = H::new();
    let mut connect = JoinArgs::new("w").version(3);
    connect.protocol_type = "connect".into();
    h.join(&connect);
    h.advance(i64::from(DELAY));
    assert_eq!(h.g().protocol_type(), "connect");
    assert!(!h.g().is_subscribed_to_topic("t"));
}

#[test]
fn a_new_group_replays_as_an_empty_group_without_protocol() {
    let mut h = H::new();
    let first = h.join(&JoinArgs::new("a"));
    assert_eq!(
        h.must_join(first).error_code,
        code(ErrorCode::MemberIdRequired)
    );
    let h2 = reload(&h.records, h.now);
    let g = h2.g();
    assert_eq!(g.state_name(), "Empty");
    assert_eq!((g.protocol_type(), g.protocol_name()), ("", None));
    assert_eq!(g.generation_id(), 0);
    assert_eq!(g.current_state_timestamp(), Some(h.now));
}

#[test]
fn a_loaded_group_over_the_size_limit_rebalances() {
    let mut h = H::new();
    let (ids, generation) = mixed_group(&mut h);
    let mut h2 = H::with_config(GroupCoordinatorConfig {
        classic_initial_rebalance_delay_ms: DELAY,
        classic_group_max_size: 2,
        ..Default::default()
    });
    for (offset, r) in h.records.iter().enumerate() {
        h2.shard
            .replay(offset as i64, -1, r.clone())
            .expect("record replays");
    }
    h2.shard.on_loaded(h2.now);
    assert_eq!(h2.g().state_name(), "PreparingRebalance");
    assert_eq!(
        h2.heartbeat(&ids[0], generation),
        code(ErrorCode::RebalanceInProgress)
    );
    // Two members rejoin; the third is refused (the rejoined ones fill the group).
    let j0 = h2.join(&JoinArgs::new("a").id(&ids[0]));
    let j1 = h2.join(&JoinArgs::new("b").id(&ids[1]));
    let j2 = h2.join(&JoinArgs::new("c").id(&ids[2]).instance("i-c"));
    let r2 = h2.must_join(j2);
    assert_eq!(r2.error_code, code(ErrorCode::GroupMaxSizeReached));
    assert!(!h2.g().has_member(&ids[2]));
    // As in Kafka, the refusal does not end the phase: its timeout does.
    assert!(h2.joined(j0).is_none());
    h2.advance(i64::from(REBALANCE));
    let (r0, r1) = (h2.must_join(j0), h2.must_join(j1));
    assert_eq!(
        (r0.generation_id, r1.generation_id),
        (generation + 1, generation + 1)
    );
    assert_eq!(h2.g().num_members(), 2);
}
