//! Seed 001's replication scenarios (SCENARIOS S1.1–S1.9) driven through real
//! [`Partition`](kraftd_broker::replica::partition::Partition)s on real log files, with the
//! fetch step the fetcher performs (see `replication/mod.rs`). The data-plane scenarios
//! (S1.1–S1.5) take their metadata from the test, with the seed's epochs; the ones about the
//! controller's decisions (S1.7–S1.9) take it from the real control managers.

mod replication;

use kraftd_broker::replica::partition::{PartitionConfig, Role};
use kraftd_controller::image::LeaderRecoveryState;
use kraftd_protocol::ErrorCode;
use replication::controller::{controller, Controller, ControllerExt};
use replication::*;

fn config(min_isr: usize) -> PartitionConfig {
    PartitionConfig {
        min_insync_replicas: min_isr,
        ..PartitionConfig::default()
    }
}

fn vals(c: &Cluster, id: i32) -> Vec<String> {
    c.log_values(id).into_iter().map(|(_, v)| v).collect()
}

/// S1.1: the HW is the smallest log end offset in the ISR, and consumers see only below it.
#[test]
fn s1_1_high_watermark_is_min_isr_log_end_and_bounds_consumers() {
    let mut c = Cluster::new(&[1, 2, 3], config(1));
    c.apply(&state(1, 0, 0, &[1, 2, 3], &[1, 2, 3]));
    c.write(1, &["m0"]);
    c.write(1, &["m1"]);
    c.catch_up(2);
    c.catch_up(3);
    assert_eq!(c.p(1).high_watermark(), 2);
    assert_eq!((c.p(2).log_end_offset(), c.p(3).log_end_offset()), (2, 2));

    c.write(1, &["m2"]);
    c.write(1, &["m3"]);
    assert_eq!((c.p(1).log_end_offset(), c.p(1).high_watermark()), (4, 2));
    assert_eq!(c.consume(1), ["m0", "m1"]);

    // Follower 2 fetches m2 and m3 and reports LEO 4 on its next fetch.
    assert_eq!(c.fetch(2), Fetched::Appended { first: 2, last: 3 });
    // Follower 3 fetches only m2 (one batch per fetch).
    assert_eq!(c.fetch_with(3, 1), Fetched::Appended { first: 2, last: 2 });
    c.fetch(2);
    assert_eq!(c.p(1).replica_state(2).unwrap().log_end_offset, 4);
    assert_eq!(
        c.p(1).high_watermark(),
        2,
        "follower 3 has not reported m2 yet"
    );
    // Its next fetch reports LEO 3 (and brings m3).
    assert_eq!(c.fetch_with(3, 1), Fetched::Appended { first: 3, last: 3 });
    assert_eq!(c.p(1).high_watermark(), 3, "HW = min ISR LEO = 3");
    assert_eq!(c.consume(1), ["m0", "m1", "m2"]);
    // Reporting LEO 4 moves the HW to 4.
    c.fetch(3);
    assert_eq!(c.p(1).high_watermark(), 4);
    assert_eq!(c.consume(1), ["m0", "m1", "m2", "m3"]);
    // Followers learn the HW from the leader's answers.
    c.fetch(2);
    c.fetch(3);
    assert_eq!((c.p(2).high_watermark(), c.p(3).high_watermark()), (4, 4));
    c.assert_identical(&[1, 2, 3]);
}

/// S1.2 (KIP-101 case 1): a follower restarting with HW 1 and m2 at offset 1 keeps m2: its
/// fetch's last fetched epoch matches the leader's, nothing is truncated; after failover
/// m2 is still there and the new epoch starts at 2.
#[test]
fn s1_2_follower_restart_keeps_acknowledged_record_then_failover_keeps_it() {
    // B = 2 leads epoch 0, A = 1 follows.
    let (a, b) = (1, 2);
    let mut c = Cluster::new(&[a, b], config(1));
    c.apply(&state(b, 0, 0, &[b, a], &[b, a]));
    let m1 = c.produce(b, batch(&["m1"]), -1).unwrap();
    c.catch_up(a);
    let m2 = c.produce(b, batch(&["m2"]), -1).unwrap();
    assert_eq!((m1.first_offset, m2.first_offset), (0, 1));
    assert_eq!(c.p(b).check_enough_replicas_reach_offset(2), None);
    // A fetches m2 ...
    assert_eq!(c.fetch(a), Fetched::Appended { first: 1, last: 1 });
    // ... and tells B on its next fetch: B's HW becomes 2, m2 is acknowledged; A's answer
    // carried the HW B had when it read, 1.
    assert_eq!(c.fetch(a), Fetched::Appended { first: 2, last: 1 });
    assert_eq!(c.p(b).high_watermark(), 2);
    assert_eq!(
        c.p(b).check_enough_replicas_reach_offset(2),
        Some(ErrorCode::None)
    );
    assert_eq!(c.p(a).high_watermark(), 1, "A does not know HW 2 yet");

    // A restarts (its data was flushed; its HW checkpoint says 1).
    c.flush(a);
    c.restart(a, true, 201);
    assert_eq!((c.p(a).log_end_offset(), c.p(a).high_watermark()), (2, 1));
    c.apply_to(a, &state(b, 0, 0, &[b, a], &[b, a]));
    // OffsetForLeaderEpoch(0) on B: epoch 0 ends at 2; A truncates nothing.
    assert_eq!(c.p(b).end_offset_for_epoch(0), (0, 2));
    assert_eq!(c.fetch(a), Fetched::Appended { first: 2, last: 1 });
    assert_eq!(c.p(a).log_end_offset(), 2, "no truncation to the HW");
    assert_eq!(c.p(a).high_watermark(), 2);

    // B dies; A leads epoch 1 and still has m2.
    c.crash(b, false);
    c.apply_to(a, &state(a, 1, 1, &[b, a], &[a]));
    assert_eq!(c.p(a).role(), Role::Leader);
    assert_eq!(vals(&c, a), ["m1", "m2"]);
    assert_eq!(
        c.p(a).end_offset_for_epoch(1),
        (1, 2),
        "epoch 1 starts at offset 2"
    );
    let entries: Vec<(i32, i64)> = c
        .p(a)
        .log()
        .epoch_entries()
        .iter()
        .map(|e| (e.epoch, e.start_offset))
        .collect();
    assert_eq!(entries, [(0, 0), (1, 2)]);
    assert_eq!(c.consume(a), ["m1", "m2"]);
    let m3 = c.produce(a, batch(&["m3"]), 1).unwrap();
    assert_eq!(m3.first_offset, 2);
}

/// S1.3 (KIP-101 case 2): both replicas crash, the follower loses an unflushed record and
/// leads first; the old leader truncates by epoch and the logs end identical.
#[test]
fn s1_3_divergence_after_double_crash_is_truncated_by_epoch() {
    let (a, b) = (1, 2);
    let mut c = Cluster::new(&[a, b], config(1));
    c.apply(&state(a, 0, 0, &[a, b], &[a, b]));
    c.write(a, &["m1"]);
    c.catch_up(b);
    c.flush(b);
    c.write(a, &["m2"]);
    c.catch_up(b);
    assert_eq!(c.p(a).high_watermark(), 2);
    assert_eq!(c.p(b).log_end_offset(), 2);
    c.flush(a);

    // Both crash; B loses m2.
    c.crash(a, true);
    c.crash(b, true);
    c.start(b);
    assert_eq!(c.p(b).log_end_offset(), 1, "B lost the unflushed m2");
    // B leads epoch 1 and accepts m3 at offset 1.
    c.apply_to(b, &state(b, 1, 1, &[a, b], &[b]));
    assert_eq!(c.write(b, &["m3"]), (1, 1));

    // A restarts as follower with m1, m2 and HW 2.
    c.start(a);
    assert_eq!((c.p(a).log_end_offset(), c.p(a).high_watermark()), (2, 2));
    c.apply_to(a, &state(b, 1, 1, &[a, b], &[b]));
    // B answers the end of epoch 0: 1; A truncates offset >= 1.
    assert_eq!(c.p(b).end_offset_for_epoch(0), (0, 1));
    assert_eq!(
        c.fetch(a),
        Fetched::Truncated {
            epoch: 0,
            end_offset: 1,
            new_end: 1
        }
    );
    c.catch_up(a);
    assert_eq!(vals(&c, a), ["m1", "m3"]);
    c.assert_identical(&[a, b]);
}

/// S1.4 (KIP-279): the returning replica learns the largest epoch ≤ its own the leader
/// knows (1) and its end (21), truncates to the batch boundary 11, and ends identical —
/// whether its own epoch-2 batch ended below 21 (n = 15, the case that diverged before
/// KIP-279) or past it (n = 25).
#[test]
fn s1_4_fast_failover_truncates_to_batch_boundary_and_converges() {
    fast_failover(15);
    fast_failover(25);
}

fn fast_failover(n: i64) {
    let (a, b) = (1, 2);
    let mut c = Cluster::new(&[a, b], config(1));
    // A leads epoch 1 (epoch 0 never wrote anything).
    c.apply(&state(a, 1, 0, &[b, a], &[b, a]));
    let first = values("a", 11);
    let second = values("a", 21);
    assert_eq!(c.write(a, &strs(&first)), (0, 10));
    c.catch_up(b);
    assert_eq!(c.write(a, &strs(&second[11..])), (11, 20));
    assert_eq!(c.p(b).log_end_offset(), 11, "B has only [0,10]");

    // Preferred election: B leads epoch 2 and appends [11,n].
    c.apply(&state(b, 2, 1, &[b, a], &[b, a]));
    assert_eq!(c.write(b, &strs(&values("b", (n - 10) as usize))), (11, n));
    // B goes offline before A truncates; A leads epoch 3 and appends [21,30].
    c.crash(b, false);
    c.apply_to(a, &state(a, 3, 2, &[b, a], &[a]));
    assert_eq!(c.write(a, &strs(&values("c", 10))), (21, 30));

    // B returns as follower. A answers epoch 2 with (1, 21).
    c.start(b);
    c.apply(&state(a, 3, 2, &[b, a], &[a]));
    assert_eq!(c.p(a).end_offset_for_epoch(2), (1, 21));
    assert_eq!(c.p(b).fetch_position(), (n + 1, 2));
    assert_eq!(
        c.fetch(b),
        Fetched::Truncated {
            epoch: 1,
            end_offset: 21,
            new_end: 11
        },
        "n = {n}"
    );
    assert_eq!(
        c.fetch(b),
        Fetched::Appended {
            first: 11,
            last: 30
        }
    );
    c.catch_up(b);
    c.assert_identical(&[a, b]);
    assert_eq!(c.batch_shape(b), [(0, 10, 1), (11, 20, 1), (21, 30, 3)]);
}

/// S1.5 (KIP-320): a fetcher that missed two leader changes is fenced, learns the new
/// epoch, truncates by epoch instead of keeping its stale 40..50, and converges.
#[test]
fn s1_5_stale_fetcher_is_fenced_then_truncates_by_epoch() {
    let (r1, r2, r3) = (1, 2, 3);
    let mut c = Cluster::new(&[r1, r2, r3], config(1));
    let replicas = [r1, r2, r3];
    c.apply(&state(r1, 0, 0, &replicas, &replicas));
    for i in 0..4 {
        c.write(r1, &strs(&values(&format!("e0-{i}-"), 10)));
    }
    c.catch_up(r2);
    c.catch_up(r3);
    c.write(r1, &strs(&values("e0-4-", 10)));
    c.catch_up(r2);
    assert_eq!(
        (
            c.p(r1).log_end_offset(),
            c.p(r2).log_end_offset(),
            c.p(r3).log_end_offset()
        ),
        (50, 50, 40)
    );
    assert_eq!(c.p(r1).high_watermark(), 40);

    // R2 loses the controller: it never learns epochs 1 and 2.
    let epoch1 = state(r3, 1, 1, &replicas, &[r1, r3]);
    c.apply_to(r3, &epoch1);
    c.apply_to(r1, &epoch1);
    assert_eq!(
        c.fetch(r1),
        Fetched::Truncated {
            epoch: 0,
            end_offset: 40,
            new_end: 40
        }
    );
    c.write(r3, &strs(&values("e1-0-", 10)));
    c.write(r3, &strs(&values("e1-1-", 10)));
    c.catch_up(r1);
    assert_eq!(c.p(r1).log_end_offset(), 60);

    // R2 keeps fetching from R1 with epoch 0: R1 is a follower now.
    assert_eq!(c.fetch(r2), Fetched::Error(ErrorCode::FencedLeaderEpoch));
    assert_eq!(
        c.fetch_from(r2, r1, -1, 1 << 20),
        Fetched::Error(ErrorCode::NotLeaderOrFollower),
        "without a current leader epoch R1 can only say it does not lead"
    );

    // A fetcher ahead of R3 (it learned an epoch R3 has not) is told to wait.
    assert_eq!(
        c.fetch_from(r1, r3, 2, 1 << 20),
        Fetched::Error(ErrorCode::UnknownLeaderEpoch)
    );

    // R1 leads again at epoch 2; R2's stale fetch is fenced, not served from 50.
    let epoch2 = state(r1, 2, 2, &replicas, &[r1, r3]);
    c.apply_to(r1, &epoch2);
    c.apply_to(r3, &epoch2);
    assert_eq!(c.fetch(r2), Fetched::Error(ErrorCode::FencedLeaderEpoch));
    assert_eq!(
        c.p(r2).log_end_offset(),
        50,
        "nothing appended on a fenced fetch"
    );

    // R2 learns epoch 2 from the metadata, truncates by epoch, then fetches.
    c.apply_to(r2, &epoch2);
    assert_eq!(
        c.fetch(r2),
        Fetched::Truncated {
            epoch: 0,
            end_offset: 40,
            new_end: 40
        }
    );
    c.catch_up(r2);
    c.catch_up(r3);
    c.assert_identical(&[r1, r2, r3]);
    let r2_values = c.log_values(r2);
    assert_eq!(
        r2_values[40].1, "e1-0-0",
        "offset 40 is the epoch-1 record, not the stale one"
    );
    assert_eq!(c.p(r1).high_watermark(), 60);
}

// ---- scenarios decided by the controller --------------------------------------------------

/// A cluster whose brokers are registered and unfenced with the real control managers and
/// host partition 0 as the controller created it.
fn controlled(ids: &[i32], isr: &[i32], elr: bool, min_isr: usize) -> (Cluster, Controller) {
    let mut ctl = controller(elr, min_isr);
    ctl.start_brokers(ids);
    ctl.create_partition_with_isr(ids, isr);
    let mut c = Cluster::new(
        ids,
        PartitionConfig {
            min_insync_replicas: min_isr,
            elr_enabled: elr,
            ..PartitionConfig::default()
        },
    );
    ctl.publish(&mut c);
    (c, ctl)
}

#[track_caller]
fn assert_step(ctl: &Controller, time: &str, isr: &[i32], elr: &[i32], leader: i32) {
    assert_eq!(
        ctl.isr_elr_leader(),
        (isr.to_vec(), elr.to_vec(), leader),
        "{time}: (ISR, ELR, leader)"
    );
}

/// Every replica's view of the committed ISR matches the controller's (the leader's own
/// ISR included).
#[track_caller]
fn assert_leader_isr(c: &Cluster, ctl: &Controller) {
    let p = ctl.partition();
    if p.leader >= 0 && c.is_up(p.leader) {
        let mut isr = c.p(p.leader).isr().to_vec();
        isr.sort();
        let mut expected = p.isr.clone();
        expected.sort();
        assert_eq!(isr, expected, "leader {}'s ISR", p.leader);
        assert_eq!(c.p(p.leader).leader_epoch(), p.leader_epoch);
    }
}

/// S1.6 (KIP-380): a restart gets a new, larger broker epoch (its registration's offset);
/// requests still carrying the old one are STALE_BROKER_EPOCH.
#[test]
fn s1_6_restart_gets_larger_broker_epoch_and_old_epoch_is_stale() {
    let (mut c, mut ctl) = controlled(&[1, 2], &[1, 2], true, 1);
    let old = ctl.epoch(1);
    // The old incarnation's session is still live: a new incarnation must wait for it.
    assert_eq!(
        ctl.restart_unclean(1).error_code,
        ErrorCode::DuplicateBrokerRegistration.code()
    );
    ctl.go_offline(&[1]);
    let response = ctl.restart_unclean(1);
    assert_eq!(response.error_code, 0);
    assert!(
        response.broker_epoch > old,
        "{} > {old}",
        response.broker_epoch
    );
    assert_eq!(response.broker_epoch, ctl.epoch(1));
    // A heartbeat with the old epoch is refused.
    assert_eq!(
        ctl.heartbeat_at(1, old).error_code,
        ErrorCode::StaleBrokerEpoch.code()
    );
    assert!(!ctl.heartbeat(1).is_fenced);
    ctl.publish(&mut c);
    // Broker 2 leads now (1 was fenced); an AlterPartition of its with a stale broker
    // epoch is refused too.
    assert_step(&ctl, "after 1's restart", &[2], &[], 2);
    c.write(2, &["m0"]);
    c.catch_up(1);
    let (leader, change) = c.alter_partitions.pop().expect("2 proposes adding 1");
    assert_eq!(leader, 2);
    assert_eq!(change.new_isr, vec![(2, ctl.epoch(2)), (1, ctl.epoch(1))]);
    let stale = ctl.epoch(2) - 1;
    assert_eq!(
        ctl.send_isr_change_as(2, stale, &change),
        Err(ErrorCode::StaleBrokerEpoch)
    );
    assert_step(&ctl, "stale AlterPartition", &[2], &[], 2);
    c.alter_partitions.push((leader, change));
    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::None]);
    assert_step(&ctl, "current AlterPartition", &[1, 2], &[], 2);
    assert_leader_isr(&c, &ctl);
}

/// S1.7 (KIP-903): the leader proposes adding B with the broker epoch B's fetches carried;
/// B crashes, loses unflushed data and registers again before the AlterPartition arrives:
/// the controller answers INELIGIBLE_REPLICA and B stays out until it catches up again.
#[test]
fn s1_7_stale_isr_join_after_restart_is_ineligible() {
    let (a, b) = (1, 2);
    let (mut c, mut ctl) = controlled(&[a, b], &[a], true, 1);
    assert_step(&ctl, "start", &[a], &[], a);
    c.write(a, &["m0", "m1"]);
    c.write(a, &["m2"]);
    c.flush(a);
    let old_epoch = ctl.epoch(b);
    c.catch_up(b);
    assert_eq!(c.p(b).log_end_offset(), 3);
    assert_eq!(c.p(a).pending_isr(), Some(&[a, b][..]));
    let (_, change) = c.alter_partitions.last().unwrap().clone();
    assert_eq!(change.new_isr, vec![(a, ctl.epoch(a)), (b, old_epoch)]);

    // B crashes before the AlterPartition reaches the controller and loses its unflushed
    // records; it registers again (new epoch) and catches up with the metadata.
    c.crash(b, true);
    ctl.go_offline(&[b]);
    assert_eq!(ctl.restart_unclean(b).error_code, 0);
    assert!(!ctl.heartbeat(b).is_fenced);
    assert!(ctl.epoch(b) > old_epoch);
    c.nodes.get_mut(&b).unwrap().broker_epoch = ctl.epoch(b);
    c.start(b);
    assert_eq!(c.p(b).log_end_offset(), 0, "B lost m0..m2");

    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::IneligibleReplica]);
    assert_step(&ctl, "stale join refused", &[a], &[], a);
    assert_eq!(c.p(a).isr(), [a]);
    assert_eq!(c.p(a).pending_isr(), None);

    // B fetches again with its new epoch and joins legitimately once caught up.
    c.catch_up(b);
    let (_, change) = c.alter_partitions.last().unwrap().clone();
    assert_eq!(change.new_isr, vec![(a, ctl.epoch(a)), (b, ctl.epoch(b))]);
    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::None]);
    assert_step(&ctl, "B caught up", &[a, b], &[], a);
    c.assert_identical(&[a, b]);
}

/// S1.8 (KIP-966): three replicas, min ISR 2; the last ISR member crashes and loses data.
/// The HW freezes once |ISR| < 2, the ELR keeps the cut-off replica electable, the unclean
/// one leaves the ELR, and nothing committed is lost.
#[test]
fn s1_8_unclean_last_isr_member_elr_election_loses_nothing_committed() {
    let (mut c, mut ctl) = controlled(&[0, 1, 2], &[0, 1, 2], true, 2);
    let m = c.produce(0, batch(&["m0", "m1"]), -1).unwrap();
    c.catch_up(1);
    c.catch_up(2);
    assert_eq!(
        c.p(0).check_enough_replicas_reach_offset(m.last_offset + 1),
        Some(ErrorCode::None)
    );
    for id in [0, 1, 2] {
        c.flush(id);
    }

    // T0: broker 0 cut off (its process keeps running, it just loses the controller).
    ctl.go_offline(&[0]);
    assert_step(&ctl, "T0", &[1, 2], &[], 1);
    c.crash(0, false);
    ctl.publish(&mut c);
    let m2 = c.produce(1, batch(&["m2"]), -1).unwrap();
    c.catch_up(2);
    assert_eq!(
        c.p(1)
            .check_enough_replicas_reach_offset(m2.last_offset + 1),
        Some(ErrorCode::None)
    );
    let committed = c.p(1).high_watermark();
    assert_eq!(committed, 3);

    // T1: broker 1 cut off; |ISR| 1 < min ISR 2: 1 joins the ELR, the HW freezes.
    ctl.go_offline(&[1]);
    assert_step(&ctl, "T1", &[2], &[1], 2);
    c.crash(1, false);
    ctl.publish(&mut c);
    assert_eq!(
        c.produce(2, batch(&["m3"]), -1),
        Err(ErrorCode::NotEnoughReplicas)
    );
    // Broker 2 had learned HW 2 as follower; as leader of an ISR below min ISR it may not
    // move it, not even over m2 (committed) or m3 (acks=1).
    let frozen = c.p(2).high_watermark();
    assert_eq!(frozen, 2);
    c.write(2, &["m3"]);
    assert_eq!(c.p(2).log_end_offset(), 4);
    assert_eq!(c.p(2).high_watermark(), frozen, "HW frozen below min ISR");

    // T2: broker 2 crashes and loses what it never flushed (m2, m3).
    c.crash(2, true);
    ctl.go_offline(&[2]);
    assert_step(&ctl, "T2", &[], &[1, 2], -1);

    // T3: brokers 0 and 1 return; 0 is not electable, 1 is elected from the ELR.
    c.start(0);
    c.start(1);
    assert!(!ctl.heartbeat(0).is_fenced);
    assert_step(&ctl, "T3a", &[], &[1, 2], -1);
    assert!(!ctl.heartbeat(1).is_fenced);
    assert_step(&ctl, "T3", &[1], &[2], 1);
    ctl.publish(&mut c);
    assert_eq!(c.p(1).role(), Role::Leader);

    // T4: broker 2 restarts uncleanly: it leaves the ELR.
    assert_eq!(ctl.restart_unclean(2).error_code, 0);
    assert_step(&ctl, "T4", &[1], &[], 1);
    assert!(!ctl.heartbeat(2).is_fenced);
    c.start(2);
    assert_eq!(c.p(2).log_end_offset(), 2, "broker 2 lost m2 and m3");
    ctl.publish(&mut c);

    // Everything committed survives on the new leader, and the followers converge on it.
    assert_eq!(vals(&c, 1), ["m0", "m1", "m2"]);
    c.catch_up(0);
    c.catch_up(2);
    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::None]);
    c.catch_up(0);
    c.catch_up(2);
    ctl.send_isr_changes(&mut c);
    assert_step(&ctl, "all caught up", &[0, 1, 2], &[], 1);
    assert_leader_isr(&c, &ctl);
    c.assert_identical(&[0, 1, 2]);
    assert_eq!(c.consume(1), ["m0", "m1", "m2"]);
}

/// S1.9: the KIP-966 worked example, T0–T7, with data: the ISR, ELR and leader of the
/// seed's table at every step, the HW frozen while |ISR| < 3, and every committed record on
/// the leader elected from the ELR.
#[test]
fn s1_9_kip966_worked_example_table() {
    let lag = PartitionConfig::default().replica_lag_time_max_ms;
    let (mut c, mut ctl) = controlled(&[1, 2, 3, 4], &[1, 2, 3, 4], true, 3);
    c.write(1, &["m0"]);
    for f in [2, 3, 4] {
        c.catch_up(f);
    }
    assert_step(&ctl, "T0 all online", &[1, 2, 3, 4], &[], 1);
    assert_eq!(c.p(1).high_watermark(), 1);

    // T1: b3, b4 stop fetching; past replica.lag.time.max.ms b1 shrinks the ISR.
    c.write(1, &["m1"]);
    c.tick(lag + 1);
    c.catch_up(2);
    let now = c.now_ms;
    let change = c.pm(1).maybe_shrink_isr(now).expect("b3, b4 lag");
    assert_eq!(
        change.new_isr.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
        [1, 2]
    );
    c.alter_partitions.push((1, change));
    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::None]);
    assert_step(&ctl, "T1 b3, b4 lag", &[1, 2], &[3, 4], 1);
    assert_leader_isr(&c, &ctl);
    assert_eq!(
        c.p(1).high_watermark(),
        1,
        "|ISR| 2 < 3: HW frozen though b2 has m1"
    );
    assert_eq!(
        c.produce(1, batch(&["x"]), -1),
        Err(ErrorCode::NotEnoughReplicas)
    );

    // T2: b3 catches up and is added; |ISR| 3 clears the ELR and the HW moves.
    c.catch_up(3);
    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::None]);
    assert_step(&ctl, "T2 b3 added", &[1, 2, 3], &[], 1);
    assert_eq!(c.p(1).high_watermark(), 2);
    let committed = c.p(1).high_watermark();
    for id in [1, 2, 3] {
        c.flush(id);
    }

    // T3: b2, b3 go offline (cleanly).
    c.crash(2, false);
    c.crash(3, false);
    ctl.go_offline(&[2, 3]);
    assert_step(&ctl, "T3 b2, b3 offline", &[1], &[2, 3], 1);
    ctl.publish(&mut c);
    c.write(1, &["m2"]);

    // T4: b4 catches up and is added.
    c.catch_up(4);
    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::None]);
    assert_step(&ctl, "T4 b4 added", &[1, 4], &[2, 3], 1);
    assert_eq!(
        c.p(1).high_watermark(),
        committed,
        "|ISR| 2 < 3: HW still frozen"
    );

    // T5: b1, b4 go offline (b1 loses its unflushed m2); b3 returns after an unclean
    // shutdown.
    c.crash(1, true);
    c.crash(4, false);
    ctl.go_offline(&[1, 4]);
    assert_eq!(ctl.restart_unclean(3).error_code, 0);
    assert_step(&ctl, "T5", &[], &[1, 2, 4], -1);

    // T6: b1 returns uncleanly (leaves the ELR); b2 returns cleanly and is elected.
    assert_eq!(ctl.restart_unclean(1).error_code, 0);
    assert_step(&ctl, "T6a b1 unclean", &[], &[2, 4], -1);
    assert_eq!(ctl.restart_clean(2).error_code, 0);
    assert!(!ctl.heartbeat(2).is_fenced);
    assert_step(&ctl, "T6 b2 elected from the ELR", &[2], &[4], 2);
    c.start(2);
    ctl.publish(&mut c);
    assert_eq!(c.p(2).role(), Role::Leader);
    let on_b2 = vals(&c, 2);
    assert_eq!(
        on_b2[..committed as usize],
        ["m0", "m1"],
        "everything committed is on b2"
    );

    // T7: b1, b3 catch up and are added; |ISR| 3 clears the ELR.
    assert!(!ctl.heartbeat(1).is_fenced);
    assert!(!ctl.heartbeat(3).is_fenced);
    c.start(1);
    c.start(3);
    ctl.publish(&mut c);
    assert_step(&ctl, "T7a unfenced, not yet in sync", &[2], &[4], 2);
    c.catch_up(1);
    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::None]);
    c.catch_up(3);
    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::None]);
    assert_step(&ctl, "T7 b1, b3 added", &[1, 2, 3], &[], 2);
    assert_leader_isr(&c, &ctl);
    c.assert_identical(&[1, 2, 3]);
    let m3 = c.produce(2, batch(&["m3"]), -1).unwrap();
    c.catch_up(1);
    c.catch_up(3);
    assert_eq!(
        c.p(2)
            .check_enough_replicas_reach_offset(m3.last_offset + 1),
        Some(ErrorCode::None)
    );
    assert_eq!(c.consume(2), ["m0", "m1", "m3"]);
}

// ---- produce acknowledgement, ISR maintenance, idempotence ---------------------------------

/// acks=all is answered only once every ISR member holds the batch (the HW passed it).
#[test]
fn acks_all_waits_until_every_isr_member_holds_the_batch() {
    let mut c = Cluster::new(&[1, 2, 3], config(2));
    c.apply(&state(1, 0, 0, &[1, 2, 3], &[1, 2, 3]));
    let a = c.produce(1, batch(&["m0", "m1"]), -1).unwrap();
    assert_eq!((a.first_offset, a.last_offset), (0, 1));
    let required = a.last_offset + 1;
    assert_eq!(c.p(1).check_enough_replicas_reach_offset(required), None);
    c.catch_up(2);
    assert_eq!(
        c.p(1).check_enough_replicas_reach_offset(required),
        None,
        "broker 3 is in the ISR and has not fetched: min ISR 2 is not enough"
    );
    assert_eq!(c.fetch(3), Fetched::Appended { first: 0, last: 1 });
    assert_eq!(c.p(1).check_enough_replicas_reach_offset(required), None);
    c.fetch(3);
    assert_eq!(
        c.p(1).check_enough_replicas_reach_offset(required),
        Some(ErrorCode::None)
    );
    assert_eq!(c.p(1).high_watermark(), 2);
}

/// acks=all with |ISR| < min.insync.replicas is refused before anything is appended;
/// acks=1 still appends.
#[test]
fn acks_all_is_not_enough_replicas_before_append_when_isr_below_min() {
    let mut c = Cluster::new(&[1, 2, 3], config(2));
    c.apply(&state(1, 0, 1, &[1, 2, 3], &[1]));
    assert_eq!(
        c.produce(1, batch(&["m0"]), -1),
        Err(ErrorCode::NotEnoughReplicas)
    );
    assert_eq!(c.p(1).log_end_offset(), 0, "nothing appended");
    assert!(c.produce(1, batch(&["m0"]), 1).is_ok());
    assert!(c.produce(1, batch(&["m1"]), 0).is_ok());
    assert_eq!(c.p(1).log_end_offset(), 2);
}

/// Without ELR, a write whose ISR shrank below min ISR while it waited is committed by the
/// smaller ISR and answered NOT_ENOUGH_REPLICAS_AFTER_APPEND.
#[test]
fn acks_all_is_not_enough_replicas_after_append_when_isr_shrinks_meanwhile() {
    let mut c = Cluster::new(
        &[1, 2, 3],
        PartitionConfig {
            min_insync_replicas: 2,
            elr_enabled: false,
            ..PartitionConfig::default()
        },
    );
    c.apply(&state(1, 0, 0, &[1, 2, 3], &[1, 2, 3]));
    let a = c.produce(1, batch(&["m0"]), -1).unwrap();
    let required = a.last_offset + 1;
    assert_eq!(c.p(1).check_enough_replicas_reach_offset(required), None);
    // Neither follower fetches; after replica.lag.time.max.ms both are shrunk out.
    c.tick(DEFAULT_LAG + 1);
    let now = c.now_ms;
    let change = c.pm(1).maybe_shrink_isr(now).expect("both followers lag");
    assert_eq!(change.new_isr, vec![(1, c.nodes[&1].broker_epoch)]);
    assert_eq!(
        c.p(1).check_enough_replicas_reach_offset(required),
        None,
        "not committed yet"
    );
    c.alter_partitions.push((1, change));
    c.commit_isr_changes();
    assert_eq!(c.p(1).isr(), [1]);
    assert_eq!(c.p(1).high_watermark(), 1);
    assert_eq!(
        c.p(1).check_enough_replicas_reach_offset(required),
        Some(ErrorCode::NotEnoughReplicasAfterAppend)
    );
}

const DEFAULT_LAG: i64 = kraftd_broker::replica::partition::DEFAULT_REPLICA_LAG_TIME_MAX_MS;

/// With ELR on, the HW does not advance while |ISR| < min ISR, even when every replica has
/// the records; it moves as soon as the ISR is back to min ISR (KIP-966).
#[test]
fn high_watermark_does_not_advance_while_isr_below_min_with_elr() {
    let (mut c, mut ctl) = controlled(&[1, 2, 3], &[1, 2, 3], true, 2);
    c.write(1, &["m0"]);
    c.catch_up(2);
    c.catch_up(3);
    assert_eq!(c.p(1).high_watermark(), 1);
    c.crash(2, false);
    c.crash(3, false);
    ctl.go_offline(&[2, 3]);
    ctl.publish(&mut c);
    // Fenced one at a time: 2 leaves an ISR still at min ISR, 3 one that drops below it,
    // so only 3 joins the ELR.
    assert_step(&ctl, "2 and 3 fenced", &[1], &[3], 1);
    c.write(1, &["m1"]);
    c.write(1, &["m2"]);
    assert_eq!(c.p(1).high_watermark(), 1, "|ISR| 1 < 2: frozen");
    assert_eq!(c.consume(1), ["m0"]);

    // Broker 2 comes back (clean restart) and catches up: all of its fetches happen while
    // the ISR is {1}; the HW stays until the controller commits {1, 2}.
    c.start(2);
    assert_eq!(ctl.restart_clean(2).error_code, 0);
    assert!(!ctl.heartbeat(2).is_fenced);
    ctl.publish(&mut c);
    c.catch_up(2);
    assert_eq!(c.p(2).log_end_offset(), 3);
    assert_eq!(
        c.p(1).high_watermark(),
        1,
        "still frozen: ISR 1, 2 not committed"
    );
    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::None]);
    assert_step(&ctl, "2 back in the ISR", &[1, 2], &[], 1);
    assert_leader_isr(&c, &ctl);
    assert_eq!(c.p(1).high_watermark(), 3);
    assert_eq!(c.consume(1), ["m0", "m1", "m2"]);
}

/// R2: a follower that has not caught up within replica.lag.time.max.ms is shrunk out (not
/// a moment before), the HW then moves past it; once it catches up it is added back, with
/// the broker epoch its fetches carried, through the real controller.
#[test]
fn isr_shrinks_after_lag_time_and_expands_when_caught_up() {
    let (mut c, mut ctl) = controlled(&[1, 2, 3], &[1, 2, 3], true, 1);
    c.write(1, &["m0"]);
    c.catch_up(2);
    c.catch_up(3);
    c.write(1, &["m1"]);
    let now = c.now_ms;
    assert_eq!(c.pm(1).maybe_shrink_isr(now), None);
    // Broker 3 stops fetching; broker 2 keeps up.
    c.tick(DEFAULT_LAG);
    c.catch_up(2);
    let now = c.now_ms;
    assert_eq!(
        c.pm(1).maybe_shrink_isr(now),
        None,
        "exactly the lag time: still in sync"
    );
    assert_eq!(c.p(1).high_watermark(), 1, "waits for broker 3");
    c.tick(1);
    c.catch_up(2);
    let now = c.now_ms;
    let change = c.pm(1).maybe_shrink_isr(now).expect("broker 3 lags");
    assert_eq!(change.new_isr, vec![(1, ctl.epoch(1)), (2, ctl.epoch(2))]);
    c.alter_partitions.push((1, change));
    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::None]);
    assert_step(&ctl, "3 shrunk out", &[1, 2], &[], 1);
    assert_leader_isr(&c, &ctl);
    assert_eq!(
        c.p(1).high_watermark(),
        2,
        "HW no longer waits for broker 3"
    );

    // Broker 3 catches up and is proposed back with its broker epoch.
    c.write(1, &["m2"]);
    c.catch_up(2);
    c.catch_up(3);
    let (leader, change) = c.alter_partitions.last().unwrap().clone();
    assert_eq!(leader, 1);
    assert_eq!(
        change.new_isr,
        vec![(1, ctl.epoch(1)), (2, ctl.epoch(2)), (3, ctl.epoch(3))]
    );
    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::None]);
    assert_step(&ctl, "3 back", &[1, 2, 3], &[], 1);
    assert_leader_isr(&c, &ctl);
    assert_eq!(c.p(1).high_watermark(), 3);
    c.assert_identical(&[1, 2, 3]);
}

/// An idempotent producer's retry sent to a new leader is answered with the original
/// offsets: the new leader rebuilt the producer state from its log (as follower, and again
/// after a restart) and does not append it twice.
#[test]
fn idempotent_retry_after_leader_change_gets_original_offsets() {
    let mut c = Cluster::new(&[1, 2], config(1));
    c.apply(&state(1, 0, 0, &[1, 2], &[1, 2]));
    let first = c
        .produce(1, idempotent_batch(42, 0, 0, &["x0", "x1"]), -1)
        .unwrap();
    c.write(1, &["plain"]);
    let second = c
        .produce(1, idempotent_batch(42, 0, 2, &["x2"]), -1)
        .unwrap();
    assert_eq!(
        (first.first_offset, first.last_offset, second.first_offset),
        (0, 1, 3)
    );
    c.catch_up(2);
    c.flush(2);
    assert_eq!(c.p(2).producers().map_end_offset(), 4);

    // Broker 2 restarts (producer state rebuilt from the log), then leads epoch 1.
    c.restart(2, true, 300);
    c.crash(1, false);
    c.apply_to(2, &state(2, 1, 1, &[1, 2], &[2]));
    let retry = c
        .produce(2, idempotent_batch(42, 0, 2, &["x2"]), -1)
        .unwrap();
    assert!(retry.duplicate);
    assert_eq!((retry.first_offset, retry.last_offset), (3, 3));
    let retry = c
        .produce(2, idempotent_batch(42, 0, 0, &["x0", "x1"]), -1)
        .unwrap();
    assert!(retry.duplicate);
    assert_eq!((retry.first_offset, retry.last_offset), (0, 1));
    assert_eq!(c.p(2).log_end_offset(), 4, "nothing appended twice");
    assert_eq!(
        c.produce(2, idempotent_batch(42, 0, 5, &["gap"]), -1),
        Err(ErrorCode::OutOfOrderSequenceNumber)
    );
    let next = c
        .produce(2, idempotent_batch(42, 0, 3, &["x3"]), -1)
        .unwrap();
    assert!(!next.duplicate);
    assert_eq!(next.first_offset, 4);
    assert_eq!(vals(&c, 2), ["x0", "x1", "plain", "x2", "x3"]);
}

/// A follower whose last fetched epoch is older than every epoch the leader knows (the
/// leader never had that epoch's records) truncates them and takes the leader's.
#[test]
fn divergence_below_the_leaders_earliest_epoch_truncates_the_follower() {
    let (a, b) = (1, 2);
    let mut c = Cluster::new(&[a, b], config(1));
    c.apply(&state(b, 0, 0, &[a, b], &[a, b]));
    c.write(b, &["lost"]);
    // B dies before A fetched; A is elected (epoch 1) and writes at offset 0.
    c.crash(b, false);
    c.apply_to(a, &state(a, 1, 1, &[a, b], &[a]));
    assert_eq!(c.write(a, &["kept"]), (0, 0));
    c.start(b);
    c.apply(&state(a, 1, 1, &[a, b], &[a]));
    assert_eq!(c.p(b).fetch_position(), (1, 0));
    match c.fetch(b) {
        Fetched::Truncated { new_end, .. } => assert_eq!(new_end, 0),
        other => panic!("expected a truncation, got {other:?}"),
    }
    c.catch_up(b);
    c.assert_identical(&[a, b]);
    assert_eq!(vals(&c, b), ["kept"]);
}

/// A replica that led an epoch without writing anything (its epoch assigned at its log end)
/// and then follows a leader whose log holds older-epoch batches past that point: the empty
/// epoch describes no data and must not block replication (it used to: the follower's log
/// refused the leader's epoch-0 batches as a decreasing epoch, forever).
#[test]
fn an_epoch_led_without_writes_does_not_block_following_older_batches() {
    let (a, b) = (1, 2);
    let mut c = Cluster::new(&[a, b], config(1));
    c.apply(&state(a, 0, 0, &[a, b], &[a, b]));
    assert_eq!(c.write(a, &["m0", "m1"]), (0, 1));
    c.catch_up(b);
    // A writes m2, m3 that B does not fetch; B is elected (epoch 1) and writes nothing.
    assert_eq!(c.write(a, &["m2", "m3"]), (2, 3));
    c.apply(&state(b, 1, 1, &[a, b], &[a, b]));
    assert_eq!(c.p(b).log_end_offset(), 2);
    // A leads again (epoch 2) with its epoch-0 batch at 2..3 still there.
    c.apply(&state(a, 2, 2, &[a, b], &[a, b]));
    assert_eq!(c.write(a, &["m4"]), (4, 4));
    // B names the epoch of its last batch, 0, and takes A's epoch-0 and epoch-2 batches.
    assert_eq!(c.p(b).fetch_position(), (2, 0));
    assert_eq!(c.fetch(b), Fetched::Appended { first: 2, last: 4 });
    c.assert_identical(&[a, b]);
}

/// The same after a divergence answer: an empty epoch at the follower's log end is dropped
/// by the truncation to that end, so the follower does not ask about it again and again.
#[test]
fn truncation_to_the_log_end_drops_an_empty_epoch() {
    let (a, b) = (1, 2);
    let mut c = Cluster::new(&[a, b], config(1));
    c.apply(&state(a, 0, 0, &[a, b], &[a, b]));
    assert_eq!(c.write(a, &["m0", "m1"]), (0, 1));
    c.catch_up(b);
    c.apply(&state(b, 1, 1, &[a, b], &[a, b]));
    c.pm(b).truncate_to(2, 0).unwrap();
    assert_eq!(c.p(b).fetch_position(), (2, 0), "the empty epoch 1 went");
}

/// The chaos harness's seed 9 (`--overlap --txn`): a `__consumer_offsets` partition whose
/// ISR had shrunk to its leader lost that leader to a kill -9; the broker came back
/// uncleanly, the controller elected it from the last known ELR as RECOVERING, and its ISR
/// stayed at one for good: the leader proposed every follower that caught up with the
/// RECOVERING state it had been given, which the controller refuses for an ISR of more than
/// the leader (INVALID_REQUEST). Kafka's `Partition.makeLeader` takes the leadership as
/// RECOVERED, so its first expansion also ends the recovery.
#[test]
fn a_leader_elected_uncleanly_expands_its_isr_and_ends_the_recovery() {
    let (mut c, mut ctl) = controlled(&[0, 1, 2], &[0], true, 2);
    // acks=1 (the ISR is below min.insync.replicas=2).
    c.write(0, &["m0", "m1"]);
    c.flush(0);

    // The lone ISR member is fenced: no leader, it is the ELR.
    ctl.go_offline(&[0]);
    assert_step(&ctl, "fenced", &[], &[0], -1);
    c.crash(0, false);
    ctl.publish(&mut c);
    // It restarts uncleanly (leaves the ELR) and is elected from the last known ELR.
    assert_eq!(ctl.restart_unclean(0).error_code, 0);
    assert!(!ctl.heartbeat(0).is_fenced);
    assert_step(&ctl, "elected uncleanly", &[0], &[], 0);
    assert_eq!(
        ctl.partition().leader_recovery_state,
        LeaderRecoveryState::Recovering
    );
    c.start(0);
    ctl.publish(&mut c);
    assert_eq!(c.p(0).role(), Role::Leader);

    // The followers catch up and join; the partition is recovered.
    c.catch_up(1);
    c.catch_up(2);
    assert_eq!(ctl.send_isr_changes(&mut c), [ErrorCode::None]);
    c.catch_up(1);
    c.catch_up(2);
    ctl.send_isr_changes(&mut c);
    assert_step(&ctl, "caught up", &[0, 1, 2], &[], 0);
    assert_eq!(
        ctl.partition().leader_recovery_state,
        LeaderRecoveryState::Recovered
    );
    assert_leader_isr(&c, &ctl);
    c.assert_identical(&[0, 1, 2]);
}
