//! The broker role: SocketServer, KafkaApis, MetadataLoader and MetadataCache,
//! ReplicaManager, BrokerLifecycleManager, ForwardingManager and the coordinators.
//!
//! Being built (issue 6): `metadata` (MetadataLoader, MetadataCache) and `kafka_apis` (the
//! answers built from metadata) come first.

pub mod kafka_apis;
pub mod metadata;
pub mod replica;
pub mod server;
