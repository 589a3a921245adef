//! The server-side assignors (Kafka's `ConsumerGroupPartitionAssignor`s): given every
//! member's subscription (as topic ids) and its current target assignment, the new target
//! assignment. Both are deterministic: members are taken in member id order and partitions
//! in (topic id, partition) order, so the same input always gives the same output.

pub mod range;
pub mod uniform;

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::Uuid;

use super::member::Partitions;
use crate::group::config::AssignorName;

/// One member as an assignor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignmentMember {
    pub member_id: String,
    /// The topics the member subscribes to that exist.
    pub topics: BTreeSet<Uuid>,
    /// Its target assignment before this one (stickiness).
    pub current: Partitions,
}

/// What an assignor assigns from.
#[derive(Debug, Clone, Default)]
pub struct GroupSpec {
    pub members: Vec<AssignmentMember>,
    /// Partition counts of every topic any member subscribes to.
    pub partitions: BTreeMap<Uuid, i32>,
}

impl GroupSpec {
    /// Every member subscribes to the same topics (Kafka's HOMOGENEOUS subscription).
    pub fn is_homogeneous(&self) -> bool {
        self.members.windows(2).all(|w| w[0].topics == w[1].topics)
    }

    fn sorted(mut self) -> Self {
        self.members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
        self
    }
}

/// The new target assignment of every member (members with nothing map to an empty map).
pub fn assign(name: AssignorName, spec: GroupSpec) -> BTreeMap<String, Partitions> {
    let spec = spec.sorted();
    let mut out = match name {
        AssignorName::Uniform => uniform::assign(&spec),
        AssignorName::Range => range::assign(&spec),
    };
    for m in &spec.members {
        out.entry(m.member_id.clone()).or_default();
    }
    out
}
