//! The group APIs of `KafkaApis` (Kafka's `handleFindCoordinatorRequest`,
//! `handleJoinGroupRequest`, ... `handleConsumerGroupHeartbeat`): names and topic ids
//! resolved against the metadata image, each group's part sent to its shard through the
//! [`GroupCoordinatorService`], the answers shaped per version. A group whose shard is not here
//! gets NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS while it loads) and the client
//! finds its coordinator again.
//!
//! FindCoordinator creates `__consumer_offsets` (or `__transaction_state`) on first use
//! ([`super::internal_topics`]). Every request is authorized first, as Kafka's handlers do
//! ([`super::group_auth`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use kraftd_controller::auth::{default_message, RequestAuth};
use kraftd_controller::control::acl::{OPERATION_READ, RESOURCE_TYPE_GROUP, RESOURCE_TYPE_TOPIC};
use kraftd_controller::publisher::{
    OPERATION_CLUSTER_ACTION, OPERATION_DELETE, OPERATION_DESCRIBE, RESOURCE_TYPE_TRANSACTIONAL_ID,
};
use kraftd_controller::MetadataImage;
use kraftd_coordinator::context::RequestContext;
use kraftd_coordinator::group::{ShardRequest, ShardResponse};
use kraftd_protocol::error_response::error_response;
use kraftd_protocol::features::GROUP_VERSION_FEATURE;
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
    ConsumerGroupDescribeResponse, DeleteGroupsResponse, DescribeGroupsResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, ListGroupsResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, RequestHeader,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, Uuid};
use tracing::warn;

use super::apis_context::{request_context, BrokerApisContext};
use super::group_auth;
use super::internal_topics::InternalTopics;
use crate::coordinator::GroupCoordinatorService;
use crate::kafka_apis::endpoint;
use kraftd_coordinator::group::GROUP_METADATA_TOPIC_NAME;
use kraftd_coordinator::share::{SharePartitionKey, SHARE_GROUP_STATE_TOPIC_NAME};
use kraftd_coordinator::transaction::TRANSACTION_STATE_TOPIC_NAME;

/// FindCoordinator v4+ batches keys.
const FIND_COORDINATOR_BATCH_VERSION: i16 = 4;
/// OffsetFetch v8+ batches groups.
const OFFSET_FETCH_BATCH_VERSION: i16 = 8;
/// OffsetCommit and OffsetFetch v10 name topics by id.
const TOPIC_ID_VERSION: i16 = 10;
/// FindCoordinator key types.
const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;
/// A share partition's coordinator (KIP-932), from FindCoordinator v6.
const KEY_TYPE_SHARE: i8 = 2;
/// The first FindCoordinator version that may ask for key type SHARE.
const FIND_COORDINATOR_SHARE_VERSION: i16 = 6;

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

/// Kafka's `GroupVersion.isConsumerRebalanceProtocolSupported`: `group.version` >= 1.
pub fn consumer_groups_enabled(image: &MetadataImage) -> bool {
    image.features.level(GROUP_VERSION_FEATURE) >= 1
}

/// One listener's view for the group handlers.
#[derive(Debug)]
pub struct GroupApis<'a> {
    pub context: &'a Arc<BrokerApisContext>,
    pub listener: &'a str,
}

impl GroupApis<'_> {
    fn coordinator(&self) -> &GroupCoordinatorService {
        &self.context.group_coordinator
    }

    /// Kafka's `isConsumerGroupProtocolEnabled`: `consumer` among this broker's
    /// `group.coordinator.rebalance.protocols`, and `group.version` >= 1 finalized.
    fn consumer_protocol_enabled(&self) -> bool {
        consumer_groups_enabled(&self.context.cache.image())
            && self
                .coordinator()
                .config()
                .rebalance_protocol_enabled("consumer")
    }

    /// Answers one of [`GROUP_API_KEYS`], authorized as `auth` ([`super::group_auth`]).
    pub async fn handle(
        &self,
        header: &RequestHeader,
        peer: SocketAddr,
        body: RequestBody,
        auth: &RequestAuth,
    ) -> ResponseBody {
        let ctx = request_context(header, peer);
        let version = header.request_api_version;
        let whole = |body: &RequestBody, code: ErrorCode| {
            error_response(body, code).expect("every group API has an error response")
        };
        // Kafka's `isConsumerGroupProtocolEnabled`, checked before authorization as Kafka does:
        // without it the consumer protocol's APIs answer UNSUPPORTED_VERSION.
        if matches!(
            body,
            RequestBody::ConsumerGroupHeartbeat(_) | RequestBody::ConsumerGroupDescribe(_)
        ) && !self.consumer_protocol_enabled()
        {
            return whole(&body, ErrorCode::UnsupportedVersion);
        }
        if let Some(refused) = group_auth::single_group_refusal(auth, &body) {
            return refused;
        }
        let mut body = body;
        let unreadable = match &mut body {
            RequestBody::OffsetDelete(r) => group_auth::take_unreadable_topics(auth, r),
            _ => Vec::new(),
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
                Ok(ShardResponse::OffsetDelete(mut r)) => {
                    r.topics.extend(unreadable);
                    ResponseBody::OffsetDelete(r)
                }
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
                ResponseBody::FindCoordinator(self.find_coordinator(version, r, auth).await)
            }
            RequestBody::OffsetCommit(r) => {
                ResponseBody::OffsetCommit(self.offset_commit(ctx, r, auth).await)
            }
            RequestBody::OffsetFetch(r) => {
                ResponseBody::OffsetFetch(self.offset_fetch(ctx, r, auth).await)
            }
            RequestBody::DescribeGroups(r) => {
                let (allowed, refused) =
                    group_auth::split_groups(auth, OPERATION_DESCRIBE, &r.groups);
                let mut groups: Vec<_> = refused
                    .into_iter()
                    .map(group_auth::describe_groups_refused)
                    .collect();
                for (ids, answer) in self
                    .per_partition(&ctx, allowed, ShardRequest::DescribeGroups)
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
                if version >= 3 && r.include_authorized_operations {
                    group_auth::fill_group_operations(
                        auth,
                        groups
                            .iter_mut()
                            .filter(|g| g.error_code == 0)
                            .map(|g| (g.group_id.as_str(), &mut g.authorized_operations)),
                    );
                }
                ResponseBody::DescribeGroups(DescribeGroupsResponse {
                    groups,
                    ..Default::default()
                })
            }
            RequestBody::DeleteGroups(r) => {
                let (allowed, refused) =
                    group_auth::split_groups(auth, OPERATION_DELETE, &r.groups_names);
                let mut results: Vec<_> = refused
                    .into_iter()
                    .map(|group_id| {
                        kraftd_protocol::messages::delete_groups_response::DeletableGroupResult {
                            group_id,
                            error_code: ErrorCode::GroupAuthorizationFailed.code(),
                            ..Default::default()
                        }
                    })
                    .collect();
                let allowed = self
                    .delete_share_group_state(&ctx, allowed, &mut results)
                    .await;
                for (ids, answer) in self
                    .per_partition(&ctx, allowed, ShardRequest::DeleteGroups)
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
                let mut groups = self
                    .describe_groups(
                        &ctx,
                        auth,
                        r.group_ids.clone(),
                        r.include_authorized_operations,
                        ShardRequest::ConsumerGroupDescribe,
                        |answer| match answer {
                            ShardResponse::ConsumerGroupDescribe(g) => Some(g),
                            _ => None,
                        },
                    )
                    .await;
                reorder(&mut groups, &r.group_ids, |g| &g.group_id);
                group_auth::hide_groups_with_hidden_topics(auth, &mut groups);
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
                group_auth::filter_listed_groups(auth, &mut response);
                ResponseBody::ListGroups(response)
            }
            other => whole(&other, ErrorCode::UnsupportedVersion),
        }
    }

    /// The describe path the KIP-848-style group types share (Kafka's
    /// `consumerGroupDescribe`, `shareGroupDescribe`, `streamsGroupDescribe` in `KafkaApis`):
    /// GROUP_AUTHORIZATION_FAILED for each group the principal may not DESCRIBE, one shard
    /// call per partition for the rest (each group of a failed call answered with its code,
    /// named in the message), then the authorized operations when asked. The refused
    /// groups come first, as Kafka lists them.
    pub(super) async fn describe_groups<G: DescribedGroupEntry>(
        &self,
        ctx: &RequestContext,
        auth: &RequestAuth,
        group_ids: Vec<String>,
        include_authorized_operations: bool,
        make: fn(Vec<String>) -> ShardRequest,
        take: fn(ShardResponse) -> Option<Vec<G>>,
    ) -> Vec<G> {
        let (allowed, refused) = group_auth::split_groups(auth, OPERATION_DESCRIBE, &group_ids);
        let mut groups: Vec<G> = refused
            .into_iter()
            .map(|g| G::error(g, ErrorCode::GroupAuthorizationFailed, None))
            .collect();
        for (ids, answer) in self.per_partition(ctx, allowed, make).await {
            match answer.map(take) {
                Ok(Some(g)) => groups.extend(g),
                other => {
                    let code = other.err().unwrap_or(ErrorCode::UnknownServerError);
                    groups.extend(
                        ids.into_iter()
                            .map(|id| G::error(id, code, Some(code.to_string()))),
                    );
                }
            }
        }
        if include_authorized_operations {
            group_auth::fill_group_operations(
                auth,
                groups
                    .iter_mut()
                    .filter_map(DescribedGroupEntry::operations_if_described),
            );
        }
        groups
    }

    /// Groups split by partition, one shard call per partition, the answers with the ids
    /// each covered.
    pub(super) async fn per_partition(
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
        // Every shard's request queued before any is awaited: all of them are sequenced
        // before the connection's next request is read.
        let calls: Vec<_> = by_partition
            .into_iter()
            .map(|(p, ids)| {
                let call = self
                    .coordinator()
                    .submit_partition(p, ctx.clone(), make(ids.clone()));
                (ids, call)
            })
            .collect();
        let mut out = Vec::with_capacity(calls.len());
        for (ids, call) in calls {
            out.push((ids, call.await));
        }
        out
    }

    /// DeleteGroups' first step (Kafka's `deleteShareGroups`): the share groups among `ids`
    /// have their state deleted in the share coordinator through the persister before the
    /// groups themselves go. A share group that is not empty, or whose state the persister
    /// could not delete, is answered here with the error; the ids left to delete are
    /// returned.
    async fn delete_share_group_state(
        &self,
        ctx: &RequestContext,
        ids: Vec<String>,
        results: &mut Vec<kraftd_protocol::messages::delete_groups_response::DeletableGroupResult>,
    ) -> Vec<String> {
        let mut refused: BTreeMap<String, ErrorCode> = BTreeMap::new();
        for (_, answer) in self
            .per_partition(ctx, ids.clone(), ShardRequest::ShareGroupsToDelete)
            .await
        {
            // A shard that cannot answer answers the DeleteGroups that follows the same way.
            let Ok(ShardResponse::ShareGroupsToDelete(found)) = answer else {
                continue;
            };
            for (group_id, deletion) in found {
                let request = match deletion {
                    Err(code) => {
                        refused.insert(group_id, code);
                        continue;
                    }
                    Ok(None) => continue,
                    Ok(Some(request)) => request,
                };
                let answer = self.context.share_persister.delete_state(request).await;
                let failed = answer
                    .results
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .find(|p| p.error_code != 0);
                if let Some(p) = failed {
                    refused.insert(
                        group_id,
                        ErrorCode::from_code(p.error_code).unwrap_or(ErrorCode::UnknownServerError),
                    );
                }
            }
        }
        for (group_id, code) in &refused {
            results.push(
                kraftd_protocol::messages::delete_groups_response::DeletableGroupResult {
                    group_id: group_id.clone(),
                    error_code: code.code(),
                    ..Default::default()
                },
            );
        }
        ids.into_iter()
            .filter(|id| !refused.contains_key(id))
            .collect()
    }

    /// FindCoordinator (v0–3 one key, v4+ a batch): the leader of the key's partition on
    /// this listener.
    async fn find_coordinator(
        &self,
        version: i16,
        r: FindCoordinatorRequest,
        auth: &RequestAuth,
    ) -> FindCoordinatorResponse {
        let keys: Vec<String> = if version >= FIND_COORDINATOR_BATCH_VERSION {
            r.coordinator_keys.clone()
        } else {
            vec![r.key.clone()]
        };
        let image = self.context.cache.image();
        let mut coordinators = Vec::with_capacity(keys.len());
        for key in keys {
            coordinators.push(
                self.coordinator_for(&image, version, r.key_type, key, auth)
                    .await,
            );
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

    /// A key's coordinator; DESCRIBE on the group (transactional id) first, as Kafka's
    /// `getCoordinator`; a share key (from v6, brokers' persisters) needs CLUSTER_ACTION and
    /// Kafka's `"<group>:<topic id>:<partition>"` form.
    async fn coordinator_for(
        &self,
        image: &MetadataImage,
        version: i16,
        key_type: i8,
        key: String,
        auth: &RequestAuth,
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
        let refusal = match key_type {
            KEY_TYPE_GROUP => (!auth.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_GROUP, &key))
                .then_some(ErrorCode::GroupAuthorizationFailed),
            KEY_TYPE_TRANSACTION => {
                (!auth.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_TRANSACTIONAL_ID, &key))
                    .then_some(ErrorCode::TransactionalIdAuthorizationFailed)
            }
            KEY_TYPE_SHARE if version < FIND_COORDINATOR_SHARE_VERSION => {
                Some(ErrorCode::InvalidRequest)
            }
            KEY_TYPE_SHARE => (!auth.authorize_cluster(OPERATION_CLUSTER_ACTION))
                .then_some(ErrorCode::ClusterAuthorizationFailed),
            _ => None,
        };
        if let Some(code) = refusal {
            return failed(key, code, Some(default_message(code)));
        }
        let (topic_name, partition) = match key_type {
            KEY_TYPE_GROUP => (
                GROUP_METADATA_TOPIC_NAME,
                self.coordinator().partition_for(&key),
            ),
            KEY_TYPE_TRANSACTION => (
                TRANSACTION_STATE_TOPIC_NAME,
                self.context.txn_coordinator.partition_for(&key),
            ),
            KEY_TYPE_SHARE => match SharePartitionKey::parse(&key) {
                Some(share) => (
                    SHARE_GROUP_STATE_TOPIC_NAME,
                    self.context.share_coordinator.partition_for_share(&share),
                ),
                None => {
                    return failed(
                        key,
                        ErrorCode::InvalidRequest,
                        Some("Share coordinator key is invalid".to_string()),
                    )
                }
            },
            _ => {
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
            match key_type {
                KEY_TYPE_GROUP => InternalTopics::create_offsets_topic(self.context, image),
                KEY_TYPE_SHARE => InternalTopics::create_share_state_topic(self.context, image),
                _ => InternalTopics::create_transaction_state_topic(self.context, image),
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

    /// OffsetCommit: topics must exist (by name, or by id in v10: UNKNOWN_TOPIC_ID); the
    /// rest goes to the group's shard.
    async fn offset_commit(
        &self,
        ctx: RequestContext,
        mut r: OffsetCommitRequest,
        auth: &RequestAuth,
    ) -> OffsetCommitResponse {
        let image = self.context.cache.image();
        let by_id = ctx.api_version >= TOPIC_ID_VERSION;
        let mut refused: Vec<OffsetCommitResponseTopic> = Vec::new();
        let mut kept = Vec::with_capacity(r.topics.len());
        let mut read = auth.memo(OPERATION_READ, RESOURCE_TYPE_TOPIC);
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
            // As Kafka: an unknown id first, then READ on the topic (named: whether it
            // exists or not), then existence.
            let checked = if by_id {
                found.clone()
            } else {
                Some(t.name.clone())
            };
            let unreadable = checked.is_some_and(|name| !read.allowed(&name));
            match found {
                Some(name) if !unreadable => {
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
                found => {
                    let code = if unreadable {
                        ErrorCode::TopicAuthorizationFailed
                    } else if by_id && found.is_none() {
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
        auth: &RequestAuth,
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
            if !auth.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_GROUP, &group_id) {
                answers.push(group_auth::offset_fetch_group_refused(&g, version));
                continue;
            }
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
            let all_topics = g.topics.is_none();
            let undescribable = match g.topics.as_mut() {
                Some(topics) => group_auth::take_undescribable_topics(auth, topics),
                None => Vec::new(),
            };
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
            if all_topics && answer.error_code == 0 {
                group_auth::retain_describable(auth, &mut answer.topics);
            }
            if answer.error_code == 0 {
                answer.topics.extend(undescribable);
            }
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

/// One group of a ConsumerGroupDescribe, ShareGroupDescribe or StreamsGroupDescribe answer,
/// as [`GroupApis::describe_groups`] handles it: the three generated types share these
/// fields.
pub(super) trait DescribedGroupEntry: Sized {
    /// An entry for `group_id` answered with `code` (authorized operations left unset).
    fn error(group_id: String, code: ErrorCode, message: Option<String>) -> Self;
    /// The group id and its authorized operations, for a group described without error.
    fn operations_if_described(&mut self) -> Option<(&str, &mut i32)>;
}

macro_rules! described_group_entry {
    ($($t:ty),*) => {$(
        impl DescribedGroupEntry for $t {
            fn error(group_id: String, code: ErrorCode, message: Option<String>) -> Self {
                Self {
                    group_id,
                    error_code: code.code(),
                    error_message: message,
                    ..Default::default()
                }
            }

            fn operations_if_described(&mut self) -> Option<(&str, &mut i32)> {
                (self.error_code == 0)
                    .then_some((self.group_id.as_str(), &mut self.authorized_operations))
            }
        }
    )*};
}

described_group_entry!(
    kraftd_protocol::messages::consumer_group_describe_response::DescribedGroup,
    kraftd_protocol::messages::share_group_describe_response::DescribedGroup,
    kraftd_protocol::messages::streams_group_describe_response::DescribedGroup
);
