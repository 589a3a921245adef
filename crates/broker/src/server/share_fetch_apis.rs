//! ShareFetch and ShareAcknowledge (Kafka's `KafkaApis.handleShareFetchRequest` /
//! `handleShareAcknowledgeRequest`): share groups switched on by `share.version` >= 1,
//! READ on the group and on each topic, the share session (`ShareSessionCache`),
//! acknowledgements piggybacked on a ShareFetch applied before its fetch, the fetch itself
//! through the `SharePartitionManager`, and the consumer fetch quota applied to the answer as
//! for Fetch.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use kraftd_controller::auth::RequestAuth;
use kraftd_controller::control::acl::{OPERATION_READ, RESOURCE_TYPE_GROUP, RESOURCE_TYPE_TOPIC};
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::share_acknowledge_response::{
    PartitionData as AckPartitionData, ShareAcknowledgeTopicResponse,
};
use kraftd_protocol::messages::share_fetch_response::{
    LeaderIdAndEpoch, PartitionData, ShareFetchableTopicResponse,
};
use kraftd_protocol::messages::{
    ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest, ShareFetchResponse,
};
use kraftd_protocol::{ApiKey, ErrorCode, Uuid};

use super::quota::ConsumerFetchQuota;
use super::share_group_apis::{share_groups_enabled, MAX_MEMBER_ID_LENGTH};
use crate::replica::TopicIdPartition;
use crate::share::share_partition::{
    validate_acknowledgement_batches, AcknowledgementBatch, ShareAcquireMode,
};
use crate::share::share_partition_manager::{
    ShareFetchParams, ShareFetchPartition, ShareFetchPartitionData, SharePartitionManager,
};
use crate::share::share_session_cache::{ShareFetchContext, FINAL_EPOCH};

/// The APIs this module answers.
pub const SHARE_API_KEYS: [ApiKey; 2] = [ApiKey::ShareFetch, ApiKey::ShareAcknowledge];

/// Kafka's `isMemberIdValid`: not empty, no longer than a printed UUID.
fn is_member_id_valid(member_id: &str) -> bool {
    !member_id.is_empty() && member_id.chars().count() <= MAX_MEMBER_ID_LENGTH
}

/// The ShareFetch / ShareAcknowledge handlers over one manager.
#[derive(Debug)]
pub struct ShareApis<'a> {
    pub manager: &'a SharePartitionManager,
}

/// One named partition of a request: its topic id, name (empty when the id is unknown)
/// and index.
type Named = (Uuid, String, i32);

impl ShareApis<'_> {
    /// ShareFetch (see the module docs). `connection_id` names the client's connection, so
    /// that its close can end the share session it opened.
    pub async fn share_fetch(
        &self,
        image: &MetadataImage,
        version: i16,
        request: ShareFetchRequest,
        connection_id: &str,
        auth: &RequestAuth,
        quota: Option<&mut (dyn ConsumerFetchQuota + Send)>,
    ) -> ShareFetchResponse {
        let refuse = |error: ErrorCode| ShareFetchResponse {
            error_code: error.code(),
            ..Default::default()
        };
        if !share_groups_enabled(image) {
            return refuse(ErrorCode::UnsupportedVersion);
        }
        let Some(group_id) = request.group_id.clone() else {
            return refuse(ErrorCode::InvalidRequest);
        };
        if !auth.authorize(OPERATION_READ, RESOURCE_TYPE_GROUP, &group_id) {
            return refuse(ErrorCode::GroupAuthorizationFailed);
        }
        let Some(member_id) = request.member_id.clone().filter(|m| is_member_id_valid(m)) else {
            return refuse(ErrorCode::InvalidRequest);
        };
        let is_renew_ack = version >= 2 && request.is_renew_ack;
        // KIP-1222: a renewal fetches nothing, and says so.
        if is_renew_ack
            && (request.max_bytes != 0
                || request.min_bytes != 0
                || request.max_records != 0
                || request.max_wait_ms != 0)
        {
            return refuse(ErrorCode::InvalidRequest);
        }
        let epoch = request.share_session_epoch;
        let ack_present = request
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .any(|p| !p.acknowledgement_batches.is_empty());
        let named = |id: Uuid, partition: i32| -> Named {
            let name = image
                .topics
                .get(&id)
                .map(|t| t.name.clone())
                .unwrap_or_default();
            (id, name, partition)
        };
        let fetch_data: Vec<(Uuid, i32)> = request
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| (t.topic_id, p.partition_index)))
            .collect();
        let forgotten: Vec<(Uuid, i32)> = request
            .forgotten_topics_data
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| (t.topic_id, *p)))
            .collect();
        let context = self.manager.sessions().new_context(
            &group_id,
            &member_id,
            &fetch_data,
            &forgotten,
            epoch,
            ack_present,
            connection_id,
        );
        let context = match context {
            Ok(c) => c,
            Err(ErrorCode::ShareSessionLimitReached) => {
                // Kafka holds the answer for the fetch's max wait (an idle timer task) so
                // that the client does not retry at once.
                let wait = Duration::from_millis(request.max_wait_ms.max(0) as u64);
                tokio::time::sleep(wait).await;
                return refuse(ErrorCode::ShareSessionLimitReached);
            }
            Err(e) => return refuse(e),
        };
        let fetch_partitions: Vec<Named> = match &context {
            ShareFetchContext::Full { partitions }
            | ShareFetchContext::Subsequent { partitions, .. } => {
                partitions.iter().map(|(id, p)| named(*id, *p)).collect()
            }
            ShareFetchContext::Final => Vec::new(),
        };
        let mut read = auth.memo(OPERATION_READ, RESOURCE_TYPE_TOPIC);
        let mut authorized = |name: &str| !name.is_empty() && read.allowed(name);

        // Piggybacked acknowledgements first.
        let mut ack_errors: BTreeMap<(Uuid, i32), ErrorCode> = BTreeMap::new();
        if ack_present {
            let acks = request.topics.iter().flat_map(|t| {
                t.partitions.iter().map(move |p| {
                    let batches: Vec<AcknowledgementBatch> = p
                        .acknowledgement_batches
                        .iter()
                        .map(|b| AcknowledgementBatch {
                            first_offset: b.first_offset,
                            last_offset: b.last_offset,
                            acknowledge_types: b.acknowledge_types.clone(),
                        })
                        .collect();
                    (t.topic_id, p.partition_index, batches)
                })
            });
            let acks: Vec<_> = acks.filter(|(_, _, b)| !b.is_empty()).collect();
            ack_errors = self
                .acknowledge(
                    image,
                    &group_id,
                    &member_id,
                    version,
                    is_renew_ack,
                    acks,
                    &mut authorized,
                )
                .await;
        }

        // Then the fetch, unless the request only renews locks.
        let mut answers: Vec<(Named, ShareFetchPartitionData)> = Vec::new();
        if !is_renew_ack && !fetch_partitions.is_empty() {
            let mut valid = Vec::new();
            for (id, name, p) in &fetch_partitions {
                let error = if name.is_empty() {
                    Some(ErrorCode::UnknownTopicId)
                } else if !authorized(name) {
                    Some(ErrorCode::TopicAuthorizationFailed)
                } else if image
                    .topics
                    .get(id)
                    .is_none_or(|t| !t.partitions.contains_key(p))
                {
                    Some(ErrorCode::UnknownTopicOrPartition)
                } else {
                    None
                };
                match error {
                    Some(e) => answers.push((
                        (*id, name.clone(), *p),
                        ShareFetchPartitionData {
                            error: e,
                            records: Bytes::new(),
                            acquired_records: Vec::new(),
                            current_leader: None,
                        },
                    )),
                    None => valid.push((*id, name.clone(), *p)),
                }
            }
            if !valid.is_empty() {
                let max_bytes = (request.max_bytes.max(0) as usize)
                    .min(quota.as_ref().map_or(usize::MAX, |q| q.max_bytes()));
                // Kafka's uniform PartitionMaxBytesStrategy: the request's bytes shared.
                let per_partition = (max_bytes / valid.len()).min(i32::MAX as usize) as i32;
                let partitions: Vec<ShareFetchPartition> = valid
                    .iter()
                    .map(|(id, name, p)| ShareFetchPartition {
                        tp: TopicIdPartition {
                            topic_id: *id,
                            topic: name.clone(),
                            partition: *p,
                        },
                        partition_max_bytes: per_partition,
                    })
                    .collect();
                let params = ShareFetchParams {
                    group_id: group_id.clone(),
                    member_id: member_id.clone(),
                    max_wait: Duration::from_millis(request.max_wait_ms.max(0) as u64),
                    min_bytes: request
                        .min_bytes
                        .min(max_bytes.min(i32::MAX as usize) as i32),
                    max_bytes: max_bytes.min(i32::MAX as usize) as i32,
                    max_records: request.max_records,
                    batch_size: request.batch_size,
                    acquire_mode: ShareAcquireMode::from_id(request.share_acquire_mode)
                        .unwrap_or(ShareAcquireMode::BatchOptimized),
                };
                for (tp, data) in self.manager.fetch_messages(&params, &partitions).await {
                    answers.push(((tp.topic_id, tp.topic, tp.partition), data));
                }
            }
        }

        let lock_ms = self
            .manager
            .group_settings(&group_id)
            .partition
            .record_lock_duration_ms
            .clamp(0, i32::MAX as i64) as i32;
        let response_size: usize = answers.iter().map(|(_, d)| d.records.len()).sum();
        if let Some(quota) = quota {
            let throttle_ms = quota.record(response_size);
            if throttle_ms > 0 {
                // Kafka's ShareSessionContext.throttleResponse: nothing but the time.
                if epoch == FINAL_EPOCH {
                    let _ = self.manager.release_session(&group_id, &member_id).await;
                }
                return ShareFetchResponse {
                    throttle_time_ms: throttle_ms.min(i32::MAX as u64) as i32,
                    acquisition_lock_timeout_ms: lock_ms,
                    ..Default::default()
                };
            }
        }

        // A subsequent context answers only what changed (Kafka's PartitionIterator).
        if let ShareFetchContext::Subsequent { key, .. } = &context {
            let mut sessions = self.manager.sessions();
            answers.retain(|((id, _, p), d)| {
                sessions.must_respond(
                    key,
                    (*id, *p),
                    !d.records.is_empty(),
                    d.error != ErrorCode::None,
                )
            });
        }
        let mut topics: Vec<ShareFetchableTopicResponse> = Vec::new();
        let mut push =
            |id: Uuid, data: PartitionData| match topics.iter_mut().find(|t| t.topic_id == id) {
                Some(t) => t.partitions.push(data),
                None => topics.push(ShareFetchableTopicResponse {
                    topic_id: id,
                    partitions: vec![data],
                    ..Default::default()
                }),
            };
        for ((id, _, p), d) in answers {
            let ack = ack_errors.remove(&(id, p));
            let leader = d.current_leader.unwrap_or((-1, -1));
            push(
                id,
                PartitionData {
                    partition_index: p,
                    error_code: d.error.code(),
                    acknowledge_error_code: ack.map_or(0, |e| e.code()),
                    current_leader: LeaderIdAndEpoch {
                        leader_id: leader.0,
                        leader_epoch: leader.1,
                        ..Default::default()
                    },
                    records: Some(d.records),
                    acquired_records: d.acquired_records,
                    ..Default::default()
                },
            );
        }
        // Acknowledged partitions the fetch did not answer.
        for ((id, p), e) in ack_errors {
            push(
                id,
                PartitionData {
                    partition_index: p,
                    acknowledge_error_code: e.code(),
                    current_leader: LeaderIdAndEpoch {
                        leader_id: -1,
                        leader_epoch: -1,
                        ..Default::default()
                    },
                    records: Some(Bytes::new()),
                    ..Default::default()
                },
            );
        }
        if epoch == FINAL_EPOCH {
            // The answer is built: the session closes and the member's records go back.
            let _ = self.manager.release_session(&group_id, &member_id).await;
        }
        ShareFetchResponse {
            acquisition_lock_timeout_ms: lock_ms,
            responses: topics,
            ..Default::default()
        }
    }

    /// ShareAcknowledge (see the module docs).
    pub async fn share_acknowledge(
        &self,
        image: &MetadataImage,
        version: i16,
        request: ShareAcknowledgeRequest,
        auth: &RequestAuth,
    ) -> ShareAcknowledgeResponse {
        let refuse = |error: ErrorCode| ShareAcknowledgeResponse {
            error_code: error.code(),
            ..Default::default()
        };
        if !share_groups_enabled(image) {
            return refuse(ErrorCode::UnsupportedVersion);
        }
        let Some(group_id) = request.group_id.clone() else {
            return refuse(ErrorCode::InvalidRequest);
        };
        if !auth.authorize(OPERATION_READ, RESOURCE_TYPE_GROUP, &group_id) {
            return refuse(ErrorCode::GroupAuthorizationFailed);
        }
        let Some(member_id) = request.member_id.clone().filter(|m| is_member_id_valid(m)) else {
            return refuse(ErrorCode::InvalidRequest);
        };
        let epoch = request.share_session_epoch;
        if let Err(e) = self
            .manager
            .sessions()
            .acknowledge_session_update(&group_id, &member_id, epoch)
        {
            return refuse(e);
        }
        let is_renew_ack = version >= 2 && request.is_renew_ack;
        let acks: Vec<_> = request
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(move |p| {
                    let batches = p
                        .acknowledgement_batches
                        .iter()
                        .map(|b| AcknowledgementBatch {
                            first_offset: b.first_offset,
                            last_offset: b.last_offset,
                            acknowledge_types: b.acknowledge_types.clone(),
                        })
                        .collect();
                    (t.topic_id, p.partition_index, batches)
                })
            })
            .collect();
        let mut read = auth.memo(OPERATION_READ, RESOURCE_TYPE_TOPIC);
        let mut authorized = |name: &str| !name.is_empty() && read.allowed(name);
        let errors = self
            .acknowledge(
                image,
                &group_id,
                &member_id,
                version,
                is_renew_ack,
                acks,
                &mut authorized,
            )
            .await;
        if epoch == FINAL_EPOCH {
            let _ = self.manager.release_session(&group_id, &member_id).await;
        }
        let mut topics: Vec<ShareAcknowledgeTopicResponse> = Vec::new();
        for ((id, p), e) in errors {
            let data = AckPartitionData {
                partition_index: p,
                error_code: e.code(),
                ..Default::default()
            };
            match topics.iter_mut().find(|t| t.topic_id == id) {
                Some(t) => t.partitions.push(data),
                None => topics.push(ShareAcknowledgeTopicResponse {
                    topic_id: id,
                    partitions: vec![data],
                    ..Default::default()
                }),
            }
        }
        let lock_ms = self
            .manager
            .group_settings(&group_id)
            .partition
            .record_lock_duration_ms
            .clamp(0, i32::MAX as i64) as i32;
        ShareAcknowledgeResponse {
            acquisition_lock_timeout_ms: lock_ms,
            responses: topics,
            ..Default::default()
        }
    }

    /// Kafka's `handleAcknowledgements`: each partition's batches checked
    /// (`validateAcknowledgementBatches`), its topic known and readable, then applied and
    /// persisted; the answer is each partition's error code.
    #[allow(clippy::too_many_arguments)]
    async fn acknowledge(
        &self,
        image: &MetadataImage,
        group_id: &str,
        member_id: &str,
        version: i16,
        is_renew_ack: bool,
        acks: Vec<(Uuid, i32, Vec<AcknowledgementBatch>)>,
        authorized: &mut (dyn FnMut(&str) -> bool + Send),
    ) -> BTreeMap<(Uuid, i32), ErrorCode> {
        let mut errors = BTreeMap::new();
        let mut valid = Vec::new();
        for (id, p, batches) in acks {
            let topic = image.topics.get(&id);
            let name = topic.map(|t| t.name.clone()).unwrap_or_default();
            let error = if let Err(e) =
                validate_acknowledgement_batches(&batches, version >= 2, is_renew_ack)
            {
                Some(e)
            } else if name.is_empty() {
                Some(ErrorCode::UnknownTopicId)
            } else if !authorized(&name) {
                Some(ErrorCode::TopicAuthorizationFailed)
            } else if topic.is_none_or(|t| !t.partitions.contains_key(&p)) {
                Some(ErrorCode::UnknownTopicOrPartition)
            } else if batches.is_empty() {
                Some(ErrorCode::None)
            } else {
                None
            };
            match error {
                Some(e) => {
                    errors.insert((id, p), e);
                }
                None => valid.push((
                    TopicIdPartition {
                        topic_id: id,
                        topic: name,
                        partition: p,
                    },
                    batches,
                )),
            }
        }
        if !valid.is_empty() {
            for (tp, e) in self.manager.acknowledge(group_id, member_id, valid).await {
                errors.insert((tp.topic_id, tp.partition), e);
            }
        }
        errors
    }
}
