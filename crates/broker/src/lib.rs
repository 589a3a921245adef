//! The broker role (Kafka's `BrokerServer` and what it runs):
//! - [`metadata`]: the MetadataLoader following the metadata log and the MetadataCache the
//!   request handlers read;
//! - [`kafka_apis`]: answers built from one metadata image (Metadata, DescribeCluster,
//!   DescribeConfigs);
//! - [`replica`]: the data plane — the ReplicaManager, its partitions, the replica fetcher
//!   and KIP-227 fetch sessions;
//! - [`server`]: the tokio edge — KafkaApis per listener (with the data-plane, group and
//!   transaction requests), the BrokerLifecycleManager, the ForwardingManager, the
//!   AlterPartition and producer-id managers;
//! - [`coordinator`]: the runtime that owns the coordinators' sans-IO state machines
//!   (`kraftd-coordinator`: one per partition of `__consumer_offsets` /
//!   `__transaction_state`) on the partitions this broker leads, and the services the
//!   request handlers call;
//! - [`client_metrics`]: client telemetry (KIP-714): subscriptions, GetTelemetrySubscriptions
//!   and PushTelemetry, and the pushed metrics kept for `/metrics`;
//! - [`share`]: share groups (KIP-932) on the partition leaders and the persister through
//!   which they reach the share coordinator.

pub mod client_metrics;
pub mod coordinator;
pub mod kafka_apis;
pub mod metadata;
pub mod replica;
pub mod server;
pub mod share;
