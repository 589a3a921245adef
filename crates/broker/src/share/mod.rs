//! Share groups (KIP-932) on the broker: the partition side (Kafka's `SharePartitionManager`,
//! `SharePartition`, `ShareSessionCache`) and the [`persister`] through which a share
//! partition's state reaches the share coordinator (`__share_group_state`): the
//! [`default_persister`] (Kafka's `DefaultStatePersister`) over the five state APIs, which
//! [`state_api`] sees as one shape.

pub mod default_persister;
pub mod persister;
pub mod state_api;

pub use default_persister::DefaultStatePersister;
pub use persister::Persister;
