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

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use kraftd_protocol::messages::{
        BeginQuorumEpochRequest, BeginQuorumEpochResponse, EndQuorumEpochRequest,
        EndQuorumEpochResponse, FetchResponse, FetchSnapshotResponse, VoteResponse,
    };
    use kraftd_protocol::Message;

    use super::*;

    const LEADER: i32 = 1;
    const EPOCH: i32 = 7;

    fn endpoint() -> Endpoint {
        Endpoint {
            host: "controller-1.example".to_string(),
            port: 9093,
        }
    }

    /// Every Raft message that names a leader, naming leader 1 in epoch 7, with the codec's
    /// version range of each.
    fn messages() -> Vec<(RaftMessage, std::ops::RangeInclusive<i16>)> {
        let mut fetch = FetchResponse::default();
        fetch
            .responses
            .push(fetch_response::FetchableTopicResponse {
                partitions: vec![fetch_response::PartitionData {
                    current_leader: fetch_response::LeaderIdAndEpoch {
                        leader_id: LEADER,
                        leader_epoch: EPOCH,
                        ..Default::default()
                    },
                    records: Some(Bytes::new()),
                    ..Default::default()
                }],
                ..Default::default()
            });
        let mut snapshot = FetchSnapshotResponse::default();
        snapshot
            .topics
            .push(fetch_snapshot_response::TopicSnapshot {
                partitions: vec![fetch_snapshot_response::PartitionSnapshot {
                    current_leader: fetch_snapshot_response::LeaderIdAndEpoch {
                        leader_id: LEADER,
                        leader_epoch: EPOCH,
                        ..Default::default()
                    },
                    ..Default::default()
                }],
                ..Default::default()
            });
        let mut vote = VoteResponse::default();
        vote.topics.push(vote_response::TopicData {
            partitions: vec![vote_response::PartitionData {
                leader_id: LEADER,
                leader_epoch: EPOCH,
                ..Default::default()
            }],
            ..Default::default()
        });
        let mut begin = BeginQuorumEpochRequest::default();
        begin.topics.push(begin_quorum_epoch_request::TopicData {
            partitions: vec![begin_quorum_epoch_request::PartitionData {
                leader_id: LEADER,
                leader_epoch: EPOCH,
                ..Default::default()
            }],
            ..Default::default()
        });
        let mut begin_response = BeginQuorumEpochResponse::default();
        begin_response
            .topics
            .push(begin_quorum_epoch_response::TopicData {
                partitions: vec![begin_quorum_epoch_response::PartitionData {
                    leader_id: LEADER,
                    leader_epoch: EPOCH,
                    ..Default::default()
                }],
                ..Default::default()
            });
        let mut end = EndQuorumEpochRequest::default();
        end.topics.push(end_quorum_epoch_request::TopicData {
            partitions: vec![end_quorum_epoch_request::PartitionData {
                leader_id: LEADER,
                leader_epoch: EPOCH,
                ..Default::default()
            }],
            ..Default::default()
        });
        let mut end_response = EndQuorumEpochResponse::default();
        end_response
            .topics
            .push(end_quorum_epoch_response::TopicData {
                partitions: vec![end_quorum_epoch_response::PartitionData {
                    leader_id: LEADER,
                    leader_epoch: EPOCH,
                    ..Default::default()
                }],
                ..Default::default()
            });
        vec![
            // CurrentLeader exists from v12; NodeEndpoints from v16 (tag), filled from v17.
            (RaftMessage::FetchResponse(Box::new(fetch)), 12..=18),
            (
                RaftMessage::FetchSnapshotResponse(Box::new(snapshot)),
                0..=1,
            ),
            (RaftMessage::VoteResponse(vote), 0..=2),
            (RaftMessage::BeginQuorumEpochRequest(begin), 0..=1),
            (RaftMessage::BeginQuorumEpochResponse(begin_response), 0..=1),
            (RaftMessage::EndQuorumEpochRequest(end), 0..=1),
            (RaftMessage::EndQuorumEpochResponse(end_response), 0..=1),
        ]
    }

    /// Encodes at `version` and decodes back through the real codec.
    fn round_trip(msg: &RaftMessage, version: i16) -> RaftMessage {
        let bytes = match msg {
            RaftMessage::FetchResponse(m) => m.to_bytes(version),
            RaftMessage::FetchSnapshotResponse(m) => m.to_bytes(version),
            RaftMessage::VoteResponse(m) => m.to_bytes(version),
            RaftMessage::BeginQuorumEpochRequest(m) => m.to_bytes(version),
            RaftMessage::BeginQuorumEpochResponse(m) => m.to_bytes(version),
            RaftMessage::EndQuorumEpochRequest(m) => m.to_bytes(version),
            RaftMessage::EndQuorumEpochResponse(m) => m.to_bytes(version),
            other => panic!("{other:?} names no leader"),
        }
        .unwrap_or_else(|e| panic!("{:?} v{version} encodes: {e}", msg.kind()));
        RaftMessage::decode(msg.kind(), msg.is_request(), version, bytes)
            .unwrap_or_else(|e| panic!("{:?} v{version} decodes: {e}", msg.kind()))
    }

    #[test]
    fn the_leaders_endpoint_travels_at_the_versions_that_carry_it_and_nothing_before() {
        for (msg, versions) in messages() {
            let since = endpoints_since(msg.kind());
            assert!(versions.contains(&since), "{:?}", msg.kind());
            assert!(
                msg.kind().version() >= since,
                "{:?}: the pinned version carries endpoints",
                msg.kind()
            );
            for version in versions {
                let mut sent = msg.clone();
                fill_endpoints(&mut sent, version, "CONTROLLER", Some(&endpoint()));
                let received = round_trip(&sent, version);
                let learned = leader_endpoint_in(&received, "CONTROLLER");
                if version >= since {
                    assert_eq!(
                        learned,
                        Some((LEADER, EPOCH, endpoint())),
                        "{:?} v{version}",
                        msg.kind()
                    );
                } else {
                    assert_eq!(received, msg, "{:?} v{version} carries nothing", msg.kind());
                    assert_eq!(learned, None, "{:?} v{version}", msg.kind());
                }
            }
        }
    }

    #[test]
    fn nothing_is_sent_without_a_known_endpoint_or_a_named_leader() {
        for (msg, _) in messages() {
            let mut sent = msg.clone();
            fill_endpoints(&mut sent, msg.kind().version(), "CONTROLLER", None);
            assert_eq!(sent, msg);
        }
        let mut vote = VoteResponse::default();
        vote.topics.push(vote_response::TopicData {
            partitions: vec![vote_response::PartitionData {
                leader_id: -1,
                leader_epoch: EPOCH,
                ..Default::default()
            }],
            ..Default::default()
        });
        let msg = RaftMessage::VoteResponse(vote);
        let mut sent = msg.clone();
        fill_endpoints(&mut sent, 2, "CONTROLLER", Some(&endpoint()));
        assert_eq!(sent, msg, "no leader, no endpoint (Kafka: leaderId >= 0)");
    }

    #[test]
    fn a_request_is_read_under_our_listener_name_and_a_response_under_the_leaders_id() {
        let (begin, _) = messages().swap_remove(3);
        let mut sent = begin;
        fill_endpoints(&mut sent, 1, "OTHER", Some(&endpoint()));
        assert_eq!(leader_endpoint_in(&sent, "CONTROLLER"), None);
        assert!(leader_endpoint_in(&sent, "OTHER").is_some());

        let (mut fetch, _) = messages().swap_remove(0);
        fill_endpoints(&mut fetch, 18, "CONTROLLER", Some(&endpoint()));
        if let RaftMessage::FetchResponse(r) = &mut fetch {
            r.node_endpoints[0].node_id = 2;
        }
        assert_eq!(
            leader_endpoint_in(&fetch, "CONTROLLER"),
            None,
            "another node's"
        );
        if let RaftMessage::FetchResponse(r) = &mut fetch {
            r.node_endpoints[0].node_id = LEADER;
            r.node_endpoints[0].port = 70_000;
        }
        assert_eq!(
            leader_endpoint_in(&fetch, "CONTROLLER"),
            None,
            "no such port"
        );
    }

    #[test]
    fn an_older_epoch_never_replaces_a_newer_endpoint_and_the_map_is_capped() {
        let mut learned = BTreeMap::new();
        let other = Endpoint {
            host: "10.0.0.9".to_string(),
            port: 1,
        };
        assert!(learn(&mut learned, 1, 5, endpoint()));
        assert!(!learn(&mut learned, 1, 4, other.clone()));
        assert!(!learn(&mut learned, 1, 5, endpoint()));
        assert!(learn(&mut learned, 1, 6, other.clone()));
        assert_eq!(learned[&1].endpoint, other);
        for id in 2..(MAX_LEARNED_ENDPOINTS as i32 + 10) {
            learn(&mut learned, id, 100 + id, endpoint());
        }
        assert_eq!(learned.len(), MAX_LEARNED_ENDPOINTS);
        assert!(!learned.contains_key(&1), "the oldest epoch went first");
    }

    #[test]
    fn an_ipv6_literal_is_bracketed_to_connect() {
        let e = Endpoint {
            host: "::1".to_string(),
            port: 9093,
        };
        assert_eq!(e.address(), "[::1]:9093");
        assert_eq!(endpoint().address(), "controller-1.example:9093");
    }
}
