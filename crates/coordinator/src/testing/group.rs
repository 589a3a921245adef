//! The replay check for the group coordinator: what a client can read of a
//! [`GroupCoordinatorShard`] — ListGroups, DescribeGroups and ConsumerGroupDescribe of every
//! group, ShareGroupDescribe (with a share group's target assignment and state metadata), OffsetFetch of all topics with and without `require_stable` — and seeded random
//! clients (classic members joining, syncing, heartbeating, leaving and committing; KIP-848
//! members heartbeating over a few topics; simple-group commits; transactional offset
//! commits ended by a commit or abort marker; OffsetDelete and DeleteGroups; time passing)
//! that drive a shard while the log of everything it wrote is kept.
//!
//! A classic group in the middle of a rebalance (PreparingRebalance, CompletingRebalance) is
//! not compared: a rebalance in flight is not in the log, in Kafka either (a loaded group is
//! Stable with the members of its last generation, or Empty), so such a group is left out of
//! both sides until it settles.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kraftd_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kraftd_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kraftd_protocol::messages::leave_group_request::MemberIdentity;
use kraftd_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kraftd_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kraftd_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kraftd_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kraftd_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kraftd_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerProtocolSubscription, HeartbeatRequest,
    JoinGroupRequest, LeaveGroupRequest, OffsetCommitRequest, OffsetDeleteRequest,
    SyncGroupRequest, TxnOffsetCommitRequest,
};
use kraftd_protocol::{ErrorCode, Uuid};

use super::{check_replay, ctx, line, query, Replica, Rng};
use crate::context::TopicMetadata;
use crate::group::config::GroupCoordinatorConfig;
use crate::group::shard::{Group, GroupCoordinatorShard, ShardRequest, ShardResponse};

/// A test topic's id: its name's bytes.
pub fn topic_id(name: &str) -> Uuid {
    let mut b = [0u8; 16];
    b[0] = 1;
    for (i, c) in name.bytes().take(15).enumerate() {
        b[i + 1] = c;
    }
    Uuid(b)
}

/// A cluster's topics by name (partition counts), with [`topic_id`] ids.
#[derive(Debug, Default, Clone)]
pub struct Topics(pub BTreeMap<String, i32>);

impl Topics {
    pub fn of(topics: &[(&str, i32)]) -> Arc<Self> {
        Arc::new(Topics(
            topics.iter().map(|(n, p)| (n.to_string(), *p)).collect(),
        ))
    }
}

impl TopicMetadata for Topics {
    fn topic_by_name(&self, name: &str) -> Option<(Uuid, i32)> {
        self.0.get(name).map(|p| (topic_id(name), *p))
    }
    fn topic_by_id(&self, id: Uuid) -> Option<(String, i32)> {
        self.0
            .iter()
            .find(|(n, _)| topic_id(n) == id)
            .map(|(n, p)| (n.clone(), *p))
    }
    fn topic_names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

/// Classic groups in the middle of a rebalance on `shard` (not in the log; see the module
/// docs).
pub fn rebalancing(shard: &GroupCoordinatorShard, ids: &[String]) -> BTreeSet<String> {
    ids.iter()
        .filter(|id| {
            matches!(shard.group(id), Some(Group::Classic(g))
                if matches!(g.state_name(), "PreparingRebalance" | "CompletingRebalance"))
        })
        .cloned()
        .collect()
}

/// What clients can read of `shard` about the groups `ids` (besides ListGroups, which lists
/// every group), leaving out the groups in `skip`. Lists whose order is not part of the
/// protocol are sorted.
pub fn observe(
    shard: &mut GroupCoordinatorShard,
    now: i64,
    ids: &[String],
    skip: &BTreeSet<String>,
) -> Vec<String> {
    let mut lines = Vec::new();
    let ShardResponse::ListGroups(listed) = query(
        shard,
        now,
        &ctx(5),
        ShardRequest::ListGroups {
            states: Vec::new(),
            types: Vec::new(),
        },
    ) else {
        panic!("not a ListGroups answer");
    };
    let listed: Vec<_> = listed
        .into_iter()
        .filter(|g| !skip.contains(&g.group_id))
        .collect();
    lines.push(line("ListGroups", &listed));
    for id in ids.iter().filter(|id| !skip.contains(*id)) {
        let ShardResponse::DescribeGroups(mut described) = query(
            shard,
            now,
            &ctx(5),
            ShardRequest::DescribeGroups(vec![id.clone()]),
        ) else {
            panic!("not a DescribeGroups answer");
        };
        for g in &mut described {
            g.members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
        }
        lines.push(line(&format!("DescribeGroups {id}"), &described));
        let ShardResponse::ConsumerGroupDescribe(mut described) = query(
            shard,
            now,
            &ctx(0),
            ShardRequest::ConsumerGroupDescribe(vec![id.clone()]),
        ) else {
            panic!("not a ConsumerGroupDescribe answer");
        };
        for g in &mut described {
            g.members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
        }
        lines.push(line(&format!("ConsumerGroupDescribe {id}"), &described));
        let ShardResponse::ShareGroupDescribe(described) = query(
            shard,
            now,
            &ctx(1),
            ShardRequest::ShareGroupDescribe(vec![id.clone()]),
        ) else {
            panic!("not a ShareGroupDescribe answer");
        };
        lines.push(line(&format!("ShareGroupDescribe {id}"), &described));
        if let Some(Group::Share(g)) = shard.group(id) {
            // What the next heartbeats depend on beyond what describe shows.
            lines.push(line(&format!("share target {id}"), &g.target_assignment));
            let state = g.state_metadata.as_ref().map(|s| {
                let parts = |m: &BTreeMap<Uuid, crate::group::share::InitMapValue>| {
                    m.iter()
                        .map(|(t, v)| (*t, v.partitions.clone()))
                        .collect::<Vec<_>>()
                };
                (
                    parts(&s.initializing),
                    parts(&s.initialized),
                    s.deleting.clone(),
                )
            });
            lines.push(line(&format!("share state {id}"), &state));
            let previous: Vec<_> = g
                .members
                .values()
                .map(|m| (m.member_id.clone(), m.previous_member_epoch))
                .collect();
            lines.push(line(&format!("share previous epochs {id}"), &previous));
        }
        for require_stable in [false, true] {
            let ShardResponse::OffsetFetch(mut fetched) = query(
                shard,
                now,
                &ctx(8),
                ShardRequest::OffsetFetch {
                    group: OffsetFetchRequestGroup {
                        group_id: id.clone(),
                        member_id: None,
                        member_epoch: -1,
                        topics: None,
                        ..Default::default()
                    },
                    require_stable,
                },
            ) else {
                panic!("not an OffsetFetch answer");
            };
            fetched.topics.sort_by(|a, b| a.name.cmp(&b.name));
            for t in &mut fetched.topics {
                t.partitions.sort_by_key(|p| p.partition_index);
            }
            lines.push(line(
                &format!("OffsetFetch {id} require_stable={require_stable}"),
                &fetched,
            ));
        }
    }
    lines
}

/// [`check_replay`] for a group shard: groups `ids` compared, those rebalancing on the live
/// side left out. Returns how many groups were compared.
pub fn check(replica: &mut Replica<GroupCoordinatorShard>, ids: &[String], label: &str) -> usize {
    let skip = rebalancing(&replica.shard, ids);
    check_replay(replica, label, |shard, now| observe(shard, now, ids, &skip));
    ids.len() - skip.len()
}

/// A consumer's subscription metadata (ConsumerProtocolSubscription v1 with its version).
pub fn subscription(topics: &[&str]) -> Bytes {
    let s = ConsumerProtocolSubscription {
        topics: topics.iter().map(|t| t.to_string()).collect(),
        ..Default::default()
    };
    let mut out = BytesMut::new();
    out.put_i16(1);
    out.extend_from_slice(
        &kraftd_protocol::Message::to_bytes(&s, 1).expect("a subscription encodes"),
    );
    out.freeze()
}

/// The topics the random clients use.
pub const TOPICS: &[(&str, i32)] = &[("a", 3), ("b", 2), ("c", 4)];
const CLASSIC: &[&str] = &["c0", "c1"];
const CONSUMER: &[&str] = &["k0", "k1"];
const SIMPLE: &str = "s0";
const PRODUCERS: &[i64] = &[100, 101, 102];
const SESSION_MS: i32 = 10_000;
const REBALANCE_MS: i32 = 20_000;

/// Every group id the random clients use.
pub fn group_ids() -> Vec<String> {
    CLASSIC
        .iter()
        .chain(CONSUMER)
        .chain(std::iter::once(&SIMPLE))
        .map(|s| s.to_string())
        .collect()
}

/// A classic member as a client sees itself.
#[derive(Debug, Clone, Default)]
struct ClassicClient {
    group: &'static str,
    member_id: String,
    generation: i32,
    /// The members of its generation when it leads it.
    led: Option<Vec<String>>,
    join: Option<u64>,
    sync: Option<u64>,
}

/// A KIP-848 member as a client sees itself.
#[derive(Debug, Clone, Default)]
struct ConsumerClient {
    group: &'static str,
    member_id: String,
    epoch: i32,
    owned: BTreeMap<Uuid, Vec<i32>>,
}

/// The random clients of one case.
#[derive(Debug)]
pub struct Clients {
    pub replica: Replica<GroupCoordinatorShard>,
    rng: Rng,
    classic: Vec<ClassicClient>,
    consumer: Vec<ConsumerClient>,
    /// Producers with a transactional offset commit not yet ended by a marker.
    open: BTreeMap<i64, i16>,
    /// Groups compared, over every check of the case.
    pub compared: usize,
    pub checks: usize,
}

impl Clients {
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let config = GroupCoordinatorConfig {
            classic_initial_rebalance_delay_ms: if rng.chance(50) { 0 } else { 3_000 },
            classic_group_max_size: 4,
            offsets_retention_ms: 120_000,
            offsets_retention_check_interval_ms: 20_000,
            max_batch_bytes: 64 * 1024,
            ..Default::default()
        };
        let replica = Replica::new(0, 1, config, Topics::of(TOPICS), 1_000);
        let mut classic = Vec::new();
        for (g, group) in CLASSIC.iter().enumerate() {
            let _ = g;
            for _ in 0..3 {
                classic.push(ClassicClient {
                    group,
                    ..Default::default()
                });
            }
        }
        let mut consumer = Vec::new();
        for (g, group) in CONSUMER.iter().enumerate() {
            for i in 0..3 {
                consumer.push(ConsumerClient {
                    group,
                    member_id: format!("member-{g}-{i}"),
                    ..Default::default()
                });
            }
        }
        Clients {
            replica,
            rng,
            classic,
            consumer,
            open: BTreeMap::new(),
            compared: 0,
            checks: 0,
        }
    }

    /// `steps` random steps, the replay check every `every` steps and at the end.
    pub fn run(&mut self, seed: u64, steps: usize, every: usize) {
        let ids = group_ids();
        for step in 0..steps {
            self.step();
            if (step + 1) % every == 0 || step + 1 == steps {
                self.compared +=
                    check(&mut self.replica, &ids, &format!("seed {seed} step {step}"));
                self.checks += 1;
            }
        }
    }

    /// One random client action or some time passing.
    pub fn step(&mut self) {
        match self.rng.below(100) {
            0..=14 => self.classic_join(),
            15..=24 => self.classic_sync(),
            25..=31 => self.classic_heartbeat(),
            32..=35 => self.classic_leave(),
            36..=41 => self.commit(),
            42..=59 => self.consumer_heartbeat(),
            60..=67 => self.txn_commit(),
            68..=73 => self.marker(),
            74..=76 => self.offset_delete(),
            77..=78 => self.delete_group(),
            _ => self.advance(),
        }
        self.collect();
    }

    fn advance(&mut self) {
        let ms = if self.rng.chance(15) {
            10_000 + self.rng.below(60_000) as i64
        } else {
            self.rng.below(4_000) as i64
        };
        self.replica.advance(ms);
    }

    fn classic_join(&mut self) {
        let i = self.rng.below(self.classic.len());
        let c = &self.classic[i];
        if c.join.is_some() {
            return;
        }
        let topics: Vec<&str> = TOPICS
            .iter()
            .map(|(t, _)| *t)
            .filter(|_| self.rng.chance(60))
            .collect();
        let request = JoinGroupRequest {
            group_id: c.group.into(),
            session_timeout_ms: SESSION_MS,
            rebalance_timeout_ms: REBALANCE_MS,
            member_id: c.member_id.clone(),
            protocol_type: "consumer".into(),
            protocols: vec![JoinGroupRequestProtocol {
                name: "range".into(),
                metadata: subscription(&topics),
                ..Default::default()
            }],
            ..Default::default()
        };
        let id = self.replica.send(&ctx(5), ShardRequest::JoinGroup(request));
        self.classic[i].join = Some(id);
    }

    fn classic_sync(&mut self) {
        let i = self.rng.below(self.classic.len());
        let c = &self.classic[i];
        if c.generation <= 0 || c.sync.is_some() || c.join.is_some() {
            return;
        }
        let assignments = c
            .led
            .iter()
            .flatten()
            .map(|m| SyncGroupRequestAssignment {
                member_id: m.clone(),
                assignment: Bytes::from(m.clone().into_bytes()),
                ..Default::default()
            })
            .collect();
        let request = SyncGroupRequest {
            group_id: c.group.into(),
            generation_id: c.generation,
            member_id: c.member_id.clone(),
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments,
            ..Default::default()
        };
        let id = self.replica.send(&ctx(5), ShardRequest::SyncGroup(request));
        self.classic[i].sync = Some(id);
    }

    fn classic_heartbeat(&mut self) {
        let i = self.rng.below(self.classic.len());
        let c = &self.classic[i];
        if c.member_id.is_empty() {
            return;
        }
        let request = HeartbeatRequest {
            group_id: c.group.into(),
            generation_id: c.generation,
            member_id: c.member_id.clone(),
            ..Default::default()
        };
        let ShardResponse::Heartbeat(r) =
            self.replica.ask(&ctx(4), ShardRequest::Heartbeat(request))
        else {
            panic!("not a Heartbeat answer");
        };
        if r.error_code == ErrorCode::UnknownMemberId.code() {
            self.classic[i].member_id.clear();
            self.classic[i].generation = 0;
        }
    }

    fn classic_leave(&mut self) {
        let i = self.rng.below(self.classic.len());
        let c = &self.classic[i];
        if c.member_id.is_empty() {
            return;
        }
        let request = LeaveGroupRequest {
            group_id: c.group.into(),
            members: vec![MemberIdentity {
                member_id: c.member_id.clone(),
                ..Default::default()
            }],
            ..Default::default()
        };
        self.replica.ask(&ctx(5), ShardRequest::LeaveGroup(request));
        let c = &mut self.classic[i];
        c.member_id.clear();
        c.generation = 0;
        c.led = None;
    }

    fn partitions(&mut self) -> Vec<(&'static str, i32)> {
        let (topic, n) = *self.rng.pick(TOPICS);
        let mut out = vec![(topic, self.rng.below(n as usize) as i32)];
        if self.rng.chance(40) {
            let (topic, n) = *self.rng.pick(TOPICS);
            let p = (topic, self.rng.below(n as usize) as i32);
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }

    /// An OffsetCommit: by a classic member (v8), a KIP-848 member (v9) or a simple group.
    fn commit(&mut self) {
        let partitions = self.partitions();
        let offset = self.rng.below(1_000) as i64;
        let (version, group, member, generation) = match self.rng.below(3) {
            0 => {
                let c = self.rng.pick(&self.classic).clone();
                (8, c.group.to_string(), c.member_id, c.generation)
            }
            1 => {
                let c = self.rng.pick(&self.consumer).clone();
                (9, c.group.to_string(), c.member_id, c.epoch)
            }
            _ => (8, SIMPLE.to_string(), String::new(), -1),
        };
        let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for (t, p) in partitions {
            topics
                .entry(t)
                .or_default()
                .push(OffsetCommitRequestPartition {
                    partition_index: p,
                    committed_offset: offset,
                    committed_metadata: Some(format!("m{offset}")),
                    ..Default::default()
                });
        }
        let request = OffsetCommitRequest {
            group_id: group,
            generation_id_or_member_epoch: generation,
            member_id: member,
            topics: topics
                .into_iter()
                // With its topic id, as the broker hands every commit to the shard (v10
                // names it; earlier versions get it from the metadata): the record keeps it
                // (OffsetCommitValue v4's tagged topicId), so a replay must too.
                .map(|(name, partitions)| OffsetCommitRequestTopic {
                    name: name.into(),
                    topic_id: topic_id(name),
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        self.replica
            .ask(&ctx(version), ShardRequest::OffsetCommit(request));
    }

    fn consumer_heartbeat(&mut self) {
        let i = self.rng.below(self.consumer.len());
        let leave = self.consumer[i].epoch > 0 && self.rng.chance(8);
        let c = &self.consumer[i];
        let request = if c.epoch == 0 {
            let topics: Vec<String> = TOPICS
                .iter()
                .map(|(t, _)| t.to_string())
                .filter(|_| self.rng.chance(60))
                .collect();
            ConsumerGroupHeartbeatRequest {
                group_id: c.group.into(),
                member_id: c.member_id.clone(),
                member_epoch: 0,
                rebalance_timeout_ms: REBALANCE_MS,
                subscribed_topic_names: Some(topics),
                topic_partitions: Some(Vec::new()),
                ..Default::default()
            }
        } else {
            ConsumerGroupHeartbeatRequest {
                group_id: c.group.into(),
                member_id: c.member_id.clone(),
                member_epoch: if leave { -1 } else { c.epoch },
                rebalance_timeout_ms: -1,
                topic_partitions: Some(
                    c.owned
                        .iter()
                        .map(|(topic_id, partitions)| TopicPartitions {
                            topic_id: *topic_id,
                            partitions: partitions.clone(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }
        };
        let ShardResponse::ConsumerGroupHeartbeat(r) = self
            .replica
            .ask(&ctx(1), ShardRequest::ConsumerGroupHeartbeat(request))
        else {
            panic!("not a ConsumerGroupHeartbeat answer");
        };
        let c = &mut self.consumer[i];
        if leave || r.error_code != 0 {
            c.epoch = 0;
            c.owned.clear();
            return;
        }
        c.epoch = r.member_epoch;
        if let Some(a) = r.assignment {
            c.owned = a
                .topic_partitions
                .into_iter()
                .map(|tp| (tp.topic_id, tp.partitions))
                .collect();
        }
    }

    /// A TxnOffsetCommit by one of a few producers, naming no member or a classic member.
    fn txn_commit(&mut self) {
        let producer = *self.rng.pick(PRODUCERS);
        let epoch = *self.open.entry(producer).or_insert(0);
        let partitions = self.partitions();
        let offset = 1_000 + self.rng.below(1_000) as i64;
        let (group, member, generation) = match self.rng.below(4) {
            0 => {
                let c = self.rng.pick(&self.classic).clone();
                (c.group.to_string(), c.member_id, c.generation)
            }
            1 => (SIMPLE.to_string(), String::new(), -1),
            _ => {
                let all = group_ids();
                (self.rng.pick(&all).clone(), String::new(), -1)
            }
        };
        let mut topics: BTreeMap<&str, Vec<TxnOffsetCommitRequestPartition>> = BTreeMap::new();
        for (t, p) in partitions {
            topics
                .entry(t)
                .or_default()
                .push(TxnOffsetCommitRequestPartition {
                    partition_index: p,
                    committed_offset: offset,
                    ..Default::default()
                });
        }
        let request = TxnOffsetCommitRequest {
            transactional_id: format!("tx{producer}"),
            group_id: group,
            producer_id: producer,
            producer_epoch: epoch,
            generation_id_or_member_epoch: generation,
            member_id: member,
            topics: topics
                .into_iter()
                .map(|(name, partitions)| TxnOffsetCommitRequestTopic {
                    name: name.into(),
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        self.replica
            .ask(&ctx(3), ShardRequest::TxnOffsetCommit(request));
    }

    /// The marker of an open transaction: appended, then the shard told, as the broker's
    /// WriteTxnMarkers does.
    fn marker(&mut self) {
        let open: Vec<(i64, i16)> = self.open.iter().map(|(p, e)| (*p, *e)).collect();
        if open.is_empty() {
            return;
        }
        let (producer, epoch) = *self.rng.pick(&open);
        let commit = self.rng.chance(60);
        self.replica.append_marker(producer, epoch, commit);
        self.replica
            .call(|shard, _| shard.complete_transaction(producer, commit));
        self.open.remove(&producer);
    }

    fn offset_delete(&mut self) {
        let all = group_ids();
        let group = self.rng.pick(&all).clone();
        let partitions = self.partitions();
        let request = OffsetDeleteRequest {
            group_id: group,
            topics: partitions
                .into_iter()
                .map(|(t, p)| OffsetDeleteRequestTopic {
                    name: t.into(),
                    partitions: vec![OffsetDeleteRequestPartition { partition_index: p }],
                })
                .collect(),
        };
        self.replica
            .ask(&ctx(0), ShardRequest::OffsetDelete(request));
    }

    fn delete_group(&mut self) {
        let all = group_ids();
        let group = self.rng.pick(&all).clone();
        self.replica
            .ask(&ctx(2), ShardRequest::DeleteGroups(vec![group]));
    }

    /// Takes the answers to parked JoinGroups and SyncGroups.
    fn collect(&mut self) {
        for i in 0..self.classic.len() {
            if let Some(id) = self.classic[i].join {
                if let Some(r) = self.replica.replies.remove(&id) {
                    let ShardResponse::JoinGroup(r) = r else {
                        panic!("not a JoinGroup answer");
                    };
                    let c = &mut self.classic[i];
                    c.join = None;
                    if r.error_code == ErrorCode::MemberIdRequired.code() {
                        c.member_id = r.member_id;
                    } else if r.error_code == 0 {
                        c.member_id = r.member_id;
                        c.generation = r.generation_id;
                        c.led = (r.leader == c.member_id)
                            .then(|| r.members.iter().map(|m| m.member_id.clone()).collect());
                    } else if r.error_code == ErrorCode::UnknownMemberId.code() {
                        c.member_id.clear();
                        c.generation = 0;
                    }
                }
            }
            if let Some(id) = self.classic[i].sync {
                if self.replica.replies.remove(&id).is_some() {
                    self.classic[i].sync = None;
                }
            }
        }
        // Every other request is answered at once and taken by `ask`.
        assert!(
            self.replica.replies.len()
                <= self
                    .classic
                    .iter()
                    .filter(|c| c.join.is_some() || c.sync.is_some())
                    .count(),
            "replies nobody waits for: {:?}",
            self.replica.replies.keys()
        );
    }
}
