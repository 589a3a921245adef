//! The share-group APIs of `KafkaApis` on the group coordinator (Kafka's
//! `handleShareGroupHeartbeat`, `handleShareGroupDescribe`; the offsets admin APIs are
//! `share_group_offsets.rs`): served only while the
//! cluster finalizes `share.version` >= 1 (Kafka's `isShareGroupProtocolEnabled`; below it
//! they answer UNSUPPORTED_VERSION), authorized as Kafka authorizes them, each group's part
//! sent to its shard through the [`GroupCoordinatorService`].

use std::sync::Arc;

use kraftd_controller::auth::RequestAuth;
use kraftd_controller::control::acl::{OPERATION_READ, RESOURCE_TYPE_GROUP, RESOURCE_TYPE_TOPIC};
use kraftd_controller::publisher::OPERATION_DESCRIBE;
use kraftd_controller::MetadataImage;
use kraftd_coordinator::group::{ShardRequest, ShardResponse};
use kraftd_protocol::messages::share_group_describe_response::DescribedGroup;
use kraftd_protocol::messages::{
    RequestHeader, ShareGroupDescribeRequest, ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};

use super::apis_context::{request_context, BrokerApisContext};
use super::group_apis::GroupApis;

pub use kraftd_protocol::features::SHARE_VERSION_FEATURE;

/// The API keys these handlers serve.
pub const SHARE_GROUP_API_KEYS: [ApiKey; 5] = [
    ApiKey::ShareGroupHeartbeat,
    ApiKey::ShareGroupDescribe,
    ApiKey::DescribeShareGroupOffsets,
    ApiKey::AlterShareGroupOffsets,
    ApiKey::DeleteShareGroupOffsets,
];

/// The longest member id a share member may send: a UUID's printed length (Kafka's
/// `isMemberIdValid`), as share partitions key their locks by it.
pub const MAX_MEMBER_ID_LENGTH: usize = 36;

/// Whether the cluster serves share groups: `share.version` finalized at 1 or more
/// (Kafka's `ShareVersion.supportsShareGroups`).
pub fn share_groups_enabled(image: &MetadataImage) -> bool {
    image.features.level(SHARE_VERSION_FEATURE) >= 1
}

/// One listener's view for the share-group handlers.
#[derive(Debug)]
pub struct ShareGroupApis<'a> {
    pub context: &'a Arc<BrokerApisContext>,
    pub listener: &'a str,
}

impl ShareGroupApis<'_> {
    /// Answers one of [`SHARE_GROUP_API_KEYS`].
    pub async fn handle(
        &self,
        header: &RequestHeader,
        peer: std::net::SocketAddr,
        body: RequestBody,
        auth: &RequestAuth,
    ) -> ResponseBody {
        let enabled = share_groups_enabled(&self.context.cache.image());
        let ctx = request_context(header, peer);
        match body {
            RequestBody::ShareGroupHeartbeat(r) => {
                ResponseBody::ShareGroupHeartbeat(self.heartbeat(enabled, ctx, r, auth).await)
            }
            RequestBody::ShareGroupDescribe(r) => {
                ResponseBody::ShareGroupDescribe(self.describe(enabled, ctx, r, auth).await)
            }
            RequestBody::DescribeShareGroupOffsets(r) => ResponseBody::DescribeShareGroupOffsets(
                self.describe_offsets(enabled, ctx, r, auth).await,
            ),
            RequestBody::AlterShareGroupOffsets(r) => ResponseBody::AlterShareGroupOffsets(
                self.alter_offsets(enabled, ctx, r, auth).await,
            ),
            RequestBody::DeleteShareGroupOffsets(r) => ResponseBody::DeleteShareGroupOffsets(
                self.delete_offsets(enabled, ctx, r, auth).await,
            ),
            other => kraftd_protocol::error_response::error_response(
                &other,
                ErrorCode::UnsupportedVersion,
            )
            .expect("a share-group API has an error response"),
        }
    }

    async fn heartbeat(
        &self,
        enabled: bool,
        ctx: kraftd_coordinator::context::RequestContext,
        r: ShareGroupHeartbeatRequest,
        auth: &RequestAuth,
    ) -> ShareGroupHeartbeatResponse {
        let refuse = |code: ErrorCode, message: Option<String>| ShareGroupHeartbeatResponse {
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
        if r.member_id.is_empty() || r.member_id.chars().count() > MAX_MEMBER_ID_LENGTH {
            return refuse(
                ErrorCode::InvalidRequest,
                Some("Invalid member id in the request.".into()),
            );
        }
        // Clients may not learn of topics they may not DESCRIBE.
        if let Some(topics) = &r.subscribed_topic_names {
            if topics
                .iter()
                .any(|t| !auth.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC, t))
            {
                return refuse(ErrorCode::TopicAuthorizationFailed, None);
            }
        }
        let group_id = r.group_id.clone();
        match self
            .context
            .group_coordinator
            .call(&group_id, ctx, ShardRequest::ShareGroupHeartbeat(r))
            .await
        {
            Ok(ShardResponse::ShareGroupHeartbeat(resp)) => resp,
            Ok(_) => refuse(ErrorCode::UnknownServerError, None),
            Err(code) => refuse(code, None),
        }
    }

    async fn describe(
        &self,
        enabled: bool,
        ctx: kraftd_coordinator::context::RequestContext,
        r: ShareGroupDescribeRequest,
        auth: &RequestAuth,
    ) -> ShareGroupDescribeResponse {
        let entry = |group_id: String, code: ErrorCode| DescribedGroup {
            group_id,
            error_code: code.code(),
            authorized_operations: i32::MIN,
            ..Default::default()
        };
        if !enabled {
            return ShareGroupDescribeResponse {
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
        let mut groups = apis
            .describe_groups(
                &ctx,
                auth,
                r.group_ids,
                r.include_authorized_operations,
                ShardRequest::ShareGroupDescribe,
                |answer| match answer {
                    ShardResponse::ShareGroupDescribe(g) => Some(g),
                    _ => None,
                },
            )
            .await;
        // Kafka's last step with an authorizer: a group whose members hold a topic the
        // principal may not DESCRIBE is answered without its members.
        if auth.is_enabled() {
            let mut describe = auth.memo(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC);
            for g in &mut groups {
                let hidden = g
                    .members
                    .iter()
                    .flat_map(|m| &m.assignment.topic_partitions)
                    .any(|tp| !describe.allowed(&tp.topic_name));
                if hidden {
                    *g = DescribedGroup {
                        error_message: Some(
                            "The group has described topic(s) that the client is not authorized to describe."
                                .into(),
                        ),
                        ..entry(std::mem::take(&mut g.group_id), ErrorCode::TopicAuthorizationFailed)
                    };
                }
            }
        }
        ShareGroupDescribeResponse {
            groups,
            ..Default::default()
        }
    }
}
