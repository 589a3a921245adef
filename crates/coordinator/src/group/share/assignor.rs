//! The share groups' server-side assignor (Kafka's `SimpleAssignor`, with its
//! `SimpleHomogeneousAssignmentBuilder` and `SimpleHeterogeneousAssignmentBuilder`): every
//! assignable partition goes to at least one member, a partition is shared by more than one
//! member only when there are more members than partitions, members keep what they hold
//! where the balance allows it. Assignable means subscribed and initialized (the share
//! coordinator holds its state).
//!
//! Kafka walks hash sets, so which member gets which partition is not specified there; here
//! every walk is in order (members by id, partitions by topic id and index), so the same
//! group always gets the same assignment.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::Uuid;

use crate::group::consumer::Partitions;

/// One member as the assignor sees it.
#[derive(Debug, Clone)]
pub struct AssignorMember<'a> {
    pub member_id: &'a str,
    /// The ids of the topics it subscribes to that exist.
    pub subscribed: BTreeSet<Uuid>,
    /// Its current target assignment.
    pub current: Partitions,
}

type TopicPartition = (Uuid, i32);

/// The new target assignment of every member (Kafka's `SimpleAssignor.assign`):
/// `assignable` holds the partitions that may be assigned, by topic.
pub fn assign(
    members: &[AssignorMember<'_>],
    assignable: &Partitions,
) -> BTreeMap<String, Partitions> {
    let mut result: Vec<BTreeSet<TopicPartition>> = vec![BTreeSet::new(); members.len()];
    let homogeneous = members
        .windows(2)
        .all(|w| w[0].subscribed == w[1].subscribed);
    let targets_of = |topics: &mut dyn Iterator<Item = &Uuid>| -> Vec<TopicPartition> {
        topics
            .filter_map(|t| assignable.get(t).map(|ps| (t, ps)))
            .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
            .collect()
    };
    if homogeneous {
        if let Some(first) = members.first() {
            let targets = targets_of(&mut first.subscribed.iter());
            let indices: Vec<usize> = (0..members.len()).collect();
            share_out(&targets, &indices, members, &mut result);
        }
    } else {
        let topics: BTreeSet<Uuid> = members
            .iter()
            .flat_map(|m| m.subscribed.iter().copied())
            .collect();
        for topic in topics {
            let targets = targets_of(&mut std::iter::once(&topic));
            let indices: Vec<usize> = (0..members.len())
                .filter(|i| members[*i].subscribed.contains(&topic))
                .collect();
            share_out(&targets, &indices, members, &mut result);
        }
    }
    members
        .iter()
        .zip(result)
        .map(|(m, tps)| {
            let mut p = Partitions::new();
            for (t, i) in tps {
                p.entry(t).or_default().insert(i);
            }
            (m.member_id.to_string(), p)
        })
        .collect()
}

/// Shares `targets` among the members at `indices`, adding to `result` (Kafka's four
/// steps: keep what members hold of the targets, revoke from members holding too many,
/// revoke from partitions shared too widely, then hand out what is missing).
fn share_out(
    targets: &[TopicPartition],
    indices: &[usize],
    members: &[AssignorMember<'_>],
    result: &mut [BTreeSet<TopicPartition>],
) {
    if targets.is_empty() || indices.is_empty() {
        return;
    }
    let n_targets = targets.len();
    let n_members = indices.len();
    // Each partition wants this many members; each member this many partitions, the
    // remainder spread one by one (Kafka's `desiredSharing`, `desiredAssignmentCount`).
    let desired_sharing = n_members.div_ceil(n_targets);
    let precise = (desired_sharing * n_targets) as f64 / n_members as f64;
    let desired: Vec<usize> = (0..n_members)
        .map(|i| ((precise * (i + 1) as f64).ceil() - (precise * i as f64).ceil()) as usize)
        .collect();
    let target_set: BTreeSet<TopicPartition> = targets.iter().copied().collect();

    // 1. What each member holds of the targets.
    let mut held: Vec<BTreeSet<TopicPartition>> = indices
        .iter()
        .map(|i| {
            members[*i]
                .current
                .iter()
                .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
                .filter(|tp| target_set.contains(tp))
                .collect()
        })
        .collect();
    // 2. Members holding more than they should give up the excess.
    for (k, h) in held.iter_mut().enumerate() {
        while h.len() > desired[k] {
            h.pop_last();
        }
    }
    // 3. Partitions shared more widely than wanted lose members.
    let mut by_partition: BTreeMap<TopicPartition, Vec<usize>> =
        targets.iter().map(|tp| (*tp, Vec::new())).collect();
    for (k, h) in held.iter().enumerate() {
        for tp in h {
            if let Some(v) = by_partition.get_mut(tp) {
                v.push(k);
            }
        }
    }
    for (tp, holders) in by_partition.iter_mut() {
        while holders.len() > desired_sharing {
            if let Some(k) = holders.pop() {
                held[k].remove(tp);
            }
        }
    }
    // 4. Partitions wanting members go round the members wanting partitions.
    let mut unfilled: Vec<usize> = (0..n_members)
        .filter(|k| held[*k].len() < desired[*k])
        .collect();
    let mut cursor = 0usize;
    for (tp, holders) in by_partition.iter_mut() {
        if unfilled.is_empty() {
            break;
        }
        let mut need = desired_sharing.saturating_sub(holders.len());
        let mut progressed = false;
        let mut visited = 0usize;
        while need > 0 && !unfilled.is_empty() {
            if cursor >= unfilled.len() {
                cursor = 0;
            }
            if visited >= unfilled.len() {
                // A whole round without a member that could take it: leave the partition
                // less shared, as Kafka tolerates.
                if !progressed {
                    break;
                }
                visited = 0;
                progressed = false;
            }
            visited += 1;
            let k = unfilled[cursor];
            if holders.contains(&k) {
                cursor += 1;
                continue;
            }
            held[k].insert(*tp);
            holders.push(k);
            need -= 1;
            progressed = true;
            if held[k].len() >= desired[k] {
                unfilled.remove(cursor);
            } else {
                cursor += 1;
            }
        }
    }
    for (k, h) in held.into_iter().enumerate() {
        result[indices[k]].extend(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member<'a>(id: &'a str, topics: &[Uuid], current: &[(Uuid, i32)]) -> AssignorMember<'a> {
        let mut p = Partitions::new();
        for (t, i) in current {
            p.entry(*t).or_default().insert(*i);
        }
        AssignorMember {
            member_id: id,
            subscribed: topics.iter().copied().collect(),
            current: p,
        }
    }

    fn assignable(topics: &[(Uuid, i32)]) -> Partitions {
        topics
            .iter()
            .map(|(t, n)| (*t, (0..*n).collect()))
            .collect()
    }

    fn count(a: &BTreeMap<String, Partitions>, id: &str) -> usize {
        a[id].values().map(|p| p.len()).sum()
    }

    #[test]
    fn more_members_than_partitions_share_them() {
        let t = Uuid([1; 16]);
        let ms = [
            member("a", &[t], &[]),
            member("b", &[t], &[]),
            member("c", &[t], &[]),
        ];
        let a = assign(&ms, &assignable(&[(t, 1)]));
        for id in ["a", "b", "c"] {
            assert_eq!(a[id][&t], BTreeSet::from([0]), "{id}");
        }
        // Four members on two partitions: each partition shared by two.
        let ms: Vec<_> = ["a", "b", "c", "d"]
            .iter()
            .map(|id| member(id, &[t], &[]))
            .collect();
        let a = assign(&ms, &assignable(&[(t, 2)]));
        let mut sharing = BTreeMap::new();
        for p in a.values() {
            assert_eq!(p[&t].len(), 1);
            *sharing.entry(*p[&t].first().unwrap()).or_insert(0) += 1;
        }
        assert_eq!(sharing, BTreeMap::from([(0, 2), (1, 2)]));
    }

    #[test]
    fn fewer_members_split_partitions_and_keep_theirs() {
        let t = Uuid([2; 16]);
        let ms = [member("a", &[t], &[(t, 3)]), member("b", &[t], &[])];
        let a = assign(&ms, &assignable(&[(t, 4)]));
        assert_eq!(count(&a, "a"), 2);
        assert_eq!(count(&a, "b"), 2);
        assert!(a["a"][&t].contains(&3), "a keeps what it held");
        let all: BTreeSet<i32> = a.values().flat_map(|p| p[&t].iter().copied()).collect();
        assert_eq!(all, (0..4).collect());
    }

    #[test]
    fn heterogeneous_subscriptions_assign_per_topic_and_skip_uninitialized() {
        let (t1, t2) = (Uuid([3; 16]), Uuid([4; 16]));
        let ms = [member("a", &[t1, t2], &[]), member("b", &[t2], &[])];
        let mut assignable = assignable(&[(t1, 2), (t2, 1)]);
        assignable.get_mut(&t1).unwrap().remove(&1);
        let a = assign(&ms, &assignable);
        assert_eq!(
            a["a"][&t1],
            BTreeSet::from([0]),
            "uninitialized t1-1 not assigned"
        );
        assert_eq!(a["a"][&t2], BTreeSet::from([0]));
        assert_eq!(a["b"][&t2], BTreeSet::from([0]));
        assert!(!a["b"].contains_key(&t1));
    }
}
