//! kraftd's coordinators, sans IO (Kafka's `coordinator-common`, `group-coordinator` and
//! `transaction-coordinator` modules): deterministic state machines over one partition of
//! their topic each, driven by a runtime that owns the IO (the broker's
//! `kraftd_broker::coordinator`: loading, appending, the commit wait, timers' clock).
//!
//! - [`shard`] — the contract a coordinator's state machine meets ([`shard::CoordinatorShard`]:
//!   handle a request, replay a record, fire timers, hand back batches, replies and work);
//! - [`context`], [`timer`], [`partitioner`] — the vocabulary every coordinator shares: who
//!   sent a request, reply handles, the cluster's topics as a shard sees them, deadlines by
//!   key, and Kafka's key → partition mapping;
//! - [`config`] — reading a coordinator's settings from the broker's properties (the readers
//!   of Kafka's INT, LONG and SHORT keys with their validators, the error naming key and
//!   value), shared by the group and the transaction coordinator's configs;
//! - [`group`] — the group coordinator (classic and KIP-848 consumer groups, offsets);
//! - [`transaction`] — the transaction coordinator (KIP-98, KIP-890 transactions V2);
//! - [`writer`] — the log as a coordinator's runtime sees it (Kafka's `PartitionWriter`),
//!   [`writer::MemoryWriter`] and [`writer::load`], the loader over any writer; the cargo
//!   feature `testing` adds `testing`: the writer's conformance check and the replay check
//!   (a shard loaded from the log it wrote answers every read as the live shard does).
//!
//! The contract and the shared vocabulary know no coordinator; every coordinator knows the
//! contract, none knows the runtime. Nothing here reads a clock, spawns a task or touches a
//! file or socket: time, requests and records come in as arguments.

pub mod config;
pub mod context;
pub mod group;
pub mod partitioner;
pub mod shard;
pub mod share;
pub mod timer;
pub mod transaction;
pub mod writer;

#[cfg(any(test, feature = "testing"))]
pub mod testing;
