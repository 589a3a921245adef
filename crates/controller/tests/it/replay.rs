//! Per-record replay tests: each metadata record type changes the image as Kafka's image
//! classes do, and a record that does not fit the state is refused with a typed error that
//! leaves the delta unchanged.

use std::sync::Arc;

use bytes::Bytes;
use kraftd_controller::image::*;
use kraftd_controller::testing::records::*;
use kraftd_controller::{MetadataDelta, MetadataImage, ReplayErrorKind};
use kraftd_protocol::metadata::*;
use kraftd_protocol::{MetadataRecord, Uuid};

fn replay(image: &MetadataImage, records: &[MetadataRecord]) -> MetadataImage {
    image.replay_all(records).expect("records replay")
}

fn refused(image: &MetadataImage, record: MetadataRecord) -> ReplayErrorKind {
    let mut delta = MetadataDelta::new(image);
    let err = delta.replay(&record).expect_err("record is refused");
    assert_eq!(*err.record, record, "the error carries the record");
    assert_eq!(delta.apply(), *image, "a refused record changes nothing");
    assert!(delta.changes().changed_topics.is_empty());
    err.kind
}

fn one_topic() -> MetadataImage {
    replay(
        &MetadataImage::empty(),
        &[
            topic("foo", uuid(1)),
            partition(uuid(1), 0, &[1, 2, 3], &[1, 2, 3], 1),
            partition(uuid(1), 1, &[2, 3, 1], &[2, 3, 1], 2),
        ],
    )
}

#[test]
fn topic_and_partition_records_build_a_topic() {
    let image = one_topic();
    let foo = image.topics.get_by_name("foo").unwrap();
    assert_eq!(foo.id, uuid(1));
    assert_eq!(foo.partitions.len(), 2);
    let p0 = image.topics.partition(&uuid(1), 0).unwrap();
    assert_eq!(p0.replicas, vec![1, 2, 3]);
    assert_eq!(p0.leader, 1);
    assert_eq!(p0.directories, vec![DIRECTORY_MIGRATING; 3]);
    assert_eq!(p0.leader_recovery_state, LeaderRecoveryState::Recovered);
    image.check_invariants().unwrap();
}

#[test]
fn topic_record_conflicts_are_refused() {
    let image = one_topic();
    assert_eq!(
        refused(&image, topic("foo", uuid(2))),
        ReplayErrorKind::TopicNameExists("foo".into())
    );
    assert_eq!(
        refused(&image, topic("bar", uuid(1))),
        ReplayErrorKind::TopicIdExists(uuid(1))
    );
    assert_eq!(
        refused(&image, topic("bar", Uuid::ZERO)),
        ReplayErrorKind::ZeroTopicId
    );
    assert_eq!(
        refused(&image, topic("", uuid(3))),
        ReplayErrorKind::EmptyTopicName
    );
}

#[test]
fn partition_record_for_unknown_topic_is_refused() {
    let kind = refused(&one_topic(), partition(uuid(9), 0, &[1], &[1], 1));
    assert_eq!(kind, ReplayErrorKind::UnknownTopicId(uuid(9)));
}

#[test]
fn partition_records_breaking_invariants_are_refused() {
    let image = one_topic();
    let leader_out = partition(uuid(1), 2, &[1, 2], &[2], 1);
    assert_eq!(
        refused(&image, leader_out),
        ReplayErrorKind::PartitionInvariant(PartitionInvariant::LeaderNotInIsr(1))
    );
    let isr_out = partition(uuid(1), 2, &[1, 2], &[1, 3], 1);
    assert_eq!(
        refused(&image, isr_out),
        ReplayErrorKind::PartitionInvariant(PartitionInvariant::IsrNotReplica(3))
    );
    let mut elr_in_isr = PartitionRecord {
        partition_id: 2,
        topic_id: uuid(1),
        replicas: vec![1, 2, 3],
        isr: vec![1, 2],
        leader: 1,
        eligible_leader_replicas: Some(vec![2]),
        ..Default::default()
    };
    assert_eq!(
        refused(&image, MetadataRecord::Partition(elr_in_isr.clone())),
        ReplayErrorKind::PartitionInvariant(PartitionInvariant::ElrInIsr(2))
    );
    elr_in_isr.eligible_leader_replicas = Some(vec![4]);
    assert_eq!(
        refused(&image, MetadataRecord::Partition(elr_in_isr)),
        ReplayErrorKind::PartitionInvariant(PartitionInvariant::ElrNotReplica(4))
    );
    let dup = partition(uuid(1), 2, &[1, 1], &[1], 1);
    assert_eq!(
        refused(&image, dup),
        ReplayErrorKind::PartitionInvariant(PartitionInvariant::DuplicateReplica(1))
    );
    assert_eq!(
        refused(&image, partition(uuid(1), -1, &[1], &[1], 1)),
        ReplayErrorKind::InvalidPartitionId(-1)
    );
    assert_eq!(
        refused(&image, partition(uuid(1), 2, &[1], &[1], -3)),
        ReplayErrorKind::InvalidLeader(-3)
    );
}

#[test]
fn partition_change_with_defaults_only_bumps_the_partition_epoch() {
    let image = one_topic();
    let next = replay(
        &image,
        &[MetadataRecord::PartitionChange(change(uuid(1), 0))],
    );
    let before = image.topics.partition(&uuid(1), 0).unwrap();
    let after = next.topics.partition(&uuid(1), 0).unwrap();
    assert_eq!(after.partition_epoch, before.partition_epoch + 1);
    assert_eq!(after.leader_epoch, before.leader_epoch);
    assert_eq!(after.isr, before.isr);
    assert_eq!(after.leader, before.leader);
}

#[test]
fn partition_change_merges_as_kafka() {
    let image = one_topic();
    let shrink = PartitionChangeRecord {
        isr: Some(vec![1, 2]),
        ..change(uuid(1), 0)
    };
    let next = replay(&image, &[MetadataRecord::PartitionChange(shrink)]);
    let p = next.topics.partition(&uuid(1), 0).unwrap();
    assert_eq!(
        (p.isr.clone(), p.leader, p.leader_epoch, p.partition_epoch),
        (vec![1, 2], 1, 0, 1)
    );

    // Naming a leader bumps the leader epoch, even when it is the same leader.
    let same_leader = PartitionChangeRecord {
        leader: 1,
        ..change(uuid(1), 0)
    };
    let next = replay(&next, &[MetadataRecord::PartitionChange(same_leader)]);
    let p = next.topics.partition(&uuid(1), 0).unwrap();
    assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (1, 1, 2));

    let new_leader = PartitionChangeRecord {
        leader: 2,
        isr: Some(vec![2]),
        leader_recovery_state: 0,
        ..change(uuid(1), 0)
    };
    let next = replay(&next, &[MetadataRecord::PartitionChange(new_leader)]);
    let p = next.topics.partition(&uuid(1), 0).unwrap();
    assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (2, 2, 3));
    assert_eq!(p.isr, vec![2]);

    let no_leader = PartitionChangeRecord {
        leader: -1,
        ..change(uuid(1), 0)
    };
    let next = replay(&next, &[MetadataRecord::PartitionChange(no_leader)]);
    let p = next.topics.partition(&uuid(1), 0).unwrap();
    assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (-1, 3, 4));
}

#[test]
fn partition_change_replicas_keep_known_directories() {
    let dir = |n: u8| {
        let mut b = [7u8; 16];
        b[15] = n;
        Uuid(b)
    };
    let image = replay(
        &MetadataImage::empty(),
        &[
            topic("foo", uuid(1)),
            MetadataRecord::Partition(PartitionRecord {
                partition_id: 0,
                topic_id: uuid(1),
                replicas: vec![1, 2],
                isr: vec![1, 2],
                leader: 1,
                directories: vec![dir(1), dir(2)],
                ..Default::default()
            }),
        ],
    );
    let reassign = PartitionChangeRecord {
        replicas: Some(vec![2, 3]),
        isr: Some(vec![2]),
        leader: 2,
        ..change(uuid(1), 0)
    };
    let next = replay(&image, &[MetadataRecord::PartitionChange(reassign)]);
    let p = next.topics.partition(&uuid(1), 0).unwrap();
    assert_eq!(p.directories, vec![dir(2), DIRECTORY_UNASSIGNED]);
}

#[test]
fn partition_change_refusals() {
    let image = one_topic();
    assert_eq!(
        refused(&image, MetadataRecord::PartitionChange(change(uuid(9), 0))),
        ReplayErrorKind::UnknownTopicId(uuid(9))
    );
    assert_eq!(
        refused(&image, MetadataRecord::PartitionChange(change(uuid(1), 7))),
        ReplayErrorKind::UnknownPartition {
            topic_id: uuid(1),
            partition_id: 7
        }
    );
    let bad_state = PartitionChangeRecord {
        leader_recovery_state: 5,
        ..change(uuid(1), 0)
    };
    assert_eq!(
        refused(&image, MetadataRecord::PartitionChange(bad_state)),
        ReplayErrorKind::InvalidLeaderRecoveryState(5)
    );
    let leader_outside = PartitionChangeRecord {
        isr: Some(vec![2, 3]),
        ..change(uuid(1), 0)
    };
    assert_eq!(
        refused(&image, MetadataRecord::PartitionChange(leader_outside)),
        ReplayErrorKind::PartitionInvariant(PartitionInvariant::LeaderNotInIsr(1))
    );
}

#[test]
fn unclean_leader_may_sit_outside_the_isr_while_recovering() {
    let image = one_topic();
    let unclean = PartitionChangeRecord {
        isr: Some(vec![]),
        leader: 3,
        leader_recovery_state: 1,
        ..change(uuid(1), 0)
    };
    let next = replay(&image, &[MetadataRecord::PartitionChange(unclean)]);
    let p = next.topics.partition(&uuid(1), 0).unwrap();
    assert_eq!(p.leader_recovery_state, LeaderRecoveryState::Recovering);
    assert_eq!(p.leader, 3);
}

#[test]
fn remove_topic_removes_partitions_and_configs() {
    let image = replay(
        &one_topic(),
        &[
            config(2, "foo", "retention.ms", Some("1000")),
            config(2, "other", "retention.ms", Some("5")),
        ],
    );
    let mut delta = MetadataDelta::new(&image);
    delta
        .replay(&MetadataRecord::RemoveTopic(RemoveTopicRecord {
            topic_id: uuid(1),
            ..Default::default()
        }))
        .unwrap();
    let next = delta.apply();
    assert!(next.topics.get(&uuid(1)).is_none());
    assert!(next.topics.get_by_name("foo").is_none());
    assert!(next.configs.get(&ConfigResource::topic("foo")).is_none());
    assert_eq!(
        next.configs
            .value(&ConfigResource::topic("other"), "retention.ms"),
        Some("5")
    );
    assert!(delta.changes().deleted_topics.contains(&uuid(1)));
    let again = MetadataRecord::RemoveTopic(RemoveTopicRecord {
        topic_id: uuid(1),
        ..Default::default()
    });
    assert_eq!(
        refused(&next, again),
        ReplayErrorKind::UnknownTopicId(uuid(1))
    );
}

#[test]
fn topic_created_and_removed_in_one_delta_leaves_no_trace() {
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    delta.replay(&topic("foo", uuid(1))).unwrap();
    delta
        .replay(&MetadataRecord::RemoveTopic(RemoveTopicRecord {
            topic_id: uuid(1),
            ..Default::default()
        }))
        .unwrap();
    delta.replay(&topic("foo", uuid(2))).unwrap();
    let image = delta.apply();
    assert_eq!(image.topics.get_by_name("foo").unwrap().id, uuid(2));
    assert!(delta.changes().deleted_topics.is_empty());
    assert_eq!(delta.changes().changed_topics.len(), 1);
}

#[test]
fn clear_elr_for_one_topic_or_all() {
    let with_elr = |id: Uuid| {
        MetadataRecord::Partition(PartitionRecord {
            partition_id: 0,
            topic_id: id,
            replicas: vec![1, 2, 3],
            isr: vec![1],
            leader: 1,
            eligible_leader_replicas: Some(vec![2, 3]),
            last_known_elr: Some(vec![]),
            leader_epoch: 4,
            partition_epoch: 9,
            ..Default::default()
        })
    };
    let image = replay(
        &MetadataImage::empty(),
        &[
            topic("a", uuid(1)),
            with_elr(uuid(1)),
            topic("b", uuid(2)),
            with_elr(uuid(2)),
            partition(uuid(2), 1, &[1], &[1], 1),
        ],
    );
    let clear_a = MetadataRecord::ClearElr(ClearElrRecord {
        topic_name: "a".into(),
        ..Default::default()
    });
    let next = replay(&image, &[clear_a]);
    let a0 = next.topics.partition(&uuid(1), 0).unwrap();
    assert!(a0.elr.is_empty());
    assert_eq!((a0.leader_epoch, a0.partition_epoch), (4, 10));
    assert_eq!(next.topics.partition(&uuid(2), 0).unwrap().elr, vec![2, 3]);

    let clear_all = MetadataRecord::ClearElr(ClearElrRecord::default());
    let next = replay(&next, &[clear_all]);
    assert!(next.topics.partition(&uuid(2), 0).unwrap().elr.is_empty());
    // Partitions without an ELR are left alone (no epoch bump).
    assert_eq!(
        next.topics.partition(&uuid(2), 1).unwrap().partition_epoch,
        0
    );
    assert_eq!(
        next.topics.partition(&uuid(1), 0).unwrap().partition_epoch,
        10
    );

    let unknown = MetadataRecord::ClearElr(ClearElrRecord {
        topic_name: "zzz".into(),
        ..Default::default()
    });
    assert_eq!(
        refused(&next, unknown),
        ReplayErrorKind::UnknownTopicName("zzz".into())
    );
}

#[test]
fn broker_registration_lifecycle() {
    let image = replay(&MetadataImage::empty(), &[register_broker(1, 10, true)]);
    let b = image.cluster.broker(1).unwrap();
    assert!(b.fenced);
    assert_eq!(b.epoch, 10);
    assert_eq!(b.listeners["PLAINTEXT"].port, 9093);
    assert_eq!(b.rack.as_deref(), Some("rack1"));

    let image = replay(&image, &[unfence(1, 10)]);
    assert!(image.cluster.broker(1).unwrap().is_active());
    assert_eq!(
        refused(&image, fence(1, 9)),
        ReplayErrorKind::BrokerEpochMismatch {
            broker_id: 1,
            current: 10,
            record: 9
        }
    );
    assert_eq!(
        refused(&image, fence(2, 10)),
        ReplayErrorKind::UnknownBroker(2)
    );

    let shutdown = MetadataRecord::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
        broker_id: 1,
        broker_epoch: 10,
        in_controlled_shutdown: 1,
        ..Default::default()
    });
    let image = replay(&image, &[shutdown]);
    let b = image.cluster.broker(1).unwrap();
    assert!(b.in_controlled_shutdown && !b.fenced);

    let change_fence = MetadataRecord::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
        broker_id: 1,
        broker_epoch: 10,
        fenced: 1,
        ..Default::default()
    });
    let image = replay(&image, &[change_fence]);
    assert!(image.cluster.broker(1).unwrap().fenced);
    let bad = MetadataRecord::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
        broker_id: 1,
        broker_epoch: 10,
        fenced: 2,
        ..Default::default()
    });
    assert_eq!(
        refused(&image, bad),
        ReplayErrorKind::InvalidFencingChange(2)
    );

    // A new registration replaces the old one whole: new epoch, flags as it says.
    let image = replay(&image, &[register_broker(1, 20, false)]);
    let b = image.cluster.broker(1).unwrap();
    assert_eq!(b.epoch, 20);
    assert!(!b.fenced && !b.in_controlled_shutdown);

    let unregister = |epoch| {
        MetadataRecord::UnregisterBroker(UnregisterBrokerRecord {
            broker_id: 1,
            broker_epoch: epoch,
            ..Default::default()
        })
    };
    assert!(matches!(
        refused(&image, unregister(10)),
        ReplayErrorKind::BrokerEpochMismatch { .. }
    ));
    let image = replay(&image, &[unregister(20)]);
    assert!(image.cluster.broker(1).is_none());
}

#[test]
fn controller_registration() {
    let record = MetadataRecord::RegisterController(RegisterControllerRecord {
        controller_id: 3000,
        incarnation_id: uuid(5),
        end_points: vec![register_controller_record::ControllerEndpoint {
            name: "CONTROLLER".into(),
            host: "localhost".into(),
            port: 9093,
            security_protocol: 0,
            ..Default::default()
        }],
        ..Default::default()
    });
    let image = replay(&MetadataImage::empty(), &[record]);
    let c = image.cluster.controller(3000).unwrap();
    assert_eq!(c.incarnation_id, uuid(5));
    assert_eq!(c.listeners["CONTROLLER"].port, 9093);
}

#[test]
fn config_records_set_and_delete_keys() {
    let image = replay(
        &MetadataImage::empty(),
        &[
            config(4, "", "log.retention.ms", Some("10")),
            config(4, "1", "log.retention.ms", Some("20")),
            config(4, "1", "log.retention.ms", None),
            config(4, "2", "nothing", None),
        ],
    );
    let cluster = ConfigResource::new(ConfigResourceType::Broker, "");
    assert_eq!(
        image.configs.value(&cluster, "log.retention.ms"),
        Some("10")
    );
    // A resource left without keys is gone, not empty.
    let broker1 = ConfigResource::new(ConfigResourceType::Broker, "1");
    assert!(image.configs.get(&broker1).is_none());
    assert_eq!(image.configs.iter().count(), 1);
    assert_eq!(
        refused(&image, config(3, "x", "k", Some("v"))),
        ReplayErrorKind::UnknownConfigResourceType(3)
    );
}

#[test]
fn client_quota_records_set_and_remove() {
    let quota = |user: Option<&str>, key: &str, value: f64, remove: bool| {
        MetadataRecord::ClientQuota(ClientQuotaRecord {
            entity: vec![client_quota_record::EntityData {
                entity_type: "user".into(),
                entity_name: user.map(str::to_string),
                ..Default::default()
            }],
            key: key.into(),
            value,
            remove,
            ..Default::default()
        })
    };
    let image = replay(
        &MetadataImage::empty(),
        &[
            quota(Some("alice"), "producer_byte_rate", 1024.0, false),
            quota(None, "consumer_byte_rate", 2048.0, false),
            quota(None, "consumer_byte_rate", 0.0, true),
        ],
    );
    let alice = ClientQuotaEntity([("user".to_string(), Some("alice".to_string()))].into());
    assert_eq!(
        image.client_quotas.get(&alice).unwrap()["producer_byte_rate"],
        1024.0
    );
    let default = ClientQuotaEntity([("user".to_string(), None)].into());
    assert!(image.client_quotas.get(&default).is_none());
}

#[test]
fn scram_records_upsert_and_remove_without_leaking_keys() {
    let cred = |iterations| {
        MetadataRecord::UserScramCredential(UserScramCredentialRecord {
            name: "alice".into(),
            mechanism: 1,
            salt: Bytes::from_static(b"salt"),
            stored_key: Bytes::from_static(b"stored"),
            server_key: Bytes::from_static(b"server"),
            iterations,
            ..Default::default()
        })
    };
    let image = replay(&MetadataImage::empty(), &[cred(4096), cred(8192)]);
    let c = image
        .scram
        .get("alice", ScramMechanism::ScramSha256)
        .unwrap();
    assert_eq!(c.iterations, 8192);
    assert_eq!(&c.stored_key[..], b"stored");
    assert!(
        !format!("{c:?}").contains("stored\""),
        "Debug hides the keys"
    );

    let remove = |mechanism| {
        MetadataRecord::RemoveUserScramCredential(RemoveUserScramCredentialRecord {
            name: "alice".into(),
            mechanism,
            ..Default::default()
        })
    };
    assert_eq!(
        refused(&image, remove(2)),
        ReplayErrorKind::UnknownScramCredential {
            user: "alice".into(),
            mechanism: ScramMechanism::ScramSha512
        }
    );
    assert_eq!(
        refused(&image, remove(9)),
        ReplayErrorKind::UnknownScramMechanism(9)
    );
    let next = replay(&image, &[remove(1)]);
    assert!(next
        .scram
        .get("alice", ScramMechanism::ScramSha256)
        .is_none());

    // An error about a credential record carries it without salt or keys.
    let mut bad = match cred(4096) {
        MetadataRecord::UserScramCredential(r) => r,
        _ => unreachable!(),
    };
    bad.mechanism = 0;
    let err = MetadataDelta::new(&image)
        .replay(&MetadataRecord::UserScramCredential(bad))
        .unwrap_err();
    match *err.record {
        MetadataRecord::UserScramCredential(r) => {
            assert!(r.salt.is_empty() && r.stored_key.is_empty() && r.server_key.is_empty())
        }
        other => panic!("unexpected record {other:?}"),
    }
}

#[test]
fn acl_records_add_and_remove_by_id() {
    let acl = MetadataRecord::AccessControlEntry(AccessControlEntryRecord {
        id: uuid(7),
        resource_type: 2,
        resource_name: "foo".into(),
        pattern_type: 3,
        principal: "User:alice".into(),
        host: "*".into(),
        operation: 3,
        permission_type: 3,
        ..Default::default()
    });
    let image = replay(&MetadataImage::empty(), &[acl]);
    assert_eq!(image.acls.get(&uuid(7)).unwrap().principal, "User:alice");
    let remove = |id| {
        MetadataRecord::RemoveAccessControlEntry(RemoveAccessControlEntryRecord {
            id,
            ..Default::default()
        })
    };
    assert_eq!(
        refused(&image, remove(uuid(8))),
        ReplayErrorKind::UnknownAcl(uuid(8))
    );
    assert!(replay(&image, &[remove(uuid(7))]).acls.is_empty());
}

#[test]
fn feature_levels() {
    let image = replay(
        &MetadataImage::empty(),
        &[
            feature("metadata.version", 25),
            feature("eligible.leader.replicas.version", 1),
            feature("kraft.version", 1),
            feature("kraft.version", 0),
        ],
    );
    assert_eq!(image.features.metadata_version, Some(25));
    assert_eq!(image.features.level("eligible.leader.replicas.version"), 1);
    assert_eq!(image.features.level("kraft.version"), 0);
    assert!(!image.features.finalized.contains_key("kraft.version"));
    assert_eq!(
        refused(&image, feature("metadata.version", 0)),
        ReplayErrorKind::InvalidMetadataVersion(0)
    );
}

#[test]
fn producer_id_blocks_only_move_forward() {
    let block = |next| {
        MetadataRecord::ProducerIds(ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: 10,
            next_producer_id: next,
            ..Default::default()
        })
    };
    assert_eq!(MetadataImage::empty().producer_ids.next_producer_id, -1);
    let image = replay(&MetadataImage::empty(), &[block(1000), block(2000)]);
    assert_eq!(image.producer_ids.next_producer_id, 2000);
    assert_eq!(
        refused(&image, block(2000)),
        ReplayErrorKind::ProducerIdNotIncreasing {
            current: 2000,
            record: 2000
        }
    );
}

#[test]
fn no_op_and_markers_change_nothing_and_unsupported_records_are_refused() {
    let image = one_topic();
    let next = replay(
        &image,
        &[
            MetadataRecord::NoOp(NoOpRecord::default()),
            MetadataRecord::BeginTransaction(BeginTransactionRecord::default()),
            MetadataRecord::EndTransaction(EndTransactionRecord::default()),
        ],
    );
    assert_eq!(next, image);
    let abort = MetadataRecord::AbortTransaction(AbortTransactionRecord::default());
    assert!(matches!(
        refused(&image, abort),
        ReplayErrorKind::Unsupported(_)
    ));
}

#[test]
fn a_change_to_one_partition_shares_everything_else() {
    // Two topics of 200 partitions each: enough for the partition maps to be multi-node trees.
    let mut records = vec![topic("a", uuid(1)), topic("b", uuid(2))];
    for id in [uuid(1), uuid(2)] {
        for p in 0..200 {
            records.push(partition(id, p, &[1, 2, 3], &[1, 2, 3], 1));
        }
    }
    let image = replay(&MetadataImage::empty(), &records);
    let shrink = PartitionChangeRecord {
        isr: Some(vec![1, 2]),
        ..change(uuid(1), 17)
    };
    let next = replay(&image, &[MetadataRecord::PartitionChange(shrink)]);

    // The other topic is the very same allocation.
    assert!(Arc::ptr_eq(
        image.topics.get(&uuid(2)).unwrap(),
        next.topics.get(&uuid(2)).unwrap()
    ));
    // The changed topic is new, but every other partition in it is shared.
    let (old_a, new_a) = (
        image.topics.get(&uuid(1)).unwrap(),
        next.topics.get(&uuid(1)).unwrap(),
    );
    assert!(!Arc::ptr_eq(old_a, new_a));
    for p in 0..200 {
        let shared = Arc::ptr_eq(&old_a.partitions[&p], &new_a.partitions[&p]);
        assert_eq!(shared, p != 17, "partition {p}");
    }
    // The base image is untouched.
    assert_eq!(
        image.topics.partition(&uuid(1), 17).unwrap().isr,
        vec![1, 2, 3]
    );
    assert_eq!(next.topics.partition(&uuid(1), 17).unwrap().isr, vec![1, 2]);
    // Untouched sub-images are shared too: brokers, configs.
    let with_broker = replay(&next, &[register_broker(1, 5, false)]);
    assert!(Arc::ptr_eq(
        with_broker.topics.get(&uuid(1)).unwrap(),
        next.topics.get(&uuid(1)).unwrap()
    ));
}

#[test]
fn delta_records_what_changed_and_stays_usable_after_apply() {
    let image = replay(&one_topic(), &[register_broker(1, 10, false)]);
    let mut delta = MetadataDelta::new(&image);
    delta
        .replay(&MetadataRecord::PartitionChange(change(uuid(1), 1)))
        .unwrap();
    delta.replay(&fence(1, 10)).unwrap();
    delta
        .replay(&config(2, "foo", "retention.ms", Some("1")))
        .unwrap();
    delta.replay(&feature("metadata.version", 25)).unwrap();
    let first = delta.apply();
    delta.replay(&register_broker(2, 11, true)).unwrap();
    let second = delta.apply();

    let changes = delta.changes();
    assert_eq!(changes.changed_topics, [uuid(1)].into());
    assert!(changes.deleted_topics.is_empty());
    assert_eq!(changes.changed_brokers, [1, 2].into());
    assert_eq!(
        changes.changed_configs,
        [ConfigResource::topic("foo")].into()
    );
    assert!(changes.features_changed);
    assert!(!changes.producer_ids_changed);
    assert!(changes.changed_acls.is_empty() && changes.changed_scram.is_empty());
    assert_eq!(*delta.image(), image, "the base image is kept as it was");
    assert!(first.cluster.broker(2).is_none());
    assert!(second.cluster.broker(2).is_some());
    assert!(second.cluster.broker(1).unwrap().fenced);
}
