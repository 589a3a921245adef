//! The DescribeCluster answer (api key 60, v0-v2) a broker gives: cluster id, the brokers
//! with an endpoint on the request's listener, and a controller id clients can reach, as
//! Kafka's `KafkaApis.handleDescribeCluster` with `AuthHelper.computeDescribeClusterResponse`.
//!
//! Kafka's behaviours kept here:
//! - endpoint type 1 (brokers) is answered; 2 (controllers) sent to a broker gets
//!   MISMATCHED_ENDPOINT_TYPE, any other value UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST at
//!   v0, which cannot carry an endpoint type anyway), with Kafka's messages;
//! - brokers: every registered broker with the listener, fenced ones only when
//!   `include_fenced_brokers` (v2) asks, flagged `is_fenced`;
//! - `controller_id`: a random unfenced broker, -1 if that broker is not among the listed
//!   nodes (Kafka's "effective controller id");
//! - `cluster_authorized_operations` stays at Kafka's "not provided" value even when asked
//!   for (no authorizer here yet; see [`AUTHORIZED_OPERATIONS_OMITTED`]).

use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::describe_cluster_request::DescribeClusterRequest;
use kraftd_protocol::messages::describe_cluster_response::{
    DescribeClusterBroker, DescribeClusterResponse,
};
use kraftd_protocol::ErrorCode;

use super::{endpoint, random_alive_broker_id, BrokerContext, AUTHORIZED_OPERATIONS_OMITTED};

/// Kafka's `EndpointType.BROKER`.
pub const ENDPOINT_TYPE_BROKER: i8 = 1;
/// Kafka's `EndpointType.CONTROLLER`.
pub const ENDPOINT_TYPE_CONTROLLER: i8 = 2;

/// Answers a DescribeCluster request at `version` from `image`.
pub fn describe_cluster_response(
    image: &MetadataImage,
    request: &DescribeClusterRequest,
    version: i16,
    ctx: &BrokerContext<'_>,
) -> DescribeClusterResponse {
    let requested = request.endpoint_type;
    if requested != ENDPOINT_TYPE_BROKER {
        let (code, message) = if requested == ENDPOINT_TYPE_CONTROLLER {
            (
                ErrorCode::MismatchedEndpointType,
                "The request was sent to an endpoint of type BROKER, but we wanted an \
                 endpoint of type CONTROLLER"
                    .to_string(),
            )
        } else {
            (
                ErrorCode::UnsupportedEndpointType,
                format!("Unsupported endpoint type {requested}"),
            )
        };
        let code = if version == 0 {
            ErrorCode::InvalidRequest
        } else {
            code
        };
        return DescribeClusterResponse {
            error_code: code as i16,
            error_message: Some(message),
            ..Default::default()
        };
    }
    let include_fenced = version >= 2 && request.include_fenced_brokers;
    let brokers: Vec<DescribeClusterBroker> = image
        .cluster
        .brokers()
        .filter(|b| include_fenced || !b.fenced)
        .filter_map(|b| {
            endpoint(b, ctx.listener_name).map(|e| DescribeClusterBroker {
                broker_id: b.id,
                host: e.host.clone(),
                port: i32::from(e.port),
                rack: b.rack.clone(),
                is_fenced: b.fenced,
                unknown_tagged_fields: Vec::new(),
            })
        })
        .collect();
    let controller_id = random_alive_broker_id(image, ctx.controller_seed);
    let controller_id = if brokers.iter().any(|b| b.broker_id == controller_id) {
        controller_id
    } else {
        -1
    };
    DescribeClusterResponse {
        throttle_time_ms: 0,
        error_code: 0,
        error_message: None,
        endpoint_type: ENDPOINT_TYPE_BROKER,
        cluster_id: ctx.cluster_id.to_string(),
        controller_id,
        brokers,
        cluster_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        unknown_tagged_fields: Vec::new(),
    }
}
