//! `PartitionChangeBuilder`: given one partition's registration and a wanted change (a new
//! ISR, a replica that shut down uncleanly, a leader election), decides the single
//! `PartitionChangeRecord` that makes it, or none if nothing would change. Kafka's
//! `org.apache.kafka.controller.PartitionChangeBuilder`, the one place where leaders are
//! elected and the KIP-966 Eligible Leader Replicas are kept, so every caller (AlterPartition,
//! fencing, unfencing, controlled shutdown, unclean shutdown, ElectLeaders) gets the same rules.
//!
//! Leader election order (Kafka 4.x): the current leader if still valid; else the first
//! replica in assignment order that is in the target ISR and acceptable (unfenced, not
//! shutting down); when the ISR is empty, the first such member of the ELR; then the last
//! known leader when ISR and ELR are both empty (it may hold data nobody else has); and only
//! for an unclean election (`unclean.leader.election.enable`) any acceptable replica, which
//! then leads alone with leader recovery state RECOVERING (KIP-704).
//!
//! ELR (KIP-966), when `eligible.leader.replicas.version` ≥ 1: while the target ISR is below
//! `min.insync.replicas`, the ELR becomes (ELR ∪ current ISR) − target ISR − replicas that
//! shut down uncleanly; at or above min ISR it is cleared. A member elected from the ELR moves
//! into the ISR alone. `LastKnownElr` holds the last leader once the ISR empties ("balanced
//! recovery"), cleared when the partition has a leader again.
//!
//! Reassignment (KIP-455): the builder carries target replicas, adding and removing replicas
//! (the partition's own unless a caller sets them). Every build first checks whether a
//! running reassignment can complete against the target ISR (Kafka's
//! `PartitionReassignmentReplicas.maybeCompleteReassignment`: once the ISR less the removing
//! replicas holds every remaining replica, the replicas become the target and the ISR is
//! filtered to it), so any ISR change (AlterPartition, fencing, shutdown) completes one.
//! Elections walk the target replicas; a change that drops a replica bumps the leader epoch
//! even when the leader stays. Stricter than Kafka: the ELR (and a last known leader) is kept
//! within the target replicas, as the image's invariants require.
//!
//! Directory assignment (KIP-858): a replica's log directory set with `set_directory` is
//! written as the whole `Directories` list when it differs; the others keep theirs, and a
//! replica new to the partition starts UNASSIGNED (as the image's merge reads it).
//!
//! Not here yet: the leader epoch bump on ISR shrink that only
//! metadata versions before 3.6 need (KAFKA-15021).

use std::fmt;

use kraftd_protocol::metadata::PartitionChangeRecord;
use kraftd_protocol::Uuid;

use crate::image::{
    LeaderRecoveryState, PartitionRegistration, DIRECTORY_UNASSIGNED, NO_LEADER, NO_LEADER_CHANGE,
};

/// Which election the change may run, as Kafka's `PartitionChangeBuilder.Election`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Election {
    /// Elect the preferred (first) replica if it is a valid leader, else as `Online`.
    Preferred,
    /// Keep the partition online with a leader from the ISR (or ELR, or last known leader).
    Online,
    /// As `Online`, but fall back to any acceptable replica even outside the ISR (data loss).
    Unclean,
}

/// Builds the `PartitionChangeRecord` for one partition. `F` says whether a broker may lead
/// (Kafka's `isAcceptableLeader`): callers decide, e.g. a broker being fenced never may.
pub struct PartitionChangeBuilder<'a, F: Fn(i32) -> bool> {
    partition: &'a PartitionRegistration,
    topic_id: Uuid,
    partition_id: i32,
    is_acceptable_leader: F,
    min_isr: usize,
    elr_enabled: bool,
    election: Election,
    target_isr: Vec<i32>,
    target_elr: Vec<i32>,
    target_replicas: Vec<i32>,
    target_removing: Vec<i32>,
    target_adding: Vec<i32>,
    unclean_shutdown_replicas: Vec<i32>,
    target_leader_recovery_state: LeaderRecoveryState,
    /// Replicas whose directory changes (Kafka's `targetDirectories` entries set by
    /// `setDirectory`).
    target_directories: Vec<(i32, Uuid)>,
}

/// The outcome of an election: who, and whether it was unclean (outside the ISR and ELR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ElectionResult {
    node: i32,
    unclean: bool,
}

impl<'a, F: Fn(i32) -> bool> PartitionChangeBuilder<'a, F> {
    /// A builder that by default changes nothing: the target ISR and ELR are the current ones,
    /// the election is `Online`, ELR maintenance is off.
    pub fn new(
        partition: &'a PartitionRegistration,
        topic_id: Uuid,
        partition_id: i32,
        is_acceptable_leader: F,
        min_isr: usize,
    ) -> Self {
        PartitionChangeBuilder {
            partition,
            topic_id,
            partition_id,
            is_acceptable_leader,
            min_isr,
            elr_enabled: false,
            election: Election::Online,
            target_isr: partition.isr.clone(),
            target_elr: partition.elr.clone(),
            target_replicas: partition.replicas.clone(),
            target_removing: partition.removing_replicas.clone(),
            target_adding: partition.adding_replicas.clone(),
            unclean_shutdown_replicas: Vec::new(),
            target_leader_recovery_state: partition.leader_recovery_state,
            target_directories: Vec::new(),
        }
    }

    pub fn set_target_isr(mut self, isr: Vec<i32>) -> Self {
        self.target_isr = isr;
        self
    }

    /// The replica list to write (a reassignment's union of target and current replicas,
    /// or the target itself when it completes or is reverted).
    pub fn set_target_replicas(mut self, replicas: Vec<i32>) -> Self {
        self.target_replicas = replicas;
        self
    }

    /// The replicas a reassignment is removing.
    pub fn set_target_removing(mut self, removing: Vec<i32>) -> Self {
        self.target_removing = removing;
        self
    }

    /// The replicas a reassignment is adding.
    pub fn set_target_adding(mut self, adding: Vec<i32>) -> Self {
        self.target_adding = adding;
        self
    }

    pub fn set_election(mut self, election: Election) -> Self {
        self.election = election;
        self
    }

    /// Whether KIP-966 ELR maintenance applies (the `eligible.leader.replicas.version` feature).
    pub fn set_eligible_leader_replicas_enabled(mut self, enabled: bool) -> Self {
        self.elr_enabled = enabled;
        self
    }

    /// Replicas that restarted after an unclean shutdown: they may have lost committed data,
    /// so they leave the ELR and may not lead.
    pub fn set_unclean_shutdown_replicas(mut self, replicas: Vec<i32>) -> Self {
        self.unclean_shutdown_replicas = replicas;
        self
    }

    /// The log directory `broker`'s replica is in (AssignReplicasToDirs). Only for metadata
    /// versions with directories: the record then carries every replica's directory.
    pub fn set_directory(mut self, broker: i32, dir: Uuid) -> Self {
        self.target_directories.retain(|(b, _)| *b != broker);
        self.target_directories.push((broker, dir));
        self
    }

    pub fn set_target_leader_recovery_state(mut self, state: LeaderRecoveryState) -> Self {
        self.target_leader_recovery_state = state;
        self
    }

    /// The record making the change, or `None` when the partition would not change.
    pub fn build(mut self) -> Option<PartitionChangeRecord> {
        let mut record = PartitionChangeRecord {
            topic_id: self.topic_id,
            partition_id: self.partition_id,
            ..Default::default()
        };
        self.complete_reassignment_if_needed();
        self.maybe_populate_target_elr();
        self.try_election(&mut record);
        self.trigger_leader_epoch_bump_for_reassignment(&mut record);
        self.maybe_update_record_elr(&mut record);
        // Without ELR the ISR never empties: the last member stays, as Kafka's old rule.
        if record.isr.is_none()
            && (!self.target_isr.is_empty() || self.elr_enabled)
            && self.target_isr != self.partition.isr
        {
            record.isr = Some(self.target_isr.clone());
        }
        self.maybe_update_last_known_leader(&mut record);
        self.set_assignment_changes(&mut record);
        if self.target_leader_recovery_state != self.partition.leader_recovery_state
            && record.leader_recovery_state == -1
        {
            record.leader_recovery_state = self.target_leader_recovery_state.code();
        }
        (!change_record_is_no_op(&record)).then_some(record)
    }

    fn elect_leader(&self) -> ElectionResult {
        match self.election {
            Election::Preferred => self.elect_preferred_leader(),
            Election::Online | Election::Unclean => self.elect_any_leader(),
        }
    }

    fn elect_preferred_leader(&self) -> ElectionResult {
        let clean = |node| ElectionResult {
            node,
            unclean: false,
        };
        if let Some(&preferred) = self.target_replicas.first() {
            if self.is_valid_new_leader(preferred) {
                return clean(preferred);
            }
        }
        if self.is_valid_new_leader(self.partition.leader) {
            return clean(self.partition.leader);
        }
        if let Some(&r) = self
            .target_replicas
            .iter()
            .skip(1)
            .find(|r| self.is_valid_new_leader(**r))
        {
            return clean(r);
        }
        self.last_known_leader().unwrap_or(clean(NO_LEADER))
    }

    fn elect_any_leader(&self) -> ElectionResult {
        let clean = |node| ElectionResult {
            node,
            unclean: false,
        };
        // A leader that still qualifies keeps leading: no needless epoch bump.
        if self.is_valid_new_leader(self.partition.leader) {
            return clean(self.partition.leader);
        }
        if let Some(&r) = self
            .target_replicas
            .iter()
            .find(|r| self.is_valid_new_leader(**r))
        {
            return clean(r);
        }
        if let Some(result) = self.last_known_leader() {
            return result;
        }
        if self.election == Election::Unclean {
            if let Some(&r) = self
                .target_replicas
                .iter()
                .find(|r| (self.is_acceptable_leader)(**r))
            {
                return ElectionResult {
                    node: r,
                    unclean: true,
                };
            }
        }
        clean(NO_LEADER)
    }

    /// The last known leader (KIP-966 balanced recovery), when ISR and ELR are both empty and
    /// it is alive: it may hold data no other replica has. Counted as unclean, because
    /// nothing proves it has everything committed.
    fn last_known_leader(&self) -> Option<ElectionResult> {
        if !self.elr_enabled || !self.target_elr.is_empty() || !self.target_isr.is_empty() {
            return None;
        }
        match self.partition.last_known_elr.as_slice() {
            [leader]
                if (self.is_acceptable_leader)(*leader)
                    && self.target_replicas.contains(leader)
                    && !self.unclean_shutdown_replicas.contains(leader) =>
            {
                Some(ElectionResult {
                    node: *leader,
                    unclean: true,
                })
            }
            _ => None,
        }
    }

    /// A valid new leader is in the target ISR, or in the ELR when the ISR is empty, and
    /// acceptable.
    fn is_valid_new_leader(&self, replica: i32) -> bool {
        let eligible = self.target_isr.contains(&replica)
            || (self.target_isr.is_empty() && self.target_elr.contains(&replica));
        eligible && (self.is_acceptable_leader)(replica)
    }

    fn try_election(&mut self, record: &mut PartitionChangeRecord) {
        let result = self.elect_leader();
        if result.node == self.partition.leader {
            return;
        }
        if self.target_elr.contains(&result.node) {
            // Elected from the ELR: it holds the committed data, so it is the new ISR.
            self.target_isr = vec![result.node];
            self.target_elr.retain(|r| *r != result.node);
        } else if result.unclean {
            tracing::info!(topic_id = ?self.topic_id, partition = self.partition_id,
                leader = result.node, "unclean leader election");
        }
        record.leader = result.node;
        if result.unclean {
            // An unclean leader leads alone until it has recovered (KIP-704).
            record.isr = Some(vec![result.node]);
            if self.partition.leader_recovery_state != LeaderRecoveryState::Recovering {
                record.leader_recovery_state = LeaderRecoveryState::Recovering.code();
            }
        }
    }

    fn maybe_populate_target_elr(&mut self) {
        if !self.elr_enabled {
            return;
        }
        if self.target_isr.len() >= self.min_isr {
            self.target_elr.clear();
            return;
        }
        // ELR ∪ current ISR, minus the target ISR and replicas that lost data. Sorted by id,
        // which is the order Kafka's hash set of small integers gives.
        let mut elr: Vec<i32> = self
            .target_elr
            .iter()
            .chain(self.partition.isr.iter())
            .copied()
            .filter(|r| !self.target_isr.contains(r))
            .filter(|r| !self.unclean_shutdown_replicas.contains(r))
            .filter(|r| self.target_replicas.contains(r))
            .collect();
        elr.sort_unstable();
        elr.dedup();
        self.target_elr = elr;
    }

    /// Kafka's `completeReassignmentIfNeeded`: when the target ISR less the removing replicas
    /// is non-empty and holds every replica that stays, the reassignment is done: replicas
    /// and ISR lose the removing replicas and adding/removing empty.
    fn complete_reassignment_if_needed(&mut self) {
        if self.target_removing.is_empty() && self.target_adding.is_empty() {
            return;
        }
        let removing = &self.target_removing;
        let isr: Vec<i32> = self
            .target_isr
            .iter()
            .copied()
            .filter(|r| !removing.contains(r))
            .collect();
        let replicas: Vec<i32> = self
            .target_replicas
            .iter()
            .copied()
            .filter(|r| !removing.contains(r))
            .collect();
        if isr.is_empty() || replicas.is_empty() || !replicas.iter().all(|r| isr.contains(r)) {
            return;
        }
        tracing::info!(topic_id = ?self.topic_id, partition = self.partition_id,
            replicas = ?replicas, "partition reassignment completes");
        self.target_isr = isr;
        // An ELR member being removed leaves with its replica.
        self.target_elr.retain(|r| replicas.contains(r));
        self.target_replicas = replicas;
        self.target_removing.clear();
        self.target_adding.clear();
    }

    /// Kafka's `triggerLeaderEpochBumpForReplicaReassignmentIfNeeded`: a replica list that
    /// drops a broker bumps the leader epoch (the leader field set to the same leader), so
    /// the removed replica's fetches are fenced.
    fn trigger_leader_epoch_bump_for_reassignment(&self, record: &mut PartitionChangeRecord) {
        if record.leader != NO_LEADER_CHANGE {
            return;
        }
        if !self
            .partition
            .replicas
            .iter()
            .all(|r| self.target_replicas.contains(r))
        {
            record.leader = self.partition.leader;
        }
    }

    /// Kafka's `setAssignmentChanges`: replicas, removing and adding where they differ.
    fn set_assignment_changes(&self, record: &mut PartitionChangeRecord) {
        if !self.target_directories.is_empty() && !self.target_replicas.is_empty() {
            let directories: Vec<Uuid> = self
                .target_replicas
                .iter()
                .map(|r| {
                    self.target_directories
                        .iter()
                        .find(|(b, _)| b == r)
                        .map(|(_, d)| *d)
                        .or_else(|| self.partition.directory(*r))
                        .unwrap_or(DIRECTORY_UNASSIGNED)
                })
                .collect();
            if directories != self.partition.directories {
                record.directories = Some(directories);
            }
        }
        if !self.target_replicas.is_empty() && self.target_replicas != self.partition.replicas {
            record.replicas = Some(self.target_replicas.clone());
        }
        if self.target_removing != self.partition.removing_replicas {
            record.removing_replicas = Some(self.target_removing.clone());
        }
        if self.target_adding != self.partition.adding_replicas {
            record.adding_replicas = Some(self.target_adding.clone());
        }
    }

    fn maybe_update_record_elr(&mut self, record: &mut PartitionChangeRecord) {
        // An unclean election set the ISR already; nothing it replaced is eligible any more.
        let clean_election = record.isr.is_none();
        if !clean_election || !self.elr_enabled {
            self.target_elr.clear();
        }
        if self.target_elr != self.partition.elr {
            record.eligible_leader_replicas = Some(self.target_elr.clone());
        }
    }

    fn maybe_update_last_known_leader(&self, record: &mut PartitionChangeRecord) {
        if !self.elr_enabled {
            return;
        }
        let p = self.partition;
        let isr_empties = record.isr.as_ref().is_some_and(|isr| isr.is_empty());
        if isr_empties {
            // Remember the leader the first time the partition becomes leaderless.
            if p.leader != NO_LEADER && p.last_known_elr != [p.leader] {
                record.last_known_elr = Some(vec![p.leader]);
            }
        } else if (record.leader >= 0 || (p.leader != NO_LEADER && record.leader != NO_LEADER))
            && !p.last_known_elr.is_empty()
        {
            // The partition has (or keeps) a leader: the last known leader is no longer needed.
            record.last_known_elr = Some(Vec::new());
        }
    }
}

impl<F: Fn(i32) -> bool> fmt::Debug for PartitionChangeBuilder<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionChangeBuilder")
            .field("partition", &self.partition)
            .field("topic_id", &self.topic_id)
            .field("partition_id", &self.partition_id)
            .field("min_isr", &self.min_isr)
            .field("elr_enabled", &self.elr_enabled)
            .field("election", &self.election)
            .field("target_isr", &self.target_isr)
            .field("target_elr", &self.target_elr)
            .field("target_replicas", &self.target_replicas)
            .field("target_removing", &self.target_removing)
            .field("target_adding", &self.target_adding)
            .field("unclean_shutdown_replicas", &self.unclean_shutdown_replicas)
            .finish_non_exhaustive()
    }
}

/// Whether a record would change nothing (Kafka's `changeRecordIsNoOp`): then none is written.
pub fn change_record_is_no_op(record: &PartitionChangeRecord) -> bool {
    record.isr.is_none()
        && record.eligible_leader_replicas.is_none()
        && record.last_known_elr.is_none()
        && record.leader == NO_LEADER_CHANGE
        && record.replicas.is_none()
        && record.removing_replicas.is_none()
        && record.adding_replicas.is_none()
        && record.leader_recovery_state == -1
        && record.directories.is_none()
}
