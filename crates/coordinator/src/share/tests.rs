//! The share shard against Kafka 4.4's rules (`ShareCoordinatorShardTest`'s cases), and the
//! replay check: a shard loaded from the log it wrote answers every read as the live one.

use std::collections::BTreeMap;
use std::sync::Arc;

use kraftd_protocol::messages::{
    delete_share_group_state_request as del, initialize_share_group_state_request as init,
    read_share_group_state_request as read, read_share_group_state_summary_request as summary,
    write_share_group_state_request as write, DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest, ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest, WriteShareGroupStateRequest,
};
use kraftd_protocol::{ErrorCode, ShareCoordinatorRecordKey, Uuid};

use super::*;
use crate::context::TopicMetadata;
use crate::shard::CoordinatorShard;
use crate::testing::{check_replay, ctx, line, query, Replica, Rng};
use crate::writer::LogEntry;

const GROUP: &str = "g";

fn tid(n: u8) -> Uuid {
    Uuid([n; 16])
}

/// Topics `tid(1)`..`tid(n)` with 4 partitions each, and `share.version` at `share_level`.
#[derive(Debug, Clone)]
struct Cluster {
    topics: BTreeMap<String, Uuid>,
    share_level: i16,
}

impl Cluster {
    fn new(n: u8, share_level: i16) -> Arc<Self> {
        Arc::new(Cluster {
            topics: (1..=n).map(|i| (format!("t{i}"), tid(i))).collect(),
            share_level,
        })
    }
}

impl TopicMetadata for Cluster {
    fn topic_by_name(&self, name: &str) -> Option<(Uuid, i32)> {
        self.topics.get(name).map(|id| (*id, 4))
    }
    fn topic_by_id(&self, id: Uuid) -> Option<(String, i32)> {
        self.topics
            .iter()
            .find(|(_, t)| **t == id)
            .map(|(n, _)| (n.clone(), 4))
    }
    fn topic_names(&self) -> Vec<String> {
        self.topics.keys().cloned().collect()
    }
    fn feature_level(&self, name: &str) -> i16 {
        if name == SHARE_VERSION_FEATURE {
            self.share_level
        } else {
            0
        }
    }
}

fn replica(config: ShareCoordinatorConfig) -> Replica<ShareCoordinatorShard> {
    Replica::new(0, 5, config, Cluster::new(2, 1), 1_000)
}

fn initialize(topic: Uuid, partition: i32, state_epoch: i32, start: i64) -> ShareShardRequest {
    ShareShardRequest::Initialize(InitializeShareGroupStateRequest {
        group_id: GROUP.into(),
        topics: vec![init::InitializeStateData {
            topic_id: topic,
            partitions: vec![init::PartitionData {
                partition,
                state_epoch,
                start_offset: start,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn batch(first: i64, last: i64, state: i8, count: i16) -> write::StateBatch {
    write::StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
        ..Default::default()
    }
}

fn write_req(
    topic: Uuid,
    partition: i32,
    leader_epoch: i32,
    state_epoch: i32,
    start: i64,
    batches: Vec<write::StateBatch>,
) -> ShareShardRequest {
    ShareShardRequest::Write(WriteShareGroupStateRequest {
        group_id: GROUP.into(),
        topics: vec![write::WriteStateData {
            topic_id: topic,
            partitions: vec![write::PartitionData {
                partition,
                state_epoch,
                leader_epoch,
                start_offset: start,
                delivery_complete_count: 0,
                state_batches: batches,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn read_req(topic: Uuid, partition: i32, leader_epoch: i32) -> ShareShardRequest {
    ShareShardRequest::Read(ReadShareGroupStateRequest {
        group_id: GROUP.into(),
        topics: vec![read::ReadStateData {
            topic_id: topic,
            partitions: vec![read::PartitionData {
                partition,
                leader_epoch,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn summary_req(topic: Uuid, partition: i32) -> ShareShardRequest {
    ShareShardRequest::ReadSummary(ReadShareGroupStateSummaryRequest {
        group_id: GROUP.into(),
        topics: vec![summary::ReadStateSummaryData {
            topic_id: topic,
            partitions: vec![summary::PartitionData {
                partition,
                leader_epoch: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn delete_req(topic: Uuid, partition: i32) -> ShareShardRequest {
    ShareShardRequest::Delete(DeleteShareGroupStateRequest {
        group_id: GROUP.into(),
        topics: vec![del::DeleteStateData {
            topic_id: topic,
            partitions: vec![del::PartitionData {
                partition,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// The one partition's error code of any answer.
fn code(response: &ShareShardResponse) -> ErrorCode {
    let c = match response {
        ShareShardResponse::Initialize(r) => r.results[0].partitions[0].error_code,
        ShareShardResponse::Read(r) => r.results[0].partitions[0].error_code,
        ShareShardResponse::Write(r) => r.results[0].partitions[0].error_code,
        ShareShardResponse::Delete(r) => r.results[0].partitions[0].error_code,
        ShareShardResponse::ReadSummary(r) => r.results[0].partitions[0].error_code,
    };
    ErrorCode::from_code(c).expect("a known code")
}

fn ask(r: &mut Replica<ShareCoordinatorShard>, request: ShareShardRequest) -> ShareShardResponse {
    r.ask(&ctx(0), request)
}

/// A state batch as (first, last, state, count).
type Batch = (i64, i64, i8, i16);

/// (start offset, state epoch, batches as (first, last, state, count)) of a read.
fn read_back(
    r: &mut Replica<ShareCoordinatorShard>,
    topic: Uuid,
    partition: i32,
    leader_epoch: i32,
) -> (i64, i32, Vec<Batch>) {
    let ShareShardResponse::Read(resp) = ask(r, read_req(topic, partition, leader_epoch)) else {
        panic!("a read answers a read")
    };
    let p = &resp.results[0].partitions[0];
    assert_eq!(p.error_code, 0, "{:?}", p.error_message);
    (
        p.start_offset,
        p.state_epoch,
        p.state_batches
            .iter()
            .map(|b| {
                (
                    b.first_offset,
                    b.last_offset,
                    b.delivery_state,
                    b.delivery_count,
                )
            })
            .collect(),
    )
}

/// The record types of the log, in order: 'S' snapshot, 'U' update, 'T' tombstone.
fn log_kinds(r: &Replica<ShareCoordinatorShard>) -> String {
    r.log
        .entries()
        .iter()
        .flat_map(|e| match e {
            LogEntry::Records { records, .. } => records.clone(),
            LogEntry::Marker { .. } => Vec::new(),
        })
        .map(|(k, v)| {
            let rec = ShareCoordinatorRecord::decode(k, v).expect("decodes");
            match (&rec.key, &rec.value) {
                (_, None) => 'T',
                (ShareCoordinatorRecordKey::ShareSnapshot(_), _) => 'S',
                (ShareCoordinatorRecordKey::ShareUpdate(_), _) => 'U',
            }
        })
        .collect()
}

#[test]
fn uninitialized_share_partitions_refuse_reads_and_writes() {
    let mut r = replica(ShareCoordinatorConfig::default());
    assert_eq!(
        code(&ask(&mut r, read_req(tid(1), 0, 1))),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        code(&ask(&mut r, write_req(tid(1), 0, 1, 0, 0, vec![]))),
        ErrorCode::InvalidRequest
    );
    // The summary of an uninitialized share partition is Kafka's defaults, not an error.
    let ShareShardResponse::ReadSummary(s) = ask(&mut r, summary_req(tid(1), 0)) else {
        panic!()
    };
    let p = &s.results[0].partitions[0];
    assert_eq!(
        (
            p.error_code,
            p.start_offset,
            p.delivery_complete_count,
            p.state_epoch
        ),
        (0, -1, -1, 0)
    );
    assert_eq!(log_kinds(&r), "");
}

#[test]
fn invalid_requests_and_unknown_topics_get_kafkas_codes() {
    let mut r = replica(ShareCoordinatorConfig::default());
    assert_eq!(
        code(&ask(&mut r, initialize(tid(1), -1, 0, 0))),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        code(&ask(&mut r, initialize(tid(1), 0, -1, 0))),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        code(&ask(&mut r, initialize(tid(9), 0, 0, 0))),
        ErrorCode::UnknownTopicOrPartition
    );
    assert_eq!(
        code(&ask(&mut r, initialize(tid(1), 4, 0, 0))),
        ErrorCode::UnknownTopicOrPartition
    );
    assert_eq!(
        code(&ask(&mut r, initialize(tid(1), 0, 0, 0))),
        ErrorCode::None
    );
    assert_eq!(
        code(&ask(&mut r, read_req(tid(1), 0, -1))),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        code(&ask(&mut r, write_req(tid(1), 0, -1, 0, 0, vec![]))),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        code(&ask(&mut r, write_req(tid(1), 0, 0, -1, 0, vec![]))),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        code(&ask(&mut r, delete_req(tid(1), -2))),
        ErrorCode::InvalidRequest
    );
}

#[test]
fn writes_merge_into_the_state_and_epochs_fence() {
    let mut r = replica(ShareCoordinatorConfig::default());
    assert_eq!(
        code(&ask(&mut r, initialize(tid(1), 0, 1, 0))),
        ErrorCode::None
    );
    // The first read records the leader epoch (an update), the second does not.
    assert_eq!(read_back(&mut r, tid(1), 0, 3), (0, 1, vec![]));
    assert_eq!(log_kinds(&r), "SU");
    assert_eq!(read_back(&mut r, tid(1), 0, 3), (0, 1, vec![]));
    assert_eq!(log_kinds(&r), "SU");

    let w = write_req(tid(1), 0, 3, 1, 0, vec![batch(0, 9, 0, 1)]);
    assert_eq!(code(&ask(&mut r, w)), ErrorCode::None);
    let w = write_req(tid(1), 0, 3, 1, 5, vec![batch(5, 6, 2, 2)]);
    assert_eq!(code(&ask(&mut r, w)), ErrorCode::None);
    assert_eq!(
        read_back(&mut r, tid(1), 0, 3),
        (5, 1, vec![(5, 6, 2, 2), (7, 9, 0, 1)])
    );
    // The start offset never moves back.
    let w = write_req(tid(1), 0, 3, 1, 2, vec![]);
    assert_eq!(code(&ask(&mut r, w)), ErrorCode::None);
    assert_eq!(read_back(&mut r, tid(1), 0, 3).0, 5);
    // Kafka's `write-total`: the three writes and the read that recorded its leader epoch.
    let writes = |r: &mut Replica<ShareCoordinatorShard>| {
        crate::shard::CoordinatorShard::take_counters(&mut r.shard)
    };
    assert_eq!(writes(&mut r), vec![("write_total", 4)]);

    // A newer leader reads: the older one is fenced, for writes and reads.
    assert_eq!(read_back(&mut r, tid(1), 0, 4).0, 5);
    assert_eq!(
        code(&ask(&mut r, write_req(tid(1), 0, 3, 1, 5, vec![]))),
        ErrorCode::FencedLeaderEpoch
    );
    // The new leader's epoch recorded, and the refused write counted as Kafka counts it.
    assert_eq!(writes(&mut r), vec![("write_total", 2)]);
    assert_eq!(
        code(&ask(&mut r, read_req(tid(1), 0, 3))),
        ErrorCode::FencedLeaderEpoch
    );
    // A re-initialization at a higher state epoch fences writes at the old one.
    assert_eq!(
        code(&ask(&mut r, initialize(tid(1), 0, 2, 7))),
        ErrorCode::None
    );
    assert_eq!(
        code(&ask(&mut r, write_req(tid(1), 0, 4, 1, 7, vec![]))),
        ErrorCode::FencedStateEpoch
    );
    assert_eq!(
        code(&ask(&mut r, initialize(tid(1), 0, 1, 0))),
        ErrorCode::FencedStateEpoch
    );
    assert_eq!(read_back(&mut r, tid(1), 0, 4), (7, 2, vec![]));
    let key = SharePartitionKey::new(GROUP, tid(1), 0);
    assert_eq!(r.shard.state(&key).unwrap().snapshot_epoch, 1);
    assert_eq!(r.shard.state(&key).unwrap().delivery_complete_count, 0);
}

#[test]
fn a_snapshot_follows_every_configured_number_of_updates() {
    let mut r = replica(ShareCoordinatorConfig {
        snapshot_update_records_per_snapshot: 2,
        ..Default::default()
    });
    assert_eq!(
        code(&ask(&mut r, initialize(tid(1), 1, 0, 0))),
        ErrorCode::None
    );
    for i in 0..5 {
        let w = write_req(tid(1), 1, 0, 0, 0, vec![batch(i, i, 2, 1)]);
        assert_eq!(code(&ask(&mut r, w)), ErrorCode::None);
    }
    assert_eq!(log_kinds(&r), "SUUSUU");
    // The snapshot holds the merged state: the batches of every write so far.
    assert_eq!(read_back(&mut r, tid(1), 1, 0).2, vec![(0, 4, 2, 1)]);
    let key = SharePartitionKey::new(GROUP, tid(1), 1);
    assert_eq!(r.shard.state(&key).unwrap().snapshot_epoch, 1);
    check_replay(&mut r, "snapshots", observe);
}

#[test]
fn delete_writes_a_tombstone_and_deleted_topics_lose_their_state() {
    let mut r = replica(ShareCoordinatorConfig::default());
    assert_eq!(
        code(&ask(&mut r, initialize(tid(1), 0, 0, 0))),
        ErrorCode::None
    );
    assert_eq!(
        code(&ask(&mut r, initialize(tid(2), 0, 0, 0))),
        ErrorCode::None
    );
    assert_eq!(code(&ask(&mut r, delete_req(tid(1), 0))), ErrorCode::None);
    // Deleting what is not there succeeds and writes nothing.
    assert_eq!(code(&ask(&mut r, delete_req(tid(1), 0))), ErrorCode::None);
    assert_eq!(log_kinds(&r), "SST");
    assert_eq!(
        code(&ask(&mut r, read_req(tid(1), 0, 0))),
        ErrorCode::InvalidRequest
    );
    // Topic t2 is deleted from the metadata.
    r.topics = Cluster::new(1, 1);
    r.call(|s, _| s.on_metadata_update(Cluster::new(1, 1)));
    assert_eq!(log_kinds(&r), "SSTT");
    assert!(r.shard.keys().is_empty());
    check_replay(&mut r, "deletes", observe);
}

#[test]
fn cold_share_partitions_get_a_fresh_snapshot_while_share_groups_are_on() {
    let config = ShareCoordinatorConfig {
        cold_partition_snapshot_interval_ms: 1_000,
        ..Default::default()
    };
    let mut r = replica(config.clone());
    assert_eq!(
        code(&ask(&mut r, initialize(tid(1), 0, 0, 0))),
        ErrorCode::None
    );
    r.advance(1_000);
    assert_eq!(log_kinds(&r), "SS");
    let key = SharePartitionKey::new(GROUP, tid(1), 0);
    let s = r.shard.state(&key).unwrap();
    assert_eq!(
        (s.snapshot_epoch, s.create_timestamp, s.write_timestamp),
        (1, 1_000, 2_000)
    );
    // Every share partition is cold-snapshotted already: nothing more is written.
    r.advance(5_000);
    assert_eq!(log_kinds(&r), "SS");

    // With share.version 0 the task does nothing.
    let mut off = Replica::new(0, 5, config, Cluster::new(2, 0), 1_000);
    assert_eq!(
        code(&ask(&mut off, initialize(tid(1), 0, 0, 0))),
        ErrorCode::None
    );
    off.advance(3_000);
    assert_eq!(log_kinds(&off), "S");
}

#[test]
fn records_are_kafkas_bytes() {
    let key = SharePartitionKey::new("g", tid(1), 3);
    let (k, v) = ShareCoordinatorRecord::tombstone(&key).encode().unwrap();
    assert!(v.is_none());
    // The int16 record type first: 0 for ShareSnapshot (a tombstone is of that type).
    assert_eq!(&k[..2], &[0, 0]);
    let offset = ShareGroupOffset {
        start_offset: 5,
        state_batches: vec![PersisterStateBatch {
            first_offset: 5,
            last_offset: 7,
            delivery_state: 2,
            delivery_count: 1,
        }],
        ..Default::default()
    };
    let (k, v) = ShareCoordinatorRecord::update(&key, &offset)
        .encode()
        .unwrap();
    assert_eq!(&k[..2], &[0, 1]);
    // Value version 0.
    assert_eq!(&v.as_ref().unwrap()[..2], &[0, 0]);
    let back = ShareCoordinatorRecord::decode(k, v).unwrap();
    assert_eq!(back.share_partition_key(), key);
}

#[test]
fn partition_for_is_kafkas_mapping_of_the_coordinator_key() {
    let key = SharePartitionKey::new(
        "group",
        Uuid::from_base64("AAAAAAAAAAAAAAAAAAAAAQ").unwrap(),
        0,
    );
    assert_eq!(key.coordinator_key(), "group:AAAAAAAAAAAAAAAAAAAAAQ:0");
    assert_eq!(
        SharePartitionKey::parse(&key.coordinator_key()),
        Some(key.clone())
    );
    let colons = SharePartitionKey::parse("a:b:AAAAAAAAAAAAAAAAAAAAAQ:7").unwrap();
    assert_eq!((colons.group_id.as_str(), colons.partition), ("a:b", 7));
    for bad in [
        "",
        "g:AAAAAAAAAAAAAAAAAAAAAQ",
        " :AAAAAAAAAAAAAAAAAAAAAQ:0",
        "g:x:0",
        "g:AAAAAAAAAAAAAAAAAAAAAQ:p",
    ] {
        assert_eq!(SharePartitionKey::parse(bad), None, "{bad}");
    }
    assert_eq!(
        partition_for(&key, 50),
        crate::partitioner::partition_for("group:AAAAAAAAAAAAAAAAAAAAAQ:0", 50)
    );
}

/// What callers can read of the share partitions of topics t1, t2 (partitions 0..4).
fn observe(shard: &mut ShareCoordinatorShard, now: i64) -> Vec<String> {
    let mut lines = Vec::new();
    for t in [tid(1), tid(2)] {
        for p in 0..4 {
            let key = SharePartitionKey::new(GROUP, t, p);
            lines.push(line("state", &shard.state(&key)));
            lines.push(line("epochs", &shard.epochs(&key)));
            lines.push(line(
                "summary",
                &query(shard, now, &ctx(0), summary_req(t, p)),
            ));
        }
    }
    lines
}

#[test]
fn a_shard_loaded_from_its_log_answers_as_the_live_one() {
    for seed in 0..40u64 {
        let mut rng = Rng::new(seed);
        let mut r = replica(ShareCoordinatorConfig {
            snapshot_update_records_per_snapshot: rng.below(4) as i32,
            cold_partition_snapshot_interval_ms: 5_000,
            ..Default::default()
        });
        let mut leader_epochs = [0i32; 8];
        let mut state_epochs = [0i32; 8];
        for step in 0..60 {
            let slot = rng.below(8);
            let (topic, p) = (tid(1 + (slot / 4) as u8), (slot % 4) as i32);
            let request = match rng.below(10) {
                0 => {
                    state_epochs[slot] += rng.below(2) as i32;
                    initialize(topic, p, state_epochs[slot], rng.below(20) as i64 - 1)
                }
                1 | 2 => {
                    leader_epochs[slot] += rng.below(2) as i32;
                    read_req(topic, p, leader_epochs[slot])
                }
                3 => delete_req(topic, p),
                4 => {
                    r.advance(rng.below(3_000) as i64);
                    continue;
                }
                _ => {
                    let first = rng.below(30) as i64;
                    let batches = (0..rng.below(3))
                        .map(|i| {
                            let f = first + 3 * i as i64;
                            batch(
                                f,
                                f + rng.below(4) as i64,
                                rng.below(5) as i8,
                                rng.below(4) as i16,
                            )
                        })
                        .collect();
                    write_req(
                        topic,
                        p,
                        leader_epochs[slot] - rng.below(2) as i32,
                        state_epochs[slot],
                        rng.below(25) as i64,
                        batches,
                    )
                }
            };
            let _ = ask(&mut r, request);
            check_replay(&mut r, &format!("seed {seed} step {step}"), |s, now| {
                observe(s, now)
            });
        }
    }
}

#[test]
fn the_runtime_contract_encodes_what_the_shard_wrote() {
    let config = Arc::new(ShareCoordinatorConfig::default());
    let mut shard =
        <ShareCoordinatorShard as CoordinatorShard>::new(0, 0, config, Cluster::new(1, 1));
    CoordinatorShard::on_loaded(&mut shard, 0);
    CoordinatorShard::handle(&mut shard, 0, &ctx(0), 7, initialize(tid(1), 0, 0, 3));
    let out = CoordinatorShard::take_output(&mut shard);
    assert_eq!(out.batches.len(), 1);
    assert_eq!(out.batches[0].records.len(), 1);
    assert_eq!(out.replies.len(), 1);
    assert_eq!(out.replies[0].0, 7);
    let (k, v) = out.batches[0].records[0].clone();
    let mut fresh = ShareCoordinatorShard::new(0, Arc::new(ShareCoordinatorConfig::default()));
    CoordinatorShard::replay(&mut fresh, 0, None, k, v).unwrap();
    let key = SharePartitionKey::new(GROUP, tid(1), 0);
    assert_eq!(fresh.state(&key).unwrap().start_offset, 3);
    assert_eq!(fresh.state(&key).unwrap().delivery_complete_count, 0);
}

#[test]
fn a_shard_loaded_before_its_first_metadata_deletes_nothing() {
    let mut r = replica(ShareCoordinatorConfig::default());
    assert_eq!(
        code(&ask(&mut r, initialize(tid(1), 0, 0, 0))),
        ErrorCode::None
    );
    // Loaded as the runtime loads a shard before any metadata reached it.
    r.topics = Arc::new(crate::context::NoTopics);
    let mut shard = r.reload();
    let key = SharePartitionKey::new(GROUP, tid(1), 0);
    assert!(shard.take_output().records.is_empty());
    shard.on_metadata_update(Cluster::new(2, 1));
    assert!(shard.take_output().records.is_empty());
    assert!(shard.state(&key).is_some());
    // Once seen, a topic that goes is deleted.
    shard.on_metadata_update(Cluster::new(0, 1));
    let out = shard.take_output();
    assert_eq!(out.records, vec![ShareCoordinatorRecord::tombstone(&key)]);
    assert!(shard.state(&key).is_none());
}

#[test]
fn records_before_every_share_partitions_last_snapshot_are_pruned() {
    let mut r = replica(ShareCoordinatorConfig {
        snapshot_update_records_per_snapshot: 1,
        state_topic_prune_interval_ms: 1_000,
        ..Default::default()
    });
    let k0 = initialize(tid(1), 0, 0, 0);
    let k1 = initialize(tid(1), 1, 0, 0);
    assert_eq!(code(&ask(&mut r, k0)), ErrorCode::None);
    assert_eq!(code(&ask(&mut r, k1)), ErrorCode::None);
    // Share partition 0: an update, then a snapshot (offsets 2 and 3).
    for _ in 0..2 {
        let w = write_req(tid(1), 0, 0, 0, 0, vec![batch(0, 1, 2, 1)]);
        assert_eq!(code(&ask(&mut r, w)), ErrorCode::None);
    }
    assert_eq!(log_kinds(&r), "SSUS");
    // Share partition 1's snapshot at 1 is the oldest still needed.
    assert_eq!(r.shard.last_redundant_offset(), Some(1));
    r.advance(1_000);
    assert_eq!(r.work, vec![ShareWork::DeleteRecordsBefore { offset: 1 }]);
    for _ in 0..2 {
        let w = write_req(tid(1), 1, 0, 0, 0, vec![batch(0, 1, 2, 1)]);
        assert_eq!(code(&ask(&mut r, w)), ErrorCode::None);
    }
    assert_eq!(r.shard.last_redundant_offset(), Some(3));
    check_replay(&mut r, "prune", observe);
    r.advance(1_000);
    r.advance(1_000);
    // The same offset is not asked twice.
    assert_eq!(
        r.work,
        vec![
            ShareWork::DeleteRecordsBefore { offset: 1 },
            ShareWork::DeleteRecordsBefore { offset: 3 }
        ]
    );
    // A deleted share partition holds nothing back.
    assert_eq!(code(&ask(&mut r, delete_req(tid(1), 1))), ErrorCode::None);
    let w = write_req(tid(1), 0, 0, 0, 0, vec![]);
    assert_eq!(code(&ask(&mut r, w)), ErrorCode::None);
    let w = write_req(tid(1), 0, 0, 0, 0, vec![]);
    assert_eq!(code(&ask(&mut r, w)), ErrorCode::None);
    assert_eq!(log_kinds(&r), "SSUSUSTUS");
    assert_eq!(r.shard.last_redundant_offset(), Some(8));
    check_replay(&mut r, "prune after delete", observe);
}
