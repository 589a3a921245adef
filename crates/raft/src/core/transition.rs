//! Every role change as the core sees it, mirroring KafkaRaftClient's `transitionTo*`
//! methods, `maybeTransition` (follow a newer epoch or a leader that a message names) and
//! `onBecomeLeader` (the LeaderChangeMessage that opens a leader's epoch). The rules and the
//! transition table are `quorum_state.rs`'s; this file builds the role's state, asks for the
//! transition and then does what the core owes every change: persist first, reset the fetch
//! loop, answer parked fetches, tell listeners.

use std::collections::BTreeSet;

use kraftd_protocol::messages::{leader_change_message, LeaderChangeMessage};
use kraftd_protocol::records::{ControlRecord, RecordBatchBuilder};
use tracing::{debug, error, info, warn};

use super::log::RaftLog;
use super::quorum_state::QuorumStateData;
use super::role::leader::ReplicaProgress;
use super::role::{LeaderState, RequestTracker, ResignedState, Role};
use super::{Output, RaftCore};

impl<L: RaftLog> RaftCore<L> {
    pub(super) fn become_unattached(&mut self, now_ms: u64, epoch: i32, voted_id: Option<i32>) {
        self.abort_voter_change();
        let deadline = now_ms + self.random_election_timeout();
        let persist = self
            .quorum
            .transition_to_unattached(epoch, voted_id, deadline);
        self.after_transition(now_ms, persist);
    }

    pub(super) fn become_prospective(&mut self, now_ms: u64) {
        let deadline = now_ms + self.random_election_timeout();
        let persist = self
            .quorum
            .transition_to_prospective(self.voter_set().len(), deadline);
        self.vote_requests = RequestTracker::new(self.other_voters(), now_ms);
        self.after_transition(now_ms, persist);
    }

    pub(super) fn become_candidate(&mut self, now_ms: u64) {
        if self.epoch() == i32::MAX {
            // Only a hostile or broken peer can have pushed the epoch this far.
            let reason = format!("node {}: no epoch after i32::MAX", self.node_id);
            error!("{reason}");
            self.fatal = Some(reason);
            return;
        }
        let deadline = now_ms + self.random_election_timeout();
        let persist = self
            .quorum
            .transition_to_candidate(self.voter_set().len(), deadline);
        self.vote_requests = RequestTracker::new(self.other_voters(), now_ms);
        info!(node = self.node_id, epoch = self.epoch(), "candidate");
        self.after_transition(now_ms, persist);
    }

    fn become_follower(&mut self, now_ms: u64, epoch: i32, leader_id: i32) {
        self.abort_voter_change();
        let deadline = now_ms + self.config.fetch_timeout_ms;
        let persist = self
            .quorum
            .transition_to_follower(epoch, leader_id, deadline);
        self.after_transition(now_ms, persist);
    }

    pub(super) fn become_leader(&mut self, now_ms: u64) {
        let Role::Candidate(c) = self.quorum.role() else {
            unreachable!()
        };
        let epoch = c.epoch;
        let granting: BTreeSet<i32> = c.election.granted.clone();
        let others = self.other_voters();
        let state = LeaderState {
            epoch,
            epoch_start_offset: self.log.end_offset(),
            voters: others
                .iter()
                .map(|v| (*v, ReplicaProgress::default()))
                .collect(),
            local_is_voter: true,
            observers: Default::default(),
            granting_voters: granting,
            high_watermark_known: false,
            fetched_since_check: BTreeSet::new(),
            check_quorum_deadline_ms: now_ms + self.config.check_quorum_timeout_ms(),
            begin_quorum: RequestTracker::new(others, now_ms),
            begin_quorum_heartbeat_ms: now_ms + self.config.fetch_timeout_ms / 2,
            pending_voter_change: None,
            resign_requested: false,
        };
        let persist = self.quorum.transition_to_leader(state);
        info!(node = self.node_id, epoch, "elected leader");
        self.after_transition(now_ms, persist);
        self.append_leader_change(now_ms);
    }

    pub(super) fn become_resigned(&mut self, now_ms: u64) {
        self.abort_voter_change();
        let Role::Leader(l) = self.quorum.role() else {
            unreachable!()
        };
        let successors = l.voters_by_descending_end_offset();
        let state = ResignedState {
            epoch: l.epoch,
            election_deadline_ms: now_ms + self.random_election_timeout(),
            end_quorum: RequestTracker::new(successors.clone(), now_ms),
            preferred_successors: successors,
        };
        let persist = self.quorum.transition_to_resigned(state);
        self.after_transition(now_ms, persist);
    }

    /// A lost pre-vote: back to the leader it knew, or Unattached.
    pub(super) fn prospective_lost(&mut self, now_ms: u64) {
        let Role::Prospective(p) = self.quorum.role() else {
            unreachable!()
        };
        let (epoch, leader) = (p.epoch, p.leader_id);
        match leader {
            Some(l) => self.become_follower(now_ms, epoch, l),
            None => self.become_unattached(now_ms, epoch, None),
        }
    }

    /// What every transition does after the role changed: persist first, reset the fetch
    /// loop, answer parked fetches with the new role's error, tell listeners.
    fn after_transition(&mut self, now_ms: u64, persist: Option<QuorumStateData>) {
        if let Some(d) = persist {
            self.outputs.push_back(Output::PersistQuorumState(d));
        }
        self.fetch_in_flight = None;
        self.fetch_backoff_until_ms = 0;
        self.complete_parked(now_ms, true);
        self.notice_leader();
        debug!(node = self.node_id, state = %self.quorum, "transition");
    }

    /// A response or request showed a newer epoch (or a leader for ours): follow it.
    /// Returns whether the role changed.
    pub(super) fn maybe_follow(&mut self, now_ms: u64, leader_id: i32, epoch: i32) -> bool {
        let current = self.epoch();
        if epoch == i32::MAX {
            // No epoch can follow it; a peer claiming it is broken or hostile.
            warn!(node = self.node_id, "ignoring a message at epoch i32::MAX");
            return false;
        }
        // Only a voter can lead; a hint naming anyone else is no hint. In a dynamic quorum
        // (KIP-853) this node's voter set may lag the leader's (an observer that has not
        // read the set yet, a leader added since): any leader named is taken, as Kafka's
        // `maybeTransition` does.
        let leader_id = if self.is_voter_id(leader_id) || self.is_dynamic_quorum() {
            leader_id
        } else {
            -1
        };
        if epoch > current {
            if leader_id >= 0 && leader_id != self.node_id {
                self.become_follower(now_ms, epoch, leader_id);
            } else {
                self.become_unattached(now_ms, epoch, None);
            }
            return true;
        }
        if epoch == current && leader_id >= 0 && leader_id != self.node_id {
            match self.quorum.role() {
                // A prospective that timed out on this very leader keeps its pre-vote going:
                // the responders only repeat what it already knew.
                Role::Prospective(p) if p.leader_id == Some(leader_id) => {}
                Role::Unattached(_) | Role::Prospective(_) | Role::Candidate(_) => {
                    self.become_follower(now_ms, epoch, leader_id);
                    return true;
                }
                _ => {}
            }
        }
        false
    }

    /// Kafka's `onBecomeLeader`: the new leader's first record, a LeaderChangeMessage naming
    /// the voters and those that granted the vote, flushed at once.
    fn append_leader_change(&mut self, now_ms: u64) {
        let Role::Leader(l) = self.quorum.role() else {
            unreachable!()
        };
        let voter = |id: i32| leader_change_message::Voter {
            voter_id: id,
            ..Default::default()
        };
        let msg = LeaderChangeMessage {
            version: 0,
            leader_id: self.node_id,
            voters: self.voter_set().ids().map(voter).collect(),
            granting_voters: l.granting_voters.iter().map(|v| voter(*v)).collect(),
            ..Default::default()
        };
        let epoch = l.epoch;
        let mut records = vec![ControlRecord::LeaderChange(msg)];
        // KIP-853: the voter set again when it is not in the log yet (bootstrap checkpoint)
        // or this leader's listeners changed.
        records.extend(self.start_of_epoch_voter_records());
        let mut builder = RecordBatchBuilder::new(0).control(true);
        for record in &records {
            builder
                .append(
                    now_ms as i64,
                    Some(record.key()),
                    Some(record.encode_value().expect("control records encode")),
                    Vec::new(),
                )
                .expect("offsets of a fresh batch increase");
        }
        let batch = builder.build().expect("control batch builds");
        let (first, _) = self
            .log
            .append_as_leader(batch, epoch)
            .expect("the leader's own batch appends");
        self.apply_leader_batch(now_ms, first, &records);
        // The epoch's first record is flushed at once: no HW is known until it commits.
        self.flush_deadline_ms = Some(now_ms);
        self.complete_parked(now_ms, false);
    }
}
