//! The coordinators' tokio edge (Kafka's `coordinator-common` `CoordinatorRuntime` with
//! the services on it): a coordinator is a sans-IO state machine per partition of its
//! topic ([`kraftd_coordinator::shard::CoordinatorShard`]: what the runtime asks of a
//! shard, and what a shard hands back), and one runtime per coordinator owns those shards
//! on the partitions this broker leads.
//!
//! - [`runtime`]: the event loop (load, write, commit, timers, work);
//! - [`partition_writer`]: the shard's partition as `kraftd_coordinator`'s
//!   `PartitionWriter`, which the runtime appends through and loads shards over;
//! - [`publisher`]: leadership of the topic's partitions, from committed metadata;
//! - [`metrics`]: the coordinator's metrics group;
//! - [`service`]: a coordinator as the handlers call it (`CoordinatorService<S>`: which
//!   partition owns a key, calls into its shard), one generic service;
//! - [`group`]: what only the group coordinator adds (`GroupCoordinatorService`);
//! - [`share`]: what only the share coordinator adds (`ShareCoordinatorService`: a state
//!   request split by share partition, the answers merged);
//! - [`transaction`]: what only the transaction coordinator adds
//!   (`TransactionCoordinatorService`: its markers go to a `TransactionMarkerChannel`, the
//!   broker's being `server/txn_marker_channel.rs`).
//!
//! The protocol state machines are the sans-IO [`kraftd_coordinator::group`] and
//! [`kraftd_coordinator::transaction`]; the request handlers that shape each API's
//! versions are `server/group_apis.rs` and `server/txn_apis.rs`.

pub mod group;
pub mod metrics;
pub mod partition_writer;
pub mod publisher;
pub mod runtime;
pub mod service;
pub mod share;
pub mod transaction;

pub use group::GroupCoordinatorService;
pub use service::CoordinatorService;
pub use share::ShareCoordinatorService;
pub use transaction::TransactionCoordinatorService;
