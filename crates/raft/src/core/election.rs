//! Elections (KIP-595 with KIP-996's pre-vote): sending Vote requests for a prospective or
//! a candidate, granting or refusing them, counting the answers; a voter that lost its
//! connection to the leader starting its pre-vote at once (the crash failover rule, below);
//! and the leader's notices
//! around its epoch, BeginQuorumEpoch (a new leader announces itself) and EndQuorumEpoch (a
//! resigning leader names its preferred successors). Kafka's `KafkaRaftClient`
//! `handleVoteRequest`, `handleVoteResponse`, `handleBeginQuorumEpochRequest`,
//! `handleEndQuorumEpochRequest` and their responses; the messages as `RaftUtil` builds them.

use kraftd_protocol::messages::{
    begin_quorum_epoch_request, begin_quorum_epoch_response, end_quorum_epoch_request,
    end_quorum_epoch_response, vote_request, vote_response, BeginQuorumEpochRequest,
    BeginQuorumEpochResponse, EndQuorumEpochRequest, EndQuorumEpochResponse, VoteRequest,
    VoteResponse,
};
use kraftd_protocol::ErrorCode;
use tracing::{debug, info};

use super::log::RaftLog;
use super::message::{RaftMessage, CLUSTER_METADATA_PARTITION, CLUSTER_METADATA_TOPIC};
use super::role::{is_log_up_to_date, Role};
use super::voter_set::ReplicaKey;
use super::{single_partition, RaftCore};

impl<L: RaftLog> RaftCore<L> {
    // ----- the crash failover rule -----

    /// The driver's report that the connection to `peer` closed and a reconnect was refused
    /// (a crashed process: its kernel closes its sockets and refuses new ones). A voter that
    /// follows `peer` as its leader starts a pre-vote at once instead of waiting out
    /// `fetch.timeout.ms`. Safe and harmless to a live leader by KIP-996's rule: a voter
    /// grants a pre-vote only when it too has lost the leader (it is Prospective, Unattached
    /// or a candidate, or a follower that has not fetched from its leader in this epoch), so
    /// one whose fetches succeed refuses it and the leader keeps its term; the pre-vote moves
    /// no epoch, and the real vote keeps Raft's safety. Anyone else (an observer, a node that
    /// follows another leader or none) ignores it: an observer's failed fetch already moves
    /// it to a bootstrap server.
    pub fn handle_leader_connection_lost(&mut self, now_ms: u64, peer: i32) {
        if self.fatal.is_some() {
            return;
        }
        let is_voter = self.is_voter();
        if let Role::Follower(f) = self.quorum.role() {
            if is_voter && f.leader_id == peer {
                info!(
                    node = self.node_id,
                    epoch = f.epoch,
                    leader = peer,
                    "connection to the leader lost; starting a pre-vote"
                );
                self.stats.connection_loss_pre_votes += 1;
                self.become_prospective(now_ms);
            }
        }
        self.poll(now_ms);
    }

    // ----- Vote -----

    pub(super) fn send_vote_requests(&mut self, now_ms: u64, pre_vote: bool) {
        let epoch = self.epoch();
        for to in self.vote_requests.take_due(now_ms) {
            let req = self.vote_request(to, epoch, pre_vote);
            let corr = self.send(to, RaftMessage::VoteRequest(req));
            self.vote_requests.sent(to, corr);
        }
    }

    pub(super) fn on_vote_request(&mut self, now_ms: u64, from: i32, corr: i32, req: VoteRequest) {
        if !self.has_valid_cluster_id(req.cluster_id.as_deref()) {
            let resp = VoteResponse {
                error_code: ErrorCode::InconsistentClusterId.code(),
                ..Default::default()
            };
            self.respond(from, corr, RaftMessage::VoteResponse(resp));
            return;
        }
        let Some(p) = single_partition(
            &req.topics,
            |t| &t.topic_name,
            |t| &t.partitions,
            |p| p.partition_index,
        )
        .cloned() else {
            let resp = VoteResponse {
                error_code: ErrorCode::InvalidRequest.code(),
                ..Default::default()
            };
            self.respond(from, corr, RaftMessage::VoteResponse(resp));
            return;
        };
        let candidate = p.replica_id;
        let respond = |core: &mut Self, error: ErrorCode, granted: bool| {
            let resp = core.vote_response(error, granted);
            core.respond(from, corr, RaftMessage::VoteResponse(resp));
        };
        // Kafka's order: the request's own consistency, then who may vote, then epochs. A
        // candidate bumped its epoch past its log's; a prospective did not.
        let illegal_epoch = if p.pre_vote {
            p.last_offset_epoch > p.replica_epoch
        } else {
            p.last_offset_epoch >= p.replica_epoch
        };
        if p.last_offset < 0
            || p.last_offset_epoch < 0
            || illegal_epoch
            || p.replica_epoch == i32::MAX
        {
            respond(self, ErrorCode::InvalidRequest, false);
            return;
        }
        let candidate_key = ReplicaKey::new(candidate, p.replica_directory_id);
        // KIP-853: in a dynamic quorum a replica answers whatever its own view of the voter
        // set (a voter just added may not have read the VotersRecord that made it one, and
        // without its vote no leader could be elected to send it); the voter key check
        // below says whether the request is meant for it. A static quorum checks both.
        let membership_ok = if self.is_dynamic_quorum() {
            candidate != self.node_id
        } else {
            self.is_voter() && self.voter_set().is_voter(candidate_key) && candidate != self.node_id
        };
        if !membership_ok {
            respond(self, ErrorCode::InconsistentVoterSet, false);
            return;
        }
        if p.replica_epoch < self.epoch() {
            respond(self, ErrorCode::FencedLeaderEpoch, false);
            return;
        }
        // A higher epoch, even in a pre-vote, is news: this node moves to it (as Kafka does).
        if p.replica_epoch > self.epoch() {
            self.become_unattached(now_ms, p.replica_epoch, None);
        }
        if !self.is_valid_voter_key(req.voter_id, p.voter_directory_id) {
            respond(self, ErrorCode::InvalidVoterKey, false);
            return;
        }
        let up_to_date = is_log_up_to_date(
            p.last_offset_epoch,
            p.last_offset,
            self.log.last_epoch(),
            self.log.end_offset(),
        );
        // Two prospectives with the same log would grant each other's pre-vote and then
        // split the real vote (both candidates, each voting for itself) and wait out an
        // election timeout: the tie goes to the lower id. The higher one's pre-vote is
        // refused here, and it is asked again for ours, which it grants (again even if it
        // answered already: that answer may be a refusal from before it lost the leader).
        let same_log =
            (p.last_offset_epoch, p.last_offset) == (self.log.last_epoch(), self.log.end_offset());
        let yields_to_us = p.pre_vote
            && same_log
            && candidate > self.node_id
            && matches!(self.quorum.role(), Role::Prospective(_));
        if yields_to_us {
            self.vote_requests.ask_again(candidate, now_ms);
        }
        let granted = match self.quorum.role() {
            Role::Prospective(_) if yields_to_us => false,
            Role::Unattached(s) => s.can_grant_vote(candidate, up_to_date, p.pre_vote),
            Role::Prospective(s) => s.can_grant_vote(candidate, up_to_date, p.pre_vote),
            Role::Candidate(s) => s.can_grant_vote(up_to_date, p.pre_vote),
            Role::Follower(s) => s.can_grant_vote(up_to_date, p.pre_vote),
            Role::Leader(_) | Role::Resigned(_) => false,
        };
        if granted && !p.pre_vote && self.quorum.voted_id().is_none() {
            // The vote is durable before the response that carries it leaves.
            self.become_unattached(now_ms, p.replica_epoch, Some(candidate));
        }
        respond(self, ErrorCode::None, granted);
    }

    pub(super) fn on_vote_response(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        resp: VoteResponse,
    ) {
        let expected = matches!(
            self.quorum.role(),
            Role::Prospective(_) | Role::Candidate(_)
        ) && self.vote_requests.answered(from, corr);
        if !expected {
            debug!(node = self.node_id, from, "vote response no longer needed");
            return;
        }
        if resp.error_code == ErrorCode::UnsupportedVersion.code()
            && matches!(self.quorum.role(), Role::Prospective(_))
        {
            // KIP-996: a voter too old for pre-vote sends the node straight to a real vote.
            info!(
                node = self.node_id,
                from, "pre-vote unsupported by a voter; candidate"
            );
            self.become_candidate(now_ms);
            return;
        }
        if resp.error_code != ErrorCode::None.code() {
            debug!(
                node = self.node_id,
                from,
                code = resp.error_code,
                "vote error; retrying after the backoff"
            );
            self.vote_requests
                .schedule(from, now_ms + self.config.retry_backoff_ms);
            return;
        }
        let Some(p) = single_partition(
            &resp.topics,
            |t| &t.topic_name,
            |t| &t.partitions,
            |p| p.partition_index,
        )
        .cloned() else {
            return;
        };
        if self.maybe_follow(now_ms, p.leader_id, p.leader_epoch) {
            return;
        }
        if p.leader_epoch != self.epoch() || !self.is_voter_id(from) {
            return;
        }
        let granted = p.error_code == ErrorCode::None.code() && p.vote_granted;
        match self.quorum.role_mut() {
            Role::Prospective(s) => {
                s.election.record(from, granted);
                if s.election.is_lost() {
                    self.prospective_lost(now_ms);
                }
            }
            Role::Candidate(s) => {
                s.election.record(from, granted);
                if s.election.is_lost() {
                    info!(
                        node = self.node_id,
                        epoch = s.epoch,
                        "election lost; waiting out the election timeout"
                    );
                }
            }
            _ => {}
        }
    }

    // ----- BeginQuorumEpoch / EndQuorumEpoch -----

    pub(super) fn on_begin_quorum_epoch_request(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        req: BeginQuorumEpochRequest,
    ) {
        let error = if !self.has_valid_cluster_id(req.cluster_id.as_deref()) {
            Some(ErrorCode::InconsistentClusterId)
        } else {
            None
        };
        let part = single_partition(
            &req.topics,
            |t| &t.topic_name,
            |t| &t.partitions,
            |p| p.partition_index,
        )
        .cloned();
        let code = match (error, part) {
            (Some(e), _) => e,
            (None, None) => ErrorCode::InvalidRequest,
            (None, Some(p)) => {
                if p.leader_epoch < self.epoch() {
                    ErrorCode::FencedLeaderEpoch
                } else if p.leader_id == self.node_id
                    || !(self.is_voter_id(p.leader_id) || self.is_dynamic_quorum())
                {
                    ErrorCode::InconsistentVoterSet
                } else {
                    self.maybe_follow(now_ms, p.leader_id, p.leader_epoch);
                    if !self.is_valid_voter_key(req.voter_id, p.voter_directory_id) {
                        // Meant for another replica (KIP-853's voter key check).
                        ErrorCode::InvalidVoterKey
                    } else {
                        ErrorCode::None
                    }
                }
            }
        };
        let resp = self.begin_quorum_epoch_response(code);
        self.respond(from, corr, RaftMessage::BeginQuorumEpochResponse(resp));
    }

    pub(super) fn on_begin_quorum_epoch_response(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        resp: BeginQuorumEpochResponse,
    ) {
        let expected = match self.quorum.role_mut() {
            Role::Leader(l) => l.begin_quorum.answered(from, corr),
            _ => false,
        };
        if !expected {
            return;
        }
        let Some(p) = single_partition(
            &resp.topics,
            |t| &t.topic_name,
            |t| &t.partitions,
            |p| p.partition_index,
        )
        .cloned() else {
            return;
        };
        self.maybe_follow(now_ms, p.leader_id, p.leader_epoch);
    }

    pub(super) fn on_end_quorum_epoch_request(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        req: EndQuorumEpochRequest,
    ) {
        let part = single_partition(
            &req.topics,
            |t| &t.topic_name,
            |t| &t.partitions,
            |p| p.partition_index,
        )
        .cloned();
        let code = if !self.has_valid_cluster_id(req.cluster_id.as_deref()) {
            ErrorCode::InconsistentClusterId
        } else {
            match part {
                None => ErrorCode::InvalidRequest,
                Some(p) if p.leader_epoch < self.epoch() => ErrorCode::FencedLeaderEpoch,
                Some(p)
                    if p.leader_id == self.node_id
                        || !(self.is_voter_id(p.leader_id) || self.is_dynamic_quorum()) =>
                {
                    ErrorCode::InconsistentVoterSet
                }
                Some(p) => {
                    self.maybe_follow(now_ms, p.leader_id, p.leader_epoch);
                    self.on_leader_resigned(now_ms, &p);
                    ErrorCode::None
                }
            }
        };
        let resp = self.end_quorum_epoch_response(code);
        self.respond(from, corr, RaftMessage::EndQuorumEpochResponse(resp));
    }

    /// The leader of our epoch resigned: a preferred successor starts its election after a
    /// backoff that grows with its position in the list (the first at once).
    fn on_leader_resigned(&mut self, now_ms: u64, p: &end_quorum_epoch_request::PartitionData) {
        let position = p
            .preferred_candidates
            .iter()
            .position(|c| c.candidate_id == self.node_id)
            .or_else(|| {
                p.preferred_successors
                    .iter()
                    .position(|c| *c == self.node_id)
            });
        let total = p
            .preferred_candidates
            .len()
            .max(p.preferred_successors.len());
        let backoff = strict_exponential_election_backoff_ms(
            position,
            total,
            self.config.election_backoff_max_ms,
        );
        let is_voter = self.is_voter();
        match self.quorum.role_mut() {
            Role::Follower(f) if f.leader_id == p.leader_id && f.epoch == p.leader_epoch => {
                f.has_fetched_from_leader = false;
                if is_voter {
                    f.fetch_deadline_ms = Some(now_ms + backoff);
                }
            }
            Role::Unattached(u) if u.epoch == p.leader_epoch && is_voter => {
                u.election_deadline_ms = Some(now_ms);
            }
            _ => {}
        }
    }

    pub(super) fn on_end_quorum_epoch_response(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        resp: EndQuorumEpochResponse,
    ) {
        let expected = match self.quorum.role_mut() {
            Role::Resigned(r) => r.end_quorum.answered(from, corr),
            _ => false,
        };
        if !expected {
            return;
        }
        let Some(p) = single_partition(
            &resp.topics,
            |t| &t.topic_name,
            |t| &t.partitions,
            |p| p.partition_index,
        )
        .cloned() else {
            return;
        };
        self.maybe_follow(now_ms, p.leader_id, p.leader_epoch);
    }

    /// KIP-853's voter key check of Vote and BeginQuorumEpoch: a request meant for
    /// replica (`voter_id`, `directory_id`) is for this node when the id is ours (or -1, an
    /// old peer) and the directory id ours (or zero, none sent).
    fn is_valid_voter_key(&self, voter_id: i32, directory_id: kraftd_protocol::Uuid) -> bool {
        (voter_id < 0 || voter_id == self.node_id)
            && (directory_id == kraftd_protocol::Uuid::ZERO
                || directory_id == self.config.directory_id)
    }

    /// The directory id the voter set records for `id` (zero when none).
    pub(super) fn directory_id_of(&self, id: i32) -> kraftd_protocol::Uuid {
        self.voter_set()
            .key(id)
            .map_or(kraftd_protocol::Uuid::ZERO, |k| k.directory_id)
    }

    // ----- the messages -----

    fn vote_request(&self, to: i32, epoch: i32, pre_vote: bool) -> VoteRequest {
        VoteRequest {
            cluster_id: Some(self.config.cluster_id.clone()),
            voter_id: to,
            topics: vec![vote_request::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![vote_request::PartitionData {
                    partition_index: CLUSTER_METADATA_PARTITION,
                    replica_epoch: epoch,
                    replica_id: self.node_id,
                    last_offset_epoch: self.log.last_epoch(),
                    last_offset: self.log.end_offset(),
                    pre_vote,
                    replica_directory_id: self.config.directory_id,
                    voter_directory_id: self.directory_id_of(to),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn vote_response(&self, error: ErrorCode, granted: bool) -> VoteResponse {
        VoteResponse {
            error_code: 0,
            topics: vec![vote_response::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![vote_response::PartitionData {
                    partition_index: CLUSTER_METADATA_PARTITION,
                    error_code: error.code(),
                    leader_id: self.leader_id().unwrap_or(-1),
                    leader_epoch: self.epoch(),
                    vote_granted: granted,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn begin_quorum_epoch_response(&self, error: ErrorCode) -> BeginQuorumEpochResponse {
        BeginQuorumEpochResponse {
            topics: vec![begin_quorum_epoch_response::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![begin_quorum_epoch_response::PartitionData {
                    partition_index: CLUSTER_METADATA_PARTITION,
                    error_code: error.code(),
                    leader_id: self.leader_id().unwrap_or(-1),
                    leader_epoch: self.epoch(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn end_quorum_epoch_response(&self, error: ErrorCode) -> EndQuorumEpochResponse {
        EndQuorumEpochResponse {
            topics: vec![end_quorum_epoch_response::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![end_quorum_epoch_response::PartitionData {
                    partition_index: CLUSTER_METADATA_PARTITION,
                    error_code: error.code(),
                    leader_id: self.leader_id().unwrap_or(-1),
                    leader_epoch: self.epoch(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    pub(super) fn begin_quorum_epoch_request(
        &self,
        to: i32,
        epoch: i32,
    ) -> BeginQuorumEpochRequest {
        BeginQuorumEpochRequest {
            cluster_id: Some(self.config.cluster_id.clone()),
            voter_id: to,
            topics: vec![begin_quorum_epoch_request::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![begin_quorum_epoch_request::PartitionData {
                    partition_index: CLUSTER_METADATA_PARTITION,
                    leader_id: self.node_id,
                    leader_epoch: epoch,
                    voter_directory_id: self.directory_id_of(to),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    pub(super) fn end_quorum_epoch_request(
        &self,
        epoch: i32,
        successors: &[i32],
    ) -> EndQuorumEpochRequest {
        EndQuorumEpochRequest {
            cluster_id: Some(self.config.cluster_id.clone()),
            topics: vec![end_quorum_epoch_request::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![end_quorum_epoch_request::PartitionData {
                    partition_index: CLUSTER_METADATA_PARTITION,
                    leader_id: self.node_id,
                    leader_epoch: epoch,
                    preferred_candidates: successors
                        .iter()
                        .map(|c| end_quorum_epoch_request::ReplicaInfo {
                            candidate_id: *c,
                            candidate_directory_id: self.directory_id_of(*c),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }
}

/// Kafka's `strictExponentialElectionBackoffMs`: the first preferred successor starts at
/// once, the k-th (of n) after `max >> (n - 1) << (k - 1)`, anyone else after the max.
fn strict_exponential_election_backoff_ms(
    position: Option<usize>,
    total: usize,
    election_backoff_max_ms: u64,
) -> u64 {
    match position {
        Some(0) => 0,
        Some(k) if k < total => {
            let base = election_backoff_max_ms >> (total - 1).min(63);
            base.checked_shl((k - 1).min(63) as u32)
                .unwrap_or(u64::MAX)
                .min(election_backoff_max_ms)
        }
        _ => election_backoff_max_ms,
    }
}
