//! DescribeTopicPartitions (KIP-966's paginated topic description, Kafka's
//! `DescribeTopicPartitionsRequestHandler` over `KRaftMetadataCache`), from one image.
//!
//! Topics are answered in name order, starting at the cursor's topic (named topics must
//! include it, else INVALID_REQUEST for the whole request) and, in it, at the cursor's
//! partition. At most `min(ResponsePartitionLimit, max.request.partition.size.limit)`
//! partitions are returned; when a topic is cut, `NextCursor` names it and its first
//! partition not returned; when the limit is used up exactly at a topic's end, `NextCursor`
//! names the next topic at partition 0. Topics the principal may not DESCRIBE are left out
//! of an all-topics answer and, when named, come last with TOPIC_AUTHORIZATION_FAILED and a
//! zero topic id; a named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (or
//! INVALID_TOPIC_EXCEPTION for an illegal name).

use std::collections::BTreeSet;

use kraftd_controller::control::topics::validate_topic_name;
use kraftd_controller::image::PartitionRegistration;
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kraftd_protocol::messages::{DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse};
use kraftd_protocol::{ErrorCode, Uuid};

use super::endpoint;
use super::metadata::is_internal_topic;

/// Kafka's `max.request.partition.size.limit` default: the most partitions one answer holds.
pub const MAX_REQUEST_PARTITION_SIZE_LIMIT: i32 = 2000;

/// The answer to a DescribeTopicPartitions request. `describable` is the principal's
/// DESCRIBE on a topic, `authorized_operations` its topic operations bit field.
pub fn describe_topic_partitions_response(
    image: &MetadataImage,
    request: &DescribeTopicPartitionsRequest,
    listener: &str,
    partition_size_limit: i32,
    describable: &dyn Fn(&str) -> bool,
    authorized_operations: &dyn Fn(&str) -> i32,
) -> DescribeTopicPartitionsResponse {
    let fetch_all = request.topics.is_empty();
    let cursor_topic = request
        .cursor
        .as_ref()
        .map_or("", |c| c.topic_name.as_str());
    let topics: BTreeSet<&str> = if fetch_all {
        image
            .topics
            .names()
            .map(|(n, _)| n.as_str())
            .filter(|n| *n >= cursor_topic)
            .collect()
    } else {
        let named: BTreeSet<&str> = request
            .topics
            .iter()
            .map(|t| t.name.as_str())
            .filter(|n| *n >= cursor_topic)
            .collect();
        if request.cursor.is_some() && !named.contains(cursor_topic) {
            // Kafka's InvalidRequestException: "topic list should contain the cursor topic".
            return error_response(request, ErrorCode::InvalidRequest);
        }
        named
    };
    let mut refused = Vec::new();
    let authorized: Vec<&str> = topics
        .into_iter()
        .filter(|name| {
            let ok = describable(name);
            if !ok && !fetch_all {
                refused.push(DescribeTopicPartitionsResponseTopic {
                    error_code: ErrorCode::TopicAuthorizationFailed.code(),
                    name: Some(name.to_string()),
                    topic_id: Uuid::ZERO,
                    is_internal: false,
                    ..Default::default()
                });
            }
            ok
        })
        .collect();
    // The cursor's partition applies to its topic only if the principal may describe it.
    let first_partition = match &request.cursor {
        Some(c) if !cursor_topic.is_empty() && describable(cursor_topic) => c.partition_index,
        _ => 0,
    };
    let limit = partition_size_limit.min(request.response_partition_limit);
    let mut response = DescribeTopicPartitionsResponse::default();
    let mut remaining = i64::from(limit);
    for name in authorized {
        if remaining == 0 {
            response.next_cursor = Some(Cursor {
                topic_name: name.to_string(),
                partition_index: 0,
                ..Default::default()
            });
            break;
        }
        if remaining < 0 {
            break;
        }
        let start = if name == cursor_topic {
            first_partition
        } else {
            0
        };
        let Some(topic) = image.topics.get_by_name(name) else {
            if !fetch_all {
                let error = match validate_topic_name(name) {
                    Ok(()) => ErrorCode::UnknownTopicOrPartition,
                    Err(_) => ErrorCode::InvalidTopicException,
                };
                response.topics.push(DescribeTopicPartitionsResponseTopic {
                    error_code: error.code(),
                    name: Some(name.to_string()),
                    topic_id: Uuid::ZERO,
                    is_internal: is_internal_topic(name),
                    topic_authorized_operations: authorized_operations(name),
                    ..Default::default()
                });
            }
            continue;
        };
        let count = topic.partitions.len() as i64;
        let upper = count.min(i64::from(start) + remaining);
        let mut partitions = Vec::new();
        for index in i64::from(start).max(0)..upper.max(0) {
            let index = index as i32;
            if let Some(p) = topic.partition(index) {
                partitions.push(partition_answer(image, index, p, listener));
            }
        }
        let returned = partitions.len() as i64;
        response.topics.push(DescribeTopicPartitionsResponseTopic {
            error_code: 0,
            name: Some(name.to_string()),
            topic_id: topic.id,
            is_internal: is_internal_topic(name),
            partitions,
            topic_authorized_operations: authorized_operations(name),
            ..Default::default()
        });
        if upper < count {
            response.next_cursor = Some(Cursor {
                topic_name: name.to_string(),
                partition_index: upper as i32,
                ..Default::default()
            });
            break;
        }
        remaining -= returned;
    }
    response.topics.extend(refused);
    response
}

/// Kafka's `DescribeTopicPartitionsRequest.getErrorResponse`: every named topic with the
/// error.
pub fn error_response(
    request: &DescribeTopicPartitionsRequest,
    error: ErrorCode,
) -> DescribeTopicPartitionsResponse {
    DescribeTopicPartitionsResponse {
        topics: request
            .topics
            .iter()
            .map(|t| DescribeTopicPartitionsResponseTopic {
                error_code: error.code(),
                name: Some(t.name.clone()),
                topic_id: Uuid::ZERO,
                is_internal: false,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// One partition as `KRaftMetadataCache` describes it: every replica and ISR member,
/// the leader only when it has the listener (else -1), the ELR and last known ELR, and
/// the replicas that are offline (unknown, fenced, without the listener, or in an
/// offline log dir).
fn partition_answer(
    image: &MetadataImage,
    index: i32,
    p: &PartitionRegistration,
    listener: &str,
) -> DescribeTopicPartitionsResponsePartition {
    let offline_replicas = p
        .replicas
        .iter()
        .enumerate()
        .filter(|(i, id)| match image.cluster.broker(**id) {
            None => true,
            Some(b) => {
                let dir = p.directories.get(*i).copied().unwrap_or(Uuid::ZERO);
                b.fenced || endpoint(b, listener).is_none() || !b.has_online_dir(dir)
            }
        })
        .map(|(_, id)| *id)
        .collect();
    let leader_id = image
        .cluster
        .broker(p.leader)
        .filter(|b| endpoint(b, listener).is_some())
        .map_or(-1, |b| b.id);
    DescribeTopicPartitionsResponsePartition {
        error_code: 0,
        partition_index: index,
        leader_id,
        leader_epoch: p.leader_epoch,
        replica_nodes: p.replicas.clone(),
        isr_nodes: p.isr.clone(),
        eligible_leader_replicas: Some(p.elr.clone()),
        last_known_elr: Some(p.last_known_elr.clone()),
        offline_replicas,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
