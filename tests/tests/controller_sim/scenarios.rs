//! Named scenarios on a reliable network, each the smallest setting for one behaviour of
//! the QuorumController on the real Raft core: the first leader of a fresh cluster, and a
//! leader elected on an idle cluster, become active controllers and take writes.
//!
//! Both hinge on when Raft tells a new leader it leads: once its listener has been handed
//! every batch *before* the epoch's start offset, where the epoch's LeaderChange control
//! record sits uncommitted. On a fresh or idle cluster that is so at election. The
//! controller therefore claims at the Raft log's end offset (Kafka's `claim` reads
//! `raftClient.logEndOffset()`), not at its committed offset plus one, which Raft would
//! refuse and which would leave a Raft leader without an active controller. The
//! `_when_told_at_once` variants claim as soon as Raft says so; the others hold the claim
//! until the epoch's first batch commits on that node.

use crate::cluster::{Cluster, OpKind, Outcome};
use crate::harness::SimConfig;
use crate::workload::bootstrap_op;

/// Writes at whoever leads until one write is acknowledged or `max_ms` passes.
fn first_acknowledged_write(cluster: &mut Cluster, max_ms: u64) -> Result<u64, String> {
    let start = cluster.now();
    let mut outcomes = Vec::new();
    while cluster.now() < start + max_ms {
        let Some(leader) = cluster.sim.leader() else {
            cluster.run_for(100);
            continue;
        };
        let Some(i) = cluster.submit(leader, OpKind::Bootstrap, bootstrap_op()) else {
            cluster.run_for(100);
            continue;
        };
        cluster.run_until_pred(2_000, |c| c.ops[i].outcome != Outcome::InFlight);
        match &cluster.ops[i].outcome {
            Outcome::Ok(_) => return Ok(cluster.now() - start),
            other => outcomes.push(format!("t={} at leader {leader}: {other:?}", cluster.now())),
        }
        cluster.run_for(200);
    }
    outcomes.truncate(5);
    Err(format!(
        "no write acknowledged in {max_ms} ms; {:?}; first outcomes:\n{}",
        cluster.stats,
        outcomes.join("\n")
    ))
}

fn assert_clean(cluster: &Cluster) {
    assert!(
        cluster.sim.violations.is_empty(),
        "{:?}",
        cluster.sim.violations
    );
    assert!(cluster.violations.is_empty(), "{:?}", cluster.violations);
}

fn fresh_cluster_takes_a_write(defer_claim: bool) {
    let mut cluster = Cluster::new(SimConfig::new(1, &[1, 2, 3], &[]), defer_claim);
    assert!(cluster.run_until_pred(10_000, |c| c.sim.leader().is_some()));
    let leader = cluster.sim.leader().expect("elected");
    let core = cluster.sim.core(leader);
    let controller = &cluster.controllers[&leader];
    println!(
        "leader {leader} epoch {}: log end {}, HW {}; its controller active {}, committed offset {}",
        core.epoch(),
        kraftd_raft::RaftLog::end_offset(core.log()),
        core.high_watermark(),
        controller.is_active(),
        controller.committed_offset()
    );
    if let Err(e) = first_acknowledged_write(&mut cluster, 20_000) {
        panic!("{e}");
    }
    assert_clean(&cluster);
}

fn idle_cluster_failover_takes_a_write(defer_claim: bool) {
    // A cluster with a working controller (the deferral gets the first leader going).
    let mut cluster = Cluster::new(SimConfig::new(2, &[1, 2, 3], &[]), true);
    first_acknowledged_write(&mut cluster, 20_000).expect("the first leader takes a write");
    // Idle: only the controller's no-op records; every follower's HW reaches its log end.
    cluster.run_for(2_000);
    cluster.defer_claim = defer_claim;
    let old = cluster.sim.leader().expect("a leader");
    cluster.sim.resign(old);
    cluster.pump();
    assert!(cluster.run_until_pred(10_000, |c| c.sim.leader().is_some_and(|l| l != old)));
    if let Err(e) = first_acknowledged_write(&mut cluster, 20_000) {
        panic!("after the failover from {old}: {e}");
    }
    assert_clean(&cluster);
}

#[test]
fn first_leader_of_a_fresh_cluster_takes_writes() {
    fresh_cluster_takes_a_write(true);
}

#[test]
fn first_leader_of_a_fresh_cluster_takes_writes_when_told_at_once() {
    fresh_cluster_takes_a_write(false);
}

#[test]
fn leader_elected_on_an_idle_cluster_takes_writes() {
    idle_cluster_failover_takes_a_write(true);
}

#[test]
fn leader_elected_on_an_idle_cluster_takes_writes_when_told_at_once() {
    idle_cluster_failover_takes_a_write(false);
}
