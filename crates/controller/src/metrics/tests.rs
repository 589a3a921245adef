//! The incremental counts against a full recount after every delta of random record
//! sequences, the election counters, and the Prometheus names.

use kraftd_protocol::metadata::{
    ClearElrRecord, PartitionChangeRecord, RemoveTopicRecord, UnregisterBrokerRecord,
};
use kraftd_protocol::MetadataRecord;
use proptest::prelude::*;

use super::*;
use crate::testing::records::{change, fence, partition, register_broker, topic, unfence, uuid};

/// One random record over a small universe (4 brokers, 3 topic ids, 3 partitions each), so
/// records often hit what earlier ones created; replay refuses the inconsistent ones.
fn replicas() -> impl Strategy<Value = Vec<i32>> {
    proptest::sample::subsequence(vec![0, 1, 2, 3], 1..4).prop_shuffle()
}

fn record() -> impl Strategy<Value = MetadataRecord> {
    let broker = 0..4i32;
    let epoch = 0..2i64;
    let topic_id = 1..4u8;
    let pid = 0..3i32;
    prop_oneof![
        (broker.clone(), epoch.clone(), any::<bool>())
            .prop_map(|(b, e, f)| register_broker(b, e, f)),
        (broker.clone(), epoch.clone()).prop_map(|(b, e)| fence(b, e)),
        (broker.clone(), epoch.clone()).prop_map(|(b, e)| unfence(b, e)),
        (broker.clone(), epoch.clone()).prop_map(|(b, e)| {
            MetadataRecord::UnregisterBroker(UnregisterBrokerRecord {
                broker_id: b,
                broker_epoch: e,
                ..Default::default()
            })
        }),
        topic_id
            .clone()
            .prop_map(|t| topic(&format!("t{t}"), uuid(t))),
        topic_id.clone().prop_map(|t| {
            MetadataRecord::RemoveTopic(RemoveTopicRecord {
                topic_id: uuid(t),
                ..Default::default()
            })
        }),
        (
            topic_id.clone(),
            pid.clone(),
            replicas(),
            0..4usize,
            any::<bool>()
        )
            .prop_map(|(t, p, replicas, isr_len, led)| {
                let isr: Vec<i32> = replicas[..isr_len.clamp(1, replicas.len())].to_vec();
                let leader = if led { isr[0] } else { -1 };
                partition(uuid(t), p, &replicas, &isr, leader)
            }),
        (
            topic_id.clone(),
            pid,
            -2..4i32,
            proptest::option::of(replicas()),
            proptest::option::of(replicas()),
            -1..2i8,
        )
            .prop_map(|(t, p, leader, isr, elr, recovery)| {
                // The ISR holds the new leader and the ELR what the ISR does not, so that
                // many of these pass replay's checks.
                let isr = isr.map(|mut isr| {
                    if leader >= 0 && !isr.contains(&leader) {
                        isr.insert(0, leader);
                    }
                    isr
                });
                let elr = elr.map(|elr| {
                    elr.into_iter()
                        .filter(|r| isr.as_ref().is_none_or(|isr| !isr.contains(r)))
                        .collect()
                });
                MetadataRecord::PartitionChange(PartitionChangeRecord {
                    leader,
                    isr,
                    eligible_leader_replicas: elr,
                    leader_recovery_state: recovery,
                    ..change(uuid(t), p)
                })
            }),
        Just(MetadataRecord::ClearElr(ClearElrRecord::default())),
    ]
}

/// After every delta, the counts kept from the deltas equal a recount of the image: random
/// batches of random records after a setup (brokers, topics, partitions) they act on.
#[test]
fn incremental_counts_equal_a_recount() {
    use proptest::test_runner::{Config, TestRunner};
    let setup: Vec<MetadataRecord> = (0..4)
        .map(|b| register_broker(b, 0, b == 3))
        .chain((1..4u8).flat_map(|t| {
            std::iter::once(topic(&format!("t{t}"), uuid(t)))
                .chain((0..3).map(move |p| partition(uuid(t), p, &[p, p + 1], &[p, p + 1], p)))
        }))
        .collect();
    let (replayed, refused) = (std::cell::Cell::new(0u64), std::cell::Cell::new(0u64));
    let batches = proptest::collection::vec(proptest::collection::vec(record(), 1..10), 1..30);
    let mut runner = TestRunner::new(Config::with_cases(300));
    let result = runner.run(&batches, |batches| {
        let (delta, mut image) = replay(&MetadataImage::empty(), &setup);
        let mut counts = MetadataCounts::default();
        counts.apply(&delta, &image);
        prop_assert_eq!(counts, MetadataCounts::recount(&image));
        for batch in &batches {
            let mut delta = MetadataDelta::new(&image);
            for r in batch {
                // A refused record leaves the delta as it was.
                match delta.replay(r) {
                    Ok(()) => replayed.set(replayed.get() + 1),
                    Err(_) => refused.set(refused.get() + 1),
                }
            }
            image = delta.apply();
            counts.apply(&delta, &image);
            prop_assert_eq!(counts, MetadataCounts::recount(&image));
        }
        Ok(())
    });
    result.unwrap();
    // Not a vacuous run: a good share of the random records changed the image.
    let (replayed, refused) = (replayed.get(), refused.get());
    assert!(
        replayed * 5 > replayed + refused,
        "{replayed} replayed, {refused} refused"
    );
}

fn replay(image: &MetadataImage, records: &[MetadataRecord]) -> (MetadataDelta, MetadataImage) {
    let mut delta = MetadataDelta::new(image);
    for r in records {
        delta.replay(r).expect("replays");
    }
    let next = delta.apply();
    (delta, next)
}

#[test]
fn counts_follow_brokers_topics_and_leaders() {
    let t = uuid(1);
    let (delta, image) = replay(
        &MetadataImage::empty(),
        &[
            register_broker(0, 0, false),
            register_broker(1, 0, true),
            topic("a", t),
            partition(t, 0, &[0, 1], &[0, 1], 0),
            partition(t, 1, &[1, 0], &[0], 0),
        ],
    );
    let mut counts = MetadataCounts::default();
    counts.apply(&delta, &image);
    let expected = MetadataCounts {
        global_topics: 1,
        global_partitions: 2,
        offline_partitions: 0,
        preferred_replica_imbalance: 1,
        fenced_brokers: 1,
        active_brokers: 1,
    };
    assert_eq!(counts, expected);
    // Broker 0 is fenced and partition 0 loses its leader; then the topic goes.
    let (delta, image) = replay(
        &image,
        &[
            fence(0, 0),
            MetadataRecord::PartitionChange(PartitionChangeRecord {
                leader: -1,
                ..change(t, 0)
            }),
        ],
    );
    counts.apply(&delta, &image);
    assert_eq!(
        counts,
        MetadataCounts {
            offline_partitions: 1,
            preferred_replica_imbalance: 2,
            fenced_brokers: 2,
            active_brokers: 0,
            ..expected
        }
    );
    let (delta, image) = replay(
        &image,
        &[MetadataRecord::RemoveTopic(RemoveTopicRecord {
            topic_id: t,
            ..Default::default()
        })],
    );
    counts.apply(&delta, &image);
    assert_eq!(
        counts,
        MetadataCounts {
            fenced_brokers: 2,
            ..MetadataCounts::default()
        }
    );
}

#[test]
fn publisher_counts_elections_from_the_elr_and_unclean_ones() {
    let t = uuid(1);
    let metrics = ControllerMetrics::new();
    let mut publisher = ControllerMetadataMetricsPublisher::new(metrics.clone());
    let (delta, image) = replay(
        &MetadataImage::empty(),
        &[
            topic("a", t),
            partition(t, 0, &[0, 1, 2], &[0], 0),
            MetadataRecord::PartitionChange(PartitionChangeRecord {
                isr: Some(vec![0]),
                eligible_leader_replicas: Some(vec![1]),
                ..change(t, 0)
            }),
        ],
    );
    publisher.on_metadata_update(&delta, &image);
    // Leader 1 from the ELR, then 2 uncleanly.
    let (delta, image) = replay(
        &image,
        &[
            MetadataRecord::PartitionChange(PartitionChangeRecord {
                leader: 1,
                isr: Some(vec![1]),
                eligible_leader_replicas: Some(vec![]),
                ..change(t, 0)
            }),
            MetadataRecord::PartitionChange(PartitionChangeRecord {
                leader: 2,
                isr: Some(vec![2]),
                leader_recovery_state: 1,
                ..change(t, 0)
            }),
        ],
    );
    publisher.on_metadata_update(&delta, &image);
    let v = metrics.values(0);
    assert_eq!((v.elections_from_elr, v.unclean_leader_elections), (1, 1));
    assert_eq!(v.counts.global_partitions, 1);
    assert_eq!(v.counts.preferred_replica_imbalance, 1);
}

#[test]
fn a_snapshot_load_recounts() {
    let t = uuid(1);
    let (_, image) = replay(
        &MetadataImage::empty(),
        &[topic("a", t), partition(t, 0, &[0], &[0], -1)],
    );
    let mut counts = MetadataCounts {
        global_topics: 99,
        ..MetadataCounts::default()
    };
    counts.apply(&MetadataDelta::new(&MetadataImage::empty()), &image);
    assert_eq!(counts, MetadataCounts::recount(&image));
    assert_eq!(counts.offline_partitions, 1);
}

#[test]
fn prometheus_names_are_kafkas() {
    let metrics = ControllerMetrics::new();
    metrics.set_offsets(true, 10, 12, 1_000);
    metrics.record_event_queue_time(2.0, 1_000);
    let mut out = String::new();
    metrics.write_prometheus(3, 1_500, &mut out);
    for line in [
        "kafka_controller_KafkaController_ActiveControllerCount{node=\"3\"} 1\n",
        "kafka_controller_KafkaController_LastCommittedRecordOffset{node=\"3\"} 10\n",
        "kafka_controller_KafkaController_LastAppliedRecordOffset{node=\"3\"} 12\n",
        "kafka_controller_KafkaController_LastAppliedRecordLagMs{node=\"3\"} 500\n",
        "kafka_controller_KafkaController_GlobalPartitionCount{node=\"3\"} 0\n",
        "kafka_controller_ControllerEventManager_EventQueueTimeMs{node=\"3\",quantile=\"0.99\"} 2\n",
        "kafka_controller_ControllerEventManager_EventQueueTimeMs_count{node=\"3\"} 1\n",
        "kafka_controller_ControllerEventManager_EventQueueProcessingTimeMs_count{node=\"3\"} 0\n",
        "kafka_controller_ControllerStats_UncleanLeaderElectionsPerSec_total{node=\"3\"} 0\n",
        "kafka_controller_ControllerStats_ElectionFromEligibleLeaderReplicasPerSec_total{node=\"3\"} 0\n",
    ] {
        assert!(out.contains(line), "{line} missing from\n{out}");
    }
}
