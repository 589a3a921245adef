//! AssignReplicasToDirs against the pure manager: every error Kafka's handler answers, the
//! record written, and an assignment to an offline directory moving leadership off.

use kraftd_protocol::messages::assign_replicas_to_dirs_request::{
    DirectoryData, PartitionData, TopicData,
};
use kraftd_protocol::messages::{AssignReplicasToDirsRequest, AssignReplicasToDirsResponse};
use kraftd_protocol::metadata::PartitionRecord;
use kraftd_protocol::{ErrorCode, MetadataRecord, Uuid};

use crate::image::DIRECTORY_UNASSIGNED;
use crate::testing::records::{feature, partition, uuid};
use crate::testing::{ControlHarness, TOPIC_ID};

/// Broker `broker`'s directory number `n`.
fn dir(broker: i32, n: u8) -> Uuid {
    let mut id = uuid(n);
    id.0[1] = broker as u8;
    id
}

/// Brokers 1..=3 registered with directories 1 and 2 each and unfenced; partition 0 of the
/// harness topic on replicas [1, 2, 3] led by 1, directories unassigned.
fn cluster() -> ControlHarness {
    let mut h = ControlHarness::new(false, 1);
    for id in 1..=3 {
        let mut request = h.registration_request(id, -1);
        request.log_dirs = vec![dir(id, 1), dir(id, 2)];
        assert_eq!(h.send_registration(&request).error_code, 0);
    }
    for id in 1..=3 {
        assert!(!h.heartbeat(id).is_fenced);
    }
    h.replay(&[MetadataRecord::Partition(PartitionRecord {
        partition_id: 0,
        topic_id: TOPIC_ID,
        replicas: vec![1, 2, 3],
        isr: vec![1, 2, 3],
        leader: 1,
        directories: vec![DIRECTORY_UNASSIGNED; 3],
        ..Default::default()
    })]);
    h
}

fn request(
    h: &ControlHarness,
    broker: i32,
    assignments: &[(Uuid, Uuid, i32)],
) -> AssignReplicasToDirsRequest {
    let mut request = AssignReplicasToDirsRequest {
        broker_id: broker,
        broker_epoch: h.epoch(broker),
        ..Default::default()
    };
    for (dir, topic_id, partition) in assignments {
        request.directories.push(DirectoryData {
            id: *dir,
            topics: vec![TopicData {
                topic_id: *topic_id,
                partitions: vec![PartitionData {
                    partition_index: *partition,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        });
    }
    request
}

fn send(
    h: &mut ControlHarness,
    request: &AssignReplicasToDirsRequest,
) -> AssignReplicasToDirsResponse {
    let result = h.replication.assign_replicas_to_dirs(&h.image, request);
    h.apply(result)
}

/// Every partition answer, in request order.
fn errors(response: &AssignReplicasToDirsResponse) -> Vec<i16> {
    response
        .directories
        .iter()
        .flat_map(|d| &d.topics)
        .flat_map(|t| &t.partitions)
        .map(|p| p.error_code)
        .collect()
}

#[test]
fn an_assignment_is_recorded_in_the_partition_directories() {
    let mut h = cluster();
    let before = h.partition().partition_epoch;
    let assign = request(&h, 2, &[(dir(2, 2), TOPIC_ID, 0)]);
    let response = send(&mut h, &assign);
    assert_eq!(response.error_code, 0);
    assert_eq!(errors(&response), vec![0]);
    let p = h.partition();
    assert_eq!(
        p.directories,
        vec![DIRECTORY_UNASSIGNED, dir(2, 2), DIRECTORY_UNASSIGNED]
    );
    assert_eq!(p.partition_epoch, before + 1);
    assert_eq!(p.leader, 1, "an online directory moves no leadership");
    // The same assignment again changes nothing and writes nothing.
    let again = request(&h, 2, &[(dir(2, 2), TOPIC_ID, 0)]);
    let result = h.replication.assign_replicas_to_dirs(&h.image, &again);
    assert!(result.records.is_empty());
    assert_eq!(errors(&result.response), vec![0]);
}

#[test]
fn a_stale_broker_epoch_refuses_the_whole_request() {
    let mut h = cluster();
    let mut stale = request(&h, 2, &[(dir(2, 1), TOPIC_ID, 0)]);
    stale.broker_epoch -= 1;
    let result = h.replication.assign_replicas_to_dirs(&h.image, &stale);
    assert!(result.records.is_empty());
    assert_eq!(
        result.response.error_code,
        ErrorCode::StaleBrokerEpoch.code()
    );
    assert!(result.response.directories.is_empty());
    // An unregistered broker is stale too, as Kafka's checkBrokerEpoch says.
    let mut unknown = request(&h, 2, &[(dir(2, 1), TOPIC_ID, 0)]);
    unknown.broker_id = 9;
    let response = send(&mut h, &unknown);
    assert_eq!(response.error_code, ErrorCode::StaleBrokerEpoch.code());
}

#[test]
fn before_metadata_version_3_7_iv2_directory_assignment_is_unsupported() {
    let mut h = cluster();
    h.replay(&[feature("metadata.version", 16)]);
    let old = request(&h, 2, &[(dir(2, 1), TOPIC_ID, 0)]);
    let result = h.replication.assign_replicas_to_dirs(&h.image, &old);
    assert!(result.records.is_empty());
    assert_eq!(
        result.response.error_code,
        ErrorCode::UnsupportedVersion.code()
    );
}

#[test]
fn unknown_topics_partitions_and_foreign_replicas_answer_per_partition() {
    let mut h = cluster();
    h.replay(&[partition(TOPIC_ID, 1, &[1, 3], &[1, 3], 1)]);
    let assignments = [
        (dir(2, 1), uuid(77), 0),
        (dir(2, 1), TOPIC_ID, 5),
        (dir(2, 1), TOPIC_ID, 1),
        (dir(2, 1), TOPIC_ID, 0),
    ];
    let assign = request(&h, 2, &assignments);
    let response = send(&mut h, &assign);
    assert_eq!(response.error_code, 0);
    assert_eq!(
        errors(&response),
        vec![
            ErrorCode::UnknownTopicId.code(),
            ErrorCode::UnknownTopicOrPartition.code(),
            ErrorCode::NotLeaderOrFollower.code(),
            0,
        ]
    );
    assert_eq!(h.partition().directories[1], dir(2, 1));
}

#[test]
fn an_assignment_to_an_offline_directory_moves_leadership_and_shrinks_the_isr() {
    let mut h = cluster();
    // Broker 1 leads; it reports its replica in a directory it has not registered online.
    let offline = dir(1, 9);
    let assign = request(&h, 1, &[(offline, TOPIC_ID, 0)]);
    let response = send(&mut h, &assign);
    assert_eq!(errors(&response), vec![0]);
    let p = h.partition();
    assert_eq!(p.directories[0], offline);
    assert!(p.leader == 2 || p.leader == 3, "leader {}", p.leader);
    assert!(!p.isr.contains(&1), "the replica left the ISR: {:?}", p.isr);
}

#[test]
fn a_heartbeat_with_an_offline_directory_moves_leadership_off_it_and_records_the_online_dirs() {
    let mut h = cluster();
    // Broker 1 (the leader) has its replica in dir 1; partition 1 has it in dir 2.
    let assign = request(&h, 1, &[(dir(1, 1), TOPIC_ID, 0)]);
    assert_eq!(errors(&send(&mut h, &assign)), vec![0]);
    h.replay(&[MetadataRecord::Partition(PartitionRecord {
        partition_id: 1,
        topic_id: TOPIC_ID,
        replicas: vec![1, 2],
        isr: vec![1, 2],
        leader: 1,
        directories: vec![dir(1, 2), dir(2, 1)],
        ..Default::default()
    })]);
    let mut heartbeat = h.heartbeat_request(1, h.epoch(1));
    heartbeat.offline_log_dirs = vec![dir(1, 1)];
    let response = h.send_heartbeat(&heartbeat);
    assert_eq!(response.error_code, 0);
    let p0 = h.partition();
    assert!(p0.leader == 2 || p0.leader == 3, "leader {}", p0.leader);
    assert!(!p0.isr.contains(&1), "{:?}", p0.isr);
    let p1 = h.image.topics.partition(&TOPIC_ID, 1).unwrap();
    assert_eq!(
        (p1.leader, p1.isr.clone()),
        (1, vec![1, 2]),
        "dir 2 is still online"
    );
    let broker = h.image.cluster.broker(1).unwrap();
    assert_eq!(broker.directories, vec![dir(1, 2)]);
    assert!(!broker.has_online_dir(dir(1, 1)));
    // Reported again, the dir is no longer online: nothing more is written.
    let mut records = Vec::new();
    h.replication
        .handle_directories_offline(&h.image, 1, h.epoch(1), &[dir(1, 1)], &mut records);
    assert!(records.is_empty(), "{records:?}");
}

#[test]
fn no_election_picks_a_replica_whose_directory_is_offline() {
    use kraftd_protocol::messages::elect_leaders_request::TopicPartitions;
    use kraftd_protocol::messages::ElectLeadersRequest;
    let mut h = cluster();
    // Partition 1: broker 1 is preferred, unfenced and in the ISR, but its replica is in a
    // directory it does not have online (dir 9: lost with a failed disk).
    h.replay(&[MetadataRecord::Partition(PartitionRecord {
        partition_id: 1,
        topic_id: TOPIC_ID,
        replicas: vec![1, 2, 3],
        isr: vec![1, 2, 3],
        leader: 2,
        directories: vec![dir(1, 9), DIRECTORY_UNASSIGNED, DIRECTORY_UNASSIGNED],
        ..Default::default()
    })]);
    let name = h.image.topics.get(&TOPIC_ID).unwrap().name.clone();
    let elect = ElectLeadersRequest {
        election_type: 0,
        topic_partitions: Some(vec![TopicPartitions {
            topic: name,
            partitions: vec![1],
            ..Default::default()
        }]),
        ..Default::default()
    };
    let result = h.replication.elect_leaders(&h.image, &elect);
    let response = h.apply(result);
    let code = response.replica_election_results[0].partition_result[0].error_code;
    // Kafka's LeaderAcceptor refuses it: the preferred leader is not available.
    assert_eq!(code, ErrorCode::PreferredLeaderNotAvailable.code());
    assert_eq!(h.image.topics.partition(&TOPIC_ID, 1).unwrap().leader, 2);
}
