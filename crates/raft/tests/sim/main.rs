//! The Raft simulator test binary: the harness, scenario tests named after what they prove,
//! single-core rules, hostile input, the crash failover rule over many seeds, and a bounded
//! run of random seeds.
//!
//! A failure prints its seed. Replay one with `SIM_SEED=N cargo test -p kraftd-raft --test
//! sim random_seeds`, run many with `SIM_SEEDS=N` (add `--release` for thousands), lengthen
//! the fault phase with `SIM_FAULT_MS=N` (120000 by default), spread seeds over threads with
//! `SIM_THREADS=N`, print role changes and crashes with `SIM_TRACE=1`, and per-seed totals
//! with `SIM_VERBOSE=1`. The run ends with the totals: seeds, simulated hours, events, wipes
//! and the worst time to a leader and to convergence after healing.

mod core_rules;
mod failover;
mod harness;
mod hostile;
mod membership;
mod observers;
mod random;
mod scenarios;
