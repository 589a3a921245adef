//! The data-plane requests of `KafkaApis` (Kafka's `handleProduceRequest`,
//! `handleFetchRequest`, `handleListOffsetRequest`, `handleOffsetForLeaderEpochRequest`,
//! `handleInitProducerIdRequest`): names and ids resolved against the metadata image, the
//! work done by the [`ReplicaManager`], the answers shaped per version. One bad partition
//! gets its own error; the rest of the request goes on. Each handler authorizes per topic as
//! Kafka's does (READ to fetch, DESCRIBE to list offsets, DELETE to delete records; a
//! follower's fetch needs CLUSTER_ACTION): a refused topic's partitions get
//! TOPIC_AUTHORIZATION_FAILED and are not read.

use kraftd_log::clock::unix_ms;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kraftd_controller::auth::RequestAuth;
use kraftd_controller::control::acl::{OPERATION_READ, RESOURCE_TYPE_TOPIC};
use kraftd_controller::publisher::{
    OPERATION_CLUSTER_ACTION, OPERATION_DELETE, OPERATION_DESCRIBE,
};
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kraftd_protocol::messages::fetch_response::{
    AbortedTransaction, EpochEndOffset as FetchEpochEndOffset, LeaderIdAndEpoch as FetchLeader,
    PartitionData,
};
use kraftd_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kraftd_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kraftd_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, PartitionProduceResponse, TopicProduceResponse,
};
use kraftd_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use kraftd_protocol::messages::{
    FetchRequest, FetchResponse, InitProducerIdRequest, InitProducerIdResponse, ListOffsetsRequest,
    ListOffsetsResponse, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, ProduceRequest,
    ProduceResponse,
};
use kraftd_protocol::{ErrorCode, Uuid};
use tokio::time::Instant;

use crate::replica::fetch_session::{FetchManager, PartitionFetchParams, TopicRef};
use crate::replica::replica_manager::{
    FetchLimits, FetchOrigin, FetchResult, PendingProduce, ProduceResult, ReplicaManager,
};
use crate::replica::TopicIdPartition;
use crate::server::producer_id_manager::ProducerIdManager;
use crate::server::quota::ConsumerFetchQuota;
use kraftd_controller::quota::throttle_ms_i32;

/// Produce v13 and Fetch v13 name topics by id, earlier versions by name.
const PRODUCE_TOPIC_ID_VERSION: i16 = 13;

/// What the data-plane handlers share.
#[derive(Debug)]
pub struct DataPlane {
    pub replica_manager: Arc<ReplicaManager>,
    pub fetch_manager: FetchManager,
    pub producer_ids: ProducerIdManager,
}

/// A topic named by a request, resolved: (id, name), or the error for its partitions.
fn resolve_topic(
    image: &MetadataImage,
    name: &str,
    id: Uuid,
    by_id: bool,
) -> Result<(Uuid, String), ErrorCode> {
    if by_id {
        image
            .topics
            .get(&id)
            .map(|t| (t.id, t.name.clone()))
            .ok_or(ErrorCode::UnknownTopicId)
    } else {
        image
            .topics
            .get_by_name(name)
            .map(|t| (t.id, t.name.clone()))
            .ok_or(ErrorCode::UnknownTopicOrPartition)
    }
}

/// A partition a request names by topic name (ListOffsets, OffsetForLeaderEpoch,
/// DeleteRecords), resolved against the image.
fn partition_by_name(
    image: &MetadataImage,
    topic: &str,
    partition: i32,
) -> Result<TopicIdPartition, ErrorCode> {
    let (topic_id, topic) = resolve_topic(image, topic, Uuid::ZERO, false)?;
    Ok(TopicIdPartition {
        topic_id,
        topic,
        partition,
    })
}

impl DataPlane {
    /// The append half of Produce, done before the connection's next request is taken (so
    /// a client's batches land in the order it sent them); [`ProduceInProgress::respond`]
    /// waits for `acks=all` and shapes the answer.
    pub fn produce_append(
        &self,
        image: Arc<MetadataImage>,
        version: i16,
        request: ProduceRequest,
    ) -> ProduceInProgress {
        self.produce_append_verified(image, version, request, &HashMap::new())
    }

    /// [`DataPlane::produce_append`] with the partitions a transaction's verification
    /// refused (named as the request names them: topic name, topic id, index) answered
    /// with their error and not appended.
    pub fn produce_append_verified(
        &self,
        image: Arc<MetadataImage>,
        version: i16,
        request: ProduceRequest,
        refused: &HashMap<(String, Uuid, i32), ErrorCode>,
    ) -> ProduceInProgress {
        let acks = request.acks;
        let by_id = version >= PRODUCE_TOPIC_ID_VERSION;
        let mut entries = Vec::new();
        // (topic name, id, partition, Some(error) when refused before the append).
        let mut order: Vec<(String, Uuid, i32, Option<ErrorCode>)> = Vec::new();
        let refuse_all = if !matches!(acks, -1..=1) {
            Some(ErrorCode::InvalidRequiredAcks)
        } else if request.transactional_id.is_some() && acks != -1 {
            // Kafka: a transactional produce must be acknowledged by the ISR.
            Some(ErrorCode::InvalidRequiredAcks)
        } else {
            None
        };
        for topic in request.topic_data {
            let resolved = resolve_topic(&image, &topic.name, topic.topic_id, by_id);
            for partition in topic.partition_data {
                let (name, id) = match &resolved {
                    Ok((id, name)) => (name.clone(), *id),
                    Err(_) => (topic.name.clone(), topic.topic_id),
                };
                let verified = refused
                    .get(&(topic.name.clone(), topic.topic_id, partition.index))
                    .copied();
                let error = refuse_all
                    .or(verified)
                    .or(resolved.as_ref().err().copied())
                    .or_else(|| {
                        image
                            .topics
                            .partition(&id, partition.index)
                            .is_none()
                            .then_some(ErrorCode::UnknownTopicOrPartition)
                    });
                if error.is_none() {
                    entries.push((
                        TopicIdPartition {
                            topic_id: id,
                            topic: name.clone(),
                            partition: partition.index,
                        },
                        partition.records.unwrap_or_else(Bytes::new),
                    ));
                }
                order.push((name, id, partition.index, error));
            }
        }
        let timeout = Duration::from_millis(request.timeout_ms.max(0) as u64);
        let pending = self
            .replica_manager
            .append_records_now(acks, timeout, entries);
        ProduceInProgress {
            image,
            version,
            acks,
            order,
            pending,
        }
    }

    /// Fetch, from consumers (sessions per KIP-227) and from follower replicas. A consumer
    /// under a `consumer_byte_rate` quota reads at most what its quota window allows, and a
    /// response that takes it over the quota is answered empty with the throttle time
    /// instead (Kafka's `handleFetchRequest`); followers are not charged (replication
    /// quotas are another matter).
    pub async fn fetch(
        &self,
        image: &MetadataImage,
        version: i16,
        request: FetchRequest,
        auth: &RequestAuth,
        quota: Option<&mut (dyn ConsumerFetchQuota + Send)>,
    ) -> FetchResponse {
        let replica_id = if version >= 15 {
            request.replica_state.replica_id
        } else {
            request.replica_id
        };
        let origin = if replica_id >= 0 {
            FetchOrigin::Follower {
                replica_id,
                broker_epoch: request.replica_state.replica_epoch,
            }
        } else if version >= 4 && request.isolation_level == 1 {
            FetchOrigin::ConsumerReadCommitted
        } else {
            FetchOrigin::Consumer
        };
        let resolve = |r: TopicRef| match r {
            TopicRef::Id(id) => image.topics.get(&id).map(|t| (t.id, t.name.clone())),
            TopicRef::Name(name) => image
                .topics
                .get_by_name(name)
                .map(|t| (t.id, t.name.clone())),
        };
        let context =
            self.fetch_manager
                .new_context(version, &request, replica_id >= 0, &resolve, unix_ms());
        if let Some(error) = context.error() {
            return FetchResponse {
                error_code: error.code(),
                session_id: 0,
                ..Default::default()
            };
        }
        let wanted = context.partitions();
        // Kafka's checks, on every partition of the session, not only those the request
        // names: a follower needs CLUSTER_ACTION, a consumer READ on each topic (a topic id
        // this broker does not know has no name and is the replica manager's
        // UNKNOWN_TOPIC_ID).
        let refused: Vec<bool> = if replica_id >= 0 {
            let allowed = auth.authorize_cluster(OPERATION_CLUSTER_ACTION);
            vec![!allowed; wanted.len()]
        } else {
            let mut read = auth.memo(OPERATION_READ, RESOURCE_TYPE_TOPIC);
            wanted
                .iter()
                .map(|(tp, _)| !tp.topic.is_empty() && !read.allowed(&tp.topic))
                .collect()
        };
        let quota = quota.filter(|_| replica_id < 0);
        let max_bytes = if version >= 3 {
            request.max_bytes.max(0) as usize
        } else {
            usize::MAX
        }
        .min(quota.as_ref().map_or(usize::MAX, |q| q.max_bytes()));
        let limits = FetchLimits {
            max_wait: Duration::from_millis(request.max_wait_ms.max(0) as u64),
            min_bytes: (request.min_bytes.max(0) as usize).min(max_bytes),
            max_bytes,
        };
        // Sessions of requests that name topics (v12 and older) key partitions by name
        // with a zero id; the replica manager keys them by id.
        let by_id: Vec<(TopicIdPartition, _)> = wanted
            .iter()
            .zip(&refused)
            .filter(|(_, refused)| !**refused)
            .map(|((tp, params), _)| {
                let mut tp = tp.clone();
                if tp.topic_id == Uuid::ZERO {
                    if let Some(t) = image.topics.get_by_name(&tp.topic) {
                        tp.topic_id = t.id;
                    }
                }
                (tp, params.clone())
            })
            .collect();
        // All refused: answered at once, as Kafka answers a fetch with nothing to read.
        let results = if by_id.is_empty() && !wanted.is_empty() {
            Vec::new()
        } else {
            // In a session, a wait also wakes for the session's other partitions that get
            // data (an incremental request reads only those with news); they join this
            // request, authorized as the others.
            let watch = context.watch();
            let follower_allowed = replica_id >= 0 && !refused.first().copied().unwrap_or(false);
            let mut read = auth.memo(OPERATION_READ, RESOURCE_TYPE_TOPIC);
            let mut news = || {
                let mut more = context.take_news(&resolve);
                more.retain(|(tp, _)| {
                    if replica_id >= 0 {
                        follower_allowed
                    } else {
                        read.allowed(&tp.topic)
                    }
                });
                for (tp, _) in &mut more {
                    if tp.topic_id == Uuid::ZERO {
                        if let Some(t) = image.topics.get_by_name(&tp.topic) {
                            tp.topic_id = t.id;
                        }
                    }
                }
                more
            };
            let session = watch.as_ref().map(|w| {
                (
                    w,
                    &mut news
                        as &mut (dyn FnMut() -> Vec<(TopicIdPartition, PartitionFetchParams)>
                                  + Send),
                )
            });
            self.replica_manager
                .fetch_messages_in_session(origin, limits, by_id, session)
                .await
        };
        let mut results = results.into_iter();
        let data: Vec<(TopicIdPartition, PartitionData)> = wanted
            .into_iter()
            .zip(refused)
            .map(|((tp, _), refused)| {
                let r = if refused {
                    FetchResult::error(ErrorCode::TopicAuthorizationFailed)
                } else {
                    results
                        .next()
                        .map(|(_, r)| r)
                        .unwrap_or_else(|| FetchResult::error(ErrorCode::UnknownServerError))
                };
                let data = partition_data(version, tp.partition, r);
                (tp, data)
            })
            .collect();
        // Partitions that joined while the fetch waited.
        let mut data = data;
        for (tp, r) in results {
            let data_of = partition_data(version, tp.partition, r);
            data.push((tp, data_of));
        }
        if let Some(quota) = quota {
            let throttle_ms = quota.record(context.response_size(version, &data));
            if throttle_ms > 0 {
                // What was read is dropped (a throttled fetch answers empty, as Kafka's);
                // an incremental request reads only partitions with news, so the dropped
                // ones are marked to be read again, or the session would starve them.
                if let Some(watch) = context.watch() {
                    for (tp, _) in &data {
                        let mut tp = tp.clone();
                        if tp.topic_id == Uuid::ZERO {
                            match image.topics.get_by_name(&tp.topic) {
                                Some(t) => tp.topic_id = t.id,
                                None => continue,
                            }
                        }
                        watch.mark_quiet(&tp);
                    }
                }
                let (session_id, error) = context.throttled_response();
                return FetchResponse {
                    error_code: error.map_or(0, |e| e.code()),
                    session_id,
                    throttle_time_ms: throttle_ms_i32(throttle_ms),
                    ..Default::default()
                };
            }
        }
        let (session_id, responses) =
            context.update_and_generate_response(version, data, unix_ms());
        if let Some(error) = context.error() {
            return FetchResponse {
                error_code: error.code(),
                session_id,
                ..Default::default()
            };
        }
        FetchResponse {
            error_code: 0,
            session_id,
            responses,
            ..Default::default()
        }
    }

    /// ListOffsets: earliest, latest, max timestamp or by timestamp, as leader. A topic
    /// without DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED after the others, as Kafka.
    pub fn list_offsets(
        &self,
        image: &MetadataImage,
        version: i16,
        request: ListOffsetsRequest,
        auth: &RequestAuth,
    ) -> ListOffsetsResponse {
        let mut response = ListOffsetsResponse::default();
        let mut refused = Vec::new();
        let mut describe = auth.memo(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC);
        for topic in request.topics {
            let allowed = describe.allowed(&topic.name);
            let mut out = ListOffsetsTopicResponse {
                name: topic.name.clone(),
                ..Default::default()
            };
            for p in topic.partitions {
                let answer = if !allowed {
                    Err(ErrorCode::TopicAuthorizationFailed)
                } else {
                    partition_by_name(image, &topic.name, p.partition_index)
                };
                let answer = answer.and_then(|tp| {
                    self.replica_manager.list_offset_isolated(
                        &tp,
                        p.current_leader_epoch,
                        p.timestamp,
                        request.replica_id,
                        if version >= 2 {
                            request.isolation_level
                        } else {
                            0
                        },
                    )
                });
                out.partitions.push(match answer {
                    Ok((offset, timestamp, leader_epoch)) => ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        error_code: 0,
                        timestamp,
                        offset,
                        leader_epoch: if version >= 4 { leader_epoch } else { -1 },
                        ..Default::default()
                    },
                    Err(code) => ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        error_code: code.code(),
                        timestamp: -1,
                        offset: -1,
                        leader_epoch: -1,
                        ..Default::default()
                    },
                });
            }
            if allowed {
                response.topics.push(out);
            } else {
                refused.push(out);
            }
        }
        response.topics.extend(refused);
        response
    }

    /// OffsetForLeaderEpoch (KIP-279): per partition, the largest epoch ≤ the one asked
    /// and its end offset. CLUSTER_ACTION (a follower) covers every topic; a consumer needs
    /// DESCRIBE on each (KIP-320), else TOPIC_AUTHORIZATION_FAILED after the others.
    pub fn offset_for_leader_epoch(
        &self,
        image: &MetadataImage,
        request: OffsetForLeaderEpochRequest,
        auth: &RequestAuth,
    ) -> OffsetForLeaderEpochResponse {
        let mut response = OffsetForLeaderEpochResponse::default();
        let mut refused = Vec::new();
        let cluster = auth.authorize_cluster(OPERATION_CLUSTER_ACTION);
        let mut describe = auth.memo(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC);
        for topic in request.topics {
            let allowed = cluster || describe.allowed(&topic.topic);
            let mut out = OffsetForLeaderTopicResult {
                topic: topic.topic.clone(),
                ..Default::default()
            };
            for p in topic.partitions {
                let answer = if allowed {
                    partition_by_name(image, &topic.topic, p.partition)
                } else {
                    Err(ErrorCode::TopicAuthorizationFailed)
                };
                let answer = answer.and_then(|tp| {
                    self.replica_manager.offset_for_leader_epoch(
                        &tp,
                        p.current_leader_epoch,
                        p.leader_epoch,
                        request.replica_id,
                    )
                });
                out.partitions.push(match answer {
                    Ok((leader_epoch, end_offset)) => EpochEndOffset {
                        error_code: 0,
                        partition: p.partition,
                        leader_epoch,
                        end_offset,
                        ..Default::default()
                    },
                    Err(code) => EpochEndOffset {
                        error_code: code.code(),
                        partition: p.partition,
                        leader_epoch: -1,
                        end_offset: -1,
                        ..Default::default()
                    },
                });
            }
            if allowed {
                response.topics.push(out);
            } else {
                refused.push(out);
            }
        }
        response.topics.extend(refused);
        response
    }

    /// InitProducerId for an idempotent producer (no transactional id): a fresh producer id
    /// from the controller's blocks at epoch 0, as Kafka's coordinator answers.
    pub async fn init_producer_id(
        &self,
        request: InitProducerIdRequest,
        deadline: Instant,
    ) -> InitProducerIdResponse {
        let mut response = InitProducerIdResponse {
            producer_id: -1,
            producer_epoch: -1,
            ongoing_txn_producer_id: -1,
            ongoing_txn_producer_epoch: -1,
            ..Default::default()
        };
        if request.transactional_id.is_some() {
            // No transaction coordinator yet: refused plainly, not half-supported.
            response.error_code = ErrorCode::UnsupportedVersion.code();
            return response;
        }
        match self.producer_ids.generate(deadline).await {
            Ok(id) => {
                response.producer_id = id;
                response.producer_epoch = 0;
            }
            Err(code) => response.error_code = code.code(),
        }
        response
    }

    /// DeleteRecords: per partition, move the log start on the leader and wait (up to the
    /// request's timeout) until every in-sync replica's has followed; answers the low
    /// watermark or the partition's error (TOPIC_AUTHORIZATION_FAILED without DELETE on the
    /// topic).
    pub async fn delete_records(
        &self,
        image: &MetadataImage,
        request: DeleteRecordsRequest,
        auth: &RequestAuth,
    ) -> DeleteRecordsResponse {
        let timeout = Duration::from_millis(request.timeout_ms.max(0) as u64);
        let mut entries = Vec::new();
        /// Per partition: the answer, or a placeholder the replica manager's replaces.
        type PartitionAnswers = Vec<(i32, Result<i64, ErrorCode>)>;
        let mut results: Vec<(String, PartitionAnswers)> = Vec::new();
        let mut delete = auth.memo(OPERATION_DELETE, RESOURCE_TYPE_TOPIC);
        for topic in &request.topics {
            let mut out = Vec::new();
            let allowed = delete.allowed(&topic.name);
            for p in &topic.partitions {
                if !allowed {
                    out.push((p.partition_index, Err(ErrorCode::TopicAuthorizationFailed)));
                    continue;
                }
                match partition_by_name(image, &topic.name, p.partition_index) {
                    Ok(tp) if image.topics.partition(&tp.topic_id, tp.partition).is_some() => {
                        entries.push((tp, p.offset));
                        // Filled in from the replica manager's answer below.
                        out.push((p.partition_index, Err(ErrorCode::UnknownServerError)));
                    }
                    Ok(_) => out.push((p.partition_index, Err(ErrorCode::UnknownTopicOrPartition))),
                    Err(code) => out.push((p.partition_index, Err(code))),
                }
            }
            results.push((topic.name.clone(), out));
        }
        let answers: BTreeMap<(String, i32), Result<i64, ErrorCode>> = self
            .replica_manager
            .delete_records(timeout, entries)
            .await
            .into_iter()
            .map(|(tp, r)| ((tp.topic, tp.partition), r))
            .collect();
        let mut response = DeleteRecordsResponse::default();
        for (name, partitions) in results {
            let mut out = DeleteRecordsTopicResult {
                name: name.clone(),
                ..Default::default()
            };
            for (index, fallback) in partitions {
                let answer = answers
                    .get(&(name.clone(), index))
                    .copied()
                    .unwrap_or(fallback);
                out.partitions.push(match answer {
                    Ok(low_watermark) => DeleteRecordsPartitionResult {
                        partition_index: index,
                        low_watermark,
                        error_code: 0,
                        ..Default::default()
                    },
                    Err(code) => DeleteRecordsPartitionResult {
                        partition_index: index,
                        low_watermark: -1,
                        error_code: code.code(),
                        ..Default::default()
                    },
                });
            }
            response.topics.push(out);
        }
        response
    }
}

/// A produce whose batches are appended (see [`DataPlane::produce_append`]).
#[derive(Debug)]
pub struct ProduceInProgress {
    image: Arc<MetadataImage>,
    version: i16,
    acks: i16,
    /// (topic name, id, partition, Some(error) when refused before the append).
    order: Vec<(String, Uuid, i32, Option<ErrorCode>)>,
    pending: PendingProduce,
}

impl ProduceInProgress {
    /// Waits for `acks=all` and builds the response; `None` for `acks=0` (the client
    /// expects no response).
    pub async fn respond(self) -> Option<ProduceResponse> {
        let appended = self.pending.complete().await;
        if self.acks == 0 {
            return None;
        }
        let (image, version) = (self.image, self.version);
        let mut results: BTreeMap<(Uuid, i32), ProduceResult> = appended
            .into_iter()
            .map(|(tp, r)| ((tp.topic_id, tp.partition), r))
            .collect();
        let mut response = ProduceResponse::default();
        for (name, id, index, error) in self.order {
            let result = match error {
                Some(code) => ProduceResult::error(code, None),
                None => results
                    .remove(&(id, index))
                    .unwrap_or_else(|| ProduceResult::error(ErrorCode::UnknownServerError, None)),
            };
            let current_leader = if result.error == ErrorCode::NotLeaderOrFollower {
                image
                    .topics
                    .partition(&id, index)
                    .map(|p| LeaderIdAndEpoch {
                        leader_id: p.leader,
                        leader_epoch: p.leader_epoch,
                        ..Default::default()
                    })
                    .unwrap_or_else(unknown_leader)
            } else {
                unknown_leader()
            };
            // Fields a version cannot carry stay at their defaults (the codec refuses to
            // drop a set value silently).
            let partition = PartitionProduceResponse {
                index,
                error_code: result.error.code(),
                base_offset: result.base_offset,
                log_append_time_ms: result.log_append_time,
                log_start_offset: if version >= 5 {
                    result.log_start_offset
                } else {
                    -1
                },
                error_message: result.message.filter(|_| version >= 8),
                record_errors: if version >= 8 {
                    result
                        .record_errors
                        .iter()
                        .map(|e| BatchIndexAndErrorMessage {
                            batch_index: e.batch_index,
                            batch_index_error_message: Some(e.message.clone()),
                            ..Default::default()
                        })
                        .collect()
                } else {
                    Vec::new()
                },
                current_leader: if version >= 10 {
                    current_leader
                } else {
                    unknown_leader()
                },
                ..Default::default()
            };
            match response
                .responses
                .last_mut()
                .filter(|t| t.name == name && t.topic_id == id)
            {
                Some(t) => t.partition_responses.push(partition),
                None => response.responses.push(TopicProduceResponse {
                    name,
                    topic_id: id,
                    partition_responses: vec![partition],
                    ..Default::default()
                }),
            }
        }
        Some(response)
    }
}

fn unknown_leader() -> LeaderIdAndEpoch {
    LeaderIdAndEpoch {
        leader_id: -1,
        leader_epoch: -1,
        ..Default::default()
    }
}

/// One partition of a Fetch response at `version`; records leave as the bytes on disk.
/// Fields the version cannot carry stay at their defaults.
fn partition_data(version: i16, index: i32, r: FetchResult) -> PartitionData {
    let (diverging_epoch, diverging_end) = r
        .diverging_epoch
        .filter(|_| version >= 12)
        .unwrap_or((-1, -1));
    let (leader_id, leader_epoch) = r
        .current_leader
        .filter(|_| version >= 12)
        .unwrap_or((-1, -1));
    PartitionData {
        partition_index: index,
        error_code: r.error.code(),
        high_watermark: r.high_watermark,
        last_stable_offset: if version >= 4 {
            r.last_stable_offset
        } else {
            -1
        },
        log_start_offset: if version >= 5 { r.log_start_offset } else { -1 },
        diverging_epoch: FetchEpochEndOffset {
            epoch: diverging_epoch,
            end_offset: diverging_end,
            ..Default::default()
        },
        current_leader: FetchLeader {
            leader_id,
            leader_epoch,
            ..Default::default()
        },
        aborted_transactions: r.aborted_transactions.filter(|_| version >= 4).map(|a| {
            a.into_iter()
                .map(|(producer_id, first_offset)| AbortedTransaction {
                    producer_id,
                    first_offset,
                    ..Default::default()
                })
                .collect()
        }),
        preferred_read_replica: -1,
        records: Some(r.records),
        ..Default::default()
    }
}
