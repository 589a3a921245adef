//! The join and sync phases: the full flow, the initial delay, KIP-394, request checks.

use super::*;
use crate::group::shard::ShardRequest;

#[test]
fn one_member_joins_and_syncs_after_the_initial_delay() {
    let mut h = H::new();
    let start = h.now;
    let (member, join) = h.new_member(&JoinArgs::new("client-a"));
    // The group was created and written at once: generation 0, nothing else.
    let created = h.metadata_records(GROUP);
    assert_eq!(created.len(), 1);
    let created = created[0].clone().expect("a value");
    assert_eq!(
        (created.generation, created.protocol_type.as_str()),
        (0, "")
    );
    assert_eq!(
        (created.protocol.clone(), created.leader.clone()),
        (None, None)
    );
    assert_eq!(created.current_state_timestamp, start);
    assert_eq!(h.g().state_name(), "PreparingRebalance");

    // The initial delay holds the JoinGroup.
    h.advance(i64::from(DELAY) - 1);
    assert!(h.joined(join).is_none());
    h.advance(1);
    let r = h.must_join(join);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.generation_id, 1);
    assert_eq!(r.member_id, member);
    assert_eq!(r.leader, member);
    assert_eq!(r.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    assert_eq!(r.members.len(), 1);
    assert_eq!(r.members[0].member_id, member);
    assert_eq!(r.members[0].metadata, sub(&["t"]));
    assert_eq!(h.g().state_name(), "CompletingRebalance");
    // Nothing is written until the assignment arrives.
    assert_eq!(h.metadata_records(GROUP).len(), 1);

    let s = h.sync(&member, 1, &[(&member, b"mine")]);
    let s = h.must_sync(s);
    assert_eq!(s.error_code, 0);
    assert_eq!(s.assignment.as_ref(), b"mine");
    assert_eq!(s.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(s.protocol_name.as_deref(), Some("range"));
    assert_eq!(h.g().state_name(), "Stable");

    let v = h.last_metadata(GROUP);
    assert_eq!(v.generation, 1);
    assert_eq!(v.protocol_type, "consumer");
    assert_eq!(v.protocol.as_deref(), Some("range"));
    assert_eq!(v.leader.as_deref(), Some(member.as_str()));
    assert_eq!(v.members.len(), 1);
    let m = &v.members[0];
    assert_eq!(
        (m.member_id.as_str(), m.client_id.as_str()),
        (member.as_str(), "client-a")
    );
    assert_eq!(m.client_host, "/127.0.0.1");
    assert_eq!(
        (m.session_timeout, m.rebalance_timeout),
        (SESSION, REBALANCE)
    );
    assert_eq!(m.subscription, sub(&["t"]));
    assert_eq!(m.assignment.as_ref(), b"mine");

    // DescribeGroups shows the metadata and the assignment once Stable.
    let d = h.send(5, "admin", ShardRequest::DescribeGroups(vec![GROUP.into()]));
    let ShardResponse::DescribeGroups(groups) = &h.replies[&d] else {
        panic!("not a DescribeGroups answer");
    };
    let g = &groups[0];
    assert_eq!(
        (g.group_state.as_str(), g.protocol_data.as_str()),
        ("Stable", "range")
    );
    assert_eq!(g.members[0].member_metadata, sub(&["t"]));
    assert_eq!(g.members[0].member_assignment.as_ref(), b"mine");
    assert_eq!(g.members[0].client_id, "client-a");

    // The subscription is known: the group consumes t, not u.
    assert!(h.g().is_subscribed_to_topic("t"));
    assert!(!h.g().is_subscribed_to_topic("u"));
}

#[test]
fn three_members_extend_the_initial_delay_and_sync_through_the_leader() {
    let mut h = H::new();
    let a = h.join(&JoinArgs::new("a").version(3));
    h.advance(1_000);
    let b = h.join(&JoinArgs::new("b").version(3));
    h.advance(1_000);
    let c = h.join(&JoinArgs::new("c").version(3));
    // At the first delay's end members were still arriving: it is extended.
    h.advance(1_000);
    assert!(h.joined(a).is_none());
    h.advance(2_999);
    assert!(h.joined(a).is_none());
    h.advance(1);
    let (ra, rb, rc) = (h.must_join(a), h.must_join(b), h.must_join(c));
    for r in [&ra, &rb, &rc] {
        assert_eq!((r.error_code, r.generation_id), (0, 1));
        assert_eq!(r.leader, ra.member_id);
    }
    assert!(ra.member_id.starts_with("a-") && rb.member_id.starts_with("b-"));
    assert_ne!(ra.member_id, rb.member_id);
    // Only the leader learns the members.
    assert_eq!(ra.members.len(), 3);
    assert!(rb.members.is_empty() && rc.members.is_empty());

    // Followers wait for the leader's assignment.
    let sb = h.sync(&rb.member_id, 1, &[]);
    let sc = h.sync(&rc.member_id, 1, &[]);
    assert!(h.synced(sb).is_none() && h.synced(sc).is_none());
    assert_eq!(h.heartbeat(&rb.member_id, 1), 0);
    let sa = h.sync(
        &ra.member_id,
        1,
        &[(&ra.member_id, b"A"), (&rb.member_id, b"B")],
    );
    assert_eq!(h.must_sync(sa).assignment.as_ref(), b"A");
    assert_eq!(h.must_sync(sb).assignment.as_ref(), b"B");
    // The leader gave c nothing: c gets an empty assignment.
    let rc_sync = h.must_sync(sc);
    assert_eq!(rc_sync.error_code, 0);
    assert!(rc_sync.assignment.is_empty());
    assert_eq!(h.g().state_name(), "Stable");
    assert_eq!(h.last_metadata(GROUP).members.len(), 3);
    // A SyncGroup in Stable gets the current assignment again.
    let again = h.sync(&rb.member_id, 1, &[]);
    assert_eq!(h.must_sync(again).assignment.as_ref(), b"B");
}

#[test]
fn join_checks_the_request() {
    let mut h = H::new();
    let r = h.join(&JoinArgs::new("a").group(""));
    assert_eq!(h.must_join(r).error_code, code(ErrorCode::InvalidGroupId));
    let mut short = JoinArgs::new("a");
    short.session = 5_999;
    let r = h.join(&short);
    assert_eq!(
        h.must_join(r).error_code,
        code(ErrorCode::InvalidSessionTimeout)
    );
    let mut long = JoinArgs::new("a");
    long.session = 1_800_001;
    let r = h.join(&long);
    assert_eq!(
        h.must_join(r).error_code,
        code(ErrorCode::InvalidSessionTimeout)
    );
    // A member id for a group that does not exist.
    let r = h.join(&JoinArgs::new("a").id("a-ghost"));
    let r = h.must_join(r);
    assert_eq!(
        (r.error_code, r.member_id.as_str()),
        (code(ErrorCode::UnknownMemberId), "a-ghost")
    );
    assert!(h.shard.group(GROUP).is_none());
    // No protocol type: nothing to join with.
    let mut bare = JoinArgs::new("a");
    bare.protocol_type = String::new();
    let r = h.join(&bare);
    assert_eq!(
        h.must_join(r).error_code,
        code(ErrorCode::InconsistentGroupProtocol)
    );

    let s = stable_group(&mut h, &["a"]);
    // Another protocol type, or no protocol in common.
    let mut other = JoinArgs::new("b");
    other.protocol_type = "connect".into();
    let r = h.join(&other);
    assert_eq!(
        h.must_join(r).error_code,
        code(ErrorCode::InconsistentGroupProtocol)
    );
    let r = h.join(&JoinArgs::new("b").protocols(&[("roundrobin", sub(&["t"]))]));
    assert_eq!(
        h.must_join(r).error_code,
        code(ErrorCode::InconsistentGroupProtocol)
    );
    // An unknown member id in a known group.
    let r = h.join(&JoinArgs::new("b").id("b-unknown"));
    assert_eq!(h.must_join(r).error_code, code(ErrorCode::UnknownMemberId));
    assert_eq!(h.g().state_name(), "Stable");
    assert_eq!(h.g().generation_id(), s.generation);
}

#[test]
fn member_id_required_and_a_pending_member_that_never_comes_back() {
    let mut h = H::new();
    let first = h.join(&JoinArgs::new("a").version(4));
    let r = h.must_join(first);
    assert_eq!(r.error_code, code(ErrorCode::MemberIdRequired));
    assert!(r.member_id.starts_with("a-"));
    // client id, then a UUID: 8-4-4-4-12 hex digits.
    let uuid = &r.member_id[2..];
    let parts: Vec<usize> = uuid.split('-').map(str::len).collect();
    assert_eq!(parts, vec![8, 4, 4, 4, 12]);
    assert!(h.g().is_pending_member(&r.member_id));
    assert_eq!(h.g().num_members(), 0);
    // A pending member is no member yet.
    assert_eq!(
        h.heartbeat(&r.member_id, 0),
        code(ErrorCode::UnknownMemberId)
    );
    // Two requests never get the same id.
    let second = h.join(&JoinArgs::new("a").version(4));
    assert_ne!(h.must_join(second).member_id, r.member_id);

    // It does not come back within its session: forgotten.
    h.advance(i64::from(SESSION));
    assert!(!h.g().is_pending_member(&r.member_id));
    let late = h.join(&JoinArgs::new("a").version(4).id(&r.member_id));
    assert_eq!(
        h.must_join(late).error_code,
        code(ErrorCode::UnknownMemberId)
    );
    assert_eq!(h.g().state_name(), "Empty");
}

#[test]
fn join_v0_uses_the_session_timeout_as_rebalance_timeout() {
    let mut h = H::new();
    let r = h.join(&JoinArgs::new("old").version(0));
    let m = h.g().members().next().expect("a member").clone();
    assert_eq!(
        (m.session_timeout_ms(), m.rebalance_timeout_ms()),
        (SESSION, SESSION)
    );
    h.advance(i64::from(DELAY));
    let r = h.must_join(r);
    assert_eq!((r.error_code, r.generation_id), (0, 1));
    // v0 has no nullable protocol name: it is a string.
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    let s = h.sync(&r.member_id, 1, &[(&r.member_id, b"x")]);
    assert_eq!(h.must_sync(s).error_code, 0);
}

#[test]
fn sync_checks_member_generation_protocol_and_state() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a", "b"]);
    let (a, b) = (s.members[0].clone(), s.members[1].clone());
    let r = h.sync("nobody", s.generation, &[]);
    assert_eq!(h.must_sync(r).error_code, code(ErrorCode::UnknownMemberId));
    let r = h.sync(&a, s.generation + 1, &[]);
    assert_eq!(
        h.must_sync(r).error_code,
        code(ErrorCode::IllegalGeneration)
    );
    let r = h.sync_as("nowhere", &a, None, s.generation, &[]);
    assert_eq!(h.must_sync(r).error_code, code(ErrorCode::UnknownMemberId));
    let r = h.sync_as("", &a, None, s.generation, &[]);
    assert_eq!(h.must_sync(r).error_code, code(ErrorCode::InvalidGroupId));
    let mut wrong = SyncGroupRequest {
        group_id: GROUP.into(),
        generation_id: s.generation,
        member_id: a.clone(),
        protocol_type: Some("consumer".into()),
        protocol_name: Some("roundrobin".into()),
        ..Default::default()
    };
    let r = h.send(5, "a", ShardRequest::SyncGroup(wrong.clone()));
    assert_eq!(
        h.must_sync(r).error_code,
        code(ErrorCode::InconsistentGroupProtocol)
    );
    wrong.protocol_name = None;
    wrong.protocol_type = Some("connect".into());
    let r = h.send(5, "a", ShardRequest::SyncGroup(wrong));
    assert_eq!(
        h.must_sync(r).error_code,
        code(ErrorCode::InconsistentGroupProtocol)
    );

    // A new member starts a rebalance: SyncGroup is then told to rejoin.
    let (_, c) = h.new_member(&JoinArgs::new("c"));
    assert!(h.joined(c).is_none());
    assert_eq!(h.g().state_name(), "PreparingRebalance");
    let r = h.sync(&b, s.generation, &[]);
    assert_eq!(
        h.must_sync(r).error_code,
        code(ErrorCode::RebalanceInProgress)
    );
}

#[test]
fn rejoins_without_change_answer_with_the_current_generation() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a", "b"]);
    let follower = s
        .members
        .iter()
        .find(|m| **m != s.leader)
        .cloned()
        .unwrap_or_default();
    // A follower rejoining with the same protocols in Stable: no rebalance.
    let r = h.join(&JoinArgs::new("b").id(&follower));
    let r = h.must_join(r);
    assert_eq!((r.error_code, r.generation_id), (0, s.generation));
    assert_eq!(r.leader, s.leader);
    assert!(r.members.is_empty());
    assert_eq!(h.g().state_name(), "Stable");
    // New protocols force one.
    let r = h.join(
        &JoinArgs::new("b")
            .id(&follower)
            .protocols(&[("range", sub(&["t", "u"]))]),
    );
    assert!(h.joined(r).is_none());
    assert_eq!(h.g().state_name(), "PreparingRebalance");
    let l = h.join(&JoinArgs::new("a").id(&s.leader));
    let (rl, rf) = (h.must_join(l), h.must_join(r));
    assert_eq!(
        (rl.generation_id, rf.generation_id),
        (s.generation + 1, s.generation + 1)
    );
    // In CompletingRebalance, the same JoinGroup again gets the same answer.
    let again = h.join(&JoinArgs::new("a").id(&s.leader));
    let again = h.must_join(again);
    assert_eq!(again.generation_id, s.generation + 1);
    assert_eq!(again.members.len(), 2);
    assert_eq!(h.g().state_name(), "CompletingRebalance");
    // The leader rejoining a Stable group forces a rebalance.
    let sl = h.sync(&s.leader, s.generation + 1, &[]);
    let sf = h.sync(&follower, s.generation + 1, &[]);
    assert_eq!(h.must_sync(sl).error_code, 0);
    assert_eq!(h.must_sync(sf).error_code, 0);
    let l = h.join(&JoinArgs::new("a").id(&s.leader));
    assert!(h.joined(l).is_none());
    assert_eq!(h.g().state_name(), "PreparingRebalance");
    assert_eq!(
        h.heartbeat(&follower, s.generation + 1),
        code(ErrorCode::RebalanceInProgress)
    );
}

#[test]
fn responses_fit_their_versions_and_describe_hides_metadata_while_rebalancing() {
    let mut h = H::new();
    // An error at v6 names an empty protocol; at v7+ none.
    let r = h.join(&JoinArgs::new("a").group("").version(6));
    assert_eq!(h.must_join(r).protocol_name.as_deref(), Some(""));
    let r = h.join(&JoinArgs::new("a").group("").version(7));
    assert_eq!(h.must_join(r).protocol_name, None);

    let s = stable_group(&mut h, &["a", "b"]);
    // A dynamic leader is never told to skip the assignment, even at v9.
    let ja = h.join(&JoinArgs::new("a").id(&s.leader).version(9));
    let other = s
        .members
        .iter()
        .find(|m| **m != s.leader)
        .cloned()
        .unwrap_or_default();
    let jb = h.join(&JoinArgs::new("b").id(&other).version(9));
    let ra = h.must_join(ja);
    assert!(!ra.skip_assignment);
    assert_eq!(ra.members.len(), 2);
    assert!(!h.must_join(jb).skip_assignment);

    // CompletingRebalance: members and their (previous) assignments, no metadata.
    let d = h.send(
        5,
        "admin",
        ShardRequest::DescribeGroups(vec![GROUP.into(), "nope".into()]),
    );
    let ShardResponse::DescribeGroups(groups) = &h.replies[&d] else {
        panic!("not a DescribeGroups answer");
    };
    let g = &groups[0];
    assert_eq!(g.group_state, "CompletingRebalance");
    assert_eq!(
        (g.protocol_type.as_str(), g.protocol_data.as_str()),
        ("consumer", "")
    );
    assert_eq!(g.members.len(), 2);
    assert!(g.members.iter().all(|m| m.member_metadata.is_empty()));
    assert!(g
        .members
        .iter()
        .any(|m| m.member_assignment.as_ref() == b"assign-0"));
    assert_eq!(
        (groups[1].group_state.as_str(), groups[1].error_code),
        ("Dead", 0)
    );
}
