//! [`RaftRequestRouter`]: the controller listener's side of the Raft RPCs. It turns an inbound
//! Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch or FetchSnapshot request into the core's
//! [`RaftMessage`] (with the sender it names) and a DescribeQuorum into a request the driver
//! answers itself, and hands them to the driver loop as [`NetEvent`]s; the conversions back
//! (the core's requests and responses to wire bodies, and wire responses to core messages)
//! sit here too.

use kraftd_protocol::api_versions::{supported_range, ApiVersionsTable};
use kraftd_protocol::messages::{
    AddRaftVoterRequest, DescribeQuorumRequest, RemoveRaftVoterRequest, UpdateRaftVoterRequest,
};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody, VersionRange};
use tokio::sync::{mpsc, oneshot};

use crate::core::message::{ApiKind, RaftMessage};
use crate::core::VoterChangeError;
use kraftd_net::{InboundRequest, RequestHandler};

/// Network input for the driver loop.
#[derive(Debug)]
pub(super) enum NetEvent {
    Request {
        from: i32,
        correlation_id: i32,
        msg: RaftMessage,
        reply: oneshot::Sender<ResponseBody>,
    },
    Response {
        from: i32,
        correlation_id: i32,
        kind: ApiKind,
        result: Result<RaftMessage, String>,
        /// The request failed because the destination's process is gone (its connection
        /// closed and a reconnect was refused): the core hears of it.
        peer_gone: bool,
    },
    /// Answered by the driver from the core's state (not a core input).
    DescribeQuorum {
        request: DescribeQuorumRequest,
        /// The request's version: `Nodes` exists from v2.
        version: i16,
        reply: oneshot::Sender<ResponseBody>,
    },
    /// AddRaftVoter, RemoveRaftVoter or UpdateRaftVoter (KIP-853): the leader's voter
    /// changes, answered by the driver when the core reports the change done.
    VoterChange {
        request: VoterChangeRequest,
        version: i16,
        reply: oneshot::Sender<ResponseBody>,
    },
    /// `kraft.version` through UpdateFeatures (KIP-853's upgrade).
    UpgradeKRaftVersion {
        version: i16,
        validate_only: bool,
        reply: oneshot::Sender<Result<bool, VoterChangeError>>,
    },
}

/// A KIP-853 voter-change request as it came in.
#[derive(Debug)]
pub(super) enum VoterChangeRequest {
    Add(AddRaftVoterRequest),
    Remove(RemoveRaftVoterRequest),
    Update(UpdateRaftVoterRequest),
}

/// Routes a listener's Raft requests (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch,
/// FetchSnapshot, DescribeQuorum) into the driver loop. A listener that serves more than Raft
/// (the controller's) asks [`RaftRequestRouter::handles`] and passes these on.
#[derive(Debug, Clone)]
pub struct RaftRequestRouter {
    pub(super) tx: mpsc::Sender<NetEvent>,
}

impl RaftRequestRouter {
    /// The api keys this router answers.
    pub const API_KEYS: [ApiKey; 9] = [
        ApiKey::Vote,
        ApiKey::BeginQuorumEpoch,
        ApiKey::EndQuorumEpoch,
        ApiKey::Fetch,
        ApiKey::FetchSnapshot,
        ApiKey::DescribeQuorum,
        ApiKey::AddRaftVoter,
        ApiKey::RemoveRaftVoter,
        ApiKey::UpdateRaftVoter,
    ];

    pub fn handles(api_key: ApiKey) -> bool {
        Self::API_KEYS.contains(&api_key)
    }

    /// Adds the Raft RPCs, at the versions the core speaks, and DescribeQuorum to `table`.
    pub fn advertise(table: &mut ApiVersionsTable) {
        for kind in [
            ApiKind::Vote,
            ApiKind::BeginQuorumEpoch,
            ApiKind::EndQuorumEpoch,
            ApiKind::Fetch,
            ApiKind::FetchSnapshot,
        ] {
            let v = kind.version();
            table
                .add(kind.api_key(), VersionRange { min: v, max: v })
                .expect("the pinned Raft versions are stable controller APIs");
        }
        for key in [
            ApiKey::DescribeQuorum,
            ApiKey::AddRaftVoter,
            ApiKey::RemoveRaftVoter,
            ApiKey::UpdateRaftVoter,
        ] {
            table
                .add(key, supported_range(key))
                .expect("DescribeQuorum and the voter changes are controller APIs");
        }
    }
}

impl RequestHandler for RaftRequestRouter {
    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let version = request.header.request_api_version;
        self.handle(request.body, version, request.header.correlation_id)
            .await
    }
}

impl RaftRequestRouter {
    /// Hands one request of [`RaftRequestRouter::API_KEYS`] to the driver: what
    /// [`RequestHandler::dispatch`] does, also for a voter change a broker forwarded in an
    /// Envelope (KIP-853: `kafka-metadata-quorum --bootstrap-server`). `None` for another
    /// body, or once the driver stopped.
    pub async fn handle(
        &self,
        body: RequestBody,
        version: i16,
        correlation_id: i32,
    ) -> Option<oneshot::Receiver<ResponseBody>> {
        let (from, msg) = match body {
            RequestBody::Vote(r) => {
                let from = r
                    .topics
                    .first()
                    .and_then(|t| t.partitions.first())
                    .map_or(-1, |p| p.replica_id);
                (from, RaftMessage::VoteRequest(r))
            }
            RequestBody::BeginQuorumEpoch(r) => {
                let from = r
                    .topics
                    .first()
                    .and_then(|t| t.partitions.first())
                    .map_or(-1, |p| p.leader_id);
                (from, RaftMessage::BeginQuorumEpochRequest(r))
            }
            RequestBody::EndQuorumEpoch(r) => {
                let from = r
                    .topics
                    .first()
                    .and_then(|t| t.partitions.first())
                    .map_or(-1, |p| p.leader_id);
                (from, RaftMessage::EndQuorumEpochRequest(r))
            }
            RequestBody::Fetch(r) => {
                let from = if r.replica_state.replica_id >= 0 {
                    r.replica_state.replica_id
                } else {
                    r.replica_id
                };
                (from, RaftMessage::FetchRequest(r))
            }
            RequestBody::FetchSnapshot(r) => (r.replica_id, RaftMessage::FetchSnapshotRequest(r)),
            RequestBody::DescribeQuorum(request) => {
                let (reply, rx) = oneshot::channel();
                let event = NetEvent::DescribeQuorum {
                    request,
                    version,
                    reply,
                };
                self.tx.send(event).await.ok()?;
                return Some(rx);
            }
            RequestBody::AddRaftVoter(r) => {
                return self.voter_change(VoterChangeRequest::Add(r), version).await
            }
            RequestBody::RemoveRaftVoter(r) => {
                return self
                    .voter_change(VoterChangeRequest::Remove(r), version)
                    .await
            }
            RequestBody::UpdateRaftVoter(r) => {
                return self
                    .voter_change(VoterChangeRequest::Update(r), version)
                    .await
            }
            // The listener advertises nothing else; refusing closes the connection.
            _ => return None,
        };
        let (reply, rx) = oneshot::channel();
        let event = NetEvent::Request {
            from,
            correlation_id,
            msg,
            reply,
        };
        self.tx.send(event).await.ok()?;
        Some(rx)
    }

    /// Upgrades `kraft.version` at this node's Raft leader ([`RaftHandle::upgrade_kraft_version`]
    /// for a listener that holds the router, not the handle: the controller's
    /// UpdateFeatures of `kraft.version`).
    ///
    /// [`RaftHandle::upgrade_kraft_version`]: super::RaftHandle::upgrade_kraft_version
    pub async fn upgrade_kraft_version(
        &self,
        version: i16,
        validate_only: bool,
    ) -> Result<bool, VoterChangeError> {
        let stopped = || VoterChangeError {
            code: kraftd_protocol::ErrorCode::NotLeaderOrFollower,
            message: "the raft driver has stopped".to_string(),
        };
        let (reply, rx) = oneshot::channel();
        let event = NetEvent::UpgradeKRaftVersion {
            version,
            validate_only,
            reply,
        };
        self.tx.send(event).await.map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }

    async fn voter_change(
        &self,
        request: VoterChangeRequest,
        version: i16,
    ) -> Option<oneshot::Receiver<ResponseBody>> {
        let (reply, rx) = oneshot::channel();
        let event = NetEvent::VoterChange {
            request,
            version,
            reply,
        };
        self.tx.send(event).await.ok()?;
        Some(rx)
    }
}

pub(super) fn request_body(msg: RaftMessage) -> Option<RequestBody> {
    Some(match msg {
        RaftMessage::VoteRequest(r) => RequestBody::Vote(r),
        RaftMessage::BeginQuorumEpochRequest(r) => RequestBody::BeginQuorumEpoch(r),
        RaftMessage::EndQuorumEpochRequest(r) => RequestBody::EndQuorumEpoch(r),
        RaftMessage::FetchRequest(r) => RequestBody::Fetch(r),
        RaftMessage::FetchSnapshotRequest(r) => RequestBody::FetchSnapshot(r),
        _ => return None,
    })
}

pub(super) fn response_body(msg: RaftMessage) -> Option<ResponseBody> {
    Some(match msg {
        RaftMessage::VoteResponse(r) => ResponseBody::Vote(r),
        RaftMessage::BeginQuorumEpochResponse(r) => ResponseBody::BeginQuorumEpoch(r),
        RaftMessage::EndQuorumEpochResponse(r) => ResponseBody::EndQuorumEpoch(r),
        RaftMessage::FetchResponse(r) => ResponseBody::Fetch(*r),
        RaftMessage::FetchSnapshotResponse(r) => ResponseBody::FetchSnapshot(*r),
        _ => return None,
    })
}

pub(super) fn raft_response(body: ResponseBody) -> Option<RaftMessage> {
    Some(match body {
        ResponseBody::Vote(r) => RaftMessage::VoteResponse(r),
        ResponseBody::BeginQuorumEpoch(r) => RaftMessage::BeginQuorumEpochResponse(r),
        ResponseBody::EndQuorumEpoch(r) => RaftMessage::EndQuorumEpochResponse(r),
        ResponseBody::Fetch(r) => RaftMessage::FetchResponse(Box::new(r)),
        ResponseBody::FetchSnapshot(r) => RaftMessage::FetchSnapshotResponse(Box::new(r)),
        _ => return None,
    })
}
