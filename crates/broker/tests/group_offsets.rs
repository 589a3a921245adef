//! Committed offsets through the shard's public API: commits by groups outside any
//! generation, fetches of named and of all partitions, deletes, DeleteGroups, the record
//! round trip into a fresh shard, and expiry by `offsets.retention.minutes` and by a v2–4
//! commit's own retention.

use std::sync::Arc;

use kraftd_coordinator::context::{NoTopics, RequestContext};
use kraftd_coordinator::group::{
    CoordinatorRecord, GroupCoordinatorConfig, GroupCoordinatorShard, ShardOutput, ShardRequest,
    ShardResponse,
};
use kraftd_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kraftd_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kraftd_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kraftd_protocol::messages::{OffsetCommitRequest, OffsetDeleteRequest};
use kraftd_protocol::{ErrorCode, GroupCoordinatorRecordValue};

const MINUTE: i64 = 60_000;

struct Shard {
    shard: GroupCoordinatorShard,
    next: u64,
    /// Every record written, in order, as bytes (what the log would hold).
    log: Vec<(bytes::Bytes, Option<bytes::Bytes>)>,
}

impl Shard {
    fn new(config: GroupCoordinatorConfig) -> Shard {
        Shard {
            shard: GroupCoordinatorShard::new(0, Arc::new(config), Arc::new(NoTopics)),
            next: 0,
            log: Vec::new(),
        }
    }

    fn drain(&mut self) -> ShardOutput {
        let out = self.shard.take_output();
        for r in &out.records {
            self.log.push(r.encode().unwrap());
        }
        out
    }

    fn request(
        &mut self,
        now: i64,
        version: i16,
        request: ShardRequest,
    ) -> (ShardResponse, Vec<CoordinatorRecord>) {
        self.next += 1;
        let ctx = RequestContext {
            api_version: version,
            client_id: "test".into(),
            client_host: "/127.0.0.1".into(),
        };
        self.shard.handle(now, &ctx, self.next, request);
        let mut out = self.drain();
        assert_eq!(out.replies.len(), 1, "one reply per request");
        let (id, response) = out.replies.pop().unwrap();
        assert_eq!(id, self.next);
        (response, out.records)
    }

    fn commit(
        &mut self,
        now: i64,
        version: i16,
        group: &str,
        generation: i32,
        member: &str,
        offsets: &[(i32, i64, &str)],
    ) -> Vec<ErrorCode> {
        self.commit_with_retention(now, version, group, generation, member, offsets, -1)
    }

    #[allow(clippy::too_many_arguments)]
    fn commit_with_retention(
        &mut self,
        now: i64,
        version: i16,
        group: &str,
        generation: i32,
        member: &str,
        offsets: &[(i32, i64, &str)],
        retention: i64,
    ) -> Vec<ErrorCode> {
        let request = OffsetCommitRequest {
            group_id: group.into(),
            generation_id_or_member_epoch: generation,
            member_id: member.into(),
            retention_time_ms: retention,
            topics: vec![OffsetCommitRequestTopic {
                name: "t".into(),
                partitions: offsets
                    .iter()
                    .map(|(p, o, m)| OffsetCommitRequestPartition {
                        partition_index: *p,
                        committed_offset: *o,
                        committed_leader_epoch: 3,
                        committed_metadata: Some(m.to_string()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let (ShardResponse::OffsetCommit(r), _) =
            self.request(now, version, ShardRequest::OffsetCommit(request))
        else {
            panic!("not an OffsetCommit answer")
        };
        r.topics[0]
            .partitions
            .iter()
            .map(|p| ErrorCode::from_code(p.error_code).unwrap())
            .collect()
    }

    /// (partition, offset, metadata) of every committed offset of `group` on topic t, or
    /// of the named partitions.
    fn fetch(
        &mut self,
        now: i64,
        group: &str,
        partitions: Option<&[i32]>,
    ) -> Vec<(i32, i64, String)> {
        let request = ShardRequest::OffsetFetch {
            group: OffsetFetchRequestGroup {
                group_id: group.into(),
                member_id: None,
                member_epoch: -1,
                topics: partitions.map(|ps| {
                    vec![OffsetFetchRequestTopics {
                        name: "t".into(),
                        partition_indexes: ps.to_vec(),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            },
            require_stable: false,
        };
        let (ShardResponse::OffsetFetch(r), records) = self.request(now, 9, request) else {
            panic!("not an OffsetFetch answer")
        };
        assert!(records.is_empty(), "a fetch writes nothing");
        assert_eq!(r.error_code, 0);
        r.topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .map(|p| {
                (
                    p.partition_index,
                    p.committed_offset,
                    p.metadata.clone().unwrap_or_default(),
                )
            })
            .collect()
    }

    fn groups(&mut self, now: i64) -> Vec<(String, String, String)> {
        let (ShardResponse::ListGroups(g), _) = self.request(
            now,
            5,
            ShardRequest::ListGroups {
                states: vec![],
                types: vec![],
            },
        ) else {
            panic!()
        };
        g.into_iter()
            .map(|g| (g.group_id, g.group_state, g.group_type))
            .collect()
    }
}

#[test]
fn a_commit_outside_any_generation_creates_a_simple_group_and_reads_back() {
    let mut s = Shard::new(GroupCoordinatorConfig::default());
    assert_eq!(
        s.commit(1000, 8, "g", -1, "", &[(0, 5, "a"), (1, 9, "")]),
        vec![ErrorCode::None; 2]
    );
    assert_eq!(s.log.len(), 2, "one OffsetCommit record per partition");
    assert_eq!(
        s.fetch(1001, "g", None),
        vec![(0, 5, "a".into()), (1, 9, String::new())]
    );
    assert_eq!(
        s.fetch(1001, "g", Some(&[1, 2])),
        vec![(1, 9, String::new()), (2, -1, String::new())]
    );
    assert_eq!(
        s.groups(1001),
        vec![("g".into(), "Empty".into(), "classic".into())]
    );
    // Unknown groups read as nothing committed.
    assert_eq!(
        s.fetch(1001, "other", Some(&[0])),
        vec![(0, -1, String::new())]
    );
}

#[test]
fn commits_to_an_unknown_group_inside_a_generation_are_refused_by_version() {
    let mut s = Shard::new(GroupCoordinatorConfig::default());
    assert_eq!(
        s.commit(0, 8, "g", 5, "m", &[(0, 1, "")]),
        vec![ErrorCode::IllegalGeneration]
    );
    assert_eq!(
        s.commit(0, 9, "g", 5, "m", &[(0, 1, "")]),
        vec![ErrorCode::GroupIdNotFound]
    );
    assert!(s.log.is_empty(), "nothing written");
    assert!(s.groups(0).is_empty());
}

#[test]
fn metadata_over_the_limit_is_refused_per_partition() {
    let mut s = Shard::new(GroupCoordinatorConfig {
        offset_metadata_max_bytes: 4,
        ..Default::default()
    });
    let codes = s.commit(0, 8, "g", -1, "", &[(0, 1, "ok"), (1, 2, "too long")]);
    assert_eq!(
        codes,
        vec![ErrorCode::None, ErrorCode::OffsetMetadataTooLarge]
    );
    assert_eq!(s.fetch(0, "g", None), vec![(0, 1, "ok".into())]);
}

#[test]
fn a_commit_larger_than_one_batch_changes_nothing() {
    let mut s = Shard::new(GroupCoordinatorConfig {
        max_batch_bytes: 300,
        ..Default::default()
    });
    let many: Vec<(i32, i64, &str)> = (0..20).map(|p| (p, 1, "")).collect();
    let codes = s.commit(0, 8, "g", -1, "", &many);
    assert!(
        codes
            .iter()
            .all(|c| *c == ErrorCode::InvalidCommitOffsetSize),
        "{codes:?}"
    );
    assert!(s.log.is_empty());
    assert!(s.fetch(0, "g", None).is_empty());
}

#[test]
fn the_written_records_rebuild_the_same_offsets_in_a_new_shard() {
    let mut s = Shard::new(GroupCoordinatorConfig::default());
    s.commit(0, 8, "g", -1, "", &[(0, 5, "a"), (1, 9, "b")]);
    s.commit(10, 8, "g", -1, "", &[(0, 6, "c")]);
    s.commit(20, 8, "h", -1, "", &[(3, 1, "")]);
    let (ShardResponse::OffsetDelete(d), _) = s.request(
        30,
        0,
        ShardRequest::OffsetDelete(OffsetDeleteRequest {
            group_id: "g".into(),
            topics: vec![OffsetDeleteRequestTopic {
                name: "t".into(),
                partitions: vec![OffsetDeleteRequestPartition { partition_index: 1 }],
            }],
        }),
    ) else {
        panic!()
    };
    assert_eq!(d.error_code, 0);
    assert_eq!(d.topics[0].partitions[0].error_code, 0);
    assert_eq!(s.fetch(31, "g", None), vec![(0, 6, "c".into())]);
    let mut fresh = Shard::new(GroupCoordinatorConfig::default());
    for (offset, (k, v)) in s.log.iter().enumerate() {
        let record = CoordinatorRecord::decode(k.clone(), v.clone()).unwrap();
        fresh.shard.replay(offset as i64, -1, record).unwrap();
    }
    fresh.shard.on_loaded(40);
    assert_eq!(fresh.fetch(41, "g", None), vec![(0, 6, "c".into())]);
    assert_eq!(fresh.fetch(41, "h", None), vec![(3, 1, String::new())]);
    assert_eq!(fresh.groups(41).len(), 2);
}

#[test]
fn offsets_expire_after_the_retention_and_then_the_empty_group_goes() {
    let retention = 10 * MINUTE;
    let check = MINUTE;
    let mut s = Shard::new(GroupCoordinatorConfig {
        offsets_retention_ms: retention,
        offsets_retention_check_interval_ms: check,
        ..Default::default()
    });
    s.shard.on_loaded(0);
    s.commit(0, 8, "old", -1, "", &[(0, 1, "")]);
    s.commit(5 * MINUTE, 8, "young", -1, "", &[(0, 2, "")]);
    assert_eq!(s.shard.next_deadline(), Some(check));
    s.shard.on_timeout(10 * MINUTE + 1);
    let out = s.drain();
    assert_eq!(
        out.records.len(),
        2,
        "the old offset's tombstone, then the group's"
    );
    assert!(
        out.records.iter().all(|r| r.value.is_none()),
        "tombstones only"
    );
    assert!(s.fetch(10 * MINUTE + 2, "old", None).is_empty());
    assert_eq!(
        s.groups(10 * MINUTE + 2),
        vec![("young".into(), "Empty".into(), "classic".into())]
    );
    s.shard.on_timeout(15 * MINUTE + 1);
    s.drain();
    assert!(s.groups(15 * MINUTE + 2).is_empty());
}

#[test]
fn a_v2_to_v4_commit_keeps_its_own_retention_in_a_v1_value() {
    let mut s = Shard::new(GroupCoordinatorConfig::default());
    s.shard.on_loaded(0);
    let codes = s.commit_with_retention(0, 2, "g", -1, "", &[(0, 4, "")], 30_000);
    assert_eq!(codes, vec![ErrorCode::None]);
    let (k, v) = s.log.last().unwrap().clone();
    let record = CoordinatorRecord::decode(k, v).unwrap();
    let (GroupCoordinatorRecordValue::OffsetCommit(value), version) = record.value.unwrap() else {
        panic!("an OffsetCommit value");
    };
    assert_eq!(version, 1, "Kafka writes an expiring commit as value v1");
    assert_eq!(value.expire_timestamp, 30_000);
    // Expired by its own time at the first check after it, not the topic-wide retention.
    s.shard.on_timeout(600_000);
    s.drain();
    assert!(s.fetch(600_001, "g", None).is_empty());
}

#[test]
fn delete_groups_removes_an_empty_group_with_its_offsets() {
    let mut s = Shard::new(GroupCoordinatorConfig::default());
    s.commit(0, 8, "g", -1, "", &[(0, 1, "")]);
    let (ShardResponse::DeleteGroups(r), records) = s.request(
        1,
        2,
        ShardRequest::DeleteGroups(vec!["g".into(), "missing".into()]),
    ) else {
        panic!()
    };
    let codes: Vec<_> = r
        .iter()
        .map(|g| (g.group_id.clone(), g.error_code))
        .collect();
    assert_eq!(
        codes,
        vec![
            ("g".into(), 0),
            ("missing".into(), ErrorCode::GroupIdNotFound.code())
        ]
    );
    assert_eq!(records.len(), 2, "the offset's and the group's tombstones");
    assert!(s.groups(2).is_empty());
    assert!(s.fetch(2, "g", None).is_empty());
}

fn txn_commit(
    s: &mut Shard,
    producer_id: i64,
    group: &str,
    offsets: &[(i32, i64)],
) -> (Vec<ErrorCode>, usize) {
    use kraftd_protocol::messages::txn_offset_commit_request::{
        TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    };
    let request = kraftd_protocol::messages::TxnOffsetCommitRequest {
        transactional_id: "tx".into(),
        group_id: group.into(),
        producer_id,
        producer_epoch: 0,
        generation_id_or_member_epoch: -1,
        member_id: String::new(),
        topics: vec![TxnOffsetCommitRequestTopic {
            name: "t".into(),
            partitions: offsets
                .iter()
                .map(|(p, o)| TxnOffsetCommitRequestPartition {
                    partition_index: *p,
                    committed_offset: *o,
                    committed_leader_epoch: -1,
                    committed_metadata: None,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    s.next += 1;
    let ctx = RequestContext {
        api_version: 3,
        ..Default::default()
    };
    s.shard
        .handle(0, &ctx, s.next, ShardRequest::TxnOffsetCommit(request));
    let out = s.shard.take_output();
    assert!(out.records.is_empty(), "nothing outside the transaction");
    let txn_records: usize = out
        .txn_records
        .iter()
        .map(|((pid, _), r)| {
            assert_eq!(*pid, producer_id, "written for the producer");
            r.len()
        })
        .sum();
    let Some((_, ShardResponse::TxnOffsetCommit(r))) = out.replies.into_iter().next() else {
        panic!("no TxnOffsetCommit answer")
    };
    let codes = r.topics[0]
        .partitions
        .iter()
        .map(|p| ErrorCode::from_code(p.error_code).unwrap())
        .collect();
    (codes, txn_records)
}

fn fetch_stable(s: &mut Shard, group: &str, partition: i32) -> (i64, ErrorCode) {
    let request = ShardRequest::OffsetFetch {
        group: OffsetFetchRequestGroup {
            group_id: group.into(),
            member_id: None,
            member_epoch: -1,
            topics: Some(vec![OffsetFetchRequestTopics {
                name: "t".into(),
                partition_indexes: vec![partition],
                ..Default::default()
            }]),
            ..Default::default()
        },
        require_stable: true,
    };
    let (ShardResponse::OffsetFetch(r), _) = s.request(0, 8, request) else {
        panic!()
    };
    let p = &r.topics[0].partitions[0];
    (
        p.committed_offset,
        ErrorCode::from_code(p.error_code).unwrap(),
    )
}

#[test]
fn transactional_offsets_are_pending_until_their_marker() {
    let mut s = Shard::new(GroupCoordinatorConfig::default());
    s.commit(0, 8, "g", -1, "", &[(0, 3, "")]);
    let (codes, written) = txn_commit(&mut s, 42, "g", &[(0, 10), (1, 20)]);
    assert_eq!(codes, vec![ErrorCode::None; 2]);
    assert_eq!(
        written, 2,
        "one record per partition, in the producer's batch"
    );
    // Not visible yet; a stable read is told to come back.
    assert_eq!(s.fetch(1, "g", Some(&[0])), vec![(0, 3, String::new())]);
    assert_eq!(
        fetch_stable(&mut s, "g", 0),
        (-1, ErrorCode::UnstableOffsetCommit)
    );
    // The commit marker makes them the group's.
    s.shard.complete_transaction(42, true);
    assert_eq!(fetch_stable(&mut s, "g", 0), (10, ErrorCode::None));
    assert_eq!(
        s.fetch(2, "g", None),
        vec![(0, 10, String::new()), (1, 20, String::new())]
    );
    // An aborted transaction leaves nothing behind.
    txn_commit(&mut s, 43, "g", &[(0, 99)]);
    s.shard.complete_transaction(43, false);
    assert_eq!(fetch_stable(&mut s, "g", 0), (10, ErrorCode::None));
}

#[test]
fn a_plain_commit_after_a_transactional_one_wins_when_the_transaction_commits() {
    let mut s = Shard::new(GroupCoordinatorConfig::default());
    txn_commit(&mut s, 7, "g", &[(0, 10)]);
    s.commit(1, 8, "g", -1, "", &[(0, 15, "")]);
    s.shard.complete_transaction(7, true);
    assert_eq!(s.fetch(2, "g", Some(&[0])), vec![(0, 15, String::new())]);
}

#[test]
fn loading_replays_transactional_offsets_and_their_markers() {
    let mut s = Shard::new(GroupCoordinatorConfig::default());
    let mut log: Vec<(i64, CoordinatorRecord)> = Vec::new();
    txn_commit(&mut s, 5, "g", &[(0, 11)]);
    // What the runtime writes: the transactional batch, then (later) the marker.
    let mut fresh = Shard::new(GroupCoordinatorConfig::default());
    let record = CoordinatorRecord::new(
        kraftd_protocol::GroupCoordinatorRecordKey::OffsetCommit(
            kraftd_protocol::coordinator::OffsetCommitKey {
                group: "g".into(),
                topic: "t".into(),
                partition: 0,
            },
        ),
        GroupCoordinatorRecordValue::OffsetCommit(
            kraftd_protocol::coordinator::OffsetCommitValue {
                offset: 11,
                leader_epoch: -1,
                metadata: String::new(),
                commit_timestamp: 0,
                expire_timestamp: -1,
                ..Default::default()
            },
        ),
        3,
    );
    log.push((0, record));
    for (offset, r) in log {
        fresh.shard.replay(offset, 5, r).unwrap();
    }
    fresh.shard.on_loaded(1);
    assert_eq!(
        fetch_stable(&mut fresh, "g", 0),
        (-1, ErrorCode::UnstableOffsetCommit)
    );
    fresh.shard.complete_transaction(5, true);
    assert_eq!(fetch_stable(&mut fresh, "g", 0), (11, ErrorCode::None));
}
