//! The share-group state APIs of `KafkaApis` (Kafka's `handleInitializeShareGroupStateRequest`,
//! `handleReadShareGroupStateRequest`, `handleWriteShareGroupStateRequest`,
//! `handleDeleteShareGroupStateRequest`, `handleReadShareGroupStateSummaryRequest`): brokers'
//! own requests (a share-partition leader's or group coordinator's persister), authorized by
//! CLUSTER_ACTION on the cluster, then run on this broker's share coordinator, which answers
//! NOT_COORDINATOR for share partitions whose `__share_group_state` partition it does not
//! lead (the sender's persister asks the right broker again).

use std::net::SocketAddr;
use std::sync::Arc;

use kraftd_controller::auth::RequestAuth;
use kraftd_controller::publisher::OPERATION_CLUSTER_ACTION;
use kraftd_protocol::error_response::error_response;
use kraftd_protocol::messages::RequestHeader;
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};

use super::apis_context::{request_context, BrokerApisContext};
use crate::share::state_api::ShareStateRequest;

/// The API keys these handlers serve.
pub const SHARE_STATE_API_KEYS: [ApiKey; 5] = [
    ApiKey::InitializeShareGroupState,
    ApiKey::ReadShareGroupState,
    ApiKey::WriteShareGroupState,
    ApiKey::DeleteShareGroupState,
    ApiKey::ReadShareGroupStateSummary,
];

/// One listener's view for the share state handlers.
#[derive(Debug)]
pub struct ShareStateApis<'a> {
    pub context: &'a Arc<BrokerApisContext>,
}

impl ShareStateApis<'_> {
    /// Answers one of [`SHARE_STATE_API_KEYS`], authorized as `auth`.
    pub async fn handle(
        &self,
        header: &RequestHeader,
        peer: SocketAddr,
        body: RequestBody,
        auth: &RequestAuth,
    ) -> ResponseBody {
        let allowed = auth.authorize_cluster(OPERATION_CLUSTER_ACTION);
        let ctx = request_context(header, peer);
        match body {
            RequestBody::InitializeShareGroupState(r) => {
                ResponseBody::InitializeShareGroupState(self.run(ctx, r, allowed).await)
            }
            RequestBody::ReadShareGroupState(r) => {
                ResponseBody::ReadShareGroupState(self.run(ctx, r, allowed).await)
            }
            RequestBody::WriteShareGroupState(r) => {
                ResponseBody::WriteShareGroupState(self.run(ctx, r, allowed).await)
            }
            RequestBody::DeleteShareGroupState(r) => {
                ResponseBody::DeleteShareGroupState(self.run(ctx, r, allowed).await)
            }
            RequestBody::ReadShareGroupStateSummary(r) => {
                ResponseBody::ReadShareGroupStateSummary(self.run(ctx, r, allowed).await)
            }
            other => {
                // The dispatcher sends only SHARE_STATE_API_KEYS here.
                debug_assert!(false, "{:?} is not a share state API", other.key());
                error_response(&other, ErrorCode::InvalidRequest)
                    .unwrap_or(ResponseBody::ReadShareGroupState(Default::default()))
            }
        }
    }

    /// The share coordinator's answer, unless the sender may not CLUSTER_ACTION.
    async fn run<R: ShareStateRequest>(
        &self,
        ctx: kraftd_coordinator::context::RequestContext,
        request: R,
        allowed: bool,
    ) -> R::Response {
        if let Some(refused) = refusal(&request, allowed) {
            return refused;
        }
        self.context
            .share_coordinator
            .state_call(ctx, request)
            .await
    }
}

/// The answer to a sender that may not CLUSTER_ACTION (Kafka's `toGlobalErrorResponse`:
/// every partition CLUSTER_AUTHORIZATION_FAILED); `None` when it may.
pub fn refusal<R: ShareStateRequest>(request: &R, allowed: bool) -> Option<R::Response> {
    let code = ErrorCode::ClusterAuthorizationFailed;
    (!allowed).then(|| request.fail_all(code, code.name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kraftd_controller::auth::AuthHelper;
    use kraftd_controller::control::acl::RESOURCE_TYPE_CLUSTER;
    use kraftd_controller::publisher::AuthorizerConfig;
    use kraftd_controller::testing::acls::{authorizer_with, TestAcl};
    use kraftd_net::KafkaPrincipal;
    use kraftd_protocol::messages::delete_share_group_state_request::{
        DeleteStateData, PartitionData,
    };
    use kraftd_protocol::messages::DeleteShareGroupStateRequest;
    use kraftd_protocol::Uuid;

    fn broker(acls: &[TestAcl]) -> RequestAuth {
        let authorizer = authorizer_with(AuthorizerConfig::default(), acls);
        AuthHelper::new(&authorizer)
            .request(&KafkaPrincipal::user("broker"), "10.0.0.1".parse().unwrap())
    }

    #[test]
    fn only_cluster_action_reaches_the_share_coordinator() {
        let request = DeleteShareGroupStateRequest {
            group_id: "g".into(),
            topics: vec![DeleteStateData {
                topic_id: Uuid([1; 16]),
                partitions: (0..2)
                    .map(|partition| PartitionData {
                        partition,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let nobody = broker(&[]);
        let refused = refusal(&request, nobody.authorize_cluster(OPERATION_CLUSTER_ACTION))
            .expect("refused without CLUSTER_ACTION");
        let codes: Vec<i16> = refused.results[0]
            .partitions
            .iter()
            .map(|p| p.error_code)
            .collect();
        assert_eq!(codes, vec![ErrorCode::ClusterAuthorizationFailed.code(); 2]);
        let allowed = broker(&[TestAcl::allow(
            RESOURCE_TYPE_CLUSTER,
            "kafka-cluster",
            "User:broker",
            OPERATION_CLUSTER_ACTION,
        )]);
        assert!(refusal(
            &request,
            allowed.authorize_cluster(OPERATION_CLUSTER_ACTION)
        )
        .is_none());
    }
}
