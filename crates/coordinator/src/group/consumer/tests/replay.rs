//! The log written reproduces the group: every record through Kafka's bytes into a fresh
//! shard, then the loaded shard's timers.

use kraftd_protocol::ErrorCode;

use super::*;
use crate::group::consumer::member::MemberState;
use crate::shard::ReplayFailure;

fn reload(h: &Harness, topics: &[(&str, i32)]) -> GroupCoordinatorShard {
    let mut fresh = GroupCoordinatorShard::new(
        0,
        Arc::new(GroupCoordinatorConfig::default()),
        Topics::of(topics),
    );
    for (offset, record) in h.log.iter().enumerate() {
        let (key, value) = record.encode().unwrap();
        let decoded = CoordinatorRecord::decode(key, value).unwrap();
        assert_eq!(&decoded, record);
        fresh.replay(offset as i64, -1, decoded).unwrap();
    }
    fresh
}

fn consumer(shard: &GroupCoordinatorShard) -> &ConsumerGroup {
    match shard.group(GROUP) {
        Some(Group::Consumer(g)) => g,
        _ => panic!("no consumer group"),
    }
}

/// A group mid-rebalance: a regex member, a static member, one member revoking.
fn busy() -> Harness {
    let mut h = Harness::new(&[("t", 6), ("logs-a", 2)]);
    h.join("m1", &["t"]);
    let mut j = join_request("s1", &["t"]);
    j.instance_id = Some("inst".into());
    j.rack_id = Some("rack-1".into());
    j.server_assignor = Some("uniform".into());
    h.heartbeat(j);
    let mut j = join_request("r1", &[]);
    j.subscribed_topic_regex = Some("logs-.*".into());
    h.heartbeat(j);
    h.beat("m1", 1);
    h
}

#[test]
fn replaying_the_log_reproduces_the_group() {
    let h = busy();
    let before = h.group();
    assert_eq!(
        before.member("m1").unwrap().state,
        MemberState::UnrevokedPartitions
    );
    let loaded = reload(&h, &[("t", 6), ("logs-a", 2)]);
    let after = consumer(&loaded);
    assert_eq!(after.members, before.members);
    assert_eq!(after.target_assignment, before.target_assignment);
    assert_eq!(after.resolved_regexes, before.resolved_regexes);
    assert_eq!(
        (
            after.group_epoch,
            after.assignment_epoch,
            after.metadata_hash
        ),
        (
            before.group_epoch,
            before.assignment_epoch,
            before.metadata_hash
        )
    );
    assert_eq!(after.state_name(), before.state_name());
    assert_eq!(after.static_member_id("inst"), Some("s1"));
    for m in before.members.values() {
        for (t, p) in m.owned_partitions() {
            assert_eq!(after.owner(t, p), Some(m.member_id.as_str()));
        }
    }
    // The assignment epochs survive (KIP-1251's tagged field).
    let r1 = after.member("r1").unwrap();
    assert_eq!(r1.assigned[&tid("logs-a")], [(0, 3), (1, 3)].into());
}

#[test]
fn a_loaded_shard_carries_on() {
    let mut h = busy();
    let loaded = reload(&h, &[("t", 6), ("logs-a", 2)]);
    let mut l = Harness::new(&[("t", 6), ("logs-a", 2)]);
    l.shard = loaded;
    l.now = h.now;
    l.client_owned = h.client_owned.clone();
    l.shard.on_loaded(l.now);
    // m1 is revoking: its rebalance timeout comes first.
    assert_eq!(l.shard.next_deadline(), Some(l.now + 30_000));
    // The same heartbeat gives the same answer on both.
    let a = h.beat("m1", 1);
    let b = l.beat("m1", 1);
    assert_eq!(error(&b), ErrorCode::None);
    assert_eq!(
        (a.member_epoch, &a.assignment),
        (b.member_epoch, &b.assignment)
    );
    // Sessions of the loaded members expire.
    l.advance(SESSION_MS);
    assert_eq!(consumer(&l.shard).members.len(), 0);
}

#[test]
fn a_log_from_before_kip_1251_defaults_assignment_epochs() {
    let mut h = busy();
    h.beat("m1", 1);
    // m1 moved to epoch 3 and keeps 0..2 at the epoch it was given them.
    let m1 = h.group().member("m1").unwrap();
    assert_eq!(m1.member_epoch, 3);
    assert_eq!(m1.assigned[&tid("t")], [(0, 1), (1, 1), (2, 1)].into());
    let mut log = h.log.clone();
    for r in &mut log {
        if let Some((
            kraftd_protocol::GroupCoordinatorRecordValue::ConsumerGroupCurrentMemberAssignment(v),
            _,
        )) = &mut r.value
        {
            for tp in v
                .assigned_partitions
                .iter_mut()
                .chain(v.partitions_pending_revocation.iter_mut())
            {
                tp.assignment_epochs = None;
            }
        }
    }
    let mut fresh = GroupCoordinatorShard::new(
        0,
        Arc::new(GroupCoordinatorConfig::default()),
        Topics::of(&[("t", 6), ("logs-a", 2)]),
    );
    for (i, r) in log.into_iter().enumerate() {
        fresh.replay(i as i64, -1, r).unwrap();
    }
    // Without them, a partition counts as assigned at the member's epoch.
    let m1 = consumer(&fresh).member("m1").unwrap();
    assert_eq!(m1.assigned[&tid("t")], [(0, 3), (1, 3), (2, 3)].into());
}

#[test]
fn a_record_of_the_wrong_shape_is_refused() {
    use kraftd_protocol::coordinator::{
        ConsumerGroupMetadataKey, ConsumerGroupRegularExpressionValue,
    };
    use kraftd_protocol::{GroupCoordinatorRecordKey, GroupCoordinatorRecordValue};
    let mut shard = GroupCoordinatorShard::new(
        0,
        Arc::new(GroupCoordinatorConfig::default()),
        Topics::of(&[]),
    );
    let bad = CoordinatorRecord::new(
        GroupCoordinatorRecordKey::ConsumerGroupMetadata(ConsumerGroupMetadataKey {
            group_id: "x".into(),
        }),
        GroupCoordinatorRecordValue::ConsumerGroupRegularExpression(
            ConsumerGroupRegularExpressionValue::default(),
        ),
        0,
    );
    let err = shard.replay(5, -1, bad).unwrap_err();
    assert!(
        matches!(&err, ReplayFailure::Corrupt(r) if r.starts_with("record at offset 5 of __consumer_offsets-")),
        "{err:?}"
    );
    assert!(shard.group("x").is_none());
}
