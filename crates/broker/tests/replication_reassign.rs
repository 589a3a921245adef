//! Partition reassignment on the data plane: real [`Partition`]s on real logs (the harness of
//! `replication/mod.rs`) with their metadata from the real control managers. A partition on
//! brokers 1 and 2 moves to 2 and 3 while acks=all writes go on: the new replica starts as a
//! follower with an empty log, copies from the leader, the leader tracks it and asks for it
//! in the ISR, that AlterPartition completes the move (leadership goes to 2, 1 leaves), and
//! every record acknowledged before, during and after the move is on both new replicas.
//!
//! [`Partition`]: kraftd_broker::replica::partition::Partition

mod replication;

use kraftd_broker::replica::partition::{PartitionConfig, Role};
use kraftd_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kraftd_protocol::messages::AlterPartitionReassignmentsRequest;
use kraftd_protocol::ErrorCode;
use replication::controller::{controller, Controller, ControllerExt};
use replication::*;

/// Reassigns the partition to `target` through the controller and publishes the result.
fn reassign(ctl: &mut Controller, c: &mut Cluster, target: &[i32]) {
    let request = AlterPartitionReassignmentsRequest {
        topics: vec![ReassignableTopic {
            name: TOPIC.into(),
            partitions: vec![ReassignablePartition {
                partition_index: 0,
                replicas: Some(target.to_vec()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let result = ctl
        .replication
        .alter_partition_reassignments(&ctl.image, &request);
    let response = ctl.apply(result);
    assert_eq!(response.responses[0].partitions[0].error_code, 0);
    ctl.publish(c);
}

/// acks=all: appends `vals` on `leader`, lets `followers` fetch until the HW passes them,
/// and returns the values (now acknowledged).
fn write_acked(c: &mut Cluster, leader: i32, followers: &[i32], vals: &[String]) -> Vec<String> {
    let append = c.produce(leader, batch(&strs(vals)), -1).unwrap();
    for f in followers {
        c.catch_up(*f);
    }
    assert!(
        c.p(leader).high_watermark() > append.last_offset,
        "acks=all: the HW passes the batch"
    );
    vals.to_vec()
}

#[test]
fn a_moving_partition_keeps_every_acknowledged_record() {
    let mut ctl = controller(true, 2);
    ctl.start_brokers(&[1, 2, 3]);
    ctl.create_partition(&[1, 2]);
    let mut c = Cluster::new(
        &[1, 2, 3],
        PartitionConfig {
            min_insync_replicas: 2,
            elr_enabled: true,
            ..PartitionConfig::default()
        },
    );
    ctl.publish(&mut c);
    let mut acked = write_acked(&mut c, 1, &[2], &values("before-", 20));
    assert_eq!(c.p(3).role(), Role::None, "3 hosts nothing yet");

    // The move starts: 3 becomes a follower of 1 with an empty log.
    reassign(&mut ctl, &mut c, &[2, 3]);
    assert_eq!(ctl.partition().replicas, vec![2, 3, 1]);
    assert_eq!(c.p(3).role(), Role::Follower { leader: 1 });
    assert_eq!(c.p(1).replicas(), &[2, 3, 1], "the leader tracks 3");
    acked.extend(write_acked(&mut c, 1, &[2], &values("during-", 20)));
    assert!(c.alter_partitions.is_empty(), "3 has not fetched yet");

    // 3 copies everything; the leader asks for it in the ISR, which completes the move.
    c.catch_up(3);
    assert_eq!(
        ctl.send_isr_changes(&mut c),
        [ErrorCode::NewLeaderElected],
        "the AlterPartition that completes the move elects 2"
    );
    let p = ctl.partition();
    assert_eq!(
        (p.replicas.clone(), p.isr.clone(), p.leader),
        (vec![2, 3], vec![2, 3], 2)
    );
    assert!(p.adding_replicas.is_empty() && p.removing_replicas.is_empty());
    assert_eq!(c.p(2).role(), Role::Leader);
    assert_eq!(c.p(3).role(), Role::Follower { leader: 2 });

    acked.extend(write_acked(&mut c, 2, &[3], &values("after-", 20)));
    c.assert_identical(&[2, 3]);
    assert_eq!(c.consume(2), acked, "every acknowledged record, in order");
}
