//! Incremental reconciliation (Kafka's `CurrentAssignmentBuilder`): moves a member's current
//! assignment one step toward its target. A partition the member must give up stays its own
//! (pending revocation, the member keeps its epoch) until the member's heartbeat no longer
//! lists it; a partition the target adds is given only once no other member owns it
//! (otherwise the member waits in UNRELEASED_PARTITIONS). So no partition ever has two
//! owners.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::messages::consumer_group_heartbeat_request::TopicPartitions as OwnedTopicPartitions;
use kraftd_protocol::Uuid;

use super::member::{owns_any_of, ConsumerGroupMember, MemberState, PartitionEpochs, Partitions};

/// What the next step of a member's reconciliation is computed from.
pub(crate) struct Reconciliation<'a> {
    /// The target assignment epoch and the member's target assignment.
    pub target_epoch: i32,
    pub target: &'a Partitions,
    /// The topic ids the member subscribes to now (names and resolved regex, as they
    /// exist in the metadata); a topic outside it has an empty target.
    pub subscribed: &'a BTreeSet<Uuid>,
    /// Whether a partition is owned by a member (assigned or pending revocation).
    pub is_owned: &'a dyn Fn(Uuid, i32) -> bool,
    /// The partitions the member says it owns (`None` when the heartbeat omitted them).
    pub owned: Option<&'a [OwnedTopicPartitions]>,
    /// The subscription changed in this heartbeat: partitions of topics no longer
    /// subscribed are revoked even when the epoch did not move.
    pub enforce_subscription_consistency: bool,
}

/// The member could not be reconciled (an unknown state and it still owns partitions):
/// it must be fenced (FENCED_MEMBER_EPOCH).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MustRejoin;

impl Reconciliation<'_> {
    /// The member's next state, or the member unchanged when it cannot move forward.
    pub fn next(&self, member: &ConsumerGroupMember) -> Result<ConsumerGroupMember, MustRejoin> {
        match member.state {
            MemberState::Stable => {
                if member.member_epoch != self.target_epoch {
                    Ok(self.compute_next(member, member.member_epoch))
                } else if self.enforce_subscription_consistency {
                    Ok(self.update_current(member, member.member_epoch))
                } else {
                    Ok(member.clone())
                }
            }
            MemberState::UnrevokedPartitions => {
                if owns_any_of(self.owned, &member.pending_revocation) {
                    if self.enforce_subscription_consistency {
                        Ok(self.update_current(member, member.member_epoch))
                    } else {
                        Ok(member.clone())
                    }
                } else {
                    Ok(self.compute_next(member, member.member_epoch))
                }
            }
            MemberState::UnreleasedPartitions => Ok(self.compute_next(member, member.member_epoch)),
            MemberState::Unknown => match self.owned {
                Some([]) => Ok(self.compute_next(member, self.target_epoch)),
                _ => Err(MustRejoin),
            },
        }
    }

    /// Kafka's `updateCurrentAssignment`: strips topics the member no longer subscribes
    /// to, without moving toward the target.
    fn update_current(&self, member: &ConsumerGroupMember, epoch: i32) -> ConsumerGroupMember {
        let mut assigned = member.assigned.clone();
        let mut pending = member.pending_revocation.clone();
        if self.subscribed.is_empty() && member.pending_revocation.is_empty() {
            pending = std::mem::take(&mut assigned);
        } else {
            let unsubscribed: Vec<Uuid> = assigned
                .keys()
                .filter(|t| !self.subscribed.contains(t))
                .copied()
                .collect();
            for topic in unsubscribed {
                if let Some(ps) = assigned.remove(&topic) {
                    pending.entry(topic).or_default().extend(ps);
                }
            }
        }
        if assigned == member.assigned {
            return member.clone();
        }
        let mut next = member.clone();
        bump_epoch(&mut next, epoch);
        next.assigned = assigned;
        if !pending.is_empty() && owns_any_of(self.owned, &pending) {
            next.state = MemberState::UnrevokedPartitions;
            next.pending_revocation = pending;
        }
        next
    }

    /// Kafka's `computeNextAssignment`.
    fn compute_next(&self, member: &ConsumerGroupMember, epoch: i32) -> ConsumerGroupMember {
        let empty_target = BTreeSet::new();
        let empty_current = BTreeMap::new();
        let mut topics: BTreeSet<Uuid> = self.target.keys().copied().collect();
        topics.extend(member.assigned.keys().copied());

        let mut has_unreleased = false;
        let mut new_assigned = PartitionEpochs::new();
        let mut new_pending = PartitionEpochs::new();
        let mut to_assign: Partitions = Partitions::new();
        for topic in topics {
            let target = if self.subscribed.contains(&topic) {
                self.target.get(&topic).unwrap_or(&empty_target)
            } else {
                &empty_target
            };
            let current = member.assigned.get(&topic).unwrap_or(&empty_current);
            let kept: BTreeMap<i32, i32> = current
                .iter()
                .filter(|(p, _)| target.contains(p))
                .map(|(p, e)| (*p, *e))
                .collect();
            let revoking: BTreeMap<i32, i32> = current
                .iter()
                .filter(|(p, _)| !kept.contains_key(p))
                .map(|(p, e)| (*p, *e))
                .collect();
            let own_revoking = member.pending_revocation.get(&topic);
            let mut assign = BTreeSet::new();
            for p in target.iter().filter(|p| !kept.contains_key(p)) {
                let released = !(self.is_owned)(topic, *p)
                    || own_revoking.is_some_and(|ps| ps.contains_key(p));
                if released {
                    assign.insert(*p);
                } else {
                    has_unreleased = true;
                }
            }
            if !kept.is_empty() {
                new_assigned.insert(topic, kept);
            }
            if !revoking.is_empty() {
                new_pending.insert(topic, revoking);
            }
            if !assign.is_empty() {
                to_assign.insert(topic, assign);
            }
        }

        let mut next = member.clone();
        if !new_pending.is_empty() && owns_any_of(self.owned, &new_pending) {
            // Revoke first; the member stays in its epoch until it has.
            next.state = MemberState::UnrevokedPartitions;
            bump_epoch(&mut next, epoch);
            next.assigned = new_assigned;
            next.pending_revocation = new_pending;
            return next;
        }
        for (topic, ps) in to_assign {
            let epochs = new_assigned.entry(topic).or_default();
            for p in ps {
                epochs.insert(p, self.target_epoch);
            }
        }
        next.state = if has_unreleased {
            MemberState::UnreleasedPartitions
        } else {
            MemberState::Stable
        };
        bump_epoch(&mut next, self.target_epoch);
        next.assigned = new_assigned;
        next.pending_revocation = PartitionEpochs::new();
        next
    }
}

/// Kafka's `updateMemberEpoch`: the current epoch becomes the previous one.
fn bump_epoch(member: &mut ConsumerGroupMember, epoch: i32) {
    member.previous_member_epoch = member.member_epoch;
    member.member_epoch = epoch;
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Uuid = Uuid([7; 16]);

    fn owned(ps: &[i32]) -> Vec<OwnedTopicPartitions> {
        vec![OwnedTopicPartitions {
            topic_id: T,
            partitions: ps.to_vec(),
            ..Default::default()
        }]
    }

    fn member(epoch: i32, assigned: &[i32]) -> ConsumerGroupMember {
        let mut m = ConsumerGroupMember::new("m".into());
        m.member_epoch = epoch;
        m.previous_member_epoch = epoch - 1;
        if !assigned.is_empty() {
            m.assigned
                .insert(T, assigned.iter().map(|p| (*p, epoch)).collect());
        }
        m
    }

    fn run(
        m: &ConsumerGroupMember,
        epoch: i32,
        target: &[i32],
        owned_now: Option<&[OwnedTopicPartitions]>,
        is_owned: &dyn Fn(Uuid, i32) -> bool,
    ) -> ConsumerGroupMember {
        let target: Partitions = [(T, target.iter().copied().collect())].into();
        let subscribed: BTreeSet<Uuid> = [T].into();
        Reconciliation {
            target_epoch: epoch,
            target: &target,
            subscribed: &subscribed,
            is_owned,
            owned: owned_now,
            enforce_subscription_consistency: false,
        }
        .next(m)
        .unwrap()
    }

    #[test]
    fn revokes_before_moving_to_the_new_epoch() {
        let m = member(1, &[0, 1, 2, 3]);
        let o = owned(&[0, 1, 2, 3]);
        let next = run(&m, 2, &[0, 1], Some(&o), &|_, _| false);
        assert_eq!(next.state, MemberState::UnrevokedPartitions);
        assert_eq!(next.member_epoch, 1);
        assert_eq!(
            next.assigned[&T].keys().copied().collect::<Vec<_>>(),
            [0, 1]
        );
        assert_eq!(
            next.pending_revocation[&T]
                .keys()
                .copied()
                .collect::<Vec<_>>(),
            [2, 3]
        );
        // Still owning 3: no progress.
        let o = owned(&[0, 1, 3]);
        assert_eq!(run(&next, 2, &[0, 1], Some(&o), &|_, _| false), next);
        // Acknowledged: stable at epoch 2, the kept partitions keep their epoch.
        let o = owned(&[0, 1]);
        let done = run(&next, 2, &[0, 1], Some(&o), &|_, _| false);
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!((done.member_epoch, done.previous_member_epoch), (2, 1));
        assert_eq!(done.assigned[&T], [(0, 1), (1, 1)].into());
        assert!(done.pending_revocation.is_empty());
    }

    #[test]
    fn waits_for_partitions_another_member_still_owns() {
        let m = member(1, &[]);
        let next = run(&m, 2, &[4, 5], Some(&[]), &|_, p| p == 5);
        assert_eq!(next.state, MemberState::UnreleasedPartitions);
        assert_eq!(next.member_epoch, 2);
        assert_eq!(next.assigned[&T], [(4, 2)].into());
        let done = run(&next, 2, &[4, 5], Some(&[]), &|_, _| false);
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!(done.assigned[&T], [(4, 2), (5, 2)].into());
    }

    #[test]
    fn unknown_state_rejoins_unless_it_owns_nothing() {
        let mut m = member(3, &[0]);
        m.state = MemberState::Unknown;
        let target: Partitions = [(T, [0].into())].into();
        let subscribed: BTreeSet<Uuid> = [T].into();
        let o = owned(&[0]);
        let r = |owned| Reconciliation {
            target_epoch: 4,
            target: &target,
            subscribed: &subscribed,
            is_owned: &|_, _| false,
            owned,
            enforce_subscription_consistency: false,
        };
        assert_eq!(r(Some(&o)).next(&m), Err(MustRejoin));
        assert_eq!(r(None).next(&m), Err(MustRejoin));
        let next = r(Some(&[])).next(&m).unwrap();
        assert_eq!((next.state, next.member_epoch), (MemberState::Stable, 4));
    }

    #[test]
    fn an_unsubscribed_topic_is_revoked_at_the_same_epoch() {
        let m = member(5, &[0, 1]);
        let target: Partitions = [(T, [0, 1].into())].into();
        let subscribed = BTreeSet::new();
        let o = owned(&[0, 1]);
        let next = Reconciliation {
            target_epoch: 5,
            target: &target,
            subscribed: &subscribed,
            is_owned: &|_, _| false,
            owned: Some(&o),
            enforce_subscription_consistency: true,
        }
        .next(&m)
        .unwrap();
        assert_eq!(next.state, MemberState::UnrevokedPartitions);
        assert_eq!(next.member_epoch, 5);
        assert!(next.assigned.is_empty());
        assert_eq!(next.pending_revocation[&T].len(), 2);
    }
}
