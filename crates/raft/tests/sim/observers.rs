//! Many observers on one leader (issue 19): a metadata quorum of 3 voters followed by 1,000
//! brokers, each a Raft observer long-polling the leader. What is asserted is in rounds, not
//! time: after a commit, every observer learns the new high watermark within two fetch
//! rounds (the fetch parked at the leader when the record was appended, answered with the
//! record, and the next one, parked until the voters commit it and answered with the HW;
//! both are answered by the leader's purgatory the moment there is news, so neither waits
//! out `fetch_max_wait_ms`).
//!
//! The leader's CPU per observer is printed, not asserted: the wall time the simulator spent
//! on the leader's messages and timeouts (its core, encoding its responses, the harness's
//! checks) over a second of load (a proposal every 20 ms), divided by simulated seconds and
//! observers, beside the same figure with 10 observers; it is a figure, so its test is
//! ignored by default: `cargo test -p kraftd-raft --release --test sim thousand_observers --
//! --ignored --nocapture` prints it. Wall time: on a loaded machine it overstates.

use std::collections::BTreeMap;
use std::time::Duration;

use kraftd_raft::RaftLog;

use crate::harness::{Sim, SimConfig};

const VOTERS: [i32; 3] = [1, 2, 3];

fn cluster(seed: u64, observers: i32) -> Sim {
    let ids: Vec<i32> = (100..100 + observers).collect();
    let mut sim = Sim::new(SimConfig::new(seed, &VOTERS, &ids));
    assert!(
        sim.run_until_pred(30_000, |s| s.leader().is_some()),
        "seed {seed}: no leader"
    );
    // Checked every 50 ms rather than after every event: a check visits every node.
    for _ in 0..600 {
        if sim.check_converged().is_ok() {
            return sim;
        }
        sim.run_for(50);
    }
    panic!(
        "seed {seed}: observers never caught up: {:?}",
        sim.check_converged()
    );
}

/// Proposes one record and runs until every observer's HW covers it; per observer, the
/// fetches it sent from the one in flight at the commit to the one that brought the HW.
fn rounds_to_learn_one_commit(sim: &mut Sim, observers: &[i32]) -> BTreeMap<i32, usize> {
    let leader = sim.leader().expect("a leader");
    assert!(sim.propose(1), "the leader takes the proposal");
    let target = sim.core(leader).log().end_offset();
    assert!(
        sim.run_until_pred(10_000, |s| s.core(leader).high_watermark() >= target),
        "the record never committed"
    );
    let committed_at = sim.now_ms;
    let fetches_before = sim.fetches.len();
    let mut learned: BTreeMap<i32, u64> = BTreeMap::new();
    let mut waiting: Vec<i32> = observers.to_vec();
    let all = sim.run_until_pred(10_000, |s| {
        waiting.retain(|o| {
            let done = s.core(*o).high_watermark() >= target;
            if done {
                learned.insert(*o, s.now_ms);
            }
            !done
        });
        waiting.is_empty()
    });
    assert!(all, "observers {waiting:?} never learned HW {target}");
    // The last fetch each observer sent at or before the commit, then the ones after it up
    // to the moment it learned the HW.
    let mut rounds: BTreeMap<i32, usize> = BTreeMap::new();
    for f in &sim.fetches[..fetches_before] {
        if f.at_ms <= committed_at && learned.contains_key(&f.from) {
            rounds.insert(f.from, 1);
        }
    }
    for f in &sim.fetches[fetches_before..] {
        if let Some(at) = learned.get(&f.from) {
            if f.at_ms < *at {
                *rounds.entry(f.from).or_default() += 1;
            }
        }
    }
    rounds
}

#[test]
fn thousand_observers_learn_each_commit_within_two_fetch_rounds() {
    let observers: Vec<i32> = (100..1100).collect();
    let mut sim = cluster(19, observers.len() as i32);
    for commit in 0..3 {
        let rounds = rounds_to_learn_one_commit(&mut sim, &observers);
        let worst = rounds.values().copied().max().unwrap_or(0);
        let over: Vec<_> = rounds.iter().filter(|(_, r)| **r > 2).take(10).collect();
        assert!(
            over.is_empty(),
            "commit {commit}: observers took more than two fetch rounds: {over:?}"
        );
        assert!(worst >= 1, "commit {commit}: no observer fetched at all");
        sim.run_for(50);
    }
    assert!(sim.violations.is_empty(), "{:?}", sim.violations);
}

/// The leader's busy time per simulated second and per observer over `ms` of load.
fn leader_cpu(observers: i32, ms: u64) -> (Duration, f64) {
    let mut sim = cluster(20, observers);
    let leader = sim.leader().expect("a leader");
    sim.busy.clear();
    sim.run_with_load(ms, 20);
    let busy = sim.busy.get(&leader).copied().unwrap_or_default();
    let per_observer_per_sec = busy.as_secs_f64() / (ms as f64 / 1000.0) / f64::from(observers);
    assert!(sim.violations.is_empty(), "{:?}", sim.violations);
    (busy, per_observer_per_sec)
}

/// A figure, not a check (ignored by default: run it with `--ignored`).
#[test]
#[ignore = "a benchmark figure: cargo test -p kraftd-raft --release --test sim thousand_observers -- --ignored --nocapture"]
fn thousand_observers_leader_cpu_per_observer_is_printed() {
    let ms = 1_000;
    for observers in [10, 1000] {
        let (busy, per) = leader_cpu(observers, ms);
        println!(
            "{observers:>5} observers, a proposal every 20 ms for {ms} ms simulated: leader busy \
             {:.1} ms, {:.1} µs per observer per simulated second ({})",
            busy.as_secs_f64() * 1e3,
            per * 1e6,
            if cfg!(debug_assertions) {
                "debug build"
            } else {
                "release build"
            }
        );
    }
}
