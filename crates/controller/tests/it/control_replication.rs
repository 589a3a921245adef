//! ReplicationControlManager and PartitionChangeBuilder: AlterPartition validation (leader
//! epoch, partition epoch, KIP-903 broker epochs), ElectLeaders (preferred and unclean) and
//! the builder's election rules, each asserted on the records replayed into the image.

use kraftd_controller::control::{Election, PartitionChangeBuilder, ReplicationControlManager};
use kraftd_controller::image::{LeaderRecoveryState, PartitionRegistration, DIRECTORY_MIGRATING};
use kraftd_protocol::messages::elect_leaders_request::TopicPartitions;
use kraftd_protocol::messages::ElectLeadersRequest;
use kraftd_protocol::{ErrorCode, MetadataRecord};

use kraftd_controller::testing::records::{config, uuid};
use kraftd_controller::testing::{ControlHarness, TOPIC};

/// SCENARIOS S1.7: the leader's AlterPartition names the follower's broker epoch from its
/// fetches; the follower restarted (and may have lost data) before the request arrived.
#[test]
fn stale_isr_join_is_ineligible_replica() {
    let mut h = ControlHarness::new(true, 1);
    h.start_brokers(&[1, 2]);
    h.create_partition(&[1, 2]);
    assert_eq!(h.alter_isr(&[1]), ErrorCode::None);
    let old_epoch = h.epoch(2);
    // B caught up; A prepares the ISR expansion with B's epoch as seen in its fetches.
    let stale = h.alter_partition_request(&[(1, None), (2, Some(old_epoch))]);

    // B crashes (its session expires) and restarts without a clean-shutdown marker.
    h.go_offline(&[2]);
    assert_eq!(h.restart_unclean(2).error_code, 0);
    assert!(h.epoch(2) > old_epoch);
    let before = h.partition();
    let next_offset = h.next_offset;
    assert_eq!(h.send_alter_partition(&stale), ErrorCode::IneligibleReplica);
    assert_eq!(h.next_offset, next_offset, "no records");

    // Even once B is unfenced, its old epoch stays ineligible.
    assert!(!h.heartbeat(2).is_fenced);
    let next_offset = h.next_offset;
    assert_eq!(h.send_alter_partition(&stale), ErrorCode::IneligibleReplica);
    assert_eq!(h.next_offset, next_offset, "no records");
    assert_eq!(h.partition().isr, before.isr);

    // B's fetches now carry its new epoch: the join is accepted.
    let fresh = h.alter_partition_request(&[(1, None), (2, None)]);
    assert_eq!(h.send_alter_partition(&fresh), ErrorCode::None);
    assert_eq!(h.partition().isr, vec![1, 2]);
}

/// SCENARIOS S1.6 for AlterPartition: a request carrying the leader's old broker epoch.
#[test]
fn alter_partition_with_stale_broker_epoch() {
    let mut h = ControlHarness::new(true, 1);
    h.start_brokers(&[1, 2]);
    h.create_partition(&[1, 2]);
    let mut request = h.alter_partition_request(&[(1, None)]);
    request.broker_epoch -= 1;
    let result = h.replication.alter_partition(&h.image, 3, &request);
    assert!(result.records.is_empty());
    assert_eq!(
        result.response.error_code,
        ErrorCode::StaleBrokerEpoch.code()
    );
}

#[test]
fn alter_partition_validation_errors() {
    let mut h = ControlHarness::new(true, 1);
    h.start_brokers(&[1, 2, 3]);
    h.create_partition(&[1, 2, 3]);
    assert_eq!(h.alter_isr(&[1, 2]), ErrorCode::None);
    let good = h.alter_partition_request(&[(1, None), (2, None), (3, None)]);

    let check = |h: &mut ControlHarness,
                 request: &kraftd_protocol::messages::AlterPartitionRequest,
                 version: i16,
                 expected: ErrorCode,
                 what: &str| {
        let result = h.replication.alter_partition(&h.image, version, request);
        assert!(result.records.is_empty(), "{what}: no records");
        let code = result.response.topics[0].partitions[0].error_code;
        assert_eq!(ErrorCode::from_code(code), Some(expected), "{what}");
    };

    let mut r = good.clone();
    r.topics[0].partitions[0].leader_epoch -= 1;
    check(
        &mut h,
        &r,
        3,
        ErrorCode::FencedLeaderEpoch,
        "old leader epoch",
    );

    let mut r = good.clone();
    r.topics[0].partitions[0].leader_epoch += 1;
    check(
        &mut h,
        &r,
        3,
        ErrorCode::NotController,
        "leader epoch ahead",
    );

    let mut r = good.clone();
    r.topics[0].partitions[0].partition_epoch -= 1;
    check(
        &mut h,
        &r,
        3,
        ErrorCode::InvalidUpdateVersion,
        "old partition epoch",
    );

    let mut r = good.clone();
    r.broker_id = 2;
    r.broker_epoch = h.epoch(2);
    check(&mut h, &r, 3, ErrorCode::InvalidRequest, "not the leader");

    let r = h.alter_partition_request(&[(2, None), (3, None)]);
    check(
        &mut h,
        &r,
        3,
        ErrorCode::InvalidRequest,
        "ISR without the leader",
    );

    let r = h.alter_partition_request(&[(1, None), (7, Some(1))]);
    check(
        &mut h,
        &r,
        3,
        ErrorCode::InvalidRequest,
        "ISR member not a replica",
    );

    let r = h.alter_partition_request(&[(1, None), (1, None)]);
    check(
        &mut h,
        &r,
        3,
        ErrorCode::InvalidRequest,
        "duplicate ISR member",
    );

    let mut r = good.clone();
    r.topics[0].partitions[0].leader_recovery_state = 1;
    check(
        &mut h,
        &r,
        3,
        ErrorCode::InvalidRequest,
        "RECOVERED to RECOVERING",
    );

    let mut r = good.clone();
    r.topics[0].partitions[0].leader_recovery_state = 7;
    check(
        &mut h,
        &r,
        3,
        ErrorCode::InvalidRequest,
        "unknown recovery state",
    );

    let mut r = good.clone();
    r.topics[0].partitions[0].partition_index = 9;
    check(
        &mut h,
        &r,
        3,
        ErrorCode::UnknownTopicOrPartition,
        "unknown partition",
    );

    let mut r = good.clone();
    r.topics[0].topic_id = uuid(77);
    check(&mut h, &r, 3, ErrorCode::UnknownTopicId, "unknown topic");

    // Ineligible by epoch: v2+ says INELIGIBLE_REPLICA, older versions OPERATION_NOT_ATTEMPTED.
    let r = h.alter_partition_request(&[(1, None), (2, None), (3, Some(h.epoch(3) - 1))]);
    check(
        &mut h,
        &r,
        3,
        ErrorCode::IneligibleReplica,
        "stale member epoch",
    );

    // Broker 3 enters controlled shutdown: it may not join an ISR.
    let mut shutdown = h.heartbeat_request(3, h.epoch(3));
    shutdown.want_shut_down = true;
    let response = h.send_heartbeat(&shutdown);
    assert!(!response.should_shut_down || h.fenced(3));
    let r = h.alter_partition_request(&[(1, None), (2, None), (3, None)]);
    check(
        &mut h,
        &r,
        3,
        ErrorCode::IneligibleReplica,
        "member shutting down",
    );
    // Before v3 the ISR has no epochs.
    let mut r = r;
    r.topics[0].partitions[0].new_isr = vec![1, 2, 3];
    check(
        &mut h,
        &r,
        1,
        ErrorCode::OperationNotAttempted,
        "member shutting down, v1",
    );
}

#[test]
fn alter_partition_success_reports_new_state() {
    let mut h = ControlHarness::new(true, 2);
    h.start_brokers(&[1, 2, 3]);
    h.create_partition(&[1, 2, 3]);
    let request = h.alter_partition_request(&[(1, None)]);
    let result = h.replication.alter_partition(&h.image, 3, &request);
    assert_eq!(result.records.len(), 1);
    let p = &result.response.topics[0].partitions[0];
    assert_eq!(p.error_code, 0);
    assert_eq!(p.isr, vec![1]);
    assert_eq!(p.leader_id, 1);
    assert_eq!(p.leader_epoch, 0);
    assert_eq!(p.partition_epoch, 1);
    h.apply(result);
    assert_eq!(h.state(), (vec![1], vec![2, 3], 1));
    assert_eq!(h.partition().partition_epoch, 1);

    // An unchanged ISR writes nothing and answers the current state.
    let request = h.alter_partition_request(&[(1, None)]);
    let result = h.replication.alter_partition(&h.image, 3, &request);
    assert!(result.records.is_empty());
    assert_eq!(result.response.topics[0].partitions[0].partition_epoch, 1);

    // The same partition twice in one request: the second is validated against the first.
    let mut twice = h.alter_partition_request(&[(1, None), (2, None)]);
    let copy = twice.topics[0].partitions[0].clone();
    twice.topics[0].partitions.push(copy);
    let result = h.replication.alter_partition(&h.image, 3, &twice);
    assert_eq!(result.records.len(), 1);
    let codes: Vec<i16> = result.response.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(codes, vec![0, ErrorCode::InvalidUpdateVersion.code()]);
}

fn elect(
    h: &mut ControlHarness,
    election_type: i8,
    partitions: Option<Vec<i32>>,
) -> Vec<(i32, ErrorCode)> {
    let request = ElectLeadersRequest {
        election_type,
        topic_partitions: partitions.map(|p| {
            vec![TopicPartitions {
                topic: TOPIC.into(),
                partitions: p,
                ..Default::default()
            }]
        }),
        ..Default::default()
    };
    let result = h.replication.elect_leaders(&h.image, &request);
    let response = h.apply(result);
    assert_eq!(response.error_code, 0);
    response
        .replica_election_results
        .iter()
        .flat_map(|t| t.partition_result.iter())
        .map(|p| (p.partition_id, ErrorCode::from_code(p.error_code).unwrap()))
        .collect()
}

#[test]
fn preferred_leader_election() {
    let mut h = ControlHarness::new(true, 1);
    h.start_brokers(&[1, 2, 3]);
    h.create_partition(&[1, 2, 3]);
    assert_eq!(
        elect(&mut h, 0, Some(vec![0])),
        vec![(0, ErrorCode::ElectionNotNeeded)]
    );

    h.go_offline(&[1]);
    assert_eq!(h.state(), (vec![2, 3], vec![], 2));
    assert_eq!(
        elect(&mut h, 0, Some(vec![0])),
        vec![(0, ErrorCode::PreferredLeaderNotAvailable)]
    );
    // Back, but unfencing only elects leaderless partitions; 1 must rejoin the ISR first.
    assert!(!h.heartbeat(1).is_fenced);
    assert_eq!(h.state().2, 2);
    assert_eq!(h.alter_isr(&[2, 3, 1]), ErrorCode::None);
    let epoch = h.partition().leader_epoch;
    assert_eq!(elect(&mut h, 0, None), vec![(0, ErrorCode::None)]);
    assert_eq!(h.state().2, 1);
    assert_eq!(h.partition().leader_epoch, epoch + 1);
    // Every partition: those already led by their preferred replica are left out.
    assert_eq!(elect(&mut h, 0, None), vec![]);
    assert_eq!(
        elect(&mut h, 0, Some(vec![5])),
        vec![(5, ErrorCode::UnknownTopicOrPartition)]
    );
}

#[test]
fn unclean_leader_election_by_request() {
    let mut h = ControlHarness::new(false, 1);
    h.start_brokers(&[1, 2]);
    h.create_partition(&[1, 2]);
    h.go_offline(&[2]);
    h.go_offline(&[1]);
    assert_eq!(h.state(), (vec![1], vec![], -1));
    assert!(!h.heartbeat(2).is_fenced);
    assert_eq!(h.state(), (vec![1], vec![], -1), "2 is not in the ISR");
    assert_eq!(
        elect(&mut h, 0, Some(vec![0])),
        vec![(0, ErrorCode::PreferredLeaderNotAvailable)]
    );
    assert_eq!(elect(&mut h, 1, Some(vec![0])), vec![(0, ErrorCode::None)]);
    assert_eq!(h.state(), (vec![2], vec![], 2));
    assert_eq!(
        h.partition().leader_recovery_state,
        LeaderRecoveryState::Recovering
    );
    assert_eq!(
        elect(&mut h, 1, Some(vec![0])),
        vec![(0, ErrorCode::ElectionNotNeeded)]
    );

    // The new leader reports it has recovered.
    let request = h.alter_partition_request(&[(2, None)]);
    assert_eq!(h.send_alter_partition(&request), ErrorCode::None);
    assert_eq!(
        h.partition().leader_recovery_state,
        LeaderRecoveryState::Recovered
    );

    let bad = ElectLeadersRequest {
        election_type: 5,
        ..Default::default()
    };
    let result = h.replication.elect_leaders(&h.image, &bad);
    assert!(result.records.is_empty());
    assert_eq!(result.response.error_code, ErrorCode::InvalidRequest.code());
}

/// With `unclean.leader.election.enable` on the topic, a returning replica outside the ISR
/// is elected as soon as it is unfenced.
#[test]
fn unclean_leader_election_by_topic_config() {
    let mut h = ControlHarness::new(false, 1);
    h.start_brokers(&[1, 2]);
    h.create_partition(&[1, 2]);
    h.replay(&[config(
        2,
        TOPIC,
        "unclean.leader.election.enable",
        Some("true"),
    )]);
    h.go_offline(&[2]);
    h.go_offline(&[1]);
    assert_eq!(h.state(), (vec![1], vec![], -1));
    assert!(!h.heartbeat(2).is_fenced);
    assert_eq!(h.state(), (vec![2], vec![], 2));
    assert_eq!(
        h.partition().leader_recovery_state,
        LeaderRecoveryState::Recovering
    );
}

fn registration(replicas: &[i32], isr: &[i32], elr: &[i32], leader: i32) -> PartitionRegistration {
    PartitionRegistration {
        replicas: replicas.to_vec(),
        directories: vec![DIRECTORY_MIGRATING; replicas.len()],
        isr: isr.to_vec(),
        removing_replicas: vec![],
        adding_replicas: vec![],
        elr: elr.to_vec(),
        last_known_elr: vec![],
        leader,
        leader_recovery_state: LeaderRecoveryState::Recovered,
        leader_epoch: 3,
        partition_epoch: 5,
    }
}

#[test]
fn builder_changes_nothing_by_default() {
    let p = registration(&[1, 2, 3], &[1, 2, 3], &[], 1);
    let record = PartitionChangeBuilder::new(&p, uuid(1), 0, |_| true, 2)
        .set_eligible_leader_replicas_enabled(true)
        .build();
    assert_eq!(record, None);
}

#[test]
fn builder_elects_first_acceptable_isr_member_in_assignment_order() {
    let p = registration(&[1, 2, 3], &[3, 2], &[], 1);
    let record = PartitionChangeBuilder::new(&p, uuid(1), 0, |r| r != 1, 1)
        .build()
        .unwrap();
    assert_eq!(record.leader, 2);
    assert_eq!(record.isr, None);
    let next = p.merge(&record).unwrap();
    assert_eq!(next.leader_epoch, 4);
}

#[test]
fn builder_elects_last_known_leader_when_isr_and_elr_empty() {
    let mut p = registration(&[1, 2, 3], &[], &[], -1);
    p.last_known_elr = vec![3];
    // Dead last known leader: nothing.
    let none = PartitionChangeBuilder::new(&p, uuid(1), 0, |r| r == 1, 2)
        .set_eligible_leader_replicas_enabled(true)
        .build();
    assert_eq!(none, None);
    // Alive: elected, alone in the ISR, recovering; the last known ELR is cleared.
    let record = PartitionChangeBuilder::new(&p, uuid(1), 0, |r| r == 3, 2)
        .set_eligible_leader_replicas_enabled(true)
        .build()
        .unwrap();
    assert_eq!(record.leader, 3);
    assert_eq!(record.isr, Some(vec![3]));
    assert_eq!(
        record.leader_recovery_state,
        LeaderRecoveryState::Recovering.code()
    );
    assert_eq!(record.last_known_elr, Some(vec![]));
    p.merge(&record).unwrap();
    // Without ELR the last known leader means nothing.
    let off = PartitionChangeBuilder::new(&p, uuid(1), 0, |r| r == 3, 2).build();
    assert_eq!(off, None);
}

#[test]
fn builder_elr_excludes_unclean_shutdown_replicas_and_clears_at_min_isr() {
    let p = registration(&[1, 2, 3, 4], &[1, 2, 3], &[], 1);
    let record = PartitionChangeBuilder::new(&p, uuid(1), 0, |_| true, 3)
        .set_eligible_leader_replicas_enabled(true)
        .set_target_isr(vec![1])
        .set_unclean_shutdown_replicas(vec![3])
        .build()
        .unwrap();
    assert_eq!(record.isr, Some(vec![1]));
    assert_eq!(record.eligible_leader_replicas, Some(vec![2]));
    let next = p.merge(&record).unwrap();
    let record = PartitionChangeBuilder::new(&next, uuid(1), 0, |_| true, 3)
        .set_eligible_leader_replicas_enabled(true)
        .set_target_isr(vec![1, 3, 4])
        .build()
        .unwrap();
    assert_eq!(record.eligible_leader_replicas, Some(vec![]));
    // The leader stays: no leader epoch bump on an ISR change.
    assert_eq!(record.leader, -2);
}

#[test]
fn builder_preferred_election_falls_back_to_current_leader() {
    let p = registration(&[1, 2, 3], &[2, 3], &[], 3);
    let record = PartitionChangeBuilder::new(&p, uuid(1), 0, |_| true, 1)
        .set_election(Election::Preferred)
        .build();
    assert_eq!(record, None, "1 is not in the ISR; 3 stays");
    let p = registration(&[1, 2, 3], &[1, 2, 3], &[], 3);
    let record = PartitionChangeBuilder::new(&p, uuid(1), 0, |_| true, 1)
        .set_election(Election::Preferred)
        .build()
        .unwrap();
    assert_eq!(record.leader, 1);
}

#[test]
fn min_isr_is_capped_at_replication_factor() {
    let h = ControlHarness::new(true, 5);
    let mut h = h;
    h.start_brokers(&[1, 2]);
    h.create_partition(&[1, 2]);
    let topic = h.image.topics.get_by_name(TOPIC).unwrap().clone();
    let p = h.partition();
    assert_eq!(h.replication.effective_min_isr(&h.image, &topic, &p), 2);
    assert!(ReplicationControlManager::is_elr_enabled(&h.image));
    // Records are PartitionChange only; the image accepted them.
    let request = h.alter_partition_request(&[(1, None)]);
    let result = h.replication.alter_partition(&h.image, 3, &request);
    assert!(matches!(
        result.records[0],
        MetadataRecord::PartitionChange(_)
    ));
}
