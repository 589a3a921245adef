//! Share groups (KIP-932) on the broker: the partition side (Kafka's `SharePartitionManager`,
//! `SharePartition`, `ShareSessionCache`) and the [`persister`] through which a share
//! partition's state reaches the share coordinator (`__share_group_state`): the
//! [`default_persister`] (Kafka's `DefaultStatePersister`) over the five state APIs, which
//! [`state_api`] sees as one shape.

pub mod default_persister;
pub mod dlq;
pub mod local_read;
pub mod metrics;
pub mod persister;
pub mod share_group_config;
pub mod share_partition;
pub mod share_partition_manager;
pub mod share_session_cache;
pub mod state_api;

pub use default_persister::DefaultStatePersister;
pub use persister::Persister;
pub use share_partition::SharePartition;
pub use share_partition_manager::SharePartitionManager;
