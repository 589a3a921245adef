//! The `testing` module's own tests: the
//! `PartitionWriter` contract and the replay check — a shard loaded from the log it wrote
//! answers every read as the live shard does — for both coordinators, over seeded random
//! clients and hand-written scenarios.

mod group_replay;
mod txn_replay;
mod writer;
