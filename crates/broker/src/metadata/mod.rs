//! The broker's side of the metadata log: the MetadataLoader (Raft observer listener that
//! builds deltas and images and feeds the publishers once caught up) and the MetadataCache
//! the request handlers read.
//!
//! Split in three so each piece can be read alone: [`loader`] decides what reaches the
//! publishers and when, [`cache`] answers the request handlers' questions over one image,
//! and [`metrics`] is what other tasks (the `/metrics` endpoint, the lifecycle manager) read
//! of the loader's progress without touching the loader.

pub mod cache;
pub mod loader;
pub mod metrics;

pub use cache::{BrokerNode, MetadataCache, MetadataView, PartitionMetadata};
pub use loader::{MetadataApplyError, MetadataLoadError, MetadataLoader};
pub use metrics::{AppliedProvenance, BrokerMetadataMetricValues, BrokerMetadataMetrics};
