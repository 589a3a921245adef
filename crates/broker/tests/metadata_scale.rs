//! A metadata delta of many creations and deletions (issue 19), through the broker's
//! MetadataLoader: applied exactly (the image holds exactly the partitions the records say,
//! the leader indexes match a scan), and what the publishers are told to look at is the
//! delta, not the cluster: the changed and deleted topics and partitions it lists are those
//! the batch named, however many partitions the cluster holds. Publishers walk those lists,
//! so their size is the work a publication does (the time is `benches/metadata_publish.rs`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kraftd_broker::metadata::{MetadataCache, MetadataLoader};
use kraftd_controller::testing::records::{feature, partition, topic};
use kraftd_controller::{DeltaChanges, MetadataDelta, MetadataImage, MetadataPublisher};
use kraftd_protocol::metadata::{RegisterBrokerRecord, RemoveTopicRecord};
use kraftd_protocol::metadata_record::encode_metadata_record;
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::{MetadataRecord, Uuid};
use kraftd_raft::CommittedBatch;

const PARTITIONS: i32 = 100;

fn topic_id(n: usize) -> Uuid {
    let mut b = [9u8; 16];
    b[8..].copy_from_slice(&(n as u64).to_be_bytes());
    Uuid(b)
}

fn topic_records(n: usize, out: &mut Vec<MetadataRecord>) {
    out.push(topic(&format!("t{n:04}"), topic_id(n)));
    for p in 0..PARTITIONS {
        let first = (n as i32 + p) % 5;
        let replicas = [first, (first + 1) % 5, (first + 2) % 5];
        // Every tenth partition starts without a leader.
        let leader = if p % 10 == 9 { -1 } else { replicas[0] };
        let isr: &[i32] = if leader < 0 { &[] } else { &replicas };
        out.push(partition(topic_id(n), p, &replicas, isr, leader));
    }
}

fn batch(base: i64, records: &[MetadataRecord]) -> CommittedBatch {
    let mut builder = RecordBatchBuilder::new(base).partition_leader_epoch(1);
    for r in records {
        let value: Bytes = encode_metadata_record(r, r.key().valid_versions().max).unwrap();
        builder.append(0, None, Some(value), Vec::new()).unwrap();
    }
    let last_offset = builder.next_offset() - 1;
    CommittedBatch {
        base_offset: base,
        last_offset,
        epoch: 1,
        is_control: false,
        bytes: builder.build().unwrap(),
    }
}

/// Keeps what each publication told its publishers to look at.
#[derive(Debug, Clone, Default)]
struct Changes(Arc<Mutex<Vec<(bool, DeltaChanges)>>>);

impl MetadataPublisher for Changes {
    fn name(&self) -> &str {
        "Changes"
    }

    fn on_metadata_update(&mut self, delta: &MetadataDelta, _image: &MetadataImage) {
        let full = delta.image().is_empty();
        self.0.lock().unwrap().push((full, delta.changes().clone()));
    }
}

#[test]
fn a_delta_of_1000_creations_and_1000_deletions_is_applied_exactly_and_publishes_only_itself() {
    let changes = Changes::default();
    let cache = MetadataCache::new(1, "scale");
    let mut loader =
        MetadataLoader::new(1, vec![Box::new(cache.clone()), Box::new(changes.clone())]);

    // A cluster of 30 topics × 100 partitions, loaded and published.
    let mut records = vec![feature("metadata.version", 25)];
    for b in 0..5 {
        records.push(MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            broker_id: b,
            broker_epoch: 10 + i64::from(b),
            ..Default::default()
        }));
    }
    for n in 0..30 {
        topic_records(n, &mut records);
    }
    let first = batch(0, &records);
    loader.handle_high_watermark(first.last_offset + 1, 0);
    loader.handle_commit(&first, 0);
    assert!(loader.caught_up());
    changes.0.lock().unwrap().clear();

    // One batch: 10 new topics (1,000 partitions) and 10 of the old ones removed.
    let mut delta = Vec::new();
    for n in 30..40 {
        topic_records(n, &mut delta);
    }
    for n in 0..10 {
        delta.push(MetadataRecord::RemoveTopic(RemoveTopicRecord {
            topic_id: topic_id(n),
            ..Default::default()
        }));
    }
    let second = batch(first.last_offset + 1, &delta);
    loader.handle_commit(&second, 0);
    assert!(loader.last_load_error().is_none());
    assert_eq!(loader.last_applied_offset(), second.last_offset);

    // Applied exactly.
    let image = cache.image();
    let names: BTreeSet<String> = image.topics.names().map(|(n, _)| n.clone()).collect();
    let expected: BTreeSet<String> = (10..40).map(|n| format!("t{n:04}")).collect();
    assert_eq!(names, expected);
    let mut expected_image = MetadataImage::empty().replay_all(&records).unwrap();
    expected_image = expected_image.replay_all(&delta).unwrap();
    assert_eq!(*image, expected_image);
    for n in 30..40 {
        let t = image.topics.get(&topic_id(n)).expect("created");
        assert_eq!(t.partitions.len(), PARTITIONS as usize);
    }
    image
        .check_invariants()
        .expect("partitions and leader indexes");
    assert_eq!(image.topics.leaderless().len(), 30 * 10);

    // The publishers were told about the delta and nothing else.
    let published = changes.0.lock().unwrap().clone();
    assert_eq!(published.len(), 1, "one batch, one publication");
    let (full, c) = &published[0];
    assert!(!full, "an incremental delta, not a reload");
    let created: BTreeSet<Uuid> = (30..40).map(topic_id).collect();
    let removed: BTreeSet<Uuid> = (0..10).map(topic_id).collect();
    assert_eq!(c.changed_topics, created);
    assert_eq!(c.deleted_topics, removed);
    let changed_partitions: usize = c.changed_partitions.values().map(BTreeSet::len).sum();
    assert_eq!(changed_partitions, 1000);
    assert!(c.changed_brokers.is_empty() && c.changed_configs.is_empty());
}
