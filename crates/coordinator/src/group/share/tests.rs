//! Share group tests, sans IO, through the shard as its runtime drives it
//! ([`Replica`]): members join, share partitions, leave and expire; the state
//! initialization goes out as work and comes back; seeded random members; and after every
//! step the replay check (a shard loaded from the log answers as the live one).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kraftd_protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};
use kraftd_protocol::ErrorCode;

use super::*;
use crate::context::RequestContext;
use crate::group::config::GroupCoordinatorConfig;
use crate::group::consumer::Partitions;
use crate::group::shard::{GroupCoordinatorShard, GroupWork, ShardRequest, ShardResponse};
use crate::testing::group::{check, topic_id, Topics};
use crate::testing::{ctx, Replica, Rng};

const GROUP: &str = "sg";

fn replica(topics: &[(&str, i32)]) -> Replica<GroupCoordinatorShard> {
    let config = GroupCoordinatorConfig {
        // Every heartbeat may compute an assignment: the tests step time themselves.
        share_assignment_interval_ms: 0,
        ..Default::default()
    };
    Replica::new(0, 0, config, Topics::of(topics), 1_000)
}

fn beat(
    r: &mut Replica<GroupCoordinatorShard>,
    member: &str,
    epoch: i32,
    topics: Option<&[&str]>,
) -> ShareGroupHeartbeatResponse {
    let request = ShareGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        member_epoch: epoch,
        rack_id: None,
        subscribed_topic_names: topics.map(|t| t.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    };
    let c = RequestContext {
        api_version: 1,
        ..ctx(1)
    };
    match r.ask(&c, ShardRequest::ShareGroupHeartbeat(request)) {
        ShardResponse::ShareGroupHeartbeat(resp) => resp,
        other => panic!("not a heartbeat answer: {other:?}"),
    }
}

/// Runs the initialization work handed out as a persister that succeeds for every
/// partition would, and tells the shard.
fn initialize_all(r: &mut Replica<GroupCoordinatorShard>) -> usize {
    let work = std::mem::take(&mut r.work);
    let n = work.len();
    for w in work {
        let GroupWork::InitializeShareGroupState(req) = w;
        let mut done = Partitions::new();
        for t in &req.topics {
            done.entry(t.topic_id)
                .or_default()
                .extend(t.partitions.iter().map(|p| p.partition));
        }
        let group = req.group_id.clone();
        r.call(move |s, now| s.share_state_initialized(now, &group, &done, &Partitions::new()));
    }
    n
}

fn group(r: &Replica<GroupCoordinatorShard>) -> &ShareGroup {
    match r.shard.group(GROUP) {
        Some(Group::Share(g)) => g,
        other => panic!("no share group: {other:?}"),
    }
}

fn assigned(resp: &ShareGroupHeartbeatResponse) -> BTreeSet<(kraftd_protocol::Uuid, i32)> {
    resp.assignment
        .iter()
        .flat_map(|a| &a.topic_partitions)
        .flat_map(|tp| tp.partitions.iter().map(move |p| (tp.topic_id, *p)))
        .collect()
}

fn replay_check(r: &mut Replica<GroupCoordinatorShard>, label: &str) {
    check(r, &[GROUP.to_string()], label);
}

#[test]
fn two_members_share_one_partition_after_initialization() {
    let mut r = replica(&[("t", 1)]);
    let a = beat(&mut r, "a", 0, Some(&["t"]));
    assert_eq!(a.error_code, 0);
    assert_eq!(a.member_epoch, 1);
    assert!(assigned(&a).is_empty(), "nothing initialized yet");
    assert_eq!(a.heartbeat_interval_ms, 5_000);
    // The initialization went out with the group epoch and -1: a new topic's start
    // offset is the group's share.auto.offset.reset's to decide.
    let GroupWork::InitializeShareGroupState(init) = &r.work[0];
    assert_eq!(init.group_id, GROUP);
    assert_eq!(init.topics[0].topic_id, topic_id("t"));
    assert_eq!(init.topics[0].partitions[0].start_offset, -1);
    assert_eq!(init.topics[0].partitions[0].state_epoch, 1);
    let state = group(&r).state_metadata.clone().unwrap();
    assert!(state.initializing.contains_key(&topic_id("t")));
    // A second heartbeat before the answer asks for nothing again.
    beat(&mut r, "a", 1, None);
    assert_eq!(r.work.len(), 1);
    assert_eq!(initialize_all(&mut r), 1);
    let state = group(&r).state_metadata.clone().unwrap();
    assert!(state.initializing.is_empty());
    assert_eq!(
        state.initialized[&topic_id("t")].partitions,
        BTreeSet::from([0])
    );
    replay_check(&mut r, "initialized");

    // The next heartbeat assigns the initialized partition, then b joins and shares it.
    let a = beat(&mut r, "a", 1, None);
    assert_eq!(a.member_epoch, 2);
    assert_eq!(assigned(&a), BTreeSet::from([(topic_id("t"), 0)]));
    let b = beat(&mut r, "b", 0, Some(&["t"]));
    assert_eq!(b.member_epoch, 3);
    assert_eq!(assigned(&b), BTreeSet::from([(topic_id("t"), 0)]));
    assert!(r.work.is_empty(), "nothing left to initialize");
    let a = beat(&mut r, "a", 2, None);
    assert_eq!(a.member_epoch, 3);
    assert!(a.assignment.is_none(), "a's assignment did not change");
    replay_check(&mut r, "shared");

    // DescribeShareGroup shows both on the partition.
    let ShardResponse::ShareGroupDescribe(d) = r.ask(
        &ctx(1),
        ShardRequest::ShareGroupDescribe(vec![GROUP.into(), "nope".into()]),
    ) else {
        panic!("not a describe answer");
    };
    assert_eq!(d[0].group_state, "Stable");
    assert_eq!(d[0].assignor_name, "simple");
    assert_eq!(d[0].group_epoch, 3);
    assert_eq!(d[0].assignment_epoch, 3);
    assert_eq!(d[0].members.len(), 2);
    for m in &d[0].members {
        assert_eq!(m.assignment.topic_partitions[0].topic_name, "t");
        assert_eq!(m.assignment.topic_partitions[0].partitions, vec![0]);
    }
    assert_eq!(d[1].error_code, ErrorCode::GroupIdNotFound.code());

    // a leaves; b's epoch moves on and it keeps the partition.
    let left = beat(&mut r, "a", -1, None);
    assert_eq!((left.error_code, left.member_epoch), (0, -1));
    // a's leaving bumped the group epoch to 4; b's heartbeat brings a new assignment.
    let b = beat(&mut r, "b", 3, None);
    assert_eq!(b.member_epoch, 4);
    assert!(b.assignment.is_none(), "b keeps the partition");
    assert_eq!(group(&r).members.len(), 1);
    replay_check(&mut r, "left");
    // Every group epoch written counts as a share rebalance (joins, the assignment of the
    // initialized partition, the leave).
    let counters = crate::shard::CoordinatorShard::take_counters(&mut r.shard);
    assert!(
        counters.contains(&("share_group_rebalance_count", 4)),
        "{counters:?}"
    );
}

#[test]
fn members_split_partitions_and_new_partitions_start_at_zero() {
    let mut r = replica(&[("t", 4)]);
    beat(&mut r, "a", 0, Some(&["t"]));
    initialize_all(&mut r);
    let a = beat(&mut r, "a", 1, None);
    assert_eq!(assigned(&a).len(), 4);
    let b = beat(&mut r, "b", 0, Some(&["t"]));
    assert_eq!(assigned(&b).len(), 2);
    let a = beat(&mut r, "a", a.member_epoch, None);
    assert_eq!(assigned(&a).len(), 2);
    assert!(assigned(&a).is_disjoint(&assigned(&b)));
    replay_check(&mut r, "split");

    // The topic grows: the new partitions are initialized at offset 0 (the group knew the
    // topic, so nothing produced to them may be skipped).
    r.topics = Topics::of(&[("t", 6)]);
    let topics = r.topics.clone();
    r.call(move |s, _| s.on_metadata_update(topics));
    beat(&mut r, "a", a.member_epoch, None);
    let GroupWork::InitializeShareGroupState(init) = &r.work[0];
    let parts: Vec<(i32, i64)> = init.topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition, p.start_offset))
        .collect();
    assert_eq!(parts, vec![(4, 0), (5, 0)]);
}

#[test]
fn heartbeat_errors_are_kafkas() {
    let mut r = replica(&[("t", 1)]);
    let e = beat(&mut r, "", 0, Some(&["t"]));
    assert_eq!(e.error_code, ErrorCode::InvalidRequest.code());
    let e = beat(&mut r, "a", 0, None);
    assert_eq!(e.error_code, ErrorCode::InvalidRequest.code());
    let e = beat(&mut r, "a", -2, None);
    assert_eq!(e.error_code, ErrorCode::InvalidRequest.code());
    let e = beat(&mut r, "a", 1, None);
    assert_eq!(e.error_code, ErrorCode::GroupIdNotFound.code());
    beat(&mut r, "a", 0, Some(&["t"]));
    let e = beat(&mut r, "x", 1, None);
    assert_eq!(e.error_code, ErrorCode::UnknownMemberId.code());
    let e = beat(&mut r, "a", 7, None);
    assert_eq!(e.error_code, ErrorCode::FencedMemberEpoch.code());
    let e = beat(&mut r, "x", -1, None);
    assert_eq!(e.error_code, ErrorCode::UnknownMemberId.code());
    // A consumer-group request on the share group, and the reverse, are refused.
    let ShardResponse::ConsumerGroupDescribe(d) = r.ask(
        &ctx(0),
        ShardRequest::ConsumerGroupDescribe(vec![GROUP.into()]),
    ) else {
        panic!("not a describe answer");
    };
    assert_eq!(d[0].error_code, ErrorCode::GroupIdNotFound.code());
    let ShardResponse::DescribeGroups(d) =
        r.ask(&ctx(6), ShardRequest::DescribeGroups(vec![GROUP.into()]))
    else {
        panic!("not a describe answer");
    };
    assert_eq!((d[0].group_state.as_str(), d[0].error_code), ("Dead", 69));
    // group.share.max.size.
    let mut small = Replica::new(
        0,
        0,
        GroupCoordinatorConfig {
            share_group_max_size: 1,
            ..Default::default()
        },
        Topics::of(&[("t", 1)]),
        1_000,
    );
    assert_eq!(beat(&mut small, "a", 0, Some(&["t"])).error_code, 0);
    let e = beat(&mut small, "b", 0, Some(&["t"]));
    assert_eq!(e.error_code, ErrorCode::GroupMaxSizeReached.code());
}

#[test]
fn a_silent_member_is_fenced_after_the_session_timeout() {
    let mut r = replica(&[("t", 2)]);
    beat(&mut r, "a", 0, Some(&["t"]));
    beat(&mut r, "b", 0, Some(&["t"]));
    initialize_all(&mut r);
    r.advance(40_000);
    let epoch = group(&r).members["a"].member_epoch;
    let a = beat(&mut r, "a", epoch, None);
    assert_eq!(a.error_code, 0);
    r.advance(10_000);
    // b was silent for 50 s > 45 s: fenced; a still in.
    assert_eq!(
        group(&r).members.keys().collect::<Vec<_>>(),
        vec!["a"],
        "b fenced"
    );
    let e = beat(&mut r, "b", 2, None);
    assert_eq!(e.error_code, ErrorCode::UnknownMemberId.code());
    replay_check(&mut r, "fenced");
    // DeleteGroups is refused while a member is in, then names the share state.
    let ShardResponse::ShareGroupsToDelete(d) = r.ask(
        &ctx(2),
        ShardRequest::ShareGroupsToDelete(vec![GROUP.into()]),
    ) else {
        panic!("not the deletion answer");
    };
    assert_eq!(d[0].1, Err(ErrorCode::NonEmptyGroup));
    let epoch = group(&r).members["a"].member_epoch;
    beat(&mut r, "a", epoch, Some(&["t"]));
    beat(&mut r, "a", -1, None);
    let ShardResponse::ShareGroupsToDelete(d) = r.ask(
        &ctx(2),
        ShardRequest::ShareGroupsToDelete(vec![GROUP.into()]),
    ) else {
        panic!("not the deletion answer");
    };
    let request = d[0].1.clone().unwrap().unwrap();
    assert_eq!(request.topics[0].partitions.len(), 2);
    let ShardResponse::DeleteGroups(d) =
        r.ask(&ctx(2), ShardRequest::DeleteGroups(vec![GROUP.into()]))
    else {
        panic!("not a DeleteGroups answer");
    };
    assert_eq!(d[0].error_code, 0);
    assert!(r.shard.group(GROUP).is_none());
    replay_check(&mut r, "deleted");
}

#[test]
fn a_failed_initialization_is_asked_again() {
    let mut r = replica(&[("t", 1)]);
    beat(&mut r, "a", 0, Some(&["t"]));
    let GroupWork::InitializeShareGroupState(init) = r.work.remove(0);
    let mut failed = Partitions::new();
    failed.entry(init.topics[0].topic_id).or_default().insert(0);
    r.call(move |s, now| s.share_state_initialized(now, GROUP, &Partitions::new(), &failed));
    assert!(group(&r)
        .state_metadata
        .as_ref()
        .unwrap()
        .initializing
        .is_empty());
    beat(&mut r, "a", 1, None);
    assert_eq!(r.work.len(), 1, "initialization asked again");
    // An initialization never answered is asked again after the retry interval.
    r.work.clear();
    r.advance(10_000);
    beat(&mut r, "a", 1, None);
    assert!(r.work.is_empty());
    r.advance(25_000);
    beat(&mut r, "a", 1, None);
    assert_eq!(
        r.work.len(),
        1,
        "retried after group.share.initialize.retry.interval.ms"
    );
}

/// Seeded random members over a few topics: joins, heartbeats (some with the previous
/// epoch, some stale), leaves, subscription changes, silence past the session; the
/// initialization answered or lost. After each step: every initialized partition a member
/// subscribes to is assigned to some member once the group settles, and the replay check.
#[test]
fn random_members_replay_and_cover_initialized_partitions() {
    const TOPICS: &[(&str, i32)] = &[("a", 3), ("b", 2)];
    const MEMBERS: &[&str] = &["m0", "m1", "m2", "m3"];
    for seed in 0..40u64 {
        let mut rng = Rng::new(seed);
        let mut r = replica(TOPICS);
        let mut epochs: BTreeMap<&str, i32> = Default::default();
        for step in 0..60 {
            let m = *rng.pick(MEMBERS);
            match rng.below(10) {
                0..=1 => {
                    let topics: &[&str] = if rng.chance(50) { &["a"] } else { &["a", "b"] };
                    let resp = beat(&mut r, m, 0, Some(topics));
                    assert_eq!(resp.error_code, 0, "seed {seed} step {step}");
                    epochs.insert(m, resp.member_epoch);
                }
                2..=5 => {
                    if let Some(e) = epochs.get(m).copied() {
                        let resp = beat(&mut r, m, e, None);
                        if resp.error_code == 0 {
                            epochs.insert(m, resp.member_epoch);
                        } else {
                            assert_eq!(
                                resp.error_code,
                                ErrorCode::UnknownMemberId.code(),
                                "seed {seed} step {step}"
                            );
                            epochs.remove(m);
                        }
                    }
                }
                6 => {
                    if epochs.remove(m).is_some() {
                        beat(&mut r, m, -1, None);
                    }
                }
                7 => r.advance(20_000),
                8 => {
                    if rng.chance(70) {
                        initialize_all(&mut r);
                    } else {
                        r.work.clear();
                    }
                }
                _ => r.advance(1_000),
            }
            replay_check(&mut r, &format!("seed {seed} step {step}"));
        }
        // Settle: everyone heartbeats twice with answered initializations; then every
        // initialized subscribed partition is held by someone.
        initialize_all(&mut r);
        for _ in 0..2 {
            let ids: Vec<String> = match r.shard.group(GROUP) {
                Some(Group::Share(g)) => g.members.keys().cloned().collect(),
                _ => Vec::new(),
            };
            for id in ids {
                let e = group(&r).members[&id].member_epoch;
                assert_eq!(beat(&mut r, &id, e, None).error_code, 0, "seed {seed}");
                initialize_all(&mut r);
            }
        }
        if let Some(Group::Share(g)) = r.shard.group(GROUP) {
            let held: BTreeSet<_> = g
                .members
                .values()
                .flat_map(|m| {
                    m.assigned
                        .iter()
                        .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
                })
                .collect();
            let subscribed = g.subscribed_topic_names_with(None, None);
            for (t, v) in g.state_metadata.iter().flat_map(|s| &s.initialized) {
                if subscribed.contains(&v.name) {
                    for p in &v.partitions {
                        assert!(
                            held.contains(&(*t, *p)),
                            "seed {seed}: {}-{p} unassigned",
                            v.name
                        );
                    }
                }
            }
        }
        replay_check(&mut r, &format!("seed {seed} settled"));
    }
}

/// Share groups share the group-id namespace: a classic JoinGroup or a KIP-848 heartbeat on
/// a share group is GROUP_ID_NOT_FOUND (never a conversion), a share heartbeat on a consumer
/// group too; and an empty share group outlives the offsets retention check, as Kafka's
/// `ShareGroup.shouldExpire` is false.
#[test]
fn other_group_types_are_refused_and_share_groups_do_not_expire() {
    use kraftd_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kraftd_protocol::messages::{ConsumerGroupHeartbeatRequest, JoinGroupRequest};

    let mut r = replica(&[("t", 1)]);
    beat(&mut r, "a", 0, Some(&["t"]));
    let join = JoinGroupRequest {
        group_id: GROUP.into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 30_000,
        member_id: String::new(),
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let ShardResponse::JoinGroup(j) = r.ask(&ctx(9), ShardRequest::JoinGroup(join)) else {
        panic!("not a JoinGroup answer");
    };
    assert_eq!(j.error_code, ErrorCode::GroupIdNotFound.code());
    let hb = ConsumerGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: "c".into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["t".into()]),
        topic_partitions: Some(Vec::new()),
        ..Default::default()
    };
    let ShardResponse::ConsumerGroupHeartbeat(c) =
        r.ask(&ctx(1), ShardRequest::ConsumerGroupHeartbeat(hb.clone()))
    else {
        panic!("not a heartbeat answer");
    };
    assert_eq!(c.error_code, ErrorCode::GroupIdNotFound.code());
    assert!(matches!(r.shard.group(GROUP), Some(Group::Share(_))));

    // The other way round.
    let ShardResponse::ConsumerGroupHeartbeat(c) = r.ask(
        &ctx(1),
        ShardRequest::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatRequest {
            group_id: "cg".into(),
            ..hb
        }),
    ) else {
        panic!("not a heartbeat answer");
    };
    assert_eq!(c.error_code, 0);
    let request = ShareGroupHeartbeatRequest {
        group_id: "cg".into(),
        member_id: "s".into(),
        member_epoch: 0,
        subscribed_topic_names: Some(vec!["t".into()]),
        ..Default::default()
    };
    let ShardResponse::ShareGroupHeartbeat(s) =
        r.ask(&ctx(1), ShardRequest::ShareGroupHeartbeat(request))
    else {
        panic!("not a heartbeat answer");
    };
    assert_eq!(s.error_code, ErrorCode::GroupIdNotFound.code());

    // Emptied, the share group stays through many retention checks.
    beat(&mut r, "a", -1, None);
    let retention = GroupCoordinatorConfig::default().offsets_retention_ms;
    r.advance(retention * 2);
    assert!(matches!(r.shard.group(GROUP), Some(Group::Share(g)) if g.is_empty()));
    replay_check(&mut r, "after retention");
}

/// "t" deleted and created again: the same name under a new id.
#[derive(Debug)]
struct Recreated;

impl crate::context::TopicMetadata for Recreated {
    fn topic_by_name(&self, name: &str) -> Option<(kraftd_protocol::Uuid, i32)> {
        (name == "t").then_some((kraftd_protocol::Uuid([9; 16]), 1))
    }
    fn topic_by_id(&self, id: kraftd_protocol::Uuid) -> Option<(String, i32)> {
        (id == kraftd_protocol::Uuid([9; 16])).then(|| ("t".to_string(), 1))
    }
    fn topic_names(&self) -> Vec<String> {
        vec!["t".into()]
    }
}

/// A subscribed topic deleted and created again under its name: the old topic's state
/// entry does not make every heartbeat bump the epoch, and the new topic is initialized
/// (a new topic id, so its start offset is -1 again).
#[test]
fn a_recreated_topic_does_not_bump_every_heartbeat() {
    let mut r = replica(&[("t", 1)]);
    beat(&mut r, "a", 0, Some(&["t"]));
    initialize_all(&mut r);
    let a = beat(&mut r, "a", 1, None);
    assert_eq!(a.member_epoch, 2);
    let topics: std::sync::Arc<dyn crate::context::TopicMetadata> = std::sync::Arc::new(Recreated);
    r.topics = topics.clone();
    r.call(move |s, _| s.on_metadata_update(topics));
    let a = beat(&mut r, "a", 2, None);
    let GroupWork::InitializeShareGroupState(init) = &r.work[0];
    assert_eq!(init.topics[0].topic_id, kraftd_protocol::Uuid([9; 16]));
    assert_eq!(init.topics[0].partitions[0].start_offset, -1);
    let epoch = a.member_epoch;
    let again = beat(&mut r, "a", epoch, None);
    assert_eq!(again.member_epoch, epoch, "no bump for the vanished topic");
    initialize_all(&mut r);
    let assigned_new = beat(&mut r, "a", epoch, None);
    assert_eq!(
        assigned(&assigned_new),
        BTreeSet::from([(kraftd_protocol::Uuid([9; 16]), 0)]),
        "the new topic's partition assigned once initialized"
    );
    replay_check(&mut r, "recreated");
    // Deleting the group asks the share coordinator for the new topic's state only.
    beat(&mut r, "a", -1, None);
    let ShardResponse::ShareGroupsToDelete(d) = r.ask(
        &ctx(2),
        ShardRequest::ShareGroupsToDelete(vec![GROUP.into()]),
    ) else {
        panic!("not the deletion answer");
    };
    let request = d[0].1.clone().unwrap().unwrap();
    let ids: Vec<_> = request.topics.iter().map(|t| t.topic_id).collect();
    assert_eq!(ids, vec![kraftd_protocol::Uuid([9; 16])]);
}

/// A group's own `share.session.timeout.ms` / `share.heartbeat.interval.ms` (ConfigResource
/// GROUP) apply to it alone, clamped into the node's bounds, as Kafka's `GroupConfigManager`.
#[test]
fn a_groups_own_session_and_heartbeat_configs_apply_to_it() {
    let mut r = replica(&[("t", 2)]);
    let configs = BTreeMap::from([
        ("share.session.timeout.ms".to_string(), "60000".to_string()),
        (
            "share.heartbeat.interval.ms".to_string(),
            "8000".to_string(),
        ),
    ]);
    r.call(move |s, _| s.set_group_configs(GROUP, &configs));
    let a = beat(&mut r, "a", 0, Some(&["t"]));
    assert_eq!(a.heartbeat_interval_ms, 8_000);
    assert_eq!(
        r.shard.group_config("other").share_heartbeat_interval_ms,
        5_000
    );
    initialize_all(&mut r);
    // Silent for 50 s: past the node's 45 s, within the group's 60 s.
    r.advance(50_000);
    assert_eq!(group(&r).members.len(), 1, "not fenced at 50 s");
    r.advance(15_000);
    assert!(group(&r).members.is_empty(), "fenced after 60 s");
    // Below the node's minimum: clamped to it.
    let low = BTreeMap::from([("share.heartbeat.interval.ms".to_string(), "1".to_string())]);
    r.call(move |s, _| s.set_group_configs(GROUP, &low));
    assert_eq!(
        r.shard.group_config(GROUP).share_heartbeat_interval_ms,
        5_000
    );
    // No configs left: the node's settings again.
    r.call(|s, _| s.set_group_configs(GROUP, &BTreeMap::new()));
    assert_eq!(r.shard.group_config(GROUP).share_session_timeout_ms, 45_000);
}

/// Topics and the groups' dynamic configs, as the broker's image gives them to the shard.
#[derive(Debug)]
struct TopicsWithGroupConfigs(Arc<Topics>, Vec<(String, BTreeMap<String, String>)>);

impl crate::context::TopicMetadata for TopicsWithGroupConfigs {
    fn topic_by_name(&self, name: &str) -> Option<(kraftd_protocol::Uuid, i32)> {
        self.0.topic_by_name(name)
    }
    fn topic_by_id(&self, id: kraftd_protocol::Uuid) -> Option<(String, i32)> {
        self.0.topic_by_id(id)
    }
    fn topic_names(&self) -> Vec<String> {
        self.0.topic_names()
    }
    fn group_configs(&self) -> Vec<(String, BTreeMap<String, String>)> {
        self.1.clone()
    }
}

/// The group configs come with each metadata update: a group's own apply, and one the
/// update no longer lists falls back to the node's.
#[test]
fn group_configs_follow_the_metadata_updates() {
    use crate::context::TopicMetadata as _;
    let mut r = replica(&[("t", 1)]);
    let configs = vec![(
        GROUP.to_string(),
        BTreeMap::from([(
            "share.heartbeat.interval.ms".to_string(),
            "7000".to_string(),
        )]),
    )];
    let with = Arc::new(TopicsWithGroupConfigs(Topics::of(&[("t", 1)]), configs));
    assert_eq!(with.topic_names(), vec!["t".to_string()]);
    r.call(move |s, _| s.on_metadata_update(with));
    assert_eq!(
        beat(&mut r, "a", 0, Some(&["t"])).heartbeat_interval_ms,
        7_000
    );
    let without = Arc::new(TopicsWithGroupConfigs(Topics::of(&[("t", 1)]), Vec::new()));
    r.call(move |s, _| s.on_metadata_update(without));
    let epoch = group(&r).members["a"].member_epoch;
    assert_eq!(beat(&mut r, "a", epoch, None).heartbeat_interval_ms, 5_000);
}

fn initialized_of(r: &mut Replica<GroupCoordinatorShard>, id: &str) -> Partitions {
    match r.ask(
        &ctx(3),
        ShardRequest::ShareGroupInitializedPartitions(id.into()),
    ) {
        ShardResponse::ShareGroupInitializedPartitions(p) => p,
        other => panic!("not the initialized partitions: {other:?}"),
    }
}

fn initiate_delete(
    r: &mut Replica<GroupCoordinatorShard>,
    topics: &[&str],
) -> ShareOffsetsDeletion {
    let request = ShardRequest::InitiateDeleteShareGroupOffsets {
        group_id: GROUP.into(),
        topics: topics.iter().map(|t| t.to_string()).collect(),
    };
    match r.ask(&ctx(3), request) {
        ShardResponse::InitiateDeleteShareGroupOffsets(d) => d,
        other => panic!("not the deletion's first step: {other:?}"),
    }
}

#[test]
fn delete_offsets_moves_initialized_topics_to_deleting_then_drops_them() {
    let mut r = replica(&[("t", 2), ("u", 1)]);
    // Not a group yet: Kafka's GROUP_ID_NOT_FOUND; nothing initialized to describe.
    assert_eq!(
        initiate_delete(&mut r, &["t"]),
        ShareOffsetsDeletion::Refused(ErrorCode::GroupIdNotFound, "Group sg not found.".into())
    );
    assert!(initialized_of(&mut r, GROUP).is_empty());
    beat(&mut r, "a", 0, Some(&["t"]));
    initialize_all(&mut r);
    let want: Partitions = [(topic_id("t"), BTreeSet::from([0, 1]))].into();
    assert_eq!(initialized_of(&mut r, GROUP), want);
    // A member is in: refused.
    let ShareOffsetsDeletion::Refused(code, _) = initiate_delete(&mut r, &["t"]) else {
        panic!("a non-empty group's offsets were deleted");
    };
    assert_eq!(code, ErrorCode::NonEmptyGroup);
    let epoch = group(&r).members["a"].member_epoch;
    beat(&mut r, "a", epoch, None);
    beat(&mut r, "a", -1, None);
    assert!(group(&r).is_empty());
    // t is deleted; u exists but holds no state; v does not exist.
    let ShareOffsetsDeletion::Eligible {
        error_topics,
        request,
    } = initiate_delete(&mut r, &["t", "u", "v"])
    else {
        panic!("an empty group's offsets were refused");
    };
    let errors: Vec<_> = error_topics
        .iter()
        .map(|t| (t.topic_name.as_str(), t.error_code))
        .collect();
    let unknown = ErrorCode::UnknownTopicOrPartition.code();
    assert_eq!(errors, vec![("u", unknown), ("v", unknown)]);
    let request = request.expect("t's state is deleted");
    assert_eq!(request.topics.len(), 1);
    assert_eq!(request.topics[0].topic_id, topic_id("t"));
    assert_eq!(request.topics[0].partitions.len(), 2);
    let state = group(&r).state_metadata.clone().unwrap();
    assert!(state.initialized.is_empty());
    assert_eq!(state.deleting[&topic_id("t")], "t");
    assert!(initialized_of(&mut r, GROUP).is_empty());
    replay_check(&mut r, "deleting");
    // Asked again while deleting, t's partitions are all asked for again.
    let ShareOffsetsDeletion::Eligible { request, .. } = initiate_delete(&mut r, &["t"]) else {
        panic!("refused");
    };
    assert_eq!(request.unwrap().topics[0].partitions.len(), 2);
    // The persister deleted t: it leaves the deleting list.
    let done = match r.ask(
        &ctx(3),
        ShardRequest::CompleteDeleteShareGroupOffsets {
            group_id: GROUP.into(),
            deleted: vec![(topic_id("t"), "t".into())],
        },
    ) {
        ShardResponse::CompleteDeleteShareGroupOffsets(d) => d,
        other => panic!("not the deletion's last step: {other:?}"),
    };
    assert_eq!(done.len(), 1);
    assert_eq!((done[0].topic_name.as_str(), done[0].error_code), ("t", 0));
    assert!(group(&r)
        .state_metadata
        .clone()
        .unwrap()
        .deleting
        .is_empty());
    replay_check(&mut r, "deleted");
    // Another subscription initializes t again from scratch.
    beat(&mut r, "b", 0, Some(&["t"]));
    let GroupWork::InitializeShareGroupState(init) = &r.work[0];
    assert_eq!(init.topics[0].partitions[0].start_offset, -1);
}

fn alter(
    r: &mut Replica<GroupCoordinatorShard>,
    group_id: &str,
    topics: &[(&str, &[(i32, i64)])],
) -> ShareOffsetsAlter {
    use kraftd_protocol::messages::alter_share_group_offsets_request::{
        AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
    };
    let topics = topics
        .iter()
        .map(|(name, ps)| AlterShareGroupOffsetsRequestTopic {
            topic_name: name.to_string(),
            partitions: ps
                .iter()
                .map(|(p, o)| AlterShareGroupOffsetsRequestPartition {
                    partition_index: *p,
                    start_offset: *o,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    let request = ShardRequest::AlterShareGroupOffsets {
        group_id: group_id.into(),
        topics,
    };
    match r.ask(&ctx(3), request) {
        ShardResponse::AlterShareGroupOffsets(a) => a,
        other => panic!("not an alter answer: {other:?}"),
    }
}

#[test]
fn alter_offsets_needs_an_empty_share_group_and_initializes_at_the_new_offsets() {
    let mut r = replica(&[("t", 2)]);
    beat(&mut r, "a", 0, Some(&["t"]));
    initialize_all(&mut r);
    let ShareOffsetsAlter::Refused(code, _) = alter(&mut r, GROUP, &[("t", &[(0, 5)])]) else {
        panic!("a non-empty group's offsets were altered");
    };
    assert_eq!(code, ErrorCode::NonEmptyGroup);
    let epoch = group(&r).members["a"].member_epoch;
    beat(&mut r, "a", epoch, None);
    beat(&mut r, "a", -1, None);
    let group_epoch = group(&r).group_epoch;
    // Partition 7 and topic nope do not exist: UNKNOWN_TOPIC_OR_PARTITION each.
    let ShareOffsetsAlter::Accepted { topics, request } = alter(
        &mut r,
        GROUP,
        &[("t", &[(0, 5), (7, 1)]), ("nope", &[(0, 1)])],
    ) else {
        panic!("an empty group's offsets were refused");
    };
    let codes: Vec<(String, i32, i16)> = topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_name.clone(), p.partition_index, p.error_code))
        })
        .collect();
    let unknown = ErrorCode::UnknownTopicOrPartition.code();
    assert_eq!(
        codes,
        vec![
            ("t".into(), 0, 0),
            ("t".into(), 7, unknown),
            ("nope".into(), 0, unknown)
        ]
    );
    assert_eq!(topics[0].topic_id, topic_id("t"));
    let request = request.expect("t-0 is initialized again");
    assert_eq!(request.topics.len(), 1);
    let p = &request.topics[0].partitions;
    assert_eq!(p.len(), 1);
    assert_eq!(
        (p[0].partition, p[0].start_offset, p[0].state_epoch),
        (0, 5, group_epoch)
    );
    let state = group(&r).state_metadata.clone().unwrap();
    assert_eq!(
        state.initializing[&topic_id("t")].partitions,
        BTreeSet::from([0])
    );
    replay_check(&mut r, "altered");
    // The persister's success moves it back to initialized.
    let done: Partitions = [(topic_id("t"), BTreeSet::from([0]))].into();
    r.call(move |s, now| s.share_state_initialized(now, GROUP, &done, &Partitions::new()));
    let state = group(&r).state_metadata.clone().unwrap();
    assert!(state.initializing.is_empty());
    assert_eq!(
        state.initialized[&topic_id("t")].partitions,
        BTreeSet::from([0, 1])
    );
    // A group that does not exist is created by the alter, empty; another type is refused.
    let ShareOffsetsAlter::Accepted { request, .. } = alter(&mut r, "fresh", &[("t", &[(1, 0)])])
    else {
        panic!("a new group's offsets were refused");
    };
    assert_eq!(request.unwrap().topics[0].partitions[0].state_epoch, 0);
    match r.shard.group("fresh") {
        Some(Group::Share(g)) => assert!(g.is_empty()),
        other => panic!("no share group: {other:?}"),
    }
    check(&mut r, &["fresh".to_string()], "created by alter");
}

/// DeleteGroups first records the group's share state as deleting (Kafka's
/// `shareGroupBuildPartitionDeleteRequest`): a persister that fails leaves the group with
/// its topics deleting, and the next DeleteGroups asks for them again.
#[test]
fn delete_groups_records_the_share_state_deleting_before_the_persister_call() {
    let mut r = replica(&[("t", 2), ("u", 1)]);
    beat(&mut r, "a", 0, Some(&["t", "u"]));
    initialize_all(&mut r);
    beat(&mut r, "a", -1, None);
    let to_delete = |r: &mut Replica<GroupCoordinatorShard>| {
        let ShardResponse::ShareGroupsToDelete(d) = r.ask(
            &ctx(2),
            ShardRequest::ShareGroupsToDelete(vec![GROUP.into(), "other".into()]),
        ) else {
            panic!("not the deletion answer");
        };
        d
    };
    let d = to_delete(&mut r);
    assert_eq!(d.len(), 1, "only the share group is answered: {d:?}");
    let request = d[0].1.clone().unwrap().unwrap();
    let asked: Vec<_> = request
        .topics
        .iter()
        .map(|t| (t.topic_id, t.partitions.len()))
        .collect();
    let mut want = vec![(topic_id("t"), 2), (topic_id("u"), 1)];
    want.sort();
    assert_eq!(asked, want);
    let state = group(&r).state_metadata.clone().unwrap();
    assert!(state.initialized.is_empty());
    assert!(state.initializing.is_empty());
    assert_eq!(
        state.deleting,
        BTreeMap::from([(topic_id("t"), "t".into()), (topic_id("u"), "u".into())])
    );
    replay_check(&mut r, "deleting");
    // The persister failed: the group is still there, and asked again, every partition of
    // the deleting topics is asked for again.
    let again = to_delete(&mut r)[0].1.clone().unwrap().unwrap();
    assert_eq!(again, request);
    let ShardResponse::DeleteGroups(d) =
        r.ask(&ctx(2), ShardRequest::DeleteGroups(vec![GROUP.into()]))
    else {
        panic!("not a DeleteGroups answer");
    };
    assert_eq!(d[0].error_code, 0);
    assert!(r.shard.group(GROUP).is_none());
    replay_check(&mut r, "deleted");
}

/// A deleted topic leaves the initialized, initializing and deleting lists of every share
/// group (Kafka's `maybeCleanupShareGroupState`); the others stay.
#[test]
fn a_deleted_topic_leaves_the_share_state_metadata() {
    let mut r = replica(&[("t", 2), ("u", 1), ("v", 1)]);
    beat(&mut r, "a", 0, Some(&["t", "u"]));
    initialize_all(&mut r);
    // v starts initializing, its answer not back yet.
    let epoch = group(&r).members["a"].member_epoch;
    beat(&mut r, "a", epoch, Some(&["t", "u", "v"]));
    r.work.clear();
    let state = group(&r).state_metadata.clone().unwrap();
    assert!(state.initializing.contains_key(&topic_id("v")));
    assert_eq!(state.initialized.len(), 2);
    let before = r.log.entries().len();
    // Nothing gone: nothing written.
    let same: Arc<dyn crate::context::TopicMetadata> = Topics::of(&[("t", 2), ("u", 1), ("v", 1)]);
    r.topics = same.clone();
    r.call(move |s, _| s.on_metadata_update(same));
    assert_eq!(r.log.entries().len(), before);
    // t and v deleted.
    let left: Arc<dyn crate::context::TopicMetadata> = Topics::of(&[("u", 1)]);
    r.topics = left.clone();
    r.call(move |s, _| s.on_metadata_update(left));
    let state = group(&r).state_metadata.clone().unwrap();
    assert_eq!(
        state.initialized.keys().collect::<Vec<_>>(),
        vec![&topic_id("u")]
    );
    assert!(state.initializing.is_empty());
    assert!(state.deleting.is_empty());
    replay_check(&mut r, "cleaned up");
}
