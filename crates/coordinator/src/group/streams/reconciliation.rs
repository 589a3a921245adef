//! A member's step toward its target assignment (Kafka's streams `CurrentAssignmentBuilder`):
//! tasks leaving the member are revoked first, and the member stays at its epoch until it
//! reports them gone; tasks joining it are given once no other member runs them (an active
//! task anywhere, or the same task on this member's process in any role), so no task ever
//! runs twice.
//!
//! Role changes on one member happen in place, as Kafka's: an active task demoted to a
//! standby keeps its state as the standby at once (the active half is still revoked, so its
//! next owner waits for the release); a standby becomes a warm-up and back without a
//! revocation; a standby or warm-up promoted to active stays until the active task is
//! granted and is then replaced by it in the same step, so the client recycles the state
//! store instead of restoring it (KAFKA-9501).

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
    let process = member.process_id.as_str();
    let current = &member.assigned;
    let holds = |t: &Tasks, s: &str, p: i32| t.get(s).is_some_and(|ps| ps.contains(&p));
    let runs = |s: &str, p: i32| current.active.get(s).is_some_and(|ps| ps.contains_key(&p));
    // Kafka's `isUnreleasedActiveTask`, `isUnreleasedStandbyTask`, `isUnreleasedWarmupTask`:
    // the member's own task in another role is a candidate for an in-place change, not a
    // blocker.
    let active_process = |s: &str, p: i32| group.current_active_task_process(s, p);
    let unreleased_active = |s: &str, p: i32| {
        active_process(s, p).is_some()
            || (group.standby_held_on_process(s, p, process) && !holds(&current.standby, s, p))
            || (group.warmup_held_on_process(s, p, process) && !holds(&current.warmup, s, p))
    };
    let unreleased_standby = |s: &str, p: i32| {
        (active_process(s, p) == Some(process) && !runs(s, p))
            || group.standby_held_on_process(s, p, process)
            || (group.warmup_held_on_process(s, p, process) && !holds(&current.warmup, s, p))
    };
    let unreleased_warmup = |s: &str, p: i32| {
        active_process(s, p) == Some(process)
            || (group.standby_held_on_process(s, p, process) && !holds(&current.standby, s, p))
            || group.warmup_held_on_process(s, p, process)
    };

    let mut active = difference_with_epochs(
        &current.active,
        &target.active,
        target_epoch,
        &unreleased_active,
    );
    let mut standby = difference(&current.standby, &target.standby, &unreleased_standby);
    let mut warmup = difference(&current.warmup, &target.warmup, &unreleased_warmup);
    let has_unreleased = active.unreleased || standby.unreleased || warmup.unreleased;

    // Kafka's `demoteActiveTasksToStandby`: the standby is granted now; the active half stays
    // pending revocation.
    for (s, ps) in &current.active {
        for p in ps.keys() {
            if remove(&mut standby.to_assign, s, *p) {
                insert(&mut standby.kept, s, *p);
            }
        }
    }
    // Kafka's `convertReplicaRole`, standby → warm-up and warm-up → standby.
    for (s, ps) in &current.standby {
        for p in ps {
            if remove(&mut warmup.to_assign, s, *p) {
                insert(&mut warmup.kept, s, *p);
                remove(&mut standby.to_revoke, s, *p);
            }
        }
    }
    for (s, ps) in &current.warmup {
        for p in ps {
            if remove(&mut standby.to_assign, s, *p) {
                insert(&mut standby.kept, s, *p);
                remove(&mut warmup.to_revoke, s, *p);
            }
        }
    }
    // Kafka's `applyPromotionsToActive`: a standby or warm-up promoted to active needs no
    // revocation; it is kept until the active task is granted in a step.
    let promoted = |s: &str, p: i32| holds(&target.active, s, p);
    for (s, ps) in &current.standby {
        for p in ps.iter().filter(|p| promoted(s, **p)) {
            remove(&mut standby.to_revoke, s, *p);
        }
    }
    for (s, ps) in &current.warmup {
        for p in ps.iter().filter(|p| promoted(s, **p)) {
            remove(&mut warmup.to_revoke, s, *p);
        }
    }
    let revoke = TasksTuple {
        active: active.to_revoke,
        standby: standby.to_revoke,
        warmup: warmup.to_revoke,
    };
    let must_revoke = !revoke.is_empty() && not_released(owned, &revoke);
    let granted = |s: &str, p: i32| {
        !must_revoke
            && active
                .to_assign
                .get(s)
                .is_some_and(|ps| ps.contains_key(&p))
    };
    for (s, ps) in &current.standby {
        for p in ps.iter().filter(|p| promoted(s, **p) && !granted(s, **p)) {
            insert(&mut standby.kept, s, *p);
        }
    }
    for (s, ps) in &current.warmup {
        for p in ps.iter().filter(|p| promoted(s, **p) && !granted(s, **p)) {
            insert(&mut warmup.kept, s, *p);
        }
    }

    // Kafka's `buildNewMember`.
    let mut out = member.clone();
    let set_epoch = |out: &mut StreamsGroupMember, e: i32| {
        if out.member_epoch != e {
            out.previous_member_epoch = out.member_epoch;
            out.member_epoch = e;
        }
    };
    let mut assigned = TasksTuple {
        active: std::mem::take(&mut active.kept),
        standby: standby.kept,
        warmup: warmup.kept,
    };
    if must_revoke {
        out.state = MemberState::UnrevokedPartitions;
        set_epoch(&mut out, member_epoch);
        out.assigned = assigned;
        out.pending_revocation = revoke;
        return out;
    }
    out.state = if has_unreleased {
        MemberState::UnreleasedPartitions
    } else {
        MemberState::Stable
    };
    set_epoch(&mut out, target_epoch);
    for (s, ps) in active.to_assign {
        assigned.active.entry(s).or_default().extend(ps);
    }
    for (s, ps) in standby.to_assign {
        assigned.standby.entry(s).or_default().extend(ps);
    }
    for (s, ps) in warmup.to_assign {
        assigned.warmup.entry(s).or_default().extend(ps);
    }
    out.assigned = assigned;
    out.pending_revocation = TasksTuple::default();
    out
}

/// One role's current tasks against its target (Kafka's `computeAssignmentDifference`).
struct Difference<T> {
    /// In both: kept.
    kept: T,
    /// Current, not in the target: to revoke.
    to_revoke: T,
    /// In the target, not current, and free: to assign now.
    to_assign: T,
    /// Some target task is not free yet.
    unreleased: bool,
}

fn difference(
    current: &Tasks,
    target: &Tasks,
    unreleased: &dyn Fn(&str, i32) -> bool,
) -> Difference<Tasks> {
    let mut d = Difference {
        kept: Tasks::new(),
        to_revoke: Tasks::new(),
        to_assign: Tasks::new(),
        unreleased: false,
    };
    for (s, ps) in current {
        for p in ps {
            let dst = if holds_task(target, s, *p) {
                &mut d.kept
            } else {
                &mut d.to_revoke
            };
            insert(dst, s, *p);
        }
    }
    for (s, ps) in target {
        for p in ps.iter().filter(|p| !holds_task(current, s, **p)) {
            if unreleased(s, *p) {
                d.unreleased = true;
            } else {
                insert(&mut d.to_assign, s, *p);
            }
        }
    }
    d
}

/// As [`difference`] for active tasks, which carry the epoch they were assigned at: kept
/// and revoked tasks keep theirs, new ones get the target epoch.
fn difference_with_epochs(
    current: &TasksWithEpochs,
    target: &Tasks,
    target_epoch: i32,
    unreleased: &dyn Fn(&str, i32) -> bool,
) -> Difference<TasksWithEpochs> {
    let mut d = Difference {
        kept: TasksWithEpochs::new(),
        to_revoke: TasksWithEpochs::new(),
        to_assign: TasksWithEpochs::new(),
        unreleased: false,
    };
    for (s, ps) in current {
        for (p, e) in ps {
            let dst = if holds_task(target, s, *p) {
                &mut d.kept
            } else {
                &mut d.to_revoke
            };
            dst.entry(s.clone()).or_default().insert(*p, *e);
        }
    }
    for (s, ps) in target {
        for p in ps {
            if current.get(s).is_some_and(|c| c.contains_key(p)) {
                continue;
            }
            if unreleased(s, *p) {
                d.unreleased = true;
            } else {
                d.to_assign
                    .entry(s.clone())
                    .or_default()
                    .insert(*p, target_epoch);
            }
        }
    }
    d
}

fn holds_task(tasks: &Tasks, s: &str, p: i32) -> bool {
    tasks.get(s).is_some_and(|ps| ps.contains(&p))
}

fn insert(tasks: &mut Tasks, s: &str, p: i32) {
    tasks.entry(s.to_string()).or_default().insert(p);
}

/// Removes one task, dropping its subtopology when it empties: whether it was there.
fn remove(tasks: &mut Tasks, s: &str, p: i32) -> bool {
    let Some(ps) = tasks.get_mut(s) else {
        return false;
    };
    let removed = ps.remove(&p);
    if ps.is_empty() {
        tasks.remove(s);
    }
    removed
}

#[cfg(test)]
mod tests;
