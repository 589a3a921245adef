//! TopicControlManager and replica placement: CreateTopics (names, defaults, placement,
//! manual assignments, configs, validate-only), DeleteTopics and CreatePartitions, with the
//! records asserted and replayed into the image.

use std::collections::BTreeSet;

use kraftd_controller::control::placement::{place, usable_brokers};
use kraftd_controller::control::topics::validate_topic_name;
use kraftd_controller::control::{PlacementSeed, TopicConfig, TopicControlManager, UsableBroker};
use kraftd_controller::image::ConfigResource;
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::create_partitions_request::{
    CreatePartitionsAssignment, CreatePartitionsTopic,
};
use kraftd_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kraftd_protocol::messages::delete_topics_request::DeleteTopicState;
use kraftd_protocol::messages::{
    CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
};
use kraftd_protocol::{ErrorCode, MetadataRecord, Uuid};

use kraftd_controller::testing::records::{feature, fence, register_broker, uuid};

/// Brokers 1..=n registered; those in `fenced` stay fenced. Racks are `rack{id % 2}`.
fn cluster(n: i32, fenced: &[i32]) -> MetadataImage {
    let records: Vec<MetadataRecord> = (1..=n)
        .map(|id| register_broker(id, 10 + i64::from(id), fenced.contains(&id)))
        .collect();
    MetadataImage::empty().replay_all(&records).unwrap()
}

fn ids() -> impl FnMut() -> Uuid {
    let mut n = 0u8;
    move || {
        n += 1;
        uuid(n)
    }
}

fn creatable(name: &str, partitions: i32, rf: i16) -> CreatableTopic {
    CreatableTopic {
        name: name.into(),
        num_partitions: partitions,
        replication_factor: rf,
        ..Default::default()
    }
}

fn create(image: &MetadataImage, topics: Vec<CreatableTopic>) -> (MetadataImage, Vec<(i16, Uuid)>) {
    let request = CreateTopicsRequest {
        topics,
        ..Default::default()
    };
    let result = TopicControlManager::default().create_topics(
        image,
        &request,
        ids(),
        PlacementSeed::default(),
    );
    let next = image.replay_all(&result.records).unwrap();
    next.check_invariants().unwrap();
    let codes = result
        .response
        .topics
        .iter()
        .map(|t| (t.error_code, t.topic_id))
        .collect();
    (next, codes)
}

#[test]
fn topic_names_are_validated_as_kafka() {
    assert!(validate_topic_name("orders-v1.eu_west").is_ok());
    assert!(validate_topic_name("").is_err());
    assert!(validate_topic_name(".").is_err());
    assert!(validate_topic_name("..").is_err());
    assert!(validate_topic_name("a b").is_err());
    assert!(validate_topic_name("ü").is_err());
    assert!(validate_topic_name(&"x".repeat(249)).is_ok());
    assert!(validate_topic_name(&"x".repeat(250)).is_err());
}

#[test]
fn create_topic_writes_topic_configs_and_partitions() {
    let image = cluster(3, &[]);
    let mut topic = creatable("orders", 3, 3);
    topic.configs.push(CreatableTopicConfig {
        name: "min.insync.replicas".into(),
        value: Some("2".into()),
        ..Default::default()
    });
    let request = CreateTopicsRequest {
        topics: vec![topic],
        ..Default::default()
    };
    let result = TopicControlManager::default().create_topics(
        &image,
        &request,
        ids(),
        PlacementSeed::default(),
    );
    assert!(result.is_atomic);
    let t = &result.response.topics[0];
    assert_eq!(t.error_code, 0);
    assert_eq!(t.topic_id, uuid(1));
    assert_eq!(t.num_partitions, 3);
    assert_eq!(t.replication_factor, 3);
    assert_eq!(t.configs.as_ref().unwrap().len(), 1);
    assert_eq!(result.records.len(), 1 + 1 + 3);
    assert!(matches!(&result.records[0], MetadataRecord::Topic(r) if r.name == "orders"));
    assert!(
        matches!(&result.records[1], MetadataRecord::Config(r) if r.name == "min.insync.replicas")
    );

    let next = image.replay_all(&result.records).unwrap();
    let topic = next.topics.get_by_name("orders").unwrap();
    assert_eq!(topic.partitions.len(), 3);
    let mut leaders = BTreeSet::new();
    for p in topic.partitions.values() {
        assert_eq!(p.replicas.len(), 3);
        assert_eq!(p.isr, p.replicas);
        assert_eq!(p.leader, p.replicas[0]);
        assert_eq!(p.leader_epoch, 0);
        assert_eq!(p.partition_epoch, 0);
        leaders.insert(p.leader);
    }
    // Leadership spreads over all three brokers.
    assert_eq!(leaders.len(), 3);
    assert_eq!(
        next.configs
            .value(&ConfigResource::topic("orders"), "min.insync.replicas"),
        Some("2")
    );
}

#[test]
fn defaults_apply_when_minus_one() {
    let image = cluster(3, &[]);
    let manager = TopicControlManager::new(TopicConfig {
        num_partitions: 4,
        default_replication_factor: 2,
    });
    let request = CreateTopicsRequest {
        topics: vec![creatable("d", -1, -1)],
        ..Default::default()
    };
    let result = manager.create_topics(&image, &request, ids(), PlacementSeed::default());
    let t = &result.response.topics[0];
    assert_eq!(
        (t.error_code, t.num_partitions, t.replication_factor),
        (0, 4, 2)
    );
    let next = image.replay_all(&result.records).unwrap();
    let topic = next.topics.get_by_name("d").unwrap();
    assert!(topic.partitions.values().all(|p| p.replicas.len() == 2));

    // With the built-in defaults: one partition, one replica.
    let (next, codes) = create(&image, vec![creatable("e", -1, -1)]);
    assert_eq!(codes[0].0, 0);
    let topic = next.topics.get_by_name("e").unwrap();
    assert_eq!(topic.partitions.len(), 1);
    assert_eq!(topic.partitions.get(&0).unwrap().replicas.len(), 1);
}

#[test]
fn bad_requests_get_kafka_error_codes() {
    let image = cluster(3, &[]);
    let (image, codes) = create(&image, vec![creatable("taken.name", 1, 1)]);
    assert_eq!(codes[0].0, 0);
    let mut bad_config = creatable("badconfig", 1, 1);
    bad_config.configs.push(CreatableTopicConfig {
        name: "retention.ms".into(),
        value: Some("soon".into()),
        ..Default::default()
    });
    let mut unknown_config = creatable("unknownconfig", 1, 1);
    unknown_config.configs.push(CreatableTopicConfig {
        name: "no.such.key".into(),
        value: Some("1".into()),
        ..Default::default()
    });
    let (next, codes) = create(
        &image,
        vec![
            creatable("bad name", 1, 1),
            creatable("taken.name", 1, 1),
            creatable("taken_name", 1, 1),
            creatable("dup", 1, 1),
            creatable("dup", 1, 1),
            creatable("zero", 0, 1),
            creatable("rf0", 1, 0),
            creatable("rf4", 1, 4),
            bad_config,
            unknown_config,
            creatable("fine", 2, 3),
        ],
    );
    let codes: Vec<i16> = codes.iter().map(|c| c.0).collect();
    assert_eq!(
        codes,
        vec![
            ErrorCode::InvalidTopicException.code(),
            ErrorCode::TopicAlreadyExists.code(),
            ErrorCode::InvalidTopicException.code(),
            ErrorCode::InvalidRequest.code(),
            ErrorCode::InvalidRequest.code(),
            ErrorCode::InvalidPartitions.code(),
            ErrorCode::InvalidReplicationFactor.code(),
            ErrorCode::InvalidReplicationFactor.code(),
            ErrorCode::InvalidConfig.code(),
            ErrorCode::InvalidConfig.code(),
            0,
        ]
    );
    // Only the good topic was written.
    assert_eq!(next.topics.len(), 2);
    assert!(next.topics.get_by_name("fine").is_some());
}

#[test]
fn bad_config_value_message_names_key_and_value() {
    let image = cluster(1, &[]);
    let mut topic = creatable("t", 1, 1);
    topic.configs.push(CreatableTopicConfig {
        name: "cleanup.policy".into(),
        value: Some("shred".into()),
        ..Default::default()
    });
    let request = CreateTopicsRequest {
        topics: vec![topic],
        ..Default::default()
    };
    let result = TopicControlManager::default().create_topics(
        &image,
        &request,
        ids(),
        PlacementSeed::default(),
    );
    let message = result.response.topics[0].error_message.clone().unwrap();
    assert!(message.contains("cleanup.policy"), "{message}");
    assert!(message.contains("shred"), "{message}");
    assert!(result.records.is_empty());
}

#[test]
fn placement_uses_only_unfenced_brokers() {
    let image = cluster(4, &[2]);
    let (_, codes) = create(&image, vec![creatable("rf4", 1, 4)]);
    assert_eq!(codes[0].0, ErrorCode::InvalidReplicationFactor.code());
    let (next, codes) = create(&image, vec![creatable("rf3", 8, 3)]);
    assert_eq!(codes[0].0, 0);
    let topic = next.topics.get_by_name("rf3").unwrap();
    for p in topic.partitions.values() {
        assert!(!p.replicas.contains(&2));
    }
    // Fencing broker 3 as well leaves two.
    let image = image.replay_all(&[fence(3, 13)]).unwrap();
    let (_, codes) = create(&image, vec![creatable("rf3", 1, 3)]);
    assert_eq!(codes[0].0, ErrorCode::InvalidReplicationFactor.code());
}

#[test]
fn placement_is_rack_aware_deterministic_and_balanced() {
    let brokers: Vec<UsableBroker> = (1..=6)
        .map(|id| UsableBroker {
            id,
            rack: Some(format!("r{}", id % 3)),
        })
        .collect();
    let seed = PlacementSeed::from_u64(42);
    let a = place(&brokers, 0, 12, 3, seed).unwrap();
    let b = place(&brokers, 0, 12, 3, seed).unwrap();
    assert_eq!(a, b);
    let mut leader_counts = std::collections::BTreeMap::new();
    for replicas in &a {
        assert_eq!(replicas.len(), 3);
        let racks: BTreeSet<i32> = replicas.iter().map(|id| id % 3).collect();
        assert_eq!(racks.len(), 3, "{replicas:?} not on three racks");
        let distinct: BTreeSet<i32> = replicas.iter().copied().collect();
        assert_eq!(distinct.len(), 3);
        *leader_counts.entry(replicas[0]).or_insert(0) += 1;
    }
    assert!(leader_counts.values().all(|c| *c == 2), "{leader_counts:?}");

    // Without racks, replicas are still distinct.
    let plain: Vec<UsableBroker> = (1..=5).map(|id| UsableBroker { id, rack: None }).collect();
    for replicas in place(&plain, 0, 20, 5, PlacementSeed::from_u64(7)).unwrap() {
        let distinct: BTreeSet<i32> = replicas.iter().copied().collect();
        assert_eq!(distinct.len(), 5);
    }
    assert_eq!(usable_brokers(&cluster(3, &[1])).len(), 2);
}

#[test]
fn manual_assignments_are_validated() {
    let image = cluster(3, &[3]);
    let manual = |assignments: Vec<(i32, Vec<i32>)>| CreatableTopic {
        name: "m".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: assignments
            .into_iter()
            .map(|(p, b)| CreatableReplicaAssignment {
                partition_index: p,
                broker_ids: b,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let (next, codes) = create(&image, vec![manual(vec![(1, vec![3, 1]), (0, vec![2, 1])])]);
    assert_eq!(codes[0].0, 0);
    let topic = next.topics.get_by_name("m").unwrap();
    let p1 = topic.partitions.get(&1).unwrap();
    // Fenced broker 3 is a replica but not in the ISR, and not the leader.
    assert_eq!(p1.replicas, vec![3, 1]);
    assert_eq!(p1.isr, vec![1]);
    assert_eq!(p1.leader, 1);

    for (assignments, code) in [
        (
            vec![(0, vec![1]), (2, vec![2])],
            ErrorCode::InvalidReplicaAssignment,
        ),
        (vec![(0, vec![1, 1])], ErrorCode::InvalidReplicaAssignment),
        (vec![(0, vec![9])], ErrorCode::InvalidReplicaAssignment),
        (vec![(0, vec![])], ErrorCode::InvalidReplicaAssignment),
        (vec![(0, vec![3])], ErrorCode::InvalidReplicaAssignment),
    ] {
        let (_, codes) = create(&image, vec![manual(assignments.clone())]);
        assert_eq!(codes[0].0, code.code(), "{assignments:?}");
    }
    let mut with_count = manual(vec![(0, vec![1])]);
    with_count.num_partitions = 1;
    let (_, codes) = create(&image, vec![with_count]);
    assert_eq!(codes[0].0, ErrorCode::InvalidRequest.code());
}

#[test]
fn validate_only_writes_nothing() {
    let image = cluster(3, &[]);
    let request = CreateTopicsRequest {
        topics: vec![creatable("v", 3, 2), creatable("v v", 1, 1)],
        validate_only: true,
        ..Default::default()
    };
    let result = TopicControlManager::default().create_topics(
        &image,
        &request,
        ids(),
        PlacementSeed::default(),
    );
    assert!(result.records.is_empty());
    assert_eq!(result.response.topics[0].error_code, 0);
    assert_eq!(result.response.topics[0].num_partitions, 3);
    assert_eq!(
        result.response.topics[1].error_code,
        ErrorCode::InvalidTopicException.code()
    );
}

#[test]
fn delete_topics_by_name_and_id() {
    let image = cluster(3, &[]);
    let mut topic = creatable("a", 2, 1);
    topic.configs.push(CreatableTopicConfig {
        name: "retention.ms".into(),
        value: Some("1000".into()),
        ..Default::default()
    });
    let (image, codes) = create(&image, vec![topic, creatable("b", 1, 1)]);
    let (a_id, b_id) = (codes[0].1, codes[1].1);
    let request = DeleteTopicsRequest {
        topic_names: vec!["a".into(), "nope".into()],
        topics: vec![
            DeleteTopicState {
                name: None,
                topic_id: b_id,
                ..Default::default()
            },
            DeleteTopicState {
                name: None,
                topic_id: uuid(99),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let result = TopicControlManager::default().delete_topics(&image, &request);
    let codes: Vec<i16> = result
        .response
        .responses
        .iter()
        .map(|r| r.error_code)
        .collect();
    assert_eq!(
        codes,
        vec![
            0,
            ErrorCode::UnknownTopicOrPartition.code(),
            0,
            ErrorCode::UnknownTopicId.code()
        ]
    );
    assert_eq!(result.response.responses[0].topic_id, a_id);
    assert_eq!(result.response.responses[2].name.as_deref(), Some("b"));
    assert_eq!(result.records.len(), 2);
    let next = image.replay_all(&result.records).unwrap();
    assert!(next.topics.is_empty());
    assert!(next.configs.get(&ConfigResource::topic("a")).is_none());
}

#[test]
fn create_partitions_grows_topics() {
    let image = cluster(3, &[]);
    let (image, _) = create(&image, vec![creatable("g", 2, 2)]);
    let topic = |name: &str, count: i32| CreatePartitionsTopic {
        name: name.into(),
        count,
        assignments: None,
        ..Default::default()
    };
    let mut manual = topic("g", 5);
    manual.assignments = Some(vec![CreatePartitionsAssignment {
        broker_ids: vec![3, 1],
        ..Default::default()
    }]);
    let manager = TopicControlManager::default();
    let request = CreatePartitionsRequest {
        topics: vec![topic("g", 4), topic("g", 1)],
        ..Default::default()
    };
    // The same topic twice is a bad request.
    let result = manager.create_partitions(&image, &request, PlacementSeed::default());
    assert!(result
        .response
        .results
        .iter()
        .all(|r| r.error_code == ErrorCode::InvalidRequest.code()));
    for (t, code) in [
        (topic("g", 1), ErrorCode::InvalidPartitions),
        (topic("g", 2), ErrorCode::InvalidPartitions),
        (topic("h", 3), ErrorCode::UnknownTopicOrPartition),
        (manual, ErrorCode::InvalidReplicaAssignment),
    ] {
        let request = CreatePartitionsRequest {
            topics: vec![t],
            ..Default::default()
        };
        let result = manager.create_partitions(&image, &request, PlacementSeed::default());
        assert_eq!(result.response.results[0].error_code, code.code());
        assert!(result.records.is_empty());
    }
    let request = CreatePartitionsRequest {
        topics: vec![topic("g", 4)],
        ..Default::default()
    };
    let validate_only = CreatePartitionsRequest {
        validate_only: true,
        ..request.clone()
    };
    let result = manager.create_partitions(&image, &validate_only, PlacementSeed::default());
    assert_eq!(result.response.results[0].error_code, 0);
    assert!(result.records.is_empty());
    let result = manager.create_partitions(&image, &request, PlacementSeed::default());
    assert_eq!(result.response.results[0].error_code, 0);
    assert_eq!(result.records.len(), 2);
    let next = image.replay_all(&result.records).unwrap();
    next.check_invariants().unwrap();
    let g = next.topics.get_by_name("g").unwrap();
    assert_eq!(g.partitions.len(), 4);
    assert!(g.partitions.values().all(|p| p.replicas.len() == 2));
}

#[test]
fn placement_matches_kafkas_assignment() {
    // Kafka's AdminUtilsTest: five brokers without racks, start index 0, shift 0.
    let plain: Vec<UsableBroker> = (0..5).map(|id| UsableBroker { id, rack: None }).collect();
    let placed = place(&plain, 0, 10, 3, PlacementSeed::default()).unwrap();
    let expected: Vec<Vec<i32>> = vec![
        vec![0, 1, 2],
        vec![1, 2, 3],
        vec![2, 3, 4],
        vec![3, 4, 0],
        vec![4, 0, 1],
        vec![0, 2, 3],
        vec![1, 3, 4],
        vec![2, 4, 0],
        vec![3, 0, 1],
        vec![4, 1, 2],
    ];
    assert_eq!(placed, expected);
    // CreatePartitions continues the same sequence from the current partition count.
    assert_eq!(
        place(&plain, 5, 5, 3, PlacementSeed::default()).unwrap(),
        expected[5..].to_vec()
    );

    // Kafka's AdminRackAwareTest: the rack-alternated order is 0, 3, 1, 5, 4, 2.
    let racks = [
        (0, "rack1"),
        (1, "rack3"),
        (2, "rack3"),
        (3, "rack2"),
        (4, "rack2"),
        (5, "rack1"),
    ];
    let racked: Vec<UsableBroker> = racks
        .iter()
        .map(|(id, rack)| UsableBroker {
            id: *id,
            rack: Some(rack.to_string()),
        })
        .collect();
    let leaders: Vec<i32> = place(&racked, 0, 6, 1, PlacementSeed::default())
        .unwrap()
        .into_iter()
        .map(|r| r[0])
        .collect();
    assert_eq!(leaders, vec![0, 3, 1, 5, 4, 2]);
}

#[test]
fn directories_from_metadata_version_3_7_iv2() {
    use kraftd_controller::image::{DIRECTORY_MIGRATING, DIRECTORY_UNASSIGNED};
    use kraftd_protocol::metadata::RegisterBrokerRecord;
    let broker = |id: i32, dirs: Vec<Uuid>| {
        let MetadataRecord::RegisterBroker(r) = register_broker(id, 10 + i64::from(id), false)
        else {
            unreachable!()
        };
        MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            log_dirs: dirs,
            ..r
        })
    };
    let records = vec![
        feature("metadata.version", 17),
        broker(1, vec![uuid(50)]),
        broker(2, vec![uuid(51), uuid(52)]),
        broker(3, vec![]),
    ];
    let image = MetadataImage::empty().replay_all(&records).unwrap();
    let (next, codes) = create(&image, vec![creatable("d", 3, 3)]);
    assert_eq!(codes[0].0, 0);
    for p in next.topics.get_by_name("d").unwrap().partitions.values() {
        for (replica, dir) in p.replicas.iter().zip(&p.directories) {
            let expected = match replica {
                1 => uuid(50),
                2 => DIRECTORY_UNASSIGNED,
                _ => DIRECTORY_MIGRATING,
            };
            assert_eq!(*dir, expected);
        }
    }
}

#[test]
fn too_many_partitions_fail_the_whole_request() {
    let image = cluster(1, &[]);
    let (next, codes) = create(
        &image,
        vec![creatable("a", 1, 1), creatable("b", 10_000, 1)],
    );
    let policy = ErrorCode::PolicyViolation.code();
    assert_eq!(
        codes.iter().map(|c| c.0).collect::<Vec<_>>(),
        vec![policy, policy]
    );
    assert!(next.topics.is_empty());
    let (image, _) = create(&image, vec![creatable("a", 1, 1)]);
    let request = CreatePartitionsRequest {
        topics: vec![CreatePartitionsTopic {
            name: "a".into(),
            count: i32::MAX,
            assignments: None,
            ..Default::default()
        }],
        ..Default::default()
    };
    let result = TopicControlManager::default().create_partitions(
        &image,
        &request,
        PlacementSeed::default(),
    );
    assert_eq!(result.response.results[0].error_code, policy);
    assert!(result.records.is_empty());
}

#[test]
fn names_differing_only_by_dot_and_underscore_collide_until_one_is_removed() {
    let image = cluster(3, &[]);
    let (image, codes) = create(&image, vec![creatable("metrics.eu", 1, 1)]);
    assert_eq!(codes[0].0, 0);
    let collide = |image: &MetadataImage, name: &str| {
        let request = CreateTopicsRequest {
            topics: vec![creatable(name, 1, 1)],
            ..Default::default()
        };
        TopicControlManager::default()
            .create_topics(image, &request, ids(), PlacementSeed::default())
            .response
            .topics[0]
            .error_code
    };
    assert_eq!(
        collide(&image, "metrics_eu"),
        ErrorCode::InvalidTopicException.code()
    );
    // A name without '.' or '_' never collides with another name.
    assert_eq!(collide(&image, "metricseu"), 0);
    // Once the topic is removed its unified name is free again.
    let removed = image
        .replay_all(&[MetadataRecord::RemoveTopic(
            kraftd_protocol::metadata::RemoveTopicRecord {
                topic_id: codes[0].1,
                ..Default::default()
            },
        )])
        .unwrap();
    assert_eq!(collide(&removed, "metrics_eu"), 0);
    assert_eq!(removed.topics.colliding_name("metrics_eu"), None);
    assert_eq!(
        image
            .topics
            .colliding_name("metrics_eu")
            .map(String::as_str),
        Some("metrics.eu")
    );
}

#[test]
fn unsupported_topic_configs_are_refused_unless_kafkas_default() {
    let image = cluster(1, &[]);
    let with = |name: &str, config: &str, value: &str| {
        let mut topic = creatable(name, 1, 1);
        topic.configs.push(CreatableTopicConfig {
            name: config.into(),
            value: Some(value.into()),
            ..Default::default()
        });
        topic
    };
    let request = CreateTopicsRequest {
        topics: vec![
            with("a", "remote.storage.enable", "true"),
            // Honoured: compression.type re-compresses, timestamps are checked.
            with("b", "compression.type", "snappy"),
            // Kafka's default, set explicitly as Connect and Streams do.
            with("c", "compression.type", "producer"),
            with("d", "segment.jitter.ms", "1000"),
            with("e", "message.timestamp.after.max.ms", "60000"),
        ],
        ..Default::default()
    };
    let result = TopicControlManager::default().create_topics(
        &image,
        &request,
        ids(),
        PlacementSeed::default(),
    );
    let topics = &result.response.topics;
    for (t, key) in topics[..1].iter().zip(["remote.storage.enable"]) {
        assert_eq!(t.error_code, ErrorCode::InvalidConfig.code());
        let message = t.error_message.clone().unwrap();
        assert!(
            message.contains(&format!("kraftd does not support {key}")),
            "{message}"
        );
    }
    for t in &topics[1..] {
        assert_eq!(t.error_code, 0, "{t:?}");
    }
    let next = image.replay_all(&result.records).unwrap();
    assert!(next.topics.get_by_name("a").is_none());
    assert!(next.topics.get_by_name("c").is_some());
    assert_eq!(
        next.configs
            .value(&ConfigResource::topic("c"), "compression.type"),
        Some("producer")
    );
}
