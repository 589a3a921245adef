//! The streams-group APIs of `KafkaApis` (Kafka's `handleStreamsGroupHeartbeat`,
//! `handleStreamsGroupDescribe`, KIP-1071, and `handleStreamsGroupTopologyDescriptionUpdate`,
//! KIP-1331): served only while the cluster finalizes
//! `streams.version` >= 1 and `group.coordinator.rebalance.protocols` lists `streams` (Kafka's
//! `isStreamsGroupProtocolEnabled`; else they answer UNSUPPORTED_VERSION), authorized as Kafka authorizes them, each group's part sent to its
//! shard through the [`GroupCoordinatorService`](crate::coordinator). A heartbeat whose
//! topology misses internal topics has them created through the controller when the client
//! may CREATE them.
//!
//! Topology descriptions (KIP-1331) are stored by a broker plugin
//! (`group.streams.topology.description.plugin.class`, a Java class) that kraftd has no way to
//! load: it answers StreamsGroupTopologyDescriptionUpdate as Kafka 4.4.0 does without one
//! (UNSUPPORTED_VERSION, "no plugin configured"), and heartbeats never ask for a description.

use std::sync::Arc;

use kraftd_controller::auth::RequestAuth;
use kraftd_controller::control::acl::{OPERATION_READ, RESOURCE_TYPE_GROUP, RESOURCE_TYPE_TOPIC};
use kraftd_controller::control::topics::validate_topic_name;
use kraftd_controller::publisher::{OPERATION_CREATE, OPERATION_DESCRIBE};
use kraftd_controller::MetadataImage;
use kraftd_coordinator::group::streams::topology::status;
use kraftd_coordinator::group::{ShardRequest, ShardResponse};
use kraftd_protocol::messages::streams_group_describe_response::DescribedGroup;
use kraftd_protocol::messages::streams_group_heartbeat_response::Status;
use kraftd_protocol::messages::{
    RequestHeader, StreamsGroupDescribeRequest, StreamsGroupDescribeResponse,
    StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
    StreamsGroupTopologyDescriptionUpdateResponse,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};

use super::apis_context::{request_context, BrokerApisContext};
use super::group_apis::GroupApis;
use super::internal_topics::InternalTopics;
use crate::kafka_apis::metadata::is_internal_topic;

pub use kraftd_protocol::features::STREAMS_VERSION_FEATURE;

/// The API keys these handlers serve.
pub const STREAMS_GROUP_API_KEYS: [ApiKey; 3] = [
    ApiKey::StreamsGroupHeartbeat,
    ApiKey::StreamsGroupDescribe,
    ApiKey::StreamsGroupTopologyDescriptionUpdate,
];

/// Whether the cluster finalizes streams groups: `streams.version` at 1 or more (Kafka's
/// `StreamsVersion.streamsGroupSupported`).
pub fn streams_groups_enabled(image: &MetadataImage) -> bool {
    image.features.level(STREAMS_VERSION_FEATURE) >= 1
}

/// One listener's view for the streams-group handlers.
#[derive(Debug)]
pub struct StreamsGroupApis<'a> {
    pub context: &'a Arc<BrokerApisContext>,
    pub listener: &'a str,
}

impl StreamsGroupApis<'_> {
    /// Answers one of [`STREAMS_GROUP_API_KEYS`].
    pub async fn handle(
        &self,
        header: &RequestHeader,
        peer: std::net::SocketAddr,
        body: RequestBody,
        auth: &RequestAuth,
    ) -> ResponseBody {
        // Kafka's `isStreamsGroupProtocolEnabled`: the feature, and `streams` among this
        // broker's `group.coordinator.rebalance.protocols`.
        let enabled = streams_groups_enabled(&self.context.cache.image())
            && self
                .context
                .group_coordinator
                .config()
                .rebalance_protocol_enabled("streams");
        let ctx = request_context(header, peer);
        match body {
            RequestBody::StreamsGroupHeartbeat(r) => {
                ResponseBody::StreamsGroupHeartbeat(self.heartbeat(enabled, ctx, r, auth).await)
            }
            RequestBody::StreamsGroupDescribe(r) => {
                ResponseBody::StreamsGroupDescribe(self.describe(enabled, ctx, r, auth).await)
            }
            RequestBody::StreamsGroupTopologyDescriptionUpdate(r) => {
                // Kafka's order: the feature, READ on the group, then the plugin's absence.
                let (code, message) = if !enabled {
                    (ErrorCode::UnsupportedVersion, None)
                } else if !auth.authorize(OPERATION_READ, RESOURCE_TYPE_GROUP, &r.group_id) {
                    (ErrorCode::GroupAuthorizationFailed, None)
                } else {
                    (
                        ErrorCode::UnsupportedVersion,
                        Some(
                            "The broker has no streams group topology description plugin configured."
                                .to_string(),
                        ),
                    )
                };
                ResponseBody::StreamsGroupTopologyDescriptionUpdate(
                    StreamsGroupTopologyDescriptionUpdateResponse {
                        error_code: code.code(),
                        error_message: message,
                        ..Default::default()
                    },
                )
            }
            other => kraftd_protocol::error_response::error_response(
                &other,
                ErrorCode::UnsupportedVersion,
            )
            .expect("a streams-group API has an error response"),
        }
    }

    async fn heartbeat(
        &self,
        enabled: bool,
        ctx: kraftd_coordinator::context::RequestContext,
        r: StreamsGroupHeartbeatRequest,
        auth: &RequestAuth,
    ) -> StreamsGroupHeartbeatResponse {
        let refuse = |code: ErrorCode, message: Option<String>| StreamsGroupHeartbeatResponse {
            error_code: code.code(),
            error_message: message,
            ..Default::default()
        };
        if !enabled {
            return refuse(ErrorCode::UnsupportedVersion, None);
        }
        if !auth.authorize(OPERATION_READ, RESOURCE_TYPE_GROUP, &r.group_id) {
            return refuse(ErrorCode::GroupAuthorizationFailed, None);
        }
        if let Some(t) = &r.topology {
            let mut required: Vec<&str> = Vec::new();
            for s in &t.subtopologies {
                required.extend(s.source_topics.iter().map(String::as_str));
                required.extend(s.repartition_sink_topics.iter().map(String::as_str));
                required.extend(s.repartition_source_topics.iter().map(|i| i.name.as_str()));
                required.extend(s.state_changelog_topics.iter().map(|i| i.name.as_str()));
            }
            required.sort_unstable();
            required.dedup();
            let prohibited: Vec<&str> = required
                .iter()
                .copied()
                .filter(|t| is_internal_topic(t))
                .collect();
            if !prohibited.is_empty() {
                return refuse(
                    ErrorCode::StreamsInvalidTopology,
                    Some(format!(
                        "Use of Kafka internal topics {} in a Kafka Streams topology is prohibited.",
                        prohibited.join(",")
                    )),
                );
            }
            let invalid: Vec<&str> = required
                .iter()
                .copied()
                .filter(|t| validate_topic_name(t).is_err())
                .collect();
            if !invalid.is_empty() {
                return refuse(
                    ErrorCode::StreamsInvalidTopology,
                    Some(format!(
                        "Topic names {} are not valid topic names.",
                        invalid.join(",")
                    )),
                );
            }
            if required
                .iter()
                .any(|t| !auth.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC, t))
            {
                return refuse(ErrorCode::TopicAuthorizationFailed, None);
            }
        }
        let group_id = r.group_id.clone();
        let result = match self
            .context
            .group_coordinator
            .call(&group_id, ctx, ShardRequest::StreamsGroupHeartbeat(r))
            .await
        {
            Ok(ShardResponse::StreamsGroupHeartbeat(result)) => result,
            Ok(_) => return refuse(ErrorCode::UnknownServerError, None),
            Err(code) => return refuse(code, None),
        };
        let mut response = result.response;
        let topics = result.topics_to_create;
        if !topics.is_empty() {
            let unauthorized: Vec<String> = if auth.authorize_cluster(OPERATION_CREATE) {
                Vec::new()
            } else {
                topics
                    .iter()
                    .filter(|t| !auth.authorize(OPERATION_CREATE, RESOURCE_TYPE_TOPIC, &t.name))
                    .map(|t| t.name.clone())
                    .collect()
            };
            if unauthorized.is_empty() {
                InternalTopics::create_streams_internal_topics(self.context, topics);
            } else {
                let note = format!(
                    "Unauthorized to CREATE on topics {}.",
                    unauthorized.join(", ")
                );
                let statuses = response.status.get_or_insert_with(Vec::new);
                match statuses
                    .iter_mut()
                    .find(|s| s.status_code == status::MISSING_INTERNAL_TOPICS)
                {
                    Some(s) => s.status_detail = format!("{}; {note}", s.status_detail),
                    None => statuses.push(Status {
                        status_code: status::MISSING_INTERNAL_TOPICS,
                        status_detail: note,
                        ..Default::default()
                    }),
                }
            }
        }
        response
    }

    async fn describe(
        &self,
        enabled: bool,
        ctx: kraftd_coordinator::context::RequestContext,
        r: StreamsGroupDescribeRequest,
        auth: &RequestAuth,
    ) -> StreamsGroupDescribeResponse {
        let entry = |group_id: String, code: ErrorCode| DescribedGroup {
            group_id,
            error_code: code.code(),
            authorized_operations: i32::MIN,
            ..Default::default()
        };
        if !enabled {
            return StreamsGroupDescribeResponse {
                groups: r
                    .group_ids
                    .into_iter()
                    .map(|g| entry(g, ErrorCode::UnsupportedVersion))
                    .collect(),
                ..Default::default()
            };
        }
        let apis = GroupApis {
            context: self.context,
            listener: self.listener,
        };
        let groups = apis
            .describe_groups(
                &ctx,
                auth,
                r.group_ids,
                r.include_authorized_operations,
                ShardRequest::StreamsGroupDescribe,
                |answer| match answer {
                    ShardResponse::StreamsGroupDescribe(g) => Some(g),
                    _ => None,
                },
            )
            .await;
        StreamsGroupDescribeResponse {
            groups,
            ..Default::default()
        }
    }
}
