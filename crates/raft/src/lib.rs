//! KIP-595 Raft for `__cluster_metadata`: a sans-IO core that a driver feeds with time,
//! inbound messages and proposals, and drains for messages to send, quorum-state writes,
//! flushes, committed batches, snapshots and leader changes. It behaves as Kafka 4.x's
//! `KafkaRaftClient` does (pre-vote, check-quorum, BeginQuorumEpoch/EndQuorumEpoch, Fetch
//! with diverging epochs and a purgatory, KIP-630 snapshots with FetchSnapshot, KIP-853
//! leader endpoints on a static quorum), speaks the generated Kafka messages of
//! `kraftd-protocol`, and fixes the observer routing of seed 003 (D1, D2).
//!
//! Module map:
//! - [`core`] — [`RaftCore`], the state machine, with its call order (its doc maps the
//!   handler files);
//!   - [`core::quorum_state`] — every role transition (with the transition table) and the
//!     durable `quorum-state` ([`QuorumStateData`]);
//!   - [`core::role`] — one type per role: Unattached, Prospective, Candidate, Leader,
//!     Follower, Resigned;
//!   - [`core::log`] — the [`RaftLog`] trait the driver implements over `crates/log`, and
//!     [`MemoryLog`] for tests and the simulator; its conformance check for any
//!     implementation is built with the cargo feature `testing`;
//!   - [`core::endpoints`] — KIP-853 leader endpoints, put into and learned from messages;
//!   - [`core::message`] — [`RaftMessage`], the wire versions, the topic name and id;
//!   - [`core::config`] — [`RaftConfig`] with Kafka's names and defaults;
//!   - [`core::rng`] — the seeded RNG (no ambient randomness).
//! - [`snapshot`] — the bytes of a metadata snapshot in Kafka's format (header, batches,
//!   footer), written and read without IO.
//!
//! The deterministic simulator lives in `tests/sim` (`cargo test -p kraftd-raft --test sim`;
//! `SIM_SEED=N` replays one seed of `random_seeds_hold_every_invariant_and_converge`,
//! `SIM_SEEDS=N` runs N seeds, `SIM_TRACE=1` prints role changes and crashes; or
//! `cargo xtask sim --seeds N`).
//!
//! At the edge, with tokio (over `kraftd-net`, the Kafka-protocol transport every role
//! shares):
//! - [`driver`] — `RaftDriver`: feeds a `RaftCore` over `MetadataLog` (the `RaftLog` on
//!   `crates/log`) with time and messages, persists the quorum state before acting on it,
//!   runs the leader's fsync off its loop, routes the controller listener's Raft requests
//!   (`RaftRequestRouter`), and exposes a `RaftHandle` (propose, atomic appends, resign,
//!   snapshots, subscribe to commits, snapshots and leader changes, metrics with Kafka's
//!   raft-metrics names); its doc maps its files.

pub mod core;
pub mod driver;
pub mod snapshot;

pub use crate::core::config::RaftConfig;
pub use crate::core::log::{LogError, MemoryLog, RaftLog};
pub use crate::core::message::{
    ApiKind, MessageDecodeError, RaftMessage, CLUSTER_METADATA_TOPIC, CLUSTER_METADATA_TOPIC_ID,
};
pub use crate::core::quorum_state::QuorumStateData;
pub use crate::core::{
    CommittedBatch, NotLeader, Output, ProposeError, RaftCore, RaftError, RaftStats, RoleName,
};
