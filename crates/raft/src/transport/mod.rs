//! The Kafka-protocol transport over tokio, shared by the Raft driver and (later) the
//! controller and broker: a TCP [`server`] that frames, decodes and answers requests in
//! order with bounded in-flight work and a connection cap, and a [`client`] channel, one
//! connection per destination, with correlation ids, request timeouts and reconnect
//! backoff. Both speak only through `kraftd-protocol`'s codecs; nothing here knows Raft.

pub mod client;
pub mod server;

pub use client::{Channel, ClientConfig, ClientError, ReplyFn};
pub use server::{serve, InboundRequest, RequestHandler, ServerConfig};
