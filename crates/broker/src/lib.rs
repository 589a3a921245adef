//! The broker role: SocketServer, KafkaApis, MetadataLoader and MetadataCache,
//! ReplicaManager, BrokerLifecycleManager, ForwardingManager and the coordinators.
//!
//! Empty until the broker issue lands; nothing here yet.
