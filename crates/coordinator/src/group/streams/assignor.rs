//! The `sticky` task assignor, Kafka's `StickyTaskAssignor` (the default of
//! `group.streams.assignors`) with its `ProcessState`, ported step for step:
//!
//! - load is balanced per process (one `KafkaStreams` instance: its members share its load,
//!   a process's load is its tasks over its members), then per member within the process;
//! - active tasks stay with the member that runs them while it is under its quota (the
//!   quota shrinks as members fill up, Kafka's `computeTasksPerMember`), then go to a member
//!   that holds them as a standby or reported state for them (`TaskOffsets`, the most caught
//!   up first), then to the least loaded process, walking each subtopology's partitions in
//!   order so that its tasks spread across the processes;
//! - standby tasks, `num.standby.replicas` of each task of a stateful subtopology, never on
//!   a process holding the task already (as active or standby): first back on the previous
//!   active owner, then a previous standby holder, then the least loaded processes.
//!
//! Kafka walks hash maps and breaks priority-queue ties by heap position; kraftd walks
//! members, processes and tasks in order and breaks ties by id, so the answer is
//! deterministic and equals Kafka's wherever Kafka's does not depend on hash order. Warm-up
//! tasks: Kafka 4.4's `AssignmentRefiner` hands out none yet (the target is the refined
//! assignment), and neither does kraftd. Rack awareness: Kafka 4.4's sticky assignor reads
//! no rack, and neither does kraftd.

use std::collections::{BTreeMap, BTreeSet};

use super::group::{TargetTasks, Tasks};

/// Offsets reported per task: subtopology → partition → offset sum (Kafka's
/// `MemberTaskOffsets.taskOffsets`).
pub type TaskOffsets = BTreeMap<String, BTreeMap<i32, i64>>;

/// One member as the assignor sees it (Kafka's `MemberAssignmentState`).
#[derive(Debug, Clone)]
pub struct AssignorMember<'a> {
    pub member_id: &'a str,
    pub process_id: &'a str,
    /// Active tasks it is assigned now (Kafka reads the current assignment, not the tasks
    /// pending revocation).
    pub active: Tasks,
    /// Standby tasks it is assigned now.
    pub standby: Tasks,
    /// The changelog offsets it last reported for tasks whose state it holds on disk.
    pub task_offsets: TaskOffsets,
}

/// One subtopology as the assignor sees it (Kafka's `TopologyDescriber`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubtopologyTasks {
    /// Its task count (the partitions of its widest source).
    pub tasks: i32,
    /// Whether it has state (changelog topics): only its tasks get standbys.
    pub stateful: bool,
}

/// A task: subtopology id and partition (Kafka's `TaskId`).
type TaskId = (String, i32);

/// A member of a process (Kafka's `StickyTaskAssignor.Member`): its index in the input.
type MemberIdx = usize;

/// Kafka's `ProcessState`: a process's members, their task counts and the tasks it holds.
#[derive(Debug)]
struct ProcessState {
    /// Its members (indices), with their task counts (active and standby).
    member_tasks: BTreeMap<MemberIdx, usize>,
    task_count: usize,
    tasks: BTreeSet<TaskId>,
}

impl ProcessState {
    /// Tasks per member (Kafka's `load`; -1 without members).
    fn load(&self) -> f64 {
        if self.member_tasks.is_empty() {
            -1.0
        } else {
            self.task_count as f64 / self.member_tasks.len() as f64
        }
    }

    fn has_task(&self, task: &TaskId) -> bool {
        self.tasks.contains(task)
    }

    /// Adds `task` to `member`: the member's new task count.
    fn add_task(&mut self, member: MemberIdx, task: &TaskId) -> usize {
        self.task_count += 1;
        self.tasks.insert(task.clone());
        let count = self
            .member_tasks
            .get_mut(&member)
            .expect("a task goes to a member of the process");
        *count += 1;
        *count
    }

    /// The member with the fewest tasks, the lower index on a tie.
    fn least_loaded_member(&self) -> MemberIdx {
        *self
            .member_tasks
            .iter()
            .min_by_key(|(idx, count)| (**count, **idx))
            .expect("a process has a member")
            .0
    }
}

/// The assignment in progress (Kafka's `StickyTaskAssignor.LocalState`).
struct LocalState<'m, 'a> {
    members: &'m [AssignorMember<'a>],
    processes: BTreeMap<&'a str, ProcessState>,
    active_prev: BTreeMap<TaskId, MemberIdx>,
    standby_prev: BTreeMap<TaskId, Vec<MemberIdx>>,
    num_standby: usize,
    total_active: usize,
    total_tasks: usize,
    members_with_active_capacity: usize,
    members_with_capacity: usize,
    active_per_member: usize,
    tasks_per_member: usize,
    out_active: BTreeMap<MemberIdx, Tasks>,
    out_standby: BTreeMap<MemberIdx, Tasks>,
}

/// Kafka's `computeTasksPerMember`: the ceiling of tasks over members.
fn tasks_per_member(tasks: usize, members: usize) -> usize {
    if members == 0 {
        0
    } else {
        tasks.div_ceil(members)
    }
}

fn add(tasks: &mut Tasks, (s, p): &TaskId) {
    tasks.entry(s.clone()).or_default().insert(*p);
}

impl<'a> LocalState<'_, 'a> {
    fn process_of(&self, m: MemberIdx) -> &'a str {
        self.members[m].process_id
    }

    fn member_count(&self, m: MemberIdx) -> usize {
        self.processes[self.process_of(m)].member_tasks[&m]
    }

    /// Gives `task` to member `m` (Kafka's `ProcessState.addTask`): its new task count.
    fn give(&mut self, m: MemberIdx, task: &TaskId, active: bool) -> usize {
        let process = self.process_of(m);
        let count = self
            .processes
            .get_mut(process)
            .expect("every member's process is known")
            .add_task(m, task);
        let out = if active {
            &mut self.out_active
        } else {
            &mut self.out_standby
        };
        add(out.entry(m).or_default(), task);
        count
    }

    /// Kafka's `maybeUpdateActiveTasksPerMember`: a member that reached the quota leaves the
    /// pool the quota is computed over.
    fn update_active_quota(&mut self, count: usize) {
        if count == self.active_per_member {
            self.members_with_active_capacity = self.members_with_active_capacity.saturating_sub(1);
            self.total_active = self.total_active.saturating_sub(count);
            self.active_per_member =
                tasks_per_member(self.total_active, self.members_with_active_capacity);
        }
    }

    /// Kafka's `maybeUpdateTotalTasksPerMember`.
    fn update_total_quota(&mut self, count: usize) {
        if count == self.tasks_per_member {
            self.members_with_capacity = self.members_with_capacity.saturating_sub(1);
            self.total_tasks = self.total_tasks.saturating_sub(count);
            self.tasks_per_member = tasks_per_member(self.total_tasks, self.members_with_capacity);
        }
    }

    /// Kafka's `findPrevMemberWithLeastLoad`: the first candidate, replaced only by one whose
    /// process and member are both less loaded; with `standby_of`, a candidate whose process
    /// holds that task already is skipped.
    fn prev_member_with_least_load(
        &self,
        candidates: Option<&Vec<MemberIdx>>,
        standby_of: Option<&TaskId>,
    ) -> Option<MemberIdx> {
        let mut pick: Option<(MemberIdx, f64, usize)> = None;
        for &m in candidates? {
            let process = &self.processes[self.process_of(m)];
            if standby_of.is_some_and(|t| process.has_task(t)) {
                continue;
            }
            let (process_load, member_load) = (process.load(), process.member_tasks[&m]);
            let better = pick.is_none_or(|(_, pl, ml)| process_load < pl && member_load < ml);
            if better {
                pick = Some((m, process_load, member_load));
            }
        }
        pick.map(|(m, _, _)| m)
    }

    /// The processes by load, the lower id first on a tie (Kafka's `processByLoad` queue).
    fn processes_by_load(&self) -> Vec<&'a str> {
        let mut order: Vec<(&'a str, f64)> =
            self.processes.iter().map(|(p, s)| (*p, s.load())).collect();
        order.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(b.0)));
        order.into_iter().map(|(p, _)| p).collect()
    }

    /// Kafka's `assignActive`.
    fn assign_active(&mut self, mut tasks: Vec<TaskId>) {
        // The current assignment pairs the same partitions (range-based): partition first.
        tasks.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
        // 1. Back to the member that runs it, while under the quota.
        tasks.retain(|task| {
            let Some(&m) = self.active_prev.get(task) else {
                return true;
            };
            !self.give_active_within_quota(m, task)
        });
        // 2. To a member that has seen it (a standby, or state reported on disk).
        tasks.retain(|task| {
            let Some(m) = self.prev_member_with_least_load(self.standby_prev.get(task), None)
            else {
                return true;
            };
            !self.give_active_within_quota(m, task)
        });
        // 3. The rest range-based (by subtopology) to the least loaded process.
        tasks.sort();
        for task in &tasks {
            let process = self.processes_by_load()[0];
            let m = self.processes[process].least_loaded_member();
            self.give_active(m, task);
        }
    }

    /// Gives active `task` to `m` if `m` is under the active quota (Kafka's
    /// `hasUnfulfilledActiveTaskQuota`): whether it did.
    fn give_active_within_quota(&mut self, m: MemberIdx, task: &TaskId) -> bool {
        if self.member_count(m) >= self.active_per_member {
            return false;
        }
        self.give_active(m, task);
        true
    }

    /// Gives active `task` to `m` and shrinks the quotas it filled.
    fn give_active(&mut self, m: MemberIdx, task: &TaskId) {
        let count = self.give(m, task, true);
        self.update_active_quota(count);
        self.update_total_quota(count);
    }

    /// Kafka's `assignStandby`.
    fn assign_standby(&mut self, mut tasks: Vec<TaskId>) {
        // Partition first, then subtopology, in reverse.
        tasks.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
        let mut to_least_loaded: Vec<(TaskId, usize)> = Vec::new();
        for task in &tasks {
            for i in 0..self.num_standby {
                // Back on the previous active owner's process, when the task moved away.
                if let Some(&m) = self.active_prev.get(task) {
                    let process = &self.processes[self.process_of(m)];
                    if !process.has_task(task) && self.member_count(m) < self.tasks_per_member {
                        let count = self.give(m, task, false);
                        self.update_total_quota(count);
                        continue;
                    }
                }
                // A previous standby holder.
                if let Some(m) =
                    self.prev_member_with_least_load(self.standby_prev.get(task), Some(task))
                {
                    if self.member_count(m) < self.tasks_per_member {
                        let count = self.give(m, task, false);
                        self.update_total_quota(count);
                        continue;
                    }
                }
                to_least_loaded.push((task.clone(), self.num_standby - i));
                break;
            }
        }
        // Range-based by subtopology, in reverse.
        to_least_loaded.sort_by(|a, b| b.0.cmp(&a.0));
        for (task, remaining) in &to_least_loaded {
            for _ in 0..*remaining {
                let free = self
                    .processes_by_load()
                    .into_iter()
                    .find(|p| !self.processes[p].has_task(task));
                // Not enough processes to place every replica: Kafka logs it and goes on.
                let Some(process) = free else { break };
                let m = self.processes[process].least_loaded_member();
                let count = self.give(m, task, false);
                self.update_total_quota(count);
            }
        }
    }
}

/// The target assignment of every member (Kafka's `StickyTaskAssignor.assign`).
pub fn assign(
    members: &[AssignorMember<'_>],
    subtopologies: &BTreeMap<String, SubtopologyTasks>,
    num_standby: i32,
) -> BTreeMap<String, TargetTasks> {
    let num_standby = usize::try_from(num_standby).unwrap_or(0);
    let count = |s: &SubtopologyTasks| usize::try_from(s.tasks).unwrap_or(0);
    let total_active: usize = subtopologies.values().map(count).sum();
    let total_tasks: usize = total_active
        + subtopologies
            .values()
            .filter(|s| s.stateful)
            .map(|s| count(s) * num_standby)
            .sum::<usize>();
    let mut state = LocalState {
        members,
        processes: BTreeMap::new(),
        active_prev: BTreeMap::new(),
        standby_prev: BTreeMap::new(),
        num_standby,
        total_active,
        total_tasks,
        members_with_active_capacity: members.len(),
        members_with_capacity: members.len(),
        active_per_member: tasks_per_member(total_active, members.len()),
        tasks_per_member: tasks_per_member(total_tasks, members.len()),
        out_active: BTreeMap::new(),
        out_standby: BTreeMap::new(),
    };
    // Standby candidates: (previous standby?, offset sum, member), ranked below.
    let mut candidates: BTreeMap<TaskId, Vec<(bool, i64, MemberIdx)>> = BTreeMap::new();
    for (idx, m) in members.iter().enumerate() {
        state
            .processes
            .entry(m.process_id)
            .or_insert_with(|| ProcessState {
                member_tasks: BTreeMap::new(),
                task_count: 0,
                tasks: BTreeSet::new(),
            })
            .member_tasks
            .insert(idx, 0);
        for (s, ps) in &m.active {
            for p in ps {
                state.active_prev.insert((s.clone(), *p), idx);
            }
        }
        let reported = |s: &str, p: i32| m.task_offsets.get(s).and_then(|o| o.get(&p)).copied();
        for (s, ps) in &m.standby {
            for p in ps {
                let sum = reported(s, *p).unwrap_or(0);
                candidates
                    .entry((s.clone(), *p))
                    .or_default()
                    .push((true, sum, idx));
            }
        }
        // A member back after a restart has a new id and no assignment; the state it
        // reports on disk makes it a weaker candidate, so its tasks can come back to it.
        for (s, offsets) in &m.task_offsets {
            for (p, sum) in offsets {
                if !m.standby.get(s).is_some_and(|ps| ps.contains(p)) {
                    candidates
                        .entry((s.clone(), *p))
                        .or_default()
                        .push((false, *sum, idx));
                }
            }
        }
    }
    state.standby_prev = candidates
        .into_iter()
        .map(|(task, mut c)| {
            // Previous standbys first, then the most caught up (a stable sort, as Kafka's).
            c.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
            (task, c.into_iter().map(|(_, _, m)| m).collect())
        })
        .collect();

    if !members.is_empty() {
        let tasks_of = |stateful_only: bool| -> Vec<TaskId> {
            subtopologies
                .iter()
                .filter(|(_, s)| !stateful_only || s.stateful)
                .flat_map(|(id, s)| (0..s.tasks).map(move |p| (id.clone(), p)))
                .collect()
        };
        state.assign_active(tasks_of(false));
        if num_standby > 0 {
            state.assign_standby(tasks_of(true));
        }
    }
    members
        .iter()
        .enumerate()
        .map(|(idx, m)| {
            let target = TargetTasks {
                active: state.out_active.remove(&idx).unwrap_or_default(),
                standby: state.out_standby.remove(&idx).unwrap_or_default(),
                warmup: Tasks::new(),
            };
            (m.member_id.to_string(), target)
        })
        .collect()
}

#[cfg(test)]
mod tests;
