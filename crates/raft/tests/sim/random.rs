//! Random fault schedules over many seeds: 1–5 voters and 0–5 observers; crashes, restarts,
//! crashes of a process (its peers see the connection close) or of a machine (silence),
//! false connection-loss notices about a live leader, restarts with a wiped disk and quorum state (observers any time, a voter only when
//! [`Sim::voter_wipe_is_safe`] allows it, otherwise it is just killed), partitions (symmetric
//! and one-way), message loss, duplication and delay, then healing; invariants hold
//! throughout. Liveness after healing has two bounds: a leader, at the highest epoch any node
//! knows, within [`LEADER_BOUND_MS`]; then every node, observers included, following it at its
//! HW within [`CONVERGE_BOUND_MS`]. Nodes also snapshot their committed state and delete the
//! log before it (KIP-630), so nodes that were down catch up by FetchSnapshot.
//!
//! The run prints the seeds, simulated hours and events; `SIM_THREADS=N` spreads the seeds
//! over N threads (each seed is still deterministic).

use kraftd_raft::core::rng::Rng;

use crate::harness::{NetworkFaults, Sim, SimConfig};

/// After the faults heal, a leader at the highest epoch any node knows within this long.
pub const LEADER_BOUND_MS: u64 = 20_000;
/// Once there is one, every node (observers included) follows it at its HW within this long.
pub const CONVERGE_BOUND_MS: u64 = 20_000;

/// What one seed did.
#[derive(Debug, Default, Clone, Copy)]
pub struct SeedRun {
    pub simulated_ms: u64,
    pub events: u64,
    pub voter_wipes: u64,
    pub observer_wipes: u64,
    /// From healing to a leader.
    pub leader_ms: u64,
    /// From the end of the post-healing load to every node at the leader's HW.
    pub converge_ms: u64,
}

/// A leader at the highest epoch any up node knows (not a deposed one yet to hear of it).
fn settled_leader(sim: &Sim) -> Option<i32> {
    let l = sim.leader()?;
    let epoch = sim.core(l).epoch();
    sim.ids()
        .into_iter()
        .filter(|id| sim.is_up(*id))
        .all(|id| sim.core(id).epoch() <= epoch)
        .then_some(l)
}

/// Runs one seed; returns what it did or the violations.
pub fn run_seed(seed: u64, fault_ms: u64) -> Result<SeedRun, String> {
    let mut rng = Rng::new(seed);
    let voter_count = 1 + rng.below(5) as i32;
    let observer_count = rng.below(6) as i32;
    let voters: Vec<i32> = (1..=voter_count).collect();
    let observers: Vec<i32> = (0..observer_count).map(|i| 100 + i).collect();
    let mut cfg = SimConfig::new(seed, &voters, &observers);
    // One seed in four gets a harsh network: delays up to a second, a third of the
    // messages lost.
    let harsh = rng.below(4) == 0;
    cfg.network = NetworkFaults {
        drop_per_mille: rng.below(if harsh { 350 } else { 100 }),
        duplicate_per_mille: rng.below(50),
        delay_min_ms: 1,
        delay_max_ms: 1 + rng.below(if harsh { 1_000 } else { 60 }),
    };
    let mut sim = Sim::new(cfg);
    let ids = sim.ids();
    // Snapshot decisions draw from their own stream, so the fault schedule stays the same.
    let mut snapshot_rng = Rng::new(seed ^ 0x5a5a_5a5a_5a5a_5a5a);
    // One seed in three churns: a fault every 50–450 ms instead of every 0.2–1.7 s.
    let churn = rng.below(3) == 0;
    let mut observer_wipes = 0;
    let mut t = 0;
    while t < fault_ms {
        let step = if churn {
            50 + rng.below(400)
        } else {
            200 + rng.below(1_500)
        };
        sim.run_with_load(step, 50 + rng.below(200));
        t += step;
        if snapshot_rng.below(6) == 0 {
            let node = ids[snapshot_rng.below(ids.len() as u64) as usize];
            if sim.is_up(node) {
                let _ = sim.snapshot_and_trim(node);
            }
        }
        let id = ids[rng.below(ids.len() as u64) as usize];
        match rng.below(11) {
            // Restart with wiped state: an observer any time, a voter when the rule allows.
            0 if observers.contains(&id) => {
                sim.wipe(id);
                observer_wipes += 1;
            }
            0 if sim.voter_wipe_is_safe(id).is_ok() => sim.wipe(id),
            // A crashed process (its peers see the connection close) or, one time in
            // three, a lost machine (silence).
            0 | 1 if rng.below(3) == 0 => sim.crash_silent(id),
            0 | 1 => sim.crash(id),
            2 | 3 => sim.restart(id),
            4 => {
                let other = ids[rng.below(ids.len() as u64) as usize];
                if other != id {
                    sim.partition(id, other);
                }
            }
            5 => {
                let other = ids[rng.below(ids.len() as u64) as usize];
                if other != id {
                    sim.block(id, other);
                }
            }
            6 => sim.isolate(id),
            // The leader hears nobody (one-way): it keeps sending, fetches never reach it.
            7 if churn => {
                if let Some(l) = sim.leader() {
                    for other in &ids {
                        if *other != l {
                            sim.block(*other, l);
                        }
                    }
                }
            }
            7 | 8 => sim.heal(),
            // A false notice: `id` is told its connection to the leader is gone.
            10 => {
                if let Some(l) = sim.leader() {
                    if l != id && sim.is_up(id) {
                        sim.notify_connection_lost(id, l);
                    }
                }
            }
            _ => {
                if let Some(l) = sim.leader() {
                    sim.crash(l);
                }
            }
        }
    }
    // Heal: every node up, the network reliable.
    sim.heal();
    for id in &ids {
        sim.restart(*id);
    }
    sim.cfg.network = NetworkFaults::reliable();
    let healed_at = sim.now_ms;
    if !sim.run_until_pred(LEADER_BOUND_MS, |s| settled_leader(s).is_some()) {
        return Err(format!(
            "seed {seed}: no leader within {LEADER_BOUND_MS} ms of healing"
        ));
    }
    let leader_ms = sim.now_ms - healed_at;
    // Commits after healing, so "at the leader's HW" covers new data too.
    sim.run_with_load(2_000, 100);
    let loaded_at = sim.now_ms;
    let converged = sim.run_until_pred(CONVERGE_BOUND_MS, |s| s.check_converged().is_ok());
    if !converged {
        let why = sim.check_converged().err().unwrap_or_default();
        return Err(format!(
            "seed {seed}: not converged within {CONVERGE_BOUND_MS} ms after healing and load: {why}"
        ));
    }
    let converge_ms = sim.now_ms - loaded_at;
    // Every node is up after healing; each observer has the leader's HW.
    let l = sim.leader().expect("converged");
    for o in &observers {
        let hw = sim.core(*o).high_watermark();
        if hw != sim.core(l).high_watermark() {
            return Err(format!(
                "seed {seed}: observer {o} HW {hw} not the leader's"
            ));
        }
    }
    if !sim.violations.is_empty() {
        return Err(sim.violations.join("\n"));
    }
    if std::env::var("SIM_VERBOSE").is_ok() {
        let l = sim.leader().expect("converged");
        println!(
            "seed {seed}: {} voters {} observers, {} events, {} proposals, {} snapshots loaded, {} voter wipes, {observer_wipes} observer wipes, leader after {leader_ms} ms, converged {converge_ms} ms later, leader {l} epoch {} HW {}",
            voter_count,
            observer_count,
            sim.events,
            sim.proposals,
            sim.snapshots_delivered(),
            sim.voter_wipes,
            sim.core(l).epoch(),
            sim.core(l).high_watermark()
        );
    }
    Ok(SeedRun {
        simulated_ms: sim.now_ms,
        events: sim.events,
        voter_wipes: sim.voter_wipes,
        observer_wipes,
        leader_ms,
        converge_ms,
    })
}

fn run_caught(seed: u64, fault_ms: u64) -> Result<SeedRun, String> {
    match std::panic::catch_unwind(|| run_seed(seed, fault_ms)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("seed {seed}: panic: {msg}"))
        }
    }
}

#[test]
fn random_seeds_hold_every_invariant_and_converge() {
    let seeds: Vec<u64> = match std::env::var("SIM_SEED") {
        Ok(s) => vec![s.parse().expect("SIM_SEED is a number")],
        Err(_) => {
            let n: u64 = std::env::var("SIM_SEEDS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(200);
            (0..n).collect()
        }
    };
    let fault_ms: u64 = std::env::var("SIM_FAULT_MS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120_000);
    let threads: usize = std::env::var("SIM_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    let results: Vec<Result<SeedRun, String>> = if threads == 1 {
        seeds.iter().map(|s| run_caught(*s, fault_ms)).collect()
    } else {
        let mut out: Vec<(u64, Result<SeedRun, String>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let seeds = &seeds;
                    scope.spawn(move || {
                        seeds
                            .iter()
                            .skip(t)
                            .step_by(threads)
                            .map(|s| (*s, run_caught(*s, fault_ms)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("a seed thread"))
                .collect()
        });
        out.sort_by_key(|(s, _)| *s);
        out.into_iter().map(|(_, r)| r).collect()
    };
    let mut total = SeedRun::default();
    let mut failures = Vec::new();
    for r in results {
        match r {
            Ok(r) => {
                total.simulated_ms += r.simulated_ms;
                total.events += r.events;
                total.voter_wipes += r.voter_wipes;
                total.observer_wipes += r.observer_wipes;
                total.leader_ms = total.leader_ms.max(r.leader_ms);
                total.converge_ms = total.converge_ms.max(r.converge_ms);
            }
            Err(e) => failures.push(e),
        }
    }
    println!(
        "simulated {} seeds, {:.1} simulated hours, {} events, {} voter wipes, {} observer wipes; after healing: a leader within {} ms (bound {LEADER_BOUND_MS}), every node at its HW within {} ms more (bound {CONVERGE_BOUND_MS}); {} failing",
        seeds.len(),
        total.simulated_ms as f64 / 3_600_000.0,
        total.events,
        total.voter_wipes,
        total.observer_wipes,
        total.leader_ms,
        total.converge_ms,
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
