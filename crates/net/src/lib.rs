//! The Kafka-protocol transport over tokio, shared by the Raft driver, the controller (its
//! listener), the broker (its client listeners, the replica fetcher and the controller
//! channel) and the CLI's `metadata-quorum` tool: a TCP [`server`] that frames, decodes and
//! answers requests in order with bounded in-flight work and a connection cap, and a
//! [`client`] channel, one connection per destination, with correlation ids, request
//! timeouts and reconnect backoff; [`tls`], [`sasl`] and the [`security`] of a listener and
//! its sessions; the [`request_metrics`] every listener records; and the [`ordering`] of a
//! connection's requests. Both speak only through `kraftd-protocol`'s codecs (its only
//! kraftd dependency); nothing here knows Raft, the controller or the broker: a SASL/SCRAM
//! listener reads credentials through [`sasl::ScramCredentialLookup`], which the controller's
//! SCRAM store implements.

pub mod client;
pub mod connection_quotas;
mod frame;
pub mod ordering;
mod principal;
pub mod request_metrics;
pub mod sasl;
pub mod security;
pub mod server;
pub mod stats;
pub mod tls;

pub use client::{Channel, ClientConfig, ClientError, ReplyFn};
pub use ordering::{mark_sequenced, run_until_sequenced};
pub use request_metrics::{mark_local_complete, RequestMetrics, RequestTimer};
pub use security::{
    ChannelMute, ClientInformation, ClientSecurity, KafkaPrincipal, ListenerSecurity,
    SecurityProtocol, Session,
};
pub use server::{serve, ApiVersionsFeatures, InboundRequest, RequestHandler, ServerConfig};
