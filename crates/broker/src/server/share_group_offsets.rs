//! The share-group offsets admin APIs of `KafkaApis` (Kafka's
//! `handleDescribeShareGroupOffsetsRequest`, `handleAlterShareGroupOffsetsRequest` and
//! `handleDeleteShareGroupOffsetsRequest`, with `GroupCoordinatorService`'s
//! `describeShareGroupOffsets` / `describeShareGroupAllOffsets` / `alterShareGroupOffsets`
//! / `deleteShareGroupOffsets`): authorized as Kafka authorizes them, the share state read
//! or deleted through the [`Persister`](crate::share::Persister), and what the group shard
//! decides and records (which partitions are initialized, the deleting list) asked of it
//! through the [`GroupCoordinatorService`](crate::coordinator::GroupCoordinatorService).
//! An alter marks the partitions initializing, initializes their state at the new start
//! offsets (InitializeShareGroupState), then marks them initialized without waiting.
//!
//! DescribeShareGroupOffsets v1's lag is Kafka's: the partition's end offset (ListOffsets
//! latest, the high watermark) less the start offset less the delivered records
//! (`delivery_complete_count`), computed only for a partition whose summary has both. The
//! end offset is this broker's replica's when it leads the partition, else the leader's
//! answer to ListOffsets (latest), as Kafka's `PartitionMetadataClient` asks it.

use std::collections::BTreeMap;

use kraftd_controller::auth::{default_message, RequestAuth};
use kraftd_controller::control::acl::{OPERATION_READ, RESOURCE_TYPE_GROUP, RESOURCE_TYPE_TOPIC};
use kraftd_controller::publisher::{OPERATION_DELETE, OPERATION_DESCRIBE};
use kraftd_coordinator::context::RequestContext;
use kraftd_coordinator::group::consumer::Partitions;
use kraftd_coordinator::group::share::{ShareOffsetsAlter, ShareOffsetsDeletion};
use kraftd_coordinator::group::{ShardRequest, ShardResponse};
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use kraftd_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kraftd_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup;
use kraftd_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use kraftd_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kraftd_protocol::messages::ListOffsetsRequest;
use kraftd_protocol::messages::{
    read_share_group_state_summary_request, AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse, DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse, ReadShareGroupStateSummaryRequest,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, Uuid};

use super::share_group_apis::ShareGroupApis;
use crate::replica::TopicIdPartition;

/// A share partition's start offset before it is initialized (Kafka's
/// `PartitionFactory.UNINITIALIZED_START_OFFSET`); also its delivered count's.
const UNINITIALIZED: i64 = -1;

/// ListOffsets' "latest" timestamp.
const LATEST_TIMESTAMP: i64 = -1;

impl ShareGroupApis<'_> {
    /// DescribeShareGroupOffsets: each group answered on its own.
    pub(super) async fn describe_offsets(
        &self,
        enabled: bool,
        ctx: RequestContext,
        r: DescribeShareGroupOffsetsRequest,
        auth: &RequestAuth,
    ) -> DescribeShareGroupOffsetsResponse {
        let mut groups = Vec::with_capacity(r.groups.len());
        for g in r.groups {
            let failed = |code: ErrorCode| DescribeShareGroupOffsetsResponseGroup {
                group_id: g.group_id.clone(),
                error_code: code.code(),
                ..Default::default()
            };
            let answer = if !enabled {
                failed(ErrorCode::UnsupportedVersion)
            } else if !auth.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_GROUP, &g.group_id) {
                failed(ErrorCode::GroupAuthorizationFailed)
            } else {
                match &g.topics {
                    None => self.describe_all_offsets(&ctx, &g, auth).await,
                    Some(t) if t.is_empty() => DescribeShareGroupOffsetsResponseGroup {
                        group_id: g.group_id.clone(),
                        ..Default::default()
                    },
                    Some(_) => self.describe_group_offsets(g.clone(), auth).await,
                }
            };
            groups.push(answer);
        }
        DescribeShareGroupOffsetsResponse {
            groups,
            ..Default::default()
        }
    }

    /// All the group's initialized share partitions (Kafka's
    /// `describeShareGroupAllOffsets`), less the topics the principal may not DESCRIBE.
    async fn describe_all_offsets(
        &self,
        ctx: &RequestContext,
        g: &DescribeShareGroupOffsetsRequestGroup,
        auth: &RequestAuth,
    ) -> DescribeShareGroupOffsetsResponseGroup {
        let answer = self
            .context
            .group_coordinator
            .call(
                &g.group_id,
                ctx.clone(),
                ShardRequest::ShareGroupInitializedPartitions(g.group_id.clone()),
            )
            .await;
        let partitions = match answer {
            Ok(ShardResponse::ShareGroupInitializedPartitions(p)) => p,
            other => {
                let code = other.err().unwrap_or(ErrorCode::UnknownServerError);
                return DescribeShareGroupOffsetsResponseGroup {
                    group_id: g.group_id.clone(),
                    error_code: code.code(),
                    error_message: Some(default_message(code)),
                    ..Default::default()
                };
            }
        };
        let image = self.context.cache.image();
        let mut names = BTreeMap::new();
        let mut read = Vec::new();
        for (id, ps) in partitions {
            // A deleted topic is left out.
            let Some(topic) = image.topics.get(&id) else {
                continue;
            };
            names.insert(id, topic.name.clone());
            read.push(summary_topic(id, ps.into_iter()));
        }
        let mut group = self
            .read_summaries(&g.group_id, read, &names, Vec::new())
            .await;
        let mut describe = auth.memo(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC);
        group.topics.retain(|t| describe.allowed(&t.topic_name));
        group
    }

    /// The named topics' share partitions (Kafka's `describeShareGroupOffsetsForGroup`):
    /// a topic the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED on
    /// each partition, one that does not exist with start offset -1.
    async fn describe_group_offsets(
        &self,
        g: DescribeShareGroupOffsetsRequestGroup,
        auth: &RequestAuth,
    ) -> DescribeShareGroupOffsetsResponseGroup {
        let mut describe = auth.memo(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC);
        let (allowed, refused): (Vec<_>, Vec<_>) = g
            .topics
            .unwrap_or_default()
            .into_iter()
            .partition(|t| describe.allowed(&t.topic_name));
        let image = self.context.cache.image();
        let mut names = BTreeMap::new();
        let mut read = Vec::new();
        let mut missing = Vec::new();
        for t in allowed {
            match image.topics.get_by_name(&t.topic_name) {
                Some(topic) => {
                    names.insert(topic.id, t.topic_name.clone());
                    read.push(summary_topic(topic.id, t.partitions.iter().copied()));
                }
                // Absent data rather than an error, as OffsetFetch answers it.
                None => missing.push(DescribeShareGroupOffsetsResponseTopic {
                    topic_name: t.topic_name.clone(),
                    topic_id: Uuid::default(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| DescribeShareGroupOffsetsResponsePartition {
                            partition_index: *p,
                            start_offset: UNINITIALIZED,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }),
            }
        }
        let mut group = self
            .read_summaries(&g.group_id, read, &names, missing)
            .await;
        if group.error_code != 0 {
            return group;
        }
        let code = ErrorCode::TopicAuthorizationFailed;
        group.topics.extend(refused.into_iter().map(|t| {
            DescribeShareGroupOffsetsResponseTopic {
                topic_name: t.topic_name,
                topic_id: Uuid::default(),
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| DescribeShareGroupOffsetsResponsePartition {
                        partition_index: p,
                        start_offset: UNINITIALIZED,
                        lag: UNINITIALIZED,
                        error_code: code.code(),
                        error_message: Some(default_message(code)),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }
        }));
        group
    }

    /// The end offset (ListOffsets latest: the high watermark) of `tp`: this broker's
    /// replica's when it leads the partition, else its leader's answer to ListOffsets over
    /// the inter-broker listener (Kafka's `PartitionMetadataClient.listLatestOffsets`).
    async fn end_offset(&self, tp: &TopicIdPartition) -> Result<i64, ErrorCode> {
        let replicas = &self.context.data.replica_manager;
        match replicas.list_offset(tp, -1, LATEST_TIMESTAMP, -1) {
            Err(ErrorCode::NotLeaderOrFollower) => {}
            local => return local.map(|(end, _, _)| end),
        }
        let image = self.context.cache.image();
        let leader = image
            .topics
            .partition(&tp.topic_id, tp.partition)
            .map(|p| p.leader)
            .ok_or(ErrorCode::UnknownTopicOrPartition)?;
        let channels = &self.context.leader_channels;
        let address = channels
            .address(&image, leader)
            .ok_or(ErrorCode::LeaderNotAvailable)?;
        let channel = channels.channel(&address);
        let request = ListOffsetsRequest {
            replica_id: -1,
            isolation_level: 0,
            topics: vec![ListOffsetsTopic {
                name: tp.topic.clone(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: tp.partition,
                    current_leader_epoch: -1,
                    timestamp: LATEST_TIMESTAMP,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let version = supported_range(ApiKey::ListOffsets).max;
        let answer = channel
            .call(
                channel.next_correlation_id(),
                version,
                RequestBody::ListOffsets(request),
            )
            .await;
        let Ok(ResponseBody::ListOffsets(r)) = answer else {
            return Err(ErrorCode::LeaderNotAvailable);
        };
        let p = r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .find(|p| p.partition_index == tp.partition)
            .ok_or(ErrorCode::UnknownServerError)?;
        if p.error_code == 0 {
            Ok(p.offset)
        } else {
            Err(ErrorCode::from_code(p.error_code).unwrap_or(ErrorCode::UnknownServerError))
        }
    }

    /// ReadShareGroupStateSummary through the persister and the lag of each partition
    /// (Kafka's `readShareGroupStateSummary` and `computeShareGroupLagAndBuildResponse`);
    /// `missing` (topics answered already) come last.
    async fn read_summaries(
        &self,
        group_id: &str,
        topics: Vec<read_share_group_state_summary_request::ReadStateSummaryData>,
        names: &BTreeMap<Uuid, String>,
        missing: Vec<DescribeShareGroupOffsetsResponseTopic>,
    ) -> DescribeShareGroupOffsetsResponseGroup {
        let mut group = DescribeShareGroupOffsetsResponseGroup {
            group_id: group_id.to_string(),
            ..Default::default()
        };
        if topics.is_empty() {
            group.topics = missing;
            return group;
        }
        let summary = self
            .context
            .share_persister
            .read_summary(ReadShareGroupStateSummaryRequest {
                group_id: group_id.to_string(),
                topics,
                ..Default::default()
            })
            .await;
        for t in summary.results {
            let name = names.get(&t.topic_id).cloned().unwrap_or_default();
            let mut partitions = Vec::with_capacity(t.partitions.len());
            for p in t.partitions {
                let lag_known = p.error_code == 0
                    && p.start_offset != UNINITIALIZED
                    && i64::from(p.delivery_complete_count) != UNINITIALIZED;
                if !lag_known {
                    let ok = p.error_code == 0;
                    partitions.push(DescribeShareGroupOffsetsResponsePartition {
                        partition_index: p.partition,
                        start_offset: if ok { p.start_offset } else { UNINITIALIZED },
                        leader_epoch: if ok { p.leader_epoch } else { 0 },
                        lag: UNINITIALIZED,
                        ..Default::default()
                    });
                    continue;
                }
                let tp = TopicIdPartition {
                    topic_id: t.topic_id,
                    topic: name.clone(),
                    partition: p.partition,
                };
                partitions.push(match self.end_offset(&tp).await {
                    Ok(end) => DescribeShareGroupOffsetsResponsePartition {
                        partition_index: p.partition,
                        start_offset: p.start_offset,
                        leader_epoch: p.leader_epoch,
                        lag: end - p.start_offset - i64::from(p.delivery_complete_count),
                        ..Default::default()
                    },
                    Err(code) => DescribeShareGroupOffsetsResponsePartition {
                        partition_index: p.partition,
                        error_code: code.code(),
                        error_message: Some(default_message(code)),
                        ..Default::default()
                    },
                });
            }
            group.topics.push(DescribeShareGroupOffsetsResponseTopic {
                topic_name: name,
                topic_id: t.topic_id,
                partitions,
                ..Default::default()
            });
        }
        group.topics.extend(missing);
        group
    }

    /// AlterShareGroupOffsets (Kafka's `handleAlterShareGroupOffsetsRequest` and
    /// `alterShareGroupOffsets`): READ on the group and on each topic; the group must be an
    /// empty share group (or none yet); the accepted partitions' state is initialized at
    /// their new start offsets through the persister.
    pub(super) async fn alter_offsets(
        &self,
        enabled: bool,
        ctx: RequestContext,
        r: AlterShareGroupOffsetsRequest,
        auth: &RequestAuth,
    ) -> AlterShareGroupOffsetsResponse {
        let refuse = |code: ErrorCode, message: Option<String>| AlterShareGroupOffsetsResponse {
            error_code: code.code(),
            error_message: Some(message.unwrap_or_else(|| default_message(code))),
            ..Default::default()
        };
        if !enabled {
            return refuse(ErrorCode::UnsupportedVersion, None);
        }
        if !auth.authorize(OPERATION_READ, RESOURCE_TYPE_GROUP, &r.group_id) {
            return refuse(ErrorCode::GroupAuthorizationFailed, None);
        }
        let image = self.context.cache.image();
        let topic_id = |name: &str| {
            image
                .topics
                .get_by_name(name)
                .map(|t| t.id)
                .unwrap_or_default()
        };
        let mut responses: Vec<AlterShareGroupOffsetsResponseTopic> = Vec::new();
        // Kafka's `AlterShareGroupOffsetsResponse.Builder`: one entry per topic name.
        fn entry<'a>(
            responses: &'a mut Vec<AlterShareGroupOffsetsResponseTopic>,
            name: &str,
            id: Uuid,
        ) -> &'a mut AlterShareGroupOffsetsResponseTopic {
            match responses.iter().position(|t| t.topic_name == name) {
                Some(i) => &mut responses[i],
                None => {
                    responses.push(AlterShareGroupOffsetsResponseTopic {
                        topic_name: name.to_string(),
                        topic_id: id,
                        ..Default::default()
                    });
                    responses.last_mut().expect("just pushed")
                }
            }
        }
        let mut topics = Vec::new();
        for t in r.topics {
            let code = if !auth.authorize(OPERATION_READ, RESOURCE_TYPE_TOPIC, &t.topic_name) {
                ErrorCode::TopicAuthorizationFailed
            } else if image.topics.get_by_name(&t.topic_name).is_none() {
                ErrorCode::UnknownTopicOrPartition
            } else {
                topics.push(t);
                continue;
            };
            let e = entry(&mut responses, &t.topic_name, topic_id(&t.topic_name));
            e.partitions.extend(t.partitions.iter().map(|p| {
                AlterShareGroupOffsetsResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code.code(),
                    error_message: Some(default_message(code)),
                    ..Default::default()
                }
            }));
        }
        if r.group_id.is_empty() {
            return refuse(ErrorCode::InvalidGroupId, None);
        }
        let coordinator = &self.context.group_coordinator;
        let answer = coordinator
            .call(
                &r.group_id,
                ctx,
                ShardRequest::AlterShareGroupOffsets {
                    group_id: r.group_id.clone(),
                    topics,
                },
            )
            .await;
        let (mut altered, request) = match answer {
            Ok(ShardResponse::AlterShareGroupOffsets(ShareOffsetsAlter::Accepted {
                topics,
                request,
            })) => (topics, request),
            Ok(ShardResponse::AlterShareGroupOffsets(ShareOffsetsAlter::Refused(
                code,
                message,
            ))) => return refuse(code, Some(message)),
            Ok(_) => return refuse(ErrorCode::UnknownServerError, None),
            Err(code) => return refuse(code, None),
        };
        if let Some(request) = request {
            let answer = self
                .context
                .share_persister
                .initialize_state(request.clone())
                .await;
            let mut errors: BTreeMap<(Uuid, i32), i16> = BTreeMap::new();
            for t in &answer.results {
                for p in &t.partitions {
                    if p.error_code != 0 {
                        errors.insert((t.topic_id, p.partition), p.error_code);
                    }
                }
            }
            if errors.is_empty() {
                let mut initialized = Partitions::new();
                for t in &request.topics {
                    initialized
                        .entry(t.topic_id)
                        .or_default()
                        .extend(t.partitions.iter().map(|p| p.partition));
                }
                coordinator.share_offsets_altered(r.group_id.clone(), initialized);
            } else {
                // Kafka's `buildErrorResponse`: each failed partition with its error; the
                // group stays initializing, to be retried by a heartbeat.
                for t in &mut altered {
                    for p in &mut t.partitions {
                        if p.error_code != 0 {
                            continue;
                        }
                        if let Some(code) = errors.get(&(t.topic_id, p.partition_index)) {
                            let e = ErrorCode::from_code(*code)
                                .unwrap_or(ErrorCode::UnknownServerError);
                            p.error_code = *code;
                            p.error_message = Some(default_message(e));
                        }
                    }
                }
            }
        }
        for t in altered {
            let e = entry(&mut responses, &t.topic_name, topic_id(&t.topic_name));
            e.partitions.extend(t.partitions);
        }
        AlterShareGroupOffsetsResponse {
            responses,
            ..Default::default()
        }
    }

    /// DeleteShareGroupOffsets (Kafka's `handleDeleteShareGroupOffsetsRequest` and
    /// `deleteShareGroupOffsets`): DELETE on the group, READ on each topic; the group must
    /// be an empty share group; the initialized topics' state is deleted through the
    /// persister between the shard's two steps.
    pub(super) async fn delete_offsets(
        &self,
        enabled: bool,
        ctx: RequestContext,
        r: DeleteShareGroupOffsetsRequest,
        auth: &RequestAuth,
    ) -> DeleteShareGroupOffsetsResponse {
        let refuse = |code: ErrorCode, message: Option<String>| DeleteShareGroupOffsetsResponse {
            error_code: code.code(),
            error_message: Some(message.unwrap_or_else(|| default_message(code))),
            ..Default::default()
        };
        if !enabled {
            return refuse(ErrorCode::UnsupportedVersion, None);
        }
        if !auth.authorize(OPERATION_DELETE, RESOURCE_TYPE_GROUP, &r.group_id) {
            return refuse(ErrorCode::GroupAuthorizationFailed, None);
        }
        let mut responses = Vec::new();
        let mut topics = Vec::new();
        let mut read = auth.memo(OPERATION_READ, RESOURCE_TYPE_TOPIC);
        for t in r.topics {
            if read.allowed(&t.topic_name) {
                topics.push(t.topic_name);
            } else {
                let code = ErrorCode::TopicAuthorizationFailed;
                responses.push(DeleteShareGroupOffsetsResponseTopic {
                    topic_name: t.topic_name,
                    error_code: code.code(),
                    error_message: Some(default_message(code)),
                    ..Default::default()
                });
            }
        }
        if r.group_id.is_empty() {
            return refuse(ErrorCode::InvalidGroupId, None);
        }
        let coordinator = &self.context.group_coordinator;
        let first = coordinator
            .call(
                &r.group_id,
                ctx.clone(),
                ShardRequest::InitiateDeleteShareGroupOffsets {
                    group_id: r.group_id.clone(),
                    topics,
                },
            )
            .await;
        let (mut error_topics, request) = match first {
            Ok(ShardResponse::InitiateDeleteShareGroupOffsets(
                ShareOffsetsDeletion::Eligible {
                    error_topics,
                    request,
                },
            )) => (error_topics, request),
            Ok(ShardResponse::InitiateDeleteShareGroupOffsets(ShareOffsetsDeletion::Refused(
                code,
                message,
            ))) => return refuse(code, Some(message)),
            Ok(_) => return refuse(ErrorCode::UnknownServerError, None),
            Err(code) => return refuse(code, Some(default_message(code))),
        };
        let Some(request) = request else {
            responses.extend(error_topics);
            return DeleteShareGroupOffsetsResponse {
                responses,
                ..Default::default()
            };
        };
        let answer = self.context.share_persister.delete_state(request).await;
        let image = self.context.cache.image();
        let mut deleted = Vec::new();
        for t in answer.results {
            let name = image
                .topics
                .get(&t.topic_id)
                .map(|topic| topic.name.clone())
                .unwrap_or_default();
            match t.partitions.iter().find(|p| p.error_code != 0) {
                Some(p) => {
                    let code =
                        ErrorCode::from_code(p.error_code).unwrap_or(ErrorCode::UnknownServerError);
                    error_topics.push(DeleteShareGroupOffsetsResponseTopic {
                        topic_name: name,
                        topic_id: t.topic_id,
                        error_code: p.error_code,
                        error_message: Some(default_message(code)),
                        ..Default::default()
                    });
                }
                None => deleted.push((t.topic_id, name)),
            }
        }
        if !deleted.is_empty() {
            let last = coordinator
                .call(
                    &r.group_id,
                    ctx,
                    ShardRequest::CompleteDeleteShareGroupOffsets {
                        group_id: r.group_id.clone(),
                        deleted,
                    },
                )
                .await;
            match last {
                Ok(ShardResponse::CompleteDeleteShareGroupOffsets(done)) => responses.extend(done),
                Ok(_) => return refuse(ErrorCode::UnknownServerError, None),
                Err(code) => return refuse(code, Some(default_message(code))),
            }
        }
        responses.extend(error_topics);
        DeleteShareGroupOffsetsResponse {
            responses,
            ..Default::default()
        }
    }
}

/// One topic of a ReadShareGroupStateSummary request.
fn summary_topic(
    topic_id: Uuid,
    partitions: impl Iterator<Item = i32>,
) -> read_share_group_state_summary_request::ReadStateSummaryData {
    read_share_group_state_summary_request::ReadStateSummaryData {
        topic_id,
        partitions: partitions
            .map(
                |partition| read_share_group_state_summary_request::PartitionData {
                    partition,
                    ..Default::default()
                },
            )
            .collect(),
        ..Default::default()
    }
}
