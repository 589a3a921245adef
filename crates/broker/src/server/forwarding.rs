//! `ForwardingManager` (KIP-590): every mutation a client sends a broker goes to the active
//! controller inside an Envelope carrying the client's principal and address, so the
//! controller can authorize the original caller. Nothing is applied locally: the client's
//! answer is the controller's, unwrapped. NOT_CONTROLLER on the envelope, a dead connection
//! or a timeout is retried against the next active controller within the client's deadline;
//! what remains is answered with the request's own error response (REQUEST_TIMED_OUT).
//!
//! A client's next request to this broker sees its acknowledged change
//! ([`ForwardingManager::await_applied`]): a mutation is answered only once this broker's
//! metadata image has applied what the controller had committed when it answered. Kafka
//! promises only that the controller committed it, but its brokers apply commits fast
//! enough that clients (kafka-go's tests, delete-then-list scripts) rely on more.

use std::net::IpAddr;

use bytes::Bytes;
use kraftd_controller::auth::serialize_principal;
use kraftd_net::KafkaPrincipal;
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use kraftd_protocol::messages::{DescribeQuorumRequest, EnvelopeRequest, RequestHeader};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};
use kraftd_raft::CLUSTER_METADATA_TOPIC;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::warn;

use super::controller_channel::ControllerChannel;
use super::metadata_task::MetadataStatus;

/// DescribeQuorum's version for [`ForwardingManager::await_applied`]: every version carries
/// the leader's high watermark.
const DESCRIBE_QUORUM_VERSION: i16 = 0;

/// Why a forwarded request has no answer from the controller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForwardError {
    #[error("the request could not be wrapped: {0}")]
    Encode(String),
    #[error("{0}")]
    NoController(String),
    #[error("the controller refused the envelope: {0}")]
    Envelope(ErrorCode),
    #[error("the controller's response does not decode: {0}")]
    Decode(String),
}

impl ForwardError {
    /// The error code for the client's response.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            ForwardError::NoController(_) => ErrorCode::RequestTimedOut,
            ForwardError::Envelope(code) => *code,
            ForwardError::Encode(_) | ForwardError::Decode(_) => ErrorCode::UnknownServerError,
        }
    }
}

/// Forwards client requests to the active controller in Envelopes.
#[derive(Debug)]
pub struct ForwardingManager {
    channel: ControllerChannel,
    /// How far this broker's published metadata has come.
    applied: watch::Receiver<MetadataStatus>,
}

impl ForwardingManager {
    pub fn new(channel: ControllerChannel, applied: watch::Receiver<MetadataStatus>) -> Self {
        ForwardingManager { channel, applied }
    }

    /// Waits until this broker's metadata image has applied everything the active
    /// controller has committed now: called once a forwarded mutation is answered, it
    /// holds the answer until the client's next request here sees the change. The
    /// controller's high watermark comes from DescribeQuorum, asked after the mutation's
    /// answer arrived, so it covers the mutation's records; the wait ends at `deadline`
    /// (the client's), with an error saying how far the image got.
    pub async fn await_applied(&self, deadline: Instant) -> Result<(), String> {
        let request = RequestBody::DescribeQuorum(DescribeQuorumRequest {
            topics: vec![TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![PartitionData {
                    partition_index: 0,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        });
        let response = self
            .send_direct(DESCRIBE_QUORUM_VERSION, request, deadline)
            .await
            .map_err(|e| format!("DescribeQuorum failed: {e}"))?;
        let ResponseBody::DescribeQuorum(response) = response else {
            return Err("DescribeQuorum was answered with another response".into());
        };
        let partition = response
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .filter(|p| response.error_code == 0 && p.error_code == 0)
            .ok_or_else(|| {
                let code = response.topics.first().and_then(|t| t.partitions.first());
                format!(
                    "DescribeQuorum answered error {} (partition: {:?})",
                    response.error_code,
                    code.map(|p| p.error_code)
                )
            })?;
        // The HW is the offset after the last committed record.
        let target = partition.high_watermark - 1;
        let mut applied = self.applied.clone();
        let reached = tokio::time::timeout_at(
            deadline,
            applied.wait_for(|s| s.last_applied_offset >= target),
        )
        .await;
        match reached {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err("the broker's metadata stopped".into()),
            Err(_) => Err(format!(
                "the metadata image reached offset {} of the controller's committed {target} \
                 by the request's deadline",
                self.applied.borrow().last_applied_offset
            )),
        }
    }

    /// Forwards `body`, sent by the client with `header`, and returns the controller's
    /// response to it.
    pub async fn forward(
        &self,
        header: &RequestHeader,
        body: RequestBody,
        principal: &KafkaPrincipal,
        client_address: IpAddr,
        deadline: Instant,
    ) -> Result<ResponseBody, ForwardError> {
        let api_key = body.key();
        let version = header.request_api_version;
        let request_data = encode_request(header, &body)
            .map_err(|e| ForwardError::Encode(e.to_string()))?
            .into_bytes();
        let envelope = RequestBody::Envelope(EnvelopeRequest {
            request_data,
            request_principal: Some(serialize_principal(principal)),
            client_host_address: match client_address {
                IpAddr::V4(a) => Bytes::copy_from_slice(&a.octets()),
                IpAddr::V6(a) => Bytes::copy_from_slice(&a.octets()),
            },
            ..Default::default()
        });
        let not_controller = |r: &ResponseBody| matches!(r, ResponseBody::Envelope(e) if e.error_code == ErrorCode::NotController.code());
        let response = self
            .channel
            .send(None, envelope, deadline, not_controller)
            .await
            .map_err(|e| ForwardError::NoController(e.to_string()))?;
        let ResponseBody::Envelope(envelope) = response else {
            return Err(ForwardError::Decode("not an Envelope response".into()));
        };
        if envelope.error_code != 0 {
            let code =
                ErrorCode::from_code(envelope.error_code).unwrap_or(ErrorCode::UnknownServerError);
            warn!(api = ?api_key, %code, "the controller refused a forwarded request");
            return Err(ForwardError::Envelope(code));
        }
        let data = envelope
            .response_data
            .ok_or_else(|| ForwardError::Decode("the envelope carries no response".into()))?;
        let (_, response) = decode_response(api_key, version, data)
            .map_err(|e| ForwardError::Decode(e.to_string()))?;
        Ok(response)
    }

    /// Sends a request to the active controller as it is (no Envelope): DescribeQuorum,
    /// which Kafka's brokers pass through.
    pub async fn send_direct(
        &self,
        version: i16,
        body: RequestBody,
        deadline: Instant,
    ) -> Result<ResponseBody, ForwardError> {
        self.channel
            .send(Some(version), body, deadline, |_| false)
            .await
            .map_err(|e| ForwardError::NoController(e.to_string()))
    }
}
