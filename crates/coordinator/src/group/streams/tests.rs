//! Streams group tests, sans IO, through the shard as its runtime drives it ([`Replica`]):
//! topologies against missing and present topics, the internal topics to create, members
//! joining (a task revoked from one member before another gets it), leaving, expiring, the
//! initial rebalance delay; after each step a shard loaded from the log holds the same group.

use std::collections::BTreeMap;

use kraftd_protocol::messages::streams_group_heartbeat_request::{
    KeyValue, Subtopology, TaskIds, TopicInfo, Topology,
};
use kraftd_protocol::messages::{StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse};
use kraftd_protocol::ErrorCode;

use super::topology::status;
use super::*;
use crate::group::config::{GroupCoordinatorConfig, StreamsGroupConfig};
use crate::group::shard::{Group, GroupCoordinatorShard, ShardRequest, ShardResponse};
use crate::testing::group::Topics;
use crate::testing::{ctx, Replica};

const GROUP: &str = "app";

fn replica(topics: &[(&str, i32)], delay_ms: i32) -> Replica<GroupCoordinatorShard> {
    let config = GroupCoordinatorConfig {
        streams: StreamsGroupConfig {
            initial_rebalance_delay_ms: delay_ms,
            // Every heartbeat may compute an assignment unless a test says otherwise.
            assignment_interval_ms: 0,
            ..Default::default()
        },
        ..Default::default()
    };
    Replica::new(0, 0, config, Topics::of(topics), 1_000)
}

/// A word count's topology: `0` reads `in` and writes the repartition topic `1` reads; `1`
/// keeps a store with a changelog.
fn topology() -> Topology {
    let info = |name: &str, configs: &[(&str, &str)]| TopicInfo {
        name: name.into(),
        topic_configs: configs
            .iter()
            .map(|(k, v)| KeyValue {
                key: k.to_string(),
                value: v.to_string(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    Topology {
        epoch: 0,
        subtopologies: vec![
            Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec!["in".into()],
                repartition_sink_topics: vec!["app-rep".into()],
                ..Default::default()
            },
            Subtopology {
                subtopology_id: "1".into(),
                repartition_source_topics: vec![info("app-rep", &[("cleanup.policy", "delete")])],
                state_changelog_topics: vec![info("app-log", &[("cleanup.policy", "compact")])],
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

fn ids(t: &[(&str, &[i32])]) -> Vec<TaskIds> {
    t.iter()
        .map(|(s, p)| TaskIds {
            subtopology_id: s.to_string(),
            partitions: p.to_vec(),
            ..Default::default()
        })
        .collect()
}

/// A heartbeat of `member` at `epoch` (a join at 0, with the topology) reporting `owned`
/// active tasks (`None`: not reported).
fn request(member: &str, epoch: i32, owned: Option<Vec<TaskIds>>) -> StreamsGroupHeartbeatRequest {
    let join = epoch == 0;
    StreamsGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: if join { 30_000 } else { -1 },
        topology: join.then(topology),
        process_id: join.then(|| format!("process-{member}")),
        standby_tasks: (owned.is_some() || join).then(Vec::new),
        warmup_tasks: (owned.is_some() || join).then(Vec::new),
        active_tasks: owned.or_else(|| join.then(Vec::new)),
        ..Default::default()
    }
}

/// The shard's answer to `request`.
fn send(
    r: &mut Replica<GroupCoordinatorShard>,
    request: StreamsGroupHeartbeatRequest,
) -> (StreamsGroupHeartbeatResponse, Vec<String>) {
    match r.ask(&ctx(1), ShardRequest::StreamsGroupHeartbeat(request)) {
        ShardResponse::StreamsGroupHeartbeat(res) => (
            res.response,
            res.topics_to_create
                .into_iter()
                .map(|t| format!("{}/{}", t.name, t.num_partitions))
                .collect(),
        ),
        other => panic!("not a heartbeat answer: {other:?}"),
    }
}

/// One heartbeat; `owned` is the active tasks the member reports (`None`: not reported).
fn beat(
    r: &mut Replica<GroupCoordinatorShard>,
    member: &str,
    epoch: i32,
    owned: Option<&[(&str, &[i32])]>,
) -> (StreamsGroupHeartbeatResponse, Vec<String>) {
    send(r, request(member, epoch, owned.map(ids)))
}

fn group(r: &Replica<GroupCoordinatorShard>) -> &StreamsGroup {
    match r.shard.group(GROUP) {
        Some(Group::Streams(g)) => g,
        other => panic!("no streams group: {other:?}"),
    }
}

/// A shard loaded from the log holds the same group.
fn replay_check(r: &Replica<GroupCoordinatorShard>) {
    let loaded = r.reload();
    match loaded.group(GROUP) {
        Some(Group::Streams(g)) => assert_eq!(g, group(r), "replayed group differs"),
        other => panic!("the log holds no streams group: {other:?}"),
    }
}

fn codes(resp: &StreamsGroupHeartbeatResponse) -> Vec<i8> {
    resp.status
        .iter()
        .flatten()
        .map(|s| s.status_code)
        .collect()
}

fn tasks(resp: &StreamsGroupHeartbeatResponse) -> BTreeMap<String, Vec<i32>> {
    resp.active_tasks
        .iter()
        .flatten()
        .map(|t| (t.subtopology_id.clone(), t.partitions.clone()))
        .collect()
}

#[test]
fn missing_source_topics_then_internal_topics_then_tasks() {
    let mut r = replica(&[], 0);
    let (resp, create) = beat(&mut r, "a", 0, None);
    assert_eq!(resp.error_code, 0);
    assert_eq!(codes(&resp), vec![status::MISSING_SOURCE_TOPICS]);
    assert!(create.is_empty());
    assert_eq!(group(&r).state(), StreamsGroupState::NotReady);
    assert!(resp.member_epoch > 0);
    replay_check(&r);

    // The source topic appears: the internal topics are asked for with its partitions.
    r.shard.on_metadata_update(Topics::of(&[("in", 3)]));
    let (resp, create) = beat(&mut r, "a", resp.member_epoch, None);
    assert_eq!(codes(&resp), vec![status::MISSING_INTERNAL_TOPICS]);
    assert_eq!(create, vec!["app-log/3", "app-rep/3"]);
    assert!(tasks(&resp).is_empty());

    // They exist: the member gets every task at a new epoch.
    r.shard
        .on_metadata_update(Topics::of(&[("in", 3), ("app-rep", 3), ("app-log", 3)]));
    let (resp, create) = beat(&mut r, "a", resp.member_epoch, None);
    assert!(create.is_empty());
    assert!(codes(&resp).is_empty());
    assert_eq!(
        tasks(&resp),
        BTreeMap::from([("0".into(), vec![0, 1, 2]), ("1".into(), vec![0, 1, 2])])
    );
    assert_eq!(group(&r).state(), StreamsGroupState::Stable);
    replay_check(&r);
}

#[test]
fn existing_internal_topic_with_other_partitions_is_reported() {
    let mut r = replica(&[("in", 3), ("app-rep", 3), ("app-log", 2)], 0);
    let (resp, create) = beat(&mut r, "a", 0, None);
    assert_eq!(codes(&resp), vec![status::INCORRECTLY_PARTITIONED_TOPICS]);
    assert!(create.is_empty());
}

#[test]
fn a_task_is_revoked_before_another_member_gets_it() {
    let mut r = replica(&[("in", 2), ("app-rep", 2), ("app-log", 2)], 0);
    let (a, _) = beat(&mut r, "a", 0, None);
    assert_eq!(tasks(&a).values().map(Vec::len).sum::<usize>(), 4);
    let all: &[(&str, &[i32])] = &[("0", &[0, 1]), ("1", &[0, 1])];
    let (a, _) = beat(&mut r, "a", a.member_epoch, Some(all));

    // b joins: it gets nothing while a still runs what it should give up.
    let (b, _) = beat(&mut r, "b", 0, None);
    assert!(tasks(&b).is_empty());
    let (a2, _) = beat(&mut r, "a", a.member_epoch, Some(all));
    assert_eq!(
        a2.member_epoch, a.member_epoch,
        "a stays at its epoch while revoking"
    );
    let kept = tasks(&a2);
    assert_eq!(kept.values().map(Vec::len).sum::<usize>(), 2);
    let (b, _) = beat(&mut r, "b", b.member_epoch, Some(&[]));
    assert!(tasks(&b).is_empty(), "b waits for a's tasks");
    assert_eq!(group(&r).state(), StreamsGroupState::Reconciling);
    replay_check(&r);

    // a reports only what it kept: it moves on, and b gets the rest.
    let kept_ids: Vec<(String, Vec<i32>)> = kept.into_iter().collect();
    let kept_ref: Vec<(&str, &[i32])> = kept_ids
        .iter()
        .map(|(s, p)| (s.as_str(), p.as_slice()))
        .collect();
    let (a3, _) = beat(&mut r, "a", a2.member_epoch, Some(&kept_ref));
    assert!(a3.member_epoch > a2.member_epoch);
    let (b2, _) = beat(&mut r, "b", b.member_epoch, Some(&[]));
    assert_eq!(tasks(&b2).values().map(Vec::len).sum::<usize>(), 2);
    assert_eq!(group(&r).state(), StreamsGroupState::Stable);
    replay_check(&r);

    // a leaves: b gets everything; a stale epoch is fenced.
    let (left, _) = beat(&mut r, "a", -1, None);
    assert_eq!(left.member_epoch, -1);
    let (b3, _) = beat(&mut r, "b", b2.member_epoch, None);
    assert_eq!(tasks(&b3).values().map(Vec::len).sum::<usize>(), 4);
    let (fenced, _) = beat(&mut r, "b", b3.member_epoch + 5, None);
    assert_eq!(fenced.error_code, ErrorCode::FencedMemberEpoch.code());
    replay_check(&r);
}

#[test]
fn session_expiry_fences_and_the_initial_delay_holds_the_first_assignment() {
    let mut r = replica(&[("in", 2), ("app-rep", 2), ("app-log", 2)], 3_000);
    let (a, _) = beat(&mut r, "a", 0, None);
    assert_eq!(codes(&a), vec![status::ASSIGNMENT_DELAYED]);
    assert!(a.member_epoch > 0, "a delayed member still gets an epoch");
    assert!(tasks(&a).is_empty());
    let (b, _) = beat(&mut r, "b", 0, None);
    assert!(tasks(&b).is_empty());
    r.advance(3_000);
    let (a, _) = beat(&mut r, "a", a.member_epoch, Some(&[]));
    let (b, _) = beat(&mut r, "b", b.member_epoch, Some(&[]));
    assert_eq!(tasks(&a).values().map(Vec::len).sum::<usize>(), 2);
    assert_eq!(tasks(&b).values().map(Vec::len).sum::<usize>(), 2);
    replay_check(&r);

    // b stops heartbeating: after its session it is fenced and a gets its tasks.
    for _ in 0..10 {
        r.advance(5_000);
        let epoch = group(&r).members["a"].member_epoch;
        let _ = beat(&mut r, "a", epoch, None);
    }
    assert!(!group(&r).members.contains_key("b"));
    assert_eq!(
        group(&r).members["a"]
            .assigned
            .active_tasks()
            .values()
            .map(|p| p.len())
            .sum::<usize>(),
        4
    );
    replay_check(&r);
}

#[test]
fn one_members_shutdown_request_reaches_every_member() {
    let mut r = replica(&[("in", 2), ("app-rep", 2), ("app-log", 2)], 0);
    let _ = beat(&mut r, "a", 0, None);
    let _ = beat(&mut r, "b", 0, None);
    let request = StreamsGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: "a".into(),
        member_epoch: group(&r).members["a"].member_epoch,
        rebalance_timeout_ms: -1,
        shutdown_application: true,
        ..Default::default()
    };
    let ShardResponse::StreamsGroupHeartbeat(a) =
        r.ask(&ctx(1), ShardRequest::StreamsGroupHeartbeat(request))
    else {
        panic!("not a heartbeat answer")
    };
    assert!(codes(&a.response).contains(&status::SHUTDOWN_APPLICATION));
    // b did not ask, and hears it on its next heartbeat (Kafka's shutdownRequestMemberId).
    let epoch = group(&r).members["b"].member_epoch;
    let (b, _) = beat(&mut r, "b", epoch, None);
    assert!(codes(&b).contains(&status::SHUTDOWN_APPLICATION), "{b:?}");
    assert!(b
        .status
        .as_ref()
        .unwrap()
        .iter()
        .any(|s| s.status_detail.contains("member a ")));
}

#[test]
fn a_coordinator_loaded_during_the_initial_delay_still_assigns() {
    let mut r = replica(&[("in", 2), ("app-rep", 2), ("app-log", 2)], 3_000);
    let (a, _) = beat(&mut r, "a", 0, None);
    assert_eq!(codes(&a), vec![status::ASSIGNMENT_DELAYED]);
    assert!(tasks(&a).is_empty());
    // The coordinator moves before the delay ends; the old one's timer is gone with it.
    r.shard = r.reload();
    r.advance(1);
    let epoch = group(&r).members["a"].member_epoch;
    let (a, _) = beat(&mut r, "a", epoch, Some(&[]));
    assert_eq!(tasks(&a).values().map(Vec::len).sum::<usize>(), 4);
    replay_check(&r);
}

#[test]
fn the_assignment_interval_delays_a_new_target_assignment() {
    let mut r = replica(&[("in", 2), ("app-rep", 2), ("app-log", 2)], 0);
    r.shard.config = std::sync::Arc::new(GroupCoordinatorConfig {
        streams: StreamsGroupConfig {
            initial_rebalance_delay_ms: 0,
            assignment_interval_ms: 1_000,
            ..Default::default()
        },
        ..Default::default()
    });
    let (a, _) = beat(&mut r, "a", 0, None);
    assert!(
        codes(&a).is_empty(),
        "the first assignment is computed at once"
    );
    assert_eq!(tasks(&a).values().map(Vec::len).sum::<usize>(), 4);
    let (b, _) = beat(&mut r, "b", 0, None);
    assert_eq!(codes(&b), vec![status::ASSIGNMENT_DELAYED]);
    assert_eq!(group(&r).state(), StreamsGroupState::Assigning);
    r.advance(1_000);
    let all: &[(&str, &[i32])] = &[("0", &[0, 1]), ("1", &[0, 1])];
    let (a2, _) = beat(&mut r, "a", a.member_epoch, Some(all));
    assert!(codes(&a2).is_empty());
    assert_eq!(tasks(&a2).values().map(Vec::len).sum::<usize>(), 2);
    replay_check(&r);
}

/// A heartbeat of a member with an `application.server` endpoint, knowing the group's
/// endpoint information at `endpoint_epoch`.
fn beat_with_endpoint(
    r: &mut Replica<GroupCoordinatorShard>,
    member: &str,
    epoch: i32,
    owned: Option<Vec<TaskIds>>,
    endpoint_epoch: i32,
) -> StreamsGroupHeartbeatResponse {
    use kraftd_protocol::messages::streams_group_heartbeat_request::Endpoint;
    let mut request = request(member, epoch, owned);
    request.user_endpoint = (epoch == 0).then(|| Endpoint {
        host: format!("host-{member}"),
        port: 7070,
        ..Default::default()
    });
    request.endpoint_information_epoch = endpoint_epoch;
    send(r, request).0
}

/// Topic partitions as `(topic, partitions)`.
type TopicPartitions = Vec<(String, Vec<i32>)>;

/// The map as `host → (active topic partitions, standby topic partitions)`.
fn endpoint_map(
    resp: &StreamsGroupHeartbeatResponse,
) -> BTreeMap<String, (TopicPartitions, TopicPartitions)> {
    let tps =
        |l: &[kraftd_protocol::messages::streams_group_heartbeat_response::TopicPartition]| {
            l.iter()
                .map(|tp| (tp.topic.clone(), tp.partitions.clone()))
                .collect::<Vec<_>>()
        };
    resp.partitions_by_user_endpoint
        .iter()
        .flatten()
        .map(|e| {
            (
                format!("{}:{}", e.user_endpoint.host, e.user_endpoint.port),
                (tps(&e.active_partitions), tps(&e.standby_partitions)),
            )
        })
        .collect()
}

#[test]
fn members_learn_every_endpoint_and_its_partitions() {
    let mut r = replica(&[("in", 2), ("app-rep", 2), ("app-log", 2)], 0);
    // The first member of a new group: its own entry, at endpoint epoch 0 (Kafka's new
    // group is not kept).
    let a = beat_with_endpoint(&mut r, "a", 0, None, 0);
    assert_eq!(a.endpoint_information_epoch, 0);
    let map = endpoint_map(&a);
    assert_eq!(
        map["host-a:7070"].0,
        vec![
            ("in".to_string(), vec![0, 1]),
            ("app-rep".to_string(), vec![0, 1])
        ]
    );
    let all = Some(ids(&[("0", &[0, 1]), ("1", &[0, 1])]));
    let a = beat_with_endpoint(&mut r, "a", a.member_epoch, all.clone(), 0);
    assert!(a.partitions_by_user_endpoint.is_none(), "nothing changed");

    // b joins and both walk to the shared assignment, learning newer epochs on the way.
    let mut b = beat_with_endpoint(&mut r, "b", 0, None, 0);
    let mut a_owned = all;
    let mut b_owned: Option<Vec<TaskIds>> = Some(Vec::new());
    let mut a = a;
    let mut epochs = (a.endpoint_information_epoch, b.endpoint_information_epoch);
    for _ in 0..6 {
        a = beat_with_endpoint(&mut r, "a", a.member_epoch, a_owned.clone(), epochs.0);
        if let Some(t) = &a.active_tasks {
            a_owned = Some(
                t.iter()
                    .map(|t| TaskIds {
                        subtopology_id: t.subtopology_id.clone(),
                        partitions: t.partitions.clone(),
                        ..Default::default()
                    })
                    .collect(),
            );
        }
        epochs.0 = a.endpoint_information_epoch;
        b = beat_with_endpoint(&mut r, "b", b.member_epoch, b_owned.clone(), epochs.1);
        if let Some(t) = &b.active_tasks {
            b_owned = Some(
                t.iter()
                    .map(|t| TaskIds {
                        subtopology_id: t.subtopology_id.clone(),
                        partitions: t.partitions.clone(),
                        ..Default::default()
                    })
                    .collect(),
            );
        }
        epochs.1 = b.endpoint_information_epoch;
    }
    assert_eq!(group(&r).state(), StreamsGroupState::Stable);
    assert!(epochs.0 > 0);
    assert_eq!(epochs.0, epochs.1);

    // A member behind the epoch gets the whole map: both endpoints, every input partition
    // active once.
    let fresh = beat_with_endpoint(&mut r, "a", a.member_epoch, None, 0);
    let map = endpoint_map(&fresh);
    assert_eq!(map.len(), 2);
    let mut active: Vec<(String, i32)> = map
        .values()
        .flat_map(|(a, _)| {
            a.iter()
                .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p)))
        })
        .collect();
    active.sort();
    assert_eq!(
        active,
        vec![
            ("app-rep".to_string(), 0),
            ("app-rep".to_string(), 1),
            ("in".to_string(), 0),
            ("in".to_string(), 1)
        ]
    );
    // At the current epoch: no map.
    let current = beat_with_endpoint(&mut r, "b", b.member_epoch, None, epochs.1);
    assert!(current.partitions_by_user_endpoint.is_none());
    replay_check(&r);
}

/// A heartbeat of a static member (`group.instance.id` = `instance`).
fn static_beat(
    r: &mut Replica<GroupCoordinatorShard>,
    member: &str,
    instance: &str,
    epoch: i32,
    owned: Option<&[(&str, &[i32])]>,
) -> StreamsGroupHeartbeatResponse {
    let mut request = request(member, epoch, owned.map(ids));
    request.instance_id = Some(instance.into());
    if epoch == 0 {
        request.process_id = Some(format!("process-{instance}"));
    }
    send(r, request).0
}

#[test]
fn a_static_member_leaves_and_comes_back_to_its_tasks_without_a_rebalance() {
    let mut r = replica(&[("in", 2), ("app-rep", 2), ("app-log", 2)], 0);
    let a = static_beat(&mut r, "a", "i-a", 0, None);
    let b = static_beat(&mut r, "b", "i-b", 0, None);
    let mut epochs = (a.member_epoch, b.member_epoch);
    let mut owned: BTreeMap<&str, Vec<(String, Vec<i32>)>> = BTreeMap::new();
    for _ in 0..4 {
        for (m, i) in [("a", "i-a"), ("b", "i-b")] {
            let mine: Vec<(&str, &[i32])> = owned
                .get(m)
                .map(|t| t.iter().map(|(s, p)| (s.as_str(), p.as_slice())).collect())
                .unwrap_or_default();
            let epoch = if m == "a" { epochs.0 } else { epochs.1 };
            let resp = static_beat(&mut r, m, i, epoch, Some(&mine));
            assert_eq!(resp.error_code, 0, "{resp:?}");
            if resp.active_tasks.is_some() {
                owned.insert(m, tasks(&resp).into_iter().collect());
            }
            if m == "a" {
                epochs.0 = resp.member_epoch;
            } else {
                epochs.1 = resp.member_epoch;
            }
        }
    }
    assert_eq!(group(&r).state(), StreamsGroupState::Stable);
    let group_epoch = group(&r).group_epoch;
    let a_tasks = group(&r).members["a"].assigned.active_tasks();
    assert!(!a_tasks.is_empty());

    // Leaving with -2: a stays, at epoch -2, its active tasks at epoch 0.
    let left = static_beat(&mut r, "a", "i-a", -2, None);
    assert_eq!((left.error_code, left.member_epoch), (0, -2));
    let a = &group(&r).members["a"];
    assert_eq!(a.member_epoch, -2);
    assert!(a
        .assigned
        .active
        .values()
        .flat_map(|p| p.values())
        .all(|e| *e == 0));
    replay_check(&r);

    // Another member id under the instance id takes a's place and tasks, no new epoch.
    let back = static_beat(&mut r, "a2", "i-a", 0, None);
    assert_eq!(back.error_code, 0, "{back:?}");
    assert_eq!(
        tasks(&back),
        a_tasks
            .iter()
            .map(|(s, p)| (s.clone(), p.iter().copied().collect()))
            .collect()
    );
    assert_eq!(group(&r).group_epoch, group_epoch, "no rebalance");
    assert!(!group(&r).members.contains_key("a"));
    assert_eq!(
        group(&r).members["a2"].member_epoch,
        group(&r).assignment_epoch
    );
    assert_eq!(group(&r).target_assignment["a2"].active, a_tasks);
    replay_check(&r);

    // The instance id is owned now: a third member id cannot join with it.
    let third = static_beat(&mut r, "a3", "i-a", 0, None);
    assert_eq!(third.error_code, ErrorCode::UnreleasedInstanceId.code());
    // The old member id under the instance id is fenced; an unknown instance id is unknown.
    let old = static_beat(&mut r, "a", "i-a", back.member_epoch, None);
    assert_eq!(old.error_code, ErrorCode::FencedInstanceId.code());
    assert_eq!(
        old.error_message.as_deref(),
        Some("Static member a with instance id i-a was fenced by member a2.")
    );
    let unknown = static_beat(&mut r, "x", "i-x", -2, None);
    assert_eq!(unknown.error_code, ErrorCode::UnknownMemberId.code());
    assert_eq!(
        unknown.error_message.as_deref(),
        Some("Instance id i-x is unknown.")
    );

    // Leaving with -1 and an instance id fences the member.
    let gone = static_beat(&mut r, "a2", "i-a", -1, None);
    assert_eq!((gone.error_code, gone.member_epoch), (0, -1));
    assert!(!group(&r).members.contains_key("a2"));
    replay_check(&r);
}
