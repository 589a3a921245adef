//! The data plane (Kafka's `ReplicaManager` and what it owns): one [`partition::Partition`]
//! per hosted topic partition, each over a `kraftd_log::Log` under `log.dirs`
//! ([`log_manager`]); leaders append produced batches and answer fetches, followers pull
//! from their leader through the [`fetcher`]; the ISR moves through AlterPartition to the
//! controller.

pub mod fetch_session;
pub mod fetcher;
pub mod log_manager;
pub mod partition;
pub mod producer_state;
pub mod replica_manager;
