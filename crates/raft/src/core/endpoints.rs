//! KIP-853 leader endpoints on the wire: what this node puts in the Raft messages it sends
//! (its own controller listener when it names itself leader, the known leader's endpoint
//! when it names another) and what it learns from the messages it receives (the endpoint a
//! response or a BeginQuorumEpoch gives for the leader it names). Kafka's
//! `RaftUtil.singleton*Response` and `Endpoints.from*` do the same, so an Apache Kafka peer
//! and our own observers learn where the leader listens from the Raft traffic itself.
//!
//! Which messages carry endpoints, and from which version (Kafka's gates, `RaftUtil`):
//! Fetch response `NodeEndpoints` from v17 (the schema has the tag from v16, Kafka fills it
//! from v17), FetchSnapshot, Vote, BeginQuorumEpoch and EndQuorumEpoch responses
//! `NodeEndpoints` from v1, BeginQuorumEpoch and EndQuorumEpoch requests `LeaderEndpoints`
//! from v1. A response names the leader's endpoint only when it names a leader (id ≥ 0) and
//! its endpoint is known; a version that cannot carry the field leaves it empty (the codec
//! refuses to drop a set value).

use std::collections::BTreeMap;

use kraftd_protocol::messages::{
    begin_quorum_epoch_request, begin_quorum_epoch_response, end_quorum_epoch_request,
    end_quorum_epoch_response, fetch_response, fetch_snapshot_response, vote_response,
};

use super::message::{ApiKind, RaftMessage};

/// The most learned endpoints kept: one per leader id, so at most one per voter; the cap
/// only guards against a peer naming endless ids.
pub const MAX_LEARNED_ENDPOINTS: usize = 64;
/// The longest host name accepted from the wire (DNS's limit).
pub const MAX_ENDPOINT_HOST_LEN: usize = 253;

/// A listener's address as the wire carries it: a host name or a bare IP address (an IPv6
/// literal without brackets, as Java's `getHostString`) and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    /// `host:port` for a TCP connect (an IPv6 literal in brackets).
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// A leader's endpoint as a message named it, with the epoch of that message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnedEndpoint {
    pub epoch: i32,
    pub endpoint: Endpoint,
}

/// The first version of `kind` whose body carries endpoints (Kafka's gates in `RaftUtil`).
pub fn endpoints_since(kind: ApiKind) -> i16 {
    match kind {
        ApiKind::Fetch => 17,
        ApiKind::Vote
        | ApiKind::BeginQuorumEpoch
        | ApiKind::EndQuorumEpoch
        | ApiKind::FetchSnapshot => 1,
    }
}

/// The leader (id, epoch) a message names, if any: a response's partition leader, or the
/// sender of a BeginQuorumEpoch or EndQuorumEpoch request.
pub fn named_leader(msg: &RaftMessage) -> Option<(i32, i32)> {
    let named = match msg {
        RaftMessage::FetchResponse(r) => r
            .responses
            .first()
            .and_then(|t| t.partitions.first())
            .map(|p| (p.current_leader.leader_id, p.current_leader.leader_epoch)),
        RaftMessage::FetchSnapshotResponse(r) => r
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .map(|p| (p.current_leader.leader_id, p.current_leader.leader_epoch)),
        RaftMessage::VoteResponse(r) => r
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .map(|p| (p.leader_id, p.leader_epoch)),
        RaftMessage::BeginQuorumEpochRequest(r) => r
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .map(|p| (p.leader_id, p.leader_epoch)),
        RaftMessage::BeginQuorumEpochResponse(r) => r
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .map(|p| (p.leader_id, p.leader_epoch)),
        RaftMessage::EndQuorumEpochRequest(r) => r
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .map(|p| (p.leader_id, p.leader_epoch)),
        RaftMessage::EndQuorumEpochResponse(r) => r
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .map(|p| (p.leader_id, p.leader_epoch)),
        RaftMessage::VoteRequest(_)
        | RaftMessage::FetchRequest(_)
        | RaftMessage::FetchSnapshotRequest(_) => None,
    };
    named.filter(|(id, epoch)| *id >= 0 && *epoch >= 0)
}

/// Fills the endpoints of `msg`, about to go out at `version`: `leader` is the endpoint of
/// the leader it names (for a BeginQuorumEpoch or EndQuorumEpoch request, the sender's own)
/// under `listener_name`. Nothing is set when `leader` is `None` or `version` cannot carry
/// it. Kafka's `RaftUtil.singleton*`.
pub fn fill_endpoints(
    msg: &mut RaftMessage,
    version: i16,
    listener_name: &str,
    leader: Option<&Endpoint>,
) {
    let Some(e) = leader else { return };
    if version < endpoints_since(msg.kind()) {
        return;
    }
    let Some((leader_id, _)) = named_leader(msg) else {
        return;
    };
    let (host, port) = (e.host.clone(), e.port);
    match msg {
        RaftMessage::FetchResponse(r) => {
            r.node_endpoints = vec![fetch_response::NodeEndpoint {
                node_id: leader_id,
                host,
                port: i32::from(port),
                ..Default::default()
            }]
        }
        RaftMessage::FetchSnapshotResponse(r) => {
            r.node_endpoints = vec![fetch_snapshot_response::NodeEndpoint {
                node_id: leader_id,
                host,
                port,
                ..Default::default()
            }]
        }
        RaftMessage::VoteResponse(r) => {
            r.node_endpoints = vec![vote_response::NodeEndpoint {
                node_id: leader_id,
                host,
                port,
                ..Default::default()
            }]
        }
        RaftMessage::BeginQuorumEpochResponse(r) => {
            r.node_endpoints = vec![begin_quorum_epoch_response::NodeEndpoint {
                node_id: leader_id,
                host,
                port,
                ..Default::default()
            }]
        }
        RaftMessage::EndQuorumEpochResponse(r) => {
            r.node_endpoints = vec![end_quorum_epoch_response::NodeEndpoint {
                node_id: leader_id,
                host,
                port,
                ..Default::default()
            }]
        }
        RaftMessage::BeginQuorumEpochRequest(r) => {
            r.leader_endpoints = vec![begin_quorum_epoch_request::LeaderEndpoint {
                name: listener_name.to_string(),
                host,
                port,
                ..Default::default()
            }]
        }
        RaftMessage::EndQuorumEpochRequest(r) => {
            r.leader_endpoints = vec![end_quorum_epoch_request::LeaderEndpoint {
                name: listener_name.to_string(),
                host,
                port,
                ..Default::default()
            }]
        }
        RaftMessage::VoteRequest(_)
        | RaftMessage::FetchRequest(_)
        | RaftMessage::FetchSnapshotRequest(_) => {}
    }
}

/// The endpoint `msg` gives for the leader it names, under `listener_name` (Kafka's
/// `Endpoints.fromFetchResponse`, `fromBeginQuorumEpochRequest`, ...): a response's
/// `NodeEndpoints` entry of that leader id, a request's `LeaderEndpoints` entry of that
/// listener. A port outside 1..=65535 or an empty or overlong host is no endpoint.
pub fn leader_endpoint_in(msg: &RaftMessage, listener_name: &str) -> Option<(i32, i32, Endpoint)> {
    let (leader_id, epoch) = named_leader(msg)?;
    fn by_id(leader_id: i32, id: i32, host: &str, port: i32) -> Option<(&str, i32)> {
        (id == leader_id).then_some((host, port))
    }
    fn by_name<'a>(listener: &str, name: &str, host: &'a str, port: u16) -> Option<(&'a str, i32)> {
        (name == listener).then_some((host, i32::from(port)))
    }
    let found = match msg {
        RaftMessage::FetchResponse(r) => r
            .node_endpoints
            .iter()
            .find_map(|e| by_id(leader_id, e.node_id, &e.host, e.port)),
        RaftMessage::FetchSnapshotResponse(r) => r
            .node_endpoints
            .iter()
            .find_map(|e| by_id(leader_id, e.node_id, &e.host, e.port.into())),
        RaftMessage::VoteResponse(r) => r
            .node_endpoints
            .iter()
            .find_map(|e| by_id(leader_id, e.node_id, &e.host, e.port.into())),
        RaftMessage::BeginQuorumEpochResponse(r) => r
            .node_endpoints
            .iter()
            .find_map(|e| by_id(leader_id, e.node_id, &e.host, e.port.into())),
        RaftMessage::EndQuorumEpochResponse(r) => r
            .node_endpoints
            .iter()
            .find_map(|e| by_id(leader_id, e.node_id, &e.host, e.port.into())),
        RaftMessage::BeginQuorumEpochRequest(r) => r
            .leader_endpoints
            .iter()
            .find_map(|e| by_name(listener_name, &e.name, &e.host, e.port)),
        RaftMessage::EndQuorumEpochRequest(r) => r
            .leader_endpoints
            .iter()
            .find_map(|e| by_name(listener_name, &e.name, &e.host, e.port)),
        RaftMessage::VoteRequest(_)
        | RaftMessage::FetchRequest(_)
        | RaftMessage::FetchSnapshotRequest(_) => None,
    };
    let (host, port) = found?;
    let port = u16::try_from(port).ok().filter(|p| *p > 0)?;
    if host.is_empty() || host.len() > MAX_ENDPOINT_HOST_LEN {
        return None;
    }
    let endpoint = Endpoint {
        host: host.to_string(),
        port,
    };
    Some((leader_id, epoch, endpoint))
}

/// Remembers `endpoint` for `leader_id` as named at `epoch`, unless a newer epoch's is
/// already known; at the cap, the entry of the oldest epoch goes.
pub fn learn(
    learned: &mut BTreeMap<i32, LearnedEndpoint>,
    leader_id: i32,
    epoch: i32,
    endpoint: Endpoint,
) -> bool {
    if learned.get(&leader_id).is_some_and(|l| l.epoch > epoch) {
        return false;
    }
    if learned
        .get(&leader_id)
        .is_some_and(|l| l.endpoint == endpoint && l.epoch == epoch)
    {
        return false;
    }
    if !learned.contains_key(&leader_id) && learned.len() >= MAX_LEARNED_ENDPOINTS {
        let oldest = learned
            .iter()
            .min_by_key(|(_, l)| l.epoch)
            .map(|(id, _)| *id)
            .expect("the map is full");
        learned.remove(&oldest);
    }
    learned.insert(leader_id, LearnedEndpoint { epoch, endpoint });
    assert!(learned.len() <= MAX_LEARNED_ENDPOINTS);
    true
}
