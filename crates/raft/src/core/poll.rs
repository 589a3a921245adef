//! The output queue and the poll loop: what the driver drains ([`RaftCore::poll_output`]),
//! when it must next call in ([`RaftCore::poll_timeout`]), the queueing of requests and
//! responses, and what is due at a given time, by role. Kafka's `KafkaRaftClient.poll`,
//! `pollCurrentState` and its `poll*` per role.

use tracing::{info, warn};

use super::log::RaftLog;
use super::message::RaftMessage;
use super::role::Role;
use super::{Output, RaftCore, RoleName};

impl<L: RaftLog> RaftCore<L> {
    // ----- outputs -----

    /// The next thing to do; drain after every input.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// The time `handle_timeout` must next be called (u64::MAX when nothing is scheduled).
    pub fn poll_timeout(&self) -> u64 {
        if self.fatal.is_some() {
            return u64::MAX;
        }
        let mut t = u64::MAX;
        let mut at = |x: Option<u64>| {
            if let Some(x) = x {
                t = t.min(x);
            }
        };
        match self.quorum.role() {
            Role::Unattached(s) => at(s.election_deadline_ms),
            Role::Prospective(s) => {
                at(Some(s.election_deadline_ms));
                at(self.vote_requests.next_due_ms());
            }
            Role::Candidate(s) => {
                at(Some(s.election_deadline_ms));
                if !s.election.is_lost() {
                    at(self.vote_requests.next_due_ms());
                }
            }
            Role::Leader(s) => {
                if self.voter_set().len() > 1 {
                    at(Some(s.check_quorum_deadline_ms));
                }
                at(s.begin_quorum.next_due_ms());
                at(Some(s.begin_quorum_heartbeat_ms));
                at(s.pending_voter_change.as_ref().map(|p| p.deadline_ms));
            }
            Role::Follower(s) => at(s.fetch_deadline_ms),
            Role::Resigned(s) => {
                at(Some(s.election_deadline_ms));
                at(s.end_quorum.next_due_ms());
            }
        }
        if self.fetch_in_flight.is_none() && self.current_fetch_target().is_some() {
            at(Some(self.fetch_backoff_until_ms));
        }
        if !self.flush_requested {
            at(self.flush_deadline_ms);
        }
        at(self.parked_deadline_ms);
        t
    }

    // ----- the poll loop -----

    /// Acts on everything due at `now_ms`, by role.
    pub(super) fn poll(&mut self, now_ms: u64) {
        if self.fatal.is_some() {
            return;
        }
        // Role transitions may cascade (a lone voter goes Unattached → Prospective →
        // Candidate → Leader at once); a bound keeps a bug from looping forever.
        for _ in 0..8 {
            let before = (self.quorum.name(), self.epoch());
            match self.quorum.name() {
                RoleName::Unattached => self.poll_unattached(now_ms),
                RoleName::Prospective => self.poll_prospective(now_ms),
                RoleName::Candidate => self.poll_candidate(now_ms),
                RoleName::Leader => self.poll_leader(now_ms),
                RoleName::Follower => self.poll_follower(now_ms),
                RoleName::Resigned => self.poll_resigned(now_ms),
            }
            if before == (self.quorum.name(), self.epoch()) {
                break;
            }
        }
        self.maybe_flush(now_ms);
        self.maybe_send_fetch(now_ms);
        self.expire_parked(now_ms);
        self.deliver_committed();
        self.maybe_release_leader_notice();
    }

    fn poll_unattached(&mut self, now_ms: u64) {
        let Role::Unattached(s) = self.quorum.role() else {
            unreachable!()
        };
        if s.election_deadline_ms.is_some_and(|d| d <= now_ms) {
            self.become_prospective(now_ms);
        }
    }

    fn poll_prospective(&mut self, now_ms: u64) {
        let Role::Prospective(s) = self.quorum.role() else {
            unreachable!()
        };
        if !self.is_voter() {
            // Removed from the voter set mid-election: it cannot win one.
            self.prospective_lost(now_ms);
            return;
        }
        if s.election.is_won() {
            self.become_candidate(now_ms);
            return;
        }
        if s.election_deadline_ms <= now_ms {
            self.prospective_lost(now_ms);
            return;
        }
        self.send_vote_requests(now_ms, true);
    }

    fn poll_candidate(&mut self, now_ms: u64) {
        let Role::Candidate(s) = self.quorum.role() else {
            unreachable!()
        };
        if !self.is_voter() {
            // Removed from the voter set mid-election: back to Unattached, keeping its vote.
            let epoch = s.epoch;
            self.become_unattached(now_ms, epoch, None);
            return;
        }
        if s.election.is_won() {
            self.become_leader(now_ms);
            return;
        }
        if s.election_deadline_ms <= now_ms {
            // Lost or timed out: try again with a pre-vote in the candidate's epoch.
            self.become_prospective(now_ms);
            return;
        }
        if !s.election.is_lost() {
            self.send_vote_requests(now_ms, false);
        }
    }

    fn poll_leader(&mut self, now_ms: u64) {
        self.maybe_flush(now_ms);
        self.expire_voter_change(now_ms);
        self.maybe_complete_voter_change(now_ms);
        let multi_voter = self.voter_set().len() > 1 || !self.is_voter();
        let Role::Leader(l) = self.quorum.role_mut() else {
            return;
        };
        if multi_voter && l.check_quorum_deadline_ms <= now_ms {
            warn!(
                node = self.node_id,
                epoch = l.epoch,
                "no fetch from a majority of voters within the check-quorum timeout; resigning"
            );
            self.become_resigned(now_ms);
            return;
        }
        if l.begin_quorum_heartbeat_ms <= now_ms {
            // BeginQuorumEpoch again to every voter that has not fetched recently.
            let window = self.config.fetch_timeout_ms / 2;
            let stale: Vec<i32> = l
                .voters
                .iter()
                .filter(|(_, p)| p.last_fetch_ms.is_none_or(|t| t + window <= now_ms))
                .map(|(id, _)| *id)
                .collect();
            for v in stale {
                l.begin_quorum.schedule(v, now_ms);
            }
            l.begin_quorum_heartbeat_ms = now_ms + window.max(1);
        }
        let due = l.begin_quorum.take_due(now_ms);
        let epoch = l.epoch;
        for to in due {
            let req = self.begin_quorum_epoch_request(to, epoch);
            let corr = self.send(to, RaftMessage::BeginQuorumEpochRequest(req));
            if let Role::Leader(l) = self.quorum.role_mut() {
                l.begin_quorum.sent(to, corr);
            }
        }
    }

    /// Asks the driver to flush what the leader appended once `append.linger.ms` has passed
    /// ([`Output::Flush`], after the Fetch responses queued before it); the leader's own end
    /// offset counts toward the HW only when flushed ([`RaftCore::flush`]).
    fn maybe_flush(&mut self, now_ms: u64) {
        if !self.flush_requested && self.flush_deadline_ms.is_some_and(|d| d <= now_ms) {
            self.flush_deadline_ms = None;
            self.flush_requested = true;
            self.outputs.push_back(Output::Flush);
        }
    }

    fn poll_follower(&mut self, now_ms: u64) {
        let Role::Follower(f) = self.quorum.role() else {
            unreachable!()
        };
        if f.fetch_deadline_ms.is_some_and(|d| d <= now_ms) {
            info!(
                node = self.node_id,
                epoch = f.epoch,
                leader = f.leader_id,
                "no successful fetch within fetch.timeout.ms; starting a pre-vote"
            );
            self.become_prospective(now_ms);
        }
    }

    fn poll_resigned(&mut self, now_ms: u64) {
        let is_voter = self.is_voter();
        let Role::Resigned(r) = self.quorum.role_mut() else {
            unreachable!()
        };
        if r.election_deadline_ms <= now_ms {
            if is_voter {
                self.become_candidate(now_ms);
            } else {
                // A leader that removed itself: an observer from now on.
                let epoch = r.epoch;
                self.become_unattached(now_ms, epoch, None);
            }
            return;
        }
        let due = r.end_quorum.take_due(now_ms);
        let (epoch, successors) = (r.epoch, r.preferred_successors.clone());
        for to in due {
            let req = self.end_quorum_epoch_request(epoch, &successors);
            let corr = self.send(to, RaftMessage::EndQuorumEpochRequest(req));
            if let Role::Resigned(r) = self.quorum.role_mut() {
                r.end_quorum.sent(to, corr);
            }
        }
    }

    // ----- queueing messages -----

    /// Queues a request; returns its correlation id.
    pub(super) fn send(&mut self, to: i32, mut msg: RaftMessage) -> i32 {
        debug_assert!(msg.is_request());
        self.fill_endpoints(&mut msg);
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1) & i32::MAX;
        let correlation_id = self.next_correlation_id;
        self.outputs.push_back(Output::Send {
            to,
            correlation_id,
            msg,
        });
        correlation_id
    }

    pub(super) fn respond(&mut self, to: i32, correlation_id: i32, mut msg: RaftMessage) {
        debug_assert!(!msg.is_request());
        self.fill_endpoints(&mut msg);
        self.outputs.push_back(Output::Send {
            to,
            correlation_id,
            msg,
        });
    }
}
