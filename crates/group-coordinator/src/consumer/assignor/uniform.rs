//! The `uniform` assignor (Kafka's `UniformAssignor`): spreads all subscribed partitions as
//! evenly as the subscriptions allow and keeps as much of each member's previous target as
//! it can. With identical subscriptions (Kafka's homogeneous case) the member counts differ
//! by at most one; with different subscriptions no partition can move from a member to a
//! less loaded member subscribed to its topic and make the counts closer.
//!
//! The steps: keep each member's previous partitions that are still valid (subscribed, still
//! existing, not already kept by another member); give each remaining partition, in
//! (topic id, partition) order, to the least loaded member subscribed to its topic; then
//! move partitions from the most loaded members to less loaded ones, one at a time, while a
//! move makes two members' counts closer (each move lowers the sum of squared counts, so
//! it ends).

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::Uuid;

use super::GroupSpec;
use crate::consumer::member::Partitions;

pub fn assign(spec: &GroupSpec) -> BTreeMap<String, Partitions> {
    let n = spec.members.len();
    let mut out: Vec<Partitions> = vec![Partitions::new(); n];
    if n == 0 {
        return BTreeMap::new();
    }
    // Members subscribed to each existing topic, in member order.
    let mut eligible: BTreeMap<Uuid, Vec<usize>> = BTreeMap::new();
    for (i, m) in spec.members.iter().enumerate() {
        for t in &m.topics {
            if spec.partitions.contains_key(t) {
                eligible.entry(*t).or_default().push(i);
            }
        }
    }
    let mut counts = vec![0usize; n];
    let mut taken: BTreeSet<(Uuid, i32)> = BTreeSet::new();

    // 1. Stickiness: the previous target, where still valid.
    for (i, m) in spec.members.iter().enumerate() {
        for (t, ps) in &m.current {
            let Some(&count) = spec.partitions.get(t) else {
                continue;
            };
            if !m.topics.contains(t) {
                continue;
            }
            for &p in ps {
                if p >= 0 && p < count && taken.insert((*t, p)) {
                    out[i].entry(*t).or_default().insert(p);
                    counts[i] += 1;
                }
            }
        }
    }

    // 2. The rest, to the least loaded subscriber.
    for (t, members) in &eligible {
        let count = spec.partitions.get(t).copied().unwrap_or(0);
        for p in 0..count {
            if taken.contains(&(*t, p)) {
                continue;
            }
            if let Some(&i) = members.iter().min_by_key(|&&i| (counts[i], i)) {
                out[i].entry(*t).or_default().insert(p);
                counts[i] += 1;
                taken.insert((*t, p));
            }
        }
    }

    // 3. Balance.
    while let Some((from, to, t)) = next_move(&out, &counts, &eligible) {
        let Some(ps) = out[from].get_mut(&t) else {
            break;
        };
        let Some(p) = ps.pop_last() else {
            break;
        };
        if ps.is_empty() {
            out[from].remove(&t);
        }
        out[to].entry(t).or_default().insert(p);
        counts[from] -= 1;
        counts[to] += 1;
    }

    spec.members
        .iter()
        .zip(out)
        .map(|(m, a)| (m.member_id.clone(), a))
        .collect()
}

/// A move that brings two counts closer: from the most loaded member that has one, of a
/// partition of its topic, to the least loaded other subscriber of that topic.
fn next_move(
    out: &[Partitions],
    counts: &[usize],
    eligible: &BTreeMap<Uuid, Vec<usize>>,
) -> Option<(usize, usize, Uuid)> {
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(counts[i]), i));
    for from in order {
        if counts[from] < 2 {
            return None;
        }
        for t in out[from].keys() {
            let Some(members) = eligible.get(t) else {
                continue;
            };
            let to = members
                .iter()
                .copied()
                .filter(|&i| i != from)
                .min_by_key(|&i| (counts[i], i));
            if let Some(to) = to {
                if counts[to] + 1 < counts[from] {
                    return Some((from, to, *t));
                }
            }
        }
    }
    None
}
