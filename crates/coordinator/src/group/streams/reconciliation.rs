//! A member's step toward its target assignment (Kafka's streams `CurrentAssignmentBuilder`):
//! tasks leaving the member are revoked first, and the member stays at its epoch until it
//! reports them gone; tasks joining it are given once no other member runs them (an active
//! task elsewhere, or on this member's process as a standby or warm-up), so no task ever
//! runs twice.
//!
//! Role changes in place (Kafka's `demoteActiveTasksToStandby`, `convertReplicaRole`,
//! `applyPromotionsToActive`) are not made: a task changing role on one member is revoked in
//! its old role and given in its new one, which is safe and one heartbeat slower.

use super::group::{
    StreamsGroup, StreamsGroupMember, TargetTasks, Tasks, TasksTuple, TasksWithEpochs,
};
use crate::group::consumer::MemberState;

/// What the member reported owning (`None`: it did not say in this heartbeat).
pub type OwnedTasks = Option<TasksTuple>;

/// Kafka's `CurrentAssignmentBuilder.build`; `None` when a member in a state a newer
/// coordinator wrote still owns tasks: it is fenced.
pub fn reconcile(
    group: &StreamsGroup,
    member: &StreamsGroupMember,
    target_epoch: i32,
    target: &TargetTasks,
    owned: &OwnedTasks,
) -> Option<StreamsGroupMember> {
    match member.state {
        MemberState::Stable if member.member_epoch == target_epoch => Some(member.clone()),
        MemberState::Stable | MemberState::UnreleasedPartitions => Some(next(
            group,
            member,
            member.member_epoch,
            target_epoch,
            target,
            owned,
        )),
        MemberState::UnrevokedPartitions => {
            if not_released(owned, &member.pending_revocation) {
                Some(member.clone())
            } else {
                Some(next(
                    group,
                    member,
                    member.member_epoch + 1,
                    target_epoch,
                    target,
                    owned,
                ))
            }
        }
        MemberState::Unknown => {
            if owned.as_ref().is_none_or(|o| !o.is_empty()) {
                return None;
            }
            Some(next(
                group,
                member,
                target_epoch,
                target_epoch,
                target,
                owned,
            ))
        }
    }
}

/// Kafka's `hasNotReleased`: without a report the tasks count as still held.
fn not_released(owned: &OwnedTasks, pending: &TasksTuple) -> bool {
    owned.as_ref().is_none_or(|o| o.contains_any(pending))
}

fn next(
    group: &StreamsGroup,
    member: &StreamsGroupMember,
    member_epoch: i32,
    target_epoch: i32,
    target: &TargetTasks,
    owned: &OwnedTasks,
) -> StreamsGroupMember {
    let mut unreleased = false;
    let me = member.member_id.as_str();
    let process = member.process_id.as_str();
    // Active tasks keep their epochs; new ones are stamped with the target epoch.
    let mut active_kept = TasksWithEpochs::new();
    let mut active_revoke = TasksWithEpochs::new();
    let mut active_add = TasksWithEpochs::new();
    for (s, ps) in &member.assigned.active {
        for (p, e) in ps {
            let dst = if target.active.get(s).is_some_and(|t| t.contains(p)) {
                &mut active_kept
            } else {
                &mut active_revoke
            };
            dst.entry(s.clone()).or_default().insert(*p, *e);
        }
    }
    for (s, ps) in &target.active {
        for p in ps {
            if active_kept.get(s).is_some_and(|k| k.contains_key(p)) {
                continue;
            }
            let busy =
                group.active_owner(s, *p, me) || group.replica_held_on_process(s, *p, process, me);
            if busy {
                unreleased = true;
            } else {
                active_add
                    .entry(s.clone())
                    .or_default()
                    .insert(*p, target_epoch);
            }
        }
    }
    let mut replicas = |current: &Tasks, wanted: &Tasks| {
        let (mut kept, mut revoke, mut add) = (Tasks::new(), Tasks::new(), Tasks::new());
        for (s, ps) in current {
            for p in ps {
                let dst = if wanted.get(s).is_some_and(|t| t.contains(p)) {
                    &mut kept
                } else {
                    &mut revoke
                };
                dst.entry(s.clone()).or_default().insert(*p);
            }
        }
        for (s, ps) in wanted {
            for p in ps {
                if kept.get(s).is_some_and(|k| k.contains(p)) {
                    continue;
                }
                // Not next to the active task on this process, nor twice on it.
                let busy = member
                    .assigned
                    .active
                    .get(s)
                    .is_some_and(|a| a.contains_key(p))
                    || group.replica_held_on_process(s, *p, process, me)
                    || group.members.values().any(|m| {
                        m.member_id != me
                            && m.process_id == process
                            && m.assigned.active.get(s).is_some_and(|a| a.contains_key(p))
                    });
                if busy {
                    unreleased = true;
                } else {
                    add.entry(s.clone()).or_default().insert(*p);
                }
            }
        }
        (kept, revoke, add)
    };
    let (standby_kept, standby_revoke, standby_add) =
        replicas(&member.assigned.standby, &target.standby);
    let (warmup_kept, warmup_revoke, warmup_add) =
        replicas(&member.assigned.warmup, &target.warmup);

    let revoke = TasksTuple {
        active: active_revoke,
        standby: standby_revoke,
        warmup: warmup_revoke,
    };
    let kept = TasksTuple {
        active: active_kept,
        standby: standby_kept,
        warmup: warmup_kept,
    };
    let add = TasksTuple {
        active: active_add,
        standby: standby_add,
        warmup: warmup_add,
    };
    let mut out = member.clone();
    let set_epoch = |out: &mut StreamsGroupMember, e: i32| {
        if out.member_epoch != e {
            out.previous_member_epoch = out.member_epoch;
            out.member_epoch = e;
        }
    };
    if !revoke.is_empty() && not_released(owned, &revoke) {
        out.state = MemberState::UnrevokedPartitions;
        set_epoch(&mut out, member_epoch);
        out.assigned = kept;
        out.pending_revocation = revoke;
        return out;
    }
    out.state = if unreleased {
        MemberState::UnreleasedPartitions
    } else {
        MemberState::Stable
    };
    set_epoch(&mut out, target_epoch);
    let mut merged = kept;
    for (s, ps) in add.active {
        merged.active.entry(s).or_default().extend(ps);
    }
    for (s, ps) in add.standby {
        merged.standby.entry(s).or_default().extend(ps);
    }
    for (s, ps) in add.warmup {
        merged.warmup.entry(s).or_default().extend(ps);
    }
    out.assigned = merged;
    out.pending_revocation = TasksTuple::default();
    out
}
