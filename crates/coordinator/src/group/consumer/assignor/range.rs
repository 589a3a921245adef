//! The `range` assignor (Kafka's server-side `RangeAssignor`): topic by topic, the
//! subscribers (in member id order) each get a contiguous range of partitions, the first
//! `partitions % subscribers` of them one more; with co-partitioned topics and identical
//! subscriptions, partition i of every topic goes to the same member. It is sticky as
//! Kafka's is: a member keeps its lowest previous partitions of a topic up to its quota
//! (and one more while extra partitions remain), and the free partitions are handed out in
//! ascending order.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::Uuid;

use super::GroupSpec;
use crate::group::consumer::member::Partitions;

pub fn assign(spec: &GroupSpec) -> BTreeMap<String, Partitions> {
    let mut out: BTreeMap<String, Partitions> = BTreeMap::new();
    let mut subscribers: BTreeMap<Uuid, Vec<usize>> = BTreeMap::new();
    for (i, m) in spec.members.iter().enumerate() {
        for t in &m.topics {
            if spec.partitions.contains_key(t) {
                subscribers.entry(*t).or_default().push(i);
            }
        }
    }
    for (topic, members) in &subscribers {
        let count = spec.partitions.get(topic).copied().unwrap_or(0).max(0);
        let quota = count as usize / members.len();
        let mut extra = count as usize % members.len();
        let mut kept: BTreeSet<i32> = BTreeSet::new();
        // (member, partitions it still needs to reach the minimum quota)
        let mut unfilled: Vec<(usize, usize)> = Vec::new();
        for &i in members {
            let m = &spec.members[i];
            let previous: Vec<i32> = m
                .current
                .get(topic)
                .into_iter()
                .flatten()
                .copied()
                .filter(|p| *p >= 0 && *p < count && !kept.contains(p))
                .collect();
            let retain = previous.len().min(quota);
            for &p in &previous[..retain] {
                kept.insert(p);
                out.entry(m.member_id.clone())
                    .or_default()
                    .entry(*topic)
                    .or_default()
                    .insert(p);
            }
            if previous.len() > quota && extra > 0 {
                extra -= 1;
                let p = previous[quota];
                kept.insert(p);
                out.entry(m.member_id.clone())
                    .or_default()
                    .entry(*topic)
                    .or_default()
                    .insert(p);
            } else {
                unfilled.push((i, quota - retain));
            }
        }
        let mut free = (0..count).filter(|p| !kept.contains(p));
        for (i, mut remaining) in unfilled {
            if extra > 0 {
                remaining += 1;
                extra -= 1;
            }
            let ps: Vec<i32> = free.by_ref().take(remaining).collect();
            if !ps.is_empty() {
                out.entry(spec.members[i].member_id.clone())
                    .or_default()
                    .entry(*topic)
                    .or_default()
                    .extend(ps);
            }
        }
    }
    out
}
