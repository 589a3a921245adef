//! The driver's side of KIP-853's voter changes: AddRaftVoter v0–1, RemoveRaftVoter v0 and
//! UpdateRaftVoter v0 from the controller listener into the core
//! ([`RaftCore::add_voter`](crate::core::RaftCore::add_voter) and friends), each answered
//! when the core reports it done ([`Output::VoterChangeDone`](crate::core::Output)) or at
//! once when it refuses; the `kraft.version` upgrade a [`RaftHandle`](super::RaftHandle)
//! asks for; and DescribeQuorum v2's `Nodes` from the voter set in effect. Kafka's
//! `KafkaRaftClient.handleAddVoterRequest`, `handleRemoveVoterRequest`,
//! `handleUpdateVoterRequest` (the checks before the handlers'). Also how the state
//! machine learns of the control records the leader appends by itself
//! ([`RaftEvent::LeaderAppended`]).

use std::collections::BTreeMap;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kraftd_protocol::messages::{
    add_raft_voter_request, update_raft_voter_request, update_raft_voter_response,
    AddRaftVoterRequest, AddRaftVoterResponse, DescribeQuorumResponse, RemoveRaftVoterRequest,
    RemoveRaftVoterResponse, UpdateRaftVoterRequest, UpdateRaftVoterResponse,
};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};
use tokio::sync::oneshot;
use tracing::{debug, info};

use super::driver_loop::DriverLoop;
use super::handle::RaftEvent;
use super::router::VoterChangeRequest;
use crate::core::endpoints::Endpoint;
use crate::core::voter_set::{ReplicaKey, VoterNode};
use crate::core::RoleName;
use kraftd_net::Channel;

/// How long a node waits between its own voter-change requests to the leader.
pub(super) const OWN_VOTER_CHANGE_BACKOFF_MS: u64 = 2_000;

/// This node's own requests to the leader (UpdateRaftVoter, auto-join): one at a time.
#[derive(Debug, Default)]
pub(super) struct OwnVoterChange {
    pub(super) next_ms: u64,
    pub(super) in_flight: Arc<AtomicBool>,
}

/// Which response a voter change owes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ChangeKind {
    Add,
    Remove,
    Update,
}

/// A voter change waiting for the core's answer.
#[derive(Debug)]
pub(super) struct PendingChange {
    kind: ChangeKind,
    reply: oneshot::Sender<ResponseBody>,
}

impl DriverLoop {
    /// An AddRaftVoter, RemoveRaftVoter or UpdateRaftVoter came in.
    pub(super) fn on_voter_change(
        &mut self,
        now: u64,
        request: VoterChangeRequest,
        version: i16,
        reply: oneshot::Sender<ResponseBody>,
    ) {
        self.next_voter_token += 1;
        let token = self.next_voter_token;
        let cluster_id = self.core.config().cluster_id.clone();
        let bad_cluster = |c: &Option<String>| c.as_ref().is_some_and(|c| *c != cluster_id);
        let (kind, ack_when_committed, result) = match request {
            VoterChangeRequest::Add(r) => {
                let result = if bad_cluster(&r.cluster_id) {
                    Err((ErrorCode::InconsistentClusterId, None))
                } else {
                    let listeners = r
                        .listeners
                        .iter()
                        .map(|l| (l.name.clone(), endpoint(&l.host, l.port)))
                        .collect();
                    let node = VoterNode::new(
                        ReplicaKey::new(r.voter_id, r.voter_directory_id),
                        listeners,
                    );
                    let timeout = u64::try_from(r.timeout_ms)
                        .ok()
                        .filter(|t| *t > 0)
                        .unwrap_or(self.core.config().request_timeout_ms);
                    self.core
                        .add_voter(now, token, node, timeout)
                        .map_err(|e| (e.code, Some(e.message)))
                };
                // v0 always waits for the commit; v1 says (KIP-1186).
                (
                    ChangeKind::Add,
                    version == 0 || r.ack_when_committed,
                    result,
                )
            }
            VoterChangeRequest::Remove(r) => {
                let result = if bad_cluster(&r.cluster_id) {
                    Err((ErrorCode::InconsistentClusterId, None))
                } else {
                    let key = ReplicaKey::new(r.voter_id, r.voter_directory_id);
                    self.core
                        .remove_voter(now, token, key)
                        .map_err(|e| (e.code, Some(e.message)))
                };
                (ChangeKind::Remove, true, result)
            }
            VoterChangeRequest::Update(r) => {
                let epoch = self.core.epoch();
                let result = if bad_cluster(&r.cluster_id) {
                    Err((ErrorCode::InconsistentClusterId, None))
                } else if r.current_leader_epoch < epoch {
                    Err((ErrorCode::FencedLeaderEpoch, None))
                } else if r.current_leader_epoch > epoch {
                    Err((ErrorCode::UnknownLeaderEpoch, None))
                } else {
                    let listeners = r
                        .listeners
                        .iter()
                        .map(|l| (l.name.clone(), endpoint(&l.host, l.port)))
                        .collect();
                    let mut node = VoterNode::new(
                        ReplicaKey::new(r.voter_id, r.voter_directory_id),
                        listeners,
                    );
                    node.supported_kraft_versions = (
                        r.k_raft_version_feature.min_supported_version,
                        r.k_raft_version_feature.max_supported_version,
                    );
                    self.core
                        .update_voter(now, token, node)
                        .map_err(|e| (e.code, Some(e.message)))
                };
                (ChangeKind::Update, true, result)
            }
        };
        match result {
            Err((code, message)) => {
                let _ = reply.send(self.voter_change_response(kind, code, message));
            }
            Ok(()) if !ack_when_committed => {
                let _ = reply.send(self.voter_change_response(kind, ErrorCode::None, None));
            }
            Ok(()) => {
                self.voter_changes
                    .insert(token, PendingChange { kind, reply });
            }
        }
    }

    /// The core answered the change `token`.
    pub(super) fn on_voter_change_done(
        &mut self,
        token: u64,
        error: ErrorCode,
        message: Option<String>,
    ) {
        if let Some(p) = self.voter_changes.remove(&token) {
            let body = self.voter_change_response(p.kind, error, message);
            let _ = p.reply.send(body);
        }
    }

    fn voter_change_response(
        &self,
        kind: ChangeKind,
        code: ErrorCode,
        message: Option<String>,
    ) -> ResponseBody {
        let error_code = code.code();
        let message = message.or_else(|| (code != ErrorCode::None).then(|| code.to_string()));
        match kind {
            ChangeKind::Add => ResponseBody::AddRaftVoter(AddRaftVoterResponse {
                error_code,
                error_message: message,
                ..Default::default()
            }),
            ChangeKind::Remove => ResponseBody::RemoveRaftVoter(RemoveRaftVoterResponse {
                error_code,
                error_message: message,
                ..Default::default()
            }),
            ChangeKind::Update => {
                let leader_id = self.core.leader_id().unwrap_or(-1);
                let (host, port) = self
                    .core
                    .leader_endpoint(leader_id)
                    .map_or((String::new(), -1), |e| (e.host, i32::from(e.port)));
                ResponseBody::UpdateRaftVoter(UpdateRaftVoterResponse {
                    error_code,
                    current_leader: update_raft_voter_response::CurrentLeader {
                        leader_id,
                        leader_epoch: self.core.epoch(),
                        host,
                        port,
                        ..Default::default()
                    },
                    ..Default::default()
                })
            }
        }
    }

    /// What this node asks of the leader about itself (Kafka's `pollFollowerAsVoter` and
    /// auto-join, KIP-853 / KIP-1186), at most one request at a time and one per
    /// [`OWN_VOTER_CHANGE_BACKOFF_MS`], only with `kraft.version` ≥ 1, a directory id and
    /// listeners of its own, and a leader known:
    /// - a voter whose entry in the set differs from its listeners or supported versions
    ///   sends UpdateRaftVoter;
    /// - with `controller.quorum.auto.join.enable`, an observer that has caught up with the
    ///   leader's HW sends RemoveRaftVoter of a stale key with its id (another directory id)
    ///   first, then AddRaftVoter of itself.
    pub(super) fn maybe_request_own_voter_change(&mut self, now: u64) {
        if now < self.own_voter_change.next_ms
            || self.own_voter_change.in_flight.load(Ordering::Acquire)
        {
            return;
        }
        let core = &self.core;
        let Some(leader) = core.leader_id() else {
            return;
        };
        let local = core.local_voter_node();
        if core.kraft_version() < 1
            || leader == self.node_id
            || local.listeners.is_empty()
            || !local.key.has_directory_id()
        {
            return;
        }
        let cluster_id = Some(core.config().cluster_id.clone());
        let set = core.voter_set();
        let (version, body) = if core.is_voter() {
            let Some(entry) = set.node(self.node_id) else {
                return;
            };
            if entry.listeners == local.listeners
                && entry.supported_kraft_versions == local.supported_kraft_versions
            {
                return;
            }
            let request = UpdateRaftVoterRequest {
                cluster_id,
                current_leader_epoch: core.epoch(),
                voter_id: self.node_id,
                voter_directory_id: local.key.directory_id,
                listeners: local
                    .listeners
                    .iter()
                    .map(|(name, e)| update_raft_voter_request::Listener {
                        name: name.clone(),
                        host: e.host.clone(),
                        port: e.port,
                        ..Default::default()
                    })
                    .collect(),
                k_raft_version_feature: update_raft_voter_request::KRaftVersionFeature {
                    min_supported_version: local.supported_kraft_versions.0,
                    max_supported_version: local.supported_kraft_versions.1,
                    ..Default::default()
                },
                ..Default::default()
            };
            (0, RequestBody::UpdateRaftVoter(request))
        } else if core.config().auto_join {
            let leader_hw = core.leader_high_watermark();
            if leader_hw <= 0 || core.high_watermark() < leader_hw {
                return;
            }
            match set.key(self.node_id) {
                Some(stale) => (
                    0,
                    RequestBody::RemoveRaftVoter(RemoveRaftVoterRequest {
                        cluster_id,
                        voter_id: self.node_id,
                        voter_directory_id: stale.directory_id,
                        ..Default::default()
                    }),
                ),
                None => (
                    1,
                    RequestBody::AddRaftVoter(AddRaftVoterRequest {
                        cluster_id,
                        timeout_ms: core.config().request_timeout_ms.min(i32::MAX as u64) as i32,
                        voter_id: self.node_id,
                        voter_directory_id: local.key.directory_id,
                        listeners: local
                            .listeners
                            .iter()
                            .map(|(name, e)| add_raft_voter_request::Listener {
                                name: name.clone(),
                                host: e.host.clone(),
                                port: e.port,
                                ..Default::default()
                            })
                            .collect(),
                        ack_when_committed: true,
                        ..Default::default()
                    }),
                ),
            }
        } else {
            return;
        };
        let Some(address) = core.leader_endpoint(leader).map(|e| e.address()) else {
            return;
        };
        self.own_voter_change.next_ms = now + OWN_VOTER_CHANGE_BACKOFF_MS;
        self.own_voter_change
            .in_flight
            .store(true, Ordering::Release);
        let in_flight = Arc::clone(&self.own_voter_change.in_flight);
        let channel = Channel::spawn(address, self.client.clone());
        let node_id = self.node_id;
        info!(node = node_id, api = ?body.key(), leader, "asking the leader to change this node's voter entry");
        tokio::spawn(async move {
            let outcome = channel.call(1, version, body).await;
            let code = match &outcome {
                Ok(ResponseBody::AddRaftVoter(r)) => Some(r.error_code),
                Ok(ResponseBody::RemoveRaftVoter(r)) => Some(r.error_code),
                Ok(ResponseBody::UpdateRaftVoter(r)) => Some(r.error_code),
                _ => None,
            };
            debug!(
                node = node_id,
                ?code,
                "the leader answered this node's voter change"
            );
            in_flight.store(false, Ordering::Release);
        });
    }

    /// DescribeQuorum v2's `Nodes`: each voter of the leader's answer with its listeners from
    /// the voter set in effect (a static voter's controller listener from
    /// `controller.quorum.voters`), as Kafka's `RaftUtil.singletonDescribeQuorumResponse`
    /// lists them (voters only, and only in a leader's answer).
    /// After an append of the state machine's own (an atomic append, a proposal): the log
    /// end it knows.
    pub(super) fn note_own_append(&mut self) {
        use crate::core::log::RaftLog;
        self.known_end = Some((self.core.epoch(), self.core.log().end_offset()));
    }

    /// When this leader appended records of its own (a VotersRecord, the KRaftVersionRecord)
    /// past the log end the state machine knows, tells it with
    /// [`RaftEvent::LeaderAppended`], so its next predicted offset is past them instead of
    /// being refused (which made the controller resign after every voter change). The
    /// epoch-start records need no event: the leader change carries the log end.
    pub(super) fn announce_leader_appends(&mut self) {
        use crate::core::log::RaftLog;
        if self.core.role() != RoleName::Leader {
            self.known_end = None;
            return;
        }
        let (epoch, end) = (self.core.epoch(), self.core.log().end_offset());
        if let Some((known_epoch, base_offset)) = self.known_end {
            if known_epoch == epoch && base_offset < end {
                debug!(
                    node = self.node_id,
                    epoch, base_offset, end, "the leader appended records of its own"
                );
                let _ = self.events.send(RaftEvent::LeaderAppended {
                    epoch,
                    base_offset,
                    end_offset: end,
                });
            }
        }
        self.known_end = Some((epoch, end));
    }

    pub(super) fn fill_nodes(&self, response: &mut DescribeQuorumResponse) {
        use kraftd_protocol::messages::describe_quorum_response::{Listener, Node};
        let voters: Vec<i32> = response
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .filter(|p| p.error_code == 0)
            .flat_map(|p| p.current_voters.iter().map(|v| v.replica_id))
            .collect();
        let set = self.core.voter_set();
        let mut nodes: Vec<Node> = Vec::new();
        for id in voters {
            if nodes.iter().any(|n| n.node_id == id) {
                continue;
            }
            let mut listeners: BTreeMap<String, Endpoint> = set
                .node(id)
                .map(|n| n.listeners.clone())
                .unwrap_or_default();
            if let Some(v) = self.voters.get(&id) {
                listeners
                    .entry(self.controller_listener_name.clone())
                    .or_insert_with(|| v.wire_endpoint());
            }
            if listeners.is_empty() {
                continue;
            }
            nodes.push(Node {
                node_id: id,
                listeners: listeners
                    .into_iter()
                    .map(|(name, e)| Listener {
                        name,
                        host: e.host,
                        port: e.port,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            });
        }
        response.nodes = nodes;
    }
}

/// A listener's endpoint from the wire (an IPv6 literal kept bare, as Kafka sends it).
fn endpoint(host: &str, port: u16) -> Endpoint {
    Endpoint {
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
    }
}

/// DescribeQuorum v0–1 cannot carry the directory ids that fetches report (KIP-853), even
/// in a static quorum, where they are known too: Kafka leaves them out below v2, and an
/// encoder refusing them closed the connection instead of answering.
pub(super) fn strip_directory_ids(response: &mut DescribeQuorumResponse) {
    let replicas = response.topics.iter_mut().flat_map(|t| {
        t.partitions
            .iter_mut()
            .flat_map(|p| p.current_voters.iter_mut().chain(&mut p.observers))
    });
    for replica in replicas {
        replica.replica_directory_id = Default::default();
    }
}
