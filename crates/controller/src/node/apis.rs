//! `ControllerApis`: what the controller listener answers (Kafka's `ControllerApis`). Raft's
//! RPCs and DescribeQuorum go to the Raft driver; every controller API becomes a write or
//! read operation on the controller's event loop and is answered once its records commit;
//! an Envelope (a broker forwarding a client's request, KIP-590) is unwrapped, run the same
//! way, and its response wrapped again.
//!
//! A request the controller cannot run gets a response of its own type carrying the error
//! ([`kraftd_protocol::error_response::error_response`]): NOT_CONTROLLER on a standby, so clients and brokers
//! move on to the active controller.
//!
//! Every request is authorized first ([`super::authz`], Kafka's `ControllerApis` checks): the
//! connection's principal for what arrives directly, CLUSTER_ACTION for an Envelope's sender
//! and then the client's principal and address the Envelope carries for what it wraps.
//!
//! CreateTopics, DeleteTopics and CreatePartitions are charged to the controller mutation
//! quota (KIP-599) of the principal and client id that sent them (an Envelope's, for a
//! forwarded request): strict from CreateTopics v6, DeleteTopics v5, CreatePartitions v3,
//! permissive before. The response carries the throttle time; a client connected here is
//! muted for it (its response held back too when its version predates KIP-219), while a
//! forwarded request's broker mutes its own client, as Kafka's do.

use std::collections::BTreeMap;

use crate::config_helper::{handle_describe_configs, ConfigContext};
use std::sync::Arc;

use kraftd_net::{
    mark_local_complete, mark_sequenced, run_until_sequenced, ApiVersionsFeatures, InboundRequest,
    KafkaPrincipal, RequestHandler,
};
use kraftd_protocol::api_versions::{supported_range, ApiVersionsTable, ListenerType};
use kraftd_protocol::header::{decode_request, encode_response};
use kraftd_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kraftd_protocol::messages::{
    ControllerRegistrationResponse, DescribeClusterRequest, DescribeClusterResponse,
    EnvelopeRequest, EnvelopeResponse, UnregisterBrokerResponse, UnregisterControllerResponse,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use kraftd_raft::driver::{RaftMetrics, RaftRequestRouter, VoterEndpoint};
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{debug, warn};

use super::authz::{self, Checked};
use super::event_loop::{ControllerRequest, ControllerStatus, Op};
use crate::auth::{self as auth_helper, AuthHelper, RequestAuth};
use crate::control::features::KRAFT_VERSION_FEATURE;
use crate::control::DelegationTokenConfig;
use crate::image::METADATA_VERSION_FEATURE;
use crate::publisher::{OPERATION_ALTER, OPERATION_CLUSTER_ACTION, OPERATION_DESCRIBE};
use crate::quorum_controller::{ops, ControllerError};
use crate::quota::{
    client_throttles, set_throttle_time_ms, throttle_ms_i32, ControllerMutationQuota,
    ControllerMutationQuotaManager,
};
use kraftd_protocol::error_response::error_response;

/// Kafka's `EndpointType.BROKER`.
pub const ENDPOINT_TYPE_BROKER: i8 = 1;
/// Kafka's `EndpointType.CONTROLLER`.
pub const ENDPOINT_TYPE_CONTROLLER: i8 = 2;

/// The controller APIs served besides Raft's, at every stable version.
pub const CONTROLLER_API_KEYS: [ApiKey; 26] = [
    ApiKey::BrokerRegistration,
    ApiKey::BrokerHeartbeat,
    ApiKey::UnregisterBroker,
    ApiKey::ControllerRegistration,
    ApiKey::UnregisterController,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::CreatePartitions,
    ApiKey::AlterPartition,
    ApiKey::AssignReplicasToDirs,
    ApiKey::ElectLeaders,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::AlterConfigs,
    ApiKey::AlterUserScramCredentials,
    ApiKey::DescribeUserScramCredentials,
    ApiKey::CreateAcls,
    ApiKey::DeleteAcls,
    ApiKey::DescribeAcls,
    ApiKey::AllocateProducerIds,
    ApiKey::UpdateFeatures,
    ApiKey::AlterClientQuotas,
    ApiKey::AlterPartitionReassignments,
    ApiKey::ListPartitionReassignments,
    ApiKey::CreateDelegationToken,
    ApiKey::RenewDelegationToken,
    ApiKey::ExpireDelegationToken,
];

/// The controller listener's request handler; cheap to clone.
#[derive(Debug, Clone)]
pub struct ControllerApis {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    cluster_id: String,
    router: RaftRequestRouter,
    requests: mpsc::Sender<ControllerRequest>,
    table: ApiVersionsTable,
    /// `controller.quorum.voters`: the controllers DescribeCluster lists before any has
    /// registered (KIP-919).
    voters: BTreeMap<i32, VoterEndpoint>,
    /// The controller listener's name: which registered endpoint DescribeCluster lists.
    listener_name: String,
    /// What ApiVersions says this controller supports.
    supported_features: Vec<(String, i16, i16)>,
    /// Who leads, for DescribeCluster's controller id.
    raft: watch::Receiver<RaftMetrics>,
    /// The node's authorizer (none without `authorizer.class.name`).
    auth: AuthHelper,
    /// The committed image: names of topics a request gives by id, for authorization.
    status: watch::Receiver<ControllerStatus>,
    /// `controller_mutation_rate`.
    mutation_quotas: ControllerMutationQuotaManager,
    /// `delete.topic.enable`.
    delete_topic_enable: bool,
    /// `node.id`, and the properties file DescribeConfigs reports as static configs.
    node_id: i32,
    static_configs: BTreeMap<String, String>,
    /// `delegation.token.*`, for DescribeDelegationToken.
    delegation_tokens: DelegationTokenConfig,
}

impl std::fmt::Debug for ControllerRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ControllerRequest")
    }
}

/// Where DescribeCluster's controllers come from: the registrations' endpoints on
/// `listener_name`, else the static `voters`.
pub(crate) struct ControllerListing {
    pub voters: BTreeMap<i32, VoterEndpoint>,
    pub listener_name: String,
    /// The feature ranges this controller supports (name, min, max): its ApiVersions
    /// answer's, as the ones it registers.
    pub supported_features: Vec<(String, i16, i16)>,
    /// This controller's `node.id` and properties file: the BROKER resource DescribeConfigs
    /// describes here.
    pub node_id: i32,
    pub static_configs: BTreeMap<String, String>,
    /// `delegation.token.*`: DescribeDelegationToken derives each token's HMAC with it.
    pub delegation_tokens: DelegationTokenConfig,
}

/// What decides whether a request runs and at what pace: the node's authorizer and the
/// controller mutation quotas.
pub(crate) struct Admission {
    pub auth: AuthHelper,
    pub mutation_quotas: ControllerMutationQuotaManager,
    /// `delete.topic.enable`: false refuses every DeleteTopics.
    pub delete_topic_enable: bool,
}

impl ControllerApis {
    pub(crate) fn new(
        cluster_id: String,
        router: RaftRequestRouter,
        requests: mpsc::Sender<ControllerRequest>,
        listing: ControllerListing,
        raft: watch::Receiver<RaftMetrics>,
        status: watch::Receiver<ControllerStatus>,
        admission: Admission,
    ) -> Self {
        let Admission {
            auth,
            mutation_quotas,
            delete_topic_enable,
        } = admission;
        let table = Self::api_versions_table();
        ControllerApis {
            inner: Arc::new(Inner {
                cluster_id,
                router,
                requests,
                table,
                voters: listing.voters,
                listener_name: listing.listener_name,
                supported_features: listing.supported_features,
                node_id: listing.node_id,
                static_configs: listing.static_configs,
                delegation_tokens: listing.delegation_tokens,
                raft,
                auth,
                status,
                mutation_quotas,
                delete_topic_enable,
            }),
        }
    }

    /// What a controller listener advertises (before the SASL APIs every listener adds):
    /// the Raft RPCs, the controller APIs, Envelope and DescribeCluster.
    pub fn api_versions_table() -> ApiVersionsTable {
        let mut table = ApiVersionsTable::new(ListenerType::Controller);
        RaftRequestRouter::advertise(&mut table);
        for key in CONTROLLER_API_KEYS.into_iter().chain([
            ApiKey::Envelope,
            ApiKey::DescribeCluster,
            ApiKey::DescribeConfigs,
            ApiKey::DescribeDelegationToken,
        ]) {
            table
                .add(key, supported_range(key))
                .expect("every controller API key is served on the controller listener");
        }
        table
    }

    /// What the listener advertises in ApiVersions.
    pub fn api_versions(&self) -> ApiVersionsTable {
        self.inner.table.clone()
    }

    pub fn cluster_id(&self) -> &str {
        &self.inner.cluster_id
    }

    /// Runs one controller request to its response.
    /// `body` must be one of [`CONTROLLER_API_KEYS`].
    async fn execute(
        &self,
        version: i16,
        body: RequestBody,
        quota: ControllerMutationQuota,
        principal: &KafkaPrincipal,
        forwarded: bool,
    ) -> ResponseBody {
        if super::kraft_version::names_kraft_version(&body) {
            // KIP-853: kraft.version is the Raft leader's, the rest the controller's.
            let RequestBody::UpdateFeatures(r) = body else {
                unreachable!("names_kraft_version matches UpdateFeatures only")
            };
            return match super::kraft_version::upgrade(&self.inner.router, r).await {
                Err(answer) => answer,
                Ok((rest, result)) => {
                    let body = RequestBody::UpdateFeatures(rest);
                    let response =
                        Box::pin(self.execute(version, body, quota, principal, forwarded)).await;
                    super::kraft_version::merge(response, result)
                }
            };
        }
        let (reply, rx) = oneshot::channel();
        let request = ControllerRequest {
            version,
            body: body.clone(),
            reply,
            quota,
            principal: principal.clone(),
            enqueued: std::time::Instant::now(),
            forwarded,
        };
        // Handed to the QuorumController: its queue and the commit are Kafka's RemoteTimeMs
        // (ControllerApis' local work ends when the operation is enqueued).
        mark_local_complete();
        let result = match self.inner.requests.send(request).await {
            // Queued: the QuorumController runs its queue in order, so a forwarding broker's
            // next Envelope may be read (`ordering`; a no-op for a direct client).
            Ok(()) => {
                mark_sequenced();
                rx.await
                    .unwrap_or(Err(ControllerError::NotController { leader_id: None }))
            }
            Err(_) => Err(ControllerError::NotController { leader_id: None }),
        };
        match result {
            Ok(response) => response,
            Err(e) => {
                debug!(api = ?body.key(), error = %e, "controller request failed");
                error_response(&body, e.error_code()).expect("operation() covers only these")
            }
        }
    }

    /// Authorizes a controller request as `auth`, runs what may run (a mutation charged to
    /// the quota of `user` and `client_id`), and answers; the response carries the throttle
    /// time, which is also returned.
    /// `protocol` is the client connection's security protocol, `None` for a request a
    /// broker forwarded.
    async fn execute_authorized(
        &self,
        auth: &RequestAuth,
        version: i16,
        body: RequestBody,
        client_id: &str,
        protocol: Option<kraftd_net::SecurityProtocol>,
    ) -> (ResponseBody, u64) {
        if let Some(refused) = authz::check_token_api(auth, &body, protocol) {
            return (refused, 0);
        }
        if matches!(body, RequestBody::DeleteTopics(_)) && !self.inner.delete_topic_enable {
            // Kafka's ControllerApis.deleteTopics, before any authorization: every topic
            // refused, INVALID_REQUEST ("Topic deletion is disabled.") before v3.
            let code = if version < 3 {
                ErrorCode::InvalidRequest
            } else {
                ErrorCode::TopicDeletionDisabled
            };
            let response = error_response(&body, code).expect("DeleteTopics has one");
            return (response, 0);
        }
        let image = self.inner.status.borrow().image.clone();
        match authz::check(auth, &image, body) {
            Checked::Answer(response) => (response, 0),
            Checked::Run(body, merge) => {
                let (response, throttle_ms) = self
                    .execute_as(
                        version,
                        body,
                        auth.kafka_principal(),
                        client_id,
                        protocol.is_none(),
                    )
                    .await;
                let response = match merge {
                    Some(merge) => merge(response),
                    None => response,
                };
                (response, throttle_ms)
            }
        }
    }

    /// Runs a request sent by `principal` with `client_id` (`forwarded` by a broker, or
    /// not), charging a mutation to their quota; the response carries the throttle time,
    /// which is also returned.
    async fn execute_as(
        &self,
        version: i16,
        body: RequestBody,
        principal: &KafkaPrincipal,
        client_id: &str,
        forwarded: bool,
    ) -> (ResponseBody, u64) {
        let user = principal.name.as_str();
        let quota = match mutation_strict_since(body.key()) {
            Some(strict_since) => {
                self.inner
                    .mutation_quotas
                    .quota_for(user, client_id, version >= strict_since)
            }
            None => ControllerMutationQuota::unbounded(),
        };
        let mut response = self
            .execute(version, body, quota.clone(), principal, forwarded)
            .await;
        let throttle_ms = quota.throttle_time_ms();
        if throttle_ms > 0 {
            set_throttle_time_ms(&mut response, version, throttle_ms_i32(throttle_ms));
            self.inner
                .mutation_quotas
                .record_throttle(&quota, throttle_ms);
        }
        (response, throttle_ms)
    }

    /// DescribeCluster on the controller listener (KIP-919, what `--bootstrap-controller`
    /// admin clients and kafka-metadata-quorum ask): the controllers, with the active one as
    /// controller id. The controllers are the registered ones (ControllerRegistration,
    /// KIP-919) with an endpoint on the controller listener, as Kafka's
    /// `describeClusterControllers`; before any has registered (a new cluster's first
    /// moments), `controller.quorum.voters`.
    /// Needs ALTER on the cluster there, as Kafka's `ControllerApis` asks (unlike a broker).
    fn describe_cluster(
        &self,
        auth: &RequestAuth,
        request: &DescribeClusterRequest,
    ) -> DescribeClusterResponse {
        if !auth.authorize_cluster(OPERATION_ALTER) {
            let code = ErrorCode::ClusterAuthorizationFailed;
            return DescribeClusterResponse {
                error_code: code.code(),
                error_message: Some(auth_helper::default_message(code)),
                endpoint_type: request.endpoint_type,
                controller_id: -1,
                ..Default::default()
            };
        }
        if request.endpoint_type != ENDPOINT_TYPE_CONTROLLER {
            let (code, message) = if request.endpoint_type == ENDPOINT_TYPE_BROKER {
                (
                    ErrorCode::MismatchedEndpointType,
                    "The request was sent to an endpoint of type CONTROLLER, but we wanted an \
                     endpoint of type BROKER",
                )
            } else {
                (
                    ErrorCode::UnsupportedEndpointType,
                    "Unsupported endpoint type",
                )
            };
            return DescribeClusterResponse {
                error_code: code.code(),
                error_message: Some(message.to_string()),
                endpoint_type: request.endpoint_type,
                controller_id: -1,
                ..Default::default()
            };
        }
        let leader = self.inner.raft.borrow().current_leader;
        DescribeClusterResponse {
            endpoint_type: ENDPOINT_TYPE_CONTROLLER,
            cluster_id: self.inner.cluster_id.clone(),
            controller_id: leader,
            brokers: self.controller_endpoints(),
            cluster_authorized_operations: if !request.include_cluster_authorized_operations {
                i32::MIN
            } else if auth.authorize_cluster(OPERATION_DESCRIBE) {
                auth.authorized_operations(
                    crate::control::acl::RESOURCE_TYPE_CLUSTER,
                    crate::control::acl::CLUSTER_RESOURCE_NAME,
                )
            } else {
                0
            },
            ..Default::default()
        }
    }

    /// DescribeCluster's controllers: the registered ones, else the static voters.
    fn controller_endpoints(&self) -> Vec<DescribeClusterBroker> {
        let node = |id: i32, host: &str, port: u16| DescribeClusterBroker {
            broker_id: id,
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port: i32::from(port),
            rack: None,
            is_fenced: false,
            ..Default::default()
        };
        let image = self.inner.status.borrow().image.clone();
        let registered: Vec<DescribeClusterBroker> = image
            .cluster
            .controllers()
            .filter_map(|c| {
                let e = c.listeners.get(&self.inner.listener_name)?;
                Some(node(c.id, &e.host, e.port))
            })
            .collect();
        if !registered.is_empty() {
            return registered;
        }
        self.inner
            .voters
            .values()
            .map(|v| node(v.id, &v.host, v.port))
            .collect()
    }

    /// Runs the request an Envelope carries and wraps its response (KIP-590): the sender
    /// (a broker) needs CLUSTER_ACTION; the request then runs as the client the Envelope
    /// names.
    async fn envelope(&self, sender: &RequestAuth, envelope: EnvelopeRequest) -> ResponseBody {
        let fail = |code: ErrorCode| {
            ResponseBody::Envelope(EnvelopeResponse {
                response_data: None,
                error_code: code.code(),
                ..Default::default()
            })
        };
        if !sender.authorize_cluster(OPERATION_CLUSTER_ACTION) {
            warn!(
                principal = sender.principal(),
                "an Envelope from a principal without CLUSTER_ACTION"
            );
            return fail(ErrorCode::ClusterAuthorizationFailed);
        }
        let principal = match envelope
            .request_principal
            .as_ref()
            .ok_or(ErrorCode::PrincipalDeserializationFailure)
            .and_then(auth_helper::deserialize_principal)
        {
            Ok(p) => p,
            Err(code) => {
                warn!("an Envelope whose principal does not deserialize");
                return fail(code);
            }
        };
        let address = match auth_helper::forwarded_address(&envelope.client_host_address) {
            Ok(a) => a,
            Err(code) => {
                warn!("an Envelope whose client address is neither 4 nor 16 bytes");
                return fail(code);
            }
        };
        let client = self.inner.auth.request(&principal, address);
        let inner = match decode_request(envelope.request_data) {
            Ok(r) => r,
            Err(e) => {
                warn!(error = %e, "an Envelope carries a request that does not decode");
                return fail(ErrorCode::InvalidRequest);
            }
        };
        let version = inner.header.request_api_version;
        let voter_change = matches!(
            inner.api_key,
            ApiKey::AddRaftVoter | ApiKey::RemoveRaftVoter
        );
        if !(CONTROLLER_API_KEYS.contains(&inner.api_key) || voter_change)
            || !self.inner.table.supports(inner.api_key, version)
        {
            warn!(api = ?inner.api_key, version, "an Envelope carries a request the controller does not serve");
            return fail(ErrorCode::InvalidRequest);
        }
        let response = if voter_change {
            // A broker's forward of `kafka-metadata-quorum --bootstrap-server
            // add-controller/remove-controller`: checked as the client, run by the Raft
            // driver as if the client had come here directly.
            match authz::check_raft(&client, &inner.body) {
                Some(refused) => refused,
                None => {
                    let correlation_id = inner.header.correlation_id;
                    let body = inner.body.clone();
                    let answer = match self
                        .inner
                        .router
                        .handle(inner.body, version, correlation_id)
                        .await
                    {
                        Some(rx) => rx.await.ok(),
                        None => None,
                    };
                    answer.unwrap_or_else(|| {
                        error_response(&body, ErrorCode::NotController)
                            .expect("voter changes have error responses")
                    })
                }
            }
        } else {
            let client_id = inner.header.client_id.clone().unwrap_or_default();
            self.execute_authorized(&client, version, inner.body, &client_id, None)
                .await
                .0
        };
        // A NOT_CONTROLLER anywhere in the answer is said on the Envelope itself, with no
        // response in it (Kafka's `Request.buildResponseSend`): that is what makes the
        // broker's forwarding channel drop this node and ask its metadata for the active
        // controller. Wrapped, it reaches the client instead, which retries through the
        // same broker, forwarded here again until its deadline ("Timed out waiting for a
        // node assignment" in Kafka's admin client).
        let mut not_controller = false;
        response.error_codes(version, &mut |code| {
            not_controller |= code == ErrorCode::NotController.code()
        });
        if not_controller {
            return fail(ErrorCode::NotController);
        }
        match encode_response(inner.header.correlation_id, version, &response) {
            Ok(encoder) => ResponseBody::Envelope(EnvelopeResponse {
                response_data: Some(encoder.into_bytes()),
                error_code: 0,
                ..Default::default()
            }),
            Err(e) => {
                warn!(error = %e, "the forwarded request's response does not encode");
                fail(ErrorCode::UnknownServerError)
            }
        }
    }
}

impl RequestHandler for ControllerApis {
    /// As Kafka's `ControllerApis`: the features this controller supports and the committed
    /// finalized levels (what `kafka-features describe --bootstrap-controller` prints).
    fn api_versions_features(&self) -> Option<ApiVersionsFeatures> {
        let status = self.inner.status.borrow();
        let features = &status.image.features;
        let finalized = features
            .metadata_version
            .map(|level| (METADATA_VERSION_FEATURE.to_string(), level))
            .into_iter()
            .chain(
                features
                    .finalized
                    .iter()
                    .filter(|(k, _)| k.as_str() != KRAFT_VERSION_FEATURE)
                    .map(|(k, v)| (k.clone(), *v)),
            )
            // kraft.version is the Raft layer's, not a metadata record's.
            .chain(std::iter::once((
                KRAFT_VERSION_FEATURE.to_string(),
                self.inner.raft.borrow().kraft_version,
            )))
            .collect();
        Some(ApiVersionsFeatures {
            supported: self.inner.supported_features.clone(),
            finalized,
            epoch: status.committed_offset,
        })
    }

    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let auth = self
            .inner
            .auth
            .request(&request.session.principal, request.peer.ip());
        let (tx, rx) = oneshot::channel();
        if RaftRequestRouter::handles(request.api_key) {
            if let Some(refused) = authz::check_raft(&auth, &request.body) {
                let _ = tx.send(refused);
                return Some(rx);
            }
            return self.inner.router.dispatch(request).await;
        }
        let version = request.header.request_api_version;
        let apis = self.clone();
        match request.body {
            RequestBody::DescribeCluster(r) => {
                let _ = tx.send(ResponseBody::DescribeCluster(
                    apis.describe_cluster(&auth, &r),
                ));
            }
            // As Kafka's ControllerApis: the same ConfigHelper as a broker's, over this
            // controller's committed image and its own properties.
            RequestBody::DescribeConfigs(r) => {
                let loggers = BTreeMap::new();
                let ctx = ConfigContext {
                    broker_id: apis.inner.node_id,
                    static_configs: &apis.inner.static_configs,
                    loggers: &loggers,
                };
                let image = apis.inner.status.borrow().image.clone();
                let _ = tx.send(ResponseBody::DescribeConfigs(handle_describe_configs(
                    &auth, &image, r, version, &ctx,
                )));
            }
            // Kafka's controllers advertise it but answer UNKNOWN_SERVER_ERROR; kraftd's answer
            // from their committed image, as a broker does from its own.
            RequestBody::DescribeDelegationToken(r) => {
                let image = apis.inner.status.borrow().image.clone();
                let _ = tx.send(ResponseBody::DescribeDelegationToken(
                    auth.describe_delegation_tokens(
                        Some(request.session.protocol),
                        &apis.inner.delegation_tokens,
                        &image,
                        &r,
                    ),
                ));
            }
            // A broker's forwards, of many clients: the next is read once this one is in
            // the controller's queue (which applies them in order), as the broker answers
            // each client's forward before reading that client's next request.
            RequestBody::Envelope(envelope) => {
                let timer = request.timer;
                run_until_sequenced(async move {
                    timer.dequeued();
                    let response = timer.scope(apis.envelope(&auth, envelope)).await;
                    timer.remote_complete();
                    timer.response_complete();
                    let _ = tx.send(response);
                })
                .await;
            }
            // A client of its own (a broker's heartbeats and AlterPartition, an admin client
            // with --bootstrap-controller): its next request is read once this one is
            // answered, as Kafka's muted channel does. A read runs on the committed image,
            // so it must not overtake a write of the same client still waiting for commit.
            body if CONTROLLER_API_KEYS.contains(&body.key()) => {
                let api = body.key();
                let client_id = request.header.client_id.clone().unwrap_or_default();
                let mute = request.mute.clone();
                let timer = request.timer;
                let protocol = Some(request.session.protocol);
                async move {
                    timer.dequeued();
                    let (response, throttle_ms) = timer
                        .scope(apis.execute_authorized(&auth, version, body, &client_id, protocol))
                        .await;
                    timer.remote_complete();
                    if throttle_ms > 0 {
                        let throttle = std::time::Duration::from_millis(throttle_ms);
                        mute.mute_for(throttle);
                        if !client_throttles(api, version) {
                            tokio::time::sleep(throttle).await;
                        }
                    }
                    timer.response_complete();
                    let _ = tx.send(response);
                }
                .await;
            }
            // Not advertised, so the transport never hands it over; closing is the answer.
            _ => return None,
        }
        Some(rx)
    }
}

/// Kafka's `strictSinceVersion` of the APIs charged to the controller mutation quota.
fn mutation_strict_since(api: ApiKey) -> Option<i16> {
    match api {
        ApiKey::CreateTopics => Some(6),
        ApiKey::DeleteTopics => Some(5),
        ApiKey::CreatePartitions => Some(3),
        _ => None,
    }
}

/// The controller operation for a request, its mutations charged to `quota`; `None` for
/// requests of other APIs. `forwarded`: a broker sent it in an Envelope; `kraft_version`:
/// the quorum's now (a registering broker must support it).
pub(crate) fn operation_with_quota(
    version: i16,
    body: RequestBody,
    quota: ControllerMutationQuota,
    principal: &KafkaPrincipal,
    forwarded: bool,
    kraft_version: i16,
) -> Option<Op> {
    use RequestBody as B;
    use ResponseBody as Rsp;
    Some(match body {
        B::IncrementalAlterConfigs(r) => Op::Write(
            ops::incremental_alter_configs(r, forwarded).map(Rsp::IncrementalAlterConfigs),
        ),
        B::AlterConfigs(r) => Op::Write(ops::alter_configs(r, forwarded).map(Rsp::AlterConfigs)),
        B::CreateTopics(r) => {
            Op::Write(ops::create_topics_with_quota(r, quota).map(Rsp::CreateTopics))
        }
        B::DeleteTopics(r) => {
            Op::Write(ops::delete_topics_with_quota(r, quota).map(Rsp::DeleteTopics))
        }
        B::CreatePartitions(r) => {
            Op::Write(ops::create_partitions_with_quota(r, quota).map(Rsp::CreatePartitions))
        }
        B::CreateDelegationToken(r) => Op::Write(
            ops::create_delegation_token(principal.clone(), r).map(Rsp::CreateDelegationToken),
        ),
        B::RenewDelegationToken(r) => Op::Write(
            ops::renew_delegation_token(principal.clone(), r).map(Rsp::RenewDelegationToken),
        ),
        B::ExpireDelegationToken(r) => Op::Write(
            ops::expire_delegation_token(principal.clone(), r).map(Rsp::ExpireDelegationToken),
        ),
        body => return operation(version, body, kraft_version),
    })
}

/// The controller operation for a request; `None` for requests of other APIs.
/// `kraft_version`: the quorum's now (a registering broker must support it).
pub(crate) fn operation(version: i16, body: RequestBody, kraft_version: i16) -> Option<Op> {
    use RequestBody as B;
    use ResponseBody as Rsp;
    Some(match body {
        B::BrokerRegistration(r) => {
            Op::Write(ops::register_broker(version, r, kraft_version).map(Rsp::BrokerRegistration))
        }
        B::BrokerHeartbeat(r) => Op::Write(ops::broker_heartbeat(r).map(Rsp::BrokerHeartbeat)),
        B::UnregisterBroker(r) => {
            let broker_id = r.broker_id;
            Op::Write(ops::unregister_broker(broker_id).map(move |code| {
                // Kafka's ReplicationControlManager.unregisterBroker message.
                let error_message = (code == ErrorCode::BrokerIdNotRegistered)
                    .then(|| format!("Broker ID {broker_id} is not currently registered"));
                Rsp::UnregisterBroker(UnregisterBrokerResponse {
                    error_code: code.code(),
                    error_message,
                    ..Default::default()
                })
            }))
        }
        B::ControllerRegistration(r) => {
            Op::Write(ops::register_controller(r).map(|(code, message)| {
                Rsp::ControllerRegistration(ControllerRegistrationResponse {
                    error_code: code.code(),
                    error_message: message,
                    ..Default::default()
                })
            }))
        }
        B::UnregisterController(r) => Op::Write(ops::unregister_controller(r.controller_id).map(
            |(code, message)| {
                Rsp::UnregisterController(UnregisterControllerResponse {
                    error_code: code.code(),
                    error_message: message,
                    ..Default::default()
                })
            },
        )),
        B::CreateTopics(r) => Op::Write(ops::create_topics(r).map(Rsp::CreateTopics)),
        B::DeleteTopics(r) => Op::Write(ops::delete_topics(r).map(Rsp::DeleteTopics)),
        B::CreatePartitions(r) => Op::Write(ops::create_partitions(r).map(Rsp::CreatePartitions)),
        B::AlterPartition(r) => {
            Op::Write(ops::alter_partition(version, r).map(Rsp::AlterPartition))
        }
        B::AssignReplicasToDirs(r) => {
            Op::Write(ops::assign_replicas_to_dirs(r).map(Rsp::AssignReplicasToDirs))
        }
        B::ElectLeaders(r) => Op::Write(ops::elect_leaders(r).map(Rsp::ElectLeaders)),
        B::AlterUserScramCredentials(r) => {
            Op::Write(ops::alter_user_scram_credentials(r).map(Rsp::AlterUserScramCredentials))
        }
        B::DescribeUserScramCredentials(r) => {
            Op::Read(ops::describe_user_scram_credentials(r).map(Rsp::DescribeUserScramCredentials))
        }
        B::CreateAcls(r) => Op::Write(ops::create_acls(r).map(Rsp::CreateAcls)),
        B::DeleteAcls(r) => Op::Write(ops::delete_acls(r).map(Rsp::DeleteAcls)),
        B::DescribeAcls(r) => Op::Read(ops::describe_acls(r).map(Rsp::DescribeAcls)),
        B::AllocateProducerIds(r) => {
            Op::Write(ops::allocate_producer_ids(r).map(Rsp::AllocateProducerIds))
        }
        B::UpdateFeatures(r) => Op::Write(ops::update_features(r).map(Rsp::UpdateFeatures)),
        B::AlterClientQuotas(r) => {
            Op::Write(ops::alter_client_quotas(r).map(Rsp::AlterClientQuotas))
        }
        B::AlterPartitionReassignments(r) => {
            Op::Write(ops::alter_partition_reassignments(r).map(Rsp::AlterPartitionReassignments))
        }
        B::ListPartitionReassignments(r) => {
            Op::Read(ops::list_partition_reassignments(r).map(Rsp::ListPartitionReassignments))
        }
        _ => return None,
    })
}
