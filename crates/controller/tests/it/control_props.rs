//! Property test of the control managers: random sequences of broker and partition events
//! (session expiry, heartbeats, clean and unclean restarts, controlled shutdown, AlterPartition
//! with right or wrong epochs, elections), each answered by the managers and its records
//! replayed. Replay never fails, every image keeps the partition invariants, a leader is
//! always an active broker, an uncleanly restarted broker is in no ELR, and a rejected
//! request writes nothing.

use kraftd_controller::image::LeaderRecoveryState;
use kraftd_protocol::messages::elect_leaders_request::TopicPartitions;
use kraftd_protocol::messages::ElectLeadersRequest;
use kraftd_protocol::ErrorCode;
use proptest::prelude::*;

use kraftd_controller::testing::records::config;
use kraftd_controller::testing::{ControlHarness, TOPIC};

const REPLICAS: [i32; 4] = [1, 2, 3, 4];

#[derive(Debug, Clone)]
enum Op {
    /// The broker's session expires (if it is unfenced).
    Expire(i32),
    /// A caught-up heartbeat at its current epoch.
    Heartbeat(i32),
    RestartClean(i32),
    RestartUnclean(i32),
    ControlledShutdown(i32),
    /// The leader asks for the replicas in this bit set (plus itself), with a member's epoch
    /// off by `skew` when non-zero, and the partition epoch off by `epoch_skew`.
    AlterIsr {
        bits: u8,
        skew: i64,
        epoch_skew: i32,
    },
    ElectPreferred,
    ElectUnclean,
}

fn op() -> impl Strategy<Value = Op> {
    let broker = 1..=4i32;
    prop_oneof![
        3 => broker.clone().prop_map(Op::Expire),
        4 => broker.clone().prop_map(Op::Heartbeat),
        1 => broker.clone().prop_map(Op::RestartClean),
        1 => broker.clone().prop_map(Op::RestartUnclean),
        1 => broker.prop_map(Op::ControlledShutdown),
        4 => (any::<u8>(), prop_oneof![4 => Just(0i64), 1 => -2..2i64], prop_oneof![4 => Just(0i32), 1 => -1..2i32])
            .prop_map(|(bits, skew, epoch_skew)| Op::AlterIsr { bits, skew, epoch_skew }),
        1 => Just(Op::ElectPreferred),
        1 => Just(Op::ElectUnclean),
    ]
}

fn run(h: &mut ControlHarness, elr: bool, op: &Op) {
    match op {
        Op::Expire(id) => {
            if !h.fenced(*id) {
                let mut records = Vec::new();
                h.replication
                    .handle_broker_fenced(&h.image, *id, &mut records);
                h.replay(&records);
                assert!(h.fenced(*id));
            }
        }
        Op::Heartbeat(id) => {
            let response = h.heartbeat(*id);
            assert_eq!(response.error_code, 0);
            assert_eq!(response.is_fenced, h.fenced(*id));
        }
        Op::RestartClean(id) | Op::RestartUnclean(id) => {
            let before = h.next_offset;
            let response = if matches!(op, Op::RestartClean(_)) {
                h.restart_clean(*id)
            } else {
                h.restart_unclean(*id)
            };
            if response.error_code != 0 {
                assert_eq!(
                    h.next_offset, before,
                    "a refused registration writes nothing"
                );
                assert_eq!(
                    response.error_code,
                    ErrorCode::DuplicateBrokerRegistration.code()
                );
            } else {
                assert!(h.fenced(*id));
                let p = h.partition();
                if matches!(op, Op::RestartUnclean(_)) {
                    assert!(!p.elr.contains(id), "unclean restart leaves the ELR");
                }
                // It leaves the ISR, except as its last member without ELR (the old rule).
                let last_without_elr = !elr && p.isr == [*id];
                assert!(
                    !p.isr.contains(id) || last_without_elr,
                    "{id} in ISR {:?}",
                    p.isr
                );
            }
        }
        Op::ControlledShutdown(id) => {
            let mut request = h.heartbeat_request(*id, h.epoch(*id));
            request.want_shut_down = true;
            let response = h.send_heartbeat(&request);
            assert_eq!(response.error_code, 0);
            // Shutting down (or already fenced): it leaves every ISR, unless it is the last
            // member and there is no ELR to keep the ISR honest.
            let p = h.partition();
            assert!(
                !p.isr.contains(id) || p.isr == [*id],
                "{id} still in ISR {:?}",
                p.isr
            );
        }
        Op::AlterIsr {
            bits,
            skew,
            epoch_skew,
        } => {
            let p = h.partition();
            if p.leader < 0 {
                return;
            }
            let mut members: Vec<(i32, Option<i64>)> = vec![(p.leader, None)];
            for (i, r) in REPLICAS.iter().enumerate() {
                if bits >> i & 1 == 1 && *r != p.leader {
                    let epoch = h.epoch(*r) + if i == 0 { *skew } else { 0 };
                    members.push((*r, Some(epoch)));
                }
            }
            let mut request = h.alter_partition_request(&members);
            request.topics[0].partitions[0].partition_epoch += epoch_skew;
            let before = h.next_offset;
            let error = h.send_alter_partition(&request);
            if error != ErrorCode::None {
                assert_eq!(
                    h.next_offset, before,
                    "{error}: a rejected change writes nothing"
                );
            } else {
                let mut want: Vec<i32> = members.iter().map(|m| m.0).collect();
                want.sort();
                let mut isr = h.partition().isr.clone();
                isr.sort();
                assert_eq!(isr, want);
            }
        }
        Op::ElectPreferred | Op::ElectUnclean => {
            let request = ElectLeadersRequest {
                election_type: if matches!(op, Op::ElectPreferred) {
                    0
                } else {
                    1
                },
                topic_partitions: Some(vec![TopicPartitions {
                    topic: TOPIC.into(),
                    partitions: vec![0],
                    ..Default::default()
                }]),
                ..Default::default()
            };
            let result = h.replication.elect_leaders(&h.image, &request);
            let code = result.response.replica_election_results[0].partition_result[0].error_code;
            assert_eq!(code != 0, result.records.is_empty());
            h.apply(result);
        }
    }
}

fn check(h: &ControlHarness, elr: bool) {
    h.image.check_invariants().unwrap();
    let p = h.partition();
    if p.leader >= 0 {
        let leader = h.image.cluster.broker(p.leader).unwrap();
        assert!(leader.is_active(), "leader {} is not active", p.leader);
    }
    if !elr {
        assert!(p.elr.is_empty());
        assert!(!p.isr.is_empty(), "without ELR the ISR never empties");
    }
    if p.leader >= 0 && p.leader_recovery_state == LeaderRecoveryState::Recovering {
        assert_eq!(p.isr, vec![p.leader], "a recovering leader leads alone");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn managers_keep_partition_invariants(
        elr in any::<bool>(),
        min_isr in 1..=4i32,
        unclean in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        let mut h = ControlHarness::new(elr, min_isr);
        if unclean {
            h.replay(&[config(2, TOPIC, "unclean.leader.election.enable", Some("true"))]);
        }
        h.start_brokers(&REPLICAS);
        h.create_partition(&REPLICAS);
        for op in &ops {
            run(&mut h, elr, op);
            check(&h, elr);
        }
    }
}
