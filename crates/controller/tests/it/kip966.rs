//! The KIP-966 worked example (SCENARIOS S1.9) as a pure replay: four replicas b1–b4, min ISR
//! 3, b1 leader. At each time step the records the controller would write (broker fencing and
//! re-registrations, and the PartitionChangeRecords its election logic decides) are replayed,
//! and the image must show the ISR, ELR and leader of the scenario's table, with the epochs
//! Kafka's merge rules give. Deciding those records is the replication control manager's job
//! (later); this pins that the image reflects them exactly.

use kraftd_controller::image::LeaderRecoveryState;
use kraftd_controller::testing::records::*;
use kraftd_controller::MetadataImage;
use kraftd_protocol::metadata::{PartitionChangeRecord, PartitionRecord, RegisterBrokerRecord};
use kraftd_protocol::MetadataRecord;

const TOPIC: &str = "kip966";

struct Step {
    time: &'static str,
    records: Vec<MetadataRecord>,
    isr: Vec<i32>,
    elr: Vec<i32>,
    leader: i32,
    leader_epoch: i32,
    partition_epoch: i32,
}

fn pcr(isr: &[i32], elr: &[i32], leader: i32) -> MetadataRecord {
    MetadataRecord::PartitionChange(PartitionChangeRecord {
        isr: Some(isr.to_vec()),
        eligible_leader_replicas: Some(elr.to_vec()),
        leader,
        ..change(uuid(1), 0)
    })
}

/// A restart: a new registration (new epoch), fenced until it catches up. Whether the
/// shutdown was clean is the controller's call (PreviousBrokerEpoch); its ELR consequence is
/// the PartitionChangeRecord that follows.
fn restart(id: i32, epoch: i64) -> MetadataRecord {
    match register_broker(id, epoch, true) {
        MetadataRecord::RegisterBroker(r) => MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            incarnation_id: uuid(200 + id as u8),
            ..r
        }),
        _ => unreachable!(),
    }
}

#[test]
fn kip966_worked_example() {
    let mut image = MetadataImage::empty()
        .replay_all(&[
            feature("metadata.version", 25),
            feature("eligible.leader.replicas.version", 1),
            register_broker(1, 10, false),
            register_broker(2, 11, false),
            register_broker(3, 12, false),
            register_broker(4, 13, false),
            topic(TOPIC, uuid(1)),
            config(2, TOPIC, "min.insync.replicas", Some("3")),
        ])
        .unwrap();

    let steps = vec![
        Step {
            time: "T0 all online",
            records: vec![MetadataRecord::Partition(PartitionRecord {
                partition_id: 0,
                topic_id: uuid(1),
                replicas: vec![1, 2, 3, 4],
                isr: vec![1, 2, 3, 4],
                leader: 1,
                leader_epoch: 0,
                partition_epoch: 0,
                eligible_leader_replicas: Some(vec![]),
                last_known_elr: Some(vec![]),
                ..Default::default()
            })],
            isr: vec![1, 2, 3, 4],
            elr: vec![],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
        },
        Step {
            time: "T1 b3, b4 lag; b1 shrinks the ISR below min ISR",
            records: vec![pcr(&[1, 2], &[3, 4], -2)],
            isr: vec![1, 2],
            elr: vec![3, 4],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 1,
        },
        Step {
            time: "T2 b3 catches up; |ISR| >= 3 clears the ELR",
            records: vec![pcr(&[1, 2, 3], &[], -2)],
            isr: vec![1, 2, 3],
            elr: vec![],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 2,
        },
        Step {
            time: "T3 b2, b3 go offline",
            records: vec![fence(2, 11), fence(3, 12), pcr(&[1], &[2, 3], -2)],
            isr: vec![1],
            elr: vec![2, 3],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 3,
        },
        Step {
            time: "T4 b4 catches up and is added",
            records: vec![pcr(&[1, 4], &[2, 3], -2)],
            isr: vec![1, 4],
            elr: vec![2, 3],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 4,
        },
        Step {
            time: "T5 b1, b4 go offline; b3 returns after an unclean shutdown",
            records: vec![
                fence(1, 10),
                fence(4, 13),
                restart(3, 20),
                pcr(&[], &[1, 2, 4], -1),
            ],
            isr: vec![],
            elr: vec![1, 2, 4],
            leader: -1,
            leader_epoch: 1,
            partition_epoch: 5,
        },
        Step {
            time: "T6 b1 returns uncleanly; b2 returns and is elected from the ELR",
            records: vec![
                restart(1, 21),
                restart(2, 22),
                unfence(2, 22),
                pcr(&[2], &[4], 2),
            ],
            isr: vec![2],
            elr: vec![4],
            leader: 2,
            leader_epoch: 2,
            partition_epoch: 6,
        },
        Step {
            time: "T7 b1, b3 catch up; |ISR| >= 3 clears the ELR",
            records: vec![unfence(1, 21), unfence(3, 20), pcr(&[1, 2, 3], &[], -2)],
            isr: vec![1, 2, 3],
            elr: vec![],
            leader: 2,
            leader_epoch: 2,
            partition_epoch: 7,
        },
    ];

    for step in steps {
        image = image
            .replay_all(&step.records)
            .unwrap_or_else(|e| panic!("{}: {e}", step.time));
        image.check_invariants().unwrap();
        let p = image.topics.get_by_name(TOPIC).unwrap().partitions[&0].clone();
        assert_eq!(p.isr, step.isr, "{}: ISR", step.time);
        assert_eq!(p.elr, step.elr, "{}: ELR", step.time);
        assert_eq!(p.leader, step.leader, "{}: leader", step.time);
        assert_eq!(
            p.leader_epoch, step.leader_epoch,
            "{}: leader epoch",
            step.time
        );
        assert_eq!(
            p.partition_epoch, step.partition_epoch,
            "{}: partition epoch",
            step.time
        );
        assert_eq!(
            p.leader_recovery_state,
            LeaderRecoveryState::Recovered,
            "{}",
            step.time
        );
    }
    // Every broker is back, unfenced, at its new epoch.
    let epochs: Vec<(i64, bool)> = image
        .cluster
        .brokers()
        .map(|b| (b.epoch, b.fenced))
        .collect();
    assert_eq!(
        epochs,
        vec![(21, false), (22, false), (20, false), (13, true)]
    );
}
