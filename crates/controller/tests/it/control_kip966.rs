//! KIP-966 scenarios driven through the control managers, not hand-written records: brokers
//! register, heartbeat, go silent (session expiry fences them) and restart cleanly or not;
//! partition leaders send AlterPartition. After every step the records the managers returned
//! are replayed and the image must show the ISR, ELR and leader of the scenario's table.

use kraftd_controller::image::LeaderRecoveryState;
use kraftd_protocol::ErrorCode;

use kraftd_controller::testing::ControlHarness;

fn set(v: &[i32]) -> Vec<i32> {
    v.to_vec()
}

#[track_caller]
fn assert_step(h: &ControlHarness, time: &str, isr: &[i32], elr: &[i32], leader: i32) {
    let (actual_isr, actual_elr, actual_leader) = h.state();
    assert_eq!(actual_isr, set(isr), "{time}: ISR");
    assert_eq!(actual_elr, set(elr), "{time}: ELR");
    assert_eq!(actual_leader, leader, "{time}: leader");
    assert_eq!(
        h.partition().leader_recovery_state,
        LeaderRecoveryState::Recovered,
        "{time}: no unclean election"
    );
}

/// SCENARIOS S1.9: four replicas b1–b4, min ISR 3, b1 leader.
#[test]
fn elr_example_from_kip_966() {
    let mut h = ControlHarness::new(true, 3);
    h.start_brokers(&[1, 2, 3, 4]);
    h.create_partition(&[1, 2, 3, 4]);
    assert_step(&h, "T0 all online", &[1, 2, 3, 4], &[], 1);

    assert_eq!(h.alter_isr(&[1, 2]), ErrorCode::None);
    assert_step(
        &h,
        "T1 b1 shrinks the ISR below min ISR",
        &[1, 2],
        &[3, 4],
        1,
    );

    assert_eq!(h.alter_isr(&[1, 2, 3]), ErrorCode::None);
    assert_step(
        &h,
        "T2 b3 added, |ISR| >= 3 clears the ELR",
        &[1, 2, 3],
        &[],
        1,
    );

    h.go_offline(&[2, 3]);
    assert_step(&h, "T3 b2, b3 go offline", &[1], &[2, 3], 1);

    assert_eq!(h.alter_isr(&[1, 4]), ErrorCode::None);
    assert_step(&h, "T4 b4 catches up and is added", &[1, 4], &[2, 3], 1);

    h.go_offline(&[1, 4]);
    assert_eq!(h.restart_unclean(3).error_code, 0);
    assert_step(
        &h,
        "T5 b1, b4 offline; b3 returns after an unclean shutdown",
        &[],
        &[1, 2, 4],
        -1,
    );
    // The last leader is remembered for balanced recovery.
    assert_eq!(h.partition().last_known_elr, vec![4]);

    assert_eq!(h.restart_unclean(1).error_code, 0);
    assert_step(&h, "T6a b1 returns uncleanly", &[], &[2, 4], -1);
    assert_eq!(h.restart_clean(2).error_code, 0);
    assert_step(&h, "T6b b2 registers, still fenced", &[], &[2, 4], -1);
    let response = h.heartbeat(2);
    assert!(!response.is_fenced);
    assert_step(&h, "T6c b2 caught up, elected from the ELR", &[2], &[4], 2);
    assert!(h.partition().last_known_elr.is_empty());

    assert!(!h.heartbeat(1).is_fenced);
    assert!(!h.heartbeat(3).is_fenced);
    assert_step(&h, "T7a b1, b3 unfenced, not yet in sync", &[2], &[4], 2);
    assert_eq!(h.alter_isr(&[2, 1, 3]), ErrorCode::None);
    assert_step(
        &h,
        "T7 b1, b3 added; |ISR| >= 3 clears the ELR",
        &[1, 2, 3],
        &[],
        2,
    );
}

/// SCENARIOS S1.8: three replicas, min ISR 2; the last ISR member crashes and loses data.
/// With KIP-966 the replica elected afterwards comes from the ELR, never the unclean one.
#[test]
fn unclean_last_isr_member_with_elr() {
    let mut h = ControlHarness::new(true, 2);
    h.start_brokers(&[0, 1, 2]);
    h.create_partition(&[0, 1, 2]);
    assert_step(&h, "start", &[0, 1, 2], &[], 0);

    h.go_offline(&[0]);
    assert_step(&h, "T0 broker 0 cut off", &[1, 2], &[], 1);

    h.go_offline(&[1]);
    assert_step(&h, "T1 broker 1 cut off; |ISR| < min ISR", &[2], &[1], 2);

    h.go_offline(&[2]);
    assert_step(&h, "T2 broker 2 crashes", &[], &[1, 2], -1);

    assert!(!h.heartbeat(0).is_fenced);
    assert_step(&h, "T3a broker 0 returns: not electable", &[], &[1, 2], -1);
    assert!(!h.heartbeat(1).is_fenced);
    assert_step(
        &h,
        "T3b broker 1 returns: elected from the ELR",
        &[1],
        &[2],
        1,
    );

    assert_eq!(h.restart_unclean(2).error_code, 0);
    assert_step(
        &h,
        "T4 broker 2 restarts uncleanly: leaves the ELR",
        &[1],
        &[],
        1,
    );
}

/// The same crash with the last ISR member restarting cleanly: it stays in the ELR (its data
/// is intact) and can lead again.
#[test]
fn clean_restart_keeps_elr_membership() {
    let mut h = ControlHarness::new(true, 2);
    h.start_brokers(&[0, 1]);
    h.create_partition(&[0, 1]);
    h.go_offline(&[1]);
    assert_step(&h, "broker 1 offline", &[0], &[1], 0);
    h.go_offline(&[0]);
    assert_step(&h, "broker 0 offline", &[], &[0, 1], -1);
    assert_eq!(h.restart_clean(0).error_code, 0);
    assert_step(&h, "broker 0 restarts cleanly", &[], &[0, 1], -1);
    assert!(!h.heartbeat(0).is_fenced);
    assert_step(&h, "broker 0 caught up and elected", &[0], &[1], 0);
}

/// Without ELR (feature off) the old rule holds: the ISR never empties, the last member
/// stays in it while leaderless, and nothing else can be elected cleanly.
#[test]
fn without_elr_the_last_isr_member_stays() {
    let mut h = ControlHarness::new(false, 2);
    h.start_brokers(&[0, 1, 2]);
    h.create_partition(&[0, 1, 2]);
    h.go_offline(&[0]);
    h.go_offline(&[1]);
    assert_step(&h, "two offline", &[2], &[], 2);
    h.go_offline(&[2]);
    assert_step(&h, "all offline", &[2], &[], -1);
    assert!(!h.heartbeat(1).is_fenced);
    assert_step(&h, "broker 1 back: not in the ISR", &[2], &[], -1);
}
