//! `KafkaApis`: the broker's request handler (Kafka's `KafkaApis`). Reads are answered from
//! the broker's published metadata image; every mutation goes to the active controller
//! through the [`ForwardingManager`] and the client gets the controller's answer; nothing is
//! applied locally. One instance serves one listener, so answers carry that listener's
//! endpoints.
//!
//! Every request is authorized as its connection's principal first, with Kafka's checks and
//! errors ([`super::auth_helper`] and the node's [`AuthHelper`]); a forwarded request carries
//! that principal in its Envelope and the controller checks it again.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kraftd_controller::auth::{security_disabled, RequestAuth};
use kraftd_controller::control::acl::RESOURCE_TYPE_TOPIC;
use kraftd_controller::control::scram::ScramControlManager;
use kraftd_controller::control::{AclControlManager, ClientQuotaControlManager};
use kraftd_controller::publisher::{OPERATION_DESCRIBE, OPERATION_DESCRIBE_CONFIGS};
use kraftd_controller::MetadataImage;
use kraftd_net::{
    mark_local_complete, mark_sequenced, run_until_sequenced, ApiVersionsFeatures, InboundRequest,
    RequestHandler, RequestTimer,
};
use kraftd_protocol::api_versions::{supported_range, ApiVersionsTable, ListenerType};
use kraftd_protocol::error_response::error_response;
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::{
    CreateTopicsRequest, DescribeQuorumResponse, InitProducerIdResponse, MetadataRequest,
    RequestHeader, ShareAcknowledgeResponse, ShareFetchResponse,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::api_keys::{FORWARDED_API_KEYS, LOCAL_API_KEYS};
use super::apis_context::{BrokerApisContext, FORWARD_TIMEOUT};
use super::auth_helper::{
    cluster_authorized_operations, init_producer_id_refusal, produce_refusals, request_auth,
    uncreatable,
};
use super::config_admin;
use super::group_apis::{GroupApis, GROUP_API_KEYS};
use super::internal_topics::InternalTopics;
use super::log_dir_apis::{self, LOG_DIR_API_KEYS};
use super::node_endpoints;
use super::quota::{ConsumerFetchQuota, RequestQuota};
use super::share_fetch_apis::{ShareApis, SHARE_API_KEYS};
use super::share_group_apis::{ShareGroupApis, SHARE_GROUP_API_KEYS};
use super::share_state_apis::{ShareStateApis, SHARE_STATE_API_KEYS};
use super::streams_group_apis::{StreamsGroupApis, STREAMS_GROUP_API_KEYS};
use super::telemetry_apis::{self, TELEMETRY_API_KEYS};
use super::token_apis;
use super::txn_apis::{TxnApis, TXN_API_KEYS};
use crate::kafka_apis::describe_cluster::describe_cluster_response;
use crate::kafka_apis::list_config_resources::list_config_resources_response;
use crate::kafka_apis::metadata::{is_internal_topic, metadata_response, unknown_topic};
use crate::kafka_apis::BrokerContext;
use kraftd_controller::config_helper::{handle_describe_configs, ConfigContext};
use kraftd_coordinator::group::GROUP_METADATA_TOPIC_NAME;

/// Picks the "random alive broker" Kafka names as controller to clients: a counter mixed
/// per request, so answers spread over brokers as Kafka's random pick does.
fn next_seed() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7
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
            .chain(GROUP_API_KEYS)
            .chain(SHARE_GROUP_API_KEYS)
            .chain(STREAMS_GROUP_API_KEYS)
            .chain(TXN_API_KEYS)
            .chain(LOG_DIR_API_KEYS)
            .chain(SHARE_STATE_API_KEYS)
            .chain(TELEMETRY_API_KEYS)
            .chain([ApiKey::DescribeQuorum])
        {
            table
                .add(key, supported_range(key))
                .expect("every broker API key is served on the broker listener");
        }
        table
    }

    /// What a broker listener with `context` advertises: [`KafkaApis::api_versions`], and
    /// ShareFetch / ShareAcknowledge when the share-partition leaders run (they need the
    /// share coordinator's persister).
    pub fn api_versions_for(context: &BrokerApisContext) -> ApiVersionsTable {
        if context.share_partition_manager.is_some() {
            KafkaApis::api_versions_with_share_fetch()
        } else {
            KafkaApis::api_versions()
        }
    }

    /// What a broker listener of a node that runs share-partition leaders advertises
    /// (every broker kraftd starts does): [`KafkaApis::api_versions`] with ShareFetch and
    /// ShareAcknowledge.
    pub fn api_versions_with_share_fetch() -> ApiVersionsTable {
        let mut table = KafkaApis::api_versions();
        for key in SHARE_API_KEYS {
            table
                .add(key, supported_range(key))
                .expect("ShareFetch and ShareAcknowledge are served on the broker listener");
        }
        table
    }

    fn image(&self) -> Arc<MetadataImage> {
        self.context.cache.image()
    }

    fn broker_context(&self) -> BrokerContext<'_> {
        BrokerContext {
            broker_id: self.context.node_id,
            cluster_id: &self.context.cluster_id,
            listener_name: &self.listener,
            controller_seed: next_seed(),
        }
    }

    /// Metadata, creating requested topics that do not exist when both the broker
    /// (`auto.create.topics.enable`) and the client (v4+ `allow_auto_topic_creation`) allow
    /// it: the CreateTopics goes to the controller and the client, told
    /// LEADER_NOT_AVAILABLE for those topics, asks again (Kafka's AutoTopicCreationManager).
    ///
    /// Topics the principal may not DESCRIBE are hidden (all topics) or refused (named);
    /// creating one needs CREATE on the cluster or the topic, else TOPIC_AUTHORIZATION_FAILED;
    /// `authorized_operations` are filled when asked (v8+).
    async fn metadata(
        &self,
        header: &RequestHeader,
        request: MetadataRequest,
        peer: std::net::SocketAddr,
        auth: &RequestAuth,
    ) -> ResponseBody {
        let version = header.request_api_version;
        let image = self.image();
        let describable =
            |name: &str| auth.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC, name);
        let mut answer = metadata_response(
            &image,
            &request,
            version,
            &self.broker_context(),
            &describable,
        );
        let client_allows = version < 4 || request.allow_auto_topic_creation;
        if self.context.auto_create_topics_enable && client_allows {
            let refused = uncreatable(auth, &answer.missing_topics);
            answer.missing_topics.retain(|t| !refused.contains(t));
            for topic in &mut answer.response.topics {
                if topic.name.as_ref().is_some_and(|n| refused.contains(n)) {
                    let name = topic.name.clone();
                    *topic = unknown_topic(
                        name.as_deref(),
                        ErrorCode::TopicAuthorizationFailed,
                        version,
                    );
                    // Unlike a topic it may not describe, Kafka flags an internal one here.
                    topic.is_internal =
                        version >= 1 && name.as_deref().is_some_and(is_internal_topic);
                }
            }
        }
        if answer
            .missing_topics
            .iter()
            .any(|t| t == GROUP_METADATA_TOPIC_NAME)
        {
            // An internal topic is created with its own settings, never the defaults.
            answer
                .missing_topics
                .retain(|t| t != GROUP_METADATA_TOPIC_NAME);
            InternalTopics::create_offsets_topic(&self.context, &image);
        }
        if self.context.auto_create_topics_enable
            && client_allows
            && !answer.missing_topics.is_empty()
        {
            let create = CreateTopicsRequest {
                topics: answer
                    .missing_topics
                    .iter()
                    .map(|name| CreatableTopic {
                        name: name.clone(),
                        num_partitions: -1,
                        replication_factor: -1,
                        ..Default::default()
                    })
                    .collect(),
                timeout_ms: FORWARD_TIMEOUT.as_millis() as i32,
                ..Default::default()
            };
            let create_version = supported_range(ApiKey::CreateTopics).max;
            let create_header = RequestHeader {
                request_api_key: ApiKey::CreateTopics.code(),
                request_api_version: create_version,
                correlation_id: header.correlation_id,
                client_id: header.client_id.clone(),
                ..Default::default()
            };
            let context = Arc::clone(&self.context);
            let principal = auth.kafka_principal().clone();
            tokio::spawn(async move {
                let deadline = Instant::now() + FORWARD_TIMEOUT;
                let result = context
                    .forwarding
                    .forward(
                        &create_header,
                        RequestBody::CreateTopics(create),
                        &principal,
                        peer.ip(),
                        deadline,
                    )
                    .await;
                if let Err(e) = result {
                    debug!(error = %e, "auto topic creation failed");
                }
            });
            for topic in &mut answer.response.topics {
                if topic
                    .name
                    .as_ref()
                    .is_some_and(|n| answer.missing_topics.contains(n))
                {
                    topic.error_code = ErrorCode::LeaderNotAvailable.code();
                }
            }
        }
        let response = &mut answer.response;
        if version >= 8 {
            if version <= 10 && request.include_cluster_authorized_operations {
                response.cluster_authorized_operations = cluster_authorized_operations(auth);
            }
            if request.include_topic_authorized_operations {
                for topic in &mut response.topics {
                    let refused = topic.error_code == ErrorCode::TopicAuthorizationFailed.code();
                    if let (Some(name), false) = (&topic.name, refused) {
                        topic.topic_authorized_operations =
                            auth.authorized_operations(RESOURCE_TYPE_TOPIC, name);
                    }
                }
            }
        }
        ResponseBody::Metadata(answer.response)
    }

    fn group_apis(&self) -> GroupApis<'_> {
        GroupApis {
            context: &self.context,
            listener: &self.listener,
        }
    }

    /// The response, or `None` when the client expects none (Produce with `acks=0`); a
    /// consumer's Fetch is charged to `quota`.
    async fn handle(
        &self,
        request: InboundRequest,
        auth: RequestAuth,
        quota: Option<&mut RequestQuota>,
    ) -> Option<ResponseBody> {
        let version = request.header.request_api_version;
        let data = &self.context.data;
        let auth = &auth;
        Some(match request.body {
            RequestBody::Produce(r) => {
                let image = self.image();
                let refused = produce_refusals(auth, &image, version, &r);
                let response = data
                    .produce_append_verified(image, version, r, &refused)
                    .respond()
                    .await;
                return response.map(|mut r| {
                    node_endpoints::produce(&self.image(), &self.listener, version, &mut r);
                    ResponseBody::Produce(r)
                });
            }
            RequestBody::Fetch(r) => {
                let quota = quota.map(|q| q as &mut (dyn ConsumerFetchQuota + Send));
                let mut response = data.fetch(&self.image(), version, r, auth, quota).await;
                node_endpoints::fetch(&self.image(), &self.listener, version, &mut response);
                ResponseBody::Fetch(response)
            }
            RequestBody::ListOffsets(r) => {
                ResponseBody::ListOffsets(data.list_offsets(&self.image(), version, r, auth))
            }
            RequestBody::DeleteRecords(r) => {
                ResponseBody::DeleteRecords(data.delete_records(&self.image(), r, auth).await)
            }
            RequestBody::OffsetForLeaderEpoch(r) => ResponseBody::OffsetForLeaderEpoch(
                data.offset_for_leader_epoch(&self.image(), r, auth),
            ),
            RequestBody::InitProducerId(r) => {
                if let Some(code) = init_producer_id_refusal(auth, &r) {
                    return Some(ResponseBody::InitProducerId(InitProducerIdResponse {
                        error_code: code.code(),
                        producer_id: -1,
                        producer_epoch: -1,
                        ongoing_txn_producer_id: -1,
                        ongoing_txn_producer_epoch: -1,
                        ..Default::default()
                    }));
                }
                if r.transactional_id.is_some() {
                    ResponseBody::InitProducerId(
                        TxnApis {
                            context: &self.context,
                        }
                        .init_producer_id(&request.header, request.peer, r)
                        .await,
                    )
                } else {
                    let deadline = Instant::now() + FORWARD_TIMEOUT;
                    ResponseBody::InitProducerId(data.init_producer_id(r, deadline).await)
                }
            }
            RequestBody::DescribeLogDirs(r) => {
                ResponseBody::DescribeLogDirs(log_dir_apis::describe_log_dirs(&r, auth, |f| {
                    data.replica_manager.describe_log_dirs(f)
                }))
            }
            RequestBody::AlterReplicaLogDirs(r) => {
                let image = self.image();
                ResponseBody::AlterReplicaLogDirs(log_dir_apis::alter_replica_log_dirs(
                    &r,
                    auth,
                    |topic, partition, dir| {
                        data.replica_manager
                            .alter_replica_log_dir(&image, topic, partition, dir)
                    },
                ))
            }
            RequestBody::DescribeTopicPartitions(r) => {
                let limit = self
                    .context
                    .static_configs
                    .get("max.request.partition.size.limit")
                    .and_then(|v| v.trim().parse().ok());
                ResponseBody::DescribeTopicPartitions(log_dir_apis::describe_topic_partitions(
                    &self.image(),
                    &r,
                    &self.listener,
                    limit,
                    auth,
                ))
            }
            RequestBody::ShareFetch(r) => {
                let Some(manager) = self.context.share_partition_manager.as_deref() else {
                    return Some(ResponseBody::ShareFetch(ShareFetchResponse {
                        error_code: ErrorCode::UnsupportedVersion.code(),
                        ..Default::default()
                    }));
                };
                // Kafka's connection id is the two ends of the socket: the peer is unique
                // among the listener's live connections.
                let connection_id = format!("{}-{}", self.listener, request.peer);
                let quota = quota.map(|q| q as &mut (dyn ConsumerFetchQuota + Send));
                let mut response = ShareApis { manager }
                    .share_fetch(&self.image(), version, r, &connection_id, auth, quota)
                    .await;
                node_endpoints::share_fetch(&self.image(), &self.listener, &mut response);
                ResponseBody::ShareFetch(response)
            }
            RequestBody::ShareAcknowledge(r) => {
                let Some(manager) = self.context.share_partition_manager.as_deref() else {
                    return Some(ResponseBody::ShareAcknowledge(ShareAcknowledgeResponse {
                        error_code: ErrorCode::UnsupportedVersion.code(),
                        ..Default::default()
                    }));
                };
                let mut response = ShareApis { manager }
                    .share_acknowledge(&self.image(), version, r, auth)
                    .await;
                node_endpoints::share_acknowledge(&self.image(), &self.listener, &mut response);
                ResponseBody::ShareAcknowledge(response)
            }
            RequestBody::DescribeDelegationToken(r) => {
                ResponseBody::DescribeDelegationToken(auth.describe_delegation_tokens(
                    Some(request.session.protocol),
                    &self.context.delegation_tokens,
                    &self.image(),
                    &r,
                ))
            }
            body @ (RequestBody::CreateDelegationToken(_)
            | RequestBody::RenewDelegationToken(_)
            | RequestBody::ExpireDelegationToken(_)) => {
                if let Some(refused) =
                    token_apis::refusal_before_forwarding(&request.session, auth, &body)
                {
                    return Some(refused);
                }
                self.handle_metadata_request(
                    request.api_key,
                    &request.header,
                    request.peer,
                    body,
                    auth,
                )
                .await
            }
            body if TELEMETRY_API_KEYS.contains(&request.api_key) => {
                return telemetry_apis::handle(
                    &self.context,
                    &self.listener,
                    &request.header,
                    &request.session,
                    request.peer,
                    body,
                );
            }
            body if TXN_API_KEYS.contains(&request.api_key) => {
                TxnApis {
                    context: &self.context,
                }
                .handle(&request.header, request.peer, body, auth)
                .await
            }
            body if SHARE_GROUP_API_KEYS.contains(&request.api_key) => {
                ShareGroupApis {
                    context: &self.context,
                    listener: &self.listener,
                }
                .handle(&request.header, request.peer, body, auth)
                .await
            }
            body if STREAMS_GROUP_API_KEYS.contains(&request.api_key) => {
                StreamsGroupApis {
                    context: &self.context,
                    listener: &self.listener,
                }
                .handle(&request.header, request.peer, body, auth)
                .await
            }
            body if SHARE_STATE_API_KEYS.contains(&request.api_key) => {
                ShareStateApis {
                    context: &self.context,
                }
                .handle(&request.header, request.peer, body, auth)
                .await
            }
            body if GROUP_API_KEYS.contains(&request.api_key) => {
                self.group_apis()
                    .handle(&request.header, request.peer, body, auth)
                    .await
            }
            body => {
                self.handle_metadata_request(
                    request.api_key,
                    &request.header,
                    request.peer,
                    body,
                    auth,
                )
                .await
            }
        })
    }

    async fn handle_metadata_request(
        &self,
        key: ApiKey,
        header: &RequestHeader,
        peer: std::net::SocketAddr,
        body: RequestBody,
        auth: &RequestAuth,
    ) -> ResponseBody {
        let version = header.request_api_version;
        let cluster_refused = |body: &RequestBody| {
            error_response(body, ErrorCode::ClusterAuthorizationFailed)
                .expect("every cluster-wide read has an error response")
        };
        match body {
            RequestBody::Metadata(r) => self.metadata(header, r, peer, auth).await,
            RequestBody::DescribeCluster(r) => {
                let mut response =
                    describe_cluster_response(&self.image(), &r, version, &self.broker_context());
                if response.error_code == 0 && r.include_cluster_authorized_operations {
                    response.cluster_authorized_operations = cluster_authorized_operations(auth);
                }
                ResponseBody::DescribeCluster(response)
            }
            RequestBody::DescribeConfigs(r) => {
                let loggers = BTreeMap::new();
                let ctx = ConfigContext {
                    broker_id: self.context.node_id,
                    static_configs: &self.context.static_configs,
                    loggers: &loggers,
                };
                ResponseBody::DescribeConfigs(handle_describe_configs(
                    auth,
                    &self.image(),
                    r,
                    version,
                    &ctx,
                ))
            }
            RequestBody::ListConfigResources(_)
                if !auth.authorize_cluster(OPERATION_DESCRIBE_CONFIGS) =>
            {
                cluster_refused(&body)
            }
            RequestBody::ListConfigResources(r) => ResponseBody::ListConfigResources(
                list_config_resources_response(&self.image(), &r, version, &self.listener),
            ),
            RequestBody::DescribeAcls(_) if !auth.authorize_cluster(OPERATION_DESCRIBE) => {
                cluster_refused(&body)
            }
            RequestBody::DescribeAcls(_) if !auth.is_enabled() => {
                security_disabled(&body).expect("DescribeAcls has a SECURITY_DISABLED answer")
            }
            RequestBody::DescribeAcls(r) => ResponseBody::DescribeAcls(
                AclControlManager::new().describe_acls(&self.image(), &r),
            ),
            RequestBody::DescribeUserScramCredentials(_)
                if !auth.authorize_cluster(OPERATION_DESCRIBE) =>
            {
                cluster_refused(&body)
            }
            RequestBody::DescribeUserScramCredentials(r) => {
                ResponseBody::DescribeUserScramCredentials(
                    ScramControlManager::new().describe_credentials(&self.image(), &r),
                )
            }
            RequestBody::DescribeClientQuotas(_)
                if !auth.authorize_cluster(OPERATION_DESCRIBE_CONFIGS) =>
            {
                cluster_refused(&body)
            }
            RequestBody::DescribeClientQuotas(r) => ResponseBody::DescribeClientQuotas(
                ClientQuotaControlManager::new().describe_client_quotas(&self.image(), &r),
            ),
            // Kafka forwards it in an Envelope and the controller checks DESCRIBE on the
            // cluster; kraftd passes it through as itself, so the client's check is here.
            RequestBody::DescribeQuorum(_) if !auth.authorize_cluster(OPERATION_DESCRIBE) => {
                cluster_refused(&body)
            }
            RequestBody::DescribeQuorum(r) => {
                let deadline = Instant::now() + FORWARD_TIMEOUT;
                // From here the request waits on the controller (Kafka's RemoteTimeMs).
                mark_local_complete();
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
                // Kafka's ConfigAdminManager.preprocess: this broker's own configs checked
                // against what takes them live.
                let (forwarded, refusals) = config_admin::preprocess(&self.context, auth, body);
                let Some(body) = forwarded else {
                    return config_admin::refused_response(key, refusals);
                };
                let deadline = Instant::now() + forward_timeout(&body);
                mark_local_complete();
                let result = self
                    .context
                    .forwarding
                    .forward(
                        header,
                        body.clone(),
                        auth.kafka_principal(),
                        peer.ip(),
                        deadline,
                    )
                    .await
                    .map(|response| config_admin::merge(response, refusals));
                match result {
                    Ok(response) => {
                        // Read-your-writes: the client's next request here sees the change.
                        if key != ApiKey::ListPartitionReassignments {
                            if let Err(e) = self.context.forwarding.await_applied(deadline).await {
                                warn!(api = ?key, error = %e, "answering a forwarded mutation before this broker applied it");
                            }
                        }
                        response
                    }
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

/// Sends `response` (if the client expects one) once `hold` has passed: a throttled
/// client whose request version predates KIP-219 gets its response that late (Kafka's
/// ThrottleTimeMs).
async fn send_after(
    tx: oneshot::Sender<ResponseBody>,
    response: Option<ResponseBody>,
    hold: Duration,
    timer: &RequestTimer,
) {
    let Some(response) = response else { return };
    timer.remote_complete();
    if !hold.is_zero() {
        tokio::time::sleep(hold).await;
    }
    send(tx, response, timer);
}

/// Hands `response` to the connection, marking the request's response complete.
fn send(tx: oneshot::Sender<ResponseBody>, response: ResponseBody, timer: &RequestTimer) {
    timer.response_complete();
    let _ = tx.send(response);
}

/// The client's own timeout where the request carries one.
fn forward_timeout(body: &RequestBody) -> Duration {
    let ms = match body {
        RequestBody::CreateTopics(r) => r.timeout_ms,
        RequestBody::DeleteTopics(r) => r.timeout_ms,
        RequestBody::CreatePartitions(r) => r.timeout_ms,
        RequestBody::ElectLeaders(r) => r.timeout_ms,
        RequestBody::UpdateFeatures(r) => r.timeout_ms,
        RequestBody::AlterPartitionReassignments(r) => r.timeout_ms,
        RequestBody::ListPartitionReassignments(r) => r.timeout_ms,
        _ => 0,
    };
    if ms > 0 {
        Duration::from_millis(ms as u64)
    } else {
        FORWARD_TIMEOUT
    }
}

impl RequestHandler for KafkaApis {
    /// A closed connection ends the share session it opened and releases its member's
    /// records at once (Kafka's share-session disconnect listener), and forgets its client
    /// telemetry instance.
    fn connection_closed(&self, peer: std::net::SocketAddr) {
        // Kafka's client-metrics disconnect listener: the connection's instance goes.
        self.context
            .client_metrics
            .on_disconnect(&telemetry_apis::connection_id(&self.listener, peer));
        if let Some(manager) = self.context.share_partition_manager.clone() {
            let connection_id = format!("{}-{}", self.listener, peer);
            tokio::spawn(async move { manager.on_disconnect(&connection_id).await });
        }
    }

    /// This broker's supported features and the cluster's finalized levels, as a Kafka
    /// broker answers ApiVersions v3+ (clients and `kafka-features describe` read them).
    fn api_versions_identity(&self) -> Option<(String, i32)> {
        Some((self.context.cluster_id.clone(), self.context.node_id))
    }

    fn api_versions_features(&self) -> Option<ApiVersionsFeatures> {
        let image = self.image();
        let features = &image.features;
        let finalized = features
            .metadata_version
            .map(|level| ("metadata.version".to_string(), level))
            .into_iter()
            .chain(features.finalized.iter().map(|(k, v)| (k.clone(), *v)))
            .collect();
        Some(ApiVersionsFeatures {
            supported: super::supported_features()
                .into_iter()
                .map(|f| (f.name, f.min_supported_version, f.max_supported_version))
                .collect(),
            finalized,
            epoch: self.context.metadata_metrics.last_applied_record_offset(),
        })
    }

    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let (tx, rx) = oneshot::channel();
        let auth = request_auth(&self.context.auth, &request);
        // None while no client quota exists: the path below is then the plain one.
        let mut quota = self.context.quotas.begin(&request);
        let started = quota.as_ref().map(|_| std::time::Instant::now());
        if let RequestBody::Produce(r) = request.body {
            // Appended before the connection's next request is read: a client's batches
            // land in the order it sent them (Kafka serves one request per connection at
            // a time); only the acks=all wait runs beside the next requests. A
            // transaction's first batch on a partition is verified with its coordinator
            // first (KIP-890), still before the next request is read.
            let version = request.header.request_api_version;
            let image = self.image();
            // Authorization first: a refused partition is not verified or appended.
            let mut refused = produce_refusals(&auth, &image, version, &r);
            let txn_refused = refused
                .values()
                .any(|c| *c == ErrorCode::TransactionalIdAuthorizationFailed);
            if r.transactional_id.is_some() && !txn_refused {
                let verified = if refused.is_empty() {
                    self.context.txn_verifier.verify(&image, &r, version).await
                } else {
                    let mut allowed = r.clone();
                    for t in &mut allowed.topic_data {
                        let (name, id) = (t.name.clone(), t.topic_id);
                        t.partition_data
                            .retain(|p| !refused.contains_key(&(name.clone(), id, p.index)));
                    }
                    self.context
                        .txn_verifier
                        .verify(&image, &allowed, version)
                        .await
                };
                refused.extend(verified);
            }
            let produce = self
                .context
                .data
                .produce_append_verified(image, version, r, &refused);
            // Appended: what remains is the acks=all wait (Kafka's RemoteTimeMs).
            let timer = request.timer;
            timer.local_complete();
            let apis = self.clone();
            // The leaders named for partitions that moved, from the image once appended.
            let respond = async move {
                let mut response = produce.respond().await?;
                node_endpoints::produce(&apis.image(), &apis.listener, version, &mut response);
                Some(response)
            };
            let Some(mut quota) = quota else {
                tokio::spawn(async move {
                    if let Some(response) = respond.await {
                        send(tx, ResponseBody::Produce(response), &timer);
                    }
                });
                return Some(rx);
            };
            // Charged, and muted if over, before the connection's next request is read.
            quota.add_busy(started.map_or(Duration::ZERO, |s| s.elapsed()));
            quota.record_produce(request.size);
            tokio::spawn(async move {
                let handling = quota.handling_time();
                let response = handling.timed(respond).await;
                let mut response = response.map(ResponseBody::Produce);
                let hold = quota.finish(response.as_mut());
                send_after(tx, response, hold, &timer).await;
            });
            return Some(rx);
        }
        let apis = self.clone();
        // The connection's next request is read once this one's effect is sequenced (a
        // coordinator shard or the controller queued it, a fetch parked) or, for every API
        // that does not say so, once it is answered: a client's requests take effect in the
        // order it sent them, as on Kafka (`ordering`).
        run_until_sequenced(async move {
            // Kafka's request dequeue: a handler starts on it. The scope lets a fetch about
            // to park or a forward mark the end of the local work (`mark_local_complete`).
            let timer = request.timer.clone();
            timer.dequeued();
            let Some(mut quota) = quota.take() else {
                if let Some(response) = timer.scope(apis.handle(request, auth, None)).await {
                    timer.remote_complete();
                    send(tx, response, &timer);
                }
                return;
            };
            let handling = quota.handling_time();
            let mut response = handling
                .timed(timer.scope(apis.handle(request, auth, Some(&mut quota))))
                .await;
            let hold = quota.finish(response.as_mut());
            // Answered: only a throttled old client's hold remains.
            mark_sequenced();
            send_after(tx, response, hold, &timer).await;
        })
        .await;
        Some(rx)
    }
}
