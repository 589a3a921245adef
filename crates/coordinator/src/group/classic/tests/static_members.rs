//! Static membership (KIP-345): a known group instance id rejoining without its member id.

use super::*;

/// A Stable group of static members `i-a` (the leader) and `i-b`, with assignments `A`
/// and `B`; (member ids, generation).
fn static_group(h: &mut H) -> (String, String, i32) {
    let ja = h.join(&JoinArgs::new("a").instance("i-a"));
    let jb = h.join(&JoinArgs::new("b").instance("i-b"));
    h.advance(2 * i64::from(DELAY));
    let (ra, rb) = (h.must_join(ja), h.must_join(jb));
    let (a, b) = (ra.member_id.clone(), rb.member_id.clone());
    // Static members get their id at once, built on the instance id.
    assert!(a.starts_with("i-a-") && b.starts_with("i-b-"));
    assert_eq!(ra.leader, a);
    let generation = ra.generation_id;
    let sb = h.sync_as(GROUP, &b, Some("i-b"), generation, &[]);
    let sa = h.sync_as(
        GROUP,
        &a,
        Some("i-a"),
        generation,
        &[(&a, b"A"), (&b, b"B")],
    );
    assert_eq!(h.must_sync(sa).assignment.as_ref(), b"A");
    assert_eq!(h.must_sync(sb).assignment.as_ref(), b"B");
    (a, b, generation)
}

#[test]
fn a_static_member_rejoining_keeps_its_assignment_and_fences_its_old_id() {
    let mut h = H::new();
    let (a, b, generation) = static_group(&mut h);
    let written = h.metadata_records(GROUP).len();
    let jb = h.join(&JoinArgs::new("b").instance("i-b").version(9));
    let r = h.must_join(jb);
    let new_b = r.member_id.clone();
    assert_eq!(r.error_code, 0);
    assert!(new_b.starts_with("i-b-") && new_b != b);
    assert_eq!(r.generation_id, generation);
    assert_eq!(r.leader, a);
    assert!(!r.skip_assignment);
    assert!(r.members.is_empty());
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    // No rebalance; the new member id is written.
    assert_eq!(h.g().state_name(), "Stable");
    assert_eq!(h.g().static_member_id("i-b"), Some(new_b.as_str()));
    assert_eq!(h.metadata_records(GROUP).len(), written + 1);
    let v = h.last_metadata(GROUP);
    let ids: Vec<&str> = v.members.iter().map(|m| m.member_id.as_str()).collect();
    assert!(ids.contains(&new_b.as_str()) && !ids.contains(&b.as_str()));
    assert_eq!(v.generation, generation);

    // The old id is fenced; the new one works and has the old assignment.
    assert_eq!(
        h.heartbeat_as(GROUP, &b, Some("i-b"), generation),
        code(ErrorCode::FencedInstanceId)
    );
    assert_eq!(
        h.heartbeat(&b, generation),
        code(ErrorCode::UnknownMemberId)
    );
    assert_eq!(
        h.commit(&b, Some("i-b"), generation),
        code(ErrorCode::FencedInstanceId)
    );
    assert_eq!(h.heartbeat_as(GROUP, &new_b, Some("i-b"), generation), 0);
    let s = h.sync_as(GROUP, &new_b, Some("i-b"), generation, &[]);
    let s = h.must_sync(s);
    assert_eq!((s.error_code, s.assignment.as_ref()), (0, b"B".as_ref()));
    let s = h.sync_as(GROUP, &b, Some("i-b"), generation, &[]);
    assert_eq!(h.must_sync(s).error_code, code(ErrorCode::FencedInstanceId));
    assert_eq!(h.commit(&new_b, Some("i-b"), generation), 0);
}

#[test]
fn a_static_leader_rejoining_is_told_to_skip_the_assignment_from_v9() {
    let mut h = H::new();
    let (a, _b, generation) = static_group(&mut h);
    let ja = h.join(&JoinArgs::new("a").instance("i-a").version(9));
    let r = h.must_join(ja);
    let new_a = r.member_id.clone();
    assert_eq!(r.error_code, 0);
    assert_eq!(r.leader, new_a);
    assert!(r.skip_assignment);
    assert_eq!(r.members.len(), 2);
    assert_eq!(h.g().leader_id(), Some(new_a.as_str()));
    assert_eq!(h.g().state_name(), "Stable");
    assert_eq!(h.g().generation_id(), generation);
    assert_eq!(
        h.g().member(&new_a).map(|m| m.assignment().to_vec()),
        Some(b"A".to_vec())
    );

    // Before v9 the leader is named by its previous id: it acts as a follower.
    let ja = h.join(&JoinArgs::new("a").instance("i-a").version(8));
    let r = h.must_join(ja);
    assert_eq!(r.error_code, 0);
    assert_ne!(r.member_id, new_a);
    assert_eq!(r.leader, new_a);
    assert!(!r.skip_assignment && r.members.is_empty());
    assert_eq!(h.g().leader_id(), Some(r.member_id.as_str()));
    assert_ne!(a, r.member_id);
}

#[test]
fn a_static_member_replacing_a_waiting_one_fences_its_join_and_takes_its_place() {
    let mut h = H::new();
    let (a, b, generation) = static_group(&mut h);
    // a (the leader) rejoins: a rebalance, its JoinGroup waits for b.
    let ja = h.join(&JoinArgs::new("a").id(&a).instance("i-a"));
    assert!(h.joined(ja).is_none());
    // Another process with a's instance id takes over.
    let ja2 = h.join(&JoinArgs::new("a").instance("i-a"));
    let fenced = h.must_join(ja);
    assert_eq!(
        (fenced.error_code, fenced.member_id.as_str()),
        (code(ErrorCode::FencedInstanceId), a.as_str())
    );
    assert!(h.joined(ja2).is_none());
    let jb = h.join(&JoinArgs::new("b").id(&b).instance("i-b"));
    let (ra, rb) = (h.must_join(ja2), h.must_join(jb));
    assert_eq!(
        (ra.generation_id, rb.generation_id),
        (generation + 1, generation + 1)
    );
    assert_eq!(ra.leader, ra.member_id);
    assert_eq!(ra.members.len(), 2);
    assert!(!h.g().has_member(&a));
}

#[test]
fn static_members_outlast_the_join_phase_but_not_their_sessions() {
    let mut h = H::new();
    let (a, b, generation) = static_group(&mut h);
    let ja = h.join(&JoinArgs::new("a").id(&a).instance("i-a"));
    // b heartbeats but never rejoins: as a static member it stays in the generation.
    for _ in 0..3 {
        h.advance(5_000);
        assert_eq!(
            h.heartbeat_as(GROUP, &b, Some("i-b"), generation),
            code(ErrorCode::RebalanceInProgress)
        );
    }
    assert!(h.joined(ja).is_none());
    h.advance(5_000);
    let ra = h.must_join(ja);
    assert_eq!(ra.generation_id, generation + 1);
    assert_eq!(ra.members.len(), 2);
    assert!(h.g().has_member(&b));
    let sa = h.sync_as(GROUP, &a, Some("i-a"), generation + 1, &[(&a, b"A2")]);
    assert_eq!(h.must_sync(sa).assignment.as_ref(), b"A2");
    // Then b falls silent: its session ends, and the group rebalances without it.
    h.advance(5_000);
    assert_eq!(h.heartbeat_as(GROUP, &a, Some("i-a"), generation + 1), 0);
    h.advance(4_999);
    assert!(h.g().has_member(&b));
    h.advance(1);
    assert!(!h.g().has_member(&b));
    assert_eq!(h.g().static_member_id("i-b"), None);
    assert_eq!(h.g().state_name(), "PreparingRebalance");
}

#[test]
fn leave_group_by_instance_id() {
    let mut h = H::new();
    let (a, b, _) = static_group(&mut h);
    // The instance id must name the member.
    let r = h.leave(&[(&a, Some("i-b"))]);
    assert_eq!(r.members[0].error_code, code(ErrorCode::FencedInstanceId));
    assert_eq!(h.g().state_name(), "Stable");
    // An admin removes a static member by instance id alone.
    let r = h.leave(&[("", Some("i-b")), ("", Some("i-z"))]);
    let codes: Vec<i16> = r.members.iter().map(|m| m.error_code).collect();
    assert_eq!(codes, vec![0, code(ErrorCode::UnknownMemberId)]);
    assert!(!h.g().has_member(&b));
    assert_eq!(h.g().state_name(), "PreparingRebalance");
}

#[test]
fn a_static_rejoin_that_cannot_be_written_keeps_the_old_member_id() {
    let mut h = H::new();
    let (a, b, generation) = static_group(&mut h);
    let records = h.records.len();
    // Same protocol, so no rebalance; but 2 MB of metadata do not fit one batch.
    let huge = Bytes::from(vec![1u8; 2 * 1024 * 1024]);
    let jb = h.join(
        &JoinArgs::new("b")
            .instance("i-b")
            .version(9)
            .protocols(&[("range", huge)]),
    );
    let r = h.must_join(jb);
    assert_eq!(r.error_code, code(ErrorCode::UnknownServerError));
    assert_eq!(r.member_id, "");
    assert_eq!(
        (r.generation_id, r.leader.as_str()),
        (generation, a.as_str())
    );
    assert_eq!(h.records.len(), records);
    // The group is as it was: b keeps its id, metadata, session and assignment.
    assert_eq!(h.g().state_name(), "Stable");
    assert_eq!(h.g().static_member_id("i-b"), Some(b.as_str()));
    assert_eq!(h.g().num_members(), 2);
    let m = h.g().member(&b).expect("b is back").clone();
    assert_eq!(m.metadata("range"), sub(&["t"]));
    assert_eq!(m.assignment().as_ref(), b"B");
    assert_eq!(h.heartbeat_as(GROUP, &b, Some("i-b"), generation), 0);
    // Its session goes on under the old id; the failed new id leaves no timer behind.
    h.advance(i64::from(SESSION) - 1);
    assert!(h.g().has_member(&b));
    assert_eq!(h.heartbeat_as(GROUP, &b, Some("i-b"), generation), 0);
    h.advance(1);
    assert!(h.g().has_member(&b));
    assert_eq!(h.g().state_name(), "PreparingRebalance");
    assert!(!h.g().has_member(&a));
}

#[test]
fn a_zero_rebalance_timeout_does_not_spin_the_timer() {
    let mut h = H::new();
    let ja = h.join(&JoinArgs::new("a").instance("i-a"));
    h.advance(i64::from(DELAY));
    let ra = h.must_join(ja);
    let s = h.sync_as(
        GROUP,
        &ra.member_id,
        Some("i-a"),
        1,
        &[(&ra.member_id, b"A")],
    );
    assert_eq!(h.must_sync(s).error_code, 0);
    // The static member comes back with a rebalance timeout of 0 (no rebalance).
    let mut a = JoinArgs::new("a").instance("i-a").version(9);
    a.rebalance = 0;
    let ja = h.join(&a);
    assert_eq!(h.must_join(ja).error_code, 0);
    assert_eq!(h.g().rebalance_timeout_ms(), 0);
    // A dynamic member comes and goes: a rebalance in which the static member never
    // rejoins, with a rebalance timeout of 0.
    let mut c = JoinArgs::new("c").version(3);
    c.rebalance = 0;
    let jc = h.join(&c);
    assert_eq!(h.g().state_name(), "PreparingRebalance");
    let c_id = h
        .g()
        .members()
        .find(|m| m.group_instance_id().is_none())
        .map(|m| m.member_id().to_string())
        .unwrap_or_default();
    let r = h.leave(&[(&c_id, None)]);
    assert_eq!(r.members[0].error_code, 0);
    assert_eq!(h.must_join(jc).error_code, code(ErrorCode::UnknownMemberId));
    // The join phase cannot complete without a rejoined member; time still moves on,
    // and the silent static member's session ends it.
    h.advance(1_000);
    assert_eq!(h.g().state_name(), "PreparingRebalance");
    h.advance(i64::from(SESSION));
    assert_eq!(h.g().state_name(), "Empty");
    assert_eq!(h.last_metadata(GROUP).generation, 2);
}
