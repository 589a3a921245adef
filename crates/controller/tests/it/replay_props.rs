//! Property tests of the replay path. Random valid record sequences (built against the image
//! so far, as a controller would) must give the same image whether replayed through one delta,
//! through a delta per record (apply after each), or through deltas cut at random points; and
//! encoding each record with Kafka's framing, decoding it and replaying it must change
//! nothing. Every resulting image keeps the partition invariants, and the records it writes
//! for a snapshot rebuild it.

use bytes::Bytes;
use kraftd_controller::testing::records::*;
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_protocol::metadata::*;
use kraftd_protocol::metadata_record::{decode_metadata_record, encode_metadata_record};
use kraftd_protocol::{MetadataRecord, Uuid};
use proptest::prelude::*;

const BROKERS: i32 = 5;

/// Turns random numbers into records valid against the image replayed so far.
struct Generator {
    image: MetadataImage,
    counter: u64,
    records: Vec<MetadataRecord>,
}

fn subset(of: &[i32], bits: u32) -> Vec<i32> {
    of.iter()
        .enumerate()
        .filter(|(i, _)| bits >> i & 1 == 1)
        .map(|(_, r)| *r)
        .collect()
}

impl Generator {
    fn fresh_uuid(&mut self) -> Uuid {
        self.counter += 1;
        let mut b = [0u8; 16];
        b[0] = 0x5A;
        b[8..].copy_from_slice(&self.counter.to_be_bytes());
        Uuid(b)
    }

    /// Replays one record as its own delta (the "many deltas" path) and keeps it.
    fn push(&mut self, record: MetadataRecord) {
        let mut delta = MetadataDelta::new(&self.image);
        delta
            .replay(&record)
            .unwrap_or_else(|e| panic!("generated an invalid record: {e}: {record:?}"));
        self.image = delta.apply();
        self.records.push(record);
    }

    fn broker_ids(&self) -> Vec<(i32, i64)> {
        self.image
            .cluster
            .brokers()
            .map(|b| (b.id, b.epoch))
            .collect()
    }

    fn topic_ids(&self) -> Vec<(Uuid, String)> {
        self.image
            .topics
            .iter()
            .map(|t| (t.id, t.name.clone()))
            .collect()
    }

    fn replicas(&self, a: u32, b: u32) -> Vec<i32> {
        let count = 1 + (b % 3) as usize;
        let start = (a % BROKERS as u32) as i32;
        (0..count as i32).map(|i| (start + i) % BROKERS).collect()
    }

    fn step(&mut self, op: u8, a: u32, b: u32, c: u32) {
        match op % 16 {
            0 => {
                self.counter += 1;
                self.push(register_broker(
                    (a % BROKERS as u32) as i32,
                    self.counter as i64,
                    b % 2 == 0,
                ))
            }
            1..=4 => {
                let brokers = self.broker_ids();
                if brokers.is_empty() {
                    return;
                }
                let (id, epoch) = brokers[a as usize % brokers.len()];
                let record = match op % 16 {
                    1 => fence(id, epoch),
                    2 => unfence(id, epoch),
                    3 => MetadataRecord::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
                        broker_id: id,
                        broker_epoch: epoch,
                        fenced: (b % 3) as i8 - 1,
                        in_controlled_shutdown: (c % 2) as i8,
                        ..Default::default()
                    }),
                    _ => MetadataRecord::UnregisterBroker(UnregisterBrokerRecord {
                        broker_id: id,
                        broker_epoch: epoch,
                        ..Default::default()
                    }),
                };
                self.push(record);
            }
            5 => {
                let name = format!("t{}", a % 6);
                if self.image.topics.get_by_name(&name).is_some() {
                    return;
                }
                let id = self.fresh_uuid();
                self.push(topic(&name, id));
                for p in 0..(1 + b % 3) as i32 {
                    let replicas = self.replicas(a.wrapping_add(p as u32), b >> 2);
                    let isr = subset(&replicas, c >> (p * 4));
                    let rest: Vec<i32> = replicas
                        .iter()
                        .copied()
                        .filter(|r| !isr.contains(r))
                        .collect();
                    let elr = subset(&rest, c >> 16);
                    let leader = isr.first().copied().unwrap_or(-1);
                    self.push(MetadataRecord::Partition(PartitionRecord {
                        partition_id: p,
                        topic_id: id,
                        replicas,
                        isr,
                        leader,
                        eligible_leader_replicas: Some(elr),
                        leader_epoch: (c % 7) as i32,
                        partition_epoch: (c % 11) as i32,
                        ..Default::default()
                    }));
                }
            }
            6 | 7 => self.partition_change(a, b, c),
            8 => {
                let topics = self.topic_ids();
                if let Some((id, _)) = topics.get(a as usize % topics.len().max(1)) {
                    self.push(MetadataRecord::RemoveTopic(RemoveTopicRecord {
                        topic_id: *id,
                        ..Default::default()
                    }));
                }
            }
            9 => {
                let topics = self.topic_ids();
                let (kind, resource) = match (b % 3, topics.get(a as usize % topics.len().max(1))) {
                    (0, Some((_, name))) => (2, name.clone()),
                    (1, _) => (4, String::new()),
                    _ => (4, (a % 3).to_string()),
                };
                let key = ["retention.ms", "min.insync.replicas", "cleanup.policy"][c as usize % 3];
                let value = (c % 4 != 0).then(|| (c % 100).to_string());
                self.push(config(kind, &resource, key, value.as_deref()));
            }
            10 => {
                let user = ["alice", "bob"].get(a as usize % 3).map(|u| u.to_string());
                self.push(MetadataRecord::ClientQuota(ClientQuotaRecord {
                    entity: vec![client_quota_record::EntityData {
                        entity_type: "user".into(),
                        entity_name: user,
                        ..Default::default()
                    }],
                    key: ["producer_byte_rate", "consumer_byte_rate"][b as usize % 2].into(),
                    value: f64::from(c % 10_000),
                    remove: c % 3 == 0,
                    ..Default::default()
                }));
            }
            11 => {
                let user = ["alice", "bob", "carol"][a as usize % 3];
                let mechanism = 1 + (b % 2) as i8;
                let exists = self
                    .image
                    .scram
                    .iter()
                    .any(|(k, _)| k.user == user && k.mechanism.code() == mechanism);
                let record = if exists && c % 2 == 0 {
                    MetadataRecord::RemoveUserScramCredential(RemoveUserScramCredentialRecord {
                        name: user.into(),
                        mechanism,
                        ..Default::default()
                    })
                } else {
                    MetadataRecord::UserScramCredential(UserScramCredentialRecord {
                        name: user.into(),
                        mechanism,
                        salt: Bytes::from(c.to_be_bytes().to_vec()),
                        stored_key: Bytes::from(a.to_be_bytes().to_vec()),
                        server_key: Bytes::from(b.to_be_bytes().to_vec()),
                        iterations: 4096 + (c % 4096) as i32,
                        ..Default::default()
                    })
                };
                self.push(record);
            }
            12 => {
                let ids: Vec<Uuid> = self.image.acls.iter().map(|(id, _)| *id).collect();
                let record = if !ids.is_empty() && b % 2 == 0 {
                    MetadataRecord::RemoveAccessControlEntry(RemoveAccessControlEntryRecord {
                        id: ids[a as usize % ids.len()],
                        ..Default::default()
                    })
                } else {
                    MetadataRecord::AccessControlEntry(AccessControlEntryRecord {
                        id: self.fresh_uuid(),
                        resource_type: 2,
                        resource_name: format!("t{}", a % 6),
                        pattern_type: 3,
                        principal: format!("User:u{}", c % 3),
                        host: "*".into(),
                        operation: (2 + c % 10) as i8,
                        permission_type: 3,
                        ..Default::default()
                    })
                };
                self.push(record);
            }
            13 => {
                let record = match b % 3 {
                    0 => feature("metadata.version", 20 + (a % 7) as i16),
                    1 => feature("eligible.leader.replicas.version", (a % 2) as i16),
                    _ => feature("kraft.version", (a % 2) as i16),
                };
                self.push(record);
            }
            14 => {
                let next = self.image.producer_ids.next_producer_id.max(0) + 1000;
                self.push(MetadataRecord::ProducerIds(ProducerIdsRecord {
                    broker_id: (a % 5) as i32,
                    broker_epoch: 1,
                    next_producer_id: next,
                    ..Default::default()
                }));
            }
            _ => {
                let topics = self.topic_ids();
                let record = match b % 4 {
                    0 => MetadataRecord::NoOp(NoOpRecord::default()),
                    1 => MetadataRecord::RegisterController(RegisterControllerRecord {
                        controller_id: 3000 + (a % 3) as i32,
                        incarnation_id: self.fresh_uuid(),
                        ..Default::default()
                    }),
                    2 => MetadataRecord::ClearElr(ClearElrRecord::default()),
                    _ => match topics.get(a as usize % topics.len().max(1)) {
                        Some((_, name)) => MetadataRecord::ClearElr(ClearElrRecord {
                            topic_name: name.clone(),
                            ..Default::default()
                        }),
                        None => MetadataRecord::NoOp(NoOpRecord::default()),
                    },
                };
                self.push(record);
            }
        }
    }

    /// A change a controller could write: new ISR and ELR disjoint and within the replicas,
    /// a leader from the new ISR (or none, or unchanged when still valid).
    fn partition_change(&mut self, a: u32, b: u32, c: u32) {
        let topics: Vec<_> = self.image.topics.iter().cloned().collect();
        let Some(topic) = topics.get(a as usize % topics.len().max(1)) else {
            return;
        };
        let parts: Vec<_> = topic
            .partitions
            .iter()
            .map(|(p, r)| (*p, r.clone()))
            .collect();
        let Some((pid, cur)) = parts.get(b as usize % parts.len().max(1)).cloned() else {
            return;
        };
        let mut record = change(topic.id, pid);
        let mut replicas = cur.replicas.clone();
        if c % 5 == 0 {
            if let Some(extra) = (0..BROKERS).find(|r| !replicas.contains(r)) {
                replicas.push(extra);
                record.replicas = Some(replicas.clone());
            }
        }
        let isr = if c % 3 == 0 {
            cur.isr.clone()
        } else {
            let isr = subset(&replicas, c >> 4);
            record.isr = Some(isr.clone());
            isr
        };
        if record.isr.is_some() || c % 7 == 0 {
            let rest: Vec<i32> = replicas
                .iter()
                .copied()
                .filter(|r| !isr.contains(r))
                .collect();
            record.eligible_leader_replicas = Some(subset(&rest, c >> 12));
            record.last_known_elr = Some(subset(&replicas, c >> 20));
        }
        let current_ok = cur.leader == -1 || isr.contains(&cur.leader);
        let recovering = cur.leader_recovery_state.code() == 1;
        record.leader = match (c >> 24) % 3 {
            0 if current_ok && !recovering => -2,
            1 => -1,
            _ => isr
                .get((c >> 26) as usize % isr.len().max(1))
                .copied()
                .unwrap_or(-1),
        };
        if recovering && record.leader == -2 {
            record.leader = -1;
        }
        if recovering || c % 4 == 0 {
            record.leader_recovery_state = 0;
        }
        self.push(MetadataRecord::PartitionChange(record));
    }
}

fn generate(ops: &[(u8, u32, u32, u32)]) -> (Vec<MetadataRecord>, MetadataImage) {
    let mut g = Generator {
        image: MetadataImage::empty(),
        counter: 0,
        records: Vec::new(),
    };
    for &(op, a, b, c) in ops {
        g.step(op, a, b, c);
    }
    (g.records, g.image)
}

fn ops() -> impl Strategy<Value = Vec<(u8, u32, u32, u32)>> {
    prop::collection::vec(
        (any::<u8>(), any::<u32>(), any::<u32>(), any::<u32>()),
        1..120,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn one_delta_equals_many_deltas(ops in ops(), cuts in prop::collection::vec(any::<usize>(), 0..8)) {
        let (records, stepwise) = generate(&ops);
        stepwise.check_invariants().unwrap();

        let single = MetadataImage::empty().replay_all(&records).unwrap();
        prop_assert_eq!(&single, &stepwise);

        // Deltas cut at random points.
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (records.len() + 1)).collect();
        cuts.push(records.len());
        cuts.sort_unstable();
        let mut image = MetadataImage::empty();
        let mut start = 0;
        for end in cuts {
            image = image.replay_all(&records[start..end]).unwrap();
            start = end;
        }
        prop_assert_eq!(&image, &stepwise);
    }

    #[test]
    fn kafka_framing_round_trip_replays_the_same(ops in ops()) {
        let (records, stepwise) = generate(&ops);
        let mut decoded = Vec::with_capacity(records.len());
        for record in &records {
            let version = record.key().valid_versions().max;
            let bytes = encode_metadata_record(record, version).unwrap();
            let (back, back_version) = decode_metadata_record(bytes).unwrap();
            prop_assert_eq!(back_version, version);
            prop_assert_eq!(&back, record);
            decoded.push(back);
        }
        let image = MetadataImage::empty().replay_all(&decoded).unwrap();
        prop_assert_eq!(&image, &stepwise);
    }

    #[test]
    fn snapshot_records_rebuild_the_image(ops in ops()) {
        let (_, image) = generate(&ops);
        let snapshot = image.records();
        // Through Kafka's framing too, as a snapshot file would hold them.
        let mut decoded = Vec::with_capacity(snapshot.len());
        for record in &snapshot {
            let version = record.key().valid_versions().max;
            let bytes = encode_metadata_record(record, version).unwrap();
            decoded.push(decode_metadata_record(bytes).unwrap().0);
        }
        let loaded = MetadataImage::empty().replay_all(&decoded).unwrap();
        prop_assert_eq!(&loaded, &image);
        // Equal images write identical snapshots.
        prop_assert_eq!(loaded.records(), snapshot);
    }
}

/// The generator reaches every record kind it knows, with partition changes that really move
/// leaders and ELRs; otherwise the properties above would prove little.
#[test]
fn generator_covers_the_record_kinds() {
    let mut ops = Vec::new();
    let mut x: u32 = 0x9E37_79B9;
    for i in 0..2000u32 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        // Brokers and topics first, then everything.
        let op = if i < 10 {
            0
        } else if i < 20 {
            5
        } else {
            (x % 16) as u8
        };
        ops.push((op, x.rotate_left(7), x.rotate_left(13), x.rotate_left(21)));
    }
    let (records, image) = generate(&ops);
    let kinds: std::collections::BTreeSet<_> = records.iter().map(|r| r.key()).collect();
    assert!(kinds.len() >= 18, "only {kinds:?}");
    let leader_moves = records
        .iter()
        .filter(|r| matches!(r, MetadataRecord::PartitionChange(c) if c.leader >= 0))
        .count();
    assert!(leader_moves > 20, "{leader_moves} leader moves");
    assert_eq!(MetadataImage::empty().replay_all(&records).unwrap(), image);
}
