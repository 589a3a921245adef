//! The data plane (Kafka's `ReplicaManager` and what it owns): one [`partition::Partition`]
//! per hosted topic partition, each over a `kraftd_log::Log` under `log.dirs`
//! ([`log_manager`]); leaders append produced batches and answer fetches, followers pull
//! from their leader through the [`fetcher`]; the ISR moves through AlterPartition to the
//! controller. Every piece names a partition by its [`TopicIdPartition`].

pub mod alter_partition;
pub mod cordoned_log_dirs;
pub mod directory_events;
pub mod fetch_session;
pub mod fetch_session_handler;
pub mod fetcher;
pub mod log_cleaner;
pub mod partition;
pub mod replica_manager;
pub mod replication_quota;
mod topic_partition;

pub use self::topic_partition::TopicIdPartition;

/// Storage-side pieces live with the log store (the only crate that opens data files);
/// re-exported where Kafka's readers look for them.
pub use kraftd_log::{log_manager, producer_state};
