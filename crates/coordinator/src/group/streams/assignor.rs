//! The `sticky` task assignor (Kafka's `StickyTaskAssignor`, the default of
//! `group.streams.assignors`), deterministic: active tasks first, each kept by the member
//! that runs it now while the member stays within its balanced share, the rest to the least
//! loaded members; then `num.standby.replicas` standby tasks of each active task, on other
//! processes than the active task's, kept where they are when possible.
//!
//! Simplification against Kafka's: balance is by member (Kafka balances by process, then by
//! member within a process), and no warm-up tasks are planned.

use std::collections::{BTreeMap, BTreeSet};

use super::group::{TargetTasks, Tasks};

/// One member as the assignor sees it.
#[derive(Debug, Clone)]
pub struct AssignorMember<'a> {
    pub member_id: &'a str,
    pub process_id: &'a str,
    /// Active tasks it runs now (assigned or being revoked).
    pub active: Tasks,
    /// Standby tasks it holds now.
    pub standby: Tasks,
}

type Task = (String, i32);

fn holds(tasks: &Tasks, (s, p): &Task) -> bool {
    tasks.get(s).is_some_and(|ps| ps.contains(p))
}

fn add(tasks: &mut Tasks, (s, p): &Task) {
    tasks.entry(s.clone()).or_default().insert(*p);
}

/// The target assignment of every member for `tasks` (tasks per subtopology).
pub fn assign(
    members: &[AssignorMember<'_>],
    tasks: &BTreeMap<String, i32>,
    num_standby: i32,
) -> BTreeMap<String, TargetTasks> {
    let mut out: BTreeMap<String, TargetTasks> = members
        .iter()
        .map(|m| (m.member_id.to_string(), TargetTasks::default()))
        .collect();
    if members.is_empty() {
        return out;
    }
    let all: Vec<Task> = tasks
        .iter()
        .flat_map(|(s, n)| (0..*n).map(move |p| (s.clone(), p)))
        .collect();
    // Balanced quotas: the members running the most now get the larger shares.
    let n = members.len();
    let (base, extra) = (all.len() / n, all.len() % n);
    let mut order: Vec<&AssignorMember<'_>> = members.iter().collect();
    let running = |m: &AssignorMember<'_>| all.iter().filter(|t| holds(&m.active, t)).count();
    order.sort_by(|a, b| {
        running(b)
            .cmp(&running(a))
            .then(a.member_id.cmp(b.member_id))
    });
    let quota: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.member_id, base + usize::from(i < extra)))
        .collect();
    let mut load: BTreeMap<&str, usize> = members.iter().map(|m| (m.member_id, 0)).collect();
    let mut owner: BTreeMap<&Task, &str> = BTreeMap::new();
    // 1. Sticky actives.
    for t in &all {
        if let Some(m) = members
            .iter()
            .find(|m| holds(&m.active, t) && load[m.member_id] < quota[m.member_id])
        {
            owner.insert(t, m.member_id);
            *load.get_mut(m.member_id).expect("every member has a load") += 1;
        }
    }
    // 2. The rest to the least loaded, a previous standby holder first.
    for t in &all {
        if owner.contains_key(t) {
            continue;
        }
        let pick = members
            .iter()
            .filter(|m| load[m.member_id] < quota[m.member_id])
            .min_by_key(|m| (!holds(&m.standby, t), load[m.member_id], m.member_id))
            .or_else(|| {
                members
                    .iter()
                    .min_by_key(|m| (load[m.member_id], m.member_id))
            })
            .expect("members is not empty");
        owner.insert(t, pick.member_id);
        *load
            .get_mut(pick.member_id)
            .expect("every member has a load") += 1;
    }
    for (t, m) in &owner {
        add(&mut out.get_mut(*m).expect("an assigned member").active, t);
    }
    // 3. Standbys on other processes than the active's, one per process.
    if num_standby > 0 {
        let mut standby_load: BTreeMap<&str, usize> =
            members.iter().map(|m| (m.member_id, 0)).collect();
        for t in &all {
            let active = owner[t];
            let active_process = members
                .iter()
                .find(|m| m.member_id == active)
                .map(|m| m.process_id)
                .unwrap_or_default();
            let mut used: BTreeSet<&str> = BTreeSet::from([active_process]);
            for _ in 0..num_standby {
                let pick = members
                    .iter()
                    .filter(|m| !used.contains(m.process_id))
                    .min_by_key(|m| {
                        (
                            !holds(&m.standby, t),
                            standby_load[m.member_id] + load[m.member_id],
                            m.member_id,
                        )
                    });
                let Some(pick) = pick else { break };
                used.insert(pick.process_id);
                *standby_load.get_mut(pick.member_id).expect("a load") += 1;
                add(
                    &mut out.get_mut(pick.member_id).expect("a member").standby,
                    t,
                );
            }
        }
    }
    out
}
