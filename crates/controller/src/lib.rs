//! The QuorumController and its control managers, the immutable `MetadataImage` and the
//! `MetadataDelta` that replays Kafka's metadata records, and the publishers (DynamicConfig,
//! SCRAM, ACL) shared by controller nodes and the broker's MetadataLoader.
//!
//! Request authorization ([`auth`]) is shared by the controller's listener and the broker.
//!
//! So far: the image and the delta, the one replay path every node uses, and the pure
//! control managers ([`control`]): brokers, partitions, topics and placement, configs, SCRAM,
//! ACLs, features, producer ids and client quotas; and the sans-IO [`quorum_controller`]
//! that queues operations, runs the managers against the latest (uncommitted) image, proposes
//! their records through a narrow Raft interface and replies only once they commit. Wiring
//! it to the Raft driver, snapshots and the publishers come next.

pub mod auth;
pub mod config_helper;
pub mod control;
pub mod image;
pub mod metrics;
pub mod node;
pub mod publisher;
pub mod quorum_controller;
pub mod quota;
pub mod snapshot;
#[cfg(feature = "testing")]
pub mod testing;

pub use control::ControllerResult;
pub use image::delta::{DeltaChanges, MetadataDelta, ReplayError, ReplayErrorKind};
pub use image::MetadataImage;
pub use publisher::MetadataPublisher;
