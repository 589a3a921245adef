//! The QuorumController and its control managers, the immutable `MetadataImage` and the
//! `MetadataDelta` that replays Kafka's metadata records, and the publishers (DynamicConfig,
//! SCRAM, ACL) shared by controller nodes and the broker's MetadataLoader.
//!
//! So far: the image and the delta, the one replay path every node uses (issue 5, part 1),
//! and the pure control managers for brokers and partitions ([`control`]).

pub mod control;
pub mod delta;
pub mod image;

pub use control::ControllerResult;
pub use delta::{DeltaChanges, MetadataDelta, ReplayError, ReplayErrorKind};
pub use image::MetadataImage;
