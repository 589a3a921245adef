//! The group APIs of `KafkaApis` (Kafka's `handleFindCoordinatorRequest`,
//! `handleJoinGroupRequest`, ... `handleConsumerGroupHeartbeat`): names and topic ids
//! resolved against the metadata image, each group's part sent to its shard through the
//! [`GroupCoordinatorService`], the answers shaped per version. A group whose shard is not here
//! gets NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS while it loads) and the client
//! finds its coordinator again.
//!
//! FindCoordinator creates `__consumer_offsets` on first use, as Kafka's
//! `AutoTopicCreationManager` does for internal topics: compacted, with
//! `offsets.topic.num.partitions`, `offsets.topic.replication.factor` (fewer when the
//! cluster has fewer brokers, with a warning) and `offsets.topic.segment.bytes`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use crate::group_coordinator::shard::RequestContext;
use crate::group_coordinator::{ShardRequest, ShardResponse};
use kraftd_controller::MetadataImage;
use kraftd_log::clock::unix_ms;
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::error_response::error_response;
use kraftd_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kraftd_protocol::messages::find_coordinator_response::Coordinator;
use kraftd_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kraftd_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kraftd_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use kraftd_protocol::messages::{
    ConsumerGroupDescribeResponse, CreateTopicsRequest, DeleteGroupsResponse,
    DescribeGroupsResponse, FindCoordinatorRequest, FindCoordinatorResponse, ListGroupsResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
    RequestHeader,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, Uuid};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::apis::{BrokerApisContext, FORWARD_TIMEOUT};
use crate::coordinator::publisher::GROUP_METADATA_TOPIC_NAME;
use crate::coordinator::transaction::TRANSACTION_STATE_TOPIC_NAME;
use crate::coordinator::GroupCoordinatorService;
use crate::kafka_apis::endpoint;

/// FindCoordinator v4+ batches keys.
const FIND_COORDINATOR_BATCH_VERSION: i16 = 4;
/// OffsetFetch v8+ batches groups.
const OFFSET_FETCH_BATCH_VERSION: i16 = 8;
/// OffsetCommit and OffsetFetch v10 name topics by id.
const TOPIC_ID_VERSION: i16 = 10;
/// FindCoordinator key types.
const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;
/// How often an absent offsets topic is asked for again.
const CREATE_RETRY_MS: i64 = 5_000;

/// The API keys these handlers serve.
pub const GROUP_API_KEYS: [ApiKey; 13] = [
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::SyncGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::OffsetDelete,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::DeleteGroups,
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ConsumerGroupDescribe,
];

/// Creation of the internal topics, each asked at most every [`CREATE_RETRY_MS`].
#[derive(Debug, Default)]
pub struct InternalTopics {
    offsets: AtomicI64,
    transactions: AtomicI64,
}

/// An internal topic as the broker creates it on first use.
struct InternalTopic {
    name: &'static str,
    /// The replication setting, for the warning when there are fewer brokers.
    setting: &'static str,
    partitions: i32,
    replication: i16,
    configs: Vec<(&'static str, String)>,
}

/// One listener's view for the group handlers.
#[derive(Debug)]
pub struct GroupApis<'a> {
    pub context: &'a Arc<BrokerApisContext>,
    pub listener: &'a str,
}

/// Who sent a request, as the coordinators' shards record it.
pub(super) fn request_context(header: &RequestHeader, peer: SocketAddr) -> RequestContext {
    RequestContext {
        api_version: header.request_api_version,
        client_id: header.client_id.clone().unwrap_or_default(),
        client_host: format!("/{}", peer.ip()),
    }
}

impl GroupApis<'_> {
    fn coordinator(&self) -> &GroupCoordinatorService {
        &self.context.group_coordinator
    }

    /// Answers one of [`GROUP_API_KEYS`].
    pub async fn handle(
        &self,
        header: &RequestHeader,
        peer: SocketAddr,
        body: RequestBody,
    ) -> ResponseBody {
        let ctx = request_context(header, peer);
        let version = header.request_api_version;
        let whole = |body: &RequestBody, code: ErrorCode| {
            error_response(body, code).expect("every group API has an error response")
        };
        let single = |body: &RequestBody| -> Option<(String, ShardRequest)> {
            Some(match body {
                RequestBody::JoinGroup(r) => {
                    (r.group_id.clone(), ShardRequest::JoinGroup(r.clone()))
                }
                RequestBody::SyncGroup(r) => {
                    (r.group_id.clone(), ShardRequest::SyncGroup(r.clone()))
                }
                RequestBody::Heartbeat(r) => {
                    (r.group_id.clone(), ShardRequest::Heartbeat(r.clone()))
                }
                RequestBody::LeaveGroup(r) => {
                    (r.group_id.clone(), ShardRequest::LeaveGroup(r.clone()))
                }
                RequestBody::OffsetDelete(r) => {
                    (r.group_id.clone(), ShardRequest::OffsetDelete(r.clone()))
                }
                RequestBody::ConsumerGroupHeartbeat(r) => (
                    r.group_id.clone(),
                    ShardRequest::ConsumerGroupHeartbeat(r.clone()),
                ),
                _ => return None,
            })
        };
        if let Some((group_id, request)) = single(&body) {
            return match self.coordinator().call(&group_id, ctx, request).await {
                Ok(ShardResponse::JoinGroup(r)) => ResponseBody::JoinGroup(r),
                Ok(ShardResponse::SyncGroup(r)) => ResponseBody::SyncGroup(r),
                Ok(ShardResponse::Heartbeat(r)) => ResponseBody::Heartbeat(r),
                Ok(ShardResponse::LeaveGroup(r)) => ResponseBody::LeaveGroup(r),
                Ok(ShardResponse::OffsetDelete(r)) => ResponseBody::OffsetDelete(r),
                Ok(ShardResponse::ConsumerGroupHeartbeat(r)) => {
                    ResponseBody::ConsumerGroupHeartbeat(r)
                }
                Ok(other) => {
                    warn!(?other, "shard answered with the wrong response type");
                    whole(&body, ErrorCode::UnknownServerError)
                }
                Err(code) => whole(&body, code),
            };
        }
        match body {
            RequestBody::FindCoordinator(r) => {
                ResponseBody::FindCoordinator(self.find_coordinator(version, r).await)
            }
            RequestBody::OffsetCommit(r) => {
                ResponseBody::OffsetCommit(self.offset_commit(ctx, r).await)
            }
            RequestBody::OffsetFetch(r) => {
                ResponseBody::OffsetFetch(self.offset_fetch(ctx, r).await)
            }
            RequestBody::DescribeGroups(r) => {
                let mut groups = Vec::new();
                for (ids, answer) in self
                    .per_partition(&ctx, r.groups.clone(), ShardRequest::DescribeGroups)
                    .await
                {
                    match answer {
                        Ok(ShardResponse::DescribeGroups(g)) => groups.extend(g),
                        other => {
                            let code = other.err().unwrap_or(ErrorCode::UnknownServerError);
                            groups.extend(ids.into_iter().map(|id| {
                                kraftd_protocol::messages::describe_groups_response::DescribedGroup {
                                    group_id: id,
                                    error_code: code.code(),
                                    ..Default::default()
                                }
                            }));
                        }
                    }
                }
                reorder(&mut groups, &r.groups, |g| &g.group_id);
                ResponseBody::DescribeGroups(DescribeGroupsResponse {
                    groups,
                    ..Default::default()
                })
            }
            RequestBody::DeleteGroups(r) => {
                let mut results = Vec::new();
                for (ids, answer) in self
                    .per_partition(&ctx, r.groups_names.clone(), ShardRequest::DeleteGroups)
                    .await
                {
                    match answer {
                        Ok(ShardResponse::DeleteGroups(g)) => results.extend(g),
                        other => {
                            let code = other.err().unwrap_or(ErrorCode::UnknownServerError);
                            results.extend(ids.into_iter().map(|id| {
                                kraftd_protocol::messages::delete_groups_response::DeletableGroupResult {
                                    group_id: id,
                                    error_code: code.code(),
                                    ..Default::default()
                                }
                            }));
                        }
                    }
                }
                reorder(&mut results, &r.groups_names, |g| &g.group_id);
                ResponseBody::DeleteGroups(DeleteGroupsResponse {
                    results,
                    ..Default::default()
                })
            }
            RequestBody::ConsumerGroupDescribe(r) => {
                let mut groups = Vec::new();
                for (ids, answer) in self
                    .per_partition(
                        &ctx,
                        r.group_ids.clone(),
                        ShardRequest::ConsumerGroupDescribe,
                    )
                    .await
                {
                    match answer {
                        Ok(ShardResponse::ConsumerGroupDescribe(g)) => groups.extend(g),
                        other => {
                            let code = other.err().unwrap_or(ErrorCode::UnknownServerError);
                            groups.extend(ids.into_iter().map(|id| {
                                kraftd_protocol::messages::consumer_group_describe_response::DescribedGroup {
                                    group_id: id,
                                    error_code: code.code(),
                                    error_message: Some(code.to_string()),
                                    ..Default::default()
                                }
                            }));
                        }
                    }
                }
                reorder(&mut groups, &r.group_ids, |g| &g.group_id);
                ResponseBody::ConsumerGroupDescribe(ConsumerGroupDescribeResponse {
                    groups,
                    ..Default::default()
                })
            }
            RequestBody::ListGroups(r) => {
                let (answers, loading) = self
                    .coordinator()
                    .broadcast(ShardRequest::ListGroups {
                        states: r.states_filter.clone(),
                        types: r.types_filter.clone(),
                    })
                    .await;
                let mut response = ListGroupsResponse::default();
                for a in answers {
                    match a {
                        Ok(ShardResponse::ListGroups(g)) => response.groups.extend(g),
                        Ok(_) => response.error_code = ErrorCode::UnknownServerError.code(),
                        Err(code) => response.error_code = code.code(),
                    }
                }
                if loading {
                    response.error_code = ErrorCode::CoordinatorLoadInProgress.code();
                }
                response.groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
                ResponseBody::ListGroups(response)
            }
            other => whole(&other, ErrorCode::UnsupportedVersion),
        }
    }

    /// Groups split by partition, one shard call per partition, the answers with the ids
    /// each covered.
    async fn per_partition(
        &self,
        ctx: &RequestContext,
        ids: Vec<String>,
        make: fn(Vec<String>) -> ShardRequest,
    ) -> Vec<(Vec<String>, Result<ShardResponse, ErrorCode>)> {
        let mut by_partition: BTreeMap<i32, Vec<String>> = BTreeMap::new();
        for id in ids {
            by_partition
                .entry(self.coordinator().partition_for(&id))
                .or_default()
                .push(id);
        }
        let mut out = Vec::new();
        for (p, ids) in by_partition {
            let answer = self
                .coordinator()
                .call_partition(p, ctx.clone(), make(ids.clone()))
                .await;
            out.push((ids, answer));
        }
        out
    }

    /// FindCoordinator (v0–3 one key, v4+ a batch): the leader of the key's partition on
    /// this listener.
    async fn find_coordinator(
        &self,
        version: i16,
        r: FindCoordinatorRequest,
    ) -> FindCoordinatorResponse {
        let keys: Vec<String> = if version >= FIND_COORDINATOR_BATCH_VERSION {
            r.coordinator_keys.clone()
        } else {
            vec![r.key.clone()]
        };
        let image = self.context.cache.image();
        let mut coordinators = Vec::with_capacity(keys.len());
        for key in keys {
            coordinators.push(self.coordinator_for(&image, r.key_type, key).await);
        }
        if version >= FIND_COORDINATOR_BATCH_VERSION {
            FindCoordinatorResponse {
                coordinators,
                ..Default::default()
            }
        } else {
            let c = coordinators.pop().unwrap_or_default();
            FindCoordinatorResponse {
                error_code: c.error_code,
                error_message: c.error_message,
                node_id: c.node_id,
                host: c.host,
                port: c.port,
                ..Default::default()
            }
        }
    }

    async fn coordinator_for(
        &self,
        image: &MetadataImage,
        key_type: i8,
        key: String,
    ) -> Coordinator {
        let failed = |key: String, code: ErrorCode, message: Option<String>| Coordinator {
            key,
            node_id: -1,
            host: String::new(),
            port: -1,
            error_code: code.code(),
            error_message: message.or_else(|| Some(code.to_string())),
            ..Default::default()
        };
        let (topic_name, partition) = match key_type {
            KEY_TYPE_GROUP => (
                GROUP_METADATA_TOPIC_NAME,
                self.coordinator().partition_for(&key),
            ),
            KEY_TYPE_TRANSACTION => (
                TRANSACTION_STATE_TOPIC_NAME,
                self.context.txn_coordinator.partition_for(&key),
            ),
            _ => {
                // Share groups are not served by kraftd.
                return failed(
                    key,
                    ErrorCode::InvalidRequest,
                    Some(format!(
                        "coordinator key type {key_type} is not supported by kraftd"
                    )),
                );
            }
        };
        let Some(topic) = image.topics.get_by_name(topic_name) else {
            if key_type == KEY_TYPE_GROUP {
                self.create_offsets_topic(image).await;
            } else {
                self.create_transaction_state_topic(image).await;
            }
            return failed(key, ErrorCode::CoordinatorNotAvailable, None);
        };
        let leader = topic
            .partitions
            .get(&partition)
            .map(|p| p.leader)
            .unwrap_or(-1);
        let broker = image.cluster.broker(leader).filter(|b| !b.fenced);
        match broker.and_then(|b| endpoint(b, self.listener)) {
            Some(e) => Coordinator {
                key,
                node_id: leader,
                host: e.host.clone(),
                port: i32::from(e.port),
                error_code: 0,
                error_message: None,
                ..Default::default()
            },
            None => failed(key, ErrorCode::CoordinatorNotAvailable, None),
        }
    }

    /// Asks the controller for `__consumer_offsets` (at most every few seconds).
    pub async fn create_offsets_topic(&self, image: &MetadataImage) {
        let config = self.coordinator().config();
        let spec = InternalTopic {
            name: GROUP_METADATA_TOPIC_NAME,
            setting: "offsets.topic.replication.factor",
            partitions: config.offsets_topic_partitions,
            replication: config.offsets_topic_replication_factor,
            configs: vec![
                ("cleanup.policy", "compact".to_string()),
                ("compression.type", "producer".to_string()),
                (
                    "segment.bytes",
                    config.offsets_topic_segment_bytes.to_string(),
                ),
            ],
        };
        self.create_internal_topic(image, &self.context.internal_topics.offsets, spec)
            .await
    }

    /// Asks the controller for `__transaction_state` (at most every few seconds), with
    /// Kafka's `transaction.state.log.*` settings.
    pub async fn create_transaction_state_topic(&self, image: &MetadataImage) {
        let config = self.context.txn_coordinator.config();
        let spec = InternalTopic {
            name: TRANSACTION_STATE_TOPIC_NAME,
            setting: "transaction.state.log.replication.factor",
            partitions: config.state_log_partitions,
            replication: config.state_log_replication_factor,
            configs: vec![
                ("cleanup.policy", "compact".to_string()),
                ("compression.type", "uncompressed".to_string()),
                ("segment.bytes", config.state_log_segment_bytes.to_string()),
                // Never above the replicas it will have (fewer brokers than configured).
                ("min.insync.replicas", config.state_log_min_isr.to_string()),
            ],
        };
        self.create_internal_topic(image, &self.context.internal_topics.transactions, spec)
            .await
    }

    async fn create_internal_topic(
        &self,
        image: &MetadataImage,
        last_create_ms: &AtomicI64,
        mut spec: InternalTopic,
    ) {
        let now = unix_ms();
        let last = last_create_ms.load(Ordering::Relaxed);
        if now - last < CREATE_RETRY_MS
            || last_create_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let alive = image.cluster.brokers().filter(|b| !b.fenced).count() as i16;
        let mut replication = spec.replication;
        if alive > 0 && alive < replication {
            warn!(
                topic = spec.name,
                configured = replication,
                alive,
                "{} exceeds the live brokers; creating {} with {alive} replicas",
                spec.setting,
                spec.name
            );
            replication = alive;
        }
        for (k, v) in &mut spec.configs {
            if *k == "min.insync.replicas" {
                let min: i16 = v.parse().unwrap_or(1);
                *v = min.clamp(1, replication.max(1)).to_string();
            }
        }
        let create = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: spec.name.into(),
                num_partitions: spec.partitions,
                replication_factor: replication,
                configs: spec
                    .configs
                    .iter()
                    .map(|(k, v)| CreatableTopicConfig {
                        name: (*k).into(),
                        value: Some(v.clone()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            timeout_ms: FORWARD_TIMEOUT.as_millis() as i32,
            ..Default::default()
        };
        let header = RequestHeader {
            request_api_key: ApiKey::CreateTopics.code(),
            request_api_version: supported_range(ApiKey::CreateTopics).max,
            correlation_id: 0,
            client_id: Some(format!("broker-{}-coordinator", self.context.node_id)),
            ..Default::default()
        };
        info!(
            topic = spec.name,
            partitions = spec.partitions,
            replication,
            "creating an internal topic"
        );
        let context = Arc::clone(self.context);
        let name = spec.name;
        tokio::spawn(async move {
            let deadline = Instant::now() + FORWARD_TIMEOUT;
            let result = context
                .forwarding
                .forward(
                    &header,
                    RequestBody::CreateTopics(create),
                    ("User", "ANONYMOUS"),
                    std::net::IpAddr::from([127, 0, 0, 1]),
                    deadline,
                )
                .await;
            match result {
                Ok(ResponseBody::CreateTopics(r)) => {
                    for t in r.topics {
                        if t.error_code != 0 && t.error_code != ErrorCode::TopicAlreadyExists.code()
                        {
                            warn!(topic = name, error = ?ErrorCode::from_code(t.error_code), message = ?t.error_message, "creating an internal topic failed");
                        }
                    }
                }
                Ok(_) => {}
                Err(e) => debug!(topic = name, error = %e, "creating an internal topic failed"),
            }
        });
    }

    /// OffsetCommit: topics must exist (by name, or by id in v10: UNKNOWN_TOPIC_ID); the
    /// rest goes to the group's shard.
    async fn offset_commit(
        &self,
        ctx: RequestContext,
        mut r: OffsetCommitRequest,
    ) -> OffsetCommitResponse {
        let image = self.context.cache.image();
        let by_id = ctx.api_version >= TOPIC_ID_VERSION;
        let mut refused: Vec<OffsetCommitResponseTopic> = Vec::new();
        let mut kept = Vec::with_capacity(r.topics.len());
        for mut t in std::mem::take(&mut r.topics) {
            let found = if by_id {
                image
                    .topics
                    .get(&t.topic_id)
                    .map(|topic| topic.name.clone())
            } else {
                image
                    .topics
                    .get_by_name(&t.name)
                    .map(|topic| topic.name.clone())
            };
            match found {
                Some(name) => {
                    if !by_id {
                        t.topic_id = image
                            .topics
                            .get_by_name(&name)
                            .map(|x| x.id)
                            .unwrap_or_default();
                    }
                    t.name = name;
                    kept.push(t);
                }
                None => {
                    let code = if by_id {
                        ErrorCode::UnknownTopicId
                    } else {
                        ErrorCode::UnknownTopicOrPartition
                    };
                    refused.push(OffsetCommitResponseTopic {
                        name: t.name.clone(),
                        topic_id: t.topic_id,
                        partitions: t
                            .partitions
                            .iter()
                            .map(|p| OffsetCommitResponsePartition {
                                partition_index: p.partition_index,
                                error_code: code.code(),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    });
                }
            }
        }
        r.topics = kept;
        let mut response = if r.topics.is_empty() {
            OffsetCommitResponse::default()
        } else {
            let group_id = r.group_id.clone();
            let body = RequestBody::OffsetCommit(r.clone());
            match self
                .coordinator()
                .call(&group_id, ctx, ShardRequest::OffsetCommit(r))
                .await
            {
                Ok(ShardResponse::OffsetCommit(resp)) => resp,
                Ok(_) => as_commit(error_response(&body, ErrorCode::UnknownServerError)),
                Err(code) => as_commit(error_response(&body, code)),
            }
        };
        response.topics.extend(refused);
        if !by_id {
            for t in &mut response.topics {
                t.topic_id = Uuid::default();
            }
        }
        response
    }

    /// OffsetFetch: v0–7 one group with topics at the top, v8+ a batch of groups.
    async fn offset_fetch(
        &self,
        ctx: RequestContext,
        r: OffsetFetchRequest,
    ) -> OffsetFetchResponse {
        let version = ctx.api_version;
        let image = self.context.cache.image();
        let groups: Vec<OffsetFetchRequestGroup> = if version >= OFFSET_FETCH_BATCH_VERSION {
            r.groups.clone()
        } else {
            vec![OffsetFetchRequestGroup {
                group_id: r.group_id.clone(),
                member_id: None,
                member_epoch: -1,
                topics: r.topics.as_ref().map(|ts| {
                    ts.iter()
                        .map(|t| OffsetFetchRequestTopics {
                            name: t.name.clone(),
                            partition_indexes: t.partition_indexes.clone(),
                            ..Default::default()
                        })
                        .collect()
                }),
                ..Default::default()
            }]
        };
        let mut answers = Vec::with_capacity(groups.len());
        for mut g in groups {
            let group_id = g.group_id.clone();
            // v10 names topics by id: the shard keys offsets by name.
            let mut unknown_ids = Vec::new();
            if version >= TOPIC_ID_VERSION {
                if let Some(topics) = g.topics.as_mut() {
                    topics.retain_mut(|t| match image.topics.get(&t.topic_id) {
                        Some(topic) => {
                            t.name = topic.name.clone();
                            true
                        }
                        None => {
                            unknown_ids.push(t.clone());
                            false
                        }
                    });
                }
            }
            let request = ShardRequest::OffsetFetch {
                group: g,
                require_stable: r.require_stable,
            };
            let mut answer = match self
                .coordinator()
                .call(&group_id, ctx.clone(), request)
                .await
            {
                Ok(ShardResponse::OffsetFetch(a)) => a,
                Ok(_) => error_group(&group_id, ErrorCode::UnknownServerError),
                Err(code) => error_group(&group_id, code),
            };
            for t in &mut answer.topics {
                if t.topic_id == Uuid::default() {
                    t.topic_id = image
                        .topics
                        .get_by_name(&t.name)
                        .map(|x| x.id)
                        .unwrap_or_default();
                }
            }
            for t in unknown_ids {
                answer.topics.push(kraftd_protocol::messages::offset_fetch_response::OffsetFetchResponseTopics {
                    name: String::new(),
                    topic_id: t.topic_id,
                    partitions: t
                        .partition_indexes
                        .iter()
                        .map(|&i| kraftd_protocol::messages::offset_fetch_response::OffsetFetchResponsePartitions {
                            partition_index: i,
                            committed_offset: -1,
                            committed_leader_epoch: -1,
                            metadata: None,
                            error_code: ErrorCode::UnknownTopicId.code(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                });
            }
            answers.push(answer);
        }
        if version >= OFFSET_FETCH_BATCH_VERSION {
            return OffsetFetchResponse {
                groups: answers,
                ..Default::default()
            };
        }
        let g = answers.pop().unwrap_or_default();
        let topics = g
            .topics
            .into_iter()
            .map(|t| OffsetFetchResponseTopic {
                name: t.name,
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| OffsetFetchResponsePartition {
                        partition_index: p.partition_index,
                        committed_offset: p.committed_offset,
                        committed_leader_epoch: p.committed_leader_epoch,
                        metadata: p.metadata,
                        // v0–1 carry no top-level error: it goes on every partition.
                        error_code: if version < 2 && p.error_code == 0 {
                            g.error_code
                        } else {
                            p.error_code
                        },
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        OffsetFetchResponse {
            topics,
            error_code: g.error_code,
            ..Default::default()
        }
    }
}

fn error_group(group_id: &str, code: ErrorCode) -> OffsetFetchResponseGroup {
    OffsetFetchResponseGroup {
        group_id: group_id.to_string(),
        error_code: code.code(),
        ..Default::default()
    }
}

fn as_commit(body: Option<ResponseBody>) -> OffsetCommitResponse {
    match body {
        Some(ResponseBody::OffsetCommit(r)) => r,
        _ => OffsetCommitResponse::default(),
    }
}

/// Puts answers back in the order the request named their groups.
fn reorder<T>(items: &mut [T], order: &[String], id: impl Fn(&T) -> &String) {
    let rank: std::collections::HashMap<&String, usize> =
        order.iter().enumerate().map(|(i, g)| (g, i)).collect();
    items.sort_by_key(|item| rank.get(id(item)).copied().unwrap_or(usize::MAX));
}
