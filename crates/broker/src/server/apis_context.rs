//! What every request handler of a broker listener shares, in a leaf module the dispatcher
//! (`apis.rs`) and the handlers (`group_apis.rs`, `txn_apis.rs`, `internal_topics.rs`,
//! quotas) all import, so no handler borrows from another: the context
//! ([`BrokerApisContext`]), the forwarding timeout, and the [`RequestContext`] a coordinator
//! shard records of a request. Which APIs are forwarded and which answered here is
//! `api_keys.rs`, a leaf the quotas read too.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kraftd_controller::auth::AuthHelper;
use kraftd_coordinator::context::RequestContext;
use kraftd_protocol::messages::RequestHeader;

use super::data_plane::DataPlane;
use super::forwarding::ForwardingManager;
use super::internal_topics::InternalTopics;
use super::quota::QuotaManagers;
use crate::coordinator::{
    GroupCoordinatorService, ShareCoordinatorService, TransactionCoordinatorService,
};
use crate::metadata::MetadataCache;

/// How long a forwarded request may take when the client gives no timeout of its own
/// (Kafka's `request.timeout.ms` default on the forwarding path).
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

/// The shared parts of every listener's handler.
#[derive(Debug)]
pub struct BrokerApisContext {
    pub node_id: i32,
    pub cluster_id: String,
    pub cache: MetadataCache,
    pub forwarding: ForwardingManager,
    /// The properties file as written (DescribeConfigs' static values).
    pub static_configs: BTreeMap<String, String>,
    /// `auto.create.topics.enable`.
    pub auto_create_topics_enable: bool,
    /// Produce, Fetch and the offset requests.
    pub data: DataPlane,
    /// Groups and their committed offsets.
    pub group_coordinator: Arc<GroupCoordinatorService>,
    /// Transactions.
    pub txn_coordinator: Arc<TransactionCoordinatorService>,
    /// Share partitions' state (`__share_group_state`) led here: the five state APIs.
    pub share_coordinator: Arc<ShareCoordinatorService>,
    /// How share-partition leaders and the group coordinator reach the share coordinator
    /// of any share partition (the broker's `DefaultStatePersister`); DeleteGroups deletes a
    /// share group's state through it first.
    pub share_persister: Arc<dyn crate::share::Persister>,
    /// Channels to other brokers' inter-broker listener for what a handler asks of a
    /// partition's leader (DescribeShareGroupOffsets' end offsets, by ListOffsets).
    pub leader_channels: Arc<super::broker_channels::BrokerChannels>,
    /// KIP-890 verification of transactional produce.
    pub txn_verifier: super::txn_verification::TxnVerifier,
    /// The internal topics this broker asks the controller for.
    pub internal_topics: InternalTopics,
    /// The metadata offset applied (ApiVersions' finalized features epoch).
    pub metadata_metrics: crate::metadata::BrokerMetadataMetrics,
    /// The node's authorizer (none without `authorizer.class.name`).
    pub auth: AuthHelper,
    /// `delegation.token.*`: DescribeDelegationToken derives each token's HMAC with it.
    pub delegation_tokens: kraftd_controller::control::DelegationTokenConfig,
    /// Client quotas: produce and fetch bandwidth, request time.
    pub quotas: Arc<QuotaManagers>,
    /// The share partitions this broker leads and the share sessions (ShareFetch,
    /// ShareAcknowledge); None while share groups cannot be served.
    pub share_partition_manager: Option<Arc<crate::share::SharePartitionManager>>,
    /// This node's dynamic configs and what reconfigures with them: a change to this
    /// broker's own configs is validated against them before it is forwarded.
    pub dynamic_configs: kraftd_controller::publisher::DynamicConfigs,
    /// Client telemetry (KIP-714): GetTelemetrySubscriptions and PushTelemetry.
    pub client_metrics: Arc<crate::client_metrics::ClientMetricsManager>,
}

/// Who sent a request, as the coordinators' shards record it.
pub fn request_context(header: &RequestHeader, peer: SocketAddr) -> RequestContext {
    RequestContext {
        api_version: header.request_api_version,
        client_id: header.client_id.clone().unwrap_or_default(),
        client_host: format!("/{}", peer.ip()),
    }
}
