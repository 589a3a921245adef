//! Offset commits and fetches against a consumer group's member epochs, and deleting the
//! group.

use kraftd_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kraftd_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kraftd_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kraftd_protocol::messages::{OffsetCommitRequest, TxnOffsetCommitRequest};
use kraftd_protocol::ErrorCode;

use super::*;

fn commit(h: &mut Harness, version: i16, member: &str, epoch: i32) -> ErrorCode {
    let request = OffsetCommitRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        generation_id_or_member_epoch: epoch,
        topics: vec![OffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 7,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let saved = h.version;
    h.version = version;
    let ShardResponse::OffsetCommit(r) = h.request(ShardRequest::OffsetCommit(request)) else {
        panic!()
    };
    h.version = saved;
    ErrorCode::from_code(r.topics[0].partitions[0].error_code).unwrap()
}

fn txn_commit(h: &mut Harness, version: i16, member: &str, epoch: i32) -> ErrorCode {
    let request = TxnOffsetCommitRequest {
        transactional_id: "tx".into(),
        group_id: GROUP.into(),
        producer_id: 1000,
        producer_epoch: 0,
        member_id: member.into(),
        generation_id_or_member_epoch: epoch,
        topics: vec![TxnOffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![TxnOffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 8,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let saved = h.version;
    h.version = version;
    let ShardResponse::TxnOffsetCommit(r) = h.request(ShardRequest::TxnOffsetCommit(request))
    else {
        panic!()
    };
    h.version = saved;
    ErrorCode::from_code(r.topics[0].partitions[0].error_code).unwrap()
}

fn fetch(h: &mut Harness, member: Option<&str>, epoch: i32) -> ErrorCode {
    let ShardResponse::OffsetFetch(r) = h.request(ShardRequest::OffsetFetch {
        group: OffsetFetchRequestGroup {
            group_id: GROUP.into(),
            member_id: member.map(str::to_string),
            member_epoch: epoch,
            topics: None,
            ..Default::default()
        },
        require_stable: false,
    }) else {
        panic!()
    };
    ErrorCode::from_code(r.error_code).unwrap()
}

#[test]
fn commits_are_fenced_by_member_epoch() {
    let mut h = Harness::new(&[("t", 2)]);
    h.join("m1", &["t"]);
    h.join("m2", &["t"]);
    h.beat("m1", 1);
    h.beat("m1", 1); // m1 now at epoch 2
    assert_eq!(commit(&mut h, 9, "m1", 1), ErrorCode::StaleMemberEpoch);
    assert_eq!(commit(&mut h, 9, "m1", 3), ErrorCode::StaleMemberEpoch);
    assert_eq!(commit(&mut h, 9, "m1", 2), ErrorCode::None);
    assert_eq!(h.shard.offsets.get(GROUP, "t", 0).unwrap().offset, 7);
    assert_eq!(commit(&mut h, 9, "nobody", 2), ErrorCode::UnknownMemberId);
    // Members of the consumer protocol commit with v9+.
    assert_eq!(commit(&mut h, 8, "m1", 2), ErrorCode::UnsupportedVersion);
    // Outside the group (epoch -1) only while it is empty.
    assert_eq!(commit(&mut h, 9, "", -1), ErrorCode::UnknownMemberId);
}

#[test]
fn transactional_commits_are_exempt_from_the_v9_rule() {
    // Kafka's `ConsumerGroup.validateOffsetCommit` with `isTransactional`: TxnOffsetCommit
    // has no version tied to the consumer protocol (its v3+ carries the member epoch).
    let mut h = Harness::new(&[("t", 2)]);
    h.join("m1", &["t"]);
    h.join("m2", &["t"]);
    h.beat("m1", 1);
    h.beat("m1", 1); // m1 now at epoch 2
    for version in [3, 4, 5] {
        assert_eq!(
            txn_commit(&mut h, version, "m1", 2),
            ErrorCode::None,
            "v{version}"
        );
    }
    // The member is still fenced by its epoch, with the error producers know.
    assert_eq!(txn_commit(&mut h, 4, "m1", 1), ErrorCode::IllegalGeneration);
    assert_eq!(
        txn_commit(&mut h, 4, "nobody", 2),
        ErrorCode::UnknownMemberId
    );
    // A commit naming no member (TxnOffsetCommit v0-2, or a producer not given the
    // consumer's group metadata) is accepted though the group has members.
    assert_eq!(txn_commit(&mut h, 2, "", -1), ErrorCode::None);
    assert_eq!(txn_commit(&mut h, 4, "", -1), ErrorCode::None);
    // Unlike OffsetCommit's.
    assert_eq!(commit(&mut h, 9, "", -1), ErrorCode::UnknownMemberId);
}

#[test]
fn fetches_name_the_member_and_its_epoch() {
    let mut h = Harness::new(&[("t", 2)]);
    h.join("m1", &["t"]);
    assert_eq!(fetch(&mut h, None, -1), ErrorCode::None);
    assert_eq!(fetch(&mut h, Some("m1"), 1), ErrorCode::None);
    assert_eq!(fetch(&mut h, Some("m1"), 0), ErrorCode::StaleMemberEpoch);
    assert_eq!(fetch(&mut h, Some("m9"), 1), ErrorCode::UnknownMemberId);
    assert_eq!(fetch(&mut h, None, 1), ErrorCode::UnknownMemberId);
}

#[test]
fn an_empty_group_can_be_deleted_with_its_offsets() {
    let mut h = Harness::new(&[("t", 2)]);
    h.join("m1", &["t"]);
    assert_eq!(commit(&mut h, 9, "m1", 1), ErrorCode::None);
    // Not while it has members.
    let ShardResponse::DeleteGroups(d) = h.request(ShardRequest::DeleteGroups(vec![GROUP.into()]))
    else {
        panic!()
    };
    assert_eq!(d[0].error_code, ErrorCode::NonEmptyGroup.code());
    let mut leave = beat_request("m1", -1, &Default::default());
    leave.topic_partitions = None;
    h.heartbeat(leave);
    h.forget("m1");
    assert_eq!(h.group().state_name(), "Empty");
    // An empty group takes commits from outside any generation.
    assert_eq!(commit(&mut h, 9, "", -1), ErrorCode::None);
    assert!(!h.group().is_subscribed_to_topic("t"));
    let ShardResponse::DeleteGroups(d) = h.request(ShardRequest::DeleteGroups(vec![GROUP.into()]))
    else {
        panic!()
    };
    assert_eq!(d[0].error_code, 0);
    assert!(h.shard.group(GROUP).is_none());
    assert!(h.shard.offsets.get(GROUP, "t", 0).is_none());

    // The whole log replays into nothing.
    let mut fresh = GroupCoordinatorShard::new(
        0,
        Arc::new(GroupCoordinatorConfig::default()),
        Topics::of(&[("t", 2)]),
    );
    for (i, r) in h.log.iter().enumerate() {
        fresh.replay(i as i64, -1, r.clone()).unwrap();
    }
    assert!(fresh.group(GROUP).is_none());
    assert!(fresh.offsets.is_empty());
}
