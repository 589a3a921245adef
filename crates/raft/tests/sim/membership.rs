//! KIP-853 membership changes in the simulator: the bootstrap checkpoint Kafka 4.4.0's own
//! `kafka-storage format --standalone` writes gives a node its first voter set; a quorum
//! grows from one voter to three and shrinks back, its leader removing itself; a voter whose
//! disk was wiped comes back with a new directory id as an observer and is replaced by
//! removing its old key and adding its new one; AddRaftVoter and RemoveRaftVoter refuse with
//! Kafka's errors; and random fault schedules with membership changes mixed in
//! ([`run_dynamic_seed`]), invariants checked after every event (at most one uncommitted
//! voter set, one leader per epoch, one vote per voter key and epoch, committed data on a
//! majority of the voter set in effect) and liveness after every change.

use bytes::Bytes;
use kraftd_log::SnapshotId;
use kraftd_protocol::{ErrorCode, Uuid};
use kraftd_raft::core::rng::Rng;
use kraftd_raft::core::voter_set::ReplicaKey;
use kraftd_raft::snapshot::SnapshotReader;
use kraftd_raft::{MemoryLog, RaftConfig, RaftCore, RaftLog, RoleName};

use crate::harness::{NetworkFaults, Sim, SimConfig};

/// Written by Kafka 4.4.0's `kafka-storage format --standalone` (node 1, listener
/// `CONTROLLER://localhost:19093`, cluster `MkU3OEVBNTcwNTJENDM2Qg`).
const KAFKA_STANDALONE_CHECKPOINT: &[u8] =
    include_bytes!("../fixtures/kafka-4.4.0-standalone-00000000000000000000-0000000000.checkpoint");
/// Its `meta.properties` `directory.id`.
const KAFKA_DIRECTORY_ID: &str = "gM5ht1eXSUaA5kMCB4fGxA";

fn kafka_directory_id() -> Uuid {
    Uuid::from_base64(KAFKA_DIRECTORY_ID).expect("a base64 uuid")
}

#[test]
fn kafkas_standalone_checkpoint_gives_a_node_its_first_voter_set() {
    let reader = SnapshotReader::new(Bytes::from_static(KAFKA_STANDALONE_CHECKPOINT)).unwrap();
    assert_eq!(reader.kraft_version().unwrap().k_raft_version, 1);
    let mut log = MemoryLog::new();
    let id = SnapshotId {
        end_offset: 0,
        epoch: 0,
    };
    log.store_snapshot(id, KAFKA_STANDALONE_CHECKPOINT).unwrap();
    let mut config = RaftConfig::new("MkU3OEVBNTcwNTJENDM2Qg");
    config.directory_id = kafka_directory_id();
    let mut core = RaftCore::new(config.clone(), 1, [], None, log.clone(), 1, 0);
    assert_eq!(core.kraft_version(), 1);
    let set = core.voter_set().clone();
    assert_eq!(set.len(), 1);
    assert_eq!(set.key(1), Some(ReplicaKey::new(1, kafka_directory_id())));
    let e = set.endpoint(1, "CONTROLLER").unwrap();
    assert_eq!((e.host.as_str(), e.port), ("localhost", 19093));
    assert!(core.is_voter());
    // A lone voter elects itself and writes the set into the log (it was in the checkpoint
    // only, offset -1), as Kafka's leader does at the start of its epoch.
    let mut now = 0;
    while core.role() != RoleName::Leader {
        now = core.poll_timeout().max(now + 1);
        core.handle_timeout(now);
        while core.poll_output().is_some() {}
    }
    assert!(core.voter_history().latest_offset().is_some_and(|o| o >= 0));
    // The same node id on another disk is not that voter.
    config.directory_id = Uuid([7; 16]);
    let other = RaftCore::new(config, 1, [], None, log, 1, 0);
    assert!(!other.is_voter());
}

/// Runs until the change `token` is answered; its error.
fn answered(sim: &mut Sim, token: u64) -> ErrorCode {
    let done = sim.run_until_pred(sim.now_ms + 20_000, |s| {
        s.voter_changes_done.iter().any(|(_, t, _)| *t == token)
    });
    assert!(done, "change {token} not answered");
    sim.voter_changes_done
        .iter()
        .find(|(_, t, _)| *t == token)
        .map(|(_, _, e)| *e)
        .unwrap()
}

/// Adds `id`, retrying while the leader says to wait (catching up, committing); the error
/// of the answer.
fn add(sim: &mut Sim, id: i32) -> ErrorCode {
    for _ in 0..200 {
        match sim.add_voter(id) {
            Ok(token) => return answered(sim, token),
            Err(e)
                if e.code == ErrorCode::RequestTimedOut
                    || e.code == ErrorCode::NotLeaderOrFollower =>
            {
                sim.run_for(100);
            }
            Err(e) => return e.code,
        }
    }
    panic!("adding {id} never got past the preconditions");
}

fn remove(sim: &mut Sim, key: ReplicaKey) -> ErrorCode {
    for _ in 0..200 {
        match sim.remove_voter(key) {
            Ok(token) => return answered(sim, token),
            Err(e)
                if e.code == ErrorCode::RequestTimedOut
                    || e.code == ErrorCode::NotLeaderOrFollower =>
            {
                sim.run_for(100);
            }
            Err(e) => return e.code,
        }
    }
    panic!("removing {key} never got past the preconditions");
}

fn converge(sim: &mut Sim) {
    let ok = sim.run_until_pred(sim.now_ms + 30_000, |s| s.check_converged().is_ok());
    assert!(ok, "no convergence: {:?}", sim.check_converged());
    assert!(sim.violations.is_empty(), "{:#?}", sim.violations);
}

fn ids(sim: &Sim) -> Vec<i32> {
    sim.voter_set().unwrap().ids().collect()
}

#[test]
fn a_quorum_grows_from_one_voter_to_three_and_shrinks_back_removing_its_leader() {
    let mut cfg = SimConfig::new(11, &[1], &[2, 3]);
    cfg.dynamic = true;
    let mut sim = Sim::new(cfg);
    converge(&mut sim);
    assert_eq!(sim.leader(), Some(1));
    assert!(!sim.core(2).is_voter());
    sim.run_with_load(500, 20);
    assert_eq!(add(&mut sim, 2), ErrorCode::None);
    assert_eq!(add(&mut sim, 3), ErrorCode::None);
    sim.run_with_load(1_000, 20);
    converge(&mut sim);
    assert_eq!(ids(&sim), vec![1, 2, 3]);
    assert!(sim.core(3).is_voter());
    // The leader removes itself: answered once committed, then it resigns and the others
    // elect a leader among themselves; it stays on as an observer.
    let key = sim.voter_key(1);
    assert_eq!(remove(&mut sim, key), ErrorCode::None);
    sim.run_with_load(2_000, 20);
    converge(&mut sim);
    assert_ne!(sim.leader(), Some(1));
    assert_eq!(ids(&sim), vec![2, 3]);
    assert!(!sim.core(1).is_voter());
    let leader = sim.leader().unwrap();
    let other = if leader == 2 { 3 } else { 2 };
    let key = sim.voter_key(other);
    assert_eq!(remove(&mut sim, key), ErrorCode::None);
    sim.run_with_load(1_000, 20);
    converge(&mut sim);
    assert_eq!(ids(&sim), vec![leader]);
    assert!(sim.propose(3));
    converge(&mut sim);
}

#[test]
fn a_wiped_voter_comes_back_an_observer_and_is_replaced_by_its_new_directory_id() {
    let mut cfg = SimConfig::new(12, &[1, 2, 3], &[]);
    cfg.dynamic = true;
    let mut sim = Sim::new(cfg);
    converge(&mut sim);
    sim.run_with_load(500, 20);
    converge(&mut sim);
    let old = sim.voter_key(3);
    assert!(sim.run_until_pred(sim.now_ms + 5_000, |s| s.dynamic_wipe_is_safe(3)));
    sim.wipe_unchecked(3);
    sim.run_for(500);
    sim.restart(3);
    assert_ne!(sim.voter_key(3), old);
    sim.run_with_load(1_000, 20);
    converge(&mut sim);
    assert!(!sim.core(3).is_voter(), "a new disk is not the old voter");
    assert!(sim.voter_set().unwrap().is_voter(old));
    assert_eq!(add(&mut sim, 3), ErrorCode::DuplicateVoter);
    assert_eq!(remove(&mut sim, old), ErrorCode::None);
    assert_eq!(add(&mut sim, 3), ErrorCode::None);
    sim.run_with_load(1_000, 20);
    converge(&mut sim);
    assert!(sim.core(3).is_voter());
    assert!(sim.voter_set().unwrap().is_voter(sim.voter_key(3)));
}

#[test]
fn voter_changes_refuse_with_kafkas_errors() {
    // A static quorum is kraft.version 0: no changes.
    let mut sim = Sim::new(SimConfig::new(13, &[1, 2, 3], &[4]));
    converge(&mut sim);
    let e = sim.remove_voter(ReplicaKey::of_id(3)).unwrap_err();
    assert_eq!(e.code, ErrorCode::UnsupportedVersion, "{e}");
    let e = sim.add_voter(4).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest, "no directory id: {e}");
    let mut cfg = SimConfig::new(14, &[1, 2, 3], &[4]);
    cfg.dynamic = true;
    let mut sim = Sim::new(cfg);
    converge(&mut sim);
    sim.run_with_load(500, 20);
    converge(&mut sim);
    assert_eq!(
        sim.add_voter(2).unwrap_err().code,
        ErrorCode::DuplicateVoter
    );
    assert_eq!(
        sim.remove_voter(ReplicaKey::new(2, Uuid([9; 16])))
            .unwrap_err()
            .code,
        ErrorCode::VoterNotFound
    );
    assert_eq!(
        sim.remove_voter(ReplicaKey::new(9, Uuid([9; 16])))
            .unwrap_err()
            .code,
        ErrorCode::VoterNotFound
    );
    // An observer that never fetched is not caught up.
    let mut cfg = SimConfig::new(15, &[1], &[5]);
    cfg.dynamic = true;
    let mut sim = Sim::new(cfg);
    sim.isolate(5);
    sim.run_for(3_000);
    let e = sim.add_voter(5).unwrap_err();
    assert_eq!(e.code, ErrorCode::RequestTimedOut, "{e}");
    sim.heal();
    converge(&mut sim);
    // One change at a time: a second while the first is uncommitted waits.
    let leader = sim.leader().unwrap();
    sim.isolate(leader);
    let _ = sim.add_voter(5);
    let e = sim.add_voter(5).unwrap_err();
    assert_eq!(e.code, ErrorCode::RequestTimedOut, "{e}");
}

/// What a dynamic seed did.
#[derive(Debug, Default, Clone, Copy)]
pub struct DynamicRun {
    pub changes: u64,
    pub refused: u64,
    pub events: u64,
    pub simulated_ms: u64,
}

/// One seed: 1–3 initial voters, 2–4 observers; rounds of faults (crashes, restarts,
/// partitions, a lossy network, a voter's disk wiped) with a membership change in each
/// (add an observer, remove a voter — the leader included —, replace a wiped voter by its
/// new key), then healing and liveness: a leader and every node converged within bounds.
pub fn run_dynamic_seed(seed: u64, rounds: u32) -> Result<DynamicRun, String> {
    let mut rng = Rng::new(seed ^ 0x853);
    let voters: Vec<i32> = (1..=1 + rng.below(3) as i32).collect();
    let observers: Vec<i32> = (10..10 + 2 + rng.below(3) as i32).collect();
    let mut cfg = SimConfig::new(seed, &voters, &observers);
    cfg.dynamic = true;
    cfg.network = NetworkFaults {
        drop_per_mille: rng.below(80),
        duplicate_per_mille: rng.below(30),
        delay_min_ms: 1,
        delay_max_ms: 1 + rng.below(30),
    };
    let all: Vec<i32> = voters.iter().chain(observers.iter()).copied().collect();
    let mut sim = Sim::new(cfg);
    let mut run = DynamicRun::default();
    let settle = |sim: &mut Sim, what: &str| -> Result<(), String> {
        sim.heal();
        for id in sim.ids() {
            sim.restart(id);
        }
        let ok = sim.run_until_pred(sim.now_ms + 40_000, |s| s.check_converged().is_ok());
        if !ok {
            return Err(format!(
                "seed {seed}: no convergence after {what}: {:?}",
                sim.check_converged()
            ));
        }
        if !sim.violations.is_empty() {
            return Err(sim.violations.join("\n"));
        }
        Ok(())
    };
    settle(&mut sim, "start")?;
    for round in 0..rounds {
        // Faults for a while, with load.
        let fault_until = sim.now_ms + 2_000 + rng.below(4_000);
        while sim.now_ms < fault_until {
            let up: Vec<i32> = all.iter().copied().filter(|i| sim.is_up(*i)).collect();
            match rng.below(10) {
                0 => {
                    let id = all[rng.below(all.len() as u64) as usize];
                    sim.crash(id);
                }
                1 => {
                    let id = all[rng.below(all.len() as u64) as usize];
                    sim.restart(id);
                }
                2 if up.len() > 1 => {
                    let a = up[rng.below(up.len() as u64) as usize];
                    let b = up[rng.below(up.len() as u64) as usize];
                    if a != b {
                        sim.partition(a, b);
                    }
                }
                3 => sim.heal(),
                _ => {
                    sim.propose(1 + rng.below(3) as usize);
                }
            }
            sim.run_for(50 + rng.below(300));
        }
        settle(&mut sim, &format!("round {round}'s faults"))?;
        // A membership change, under a lossy network but no crash.
        let set = sim.voter_set().ok_or("no voter set")?;
        let voter_ids: Vec<i32> = set.ids().collect();
        let candidates: Vec<i32> = all
            .iter()
            .copied()
            .filter(|i| !set.contains_id(*i))
            .collect();
        let choice = rng.below(3);
        let result = if choice == 0 && !candidates.is_empty() && voter_ids.len() < 5 {
            let id = candidates[rng.below(candidates.len() as u64) as usize];
            Some(add(&mut sim, id))
        } else if choice == 1 && voter_ids.len() > 1 {
            let id = voter_ids[rng.below(voter_ids.len() as u64) as usize];
            let key = sim.voter_key(id);
            Some(remove(&mut sim, key))
        } else if voter_ids.len() >= 3 {
            // Replace a voter whose disk is lost: wipe it (others hold everything once
            // converged), then remove its old key and add its new one.
            let id = voter_ids[rng.below(voter_ids.len() as u64) as usize];
            let old = sim.voter_key(id);
            if !sim.run_until_pred(sim.now_ms + 5_000, |s| s.dynamic_wipe_is_safe(id)) {
                return Err(format!("seed {seed}: voter {id} never safe to wipe"));
            }
            sim.wipe_unchecked(id);
            sim.run_for(200);
            sim.restart(id);
            let removed = remove(&mut sim, old);
            if removed != ErrorCode::None {
                Some(removed)
            } else {
                run.changes += 1;
                settle(&mut sim, "removing a wiped voter")?;
                Some(add(&mut sim, id))
            }
        } else {
            None
        };
        if sim.trace {
            println!(
                "t={} round {round}: change {choice} of {} -> {result:?}, voters now {:?}",
                sim.now_ms,
                set,
                sim.voter_set().map(|s| s.to_string())
            );
        }
        match result {
            Some(ErrorCode::None) => run.changes += 1,
            Some(_) => run.refused += 1,
            None => {}
        }
        sim.run_with_load(500, 20);
        settle(&mut sim, &format!("round {round}'s membership change"))?;
    }
    run.events = sim.events;
    run.simulated_ms = sim.now_ms;
    Ok(run)
}

#[test]
fn random_membership_changes_under_faults_hold_every_invariant() {
    let seeds: u64 = std::env::var("SIM_DYNAMIC_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let rounds: u32 = std::env::var("SIM_DYNAMIC_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let first: u64 = std::env::var("SIM_DYNAMIC_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let count = if std::env::var("SIM_DYNAMIC_SEED").is_ok() {
        1
    } else {
        seeds
    };
    let started = std::time::Instant::now();
    let mut total = DynamicRun::default();
    for seed in first..first + count {
        let run = run_dynamic_seed(seed, rounds).unwrap_or_else(|e| panic!("{e}"));
        total.changes += run.changes;
        total.refused += run.refused;
        total.events += run.events;
        total.simulated_ms += run.simulated_ms;
    }
    println!(
        "dynamic quorum: {count} seeds, {rounds} rounds each, {} voter changes committed, {} refused, {} events, {:.1} simulated minutes, {:.1} s",
        total.changes,
        total.refused,
        total.events,
        total.simulated_ms as f64 / 60_000.0,
        started.elapsed().as_secs_f64()
    );
    assert!(total.changes > 0);
}
