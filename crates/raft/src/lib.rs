//! KIP-595 Raft for `__cluster_metadata`: a sans-IO core (QuorumState and one type per role:
//! Unattached, Prospective, Candidate, Leader, Follower, Resigned) driven by a tokio driver that
//! also owns the Kafka-protocol transport (TCP server and client channel) reused by the
//! controller and broker.
//!
//! Empty until the Raft issue lands; nothing here yet.
