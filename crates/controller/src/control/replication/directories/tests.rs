//! AssignReplicasToDirs against the pure manager: every error Kafka's handler answers, the
//! record written, and an assignment to an offline directory moving leadership off; a
//! heartbeat's offline and (v2, KIP-1066) cordoned directories, and what cordoning does to
//! placement, manual assignments, reassignments and snapshots.

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

// ---- cordoned log directories (KIP-1066) ----

/// 4.4-IV2: cordoned directories are supported from 4.3-IV0 (30).
const MV_4_4: i16 = 33;

/// As [`cluster`], at metadata.version `level` (the brokers support up to 4.4-IV2).
fn cluster_at(level: i16) -> ControlHarness {
    let mut h = ControlHarness::new(false, 1);
    h.features[0].max_supported_version = MV_4_4;
    h.replay(&[feature("metadata.version", level)]);
    for id in 1..=3 {
        let mut request = h.registration_request(id, -1);
        request.log_dirs = vec![dir(id, 1), dir(id, 2)];
        assert_eq!(h.send_registration(&request).error_code, 0);
    }
    for id in 1..=3 {
        assert!(!h.heartbeat(id).is_fenced);
    }
    h
}

/// A heartbeat of broker `id` naming `cordoned` (None: a broker not caught up yet); the
/// records it made.
fn heartbeat_cordoned(
    h: &mut ControlHarness,
    id: i32,
    cordoned: Option<Vec<Uuid>>,
) -> Vec<MetadataRecord> {
    let mut request = h.heartbeat_request(id, h.epoch(id));
    request.cordoned_log_dirs = cordoned;
    let register_offset = h.image.cluster.broker(id).unwrap().epoch;
    let result = h.cluster.broker_heartbeat(
        &h.image,
        &mut h.heartbeats,
        &request,
        register_offset,
        h.next_offset,
        h.now_ms,
    );
    let records = result.records.clone();
    assert_eq!(h.apply(result).error_code, 0);
    records
}

fn usable(h: &ControlHarness) -> Vec<i32> {
    crate::control::placement::usable_brokers(&h.image)
        .iter()
        .map(|b| b.id)
        .collect()
}

#[test]
fn a_heartbeat_v2_records_the_cordoned_dirs_when_they_change() {
    use kraftd_protocol::metadata::BrokerRegistrationChangeRecord;
    use kraftd_protocol::metadata_version::MetadataVersion;
    let mut h = cluster_at(MV_4_4);
    // Not caught up yet: null, nothing known, nothing written.
    assert!(heartbeat_cordoned(&mut h, 1, None).is_empty());
    assert_eq!(
        h.image.cluster.broker(1).unwrap().cordoned_directories,
        None
    );
    // Caught up with nothing cordoned: the empty list is recorded (it was unknown).
    let records = heartbeat_cordoned(&mut h, 1, Some(vec![]));
    assert_eq!(
        records,
        vec![MetadataRecord::BrokerRegistrationChange(
            BrokerRegistrationChangeRecord {
                broker_id: 1,
                broker_epoch: h.epoch(1),
                cordoned_log_dirs: Some(vec![]),
                ..Default::default()
            }
        )]
    );
    // Kafka writes it at version 3, the one carrying CordonedLogDirs.
    let version = MetadataVersion::from_feature_level(MV_4_4).unwrap();
    assert_eq!(version.record_version(&records[0]), 3);
    assert!(heartbeat_cordoned(&mut h, 1, Some(vec![])).is_empty());
    // One dir cordoned: recorded; the broker still takes replicas.
    let records = heartbeat_cordoned(&mut h, 1, Some(vec![dir(1, 2)]));
    assert_eq!(records.len(), 1);
    let broker = h.image.cluster.broker(1).unwrap();
    assert_eq!(broker.cordoned_directories, Some(vec![dir(1, 2)]));
    assert!(broker.has_uncordoned_dirs());
    assert_eq!(usable(&h), vec![1, 2, 3]);
    // The same set in another order is no change.
    let records = heartbeat_cordoned(&mut h, 1, Some(vec![dir(1, 2), dir(1, 1)]));
    assert_eq!(records.len(), 1);
    assert!(heartbeat_cordoned(&mut h, 1, Some(vec![dir(1, 1), dir(1, 2)])).is_empty());
    // Every dir cordoned: no new replica goes to broker 1; it is not fenced for that.
    let broker = h.image.cluster.broker(1).unwrap();
    assert!(!broker.has_uncordoned_dirs());
    assert!(!h.fenced(1));
    assert_eq!(usable(&h), vec![2, 3]);
    // Uncordoned again.
    assert_eq!(heartbeat_cordoned(&mut h, 1, Some(vec![])).len(), 1);
    assert_eq!(usable(&h), vec![1, 2, 3]);
}

#[test]
fn below_4_3_iv0_a_heartbeats_cordoned_dirs_are_ignored() {
    let mut h = cluster_at(25);
    assert!(heartbeat_cordoned(&mut h, 1, Some(vec![dir(1, 1), dir(1, 2)])).is_empty());
    assert_eq!(
        h.image.cluster.broker(1).unwrap().cordoned_directories,
        None
    );
    assert_eq!(usable(&h), vec![1, 2, 3]);
}

#[test]
fn placement_and_manual_assignments_skip_fully_cordoned_brokers() {
    use crate::control::placement::{place, PlacementError, PlacementSeed};
    use crate::control::topics::{TopicConfig, TopicControlManager};
    use kraftd_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    use kraftd_protocol::messages::create_topics_request::{
        CreatableReplicaAssignment, CreatableTopic,
    };
    use kraftd_protocol::messages::{AlterPartitionReassignmentsRequest, CreateTopicsRequest};
    let mut h = cluster_at(MV_4_4);
    heartbeat_cordoned(&mut h, 3, Some(vec![dir(3, 1), dir(3, 2)]));
    let brokers = crate::control::placement::usable_brokers(&h.image);
    // Three replicas cannot be placed on the two brokers left: Kafka's message.
    let error = place(&brokers, 0, 1, 3, PlacementSeed::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Unable to replicate the partition 3 time(s): The target replication factor of 3 \
         cannot be reached because only 2 broker(s) are registered or some brokers have all \
         their log directories cordoned."
    );
    // Placed automatically, nothing lands on broker 3.
    for start in 0..6 {
        let seed = PlacementSeed {
            start_index: start,
            replica_shift: start,
        };
        for replicas in place(&brokers, 0, 4, 2, seed).unwrap() {
            assert!(!replicas.contains(&3), "{replicas:?}");
        }
    }
    // Nothing left at all.
    heartbeat_cordoned(&mut h, 1, Some(vec![dir(1, 1), dir(1, 2)]));
    heartbeat_cordoned(&mut h, 2, Some(vec![dir(2, 1), dir(2, 2)]));
    let none = crate::control::placement::usable_brokers(&h.image);
    assert_eq!(
        place(&none, 0, 1, 1, PlacementSeed::default()),
        Err(PlacementError::NoUsableBrokers {
            replication_factor: 1
        })
    );
    heartbeat_cordoned(&mut h, 1, Some(vec![]));
    heartbeat_cordoned(&mut h, 2, Some(vec![]));
    // A manual assignment naming broker 3 is refused as Kafka refuses it.
    let topics = TopicControlManager::new(TopicConfig {
        num_partitions: 1,
        default_replication_factor: 1,
    });
    let request = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "manual".into(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: vec![CreatableReplicaAssignment {
                partition_index: 0,
                broker_ids: vec![1, 3],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut next_id = 50u8;
    let result = topics.create_topics(
        &h.image,
        &request,
        || {
            next_id += 1;
            uuid(next_id)
        },
        PlacementSeed::default(),
    );
    let answer = &result.response.topics[0];
    assert_eq!(
        answer.error_code,
        ErrorCode::InvalidReplicaAssignment.code()
    );
    assert_eq!(
        answer.error_message.as_deref(),
        Some("The manual partition assignment includes broker 3, but all its log directories are cordoned.")
    );
    // So is a reassignment moving a replica onto broker 3.
    h.replay(&[MetadataRecord::Partition(PartitionRecord {
        partition_id: 0,
        topic_id: TOPIC_ID,
        replicas: vec![1, 2],
        isr: vec![1, 2],
        leader: 1,
        directories: vec![DIRECTORY_UNASSIGNED; 2],
        ..Default::default()
    })]);
    let topic_name = h.image.topics.get(&TOPIC_ID).unwrap().name.clone();
    let request = AlterPartitionReassignmentsRequest {
        topics: vec![ReassignableTopic {
            name: topic_name,
            partitions: vec![ReassignablePartition {
                partition_index: 0,
                replicas: Some(vec![1, 3]),
                ..Default::default()
            }],
            ..Default::default()
        }],
        allow_replication_factor_change: true,
        ..Default::default()
    };
    let result = h
        .replication
        .alter_partition_reassignments(&h.image, &request);
    let answer = &result.response.responses[0].partitions[0];
    assert_eq!(
        answer.error_code,
        ErrorCode::InvalidReplicaAssignment.code()
    );
    assert_eq!(
        answer.error_message.as_deref(),
        Some("The manual partition assignment includes broker 3, but all its log directories are cordoned.")
    );
    assert!(result.records.is_empty());
}

#[test]
fn snapshots_keep_the_cordoned_dirs_and_replay_restores_them() {
    let mut h = cluster_at(MV_4_4);
    heartbeat_cordoned(&mut h, 2, Some(vec![dir(2, 1)]));
    heartbeat_cordoned(&mut h, 3, Some(vec![]));
    let records = h.image.records();
    let registered: Vec<(i32, Option<Vec<Uuid>>)> = records
        .iter()
        .filter_map(|r| match r {
            MetadataRecord::RegisterBroker(b) => Some((b.broker_id, b.cordoned_log_dirs.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        registered,
        vec![(1, None), (2, Some(vec![dir(2, 1)])), (3, Some(vec![]))]
    );
    let reloaded = crate::MetadataImage::empty().replay_all(&records).unwrap();
    assert_eq!(reloaded.cluster, h.image.cluster);
}
