//! The role-change cases of Kafka's streams `CurrentAssignmentBuilderTest`: promotions,
//! demotions and standby/warm-up conversions happen in place on one member, and wait (or fall
//! back to a revocation) while another member still holds the task.

use std::collections::BTreeMap;

use super::{reconcile, OwnedTasks};
use crate::group::consumer::MemberState;
use crate::group::streams::group::{
    StreamsGroup, StreamsGroupMember, TargetTasks, Tasks, TasksTuple, TasksWithEpochs,
};

const S: &str = "subtopology1";
const PROCESS: &str = "process";
const EPOCH: i32 = 10;

fn task0() -> Tasks {
    Tasks::from([(S.to_string(), [0].into())])
}

fn active0(epoch: i32) -> TasksWithEpochs {
    TasksWithEpochs::from([(S.to_string(), BTreeMap::from([(0, epoch)]))])
}

fn member(id: &str, process: &str, state: MemberState, assigned: TasksTuple) -> StreamsGroupMember {
    let mut m = StreamsGroupMember::new(id.to_string());
    m.process_id = process.to_string();
    m.state = state;
    m.member_epoch = EPOCH;
    m.previous_member_epoch = EPOCH;
    m.assigned = assigned;
    m
}

fn group(members: &[&StreamsGroupMember]) -> StreamsGroup {
    let mut g = StreamsGroup::new("g".to_string());
    for m in members {
        g.members.insert(m.member_id.clone(), (*m).clone());
    }
    g
}

fn standby_only() -> TasksTuple {
    TasksTuple {
        standby: task0(),
        ..Default::default()
    }
}

fn warmup_only() -> TasksTuple {
    TasksTuple {
        warmup: task0(),
        ..Default::default()
    }
}

fn active_only(epoch: i32) -> TasksTuple {
    TasksTuple {
        active: active0(epoch),
        ..Default::default()
    }
}

fn target_active() -> TargetTasks {
    TargetTasks {
        active: task0(),
        ..Default::default()
    }
}

fn target_standby() -> TargetTasks {
    TargetTasks {
        standby: task0(),
        ..Default::default()
    }
}

fn step(
    g: &StreamsGroup,
    m: &StreamsGroupMember,
    target: &TargetTasks,
    owned: OwnedTasks,
) -> StreamsGroupMember {
    reconcile(g, m, EPOCH + 1, target, &owned).expect("a known state")
}

#[test]
fn a_standby_is_promoted_in_place_once_the_active_is_free() {
    let m = member("m", PROCESS, MemberState::Stable, standby_only());
    let next = step(&group(&[&m]), &m, &target_active(), None);
    assert_eq!(next.state, MemberState::Stable);
    assert_eq!(next.member_epoch, EPOCH + 1);
    assert_eq!(next.assigned, active_only(EPOCH + 1));
    assert!(next.pending_revocation.is_empty());
}

#[test]
fn a_warmup_is_promoted_in_place_once_the_active_is_free() {
    let m = member("m", PROCESS, MemberState::Stable, warmup_only());
    let next = step(&group(&[&m]), &m, &target_active(), None);
    assert_eq!(next.state, MemberState::Stable);
    assert_eq!(next.assigned, active_only(EPOCH + 1));
}

#[test]
fn a_promoted_standby_is_kept_while_another_member_runs_the_active() {
    let m = member("m", PROCESS, MemberState::Stable, standby_only());
    let owner = member(
        "other",
        "other-process",
        MemberState::Stable,
        active_only(EPOCH),
    );
    let next = step(&group(&[&m, &owner]), &m, &target_active(), None);
    assert_eq!(next.state, MemberState::UnreleasedPartitions);
    assert_eq!(next.member_epoch, EPOCH + 1);
    assert_eq!(next.assigned, standby_only());
    assert!(next.pending_revocation.is_empty());
}

#[test]
fn no_active_while_another_member_of_the_process_holds_the_standby() {
    let m = member("m", PROCESS, MemberState::Stable, TasksTuple::default());
    let sibling = member("sibling", PROCESS, MemberState::Stable, standby_only());
    let next = step(&group(&[&m, &sibling]), &m, &target_active(), None);
    assert_eq!(next.state, MemberState::UnreleasedPartitions);
    assert!(next.assigned.is_empty());
}

#[test]
fn an_active_is_demoted_to_standby_in_place_and_its_release_awaited() {
    let m = member("m", PROCESS, MemberState::Stable, active_only(EPOCH));
    let g = group(&[&m]);
    let next = step(&g, &m, &target_standby(), None);
    assert_eq!(next.state, MemberState::UnrevokedPartitions);
    assert_eq!(next.member_epoch, EPOCH);
    assert_eq!(next.assigned, standby_only());
    assert_eq!(next.pending_revocation, active_only(EPOCH));

    // The member reports the task as a standby only: the demotion is complete.
    let g = group(&[&next]);
    let done = step(&g, &next, &target_standby(), Some(standby_only()));
    assert_eq!(done.state, MemberState::Stable);
    assert_eq!(done.member_epoch, EPOCH + 1);
    assert_eq!(done.assigned, standby_only());
    assert!(done.pending_revocation.is_empty());
}

#[test]
fn no_demotion_in_place_while_another_member_of_the_process_holds_the_standby() {
    let m = member("m", PROCESS, MemberState::Stable, active_only(EPOCH));
    let sibling = member("sibling", PROCESS, MemberState::Stable, standby_only());
    let next = step(&group(&[&m, &sibling]), &m, &target_standby(), None);
    assert_eq!(next.state, MemberState::UnrevokedPartitions);
    assert!(next.assigned.is_empty());
    assert_eq!(next.pending_revocation, active_only(EPOCH));
}

#[test]
fn standby_and_warmup_convert_into_each_other_in_place() {
    let m = member("m", PROCESS, MemberState::Stable, standby_only());
    let to_warmup = TargetTasks {
        warmup: task0(),
        ..Default::default()
    };
    let next = step(&group(&[&m]), &m, &to_warmup, None);
    assert_eq!(next.state, MemberState::Stable);
    assert_eq!(next.assigned, warmup_only());
    assert!(next.pending_revocation.is_empty());

    let m = member("m", PROCESS, MemberState::Stable, warmup_only());
    let next = step(&group(&[&m]), &m, &target_standby(), None);
    assert_eq!(next.state, MemberState::Stable);
    assert_eq!(next.assigned, standby_only());
}

#[test]
fn a_standby_is_revoked_normally_when_a_sibling_holds_the_warmup() {
    let m = member("m", PROCESS, MemberState::Stable, standby_only());
    let sibling = member("sibling", PROCESS, MemberState::Stable, warmup_only());
    let to_warmup = TargetTasks {
        warmup: task0(),
        ..Default::default()
    };
    let next = step(&group(&[&m, &sibling]), &m, &to_warmup, None);
    assert_eq!(next.state, MemberState::UnrevokedPartitions);
    assert!(next.assigned.is_empty());
    assert_eq!(next.pending_revocation, standby_only());
}

#[test]
fn kept_active_tasks_keep_their_epoch_and_new_ones_get_the_target_epoch() {
    let mut assigned = active_only(3);
    assigned.active.get_mut(S).expect("s").insert(1, 7);
    let m = member("m", PROCESS, MemberState::Stable, assigned);
    let target = TargetTasks {
        active: Tasks::from([(S.to_string(), [0, 1, 2].into())]),
        ..Default::default()
    };
    let next = step(&group(&[&m]), &m, &target, None);
    assert_eq!(
        next.assigned.active,
        TasksWithEpochs::from([(
            S.to_string(),
            BTreeMap::from([(0, 3), (1, 7), (2, EPOCH + 1)])
        )])
    );
}
