//! The pure control managers of the QuorumController, as Kafka's
//! `org.apache.kafka.controller` package: each reads a [`MetadataImage`](crate::MetadataImage)
//! and returns a [`ControllerResult`] (records plus the response) and changes nothing; state
//! changes only when the records are replayed through a [`MetadataDelta`](crate::MetadataDelta).
//!
//! - [`result`]: the `ControllerResult` type and `MAX_RECORDS_PER_BATCH`, the most records a
//!   non-atomic result puts in one batch.
//! - [`partition_change`]: `PartitionChangeBuilder`, leader election and KIP-966 ELR rules.
//! - [`replication`]: `ReplicationControlManager`, the partition side: AlterPartition,
//!   reactions to broker fencing, unfencing and shutdown, ElectLeaders; KIP-858's
//!   AssignReplicasToDirs and offline log dirs (`replication/directories.rs`).
//! - [`reassignment`]: AlterPartitionReassignments, ListPartitionReassignments (KIP-455).
//! - [`cluster`]: `ClusterControlManager` and `BrokerHeartbeatManager`: registration,
//!   heartbeats, session expiry.
//! - [`topics`]: `TopicControlManager`: CreateTopics, DeleteTopics, CreatePartitions.
//! - [`placement`]: rack-aware striped replica placement over unfenced brokers.
//! - [`configuration`]: `ConfigurationControlManager`: IncrementalAlterConfigs, AlterConfigs.
//! - [`scram`]: `ScramControlManager`: AlterUserScramCredentials, DescribeUserScramCredentials.
//! - [`acl`]: `AclControlManager`: CreateAcls, DeleteAcls, DescribeAcls.
//! - [`producer_ids`]: `ProducerIdControlManager`: AllocateProducerIds in blocks of 1000.
//! - [`quotas`]: `ClientQuotaControlManager`: AlterClientQuotas, DescribeClientQuotas.
//! - [`features`]: `FeatureControlManager`: UpdateFeatures.
//! - [`config_defs`]: the known topic and broker config keys with Kafka's names and types.
//! - [`security_configs`], [`security_checks`]: the broker security config keys, listener
//!   prefixes, update modes and the SASL mechanisms kraftd refuses.

pub mod acl;
pub mod cluster;
pub mod config_defs;
pub mod config_support;
pub mod configuration;
pub mod controller_registration;
pub mod delegation_tokens;
pub mod features;
pub mod partition_change;
pub mod placement;
pub mod producer_ids;
pub mod quotas;
pub mod reassignment;
pub mod replication;
pub mod result;
pub mod scram;
pub mod security_checks;
pub mod security_configs;
pub mod topics;

pub use acl::{AclControlManager, AclFilter};
pub use cluster::{
    BrokerControlState, BrokerHeartbeatManager, ClusterControlConfig, ClusterControlManager,
    BROKER_SESSION_TIMEOUT_MS_DEFAULT,
};
pub use configuration::{apply_config_ops, ConfigurationControlManager};
pub use delegation_tokens::{DelegationTokenConfig, DelegationTokenControlManager};
pub use features::{FeatureControlConfig, FeatureControlManager};
pub use partition_change::{change_record_is_no_op, Election, PartitionChangeBuilder};
pub use placement::{PlacementError, PlacementSeed, UsableBroker};
pub use producer_ids::{ProducerIdControlManager, PRODUCER_ID_BLOCK_SIZE};
pub use quotas::ClientQuotaControlManager;
pub use replication::{Members, ReplicationConfig, ReplicationControlManager};
pub use result::{ControllerResult, MAX_RECORDS_PER_BATCH};
pub use scram::ScramControlManager;
pub use topics::{TopicConfig, TopicControlManager};
