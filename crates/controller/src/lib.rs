//! The QuorumController and its control managers, the immutable MetadataImage and the
//! MetadataDelta that replays Kafka's metadata records, and the publishers (DynamicConfig,
//! SCRAM, ACL) shared by controller nodes and the broker's MetadataLoader.
//!
//! Empty until the controller issue lands; nothing here yet.
