//! The `uniform` assignor (Kafka's `UniformAssignor`): spreads all subscribed partitions as
//! evenly as the subscriptions allow and keeps as much of each member's previous target as
//! it can. With identical subscriptions (Kafka's homogeneous case) the member counts differ
//! by at most one; with different subscriptions no partition can move from a member to a
//! less loaded member subscribed to its topic and make the counts closer.
//!
//! The steps: keep each member's previous partitions that are still valid (subscribed, still
//! existing, not already kept by another member); give each remaining partition, in
//! (topic id, partition) order, to the least loaded member subscribed to its topic; then
//! move partitions from the most loaded members to less loaded ones while that makes two
//! members' counts closer, directly or along a chain of members each able to take a
//! partition of a topic the previous one holds (each step lowers the sum of squared
//! counts, so it ends).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use kraftd_protocol::Uuid;

use super::GroupSpec;
use crate::group::consumer::member::Partitions;

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
    while let Some(path) = next_path(&out, &counts, &eligible) {
        // From the end back, each member on the path gives one partition of the topic
        // that links it to the next: only the first and the last counts change.
        for &(from, to, t) in path.iter().rev() {
            let Some(ps) = out[from].get_mut(&t) else {
                return finish(spec, out);
            };
            let Some(p) = ps.pop_last() else {
                return finish(spec, out);
            };
            if ps.is_empty() {
                out[from].remove(&t);
            }
            out[to].entry(t).or_default().insert(p);
        }
        if let (Some(first), Some(last)) = (path.first(), path.last()) {
            counts[first.0] -= 1;
            counts[last.1] += 1;
        }
    }
    finish(spec, out)
}

fn finish(spec: &GroupSpec, out: Vec<Partitions>) -> BTreeMap<String, Partitions> {
    spec.members
        .iter()
        .zip(out)
        .map(|(m, a)| (m.member_id.clone(), a))
        .collect()
}

/// A chain of moves that brings two counts closer: from the most loaded member that has
/// one, through members linked by a topic the giver holds and the taker subscribes to, to
/// the least loaded member it reaches with at least two fewer partitions. Breadth-first,
/// so the chain is the shortest.
fn next_path(
    out: &[Partitions],
    counts: &[usize],
    eligible: &BTreeMap<Uuid, Vec<usize>>,
) -> Option<Vec<(usize, usize, Uuid)>> {
    let n = counts.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(counts[i]), i));
    for from in order {
        if counts[from] < 2 {
            return None;
        }
        let mut prev: Vec<Option<(usize, Uuid)>> = vec![None; n];
        let mut seen = vec![false; n];
        seen[from] = true;
        let mut queue = VecDeque::from([from]);
        let mut best: Option<usize> = None;
        while let Some(u) = queue.pop_front() {
            for t in out[u].keys() {
                for &v in eligible.get(t).into_iter().flatten() {
                    if seen[v] {
                        continue;
                    }
                    seen[v] = true;
                    prev[v] = Some((u, *t));
                    queue.push_back(v);
                    if counts[v] + 1 < counts[from]
                        && best.is_none_or(|b| (counts[v], v) < (counts[b], b))
                    {
                        best = Some(v);
                    }
                }
            }
        }
        if let Some(mut v) = best {
            let mut path = Vec::new();
            while let Some((u, t)) = prev[v] {
                path.push((u, v, t));
                v = u;
            }
            path.reverse();
            return Some(path);
        }
    }
    None
}
