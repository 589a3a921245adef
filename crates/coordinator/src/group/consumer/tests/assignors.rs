//! The `uniform` and `range` assignors on their own.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::Uuid;

use super::tid;
use crate::group::config::AssignorName;
use crate::group::consumer::assignor::{assign, AssignmentMember, GroupSpec};
use crate::group::consumer::member::Partitions;

fn spec(topics: &[(&str, i32)], members: &[(&str, &[&str])]) -> GroupSpec {
    GroupSpec {
        members: members
            .iter()
            .map(|(id, subs)| AssignmentMember {
                member_id: id.to_string(),
                topics: subs.iter().map(|t| tid(t)).collect(),
                current: Partitions::new(),
            })
            .collect(),
        partitions: topics.iter().map(|(t, n)| (tid(t), *n)).collect(),
    }
}

fn count(p: &Partitions) -> usize {
    p.values().map(BTreeSet::len).sum()
}

fn of(p: &Partitions, topic: &str) -> Vec<i32> {
    p.get(&tid(topic))
        .map(|ps| ps.iter().copied().collect())
        .unwrap_or_default()
}

/// Every partition of every subscribed topic is assigned exactly once, to a subscriber.
fn check_complete(spec: &GroupSpec, out: &BTreeMap<String, Partitions>) {
    let mut seen: BTreeSet<(Uuid, i32)> = BTreeSet::new();
    for m in &spec.members {
        for (t, ps) in &out[&m.member_id] {
            assert!(
                m.topics.contains(t),
                "{} got a topic it does not subscribe",
                m.member_id
            );
            for p in ps {
                assert!(seen.insert((*t, *p)), "{t:?}-{p} assigned twice");
            }
        }
    }
    let subscribed: BTreeSet<Uuid> = spec.members.iter().flat_map(|m| m.topics.clone()).collect();
    let expected: usize = subscribed
        .iter()
        .map(|t| spec.partitions.get(t).copied().unwrap_or(0) as usize)
        .sum();
    assert_eq!(seen.len(), expected);
}

#[test]
fn uniform_balances_several_topics_with_uneven_counts() {
    let s = spec(
        &[("a", 7), ("b", 5)],
        &[
            ("m1", &["a", "b"]),
            ("m2", &["a", "b"]),
            ("m3", &["a", "b"]),
        ],
    );
    let out = assign(AssignorName::Uniform, s.clone());
    check_complete(&s, &out);
    let counts: Vec<usize> = out.values().map(count).collect();
    assert_eq!(counts, [4, 4, 4]);
    let s = spec(
        &[("a", 5)],
        &[("m1", &["a"]), ("m2", &["a"]), ("m3", &["a"])],
    );
    let out = assign(AssignorName::Uniform, s.clone());
    check_complete(&s, &out);
    let counts: Vec<usize> = out.values().map(count).collect();
    assert_eq!(counts, [2, 2, 1]);
    assert_eq!(of(&out["m1"], "a"), [0, 3]);
}

#[test]
fn uniform_is_sticky() {
    let mut s = spec(
        &[("a", 6)],
        &[("m1", &["a"]), ("m2", &["a"]), ("m3", &["a"])],
    );
    let first = assign(AssignorName::Uniform, s.clone());
    // m3 leaves: m1 and m2 keep theirs and split m3's.
    s.members.pop();
    for m in &mut s.members {
        m.current = first[&m.member_id].clone();
    }
    let second = assign(AssignorName::Uniform, s.clone());
    check_complete(&s, &second);
    for m in ["m1", "m2"] {
        assert!(first[m][&tid("a")].is_subset(&second[m][&tid("a")]));
        assert_eq!(count(&second[m]), 3);
    }
    // A member joining takes from the others only what balance needs.
    s.members.push(AssignmentMember {
        member_id: "m0".into(),
        topics: [tid("a")].into(),
        current: Partitions::new(),
    });
    for m in &mut s.members {
        m.current = second.get(&m.member_id).cloned().unwrap_or_default();
    }
    let third = assign(AssignorName::Uniform, s.clone());
    check_complete(&s, &third);
    let moved: usize = ["m1", "m2"]
        .iter()
        .map(|m| count(&second[*m]) - count(&third[*m]))
        .sum();
    assert_eq!(moved, 2);
    assert_eq!(count(&third["m0"]), 2);
}

#[test]
fn uniform_balances_different_subscriptions() {
    let s = spec(
        &[("a", 4), ("b", 4), ("c", 1)],
        &[("m1", &["a"]), ("m2", &["a", "b"]), ("m3", &["b", "c"])],
    );
    let out = assign(AssignorName::Uniform, s.clone());
    check_complete(&s, &out);
    let mut counts: Vec<usize> = out.values().map(count).collect();
    counts.sort();
    assert_eq!(counts, [3, 3, 3]);
    assert_eq!(of(&out["m1"], "b"), Vec::<i32>::new());
    // A member of no existing topic gets nothing; a missing topic is skipped.
    let s = spec(&[("a", 2)], &[("m1", &["a", "ghost"]), ("m2", &["ghost"])]);
    let out = assign(AssignorName::Uniform, s.clone());
    assert_eq!(of(&out["m1"], "a"), [0, 1]);
    assert!(out["m2"].is_empty());
}

#[test]
fn range_gives_contiguous_co_partitioned_ranges() {
    let s = spec(
        &[("a", 5), ("b", 5)],
        &[("m2", &["a", "b"]), ("m1", &["a", "b"])],
    );
    let out = assign(AssignorName::Range, s.clone());
    check_complete(&s, &out);
    assert_eq!(of(&out["m1"], "a"), [0, 1, 2]);
    assert_eq!(of(&out["m1"], "b"), [0, 1, 2]);
    assert_eq!(of(&out["m2"], "a"), [3, 4]);
    assert_eq!(of(&out["m2"], "b"), [3, 4]);
}

#[test]
fn range_handles_uneven_topics_and_subscriptions() {
    let s = spec(
        &[("a", 3), ("b", 7)],
        &[
            ("m1", &["a", "b"]),
            ("m2", &["a", "b"]),
            ("m3", &["a", "b"]),
        ],
    );
    let out = assign(AssignorName::Range, s.clone());
    check_complete(&s, &out);
    assert_eq!(of(&out["m1"], "a"), [0]);
    assert_eq!(of(&out["m3"], "a"), [2]);
    assert_eq!(of(&out["m1"], "b"), [0, 1, 2]);
    assert_eq!(of(&out["m2"], "b"), [3, 4]);
    assert_eq!(of(&out["m3"], "b"), [5, 6]);
    let s = spec(
        &[("a", 4), ("b", 2)],
        &[("m1", &["a"]), ("m2", &["a", "b"])],
    );
    let out = assign(AssignorName::Range, s.clone());
    check_complete(&s, &out);
    assert_eq!(of(&out["m1"], "a"), [0, 1]);
    assert_eq!(of(&out["m2"], "a"), [2, 3]);
    assert_eq!(of(&out["m2"], "b"), [0, 1]);
}

#[test]
fn range_keeps_previous_partitions_within_quota() {
    let mut s = spec(&[("a", 6)], &[("m1", &["a"]), ("m2", &["a"])]);
    s.members[1].current = [(tid("a"), [0, 1, 2, 3].into())].into();
    let out = assign(AssignorName::Range, s.clone());
    check_complete(&s, &out);
    assert_eq!(of(&out["m2"], "a"), [0, 1, 2]);
    assert_eq!(of(&out["m1"], "a"), [3, 4, 5]);
}

#[test]
fn assignments_do_not_depend_on_member_order() {
    for name in [AssignorName::Uniform, AssignorName::Range] {
        let s1 = spec(
            &[("a", 5), ("b", 3)],
            &[("x", &["a", "b"]), ("y", &["a"]), ("z", &["b"])],
        );
        let mut s2 = s1.clone();
        s2.members.reverse();
        assert_eq!(assign(name, s1), assign(name, s2));
    }
}
