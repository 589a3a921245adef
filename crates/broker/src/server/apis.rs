//! `KafkaApis`: the broker's request handler (Kafka's `KafkaApis`). Reads are answered from
//! the broker's published metadata image; every mutation goes to the active controller
//! through the [`ForwardingManager`] and the client gets the controller's answer; nothing is
//! applied locally. One instance serves one listener, so answers carry that listener's
//! endpoints.

use std::sync::Arc;
use std::time::Duration;

use kraftd_controller::control::scram::ScramControlManager;
use kraftd_controller::control::{AclControlManager, ClientQuotaControlManager};
use kraftd_controller::node::errors::error_response;
use kraftd_controller::MetadataImage;
use kraftd_protocol::api_versions::{stable_range, ApiVersionsTable, ListenerType};
use kraftd_protocol::messages::DescribeQuorumResponse;
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use kraftd_raft::transport::{InboundRequest, RequestHandler};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use tracing::debug;

use super::forwarding::ForwardingManager;

/// Mutations a broker forwards to the controller in an Envelope.
pub const FORWARDED_API_KEYS: [ApiKey; 11] = [
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::CreatePartitions,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::AlterConfigs,
    ApiKey::CreateAcls,
    ApiKey::DeleteAcls,
    ApiKey::AlterUserScramCredentials,
    ApiKey::AlterClientQuotas,
    ApiKey::ElectLeaders,
    ApiKey::UpdateFeatures,
];

/// Reads a broker answers from its own metadata.
pub const LOCAL_API_KEYS: [ApiKey; 3] = [
    ApiKey::DescribeAcls,
    ApiKey::DescribeUserScramCredentials,
    ApiKey::DescribeClientQuotas,
];

/// How long a forwarded request may take when the client gives no timeout of its own
/// (Kafka's `request.timeout.ms` default on the forwarding path).
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

/// The shared parts of every listener's handler.
#[derive(Debug)]
pub struct BrokerApisContext {
    pub node_id: i32,
    pub cluster_id: String,
    pub images: watch::Receiver<MetadataImage>,
    pub forwarding: ForwardingManager,
}

/// One listener's request handler.
#[derive(Debug, Clone)]
pub struct KafkaApis {
    listener: String,
    context: Arc<BrokerApisContext>,
}

impl KafkaApis {
    pub fn new(listener: String, context: Arc<BrokerApisContext>) -> Self {
        KafkaApis { listener, context }
    }

    /// What a broker listener advertises in ApiVersions.
    pub fn api_versions() -> ApiVersionsTable {
        let mut table = ApiVersionsTable::new(ListenerType::Broker);
        for key in FORWARDED_API_KEYS
            .into_iter()
            .chain(LOCAL_API_KEYS)
            .chain([ApiKey::DescribeQuorum])
        {
            table
                .add(key, stable_range(key))
                .expect("every broker API key is served on the broker listener");
        }
        table
    }

    fn image(&self) -> MetadataImage {
        self.context.images.borrow().clone()
    }

    async fn handle(&self, request: InboundRequest) -> ResponseBody {
        let key = request.api_key;
        let version = request.header.request_api_version;
        match request.body {
            RequestBody::DescribeAcls(r) => ResponseBody::DescribeAcls(
                AclControlManager::new().describe_acls(&self.image(), &r),
            ),
            RequestBody::DescribeUserScramCredentials(r) => {
                ResponseBody::DescribeUserScramCredentials(
                    ScramControlManager::new().describe_credentials(&self.image(), &r),
                )
            }
            RequestBody::DescribeClientQuotas(r) => ResponseBody::DescribeClientQuotas(
                ClientQuotaControlManager::new().describe_client_quotas(&self.image(), &r),
            ),
            RequestBody::DescribeQuorum(r) => {
                let deadline = Instant::now() + FORWARD_TIMEOUT;
                match self
                    .context
                    .forwarding
                    .send_direct(version, RequestBody::DescribeQuorum(r), deadline)
                    .await
                {
                    Ok(response) => response,
                    Err(e) => ResponseBody::DescribeQuorum(DescribeQuorumResponse {
                        error_code: e.error_code().code(),
                        error_message: Some(e.to_string()),
                        ..Default::default()
                    }),
                }
            }
            body if FORWARDED_API_KEYS.contains(&key) => {
                let deadline = Instant::now() + forward_timeout(&body);
                let result = self
                    .context
                    .forwarding
                    .forward(
                        &request.header,
                        body.clone(),
                        ("User", "ANONYMOUS"),
                        request.peer.ip(),
                        deadline,
                    )
                    .await;
                match result {
                    Ok(response) => response,
                    Err(e) => {
                        debug!(api = ?key, listener = %self.listener, error = %e, "forwarding failed");
                        error_response(&body, e.error_code())
                            .expect("every forwarded API has an error response")
                    }
                }
            }
            other => {
                // Not advertised on this listener, so the transport never hands it over.
                error_response(&other, ErrorCode::UnsupportedVersion)
                    .expect("only advertised APIs arrive")
            }
        }
    }
}

/// The client's own timeout where the request carries one.
fn forward_timeout(body: &RequestBody) -> Duration {
    let ms = match body {
        RequestBody::CreateTopics(r) => r.timeout_ms,
        RequestBody::DeleteTopics(r) => r.timeout_ms,
        RequestBody::CreatePartitions(r) => r.timeout_ms,
        RequestBody::ElectLeaders(r) => r.timeout_ms,
        RequestBody::UpdateFeatures(r) => r.timeout_ms,
        _ => 0,
    };
    if ms > 0 {
        Duration::from_millis(ms as u64)
    } else {
        FORWARD_TIMEOUT
    }
}

impl RequestHandler for KafkaApis {
    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let (tx, rx) = oneshot::channel();
        let apis = self.clone();
        tokio::spawn(async move {
            let _ = tx.send(apis.handle(request).await);
        });
        Some(rx)
    }
}
