//! The controller simulator: the Raft simulator of `crates/raft/tests/sim` (reused, not
//! copied) with a `QuorumController` on every voter, random controller operations from
//! seeded clients and brokers, and the harness's faults (message loss, duplication and
//! delay, partitions, crashes and restarts, leader failovers). After healing, every
//! controller's image is identical and equal to a replay of the committed log from
//! scratch; no acknowledged operation is missing and none is applied twice.
//!
//! A failure prints its seed. Replay one with
//! `SIM_SEED=N cargo test -p kraftd-tests --test controller_sim random_seeds`, run many with
//! `CONTROLLER_SIM_SEEDS=N` (add `--release` for thousands), lengthen the fault phase with
//! `CONTROLLER_SIM_FAULT_MS=N`, print per-seed totals with `SIM_VERBOSE=1` and Raft role
//! changes with `SIM_TRACE=1`.
//!
//! A new leader's controller claims as soon as Raft names it, at the Raft log's end offset
//! (past the epoch's uncommitted LeaderChange record), as the real node does;
//! `CONTROLLER_SIM_DEFER_CLAIM=1` holds the claim until the epoch's first batch has committed
//! on that node instead, the other order a driver may deliver things in.
//!
//! Modules: `cluster` (a controller per node on the simulator, the `RaftClient` adapter,
//! the book of operations and proposals), `workload` (seeded clients and brokers), `checks`
//! (the end-of-run checks), `random` (seeds and fault schedules), `scenarios`.

#[allow(dead_code)]
#[path = "../../../crates/raft/tests/sim/harness.rs"]
mod harness;

mod checks;
mod cluster;
mod random;
mod scenarios;
mod workload;
