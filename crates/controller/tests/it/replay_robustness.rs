//! Replay never panics on a bad record: random records of every type and version (Kafka's
//! schemas sampled at random, with topic and partition ids often pointed at real ones so the
//! partition checks are reached) are each either applied or refused with a typed error that
//! leaves the delta unchanged, and the image keeps its invariants throughout.

use kraftd_controller::testing::records::*;
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_protocol::testing::SampleRng;
use kraftd_protocol::{MetadataRecord, MetadataRecordType};
use proptest::prelude::*;

fn base() -> MetadataImage {
    MetadataImage::empty()
        .replay_all(&[
            register_broker(0, 1, false),
            register_broker(1, 2, false),
            topic("foo", uuid(1)),
            partition(uuid(1), 0, &[0, 1, 2], &[0, 1], 0),
            partition(uuid(1), 1, &[1, 2, 3], &[2, 3], 2),
        ])
        .unwrap()
}

/// Points a sampled record at the base image's topic and partitions now and then, and keeps
/// replica ids small so they sometimes form valid registrations.
fn aim(record: &mut MetadataRecord, rng: &mut SampleRng) {
    // Small, duplicate-free replica lists: often valid, sometimes not.
    let small = |rng: &mut SampleRng| {
        let mut v: Vec<i32> = (0..rng.below(4)).map(|_| rng.below(4) as i32).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    match record {
        MetadataRecord::Partition(r) if rng.bool() => {
            r.topic_id = uuid(1);
            r.partition_id = rng.below(3) as i32;
            r.replicas = vec![0, 1, 2, 3];
            r.directories.clear();
            r.isr = small(rng);
            r.eligible_leader_replicas = None;
            r.leader = r.isr.first().copied().unwrap_or(rng.below(3) as i32 - 1);
            r.leader_recovery_state = rng.below(3) as i8;
        }
        MetadataRecord::PartitionChange(r) if rng.bool() => {
            r.topic_id = uuid(1);
            r.partition_id = rng.below(3) as i32;
            r.replicas = None;
            r.directories = None;
            r.adding_replicas = None;
            r.removing_replicas = None;
            r.isr = rng.bool().then(|| small(rng));
            r.eligible_leader_replicas = rng.chance(3).then(|| small(rng));
            r.leader = match r.isr.as_ref().and_then(|isr| isr.first()) {
                Some(first) if rng.bool() => *first,
                _ => rng.below(6) as i32 - 2,
            };
            r.leader_recovery_state = rng.below(4) as i8 - 1;
        }
        MetadataRecord::FenceBroker(r) if rng.bool() => {
            r.id = rng.below(2) as i32;
            r.epoch = rng.below(3) as i64;
        }
        MetadataRecord::RemoveTopic(r) if rng.chance(4) => r.topic_id = uuid(1),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn bad_records_are_refused_without_change(seed in any::<u64>(), count in 1usize..60) {
        let mut rng = SampleRng::new(seed);
        let mut delta = MetadataDelta::new(&base());
        for _ in 0..count {
            let kinds = MetadataRecordType::ALL;
            // Partition records a third of the time: they carry the most checks.
            let kind = match rng.below(6) {
                0 => MetadataRecordType::Partition,
                1 => MetadataRecordType::PartitionChange,
                _ => kinds[rng.below(kinds.len() as u64) as usize],
            };
            let versions = kind.valid_versions();
            let span = (versions.max - versions.min + 1) as u64;
            let version = versions.min + rng.below(span) as i16;
            let mut record = MetadataRecord::sample(kind, &mut rng, version);
            aim(&mut record, &mut rng);
            let before = delta.apply();
            let changes = delta.changes().clone();
            match delta.replay(&record) {
                Ok(()) => {}
                Err(err) => {
                    prop_assert_eq!(err.record.key(), kind);
                    prop_assert!(!err.to_string().is_empty());
                    prop_assert_eq!(&delta.apply(), &before);
                    prop_assert_eq!(delta.changes(), &changes);
                }
            }
            let image = delta.apply();
            prop_assert!(image.check_invariants().is_ok(), "{:?}", image.check_invariants());
        }
    }
}
