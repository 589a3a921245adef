//! The topics part of the metadata image: topics by id and by name, and each partition's
//! registration (replicas, ISR, ELR, leader, epochs, directories).
//!
//! Partitions are the bulk of the metadata (a cluster may hold a million), so they live in
//! persistent maps: a change to one partition copies one path of a B-tree and nothing else,
//! and every untouched topic and partition stays shared (the same `Arc`) between images.
//! The merge rules of `PartitionChangeRecord` follow Kafka's `PartitionRegistration.merge`.

use std::sync::Arc;

use imbl::{OrdMap, OrdSet};
use kraftd_protocol::metadata::{PartitionChangeRecord, PartitionRecord};
use kraftd_protocol::Uuid;

use super::controller_indexes::{ControllerIndexes, PendingIndexes};
use super::delta::ReplayErrorKind;

/// `Leader` of a `PartitionChangeRecord` meaning "the leader did not change" (Kafka's
/// `LeaderConstants.NO_LEADER_CHANGE`).
pub const NO_LEADER_CHANGE: i32 = -2;
/// `Leader` meaning "there is no leader" (Kafka's `LeaderConstants.NO_LEADER`).
pub const NO_LEADER: i32 = -1;

/// Kafka's `DirectoryId.UNASSIGNED`: a replica whose log directory is not known yet.
pub const DIRECTORY_UNASSIGNED: Uuid = Uuid([0; 16]);
/// Kafka's `DirectoryId.LOST`: a replica whose log directory went offline.
pub const DIRECTORY_LOST: Uuid = Uuid([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
/// Kafka's `DirectoryId.MIGRATING`: written for replicas of records that carry no directories
/// (older record versions), so every partition has one directory per replica.
pub const DIRECTORY_MIGRATING: Uuid = Uuid([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);

/// All topics. Cheap to clone: every map is persistent.
#[derive(Debug, Clone, Default)]
pub struct TopicsImage {
    /// Each topic, shared between images until it changes.
    pub(crate) by_id: OrdMap<Uuid, Arc<TopicImage>>,
    /// Name to id; a second index rather than a second copy of each topic.
    pub(crate) by_name: OrdMap<String, Uuid>,
    /// The names with '.' or '_' by their unified form (Kafka's `topicsWithCollisionChars`),
    /// so CreateTopics finds a colliding name with one lookup instead of a scan of every
    /// topic. A set per form: logs written elsewhere may hold two colliding names.
    pub(crate) by_unified_name: OrdMap<String, OrdSet<String>>,
    /// The leader, ISR and ELR indexes, in the controller's images only.
    pub(crate) indexes: Option<ControllerIndexes>,
}

/// Images are equal when their topics are: the controller's indexes are derived from the
/// partitions (and checked against them by `check_invariants`), so a controller's image
/// equals a broker's image of the same records.
impl PartialEq for TopicsImage {
    fn eq(&self, other: &Self) -> bool {
        self.by_id == other.by_id
            && self.by_name == other.by_name
            && self.by_unified_name == other.by_unified_name
    }
}

impl Eq for TopicsImage {}

/// The name with '.' replaced by '_': two topics with the same unified name collide in
/// metric names (Kafka's `Topic.unifyCollisionChars`).
pub fn unify_collision_chars(name: &str) -> String {
    name.replace('.', "_")
}

/// Whether a name can collide with another one (it holds '.' or '_').
fn has_collision_chars(name: &str) -> bool {
    name.contains(['.', '_'])
}

/// One topic and its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicImage {
    pub name: String,
    pub id: Uuid,
    /// Partition id to registration; each registration is shared until it changes.
    pub partitions: OrdMap<i32, Arc<PartitionRegistration>>,
}

/// Whether a partition's leader came from an unclean election and is still recovering
/// (KIP-704). Kafka's `LeaderRecoveryState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LeaderRecoveryState {
    /// The leader was elected from the ISR, or has recovered from an unclean election.
    Recovered = 0,
    /// The leader was elected uncleanly and has not recovered yet.
    Recovering = 1,
}

/// The registration of one partition, as Kafka's `PartitionRegistration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRegistration {
    /// All replicas in preferred order (adding and removing ones included).
    pub replicas: Vec<i32>,
    /// The log directory of each replica, in the order of `replicas`.
    pub directories: Vec<Uuid>,
    pub isr: Vec<i32>,
    pub removing_replicas: Vec<i32>,
    pub adding_replicas: Vec<i32>,
    /// Eligible leader replicas (KIP-966): out of the ISR but known to hold the committed data.
    pub elr: Vec<i32>,
    /// The ELR members last known before the ELR emptied (KIP-966).
    pub last_known_elr: Vec<i32>,
    /// The leader, or [`NO_LEADER`].
    pub leader: i32,
    pub leader_recovery_state: LeaderRecoveryState,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
}

impl TopicsImage {
    /// The topic with this id.
    pub fn get(&self, id: &Uuid) -> Option<&Arc<TopicImage>> {
        self.by_id.get(id)
    }

    /// The topic with this name.
    pub fn get_by_name(&self, name: &str) -> Option<&Arc<TopicImage>> {
        self.by_name.get(name).and_then(|id| self.by_id.get(id))
    }

    /// A partition by topic id and partition id.
    pub fn partition(&self, id: &Uuid, partition: i32) -> Option<&Arc<PartitionRegistration>> {
        self.by_id
            .get(id)
            .and_then(|t| t.partitions.get(&partition))
    }

    /// Topics in id order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<TopicImage>> {
        self.by_id.values()
    }

    /// Topic names to ids, in name order.
    pub fn names(&self) -> impl Iterator<Item = (&String, &Uuid)> {
        self.by_name.iter()
    }

    /// Another topic whose name differs from `name` only by '.' versus '_', if any.
    pub fn colliding_name(&self, name: &str) -> Option<&String> {
        if !has_collision_chars(name) {
            return None;
        }
        self.by_unified_name
            .get(&unify_collision_chars(name))?
            .iter()
            .find(|other| other.as_str() != name)
    }

    /// Indexes a name just added to `by_name`.
    pub(crate) fn index_name(&mut self, name: &str) {
        if has_collision_chars(name) {
            self.by_unified_name
                .entry(unify_collision_chars(name))
                .or_default()
                .insert(name.to_string());
        }
    }

    /// Drops a name just removed from `by_name` from the index.
    pub(crate) fn unindex_name(&mut self, name: &str) {
        if !has_collision_chars(name) {
            return;
        }
        let unified = unify_collision_chars(name);
        if let Some(names) = self.by_unified_name.get_mut(&unified) {
            names.remove(name);
            if names.is_empty() {
                self.by_unified_name.remove(&unified);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// The partitions without a leader, as (topic id, partition id), in order. From the
    /// index in a controller's image, by a scan in another.
    pub fn leaderless(&self) -> Vec<(Uuid, i32)> {
        match &self.indexes {
            Some(indexes) => indexes.leaderless.iter().copied().collect(),
            None => self.scan(|p| !p.has_leader()),
        }
    }

    /// The partitions not led by their preferred replica (the first of their replicas),
    /// leaderless ones included, as (topic id, partition id), in order. From the index in a
    /// controller's image, by a scan in another.
    pub fn imbalanced(&self) -> Vec<(Uuid, i32)> {
        match &self.indexes {
            Some(indexes) => indexes.imbalanced.iter().copied().collect(),
            None => self.scan(|p| !p.has_preferred_leader()),
        }
    }

    /// Whether any partition has no leader ([`Self::leaderless`] without collecting them).
    pub fn any_leaderless(&self) -> bool {
        match &self.indexes {
            Some(indexes) => !indexes.leaderless.is_empty(),
            None => !self.leaderless().is_empty(),
        }
    }

    /// Whether any partition is not led by its preferred replica ([`Self::imbalanced`]
    /// without collecting them).
    pub fn any_imbalanced(&self) -> bool {
        match &self.indexes {
            Some(indexes) => !indexes.imbalanced.is_empty(),
            None => !self.imbalanced().is_empty(),
        }
    }

    /// How many partitions `broker` leads (from the index in a controller's image, by a
    /// scan in another).
    pub fn leader_count(&self, broker: i32) -> u32 {
        match &self.indexes {
            Some(indexes) => indexes.leader_counts.get(&broker).copied().unwrap_or(0),
            None => self.scan(|p| p.leader == broker).len() as u32,
        }
    }

    /// The partitions whose ISR holds `broker`, as (topic id, partition id) in order (from
    /// the index in a controller's image, by a scan in another).
    pub fn partitions_with_isr_member(&self, broker: i32) -> Vec<(Uuid, i32)> {
        match &self.indexes {
            Some(indexes) => indexes.isr.partitions(broker).collect(),
            None => self.scan(|p| p.isr.contains(&broker)),
        }
    }

    /// The partitions whose ELR holds `broker`, as (topic id, partition id) in order (from
    /// the index in a controller's image, by a scan in another).
    pub fn partitions_with_elr_member(&self, broker: i32) -> Vec<(Uuid, i32)> {
        match &self.indexes {
            Some(indexes) => indexes.elr.partitions(broker).collect(),
            None => self.scan(|p| p.elr.contains(&broker)),
        }
    }

    /// Every partition `select` picks, in (topic id, partition id) order.
    fn scan(&self, select: impl Fn(&PartitionRegistration) -> bool) -> Vec<(Uuid, i32)> {
        self.by_id
            .values()
            .flat_map(|t| t.partitions.iter().map(move |(pid, p)| (t.id, *pid, p)))
            .filter(|(_, _, p)| select(p))
            .map(|(id, pid, _)| (id, pid))
            .collect()
    }

    /// Keeps the controller's indexes (if this image has them) right for one partition
    /// replaced (`previous`) by `next`; see [`ControllerIndexes::index`].
    pub(crate) fn index_partition(
        &mut self,
        pending: &mut PendingIndexes,
        topic_id: Uuid,
        partition_id: i32,
        previous: Option<&PartitionRegistration>,
        next: Option<&PartitionRegistration>,
    ) {
        if let Some(indexes) = self.indexes.as_mut() {
            indexes.index(pending, topic_id, partition_id, previous, next);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

impl LeaderRecoveryState {
    /// The state a record's byte names; `None` for a value Kafka does not define.
    pub fn from_i8(value: i8) -> Option<Self> {
        match value {
            0 => Some(LeaderRecoveryState::Recovered),
            1 => Some(LeaderRecoveryState::Recovering),
            _ => None,
        }
    }

    pub fn code(self) -> i8 {
        self as i8
    }
}

impl PartitionRegistration {
    /// The registration a `PartitionRecord` describes; records without directories get
    /// [`DIRECTORY_MIGRATING`] for each replica, as in Kafka.
    pub fn from_record(record: &PartitionRecord) -> Result<Self, ReplayErrorKind> {
        if record.leader < NO_LEADER {
            return Err(ReplayErrorKind::InvalidLeader(record.leader));
        }
        let leader_recovery_state = LeaderRecoveryState::from_i8(record.leader_recovery_state)
            .ok_or(ReplayErrorKind::InvalidLeaderRecoveryState(
                record.leader_recovery_state,
            ))?;
        let directories = if record.directories.is_empty() {
            vec![DIRECTORY_MIGRATING; record.replicas.len()]
        } else {
            record.directories.clone()
        };
        let partition = PartitionRegistration {
            replicas: record.replicas.clone(),
            directories,
            isr: record.isr.clone(),
            removing_replicas: record.removing_replicas.clone(),
            adding_replicas: record.adding_replicas.clone(),
            elr: record.eligible_leader_replicas.clone().unwrap_or_default(),
            last_known_elr: record.last_known_elr.clone().unwrap_or_default(),
            leader: record.leader,
            leader_recovery_state,
            leader_epoch: record.leader_epoch,
            partition_epoch: record.partition_epoch,
        };
        partition.validate()?;
        Ok(partition)
    }

    /// The registration after a `PartitionChangeRecord`, as Kafka's
    /// `PartitionRegistration.merge`: a null field (or `Leader` -2, `LeaderRecoveryState` -1)
    /// means "unchanged"; any leader field other than -2 bumps the leader epoch, even if it
    /// names the same leader; the partition epoch always bumps. Pure: `self` is untouched.
    pub fn merge(&self, record: &PartitionChangeRecord) -> Result<Self, ReplayErrorKind> {
        let replicas = record
            .replicas
            .clone()
            .unwrap_or_else(|| self.replicas.clone());
        let directories = match (&record.directories, &record.replicas) {
            (Some(dirs), _) if !dirs.is_empty() => dirs.clone(),
            // New replicas keep the directory they had; new ones are not assigned yet.
            (_, Some(new_replicas)) => new_replicas
                .iter()
                .map(|r| self.directory(*r).unwrap_or(DIRECTORY_UNASSIGNED))
                .collect(),
            _ => self.directories.clone(),
        };
        let (leader, leader_epoch) = if record.leader == NO_LEADER_CHANGE {
            (self.leader, self.leader_epoch)
        } else if record.leader < NO_LEADER {
            return Err(ReplayErrorKind::InvalidLeader(record.leader));
        } else {
            let epoch = self
                .leader_epoch
                .checked_add(1)
                .ok_or(ReplayErrorKind::EpochOverflow)?;
            (record.leader, epoch)
        };
        let leader_recovery_state = match record.leader_recovery_state {
            -1 => self.leader_recovery_state,
            value => LeaderRecoveryState::from_i8(value)
                .ok_or(ReplayErrorKind::InvalidLeaderRecoveryState(value))?,
        };
        let partition_epoch = self
            .partition_epoch
            .checked_add(1)
            .ok_or(ReplayErrorKind::EpochOverflow)?;
        let next = PartitionRegistration {
            replicas,
            directories,
            isr: record.isr.clone().unwrap_or_else(|| self.isr.clone()),
            removing_replicas: record
                .removing_replicas
                .clone()
                .unwrap_or_else(|| self.removing_replicas.clone()),
            adding_replicas: record
                .adding_replicas
                .clone()
                .unwrap_or_else(|| self.adding_replicas.clone()),
            elr: record
                .eligible_leader_replicas
                .clone()
                .unwrap_or_else(|| self.elr.clone()),
            last_known_elr: record
                .last_known_elr
                .clone()
                .unwrap_or_else(|| self.last_known_elr.clone()),
            leader,
            leader_recovery_state,
            leader_epoch,
            partition_epoch,
        };
        next.validate()?;
        Ok(next)
    }

    /// The registration with ELR and last known ELR emptied (a `ClearElrRecord`), which Kafka
    /// replays as a `PartitionChangeRecord` setting both to empty; `None` if both already are.
    pub fn without_elr(&self) -> Result<Option<Self>, ReplayErrorKind> {
        if self.elr.is_empty() && self.last_known_elr.is_empty() {
            return Ok(None);
        }
        let change = PartitionChangeRecord {
            eligible_leader_replicas: Some(Vec::new()),
            last_known_elr: Some(Vec::new()),
            ..Default::default()
        };
        self.merge(&change).map(Some)
    }

    /// The log directory of `replica`, if it is a replica.
    pub fn directory(&self, replica: i32) -> Option<Uuid> {
        self.replicas
            .iter()
            .position(|r| *r == replica)
            .and_then(|i| self.directories.get(i).copied())
    }

    /// Whether the partition is led by its preferred replica, the first of its replicas
    /// (Kafka's `PartitionRegistration.hasPreferredLeader`: a leaderless partition is not).
    pub fn has_preferred_leader(&self) -> bool {
        self.replicas.first().map_or(NO_LEADER, |r| *r) == self.leader
    }

    pub fn has_leader(&self) -> bool {
        self.leader != NO_LEADER
    }

    /// The invariants every registration keeps; a record breaking one is refused, so an
    /// image never holds a partition that breaks them.
    pub fn validate(&self) -> Result<(), ReplayErrorKind> {
        use PartitionInvariant as I;
        let fail = |i: PartitionInvariant| Err(ReplayErrorKind::PartitionInvariant(i));
        if let Some(r) = first_duplicate(&self.replicas) {
            return fail(I::DuplicateReplica(r));
        }
        if self.directories.len() != self.replicas.len() {
            return fail(I::DirectoriesLength {
                replicas: self.replicas.len(),
                directories: self.directories.len(),
            });
        }
        if let Some(r) = first_duplicate(&self.isr) {
            return fail(I::DuplicateIsr(r));
        }
        if let Some(r) = first_duplicate(&self.elr) {
            return fail(I::DuplicateElr(r));
        }
        if let Some(r) = self.isr.iter().find(|r| !self.replicas.contains(r)) {
            return fail(I::IsrNotReplica(*r));
        }
        if let Some(r) = self.elr.iter().find(|r| !self.replicas.contains(r)) {
            return fail(I::ElrNotReplica(*r));
        }
        if let Some(r) = self.elr.iter().find(|r| self.isr.contains(r)) {
            return fail(I::ElrInIsr(*r));
        }
        for list in [&self.adding_replicas, &self.removing_replicas] {
            if let Some(r) = list.iter().find(|r| !self.replicas.contains(r)) {
                return fail(I::ReassigningNotReplica(*r));
            }
        }
        if self.leader != NO_LEADER {
            let recovering = self.leader_recovery_state == LeaderRecoveryState::Recovering;
            let allowed = self.isr.contains(&self.leader)
                || (recovering && self.replicas.contains(&self.leader));
            if !allowed {
                return fail(I::LeaderNotInIsr(self.leader));
            }
        }
        Ok(())
    }
}

/// Which partition invariant a record would break.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionInvariant {
    #[error("replica {0} is listed twice")]
    DuplicateReplica(i32),
    #[error("{directories} directories for {replicas} replicas")]
    DirectoriesLength { replicas: usize, directories: usize },
    #[error("ISR member {0} is listed twice")]
    DuplicateIsr(i32),
    #[error("ELR member {0} is listed twice")]
    DuplicateElr(i32),
    #[error("ISR member {0} is not a replica")]
    IsrNotReplica(i32),
    #[error("ELR member {0} is not a replica")]
    ElrNotReplica(i32),
    #[error("{0} is in both the ISR and the ELR")]
    ElrInIsr(i32),
    #[error("adding or removing replica {0} is not a replica")]
    ReassigningNotReplica(i32),
    #[error("leader {0} is not in the ISR (and the partition is not recovering)")]
    LeaderNotInIsr(i32),
}

impl TopicImage {
    /// An empty topic, as a `TopicRecord` creates it.
    pub fn new(name: String, id: Uuid) -> Self {
        TopicImage {
            name,
            id,
            partitions: OrdMap::new(),
        }
    }

    pub fn partition(&self, id: i32) -> Option<&Arc<PartitionRegistration>> {
        self.partitions.get(&id)
    }
}

fn first_duplicate(list: &[i32]) -> Option<i32> {
    // Lists are replica-sized (a handful), so the quadratic scan beats allocating a set.
    list.iter()
        .enumerate()
        .find(|(i, r)| list[..*i].contains(r))
        .map(|(_, r)| *r)
}
