//! Random fault schedules over many seeds: crashes, restarts, partitions (symmetric and
//! one-way), message loss, duplication and delay, then healing; invariants hold throughout
//! and the cluster converges afterwards. Nodes also snapshot their committed state and
//! delete the log before it (KIP-630), so nodes that were down catch up by FetchSnapshot.

use kraftd_raft::core::rng::Rng;

use crate::harness::{NetworkFaults, Sim, SimConfig};

/// Runs one seed; returns the simulated milliseconds or the violations.
pub fn run_seed(seed: u64, fault_ms: u64) -> Result<u64, String> {
    let mut rng = Rng::new(seed);
    let voter_count = 1 + rng.below(5) as i32;
    let observer_count = rng.below(4) as i32;
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
        match rng.below(10) {
            0 if observers.contains(&id) => sim.wipe(id),
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
    sim.run_with_load(2_000, 100);
    let converged = sim.run_until_pred(60_000, |s| s.check_converged().is_ok());
    if !converged {
        let why = sim.check_converged().err().unwrap_or_default();
        return Err(format!("seed {seed}: no convergence after healing: {why}"));
    }
    if !sim.violations.is_empty() {
        return Err(sim.violations.join("\n"));
    }
    if std::env::var("SIM_VERBOSE").is_ok() {
        let l = sim.leader().expect("converged");
        println!(
            "seed {seed}: {} voters {} observers, {} events, {} proposals, {} snapshots loaded, leader {l} epoch {} HW {}",
            voter_count,
            observer_count,
            sim.events,
            sim.proposals,
            sim.snapshots_delivered(),
            sim.core(l).epoch(),
            sim.core(l).high_watermark()
        );
    }
    Ok(sim.now_ms)
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
    let mut total_ms = 0u64;
    let mut failures = Vec::new();
    for seed in &seeds {
        let seed = *seed;
        match std::panic::catch_unwind(|| run_seed(seed, fault_ms)) {
            Ok(Ok(ms)) => total_ms += ms,
            Ok(Err(e)) => failures.push(e),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!("seed {seed}: panic: {msg}"));
            }
        }
    }
    println!(
        "simulated {} seeds, {:.1} simulated minutes, {} failing",
        seeds.len(),
        total_ms as f64 / 60_000.0,
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
