//! Metadata snapshots of the image: an image holding every kind of metadata written as a
//! Kafka-format snapshot loads back equal; corrupt or unreplayable snapshots are typed
//! errors; the snapshot policy fires on Kafka's byte and time limits.

use bytes::Bytes;
use kraftd_controller::snapshot::{
    load_image_snapshot, write_image_snapshot, SnapshotLoadError, SnapshotPolicy,
    DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS, DEFAULT_MAX_SNAPSHOT_INTERVAL_MS,
    SNAPSHOT_RECORD_GROUP,
};
use kraftd_controller::MetadataImage;
use kraftd_protocol::metadata::*;
use kraftd_protocol::metadata_record::{decode_metadata_record, encode_metadata_record};
use kraftd_protocol::records::Batches;
use kraftd_protocol::{MetadataRecord, Uuid};
use kraftd_raft::snapshot::{read_snapshot, SnapshotError, SnapshotWriter};

use kraftd_controller::testing::records::*;

/// An image with features, brokers (fenced and not), a controller, topics with changed
/// partitions and ELR, configs, client quotas, producer ids, ACLs and SCRAM credentials.
fn rich_image() -> MetadataImage {
    let mut records = vec![
        feature("metadata.version", 27),
        feature("kraft.version", 0),
        feature("transaction.version", 2),
        feature("eligible.leader.replicas.version", 1),
    ];
    for b in 1..=5 {
        records.push(register_broker(b, 100 + i64::from(b), false));
    }
    records.push(fence(5, 105));
    records.push(MetadataRecord::RegisterController(
        RegisterControllerRecord {
            controller_id: 3000,
            incarnation_id: uuid(50),
            end_points: vec![register_controller_record::ControllerEndpoint {
                name: "CONTROLLER".into(),
                host: "localhost".into(),
                port: 9093,
                security_protocol: 0,
                ..Default::default()
            }],
            ..Default::default()
        },
    ));
    for t in 0..20u8 {
        let id = uuid(t);
        records.push(topic(&format!("topic-{t}"), id));
        for p in 0..(i32::from(t) % 7 + 1) {
            let replicas = [p % 5 + 1, (p + 1) % 5 + 1, (p + 2) % 5 + 1];
            records.push(partition(id, p, &replicas, &replicas, replicas[0]));
        }
        records.push(config(
            2,
            &format!("topic-{t}"),
            "retention.ms",
            Some("1000"),
        ));
    }
    // Partition changes: a leader move, an ISR shrink with ELR.
    let mut c = change(uuid(3), 0);
    c.leader = 2;
    records.push(MetadataRecord::PartitionChange(c));
    let mut c = change(uuid(4), 1);
    c.isr = Some(vec![2]);
    c.leader = 2;
    c.eligible_leader_replicas = Some(vec![3]);
    records.push(MetadataRecord::PartitionChange(c));
    records.push(MetadataRecord::RemoveTopic(RemoveTopicRecord {
        topic_id: uuid(19),
        ..Default::default()
    }));
    records.extend([
        config(4, "", "min.insync.replicas", Some("2")),
        config(4, "1", "log.cleaner.threads", Some("2")),
        config(4, "", "num.io.threads", Some("8")),
    ]);
    records.push(MetadataRecord::ClientQuota(ClientQuotaRecord {
        entity: vec![client_quota_record::EntityData {
            entity_type: "user".into(),
            entity_name: Some("alice".into()),
            ..Default::default()
        }],
        key: "producer_byte_rate".into(),
        value: 1024.0,
        remove: false,
        ..Default::default()
    }));
    records.push(MetadataRecord::ClientQuota(ClientQuotaRecord {
        entity: vec![client_quota_record::EntityData {
            entity_type: "client-id".into(),
            entity_name: None,
            ..Default::default()
        }],
        key: "consumer_byte_rate".into(),
        value: 2048.0,
        remove: false,
        ..Default::default()
    }));
    records.push(MetadataRecord::ProducerIds(ProducerIdsRecord {
        broker_id: 1,
        broker_epoch: 101,
        next_producer_id: 5000,
        ..Default::default()
    }));
    for (i, principal) in ["User:alice", "User:bob"].into_iter().enumerate() {
        records.push(MetadataRecord::AccessControlEntry(
            AccessControlEntryRecord {
                id: uuid(200 + i as u8),
                resource_type: 2,
                resource_name: "topic-1".into(),
                pattern_type: 3,
                principal: principal.into(),
                host: "*".into(),
                operation: 3,
                permission_type: 3,
                ..Default::default()
            },
        ));
    }
    for mechanism in [1, 2] {
        records.push(MetadataRecord::UserScramCredential(
            UserScramCredentialRecord {
                name: "alice".into(),
                mechanism,
                salt: Bytes::from_static(b"salt"),
                stored_key: Bytes::from_static(b"stored-key"),
                server_key: Bytes::from_static(b"server-key"),
                iterations: 4096,
                ..Default::default()
            },
        ));
    }
    let image = MetadataImage::empty().replay_all(&records).unwrap();
    image.check_invariants().unwrap();
    image
}

#[test]
fn every_kind_of_metadata_survives_a_snapshot() {
    let image = rich_image();
    assert!(!image.topics.is_empty());
    assert!(image.cluster.brokers().count() == 5);
    assert!(!image.acls.is_empty());
    assert!(image.producer_ids.next_producer_id >= 0);
    let bytes = write_image_snapshot(&image, 9, 1_700_000_000_000).unwrap();
    let loaded = load_image_snapshot(bytes.clone()).unwrap();
    assert_eq!(loaded, image);
    // Equal images write identical snapshots.
    assert_eq!(
        write_image_snapshot(&loaded, 9, 1_700_000_000_000).unwrap(),
        bytes
    );

    // The raft-level view: Kafka's header and footer, the epoch, one value per record.
    let snapshot = read_snapshot(bytes).unwrap();
    assert_eq!(snapshot.epoch, 9);
    assert_eq!(
        snapshot.header.last_contained_log_timestamp,
        1_700_000_000_000
    );
    let decoded: Vec<MetadataRecord> = snapshot
        .values()
        .map(|v| decode_metadata_record(v.clone()).unwrap().0)
        .collect();
    assert_eq!(decoded, image.records());
}

#[test]
fn the_empty_image_round_trips() {
    let bytes = write_image_snapshot(&MetadataImage::empty(), 1, 0).unwrap();
    assert_eq!(load_image_snapshot(bytes).unwrap(), MetadataImage::empty());
}

#[test]
fn records_are_appended_in_groups_of_1024() {
    // Enough partitions for several groups; every data batch starts on a group boundary.
    let id = uuid(1);
    let mut records = vec![feature("metadata.version", 27), topic("big", id)];
    for b in 1..=3 {
        records.push(register_broker(b, 10, false));
    }
    for p in 0..5000 {
        records.push(partition(id, p, &[1, 2, 3], &[1, 2, 3], 1));
    }
    let image = MetadataImage::empty().replay_all(&records).unwrap();
    let bytes = write_image_snapshot(&image, 2, 5).unwrap();
    for batch in Batches::new(bytes.clone()).map(Result::unwrap) {
        if !batch.is_control() {
            assert_eq!((batch.base_offset() - 1) % SNAPSHOT_RECORD_GROUP as i64, 0);
        }
    }
    assert_eq!(load_image_snapshot(bytes).unwrap(), image);
}

#[test]
fn corrupt_snapshots_are_typed_errors() {
    let bytes = write_image_snapshot(&rich_image(), 3, 7).unwrap();
    // Cut anywhere: a format error, never a partial image.
    for len in (0..bytes.len()).step_by(97) {
        assert!(matches!(
            load_image_snapshot(bytes.slice(..len)),
            Err(SnapshotLoadError::Format(_))
        ));
    }
    // A flipped byte anywhere.
    for i in (0..bytes.len()).step_by(13) {
        let mut bad = bytes.to_vec();
        bad[i] ^= 0x40;
        assert!(
            load_image_snapshot(Bytes::from(bad)).is_err(),
            "flip at {i}"
        );
    }
    // Trailing bytes.
    let mut longer = bytes.to_vec();
    longer.extend_from_slice(&[0; 3]);
    assert!(matches!(
        load_image_snapshot(Bytes::from(longer)),
        Err(SnapshotLoadError::Format(
            SnapshotError::TrailingBytes { .. }
        ))
    ));
}

fn snapshot_of_values(values: &[Bytes]) -> Bytes {
    let mut w = SnapshotWriter::new(1, 0, 0).unwrap();
    for v in values {
        w.append(v.clone()).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn undecodable_and_unreplayable_records_are_typed_errors() {
    // A sound snapshot whose second value is not a metadata record.
    let good = encode_metadata_record(&feature("metadata.version", 27), 0).unwrap();
    let bytes = snapshot_of_values(&[good.clone(), Bytes::from_static(&[9, 9, 9])]);
    assert!(matches!(
        load_image_snapshot(bytes),
        Err(SnapshotLoadError::Decode { offset: 2, .. })
    ));
    // A partition of a topic the snapshot never created.
    let orphan = encode_metadata_record(&partition(uuid(1), 0, &[1], &[1], 1), 0).unwrap();
    let bytes = snapshot_of_values(&[good, orphan]);
    assert!(matches!(
        load_image_snapshot(bytes),
        Err(SnapshotLoadError::Replay { offset: 2, .. })
    ));
}

#[test]
fn policy_fires_on_bytes() {
    let mut policy = SnapshotPolicy::new(1000, 0, 0);
    assert!(!policy.should_snapshot(0));
    assert!(!policy.record_committed(600, 10));
    assert!(
        !policy.should_snapshot(i64::MAX),
        "interval 0 disables the time trigger"
    );
    assert!(
        policy.record_committed(400, 20),
        "1000 bytes reach the limit"
    );
    assert!(policy.should_snapshot(20));
    policy.snapshot_taken(30);
    assert_eq!(policy.bytes_since_last_snapshot(), 0);
    assert!(!policy.should_snapshot(30));
    assert!(policy.record_committed(5000, 40));
}

#[test]
fn policy_fires_on_time_once_something_was_committed() {
    let mut policy = SnapshotPolicy::with_kafka_defaults(1_000);
    let hour = DEFAULT_MAX_SNAPSHOT_INTERVAL_MS;
    assert_eq!(hour, 3_600_000);
    assert_eq!(DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS, 20 * 1024 * 1024);
    // Nothing committed: no snapshot however long it has been.
    assert!(!policy.should_snapshot(1_000 + 10 * hour));
    assert!(!policy.record_committed(100, 1_000 + hour - 1));
    assert!(policy.record_committed(100, 1_000 + hour));
    policy.snapshot_taken(1_000 + hour);
    assert!(!policy.record_committed(100, 1_000 + 2 * hour - 1));
    assert!(policy.should_snapshot(1_000 + 2 * hour));
    // The byte limit alone, with Kafka's default.
    let mut policy = SnapshotPolicy::with_kafka_defaults(0);
    assert!(!policy.record_committed(DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS - 1, 1));
    assert!(policy.record_committed(1, 2));
}

/// The partitions whose ISR (`elr` false) or ELR holds `broker`, by a scan of every partition.
fn members_by_scan(image: &MetadataImage, broker: i32, elr: bool) -> Vec<(Uuid, i32)> {
    let mut found = Vec::new();
    for topic in image.topics.iter() {
        for (id, p) in topic.partitions.iter() {
            let members = if elr { &p.elr } else { &p.isr };
            if members.contains(&broker) {
                found.push((topic.id, *id));
            }
        }
    }
    found
}

/// The ISR and ELR indexes (Kafka's `BrokersToIsrs`, `BrokersToElrs`) name, for every broker,
/// exactly the partitions a scan finds, after creations, ISR and ELR changes, a reassignment's
/// start and completion, a ClearElr, a topic deletion and a snapshot load.
#[test]
fn the_isr_and_elr_indexes_agree_with_a_scan_through_every_change() {
    let check = |image: &MetadataImage, step: &str| {
        image
            .check_invariants()
            .unwrap_or_else(|e| panic!("{step}: {e}"));
        for broker in 0..=6 {
            for elr in [false, true] {
                let indexed: Vec<(Uuid, i32)> = if elr {
                    image.topics.partitions_with_elr_member(broker)
                } else {
                    image.topics.partitions_with_isr_member(broker)
                };
                assert_eq!(
                    indexed,
                    members_by_scan(image, broker, elr),
                    "{step}: broker {broker}, elr {elr}"
                );
            }
        }
    };
    // Two topics of 150 partitions (three index entries per broker each), replicas rotating
    // over brokers 1 to 5.
    let mut records = vec![
        feature("metadata.version", 27),
        feature("eligible.leader.replicas.version", 1),
        topic("a", uuid(1)),
        topic("b", uuid(2)),
    ];
    for id in [uuid(1), uuid(2)] {
        for p in 0..150 {
            let replicas: Vec<i32> = (0..3).map(|i| (p + i) % 5 + 1).collect();
            records.push(partition(id, p, &replicas, &replicas, replicas[0]));
        }
    }
    let image = MetadataImage::empty()
        .with_controller_indexes()
        .replay_all(&records)
        .unwrap();
    assert!(image.has_controller_indexes());
    check(&image, "created");
    assert_eq!(image.topics.partitions_with_isr_member(1).len(), 2 * 90);

    // a-0 (replicas 1, 2, 3): the ISR shrinks to 1, 2 and 3 moves to the ELR; a-64 loses
    // broker 5 from its ISR and its leader.
    let shrink = PartitionChangeRecord {
        isr: Some(vec![1, 2]),
        eligible_leader_replicas: Some(vec![3]),
        ..change(uuid(1), 0)
    };
    let a64 = image.topics.partition(&uuid(1), 64).unwrap().clone();
    let leaderless = PartitionChangeRecord {
        isr: Some(
            a64.isr
                .iter()
                .copied()
                .filter(|r| *r != a64.leader)
                .collect(),
        ),
        leader: -1,
        ..change(uuid(1), 64)
    };
    let image = image
        .replay_all(&[
            MetadataRecord::PartitionChange(shrink),
            MetadataRecord::PartitionChange(leaderless),
        ])
        .unwrap();
    check(&image, "ISR and ELR changes");
    assert_eq!(image.topics.partitions_with_elr_member(3), [(uuid(1), 0)]);

    // A reassignment of b-149 (replicas 5, 1, 2) to 6, 1, 2: 6 joins, then the reassignment
    // completes with 6 in the ISR and 5 gone.
    let start = PartitionChangeRecord {
        replicas: Some(vec![5, 1, 2, 6]),
        adding_replicas: Some(vec![6]),
        removing_replicas: Some(vec![5]),
        ..change(uuid(2), 149)
    };
    let join = PartitionChangeRecord {
        isr: Some(vec![5, 1, 2, 6]),
        ..change(uuid(2), 149)
    };
    let complete = PartitionChangeRecord {
        replicas: Some(vec![6, 1, 2]),
        isr: Some(vec![6, 1, 2]),
        adding_replicas: Some(vec![]),
        removing_replicas: Some(vec![]),
        leader: 6,
        ..change(uuid(2), 149)
    };
    let image = image
        .replay_all(&[MetadataRecord::PartitionChange(start)])
        .unwrap();
    check(&image, "reassignment started");
    let image = image
        .replay_all(&[MetadataRecord::PartitionChange(join)])
        .unwrap();
    check(&image, "target replica in the ISR");
    let image = image
        .replay_all(&[MetadataRecord::PartitionChange(complete)])
        .unwrap();
    check(&image, "reassignment completed");
    assert_eq!(image.topics.partitions_with_isr_member(6), [(uuid(2), 149)]);

    let clear = MetadataRecord::ClearElr(ClearElrRecord::default());
    let image = image.replay_all(&[clear]).unwrap();
    check(&image, "ELR cleared");
    assert_eq!(image.topics.partitions_with_elr_member(3).len(), 0);

    let remove = MetadataRecord::RemoveTopic(RemoveTopicRecord {
        topic_id: uuid(1),
        ..Default::default()
    });
    let image = image.replay_all(&[remove]).unwrap();
    check(&image, "topic a deleted");
    assert!(image
        .topics
        .partitions_with_isr_member(1)
        .iter()
        .all(|(topic, _)| *topic == uuid(2)));

    // An ELR again, so the snapshot carries one; then write and load it.
    let shrink = PartitionChangeRecord {
        isr: Some(vec![2, 3]),
        eligible_leader_replicas: Some(vec![4]),
        leader: 2,
        ..change(uuid(2), 1)
    };
    let image = image
        .replay_all(&[MetadataRecord::PartitionChange(shrink)])
        .unwrap();
    check(&image, "ELR set again");
    let bytes = write_image_snapshot(&image, 9, 1_700_000_000_000).unwrap();
    // A broker's image (as loaded, without the controller's indexes) answers by a scan,
    // the same.
    let loaded = load_image_snapshot(bytes).unwrap();
    assert!(!loaded.has_controller_indexes());
    for broker in 0..=6 {
        let topics = (&loaded.topics, &image.topics);
        assert_eq!(
            topics.0.partitions_with_isr_member(broker),
            topics.1.partitions_with_isr_member(broker)
        );
        assert_eq!(
            topics.0.partitions_with_elr_member(broker),
            topics.1.partitions_with_elr_member(broker)
        );
        assert_eq!(topics.0.leader_count(broker), topics.1.leader_count(broker));
    }
    assert_eq!(loaded.topics.leaderless(), image.topics.leaderless());
    let loaded = loaded.with_controller_indexes();
    check(&loaded, "snapshot loaded");
    assert_eq!(loaded, image);
    assert_eq!(loaded.topics.partitions_with_elr_member(4), [(uuid(2), 1)]);
}
