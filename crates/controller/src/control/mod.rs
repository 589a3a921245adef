//! The pure control managers of the QuorumController, as Kafka's
//! `org.apache.kafka.controller` package: each reads a [`MetadataImage`](crate::MetadataImage)
//! and returns a [`ControllerResult`] (records plus the response) and changes nothing; state
//! changes only when the records are replayed through a [`MetadataDelta`](crate::MetadataDelta).
//!
//! - [`result`]: the `ControllerResult` type.
//! - [`partition_change`]: `PartitionChangeBuilder`, leader election and KIP-966 ELR rules.
//! - [`replication`]: `ReplicationControlManager`, the partition side: AlterPartition,
//!   reactions to broker fencing, unfencing and shutdown, ElectLeaders.
//! - [`cluster`]: `ClusterControlManager` and `BrokerHeartbeatManager`: registration,
//!   heartbeats, session expiry.

pub mod cluster;
pub mod partition_change;
pub mod replication;
pub mod result;

pub use cluster::{
    BrokerControlState, BrokerHeartbeatManager, ClusterControlConfig, ClusterControlManager,
    BROKER_SESSION_TIMEOUT_MS_DEFAULT,
};
pub use partition_change::{change_record_is_no_op, Election, PartitionChangeBuilder};
pub use replication::{ReplicationConfig, ReplicationControlManager};
pub use result::ControllerResult;
