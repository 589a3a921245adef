//! Joining, incremental reconciliation and leaving, with the single-owner check after
//! every step.

use kraftd_protocol::ErrorCode;

use super::*;
use crate::group::consumer::member::MemberState;

#[test]
fn one_member_gets_every_partition() {
    let mut h = Harness::new(&[("t", 6)]);
    let r = h.join("m1", &["t"]);
    assert_eq!(error(&r), ErrorCode::None);
    assert_eq!(r.member_id.as_deref(), Some("m1"));
    assert_eq!(r.member_epoch, 1);
    assert_eq!(r.heartbeat_interval_ms, 5_000);
    assert_eq!(assigned(&r, "t"), Some(vec![0, 1, 2, 3, 4, 5]));
    let g = h.group();
    assert_eq!((g.group_epoch, g.assignment_epoch), (1, 1));
    assert_eq!(g.state_name(), "Stable");
    // A plain heartbeat carries no assignment.
    let r = h.beat("m1", 1);
    assert_eq!(error(&r), ErrorCode::None);
    assert_eq!(r.member_epoch, 1);
    assert!(r.assignment.is_none());
    // Nothing changed: nothing written.
    let before = h.log.len();
    h.beat("m1", 1);
    assert_eq!(h.log.len(), before);
}

/// m1 owns everything; m2 joins.
fn two_members() -> Harness {
    let mut h = Harness::new(&[("t", 6)]);
    h.join("m1", &["t"]);
    let r = h.join("m2", &["t"]);
    assert_eq!(r.member_epoch, 2);
    // The target gives m2 half, but m1 still owns it: m2 waits.
    assert_eq!(assigned(&r, "t"), Some(vec![]));
    assert_eq!(
        h.group().member("m2").unwrap().state,
        MemberState::UnreleasedPartitions
    );
    assert_eq!(h.group().state_name(), "Reconciling");
    h
}

#[test]
fn a_partition_moves_only_after_its_owner_revoked_it() {
    let mut h = two_members();
    let target = h.group().target_assignment.clone();
    assert_eq!(target["m1"][&tid("t")], [0, 1, 2].into());
    assert_eq!(target["m2"][&tid("t")], [3, 4, 5].into());

    // m1 is asked to revoke 3..5 and stays in epoch 1 until it has.
    let r = h.beat("m1", 1);
    assert_eq!(r.member_epoch, 1);
    assert_eq!(assigned(&r, "t"), Some(vec![0, 1, 2]));
    let m1 = h.group().member("m1").unwrap();
    assert_eq!(m1.state, MemberState::UnrevokedPartitions);
    assert_eq!(m1.pending_revocation[&tid("t")].len(), 3);

    // m2 still gets nothing: m1 has not acknowledged.
    let r = h.beat("m2", 2);
    assert_eq!(r.member_epoch, 2);
    assert!(r.assignment.is_none());
    assert!(h.owned("m2", "t").is_empty());

    // m1 acknowledges (it reports 0..2 only): it moves to epoch 2.
    let r = h.beat("m1", 1);
    assert_eq!(r.member_epoch, 2);
    assert!(r.assignment.is_none());
    assert_eq!(h.group().member("m1").unwrap().state, MemberState::Stable);

    // Now m2 gets its partitions.
    let r = h.beat("m2", 2);
    assert_eq!(r.member_epoch, 2);
    assert_eq!(assigned(&r, "t"), Some(vec![3, 4, 5]));
    assert_eq!(h.group().state_name(), "Stable");
    assert_eq!(h.owned("m1", "t"), [0, 1, 2]);
}

#[test]
fn the_remaining_member_gets_everything_after_a_leave() {
    let mut h = two_members();
    h.beat("m1", 1);
    h.beat("m1", 1);
    h.beat("m2", 2);
    let mut leave = beat_request("m2", -1, &Default::default());
    leave.topic_partitions = None;
    let r = h.heartbeat(leave);
    assert_eq!(error(&r), ErrorCode::None);
    assert_eq!((r.member_id.as_deref(), r.member_epoch), (Some("m2"), -1));
    h.forget("m2");
    let g = h.group();
    assert!(g.member("m2").is_none());
    assert_eq!(g.group_epoch, 3);
    let r = h.beat("m1", 2);
    assert_eq!(r.member_epoch, 3);
    assert_eq!(assigned(&r, "t"), Some(vec![0, 1, 2, 3, 4, 5]));
    assert_eq!(h.group().state_name(), "Stable");
    // A member that left is unknown.
    let r = h.beat("m2", 2);
    assert_eq!(error(&r), ErrorCode::UnknownMemberId);
}

#[test]
fn fenced_member_epoch_for_an_epoch_the_member_does_not_have() {
    let mut h = two_members();
    h.beat("m1", 1);
    h.beat("m1", 1); // m1: epoch 2, previous 1
    let r = h.beat("m1", 3);
    assert_eq!(error(&r), ErrorCode::FencedMemberEpoch);
    assert_eq!(r.member_id, None);
    let r = h.beat("m2", 1);
    assert_eq!(error(&r), ErrorCode::FencedMemberEpoch);
    // The previous epoch is accepted while the member owns no more than its assignment
    // (the response with the new epoch may have been lost).
    let r = h.beat("m1", 1);
    assert_eq!((error(&r), r.member_epoch), (ErrorCode::None, 2));
    let mut too_much = beat_request("m1", 1, &[(tid("t"), 5)].into());
    too_much.rebalance_timeout_ms = -1;
    assert_eq!(error(&h.heartbeat(too_much)), ErrorCode::FencedMemberEpoch);
}

#[test]
fn dropping_a_topic_revokes_it_at_the_same_epoch() {
    let mut h = Harness::new(&[("t", 2), ("u", 2)]);
    let r = h.join("m1", &["t", "u"]);
    assert_eq!(assigned(&r, "u"), Some(vec![0, 1]));
    let mut change = beat_request("m1", 1, &h.client_owned["m1"].clone());
    change.subscribed_topic_names = Some(vec!["t".into()]);
    let r = h.heartbeat(change);
    assert_eq!(r.member_epoch, 1);
    assert_eq!(assigned(&r, "t"), Some(vec![0, 1]));
    assert_eq!(assigned(&r, "u"), Some(vec![]));
    assert_eq!(h.group().group_epoch, 2);
    let r = h.beat("m1", 1);
    assert_eq!(r.member_epoch, 2);
    let m = h.group().member("m1").unwrap();
    assert_eq!(m.state, MemberState::Stable);
    assert!(!m.assigned.contains_key(&tid("u")));
}

#[test]
fn range_is_used_when_the_members_ask_for_it() {
    let mut h = Harness::new(&[("a", 4), ("b", 4)]);
    let mut j = join_request("m1", &["a", "b"]);
    j.server_assignor = Some("range".into());
    h.heartbeat(j);
    let mut j = join_request("m2", &["a", "b"]);
    j.server_assignor = Some("range".into());
    h.heartbeat(j);
    let t = &h.group().target_assignment;
    assert_eq!(t["m1"][&tid("a")], [0, 1].into());
    assert_eq!(t["m1"][&tid("b")], [0, 1].into());
    assert_eq!(t["m2"][&tid("a")], [2, 3].into());
    assert_eq!(t["m2"][&tid("b")], [2, 3].into());
    let ShardResponse::ConsumerGroupDescribe(d) =
        h.request(ShardRequest::ConsumerGroupDescribe(vec![GROUP.into()]))
    else {
        panic!()
    };
    assert_eq!(d[0].assignor_name, "range");
}

#[test]
fn many_members_converge_with_single_owners() {
    let mut h = Harness::new(&[("a", 7), ("b", 5)]);
    let members = ["m1", "m2", "m3", "m4"];
    for m in members {
        h.join(m, &["a", "b"]);
        for _ in 0..3 {
            for other in members {
                if h.group().member(other).is_some() {
                    let e = h.member_epoch(other);
                    h.beat(other, e);
                }
            }
        }
    }
    let g = h.group();
    assert_eq!(g.state_name(), "Stable");
    let mut counts: Vec<usize> = members
        .iter()
        .map(|m| {
            g.member(m)
                .unwrap()
                .assigned
                .values()
                .map(|p| p.len())
                .sum()
        })
        .collect();
    counts.sort();
    assert_eq!(counts, [3, 3, 3, 3]);
    let total: usize = h.client_owned.values().map(|o| o.len()).sum();
    assert_eq!(total, 12);
}
