//! The client telemetry requests (KIP-714), GetTelemetrySubscriptions and PushTelemetry,
//! handed to the broker's [`ClientMetricsManager`] with what the broker knows of the
//! client (Kafka's `KafkaApis.handleGetTelemetrySubscriptionsRequest` and
//! `handlePushTelemetryRequest`: no authorization). Kafka serves them only with a
//! telemetry reporter plugin configured; kraftd's receiver is always there, so a broker
//! listener always advertises them.

use std::net::SocketAddr;

use kraftd_net::Session;
use kraftd_protocol::messages::RequestHeader;
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody};

use super::apis_context::BrokerApisContext;
use crate::client_metrics::{ClientInfo, ClientMetricsManager};

/// The APIs served here.
pub const TELEMETRY_API_KEYS: [ApiKey; 2] =
    [ApiKey::GetTelemetrySubscriptions, ApiKey::PushTelemetry];

/// Kafka's connection id for a client's connection on `listener`: the peer is unique among
/// a listener's live connections (the share sessions use the same).
pub fn connection_id(listener: &str, peer: SocketAddr) -> String {
    format!("{listener}-{peer}")
}

/// Answers one telemetry request.
pub fn handle(
    context: &BrokerApisContext,
    listener: &str,
    header: &RequestHeader,
    session: &Session,
    peer: SocketAddr,
    body: RequestBody,
) -> Option<ResponseBody> {
    let manager: &ClientMetricsManager = &context.client_metrics;
    let client = ClientInfo {
        client_id: header.client_id.clone().unwrap_or_default(),
        software_name: session.client_information.software_name.clone(),
        software_version: session.client_information.software_version.clone(),
        source_address: peer.ip().to_string(),
        source_port: peer.port().to_string(),
        connection_id: connection_id(listener, peer),
    };
    let image = context.cache.image();
    let now_ms = u64::try_from(kraftd_log::clock::unix_ms()).unwrap_or(0);
    match body {
        RequestBody::GetTelemetrySubscriptions(r) => Some(ResponseBody::GetTelemetrySubscriptions(
            manager.get_telemetry_subscriptions(&image, now_ms, &client, &r, &mut || {
                super::random_uuid()
            }),
        )),
        RequestBody::PushTelemetry(r) => Some(ResponseBody::PushTelemetry(
            manager.push_telemetry(&image, now_ms, &client, &r),
        )),
        _ => None,
    }
}
