//! The leader's view of its followers (Kafka's `ReplicaState`), the ISR — expansion on a
//! follower's fetch, shrink on lag, one change in flight, confirmed by the controller (R2,
//! KIP-903) — and the high watermark over the maximal ISR (R1, R8).

use std::collections::BTreeSet;

use kraftd_protocol::ErrorCode;
use tracing::{debug, info, warn};

use super::{Partition, PartitionError, Role};

/// What the leader knows of one follower replica (Kafka's `ReplicaState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaState {
    /// The broker epoch the follower's fetches carried (KIP-903), -1 when none did.
    pub broker_epoch: i64,
    /// The follower's log end offset as its last fetch said; -1 until it fetches in this
    /// leader epoch.
    pub log_end_offset: i64,
    pub log_start_offset: i64,
    /// The last time the follower was known to have every record the leader had.
    pub last_caught_up_ms: i64,
    /// The leader's log end offset at the follower's previous fetch, and its time.
    pub last_fetch_leader_log_end_offset: i64,
    pub last_fetch_ms: i64,
}

impl ReplicaState {
    pub(super) fn reset(in_isr: bool, now_ms: i64) -> Self {
        ReplicaState {
            broker_epoch: -1,
            log_end_offset: -1,
            log_start_offset: -1,
            last_caught_up_ms: if in_isr { now_ms } else { 0 },
            last_fetch_leader_log_end_offset: -1,
            last_fetch_ms: 0,
        }
    }

    /// Kafka's `isCaughtUp`: at the leader's end, or caught up recently enough.
    fn is_caught_up(&self, leader_end: i64, now_ms: i64, lag_ms: i64) -> bool {
        self.log_end_offset == leader_end || now_ms - self.last_caught_up_ms <= lag_ms
    }
}

/// An ISR change the leader wants the controller to commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrChange {
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// The proposed ISR with each member's broker epoch (-1 where unknown).
    pub new_isr: Vec<(i32, i64)>,
    pub leader_recovery_state: i8,
}

/// What a follower's fetch changed on the leader.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FollowerUpdate {
    pub high_watermark_changed: bool,
    /// The follower's log start moved (a DeleteRecords waits on the low watermark).
    pub log_start_changed: bool,
    /// An ISR expansion to send to the controller.
    pub isr_change: Option<IsrChange>,
}

/// Whether a broker may join an ISR now: registered, unfenced, not shutting down, and (if
/// known) at the broker epoch its fetches carried.
pub trait IsrEligibility {
    fn is_isr_eligible(&self, broker: i32, broker_epoch: i64) -> bool;
}

impl<F: Fn(i32, i64) -> bool> IsrEligibility for F {
    fn is_isr_eligible(&self, broker: i32, broker_epoch: i64) -> bool {
        self(broker, broker_epoch)
    }
}

impl Partition {
    /// The ISR the HW must wait for: the committed one and any member being added; while
    /// a shrink is pending, still the old (larger) one.
    fn maximal_isr(&self) -> Vec<i32> {
        let mut all = self.isr.clone();
        if let Some(pending) = &self.pending_isr {
            for r in pending {
                if !all.contains(r) {
                    all.push(*r);
                }
            }
        }
        all
    }

    /// Records a follower's fetch (Kafka's `updateFollowerFetchState`): its position and
    /// broker epoch, its caught-up time, then maybe an ISR expansion and a HW move.
    pub fn update_follower_fetch_state(
        &mut self,
        replica: i32,
        broker_epoch: i64,
        fetch_offset: i64,
        follower_log_start_offset: i64,
        now_ms: i64,
        eligibility: &dyn IsrEligibility,
    ) -> Result<FollowerUpdate, PartitionError> {
        self.require_leader()?;
        let leader_end = self.log.log_end_offset();
        let Some(state) = self.followers.get_mut(&replica) else {
            return Err(PartitionError::NotLeaderOrFollower {
                broker: self.local_broker,
                role: self.role,
                epoch: self.leader_epoch,
            });
        };
        if fetch_offset >= leader_end {
            state.last_caught_up_ms = state.last_caught_up_ms.max(now_ms);
        } else if fetch_offset >= state.last_fetch_leader_log_end_offset {
            state.last_caught_up_ms = state.last_caught_up_ms.max(state.last_fetch_ms);
        }
        state.log_end_offset = fetch_offset;
        let log_start_changed = state.log_start_offset != follower_log_start_offset;
        state.log_start_offset = follower_log_start_offset;
        state.last_fetch_leader_log_end_offset = leader_end;
        state.last_fetch_ms = now_ms;
        if broker_epoch >= 0 {
            state.broker_epoch = broker_epoch;
        }
        if eligibility.is_isr_eligible(replica, state.broker_epoch) {
            self.ineligible.remove(&replica);
        } else {
            self.ineligible.insert(replica);
        }
        let isr_change = self.maybe_expand_isr(replica, eligibility);
        let high_watermark_changed = self.maybe_increment_high_watermark(now_ms);
        Ok(FollowerUpdate {
            high_watermark_changed,
            log_start_changed,
            isr_change,
        })
    }

    /// The metadata changed who may join an ISR (a broker fenced, shutting down or
    /// registered again): re-checks every follower at the broker epoch its fetches carried,
    /// so the HW stops waiting for a caught-up follower that can no longer join. Returns
    /// whether the partition's readers must hear of it: the HW moved, or a follower outside
    /// the ISR became eligible while caught up by its last fetch. Its next read of the
    /// partition expands the ISR (as Kafka's does, on the fetch path), but an incremental
    /// fetch session reads only the partitions that changed: unsignalled, a returning
    /// broker's idle partitions would wait for the session's full scan (up to
    /// `FULL_SCAN_INTERVAL_MS`) to rejoin their ISRs.
    pub fn update_isr_eligibility(
        &mut self,
        eligibility: &dyn IsrEligibility,
        now_ms: i64,
    ) -> bool {
        let ineligible: BTreeSet<i32> = self
            .followers
            .iter()
            .filter(|(r, s)| !eligibility.is_isr_eligible(**r, s.broker_epoch))
            .map(|(r, _)| *r)
            .collect();
        let may_join = self.is_leader()
            && self.followers.iter().any(|(r, s)| {
                self.ineligible.contains(r)
                    && !ineligible.contains(r)
                    && !self.isr.contains(r)
                    && s.log_end_offset >= self.high_watermark
                    && s.log_end_offset >= self.leader_epoch_start_offset
            });
        self.ineligible = ineligible;
        let hw_moved = self.is_leader() && self.maybe_increment_high_watermark(now_ms);
        hw_moved || may_join
    }

    /// Adds a follower that reached the HW and this epoch's start (R2), if no other ISR
    /// change is in flight and the broker may join (KIP-903).
    fn maybe_expand_isr(
        &mut self,
        replica: i32,
        eligibility: &dyn IsrEligibility,
    ) -> Option<IsrChange> {
        if self.pending_isr.is_some() || self.isr.contains(&replica) {
            return None;
        }
        let state = self.followers.get(&replica)?;
        let caught_up = state.log_end_offset >= self.high_watermark
            && state.log_end_offset >= self.leader_epoch_start_offset;
        if !caught_up || !eligibility.is_isr_eligible(replica, state.broker_epoch) {
            return None;
        }
        let mut new_isr = self.isr.clone();
        new_isr.push(replica);
        info!(
            topic = %self.tp.topic, partition = self.tp.partition, replica, isr = ?self.isr,
            proposed = ?new_isr, "expanding the ISR"
        );
        Some(self.propose_isr(new_isr))
    }

    /// Removes followers that have not caught up within `replica.lag.time.max.ms` (R2);
    /// the ReplicaManager calls it periodically.
    pub fn maybe_shrink_isr(&mut self, now_ms: i64) -> Option<IsrChange> {
        if self.role != Role::Leader || self.pending_isr.is_some() {
            return None;
        }
        let leader_end = self.log.log_end_offset();
        let lag = self.config.replica_lag_time_max_ms;
        let out_of_sync: Vec<i32> = self
            .isr
            .iter()
            .copied()
            .filter(|r| *r != self.local_broker)
            .filter(|r| {
                self.followers
                    .get(r)
                    .is_none_or(|s| !s.is_caught_up(leader_end, now_ms, lag))
            })
            .collect();
        if out_of_sync.is_empty() {
            return None;
        }
        let new_isr: Vec<i32> = self
            .isr
            .iter()
            .copied()
            .filter(|r| !out_of_sync.contains(r))
            .collect();
        warn!(
            topic = %self.tp.topic, partition = self.tp.partition, out_of_sync = ?out_of_sync,
            lag_ms = lag, isr = ?self.isr, proposed = ?new_isr,
            "shrinking the ISR: followers have not caught up within replica.lag.time.max.ms"
        );
        Some(self.propose_isr(new_isr))
    }

    fn propose_isr(&mut self, new_isr: Vec<i32>) -> IsrChange {
        let with_epochs = new_isr
            .iter()
            .map(|r| {
                let epoch = if *r == self.local_broker {
                    self.local_broker_epoch
                } else {
                    self.followers.get(r).map_or(-1, |s| s.broker_epoch)
                };
                (*r, epoch)
            })
            .collect();
        self.pending_isr = Some(new_isr);
        IsrChange {
            leader_epoch: self.leader_epoch,
            partition_epoch: self.partition_epoch,
            new_isr: with_epochs,
            leader_recovery_state: self.leader_recovery_state,
        }
    }

    /// The controller's answer to our ISR change: the committed state (applied if it is
    /// still about our epoch and not older than what we have) or an error (the change is
    /// dropped; the next fetch or shrink check proposes again). Returns whether the HW moved.
    pub fn complete_isr_change(
        &mut self,
        result: Result<(i32, i32, Vec<i32>), ErrorCode>,
        now_ms: i64,
    ) -> bool {
        self.pending_isr = None;
        match result {
            Ok((leader_epoch, partition_epoch, isr))
                if self.role == Role::Leader
                    && leader_epoch == self.leader_epoch
                    && partition_epoch >= self.partition_epoch =>
            {
                info!(
                    topic = %self.tp.topic, partition = self.tp.partition, isr = ?isr,
                    partition_epoch, "ISR change committed"
                );
                self.isr = isr;
                self.partition_epoch = partition_epoch;
                self.maybe_increment_high_watermark(now_ms)
            }
            Ok(_) => false,
            // Leadership moved on (a failover, or every broker stopping at once): the
            // metadata that follows says what is current; nothing is wrong here.
            Err(
                code @ (ErrorCode::FencedLeaderEpoch
                | ErrorCode::NotLeaderOrFollower
                | ErrorCode::InvalidUpdateVersion
                | ErrorCode::UnknownTopicOrPartition),
            ) => {
                info!(
                    topic = %self.tp.topic, partition = self.tp.partition, error = ?code,
                    "the controller refused the ISR change; the partition's state moved on"
                );
                false
            }
            Err(code) => {
                warn!(
                    topic = %self.tp.topic, partition = self.tp.partition, error = ?code,
                    "the controller refused the ISR change"
                );
                false
            }
        }
    }

    /// Moves the leader's HW to the smallest log end offset the maximal ISR (and any
    /// caught-up replica about to join) holds; never backwards; not at all while the ISR is
    /// below `min.insync.replicas` with ELR on (KIP-966). Returns whether it moved.
    /// The periodic look at the HW (with the ISR shrink, every `replica.lag.time.max.ms`
    /// / 2): a follower outside the ISR that has stopped fetching holds the HW only while
    /// it counts as caught up, and once it no longer does, the HW moves here even when no
    /// append or fetch comes (producers waiting on acks=all send nothing more). True when
    /// it moved.
    pub fn maybe_advance_high_watermark(&mut self, now_ms: i64) -> bool {
        self.maybe_increment_high_watermark(now_ms)
    }

    pub(super) fn maybe_increment_high_watermark(&mut self, now_ms: i64) -> bool {
        if self.role != Role::Leader {
            return false;
        }
        if self.config.elr_enabled && self.isr.len() < self.config.min_insync_replicas {
            return false;
        }
        let leader_end = self.log.log_end_offset();
        let lag = self.config.replica_lag_time_max_ms;
        let maximal = self.maximal_isr();
        let mut new_hw = leader_end;
        for (replica, state) in &self.followers {
            let waits = maximal.contains(replica)
                || (state.log_end_offset >= 0
                    && !self.ineligible.contains(replica)
                    && state.is_caught_up(leader_end, now_ms, lag));
            if waits && state.log_end_offset < new_hw {
                new_hw = state.log_end_offset;
            }
        }
        if new_hw > self.high_watermark {
            debug!(topic = %self.tp.topic, partition = self.tp.partition, from = self.high_watermark, to = new_hw, "high watermark advanced");
            self.high_watermark = new_hw;
            self.log.note_high_watermark(new_hw);
            self.producers_follow_high_watermark();
            true
        } else {
            false
        }
    }
}
