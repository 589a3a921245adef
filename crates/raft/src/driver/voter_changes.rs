//! The driver's side of KIP-853's voter changes: AddRaftVoter v0–1, RemoveRaftVoter v0 and
//! UpdateRaftVoter v0 from the controller listener into the core
//! ([`RaftCore::add_voter`](crate::core::RaftCore::add_voter) and friends), each answered
//! when the core reports it done ([`Output::VoterChangeDone`](crate::core::Output)) or at
//! once when it refuses; the `kraft.version` upgrade a [`RaftHandle`](super::RaftHandle)
//! asks for; and DescribeQuorum v2's `Nodes` from the voter set in effect. Kafka's
//! `KafkaRaftClient.handleAddVoterRequest`, `handleRemoveVoterRequest`,
//! `handleUpdateVoterRequest` (the checks before the handlers').

use std::collections::BTreeMap;

use kraftd_protocol::messages::{
    update_raft_voter_response, AddRaftVoterResponse, DescribeQuorumResponse,
    RemoveRaftVoterResponse, UpdateRaftVoterResponse,
};
use kraftd_protocol::{ErrorCode, ResponseBody};
use tokio::sync::oneshot;

use super::driver_loop::DriverLoop;
use super::router::VoterChangeRequest;
use crate::core::endpoints::Endpoint;
use crate::core::voter_set::{ReplicaKey, VoterNode};

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

    /// DescribeQuorum v2's `Nodes`: each voter of the leader's answer with its listeners from
    /// the voter set in effect (a static voter's controller listener from
    /// `controller.quorum.voters`), as Kafka's `RaftUtil.singletonDescribeQuorumResponse`
    /// lists them (voters only, and only in a leader's answer).
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
