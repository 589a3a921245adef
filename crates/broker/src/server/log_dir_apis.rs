//! The broker-local admin reads and moves of issue 18: DescribeLogDirs and
//! AlterReplicaLogDirs (answered by this broker's ReplicaManager, never forwarded, as
//! Kafka's) and DescribeTopicPartitions (from the metadata cache), with Kafka's
//! authorization: DESCRIBE on the cluster, ALTER on the cluster, DESCRIBE per topic.

use std::collections::BTreeSet;

use kraftd_controller::auth::RequestAuth;
use kraftd_controller::control::acl::RESOURCE_TYPE_TOPIC;
use kraftd_controller::publisher::{OPERATION_ALTER, OPERATION_DESCRIBE};
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
};
use kraftd_protocol::messages::describe_log_dirs_response::DescribeLogDirsResult;
use kraftd_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, DescribeLogDirsRequest,
    DescribeLogDirsResponse, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse,
};
use kraftd_protocol::{ApiKey, ErrorCode};

use crate::kafka_apis::describe_topic_partitions::{
    describe_topic_partitions_response, MAX_REQUEST_PARTITION_SIZE_LIMIT,
};

/// The APIs this module answers, served on broker listeners.
pub const LOG_DIR_API_KEYS: [ApiKey; 3] = [
    ApiKey::DescribeLogDirs,
    ApiKey::AlterReplicaLogDirs,
    ApiKey::DescribeTopicPartitions,
];

/// DescribeLogDirs: every log dir of this broker (Kafka's `handleDescribeLogDirsRequest`).
/// A null topic list means every hosted log; a principal without DESCRIBE on the cluster
/// gets no results and (v3+) CLUSTER_AUTHORIZATION_FAILED.
/// `describe` is the ReplicaManager's answer for a partition filter.
pub fn describe_log_dirs(
    request: &DescribeLogDirsRequest,
    auth: &RequestAuth,
    describe: impl FnOnce(Option<&BTreeSet<(String, i32)>>) -> Vec<DescribeLogDirsResult>,
) -> DescribeLogDirsResponse {
    if !auth.authorize_cluster(OPERATION_DESCRIBE) {
        return DescribeLogDirsResponse {
            error_code: ErrorCode::ClusterAuthorizationFailed.code(),
            ..Default::default()
        };
    }
    let filter: Option<BTreeSet<(String, i32)>> = request.topics.as_ref().map(|topics| {
        topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| (t.topic.clone(), *p)))
            .collect()
    });
    DescribeLogDirsResponse {
        results: describe(filter.as_ref()),
        ..Default::default()
    }
}

/// AlterReplicaLogDirs (Kafka's `handleAlterReplicaLogDirsRequest`): each partition moved
/// to its dir, answered per partition grouped by topic; without ALTER on the cluster every
/// partition gets CLUSTER_AUTHORIZATION_FAILED. A partition named twice takes its last dir,
/// as Kafka's request map does. `alter` moves one replica (topic, partition, dir).
pub fn alter_replica_log_dirs(
    request: &AlterReplicaLogDirsRequest,
    auth: &RequestAuth,
    mut alter: impl FnMut(&str, i32, &str) -> ErrorCode,
) -> AlterReplicaLogDirsResponse {
    let mut moves: Vec<(String, i32, String)> = Vec::new();
    for dir in &request.dirs {
        for topic in &dir.topics {
            for &partition in &topic.partitions {
                moves.retain(|(t, p, _)| !(t == &topic.name && *p == partition));
                moves.push((topic.name.clone(), partition, dir.path.clone()));
            }
        }
    }
    let allowed = auth.authorize_cluster(OPERATION_ALTER);
    let mut results: Vec<AlterReplicaLogDirTopicResult> = Vec::new();
    for (topic, partition, path) in moves {
        let error = if allowed {
            alter(&topic, partition, &path)
        } else {
            ErrorCode::ClusterAuthorizationFailed
        };
        let entry = AlterReplicaLogDirPartitionResult {
            partition_index: partition,
            error_code: error.code(),
            ..Default::default()
        };
        match results.iter_mut().find(|r| r.topic_name == topic) {
            Some(r) => r.partitions.push(entry),
            None => results.push(AlterReplicaLogDirTopicResult {
                topic_name: topic,
                partitions: vec![entry],
                ..Default::default()
            }),
        }
    }
    AlterReplicaLogDirsResponse {
        results,
        ..Default::default()
    }
}

/// DescribeTopicPartitions from the image this request sees; `partition_limit` is the
/// properties file's `max.request.partition.size.limit` (default 2000).
pub fn describe_topic_partitions(
    image: &MetadataImage,
    request: &DescribeTopicPartitionsRequest,
    listener: &str,
    partition_limit: Option<i32>,
    auth: &RequestAuth,
) -> DescribeTopicPartitionsResponse {
    describe_topic_partitions_response(
        image,
        request,
        listener,
        partition_limit.unwrap_or(MAX_REQUEST_PARTITION_SIZE_LIMIT),
        &|name| auth.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC, name),
        &|name| auth.authorized_operations(RESOURCE_TYPE_TOPIC, name),
    )
}

#[cfg(test)]
mod tests;
