//! The cases of Kafka's `StickyTaskAssignorTest` that fix behaviour (stickiness, per-process
//! balance, standby placement, cold starts from reported task offsets), run against the
//! port.

use std::collections::BTreeMap;

use super::{assign, AssignorMember, SubtopologyTasks, TaskOffsets};
use crate::group::streams::group::{TargetTasks, Tasks};

const S: &str = "test-subtopology";

fn tasks(entries: &[(&str, &[i32])]) -> Tasks {
    entries
        .iter()
        .map(|(s, ps)| (s.to_string(), ps.iter().copied().collect()))
        .collect()
}

fn member<'a>(id: &'a str, process: &'a str, active: Tasks, standby: Tasks) -> AssignorMember<'a> {
    AssignorMember {
        member_id: id,
        process_id: process,
        active,
        standby,
        task_offsets: TaskOffsets::new(),
    }
}

fn fresh<'a>(id: &'a str, process: &'a str) -> AssignorMember<'a> {
    member(id, process, Tasks::new(), Tasks::new())
}

fn with_offsets<'a>(id: &'a str, process: &'a str, offsets: &[(i32, i64)]) -> AssignorMember<'a> {
    let mut m = fresh(id, process);
    m.task_offsets
        .insert(S.to_string(), offsets.iter().copied().collect());
    m
}

fn topology(names: &[&str], tasks: i32, stateful: bool) -> BTreeMap<String, SubtopologyTasks> {
    names
        .iter()
        .map(|n| (n.to_string(), SubtopologyTasks { tasks, stateful }))
        .collect()
}

fn ids(t: &Tasks, s: &str) -> Vec<i32> {
    t.get(s)
        .map(|p| p.iter().copied().collect())
        .unwrap_or_default()
}

fn count(t: &Tasks) -> usize {
    t.values().map(|p| p.len()).sum()
}

fn active(r: &BTreeMap<String, TargetTasks>, m: &str) -> Vec<i32> {
    ids(&r[m].active, S)
}

fn standby(r: &BTreeMap<String, TargetTasks>, m: &str) -> Vec<i32> {
    ids(&r[m].standby, S)
}

/// Every task active exactly once, and no process holding a task twice.
fn check_valid(
    members: &[AssignorMember<'_>],
    r: &BTreeMap<String, TargetTasks>,
    n: &BTreeMap<String, SubtopologyTasks>,
) {
    let mut seen: BTreeMap<(String, i32), usize> = BTreeMap::new();
    let mut per_process: BTreeMap<(&str, String, i32), usize> = BTreeMap::new();
    for m in members {
        let t = &r[m.member_id];
        for (s, ps) in &t.active {
            for p in ps {
                *seen.entry((s.clone(), *p)).or_default() += 1;
                *per_process
                    .entry((m.process_id, s.clone(), *p))
                    .or_default() += 1;
            }
        }
        for (s, ps) in &t.standby {
            for p in ps {
                *per_process
                    .entry((m.process_id, s.clone(), *p))
                    .or_default() += 1;
            }
        }
    }
    let total: i32 = n.values().map(|s| s.tasks).sum();
    assert_eq!(seen.len(), total as usize, "every task is active somewhere");
    assert!(seen.values().all(|c| *c == 1), "no task is active twice");
    assert!(
        per_process.values().all(|c| *c == 1),
        "no process holds a task twice"
    );
}

#[test]
fn one_active_task_to_each_process_when_task_count_equals_process_count() {
    let members = [
        fresh("member1", "process1"),
        fresh("member2", "process2"),
        fresh("member3", "process3"),
    ];
    let n = topology(&[S], 3, false);
    let r = assign(&members, &n, 0);
    check_valid(&members, &r, &n);
    for m in ["member1", "member2", "member3"] {
        assert_eq!(active(&r, m).len(), 1);
    }
}

#[test]
fn members_of_a_process_share_its_load_evenly() {
    let members = [
        fresh("member1_1", "process1"),
        fresh("member1_2", "process1"),
        fresh("member2_1", "process2"),
        fresh("member2_2", "process2"),
        fresh("member3_1", "process3"),
        fresh("member3_2", "process3"),
    ];
    for (stateful, standbys) in [(false, 0), (true, 1)] {
        let n = topology(&["test-subtopology1", "test-subtopology2"], 3, stateful);
        let r = assign(&members, &n, standbys);
        check_valid(&members, &r, &n);
        for m in &members {
            assert_eq!(count(&r[m.member_id].active), 1, "{}", m.member_id);
            assert_eq!(
                count(&r[m.member_id].standby),
                standbys as usize,
                "{}",
                m.member_id
            );
        }
    }
}

#[test]
fn active_tasks_stay_on_their_process() {
    let members = [
        member("member1", "process1", tasks(&[(S, &[0])]), Tasks::new()),
        member("member2", "process2", tasks(&[(S, &[1])]), Tasks::new()),
    ];
    let n = topology(&[S], 3, false);
    let r = assign(&members, &n, 0);
    check_valid(&members, &r, &n);
    assert!(active(&r, "member1").contains(&0));
    assert!(active(&r, "member2").contains(&1));
}

#[test]
fn a_new_process_takes_only_what_balance_needs() {
    let members = [
        member(
            "member1",
            "process1",
            tasks(&[(S, &[0, 1, 2])]),
            Tasks::new(),
        ),
        member(
            "member2",
            "process2",
            tasks(&[(S, &[3, 4, 5])]),
            Tasks::new(),
        ),
        fresh("newMember", "process3"),
    ];
    let n = topology(&[S], 6, false);
    let r = assign(&members, &n, 0);
    check_valid(&members, &r, &n);
    assert_eq!(active(&r, "member1").len(), 2);
    assert!(active(&r, "member1").iter().all(|p| *p < 3));
    assert_eq!(active(&r, "member2").len(), 2);
    assert!(active(&r, "member2").iter().all(|p| *p >= 3));
    assert_eq!(active(&r, "newMember").len(), 2);
}

#[test]
fn new_tasks_go_to_the_new_process_and_old_ones_stay() {
    let members = [
        member("member1", "process1", tasks(&[(S, &[1, 2])]), Tasks::new()),
        member("member2", "process2", tasks(&[(S, &[0, 3])]), Tasks::new()),
        fresh("member3", "process3"),
    ];
    let n = topology(&[S], 6, false);
    let r = assign(&members, &n, 0);
    assert_eq!(active(&r, "member1"), vec![1, 2]);
    assert_eq!(active(&r, "member2"), vec![0, 3]);
    assert_eq!(active(&r, "member3"), vec![4, 5]);
}

#[test]
fn a_previous_standby_becomes_the_active() {
    let members = [
        member("member1", "process1", Tasks::new(), tasks(&[(S, &[2])])),
        member("member2", "process2", Tasks::new(), tasks(&[(S, &[1])])),
        member("member3", "process3", Tasks::new(), tasks(&[(S, &[0])])),
    ];
    let r = assign(&members, &topology(&[S], 3, false), 0);
    assert_eq!(active(&r, "member1"), vec![2]);
    assert_eq!(active(&r, "member2"), vec![1]);
    assert_eq!(active(&r, "member3"), vec![0]);
}

#[test]
fn a_standby_never_lands_next_to_its_active() {
    let members = [
        member("member1", "process1", Tasks::new(), tasks(&[(S, &[0])])),
        member("member2", "process2", Tasks::new(), tasks(&[(S, &[1])])),
    ];
    let r = assign(&members, &topology(&[S], 2, true), 1);
    assert_eq!(active(&r, "member1"), vec![0]);
    assert_eq!(standby(&r, "member1"), vec![1]);
    assert_eq!(active(&r, "member2"), vec![1]);
    assert_eq!(standby(&r, "member2"), vec![0]);
}

#[test]
fn balance_by_capacity_when_several_members_hold_a_standby() {
    let members = [
        member(
            "member1",
            "process1",
            tasks(&[(S, &[0])]),
            tasks(&[(S, &[1])]),
        ),
        member(
            "member2_1",
            "process2",
            tasks(&[(S, &[2])]),
            tasks(&[(S, &[1])]),
        ),
        fresh("member2_2", "process2"),
    ];
    let r = assign(&members, &topology(&[S], 3, false), 0);
    assert_eq!(active(&r, "member1"), vec![0]);
    assert_eq!(active(&r, "member2_1"), vec![2]);
    assert_eq!(active(&r, "member2_2"), vec![1]);
}

#[test]
fn standbys_on_other_processes_than_their_active() {
    let members = [
        member("member1", "process1", tasks(&[(S, &[0])]), Tasks::new()),
        member("member2", "process2", tasks(&[(S, &[1])]), Tasks::new()),
        member("member3", "process3", tasks(&[(S, &[2])]), Tasks::new()),
        member("member4", "process4", tasks(&[(S, &[3])]), Tasks::new()),
    ];
    let n = topology(&[S], 4, true);
    let r = assign(&members, &n, 1);
    check_valid(&members, &r, &n);
    let mut all = Vec::new();
    let mut holders = 0;
    for m in &members {
        let s = standby(&r, m.member_id);
        assert!(s.len() <= 2);
        holders += usize::from(!s.is_empty());
        all.extend(s);
    }
    all.sort();
    assert_eq!(all, vec![0, 1, 2, 3]);
    assert!(holders >= 3);
}

#[test]
fn several_standby_replicas_and_not_more_than_processes_allow() {
    let members = [
        member("member1", "process1", tasks(&[(S, &[0])]), Tasks::new()),
        member("member2", "process2", tasks(&[(S, &[1])]), Tasks::new()),
        member("member3", "process3", tasks(&[(S, &[2])]), Tasks::new()),
    ];
    let r = assign(&members, &topology(&[S], 3, true), 2);
    assert_eq!(standby(&r, "member1"), vec![1, 2]);
    assert_eq!(standby(&r, "member2"), vec![0, 2]);
    assert_eq!(standby(&r, "member3"), vec![0, 1]);

    let alone = [fresh("member1", "process1")];
    let r = assign(&alone, &topology(&[S], 1, true), 1);
    assert!(r["member1"].standby.is_empty());
    // Two members of one process: still no standby (it would sit next to its active).
    let one_process = [fresh("a", "process1"), fresh("b", "process1")];
    let r = assign(&one_process, &topology(&[S], 2, true), 1);
    assert!(r.values().all(|t| t.standby.is_empty()));
}

#[test]
fn stateless_subtopologies_get_no_standbys() {
    let members = [fresh("member1", "process1"), fresh("member2", "process2")];
    let mut n = topology(&["a"], 2, false);
    n.extend(topology(&["b"], 2, true));
    let r = assign(&members, &n, 1);
    check_valid(&members, &r, &n);
    for t in r.values() {
        assert!(!t.standby.contains_key("a"));
        assert_eq!(ids(&t.standby, "b").len(), 1);
    }
}

#[test]
fn each_subtopology_spreads_across_processes_when_scaling_up() {
    let members = [
        member(
            "member1",
            "process1",
            tasks(&[
                ("test-subtopology1", &[0, 1]),
                ("test-subtopology2", &[0, 1]),
            ]),
            Tasks::new(),
        ),
        fresh("member2", "process2"),
    ];
    let n = topology(&["test-subtopology1", "test-subtopology2"], 2, true);
    let r = assign(&members, &n, 1);
    check_valid(&members, &r, &n);
    for m in ["member1", "member2"] {
        for s in ["test-subtopology1", "test-subtopology2"] {
            assert_eq!(ids(&r[m].active, s).len(), 1, "{m} {s}");
            assert_eq!(ids(&r[m].standby, s).len(), 1, "{m} {s}");
        }
    }
}

#[test]
fn a_standby_returns_to_its_previous_owner_below_quota() {
    let members = [
        member(
            "member1",
            "process1",
            tasks(&[(S, &[0])]),
            tasks(&[(S, &[1])]),
        ),
        member("member2", "process2", tasks(&[(S, &[1])]), Tasks::new()),
        fresh("member3", "process3"),
    ];
    let r = assign(&members, &topology(&[S], 2, true), 1);
    assert_eq!(active(&r, "member1"), vec![0]);
    assert_eq!(standby(&r, "member1"), vec![1]);
}

#[test]
fn a_standby_stays_with_the_previous_holder_that_does_not_run_the_active() {
    let members = [
        member("member1", "process1", Tasks::new(), tasks(&[(S, &[2])])),
        member(
            "member2",
            "process2",
            tasks(&[(S, &[0])]),
            tasks(&[(S, &[2])]),
        ),
        member("member3", "process3", tasks(&[(S, &[1])]), Tasks::new()),
        fresh("member4", "process4"),
    ];
    let n = topology(&[S], 3, true);
    let r = assign(&members, &n, 1);
    check_valid(&members, &r, &n);
    assert_eq!(active(&r, "member1"), vec![2]);
    assert_eq!(active(&r, "member2"), vec![0]);
    assert_eq!(active(&r, "member3"), vec![1]);
    assert!(active(&r, "member4").is_empty());
    assert_eq!(standby(&r, "member2"), vec![2]);
    // One of Kafka's three accepted outcomes.
    let outcome = (
        standby(&r, "member1"),
        standby(&r, "member3"),
        standby(&r, "member4"),
    );
    assert!(
        [
            (vec![], vec![0], vec![1]),
            (vec![1], vec![], vec![0]),
            (vec![0], vec![], vec![1])
        ]
        .contains(&outcome),
        "{outcome:?}"
    );
}

#[test]
fn a_cold_start_follows_the_reported_task_offsets() {
    let members = [
        with_offsets("member1", "process1", &[(0, 100), (1, 100)]),
        with_offsets("member2", "process2", &[(2, 100), (3, 100)]),
    ];
    let r = assign(&members, &topology(&[S], 4, true), 0);
    assert_eq!(active(&r, "member1"), vec![0, 1]);
    assert_eq!(active(&r, "member2"), vec![2, 3]);

    let members = [
        with_offsets("member1_1", "process1", &[(0, 100), (1, 100)]),
        with_offsets("member1_2", "process1", &[(0, 100), (1, 100)]),
        with_offsets("member2_1", "process2", &[(2, 100), (3, 100)]),
        with_offsets("member2_2", "process2", &[(2, 100), (3, 100)]),
    ];
    let r = assign(&members, &topology(&[S], 4, true), 0);
    let mut p1 = [active(&r, "member1_1"), active(&r, "member1_2")].concat();
    p1.sort();
    assert_eq!(p1, vec![0, 1]);
    let mut p2 = [active(&r, "member2_1"), active(&r, "member2_2")].concat();
    p2.sort();
    assert_eq!(p2, vec![2, 3]);
}

#[test]
fn current_owners_rank_ahead_of_reported_offsets_and_the_most_caught_up_first() {
    let members = [
        member("member1", "process1", tasks(&[(S, &[0])]), Tasks::new()),
        member("member2", "process2", Tasks::new(), tasks(&[(S, &[0, 1])])),
        with_offsets(
            "member3",
            "process3",
            &[(0, 1_000_000), (1, 1_000_000), (2, 100)],
        ),
        with_offsets("member4", "process4", &[(2, 50)]),
    ];
    let r = assign(&members, &topology(&[S], 4, true), 0);
    assert_eq!(active(&r, "member1"), vec![0]);
    assert_eq!(active(&r, "member2"), vec![1]);
    assert_eq!(active(&r, "member3"), vec![2]);
    assert_eq!(active(&r, "member4"), vec![3]);
}

#[test]
fn standbys_go_away_from_the_process_holding_state_on_a_cold_start() {
    let members = [
        with_offsets("member1", "process1", &[(0, 100)]),
        with_offsets("member2", "process2", &[(1, 100)]),
    ];
    let r = assign(&members, &topology(&[S], 2, true), 1);
    assert_eq!(active(&r, "member1"), vec![0]);
    assert_eq!(active(&r, "member2"), vec![1]);
    assert_eq!(standby(&r, "member1"), vec![1]);
    assert_eq!(standby(&r, "member2"), vec![0]);
}

#[test]
fn no_members_no_assignment_and_members_without_tasks_get_empty_targets() {
    assert!(assign(&[], &topology(&[S], 3, true), 1).is_empty());
    let members = [fresh("a", "p1"), fresh("b", "p2")];
    let r = assign(&members, &BTreeMap::new(), 1);
    assert_eq!(r.len(), 2);
    assert!(r.values().all(TargetTasks::is_empty));
}
