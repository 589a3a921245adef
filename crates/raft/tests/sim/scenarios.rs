//! Scenario tests: each sets up a cluster on the simulator, drives one situation from the
//! seeds or Kafka's own Raft tests, and asserts the outcome plus zero invariant violations.

use std::sync::{Arc, Mutex};

use kraftd_raft::{QuorumStateData, RaftLog, RoleName};

use crate::harness::{Sim, SimConfig};

fn assert_clean(sim: &Sim) {
    assert!(
        sim.violations.is_empty(),
        "seed {} violations:\n{}",
        sim.cfg.seed,
        sim.violations.join("\n")
    );
}

fn elect(sim: &mut Sim) -> i32 {
    assert!(
        sim.run_until_pred(30_000, |s| s.leader().is_some()),
        "seed {}: no leader",
        sim.cfg.seed
    );
    sim.leader().expect("elected")
}

#[test]
fn initial_election_elects_one_leader_that_commits() {
    let mut sim = Sim::new(SimConfig::new(1, &[1, 2, 3], &[]));
    let leader = elect(&mut sim);
    // The LeaderChange record of the new epoch commits on every node.
    assert!(sim.run_until_pred(5_000, |s| s.check_converged().is_ok()));
    let hw = sim.core(leader).high_watermark();
    assert!(hw >= 1, "the LeaderChange record committed");
    sim.run_with_load(2_000, 50);
    sim.run_for(2_000);
    sim.check_converged().expect("converged");
    assert!(sim.core(leader).high_watermark() > hw);
    assert_clean(&sim);
}

#[test]
fn single_voter_elects_itself_at_once_and_commits_its_appends() {
    let mut sim = Sim::new(SimConfig::new(2, &[1], &[]));
    assert_eq!(sim.core(1).role(), RoleName::Leader, "no timeout needed");
    assert_eq!(sim.core(1).epoch(), 1);
    sim.run_for(30);
    assert_eq!(sim.core(1).high_watermark(), 1);
    assert!(sim.propose(3));
    sim.run_for(30);
    assert_eq!(sim.core(1).high_watermark(), 4);
    // A single voter never resigns for lack of fetches.
    sim.run_for(20_000);
    assert_eq!(sim.core(1).role(), RoleName::Leader);
    assert_clean(&sim);
}

#[test]
fn failover_after_kill_keeps_committed_data() {
    let mut sim = Sim::new(SimConfig::new(3, &[1, 2, 3], &[10]));
    let old = elect(&mut sim);
    sim.run_with_load(2_000, 50);
    sim.run_for(1_000);
    let committed = sim.core(old).high_watermark();
    let epoch = sim.core(old).epoch();
    sim.crash(old);
    assert!(sim.run_until_pred(20_000, |s| s.leader().is_some()));
    let new = sim.leader().expect("new leader");
    assert_ne!(new, old);
    assert!(sim.core(new).epoch() > epoch);
    sim.run_with_load(2_000, 50);
    sim.restart(old);
    assert!(sim.run_until_pred(20_000, |s| s.check_converged().is_ok()));
    assert!(sim.core(new).high_watermark() > committed);
    assert_clean(&sim);
}

#[test]
fn failover_after_graceful_resignation() {
    let mut sim = Sim::new(SimConfig::new(4, &[1, 2, 3], &[]));
    let old = elect(&mut sim);
    sim.run_with_load(1_000, 50);
    let epoch = sim.core(old).epoch();
    let now = sim.now_ms;
    // Resign through the core's API (graceful shutdown): EndQuorumEpoch makes the most
    // caught-up voter start at once, well before any fetch timeout.
    sim.resign(old);
    assert!(sim.run_until_pred(1_500, |s| s.leader().is_some_and(|l| l != old)));
    assert!(sim.now_ms - now < 1_500);
    assert!(sim.core(sim.leader().expect("leader")).epoch() > epoch);
    assert_clean(&sim);
}

#[test]
fn leader_partitioned_away_is_replaced_and_rejoins_as_follower() {
    let mut sim = Sim::new(SimConfig::new(5, &[1, 2, 3, 4, 5], &[]));
    let old = elect(&mut sim);
    sim.run_with_load(1_000, 50);
    sim.isolate(old);
    // The majority side elects a new leader and keeps committing.
    assert!(sim.run_until_pred(20_000, |s| s.leader().is_some_and(|l| l != old)));
    let new = sim.leader().expect("new");
    let hw = sim.core(new).high_watermark();
    sim.run_with_load(2_000, 50);
    assert!(
        sim.core(new).high_watermark() > hw,
        "progress with a reachable majority"
    );
    // The old leader resigned by check-quorum.
    assert_ne!(sim.core(old).role(), RoleName::Leader);
    sim.heal();
    assert!(sim.run_until_pred(20_000, |s| s.check_converged().is_ok()));
    assert_clean(&sim);
}

#[test]
fn check_quorum_resigns_a_leader_that_hears_from_no_majority() {
    let mut sim = Sim::new(SimConfig::new(6, &[1, 2, 3], &[]));
    let leader = elect(&mut sim);
    sim.run_for(500);
    let others: Vec<i32> = sim.ids().into_iter().filter(|i| *i != leader).collect();
    for o in &others {
        sim.crash(*o);
    }
    let t0 = sim.now_ms;
    assert!(sim.run_until_pred(10_000, |s| s.core(leader).role() != RoleName::Leader));
    let waited = sim.now_ms - t0;
    // 1.5 × fetch timeout (3 s) after the last majority of fetches, never much later.
    assert!(waited <= 3_100, "resigned after {waited} ms");
    assert_eq!(sim.core(leader).role(), RoleName::Resigned);
    assert_clean(&sim);
}

#[test]
fn restarted_leader_comes_back_resigned_and_grants_no_vote_in_its_epoch() {
    let mut sim = Sim::new(SimConfig::new(7, &[1, 2, 3], &[]));
    let leader = elect(&mut sim);
    sim.run_with_load(500, 50);
    let epoch = sim.core(leader).epoch();
    sim.crash(leader);
    sim.restart(leader);
    assert_eq!(sim.core(leader).role(), RoleName::Resigned);
    assert_eq!(sim.core(leader).epoch(), epoch);
    assert_ne!(sim.leader(), Some(leader));
    // Someone leads a later epoch; the old leader follows it.
    assert!(sim.run_until_pred(20_000, |s| s.check_converged().is_ok()));
    assert!(sim.core(sim.leader().expect("leader")).epoch() > epoch);
    assert_clean(&sim);
}

#[test]
fn divergence_is_truncated_by_epoch() {
    // The leader appends records no follower receives, then dies before flushing some of
    // them; the others move on in a new epoch; the old leader restarts, learns the diverging
    // epoch from its first fetch, truncates, and ends with the new leader's log.
    let mut sim = Sim::new(SimConfig::new(8, &[1, 2, 3], &[]));
    let old = elect(&mut sim);
    sim.run_with_load(1_000, 50);
    sim.run_for(500);
    for o in sim.ids() {
        if o != old {
            sim.partition(old, o);
        }
    }
    for _ in 0..5 {
        sim.propose(2);
        sim.run_for(40);
    }
    let old_leo = sim.core(old).log().end_offset();
    let hw = sim.core(old).high_watermark();
    assert!(old_leo > hw, "uncommitted tail on the old leader");
    sim.crash(old);
    sim.heal();
    assert!(sim.run_until_pred(20_000, |s| s.leader().is_some()));
    sim.run_with_load(2_000, 50);
    sim.restart(old);
    assert!(sim.run_until_pred(20_000, |s| s.check_converged().is_ok()));
    let leader = sim.leader().expect("leader");
    let theirs: Vec<_> = sim
        .core(leader)
        .log()
        .batches()
        .map(|(o, e, _)| (o, e))
        .collect();
    let ours: Vec<_> = sim
        .core(old)
        .log()
        .batches()
        .map(|(o, e, _)| (o, e))
        .collect();
    assert_eq!(ours, theirs, "the old leader's log is the new leader's");
    assert_clean(&sim);
}

#[test]
fn pre_vote_keeps_an_isolated_voter_from_raising_the_epoch() {
    let mut sim = Sim::new(SimConfig::new(10, &[1, 2, 3], &[]));
    let leader = elect(&mut sim);
    sim.run_for(1_000);
    let epoch = sim.core(leader).epoch();
    let follower = sim
        .ids()
        .into_iter()
        .find(|i| *i != leader)
        .expect("a follower");
    sim.isolate(follower);
    sim.run_with_load(10_000, 100);
    assert_eq!(
        sim.core(follower).epoch(),
        epoch,
        "pre-votes never bump the epoch"
    );
    sim.heal();
    assert!(sim.run_until_pred(10_000, |s| s.check_converged().is_ok()));
    assert_eq!(
        sim.leader(),
        Some(leader),
        "the healthy leader was not disrupted"
    );
    assert_eq!(sim.core(leader).epoch(), epoch);
    assert_clean(&sim);
}

/// Seed 003: leader 1003 at epoch 643, observer 68; one fetch response comes after the
/// observer's request timeout; the bootstrap controllers answer NOT_LEADER_OR_FOLLOWER naming
/// 1003. The observer's next fetch goes to 1003 and its HW advances within one request
/// timeout.
#[test]
fn observer_returns_to_leader_after_not_leader_hint() {
    let mut cfg = SimConfig::new(3, &[1001, 1002, 1003, 1004], &[68]);
    cfg.raft.bootstrap_servers = vec![1001, 1002, 1004];
    cfg.initial_state = Some(QuorumStateData {
        leader_epoch: 642,
        leader_id: -1,
        voted_id: -1,
    });
    for v in [1001, 1002, 1004] {
        cfg.election_timeout_ms.insert(v, 5_000);
    }
    cfg.election_timeout_ms.insert(1003, 300);
    let request_timeout = cfg.raft.request_timeout_ms;
    let mut sim = Sim::new(cfg);
    assert!(sim.run_until_pred(10_000, |s| s.leader() == Some(1003)));
    assert_eq!(sim.core(1003).epoch(), 643);
    sim.run_with_load(2_000, 100);
    assert_eq!(sim.core(68).leader_id(), Some(1003));
    assert_eq!(sim.core(68).fetch_target(), Some(1003));
    // One fetch response from 1003 arrives after the request timeout.
    sim.slow_link(1003, 68, request_timeout + 500);
    let sent_before = sim.fetches.len();
    assert!(sim.run_until_pred(10_000, |s| s.core(68).fetch_target() != Some(1003)));
    let failed_at = sim.now_ms;
    let dropped_before = sim.responses_dropped;
    // Messages already on the slow link stay slow; new ones are not.
    sim.heal();
    let hw_at_failure = sim.core(68).high_watermark();
    // The next fetches: to a bootstrap server, which answers NOT_LEADER_OR_FOLLOWER naming
    // 1003; the one after goes to 1003.
    let mut advanced = false;
    let deadline = failed_at + request_timeout;
    while sim.now_ms < deadline {
        sim.run_with_load(100, 50);
        if sim.core(68).high_watermark() > hw_at_failure {
            advanced = true;
            break;
        }
    }
    assert!(advanced, "observer HW advanced within one request timeout");
    // The late response from 1003 did arrive, and was dropped as no longer needed.
    sim.run_until(failed_at + 1_500);
    assert!(
        sim.responses_dropped > dropped_before,
        "a response came after the request timeout"
    );
    let after: Vec<_> = sim.fetches[sent_before..]
        .iter()
        .filter(|f| f.from == 68 && f.at_ms >= failed_at)
        .collect();
    let to_bootstrap = after
        .iter()
        .position(|f| f.to != 1003)
        .expect("a bootstrap fetch");
    assert_eq!(
        after[to_bootstrap + 1].to,
        1003,
        "next fetch after the hint goes to 1003"
    );
    assert!(sim
        .fetch_errors
        .iter()
        .any(|e| e.node == 68 && e.error_code == 6 && e.leader_id == 1003));
    assert!(
        sim.core(68).stats().not_leader_or_follower_replies >= 1,
        "the NOT_LEADER_OR_FOLLOWER counter moved"
    );
    assert_clean(&sim);
}

/// The converse (KAFKA-20514): the observer cannot reach the leader; within one request
/// timeout it asks a bootstrap server, and it follows whichever leader the replies name once
/// that one is reachable.
#[test]
fn observer_falls_back_to_bootstrap_when_leader_is_unreachable() {
    let mut cfg = SimConfig::new(11, &[1, 2, 3], &[50]);
    cfg.raft.bootstrap_servers = vec![1, 2, 3];
    let request_timeout = cfg.raft.request_timeout_ms;
    let mut sim = Sim::new(cfg);
    let leader = elect(&mut sim);
    sim.run_with_load(1_000, 50);
    assert_eq!(sim.core(50).fetch_target(), Some(leader));
    sim.block(50, leader);
    let cut_at = sim.now_ms;
    assert!(sim.run_until_pred(2 * request_timeout, |s| s
        .fetches
        .iter()
        .any(|f| f.from == 50 && f.to != leader && f.at_ms >= cut_at)));
    // Measured from the first fetch that could not reach the leader.
    let lost = sim
        .fetches
        .iter()
        .find(|f| f.from == 50 && f.to == leader && f.at_ms >= cut_at)
        .map_or(cut_at, |f| f.at_ms);
    let fallback = sim
        .fetches
        .iter()
        .find(|f| f.from == 50 && f.to != leader && f.at_ms >= cut_at)
        .expect("a bootstrap fetch")
        .at_ms;
    let retry_backoff = sim.cfg.raft.retry_backoff_ms;
    assert!(
        fallback - lost <= request_timeout + retry_backoff,
        "fell back within one request timeout ({} ms)",
        fallback - lost
    );
    // The unreachable leader dies; the bootstrap replies name its successor.
    sim.crash(leader);
    assert!(sim.run_until_pred(30_000, |s| s.leader().is_some()));
    sim.run_with_load(1_000, 50);
    assert!(sim.run_until_pred(20_000, |s| {
        let l = s.leader().expect("leader");
        s.core(50).leader_id() == Some(l)
            && s.core(50).high_watermark() == s.core(l).high_watermark()
    }));
    assert_clean(&sim);
}

#[test]
fn recovery_after_all_nodes_are_killed() {
    let mut sim = Sim::new(SimConfig::new(12, &[1, 2, 3], &[20]));
    elect(&mut sim);
    sim.run_with_load(2_000, 50);
    let before = sim.core(sim.leader().expect("leader")).high_watermark();
    for id in sim.ids() {
        sim.crash(id);
    }
    sim.run_for(1_000);
    for id in sim.ids() {
        sim.restart(id);
    }
    assert!(sim.run_until_pred(30_000, |s| s.check_converged().is_ok()));
    let leader = sim.leader().expect("leader");
    assert!(
        sim.core(leader).high_watermark() >= before,
        "everything committed before survives"
    );
    sim.run_with_load(1_000, 50);
    assert!(sim.run_until_pred(10_000, |s| s.check_converged().is_ok()));
    assert_clean(&sim);
}

#[test]
fn back_to_back_leader_failures() {
    let mut sim = Sim::new(SimConfig::new(13, &[1, 2, 3, 4, 5], &[]));
    let mut killed = Vec::new();
    for _ in 0..2 {
        let leader = elect(&mut sim);
        sim.run_with_load(500, 50);
        sim.crash(leader);
        killed.push(leader);
    }
    // Three of five remain: still a majority.
    let leader = elect(&mut sim);
    assert!(!killed.contains(&leader));
    sim.run_with_load(1_000, 50);
    for k in killed {
        sim.restart(k);
    }
    assert!(sim.run_until_pred(30_000, |s| s.check_converged().is_ok()));
    assert_clean(&sim);
}

#[test]
fn asymmetric_partition_with_pre_vote_does_not_disrupt_the_leader() {
    // The follower cannot reach the leader (its fetches are lost) but everyone hears it:
    // its pre-votes fail against voters that fetch from the live leader, so the epoch and the
    // leader stay.
    let mut sim = Sim::new(SimConfig::new(14, &[1, 2, 3], &[]));
    let leader = elect(&mut sim);
    sim.run_for(1_000);
    let epoch = sim.core(leader).epoch();
    let cut = sim
        .ids()
        .into_iter()
        .find(|i| *i != leader)
        .expect("a follower");
    sim.block(cut, leader);
    sim.run_with_load(15_000, 100);
    assert_eq!(sim.leader(), Some(leader));
    assert_eq!(sim.core(leader).epoch(), epoch, "no election was forced");
    sim.heal();
    assert!(sim.run_until_pred(10_000, |s| s.check_converged().is_ok()));
    assert_clean(&sim);
}

#[test]
fn lossy_network_still_commits_and_converges() {
    let mut cfg = SimConfig::new(15, &[1, 2, 3], &[30, 31]);
    cfg.network = crate::harness::NetworkFaults {
        drop_per_mille: 200,
        duplicate_per_mille: 100,
        delay_min_ms: 1,
        delay_max_ms: 150,
    };
    let mut sim = Sim::new(cfg);
    elect(&mut sim);
    sim.run_with_load(20_000, 50);
    sim.cfg.network = crate::harness::NetworkFaults::reliable();
    assert!(sim.run_until_pred(30_000, |s| s.check_converged().is_ok()));
    assert!(sim.core(sim.leader().expect("leader")).high_watermark() > 50);
    assert_clean(&sim);
}

#[test]
fn describe_quorum_lists_voters_and_observers_with_their_progress() {
    use kraftd_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
    use kraftd_protocol::messages::DescribeQuorumRequest;
    use kraftd_protocol::ErrorCode;

    let mut sim = Sim::new(SimConfig::new(5, &[1, 2, 3], &[7]));
    let leader = elect(&mut sim);
    sim.run_with_load(2_000, 50);
    assert!(sim.run_until_pred(10_000, |s| s.check_converged().is_ok()));
    let request = DescribeQuorumRequest {
        topics: vec![TopicData {
            topic_name: "__cluster_metadata".into(),
            partitions: vec![PartitionData::default()],
            ..Default::default()
        }],
        ..Default::default()
    };
    let now = 1_000_000;
    let response = sim.core(leader).describe_quorum(&request, now);
    assert_eq!(response.error_code, 0);
    let p = &response.topics[0].partitions[0];
    assert_eq!((p.error_code, p.leader_id), (0, leader));
    assert_eq!(p.high_watermark, sim.core(leader).high_watermark());
    let mut voters: Vec<i32> = p.current_voters.iter().map(|v| v.replica_id).collect();
    voters.sort();
    assert_eq!(voters, [1, 2, 3]);
    let end = sim.core(leader).log().end_offset();
    for v in &p.current_voters {
        assert_eq!(v.log_end_offset, end, "voter {} caught up", v.replica_id);
        assert!(v.last_fetch_timestamp >= 0 && v.last_caught_up_timestamp >= 0);
    }
    assert_eq!(p.observers.len(), 1);
    assert_eq!(p.observers[0].replica_id, 7);
    assert_eq!(p.observers[0].log_end_offset, end);

    // A follower names the leader instead.
    let follower = [1, 2, 3].into_iter().find(|id| *id != leader).unwrap();
    let response = sim.core(follower).describe_quorum(&request, now);
    let p = &response.topics[0].partitions[0];
    assert_eq!(p.error_code, ErrorCode::NotLeaderOrFollower.code());
    assert_eq!(p.leader_id, leader);

    // Another partition is refused.
    let mut other = request.clone();
    other.topics[0].topic_name = "orders".into();
    let response = sim.core(leader).describe_quorum(&other, now);
    assert_eq!(
        response.error_code,
        ErrorCode::UnknownTopicOrPartition.code()
    );
    assert_clean(&sim);
}

#[test]
fn leader_crash_before_its_own_flush_keeps_what_the_followers_committed() {
    // The leader sends new records before its fsync (Output::Flush); with a slow leader
    // disk the followers alone make the majority, and the leader crashing before its flush
    // loses only its own unflushed copy, never committed data.
    let mut cfg = SimConfig::new(21, &[1, 2, 3], &[10]);
    cfg.election_timeout_ms.insert(1, 300);
    cfg.flush_delay_ms.insert(1, 200);
    let mut sim = Sim::new(cfg);
    let leader = elect(&mut sim);
    assert_eq!(leader, 1);
    assert!(sim.run_until_pred(5_000, |s| s.check_converged().is_ok()));
    let before = sim.core(1).high_watermark();
    assert!(sim.propose(3));
    // The followers fetch, fsync and report; the leader's copy is still unflushed.
    assert!(sim.run_until_pred(100, |s| s.core(1).high_watermark() >= before + 3));
    assert!(sim.core(1).log().flushed_offset() < sim.core(1).log().end_offset());
    let committed = sim.core(1).high_watermark();
    sim.crash(1);
    assert!(sim.run_until_pred(20_000, |s| s.leader().is_some_and(|l| l != 1)));
    let new = sim.leader().expect("new leader");
    assert!(sim.core(new).log().end_offset() >= committed);
    sim.restart(1);
    sim.run_with_load(1_000, 50);
    assert!(sim.run_until_pred(20_000, |s| s.check_converged().is_ok()));
    assert!(sim.core(1).high_watermark() > committed);
    assert_clean(&sim);
}

#[test]
fn snapshot_catch_up_of_a_node_far_behind() {
    for seed in 11..19 {
        snapshot_catch_up(seed);
    }
}

fn snapshot_catch_up(seed: u64) {
    let mut cfg = SimConfig::new(seed, &[1, 2, 3], &[10]);
    // Small chunks, so the download takes many FetchSnapshot round trips.
    cfg.raft.fetch_max_bytes = 512;
    let mut sim = Sim::new(cfg);
    let leader = elect(&mut sim);
    assert!(sim.run_until_pred(5_000, |s| s.check_converged().is_ok()));
    let behind = [1, 2, 3]
        .into_iter()
        .find(|v| *v != leader)
        .expect("a follower");
    sim.crash(behind);
    sim.crash(10);
    sim.wipe(10);
    sim.run_with_load(3_000, 20);
    sim.run_for(500);
    let snap = sim.snapshot_and_trim(leader).expect("the leader snapshots");
    assert!(snap.end_offset > 10, "the log moved on: {snap:?}");
    assert_eq!(sim.core(leader).log().start_offset(), snap.end_offset);
    let (_, size) = sim
        .core(leader)
        .log()
        .read_snapshot(snap, 0, 1)
        .expect("held");
    assert!(size > 4 * 512, "a download of many chunks ({size} bytes)");
    // More records after the snapshot, then the nodes far behind come back.
    sim.run_with_load(1_000, 20);
    sim.restart(behind);
    sim.restart(10);
    assert!(
        sim.run_until_pred(20_000, |s| s.check_converged().is_ok()),
        "seed {}: no convergence: {:?}",
        sim.cfg.seed,
        sim.check_converged()
    );
    sim.run_with_load(1_000, 20);
    sim.run_for(1_000);
    sim.check_converged().expect("converged");
    for node in [behind, 10] {
        let log = sim.core(node).log();
        assert_eq!(
            log.latest_snapshot(),
            Some(snap),
            "node {node} installed it"
        );
        assert_eq!(log.start_offset(), snap.end_offset);
        assert_eq!(
            log.read(snap.end_offset, 1 << 30),
            sim.core(leader).log().read(snap.end_offset, 1 << 30),
            "node {node} holds the leader's batches after the snapshot"
        );
    }
    assert!(
        sim.snapshots_delivered() >= 2,
        "listeners loaded the snapshot"
    );
    assert_clean(&sim);
}

/// Captures the messages of the events logged on this thread (a minimal `tracing`
/// subscriber, so a scenario can assert what the core logged).
struct CaptureLogs(Arc<Mutex<Vec<String>>>);

struct MessageOf<'a>(&'a mut String);

impl tracing::field::Visit for MessageOf<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        let _ = write!(self.0, "{}={value:?} ", field.name());
    }
}

impl tracing::Subscriber for CaptureLogs {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut line = format!("{} ", event.metadata().level());
        event.record(&mut MessageOf(&mut line));
        self.0.lock().expect("not poisoned").push(line);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The HW the leader computes from the voters' end offsets it knows (its own durable one
/// counted), below its HW when a voter lost data it had reported.
fn computed_hw(sim: &Sim, leader: i32) -> i64 {
    let core = sim.core(leader);
    core.leader_state()
        .expect("leads")
        .majority_end_offset(core.log().flushed_offset())
}

/// Seed 000 (S0.3) and the "single-node committed-data loss": one voter of three
/// loses its disk and its quorum state right after it helped commit, while the leader has not
/// yet heard that the third voter holds the same records. The HW the leader computes from the
/// voters' end offsets falls below its HW: the HW does not go back, the leader logs that a
/// voter lost committed data, and, the third voter holding the data, nothing committed is
/// lost: the wiped voter fetches it all again, learns the epoch, and the cluster goes on.
/// (This wipe passes `Sim::voter_wipe_is_safe`; the next scenario is one that does not.)
#[test]
fn single_node_committed_data_loss_keeps_the_hw_and_is_logged() {
    let mut cfg = SimConfig::new(31, &[1, 2, 3], &[10]);
    cfg.election_timeout_ms.insert(1, 300);
    // Voter 3's requests take 4 s to reach the leader, so the leader learns late that 3
    // holds what it fetched; timeouts long enough that nobody gives up on that link.
    cfg.raft.request_timeout_ms = 10_000;
    cfg.raft.fetch_timeout_ms = 20_000;
    let mut sim = Sim::new(cfg);
    assert_eq!(elect(&mut sim), 1);
    assert!(sim.run_until_pred(5_000, |s| s.check_converged().is_ok()));
    sim.slow_link(3, 1, 4_000);
    assert!(sim.propose(3));
    let end = sim.core(1).log().end_offset();
    // Voters 1 and 2 commit the records; 3 holds them durably too, but its Fetch saying so
    // is still on the slow link.
    assert!(sim.run_until_pred(1_000, |s| {
        s.core(1).high_watermark() == end && s.core(3).log().flushed_offset() == end
    }));
    let known_of_3 = sim.core(1).leader_state().expect("leads").voters[&3].end_offset;
    assert!(
        known_of_3 < Some(end),
        "the leader does not know yet: {known_of_3:?}"
    );
    assert_eq!(computed_hw(&sim, 1), end);

    // Voter 2 loses everything: log and quorum-state. Voters 1 and 3 still hold all it held.
    sim.voter_wipe_is_safe(2)
        .expect("a majority holds the data without voter 2");
    sim.wipe(2);
    sim.restart(2);
    assert_eq!(sim.core(2).log().end_offset(), 0);
    assert_eq!(sim.core(2).epoch(), 0);
    let logs = Arc::new(Mutex::new(Vec::new()));
    let subscriber = CaptureLogs(logs.clone());
    let saw_lower = tracing::subscriber::with_default(subscriber, || {
        // Voter 2 finds the leader and fetches from offset 0 (the leader answers at once):
        // the leader's computed HW drops below its HW, before 3's Fetch arrives.
        sim.run_until_pred(3_500, |s| computed_hw(s, 1) < s.core(1).high_watermark())
    });
    assert!(saw_lower, "the computed HW fell below the HW");
    assert_eq!(sim.core(1).high_watermark(), end, "the HW did not go back");
    assert_eq!(sim.core(1).role(), RoleName::Leader);
    let logged = logs.lock().expect("not poisoned").clone();
    assert!(
        logged
            .iter()
            .any(|l| l.starts_with("ERROR") && l.contains("lost committed data")),
        "the leader logged the loss: {logged:?}"
    );

    // 3's Fetch arrives, 2 catches up: committing resumes; nothing committed was lost.
    sim.heal();
    sim.run_with_load(2_000, 50);
    assert!(sim.run_until_pred(10_000, |s| s.check_converged().is_ok()));
    assert!(sim.core(1).high_watermark() > end);
    let leader_log = sim.core(1).log().read(0, 1 << 30);
    assert_eq!(sim.core(2).log().read(0, 1 << 30), leader_log);
    assert_eq!(sim.core(2).epoch(), sim.core(1).epoch());
    assert_eq!(sim.voter_wipes, 1);
    assert_clean(&sim);
}

/// Why random schedules wipe a voter only when `Sim::voter_wipe_is_safe` allows it: the
/// committed data is on the leader and voter 2 only (3 is cut off and behind); 2 loses its
/// disk, then the leader dies. Raft with a static quorum cannot tell a wiped voter from a new
/// one (KIP-853's directory ids can), so 2 votes for 3, which never had the data: committed
/// data is gone, and the simulator's invariants say so.
#[test]
fn wiping_a_voter_that_holds_committed_data_with_only_the_leader_loses_it() {
    let mut cfg = SimConfig::new(32, &[1, 2, 3], &[]);
    cfg.election_timeout_ms.insert(1, 300);
    cfg.election_timeout_ms.insert(3, 300);
    let mut sim = Sim::new(cfg);
    assert_eq!(elect(&mut sim), 1);
    assert!(sim.run_until_pred(5_000, |s| s.check_converged().is_ok()));
    sim.isolate(3);
    sim.run_with_load(1_000, 50);
    sim.run_for(500);
    let hw = sim.core(1).high_watermark();
    assert!(sim.core(3).log().end_offset() < hw, "3 is behind");
    let why = sim
        .voter_wipe_is_safe(2)
        .expect_err("only the leader would hold it");
    assert!(why.contains("only 1 other voters"), "{why}");
    sim.wipe_unchecked(2);
    sim.restart(2);
    sim.crash(1);
    sim.heal();
    assert!(sim.run_until_pred(20_000, |s| s.leader().is_some()));
    assert_eq!(sim.leader(), Some(3), "elected without the committed data");
    sim.run_with_load(2_000, 50);
    sim.restart(1);
    sim.run_for(5_000);
    // 3 commits its own records at offsets that held committed data: the simulator sees
    // committed batches that differ between nodes and are held by fewer than a majority.
    for what in ["differs between nodes", "held by only 1 voters"] {
        assert!(
            sim.violations.iter().any(|v| v.contains(what)),
            "expected \"{what}\" among {:?}",
            sim.violations
        );
    }
}

/// Found by random seeds 33950, 40617, 55012, 79368 and 89309 (of 100,000): the leader's HW
/// may pass its own flushed offset (the followers make the majority while its fsync is
/// pending), so a snapshot at the HW can end above it; deleting the log before that snapshot
/// leaves `MemoryLog`'s log start above its flushed offset, and a crash then panics in
/// `MemoryLog::crash` ("flushed offset N is not a batch boundary"). The snapshot is durable,
/// so what a crash keeps is the snapshot and the flushed batches after it: deleting the log
/// before a snapshot now raises the flushed offset to the new log start.
#[test]
fn leader_snapshot_above_its_own_flushed_offset_survives_a_crash() {
    let mut cfg = SimConfig::new(33, &[1, 2, 3], &[]);
    cfg.election_timeout_ms.insert(1, 300);
    cfg.flush_delay_ms.insert(1, 200);
    let mut sim = Sim::new(cfg);
    assert_eq!(elect(&mut sim), 1);
    assert!(sim.run_until_pred(5_000, |s| s.check_converged().is_ok()));
    let before = sim.core(1).high_watermark();
    assert!(sim.propose(3));
    assert!(sim.run_until_pred(100, |s| s.core(1).high_watermark() >= before + 3));
    let flushed = sim.core(1).log().flushed_offset();
    let snap = sim
        .snapshot_and_trim(1)
        .expect("the leader snapshots at its HW");
    assert!(
        snap.end_offset > flushed,
        "{snap:?} above flushed {flushed}"
    );
    sim.crash(1);
    sim.restart(1);
    assert_eq!(sim.core(1).log().latest_snapshot(), Some(snap));
    assert!(sim.run_until_pred(20_000, |s| s.check_converged().is_ok()));
    assert_clean(&sim);
}
