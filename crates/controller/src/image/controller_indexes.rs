//! Indexes of the partitions that only the controller reads: which partitions have no
//! leader, which are led by another than their preferred replica, how many each broker
//! leads, and which partitions' ISR and ELR hold each broker (Kafka keeps these in
//! `ReplicationControlManager`: `BrokersToIsrs`, whose `NO_LEADER` entry is the leaderless
//! set, `imbalancedPartitions` and `BrokersToElrs`). Fencing, unfencing, controlled
//! shutdown, restart and unregistration of a broker visit only the partitions they change
//! through them, instead of every partition of the cluster.
//!
//! They live in the image because the controller's state *is* an image (the committed one
//! and the latest one, each replayed from records, each reverted to as a whole), but only
//! images the controller builds carry them ([`MetadataImage::with_controller_indexes`]):
//! a broker replays the same records onto images without them and pays nothing for
//! their upkeep. A delta keeps them if its base image has them.
//!
//! [`MetadataImage::with_controller_indexes`]: super::MetadataImage::with_controller_indexes

use std::collections::BTreeMap;

use imbl::{OrdMap, OrdSet};
use kraftd_protocol::Uuid;

use super::broker_partitions::{BrokerPartitions, PendingMembers};
use super::topics::{PartitionRegistration, TopicsImage, NO_LEADER};

/// The controller's partition indexes, kept by every delta of an image that has them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ControllerIndexes {
    /// The partitions without a leader, so a broker coming back elects leaders for them
    /// without a scan of every partition. Usually empty.
    pub leaderless: OrdSet<(Uuid, i32)>,
    /// The partitions whose leader is not their preferred replica (the first of their
    /// replicas; leaderless ones too), which the periodic preferred-leader balancing visits
    /// (Kafka's `imbalancedPartitions`). Usually empty.
    pub imbalanced: OrdSet<(Uuid, i32)>,
    /// How many partitions each broker leads (brokers leading none are absent), so a broker
    /// in controlled shutdown learns it leads nothing more without a scan.
    pub leader_counts: OrdMap<i32, u32>,
    /// The partitions each broker is in the ISR of.
    pub isr: BrokerPartitions,
    /// The partitions each broker is in the ELR of, for an unclean restart and an
    /// unregistration, which take the broker out of ELRs too. Usually empty.
    pub elr: BrokerPartitions,
}

impl ControllerIndexes {
    /// The indexes of `topics`, by a scan of every partition: once when the controller
    /// takes an image built without them (a snapshot it loads), and to check them.
    pub fn scan(topics: &TopicsImage) -> Self {
        // Gathered in plain collections, the persistent maps built once at the end: a
        // persistent-map update per partition took ~1.2 s at a million partitions.
        let mut leaderless = Vec::new();
        let mut imbalanced = Vec::new();
        let mut leader_counts: BTreeMap<i32, u32> = BTreeMap::new();
        let (mut isr, mut elr) = (PendingMembers::default(), PendingMembers::default());
        for topic in topics.by_id.values() {
            for (partition_id, p) in topic.partitions.iter() {
                isr.update(topic.id, *partition_id, &[], &p.isr);
                if !p.has_preferred_leader() {
                    imbalanced.push((topic.id, *partition_id));
                }
                if !p.elr.is_empty() {
                    elr.update(topic.id, *partition_id, &[], &p.elr);
                }
                if p.leader == NO_LEADER {
                    leaderless.push((topic.id, *partition_id));
                } else {
                    *leader_counts.entry(p.leader).or_insert(0) += 1;
                }
            }
        }
        ControllerIndexes {
            leaderless: leaderless.into_iter().collect(),
            imbalanced: imbalanced.into_iter().collect(),
            leader_counts: leader_counts.into_iter().collect(),
            isr: isr.into_index(),
            elr: elr.into_index(),
        }
    }

    /// Keeps the indexes right for one partition replaced (`previous`) by `next` (either
    /// absent for a partition created or removed). The leader indexes change at once; the
    /// ISR and ELR changes gather in `pending`, which the delta makes when it applies.
    pub fn index(
        &mut self,
        pending: &mut PendingIndexes,
        topic_id: Uuid,
        partition_id: i32,
        previous: Option<&PartitionRegistration>,
        next: Option<&PartitionRegistration>,
    ) {
        fn members(p: Option<&PartitionRegistration>) -> (&[i32], &[i32]) {
            p.map_or((&[], &[]), |p| (&p.isr, &p.elr))
        }
        let ((previous_isr, previous_elr), (next_isr, next_elr)) =
            (members(previous), members(next));
        if previous_isr != next_isr {
            pending
                .isr
                .update(topic_id, partition_id, previous_isr, next_isr);
        }
        if previous_elr != next_elr {
            pending
                .elr
                .update(topic_id, partition_id, previous_elr, next_elr);
        }
        let balanced =
            |p: Option<&PartitionRegistration>| p.map(PartitionRegistration::has_preferred_leader);
        match (balanced(previous), balanced(next)) {
            (Some(false), Some(true) | None) => {
                self.imbalanced.remove(&(topic_id, partition_id));
            }
            (Some(true) | None, Some(false)) => {
                self.imbalanced.insert((topic_id, partition_id));
            }
            _ => {}
        }
        let (previous_leader, next_leader) = (previous.map(|p| p.leader), next.map(|p| p.leader));
        if previous_leader == next_leader {
            return;
        }
        if let Some(leader) = previous_leader {
            if leader == NO_LEADER {
                self.leaderless.remove(&(topic_id, partition_id));
            } else if let Some(count) = self.leader_counts.get_mut(&leader) {
                *count -= 1;
                if *count == 0 {
                    self.leader_counts.remove(&leader);
                }
            }
        }
        if let Some(leader) = next_leader {
            if leader == NO_LEADER {
                self.leaderless.insert((topic_id, partition_id));
            } else {
                *self.leader_counts.entry(leader).or_insert(0) += 1;
            }
        }
    }
}

/// The ISR and ELR index changes of a delta not made yet (see [`PendingMembers`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct PendingIndexes {
    isr: PendingMembers,
    elr: PendingMembers,
}

impl PendingIndexes {
    /// Makes the gathered changes in `indexes`.
    pub fn apply_to(&self, indexes: &mut ControllerIndexes) {
        self.isr.apply_to(&mut indexes.isr);
        self.elr.apply_to(&mut indexes.elr);
    }
}
