//! What Kafka's group handlers check before and after the group coordinator runs a request:
//! READ on the group to join, sync, heartbeat, leave or commit; DELETE to delete it or its
//! offsets; DESCRIBE to find its coordinator, describe it or fetch its offsets; READ on a
//! topic to commit or delete its offsets, DESCRIBE to see them or subscribe to it. Refused
//! groups, topics and partitions get Kafka's errors and are never sent to a shard; answers
//! drop what the principal may not see and carry `authorized_operations` when asked.

use kraftd_controller::auth::{default_message, RequestAuth};
use kraftd_controller::control::acl::{
    OPERATION_READ, RESOURCE_TYPE_CLUSTER, RESOURCE_TYPE_GROUP, RESOURCE_TYPE_TOPIC,
};
use kraftd_controller::publisher::{OPERATION_DELETE, OPERATION_DESCRIBE};
use kraftd_protocol::error_response::error_response;
use kraftd_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kraftd_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kraftd_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartitions, OffsetFetchResponseTopics,
};
use kraftd_protocol::messages::{
    consumer_group_describe_response, describe_groups_response, ConsumerGroupHeartbeatResponse,
    ListGroupsResponse, OffsetDeleteRequest,
};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};

/// Kafka's message for a described group whose assignments name a topic the principal may
/// not describe.
const HIDDEN_TOPICS_MESSAGE: &str =
    "The group has described topic(s) that the client is not authorized to describe.";

/// The whole-request refusal of a one-group request, if any: READ on the group (DELETE for
/// OffsetDelete), and for a ConsumerGroupHeartbeat DESCRIBE on every subscribed topic.
pub fn single_group_refusal(auth: &RequestAuth, body: &RequestBody) -> Option<ResponseBody> {
    let (group, operation) = match body {
        RequestBody::JoinGroup(r) => (&r.group_id, OPERATION_READ),
        RequestBody::SyncGroup(r) => (&r.group_id, OPERATION_READ),
        RequestBody::Heartbeat(r) => (&r.group_id, OPERATION_READ),
        RequestBody::LeaveGroup(r) => (&r.group_id, OPERATION_READ),
        RequestBody::OffsetCommit(r) => (&r.group_id, OPERATION_READ),
        RequestBody::ConsumerGroupHeartbeat(r) => (&r.group_id, OPERATION_READ),
        RequestBody::OffsetDelete(r) => (&r.group_id, OPERATION_DELETE),
        _ => return None,
    };
    if !auth.authorize(operation, RESOURCE_TYPE_GROUP, group) {
        let code = ErrorCode::GroupAuthorizationFailed;
        let mut refused =
            error_response(body, code).expect("every group API has an error response");
        if let ResponseBody::ConsumerGroupHeartbeat(r) = &mut refused {
            r.error_message = Some(default_message(code));
        }
        return Some(refused);
    }
    if let RequestBody::ConsumerGroupHeartbeat(r) = body {
        let topics = r.subscribed_topic_names.iter().flatten();
        let mut describe = auth.memo(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC);
        if topics.into_iter().any(|t| !describe.allowed(t)) {
            return Some(ResponseBody::ConsumerGroupHeartbeat(
                ConsumerGroupHeartbeatResponse {
                    error_code: ErrorCode::TopicAuthorizationFailed.code(),
                    error_message: None,
                    ..Default::default()
                },
            ));
        }
    }
    None
}

/// OffsetDelete's topics without READ, taken out of the request: their answers
/// (TOPIC_AUTHORIZATION_FAILED on each partition) for after the shard's.
pub fn take_unreadable_topics(
    auth: &RequestAuth,
    request: &mut OffsetDeleteRequest,
) -> Vec<OffsetDeleteResponseTopic> {
    let mut read = auth.memo(OPERATION_READ, RESOURCE_TYPE_TOPIC);
    let mut refused = Vec::new();
    request.topics.retain(|t| {
        if read.allowed(&t.name) {
            return true;
        }
        refused.push(OffsetDeleteResponseTopic {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| OffsetDeleteResponsePartition {
                    partition_index: p.partition_index,
                    error_code: ErrorCode::TopicAuthorizationFailed.code(),
                })
                .collect(),
        });
        false
    });
    refused
}

/// `groups` split by `operation` on each (in their order): those allowed, those refused.
pub fn split_groups(
    auth: &RequestAuth,
    operation: i8,
    groups: &[String],
) -> (Vec<String>, Vec<String>) {
    groups
        .iter()
        .cloned()
        .partition(|g| auth.authorize(operation, RESOURCE_TYPE_GROUP, g))
}

/// A DescribeGroups entry for a group the principal may not describe.
pub fn describe_groups_refused(group_id: String) -> describe_groups_response::DescribedGroup {
    describe_groups_response::DescribedGroup {
        group_id,
        error_code: ErrorCode::GroupAuthorizationFailed.code(),
        ..Default::default()
    }
}

/// Fills `authorized_operations` of the groups described without error (DescribeGroups v3+
/// and ConsumerGroupDescribe when asked).
pub fn fill_group_operations<'g>(
    auth: &RequestAuth,
    groups: impl Iterator<Item = (&'g str, &'g mut i32)>,
) {
    for (group_id, operations) in groups {
        *operations = auth.authorized_operations(RESOURCE_TYPE_GROUP, group_id);
    }
}

/// Kafka's last ConsumerGroupDescribe step (with an authorizer): a group whose members'
/// assignments name a topic the principal may not DESCRIBE is answered
/// TOPIC_AUTHORIZATION_FAILED, without its members.
pub fn hide_groups_with_hidden_topics(
    auth: &RequestAuth,
    groups: &mut [consumer_group_describe_response::DescribedGroup],
) {
    if !auth.is_enabled() {
        return;
    }
    let mut describe = auth.memo(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC);
    for group in groups {
        let hidden = group
            .members
            .iter()
            .flat_map(|m| [&m.assignment, &m.target_assignment])
            .flat_map(|a| &a.topic_partitions)
            .any(|tp| !describe.allowed(&tp.topic_name));
        if hidden {
            *group = consumer_group_describe_response::DescribedGroup {
                group_id: std::mem::take(&mut group.group_id),
                error_code: ErrorCode::TopicAuthorizationFailed.code(),
                error_message: Some(HIDDEN_TOPICS_MESSAGE.into()),
                members: Vec::new(),
                ..Default::default()
            };
        }
    }
}

/// ListGroups: every group with DESCRIBE on the cluster, else those the principal may
/// DESCRIBE.
pub fn filter_listed_groups(auth: &RequestAuth, response: &mut ListGroupsResponse) {
    if auth.authorize(
        OPERATION_DESCRIBE,
        RESOURCE_TYPE_CLUSTER,
        kraftd_controller::control::acl::CLUSTER_RESOURCE_NAME,
    ) {
        return;
    }
    response
        .groups
        .retain(|g| auth.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_GROUP, &g.group_id));
}

/// Partitions answered with `code` and no offset (OffsetFetch).
fn offset_fetch_error_topic(
    topic: &OffsetFetchRequestTopics,
    code: ErrorCode,
) -> OffsetFetchResponseTopics {
    OffsetFetchResponseTopics {
        name: topic.name.clone(),
        topic_id: topic.topic_id,
        partitions: topic
            .partition_indexes
            .iter()
            .map(|&partition_index| OffsetFetchResponsePartitions {
                partition_index,
                committed_offset: -1,
                committed_leader_epoch: -1,
                metadata: None,
                error_code: code.code(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Kafka's `OffsetFetchResponse.groupError` for a group the principal may not DESCRIBE:
/// the group's error (v2+), or v0–1, which carry no group error, the error on every
/// requested partition.
pub fn offset_fetch_group_refused(
    group: &OffsetFetchRequestGroup,
    version: i16,
) -> OffsetFetchResponseGroup {
    let code = ErrorCode::GroupAuthorizationFailed;
    OffsetFetchResponseGroup {
        group_id: group.group_id.clone(),
        error_code: code.code(),
        topics: if version < 2 {
            group
                .topics
                .iter()
                .flatten()
                .map(|t| offset_fetch_error_topic(t, code))
                .collect()
        } else {
            Vec::new()
        },
        ..Default::default()
    }
}

/// OffsetFetch's named topics without DESCRIBE, taken out of the group's request: their
/// answers (TOPIC_AUTHORIZATION_FAILED on each partition) for after the shard's.
pub fn take_undescribable_topics(
    auth: &RequestAuth,
    topics: &mut Vec<OffsetFetchRequestTopics>,
) -> Vec<OffsetFetchResponseTopics> {
    let mut describe = auth.memo(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC);
    let mut refused = Vec::new();
    topics.retain(|t| {
        let allowed = describe.allowed(&t.name);
        if !allowed {
            refused.push(offset_fetch_error_topic(
                t,
                ErrorCode::TopicAuthorizationFailed,
            ));
        }
        allowed
    });
    refused
}

/// An all-topics OffsetFetch answer without the topics the principal may not DESCRIBE.
pub fn retain_describable(auth: &RequestAuth, topics: &mut Vec<OffsetFetchResponseTopics>) {
    let mut describe = auth.memo(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC);
    topics.retain(|t| describe.allowed(&t.name));
}

#[cfg(test)]
mod tests;
