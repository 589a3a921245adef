//! The coordinators' tokio edge (Kafka's `coordinator-common` `CoordinatorRuntime` with
//! the services on it): a coordinator is a sans-IO state machine per partition of its
//! topic ([`shard::CoordinatorShard`]), and one runtime per coordinator owns those shards on
//! the partitions this broker leads.
//!
//! - [`shard`]: what the runtime asks of a shard, and what a shard hands back;
//! - [`runtime`]: the event loop (load, write, commit, timers, work);
//! - [`loader`]: replaying a partition's log into a shard;
//! - [`publisher`]: leadership of the topic's partitions, from committed metadata;
//! - [`metrics`]: the coordinator's metrics group;
//! - [`group`]: the group coordinator on it (`GroupCoordinatorService`).
//!
//! The protocol state machines are the sans-IO [`crate::group_coordinator`]; the request
//! handlers that shape each API's versions are `server/group_apis.rs`.

pub mod group;
pub mod loader;
pub mod metrics;
pub mod publisher;
pub mod runtime;
pub mod shard;
pub mod transaction;

pub use group::GroupCoordinatorService;
