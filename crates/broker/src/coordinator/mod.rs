//! The coordinators' tokio edge (Kafka's `coordinator-common` `CoordinatorRuntime` with
//! the services on it): a coordinator is a sans-IO state machine per partition of its
//! topic ([`kraftd_coordinator::shard::CoordinatorShard`]: what the runtime asks of a
//! shard, and what a shard hands back), and one runtime per coordinator owns those shards
//! on the partitions this broker leads.
//!
//! - [`runtime`]: the event loop (load, write, commit, timers, work);
//! - [`loader`]: replaying a partition's log into a shard;
//! - [`publisher`]: leadership of the topic's partitions, from committed metadata;
//! - [`metrics`]: the coordinator's metrics group;
//! - [`group`]: the group coordinator on it (`GroupCoordinatorService`);
//! - [`transaction`]: the transaction coordinator on it (`TransactionCoordinatorService`).
//!
//! The protocol state machines are the sans-IO [`kraftd_coordinator::group`] and
//! [`kraftd_coordinator::transaction`]; the request
//! handlers that shape each API's versions are `server/group_apis.rs`.

pub mod group;
pub mod loader;
pub mod metrics;
pub mod publisher;
pub mod runtime;
pub mod transaction;

pub use group::GroupCoordinatorService;
