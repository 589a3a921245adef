//! Random runs over many seeds: a cluster of 1–5 controller voters and 0–2 observers
//! (standby controllers, as brokers' metadata loaders), a workload of random
//! controller operations, a fault schedule, then healing and the checks of `checks.rs`.

use kraftd_raft::core::rng::Rng;

use crate::checks::{check, Summary};
use crate::cluster::{Cluster, OpKind, Outcome, Resp};
use crate::harness::{NetworkFaults, SimConfig};
use crate::workload::Workload;

/// What one seed did.
#[derive(Debug, Clone, Copy)]
pub struct SeedReport {
    pub sim_ms: u64,
    pub ops: usize,
    pub summary: Summary,
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|s| {
        s.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {s:?}"))
    })
}

/// Runs the workload for `ms`, one client action every 5–40 ms.
fn run_with_load(cluster: &mut Cluster, workload: &mut Workload, rng: &mut Rng, ms: u64) {
    let until = cluster.now() + ms;
    while cluster.now() < until {
        let next = (cluster.now() + 5 + rng.below(36)).min(until);
        cluster.run_until(next);
        workload.act(cluster);
    }
}

/// Runs one seed; returns what it did or the violations.
pub fn run_seed(seed: u64, fault_ms: u64, defer_claim: bool) -> Result<SeedReport, String> {
    let mut rng = Rng::new(seed);
    let voter_count = [1, 2, 3, 3, 3, 4, 5][rng.below(7) as usize];
    let voters: Vec<i32> = (1..=voter_count).collect();
    let observers: Vec<i32> = (0..rng.below(3) as i32).map(|i| 100 + i).collect();
    let ids: Vec<i32> = voters.iter().chain(&observers).copied().collect();
    let mut cfg = SimConfig::new(seed, &voters, &observers);
    let harsh = rng.below(4) == 0;
    cfg.network = NetworkFaults {
        drop_per_mille: rng.below(if harsh { 300 } else { 80 }),
        duplicate_per_mille: rng.below(50),
        delay_min_ms: 1,
        delay_max_ms: 1 + rng.below(if harsh { 500 } else { 40 }),
    };
    let mut cluster = Cluster::new(cfg, defer_claim);
    let mut workload = Workload::new(seed);
    let mut load_rng = Rng::new(seed ^ 0x10ad_10ad_10ad_10ad);
    let churn = rng.below(3) == 0;
    let mut t = 0;
    while t < fault_ms {
        let step = if churn {
            100 + rng.below(400)
        } else {
            300 + rng.below(1_500)
        };
        run_with_load(&mut cluster, &mut workload, &mut load_rng, step);
        t += step;
        let id = ids[rng.below(ids.len() as u64) as usize];
        let other = ids[rng.below(ids.len() as u64) as usize];
        match rng.below(12) {
            0 if observers.contains(&id) => cluster.wipe(id),
            0 | 1 => cluster.crash(id),
            2..=4 => cluster.restart(id),
            5 if other != id => cluster.sim.partition(id, other),
            6 if other != id => cluster.sim.block(id, other),
            7 => cluster.sim.isolate(id),
            8 | 9 => cluster.sim.heal(),
            10 => {
                if let Some(l) = cluster.sim.leader() {
                    cluster.crash(l);
                }
            }
            11 => {
                if let Some(l) = cluster.sim.leader() {
                    cluster.sim.resign(l);
                    cluster.pump();
                }
            }
            _ => {}
        }
    }
    // Heal: every node up, the network reliable, the load going on for a while.
    cluster.sim.heal();
    for id in &ids {
        cluster.restart(*id);
    }
    cluster.sim.cfg.network = NetworkFaults::reliable();
    run_with_load(&mut cluster, &mut workload, &mut load_rng, 3_000);
    workload.observe(&mut cluster);
    let fail = |cluster: &Cluster, why: String| -> String {
        let mut lines = vec![format!("seed {seed}: {why}")];
        lines.extend(cluster.sim.violations.iter().cloned());
        lines.extend(
            cluster
                .violations
                .iter()
                .map(|l| format!("seed {seed}: {l}")),
        );
        lines.push(format!(
            "replay: SIM_SEED={seed} CONTROLLER_SIM_FAULT_MS={fault_ms} cargo test -p kraftd-tests --test controller_sim random_seeds"
        ));
        lines.join("\n")
    };
    if !cluster.run_until_pred(60_000, Cluster::settled) {
        let why = cluster.sim.check_converged().err().unwrap_or_else(|| {
            let l = cluster.sim.leader().expect("converged");
            format!(
                "Raft converged (leader {l}, HW {}) but the controllers did not settle: {:?}",
                cluster.sim.core(l).high_watermark(),
                cluster.controllers.values().collect::<Vec<_>>()
            )
        });
        return Err(fail(&cluster, format!("no settling after healing: {why}")));
    }
    // Liveness: the healed cluster takes a write.
    let mut written = false;
    for attempt in 0..10 {
        let Some(leader) = cluster.sim.leader() else {
            cluster.run_for(500);
            continue;
        };
        let request = kraftd_protocol::messages::CreateTopicsRequest {
            topics: vec![
                kraftd_protocol::messages::create_topics_request::CreatableTopic {
                    name: format!("after-healing-{attempt}"),
                    num_partitions: 1,
                    replication_factor: 1,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let op = kraftd_controller::quorum_controller::ops::create_topics(request)
            .map(Resp::CreateTopics);
        let Some(i) = cluster.submit(
            leader,
            OpKind::CreateTopic {
                name: format!("after-healing-{attempt}"),
            },
            op,
        ) else {
            continue;
        };
        cluster.run_until_pred(5_000, |c| c.ops[i].outcome != Outcome::InFlight);
        if matches!(cluster.ops[i].outcome, Outcome::Ok(_)) {
            written = true;
            break;
        }
    }
    if !written {
        return Err(fail(
            &cluster,
            "the healed cluster acknowledged no write in 10 attempts".into(),
        ));
    }
    if !cluster.run_until_pred(60_000, Cluster::settled) {
        return Err(fail(&cluster, "no settling after the last write".into()));
    }
    let (mut violations, summary) = check(&cluster);
    violations.extend(cluster.violations.iter().cloned());
    if !cluster.sim.violations.is_empty() || !violations.is_empty() {
        return Err(fail(&cluster, violations.join("\n")));
    }
    if std::env::var("SIM_VERBOSE").is_ok() {
        let l = cluster.sim.leader().expect("settled");
        println!(
            "seed {seed}: {voter_count} voters {} observers, {} ops ({} acknowledged, {} refused by the manager, {} NOT_CONTROLLER, {} lost), \
             {} topics, log end {}, leader {l} epoch {}, {:?}",
            observers.len(),
            cluster.ops.len(),
            summary.acknowledged,
            summary.ok_with_error,
            summary.not_controller,
            summary.lost,
            summary.topics,
            summary.log_end,
            cluster.sim.core(l).epoch(),
            cluster.stats,
        );
    }
    Ok(SeedReport {
        sim_ms: cluster.now(),
        ops: cluster.ops.len(),
        summary,
    })
}

#[test]
fn random_seeds_keep_controllers_identical_and_lose_no_acknowledged_write() {
    let seeds: Vec<u64> = match env_u64("SIM_SEED") {
        Some(s) => vec![s],
        None => (0..env_u64("CONTROLLER_SIM_SEEDS").unwrap_or(50)).collect(),
    };
    let fault_ms = env_u64("CONTROLLER_SIM_FAULT_MS").unwrap_or(30_000);
    let defer_claim = std::env::var("CONTROLLER_SIM_DEFER_CLAIM").is_ok();
    let mut total_ms = 0u64;
    let mut ops = 0usize;
    let mut acknowledged = 0u64;
    let mut failures = Vec::new();
    for seed in &seeds {
        let seed = *seed;
        match std::panic::catch_unwind(|| run_seed(seed, fault_ms, defer_claim)) {
            Ok(Ok(r)) => {
                total_ms += r.sim_ms;
                ops += r.ops;
                acknowledged += r.summary.acknowledged;
            }
            Ok(Err(e)) => failures.push(e),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!(
                    "seed {seed}: panic: {msg}\nreplay: SIM_SEED={seed} CONTROLLER_SIM_FAULT_MS={fault_ms} cargo test -p kraftd-tests --test controller_sim random_seeds"
                ));
            }
        }
    }
    println!(
        "controller sim: {} seeds, {:.2} simulated hours, {ops} operations ({acknowledged} acknowledged), {} failing",
        seeds.len(),
        total_ms as f64 / 3_600_000.0,
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
