//! The Raft RPCs the core sends and receives: the generated Kafka messages of
//! kraftd-protocol, wrapped in one enum so the driver routes bytes and the core matches on
//! meaning. The wire versions are pinned here (the newest Kafka 4.x speaks) together with
//! the `__cluster_metadata` topic name and id every request names.

use bytes::Bytes;
use kraftd_protocol::messages::{
    BeginQuorumEpochRequest, BeginQuorumEpochResponse, EndQuorumEpochRequest,
    EndQuorumEpochResponse, FetchRequest, FetchResponse, FetchSnapshotRequest,
    FetchSnapshotResponse, VoteRequest, VoteResponse,
};
use kraftd_protocol::{ApiKey, DecodeError, EncodeError, Message, Uuid};

/// The metadata log's topic name.
pub const CLUSTER_METADATA_TOPIC: &str = "__cluster_metadata";
/// Kafka's fixed topic id of `__cluster_metadata` (`AAAAAAAAAAAAAAAAAAAAAQ`).
pub const CLUSTER_METADATA_TOPIC_ID: Uuid = Uuid([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
/// The metadata log's only partition.
pub const CLUSTER_METADATA_PARTITION: i32 = 0;

/// Vote v2 carries `PreVote` (KIP-996).
pub const VOTE_VERSION: i16 = 2;
/// BeginQuorumEpoch v1 carries the leader's endpoints (KIP-853).
pub const BEGIN_QUORUM_EPOCH_VERSION: i16 = 1;
/// EndQuorumEpoch v1 carries preferred candidates with directory ids (KIP-853).
pub const END_QUORUM_EPOCH_VERSION: i16 = 1;
/// Fetch v18 carries the follower's high watermark (KIP-1166).
pub const FETCH_VERSION: i16 = 18;
/// FetchSnapshot v1 carries the leader's endpoints (KIP-853), as Kafka 4.x sends it.
pub const FETCH_SNAPSHOT_VERSION: i16 = 1;

/// Which RPC a message belongs to (requests and responses share it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ApiKind {
    Vote,
    BeginQuorumEpoch,
    EndQuorumEpoch,
    Fetch,
    FetchSnapshot,
}

impl ApiKind {
    pub fn api_key(self) -> ApiKey {
        match self {
            ApiKind::Vote => ApiKey::Vote,
            ApiKind::BeginQuorumEpoch => ApiKey::BeginQuorumEpoch,
            ApiKind::EndQuorumEpoch => ApiKey::EndQuorumEpoch,
            ApiKind::Fetch => ApiKey::Fetch,
            ApiKind::FetchSnapshot => ApiKey::FetchSnapshot,
        }
    }

    /// The version the core speaks.
    pub fn version(self) -> i16 {
        match self {
            ApiKind::Vote => VOTE_VERSION,
            ApiKind::BeginQuorumEpoch => BEGIN_QUORUM_EPOCH_VERSION,
            ApiKind::EndQuorumEpoch => END_QUORUM_EPOCH_VERSION,
            ApiKind::Fetch => FETCH_VERSION,
            ApiKind::FetchSnapshot => FETCH_SNAPSHOT_VERSION,
        }
    }
}

/// One Raft RPC, request or response.
#[derive(Debug, Clone, PartialEq)]
pub enum RaftMessage {
    VoteRequest(VoteRequest),
    VoteResponse(VoteResponse),
    BeginQuorumEpochRequest(BeginQuorumEpochRequest),
    BeginQuorumEpochResponse(BeginQuorumEpochResponse),
    EndQuorumEpochRequest(EndQuorumEpochRequest),
    EndQuorumEpochResponse(EndQuorumEpochResponse),
    FetchRequest(FetchRequest),
    FetchResponse(Box<FetchResponse>),
    FetchSnapshotRequest(FetchSnapshotRequest),
    FetchSnapshotResponse(Box<FetchSnapshotResponse>),
}

/// Why bytes did not make a [`RaftMessage`].
#[derive(Debug, thiserror::Error)]
pub enum MessageDecodeError {
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("{remaining} bytes left after the message body")]
    TrailingBytes { remaining: usize },
}

impl RaftMessage {
    pub fn kind(&self) -> ApiKind {
        match self {
            RaftMessage::VoteRequest(_) | RaftMessage::VoteResponse(_) => ApiKind::Vote,
            RaftMessage::BeginQuorumEpochRequest(_) | RaftMessage::BeginQuorumEpochResponse(_) => {
                ApiKind::BeginQuorumEpoch
            }
            RaftMessage::EndQuorumEpochRequest(_) | RaftMessage::EndQuorumEpochResponse(_) => {
                ApiKind::EndQuorumEpoch
            }
            RaftMessage::FetchRequest(_) | RaftMessage::FetchResponse(_) => ApiKind::Fetch,
            RaftMessage::FetchSnapshotRequest(_) | RaftMessage::FetchSnapshotResponse(_) => {
                ApiKind::FetchSnapshot
            }
        }
    }

    pub fn is_request(&self) -> bool {
        matches!(
            self,
            RaftMessage::VoteRequest(_)
                | RaftMessage::BeginQuorumEpochRequest(_)
                | RaftMessage::EndQuorumEpochRequest(_)
                | RaftMessage::FetchRequest(_)
                | RaftMessage::FetchSnapshotRequest(_)
        )
    }

    /// The body at the pinned version (no header: the driver frames it).
    pub fn encode(&self) -> Result<Bytes, EncodeError> {
        let v = self.kind().version();
        match self {
            RaftMessage::VoteRequest(m) => m.to_bytes(v),
            RaftMessage::VoteResponse(m) => m.to_bytes(v),
            RaftMessage::BeginQuorumEpochRequest(m) => m.to_bytes(v),
            RaftMessage::BeginQuorumEpochResponse(m) => m.to_bytes(v),
            RaftMessage::EndQuorumEpochRequest(m) => m.to_bytes(v),
            RaftMessage::EndQuorumEpochResponse(m) => m.to_bytes(v),
            RaftMessage::FetchRequest(m) => m.to_bytes(v),
            RaftMessage::FetchResponse(m) => m.to_bytes(v),
            RaftMessage::FetchSnapshotRequest(m) => m.to_bytes(v),
            RaftMessage::FetchSnapshotResponse(m) => m.to_bytes(v),
        }
    }

    /// Decodes a body of `kind` at `version`; all of `body` must be used.
    pub fn decode(
        kind: ApiKind,
        is_request: bool,
        version: i16,
        mut body: Bytes,
    ) -> Result<RaftMessage, MessageDecodeError> {
        let b = &mut body;
        let msg = match (kind, is_request) {
            (ApiKind::Vote, true) => RaftMessage::VoteRequest(VoteRequest::decode(b, version)?),
            (ApiKind::Vote, false) => RaftMessage::VoteResponse(VoteResponse::decode(b, version)?),
            (ApiKind::BeginQuorumEpoch, true) => {
                RaftMessage::BeginQuorumEpochRequest(BeginQuorumEpochRequest::decode(b, version)?)
            }
            (ApiKind::BeginQuorumEpoch, false) => {
                RaftMessage::BeginQuorumEpochResponse(BeginQuorumEpochResponse::decode(b, version)?)
            }
            (ApiKind::EndQuorumEpoch, true) => {
                RaftMessage::EndQuorumEpochRequest(EndQuorumEpochRequest::decode(b, version)?)
            }
            (ApiKind::EndQuorumEpoch, false) => {
                RaftMessage::EndQuorumEpochResponse(EndQuorumEpochResponse::decode(b, version)?)
            }
            (ApiKind::Fetch, true) => RaftMessage::FetchRequest(FetchRequest::decode(b, version)?),
            (ApiKind::Fetch, false) => {
                RaftMessage::FetchResponse(Box::new(FetchResponse::decode(b, version)?))
            }
            (ApiKind::FetchSnapshot, true) => {
                RaftMessage::FetchSnapshotRequest(FetchSnapshotRequest::decode(b, version)?)
            }
            (ApiKind::FetchSnapshot, false) => RaftMessage::FetchSnapshotResponse(Box::new(
                FetchSnapshotResponse::decode(b, version)?,
            )),
        };
        if !body.is_empty() {
            return Err(MessageDecodeError::TrailingBytes {
                remaining: body.len(),
            });
        }
        Ok(msg)
    }
}
