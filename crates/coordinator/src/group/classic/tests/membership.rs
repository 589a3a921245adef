//! Members coming and going: late joiners, expired sessions and syncs, LeaveGroup,
//! generation fencing, the group size limit, and a record too large to write.

use super::*;

#[test]
fn a_late_joiner_rebalances_the_group_and_old_members_rejoin() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a", "b"]);
    let (a, b) = (s.members[0].clone(), s.members[1].clone());
    let (c, jc) = h.new_member(&JoinArgs::new("c"));
    assert_eq!(h.g().state_name(), "PreparingRebalance");
    assert!(h.joined(jc).is_none());
    // The old members learn of it through their heartbeats.
    assert_eq!(
        h.heartbeat(&a, s.generation),
        code(ErrorCode::RebalanceInProgress)
    );
    assert_eq!(
        h.heartbeat(&b, s.generation),
        code(ErrorCode::RebalanceInProgress)
    );
    let ja = h.join(&JoinArgs::new("a").id(&a));
    assert!(h.joined(ja).is_none());
    // The last rejoin completes the phase at once (no initial delay now).
    let jb = h.join(&JoinArgs::new("b").id(&b));
    let (ra, rb, rc) = (h.must_join(ja), h.must_join(jb), h.must_join(jc));
    for r in [&ra, &rb, &rc] {
        assert_eq!((r.error_code, r.generation_id), (0, s.generation + 1));
        assert_eq!(r.leader, s.leader);
    }
    let leader_view = [&ra, &rb, &rc]
        .into_iter()
        .find(|r| r.member_id == s.leader)
        .map(|r| r.members.len());
    assert_eq!(leader_view, Some(3));
    assert_eq!(rc.member_id, c);
    assert_eq!(h.g().num_members(), 3);
}

#[test]
fn members_that_do_not_rejoin_in_time_are_removed() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a", "b"]);
    let (a, b) = (s.members[0].clone(), s.members[1].clone());
    // a rejoins (as the leader would for new topics); b keeps heartbeating but never
    // rejoins, so the rebalance timeout removes it.
    let ja = h.join(&JoinArgs::new("a").id(&a));
    for _ in 0..3 {
        h.advance(5_000);
        assert_eq!(
            h.heartbeat(&b, s.generation),
            code(ErrorCode::RebalanceInProgress)
        );
    }
    assert!(h.joined(ja).is_none());
    h.advance(i64::from(REBALANCE) - 15_000);
    let ra = h.must_join(ja);
    assert_eq!(
        (ra.generation_id, ra.leader.as_str()),
        (s.generation + 1, a.as_str())
    );
    assert_eq!(ra.members.len(), 1);
    assert!(!h.g().has_member(&b));
    assert_eq!(
        h.heartbeat(&b, s.generation),
        code(ErrorCode::UnknownMemberId)
    );
}

#[test]
fn an_expired_session_removes_the_member_and_rebalances() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a", "b"]);
    let (a, b) = (s.members[0].clone(), s.members[1].clone());
    // a heartbeats, b is silent.
    for _ in 0..3 {
        h.advance(3_000);
        assert_eq!(h.heartbeat(&a, s.generation), 0);
    }
    h.advance(999);
    assert!(h.g().has_member(&b));
    h.advance(1);
    assert!(!h.g().has_member(&b));
    assert_eq!(h.g().state_name(), "PreparingRebalance");
    assert_eq!(
        h.heartbeat(&a, s.generation),
        code(ErrorCode::RebalanceInProgress)
    );
    let ja = h.join(&JoinArgs::new("a").id(&a));
    let ra = h.must_join(ja);
    assert_eq!(
        (ra.generation_id, ra.leader.as_str()),
        (s.generation + 1, a.as_str())
    );
    assert_eq!(ra.members.len(), 1);
}

#[test]
fn a_member_that_never_syncs_is_removed_after_the_rebalance_timeout() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a", "b"]);
    let (a, b) = (s.members[0].clone(), s.members[1].clone());
    let ja = h.join(&JoinArgs::new("a").id(&a));
    let jb = h.join(&JoinArgs::new("b").id(&b));
    let (ra, rb) = (h.must_join(ja), h.must_join(jb));
    let generation = ra.generation_id;
    assert_eq!(rb.generation_id, generation);
    // Only a syncs; both keep heartbeating.
    let leader = ra.leader.clone();
    let other = if leader == a { b.clone() } else { a.clone() };
    let sl = h.sync(&leader, generation, &[(&leader, b"L")]);
    assert_eq!(h.must_sync(sl).assignment.as_ref(), b"L");
    // Both keep their sessions; only the sync phase runs out.
    for _ in 0..3 {
        h.advance(5_000);
        assert_eq!(h.heartbeat(&leader, generation), 0);
        assert_eq!(h.heartbeat(&other, generation), 0);
    }
    assert_eq!(h.g().state_name(), "Stable");
    h.advance(4_999);
    assert!(h.g().has_member(&other));
    h.advance(1);
    assert!(!h.g().has_member(&other));
    assert_eq!(h.g().state_name(), "PreparingRebalance");
    assert_eq!(
        h.heartbeat(&leader, generation),
        code(ErrorCode::RebalanceInProgress)
    );
}

#[test]
fn leave_group_batches_members_and_the_last_one_empties_the_group() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a", "b", "c"]);
    let (a, b, c) = (
        s.members[0].clone(),
        s.members[1].clone(),
        s.members[2].clone(),
    );
    let r = h.leave(&[(&a, None), ("ghost", None), (&b, Some("no-such-instance"))]);
    assert_eq!(r.error_code, 0);
    let codes: Vec<(String, i16)> = r
        .members
        .iter()
        .map(|m| (m.member_id.clone(), m.error_code))
        .collect();
    assert_eq!(
        codes,
        vec![
            (a.clone(), 0),
            ("ghost".to_string(), code(ErrorCode::UnknownMemberId)),
            (b.clone(), code(ErrorCode::UnknownMemberId)),
        ]
    );
    assert!(!h.g().has_member(&a) && h.g().has_member(&b));
    assert_eq!(h.g().state_name(), "PreparingRebalance");
    let jb = h.join(&JoinArgs::new("b").id(&b));
    let jc = h.join(&JoinArgs::new("c").id(&c));
    let (rb, rc) = (h.must_join(jb), h.must_join(jc));
    assert_eq!(
        (rb.generation_id, rc.generation_id),
        (s.generation + 1, s.generation + 1)
    );
    assert_ne!(rb.leader, a);

    // b leaves by LeaveGroup v1 (one member, its error at the top), then c by v3.
    let v1 = LeaveGroupRequest {
        group_id: GROUP.into(),
        member_id: b.clone(),
        ..Default::default()
    };
    let r = h.leave_request(1, v1.clone());
    assert_eq!(r.error_code, 0);
    assert!(r.members.is_empty());
    let r = h.leave_request(1, v1);
    assert_eq!(r.error_code, code(ErrorCode::UnknownMemberId));
    // b's departure restarted the join phase; c's JoinGroup answer is pending again.
    let jc = h.join(&JoinArgs::new("c").id(&c));
    assert_eq!(h.must_join(jc).generation_id, s.generation + 2);
    let r = h.leave(&[(&c, None)]);
    assert_eq!(r.members[0].error_code, 0);
    assert_eq!(h.g().state_name(), "Empty");
    assert_eq!(h.g().num_members(), 0);
    let v = h.last_metadata(GROUP);
    assert_eq!(v.generation, s.generation + 3);
    assert!(v.members.is_empty());
    assert_eq!(v.protocol, None);
    assert_eq!(v.protocol_type, "consumer");
    // Unknown groups and empty ids.
    let r = h.leave_request(
        5,
        LeaveGroupRequest {
            group_id: "nowhere".into(),
            ..Default::default()
        },
    );
    assert_eq!(r.error_code, code(ErrorCode::UnknownMemberId));
    let r = h.leave_request(5, LeaveGroupRequest::default());
    assert_eq!(r.error_code, code(ErrorCode::InvalidGroupId));
}

#[test]
fn a_waiting_join_of_a_member_that_leaves_is_answered_unknown_member() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a", "b"]);
    let (a, b) = (s.members[0].clone(), s.members[1].clone());
    let ja = h.join(&JoinArgs::new("a").id(&a));
    assert!(h.joined(ja).is_none());
    // A second JoinGroup from a replaces the first, which is answered.
    let ja2 = h.join(&JoinArgs::new("a").id(&a));
    assert_eq!(
        h.must_join(ja).error_code,
        code(ErrorCode::RebalanceInProgress)
    );
    let r = h.leave(&[(&a, None)]);
    assert_eq!(r.members[0].error_code, 0);
    let r = h.must_join(ja2);
    assert_eq!(
        (r.error_code, r.member_id.as_str()),
        (code(ErrorCode::UnknownMemberId), "")
    );
    // b alone is left; its rejoin completes the phase.
    let jb = h.join(&JoinArgs::new("b").id(&b));
    let rb = h.must_join(jb);
    assert_eq!(
        (rb.generation_id, rb.leader.as_str()),
        (s.generation + 1, b.as_str())
    );
}

#[test]
fn heartbeats_and_commits_are_fenced_by_generation() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a"]);
    let a = s.members[0].clone();
    assert_eq!(h.heartbeat(&a, s.generation), 0);
    assert_eq!(
        h.heartbeat(&a, s.generation - 1),
        code(ErrorCode::IllegalGeneration)
    );
    assert_eq!(
        h.heartbeat("nobody", s.generation),
        code(ErrorCode::UnknownMemberId)
    );
    assert_eq!(
        h.heartbeat_as("nowhere", &a, None, s.generation),
        code(ErrorCode::UnknownMemberId)
    );
    assert_eq!(
        h.heartbeat_as("", &a, None, s.generation),
        code(ErrorCode::InvalidGroupId)
    );

    assert_eq!(h.commit(&a, None, s.generation), 0);
    assert_eq!(
        h.commit(&a, None, s.generation + 1),
        code(ErrorCode::IllegalGeneration)
    );
    assert_eq!(
        h.commit("nobody", None, s.generation),
        code(ErrorCode::UnknownMemberId)
    );
    // No member and no generation: only an empty group takes it.
    assert_eq!(h.commit("", None, -1), code(ErrorCode::UnknownMemberId));
    // A group instance id the group does not know.
    assert_eq!(
        h.commit(&a, Some("i"), s.generation),
        code(ErrorCode::UnknownMemberId)
    );

    // Between the JoinGroup answer and the assignment: REBALANCE_IN_PROGRESS.
    let ja = h.join(&JoinArgs::new("a").id(&a));
    let ra = h.must_join(ja);
    assert_eq!(h.g().state_name(), "CompletingRebalance");
    assert_eq!(
        h.commit(&a, None, ra.generation_id),
        code(ErrorCode::RebalanceInProgress)
    );
    assert_eq!(
        h.commit(&a, None, s.generation),
        code(ErrorCode::IllegalGeneration)
    );
    assert_eq!(h.heartbeat(&a, ra.generation_id), 0);

    // A transactional commit is not held back by the rebalance (Kafka's
    // `validateOffsetCommit` with `isTransactional`): Streams commits its transaction with
    // the group metadata it has, and a refusal would abort it.
    assert_eq!(h.txn_commit(&a, None, ra.generation_id), 0);
    assert_eq!(
        h.txn_commit(&a, None, s.generation),
        code(ErrorCode::IllegalGeneration)
    );
    assert_eq!(
        h.txn_commit("nobody", None, ra.generation_id),
        code(ErrorCode::UnknownMemberId)
    );
    // Naming no member (TxnOffsetCommit before v3, or a producer given no group
    // metadata) is accepted while the group has members.
    assert_eq!(h.txn_commit("", None, -1), 0);

    // Once the group is empty, a commit outside any generation is taken.
    let r = h.leave(&[(&a, None)]);
    assert_eq!(r.members[0].error_code, 0);
    assert_eq!(h.g().state_name(), "Empty");
    assert_eq!(h.commit("", None, -1), 0);
    assert_eq!(
        h.heartbeat(&a, ra.generation_id),
        code(ErrorCode::UnknownMemberId)
    );
}

#[test]
fn the_group_size_limit_refuses_new_members() {
    let mut h = H::with_config(GroupCoordinatorConfig {
        classic_initial_rebalance_delay_ms: DELAY,
        classic_group_max_size: 2,
        ..Default::default()
    });
    let s = stable_group(&mut h, &["a", "b"]);
    let third = h.join(&JoinArgs::new("c").version(3));
    let r = h.must_join(third);
    assert_eq!(
        (r.error_code, r.member_id.as_str()),
        (code(ErrorCode::GroupMaxSizeReached), "")
    );
    assert_eq!(h.g().num_members(), 2);
    assert_eq!(h.g().state_name(), "Stable");
    // Known members still rejoin.
    let ja = h.join(&JoinArgs::new("a").id(&s.members[0]));
    assert!(h.joined(ja).is_none());
    assert_eq!(h.g().state_name(), "PreparingRebalance");
}

#[test]
fn an_assignment_too_large_to_write_fails_the_sync_and_rebalances() {
    let mut h = H::new();
    let small = stable_group(&mut h, &["a"]);
    let small_before = h.g().clone();
    let records_before = h.records.len();

    // 10 MB of protocol metadata: the join phase works, the record cannot be written.
    let huge = Bytes::from(vec![7u8; 10 * 1024 * 1024]);
    let big = JoinArgs::new("x")
        .group("big")
        .protocols(&[("range", huge.clone())]);
    let (x, jx) = h.new_member(&big);
    h.advance(i64::from(DELAY));
    let rx = h.must_join(jx);
    assert_eq!((rx.error_code, rx.generation_id), (0, 1));
    assert_eq!(rx.members[0].metadata.len(), huge.len());
    let sx = h.sync_as("big", &x, None, 1, &[(&x, b"X")]);
    let sx = h.must_sync(sx);
    assert_eq!(sx.error_code, code(ErrorCode::UnknownServerError));
    assert!(sx.assignment.is_empty());
    // Only the big group's creation was written since.
    let written: Vec<Option<GroupMetadataValue>> = h.metadata_records("big");
    assert_eq!(written.len(), 1);
    assert_eq!(written[0].as_ref().map(|v| v.generation), Some(0));
    assert_eq!(h.records.len(), records_before + 1);
    let g = h.group("big");
    assert_eq!(g.state_name(), "PreparingRebalance");
    assert!(g.member(&x).is_some_and(|m| m.assignment().is_empty()));
    assert_eq!(
        h.heartbeat_as("big", &x, None, 1),
        code(ErrorCode::RebalanceInProgress)
    );

    // The other group is untouched.
    let g = h.g();
    assert_eq!(g.state_name(), "Stable");
    assert_eq!(g.generation_id(), small_before.generation_id());
    assert_eq!(g.leader_id(), Some(small.leader.as_str()));
    let assignment = g.member(&small.members[0]).map(|m| m.assignment().clone());
    assert_eq!(
        assignment.as_deref(),
        Some(Stable::assignment(0).as_slice())
    );
    assert_eq!(h.heartbeat(&small.members[0], small.generation), 0);
}

#[test]
fn unloading_answers_parked_requests_not_coordinator() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a", "b"]);
    let (a, b) = (s.members[0].clone(), s.members[1].clone());
    let ja = h.join(&JoinArgs::new("a").id(&a));
    let jb = h.join(&JoinArgs::new("b").id(&b));
    let rb = h.must_join(jb);
    assert!(h.joined(ja).is_some());
    // b waits for the leader's assignment; a new group waits in its initial delay.
    let sb = h.sync(&b, rb.generation_id, &[]);
    let (_, jx) = h.new_member(&JoinArgs::new("x").group("other"));
    assert!(h.synced(sb).is_none() && h.joined(jx).is_none());
    h.shard.classic_on_unloaded(h.now);
    h.advance(0);
    assert_eq!(h.must_sync(sb).error_code, code(ErrorCode::NotCoordinator));
    assert_eq!(h.must_join(jx).error_code, code(ErrorCode::NotCoordinator));
    assert_eq!(h.g().state_name(), "Dead");
    assert_eq!(
        h.heartbeat(&a, rb.generation_id),
        code(ErrorCode::CoordinatorNotAvailable)
    );
    let r = h.join(&JoinArgs::new("a").id(&a));
    assert_eq!(
        h.must_join(r).error_code,
        code(ErrorCode::CoordinatorNotAvailable)
    );
}

#[test]
fn an_offset_commit_counts_as_a_heartbeat_in_a_stable_group() {
    let mut h = H::new();
    let s = stable_group(&mut h, &["a", "b"]);
    let (a, b) = (s.members[0].clone(), s.members[1].clone());
    // a only commits, b only heartbeats: both stay past several session timeouts.
    for _ in 0..6 {
        h.advance(3_000);
        assert_eq!(h.commit(&a, None, s.generation), 0);
        assert_eq!(h.heartbeat(&b, s.generation), 0);
    }
    assert!(h.g().has_member(&a) && h.g().has_member(&b));
    assert_eq!(h.g().state_name(), "Stable");
}
