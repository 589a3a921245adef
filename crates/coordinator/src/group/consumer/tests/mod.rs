//! Consumer group tests, sans IO, through the shard's public API: a harness that plays
//! members against a shard, keeps every record the shard wrote (its log) and checks after
//! each step that no partition has two owners, on the coordinator's side and on the
//! clients' side (what each member was last told it owns).

mod assignors;
mod lifecycle;
mod offsets;
mod reconcile;
mod replay;
mod simulation;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kraftd_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kraftd_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kraftd_protocol::{ErrorCode, Uuid};

use super::group::ConsumerGroup;
use crate::context::RequestContext;
use crate::group::config::GroupCoordinatorConfig;
use crate::group::record::CoordinatorRecord;
use crate::group::shard::{Group, GroupCoordinatorShard, ShardRequest, ShardResponse};

pub(super) const GROUP: &str = "g";
pub(super) const SESSION_MS: i64 = 45_000;

pub(super) use crate::testing::group::{topic_id as tid, Topics};

/// A shard, its log, and what each member was last told it owns.
pub(super) struct Harness {
    pub shard: GroupCoordinatorShard,
    pub log: Vec<CoordinatorRecord>,
    pub now: i64,
    pub version: i16,
    reply: u64,
    pub client_owned: BTreeMap<String, BTreeSet<(Uuid, i32)>>,
}

impl Harness {
    pub fn new(topics: &[(&str, i32)]) -> Self {
        Self::with_config(topics, GroupCoordinatorConfig::default())
    }

    pub fn with_config(topics: &[(&str, i32)], config: GroupCoordinatorConfig) -> Self {
        Harness {
            shard: GroupCoordinatorShard::new(0, Arc::new(config), Topics::of(topics)),
            log: Vec::new(),
            now: 1_000,
            version: 1,
            reply: 0,
            client_owned: BTreeMap::new(),
        }
    }

    pub fn ctx(&self) -> RequestContext {
        RequestContext {
            api_version: self.version,
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
        }
    }

    /// Sends a request; returns its reply and keeps the records written.
    pub fn request(&mut self, request: ShardRequest) -> ShardResponse {
        self.reply += 1;
        let ctx = self.ctx();
        self.shard.handle(self.now, &ctx, self.reply, request);
        let out = self.shard.take_output();
        self.log.extend(out.records);
        let (id, response) = out.replies.into_iter().next().expect("a reply");
        assert_eq!(id, self.reply);
        response
    }

    pub fn heartbeat(
        &mut self,
        r: ConsumerGroupHeartbeatRequest,
    ) -> ConsumerGroupHeartbeatResponse {
        let member = r.member_id.clone();
        let ShardResponse::ConsumerGroupHeartbeat(resp) =
            self.request(ShardRequest::ConsumerGroupHeartbeat(r))
        else {
            panic!("not a heartbeat response");
        };
        if let (0, Some(a)) = (resp.error_code, &resp.assignment) {
            let id = resp.member_id.clone().unwrap_or(member);
            let owned = a
                .topic_partitions
                .iter()
                .flat_map(|tp| tp.partitions.iter().map(move |p| (tp.topic_id, *p)))
                .collect();
            self.client_owned.insert(id, owned);
        }
        self.check_single_owner();
        resp
    }

    /// A member joins subscribing to `topics`.
    pub fn join(&mut self, member: &str, topics: &[&str]) -> ConsumerGroupHeartbeatResponse {
        self.heartbeat(join_request(member, topics))
    }

    /// A heartbeat with the member's epoch and what it was last told it owns.
    pub fn beat(&mut self, member: &str, epoch: i32) -> ConsumerGroupHeartbeatResponse {
        let owned = self.client_owned.get(member).cloned().unwrap_or_default();
        self.heartbeat(beat_request(member, epoch, &owned))
    }

    pub fn advance(&mut self, ms: i64) {
        self.now += ms;
        self.shard.on_timeout(self.now);
        let out = self.shard.take_output();
        self.log.extend(out.records);
        self.check_single_owner();
    }

    pub fn group(&self) -> &ConsumerGroup {
        match self.shard.group(GROUP) {
            Some(Group::Consumer(g)) => g,
            other => panic!("no consumer group: {other:?}"),
        }
    }

    pub fn member_epoch(&self, member: &str) -> i32 {
        self.group().member(member).expect("member").member_epoch
    }

    /// Partitions of `topic` a member was last told it owns.
    pub fn owned(&self, member: &str, topic: &str) -> Vec<i32> {
        self.client_owned
            .get(member)
            .into_iter()
            .flatten()
            .filter(|(t, _)| *t == tid(topic))
            .map(|(_, p)| *p)
            .collect()
    }

    /// No partition is owned (or being revoked) by two members, on either side.
    pub fn check_single_owner(&self) {
        let mut seen = BTreeSet::new();
        for owned in self.client_owned.values() {
            for tp in owned {
                assert!(
                    seen.insert(*tp),
                    "two clients own {tp:?}: {:?}",
                    self.client_owned
                );
            }
        }
        if let Some(Group::Consumer(g)) = self.shard.group(GROUP) {
            let mut seen = BTreeSet::new();
            for m in g.members.values() {
                for tp in m.owned_partitions() {
                    assert!(seen.insert(tp), "two members own {tp:?}");
                }
            }
        }
    }

    /// A member stops (it owns nothing any more on its side).
    pub fn forget(&mut self, member: &str) {
        self.client_owned.remove(member);
    }
}

pub(super) fn join_request(member: &str, topics: &[&str]) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
        topic_partitions: Some(Vec::new()),
        ..Default::default()
    }
}

pub(super) fn beat_request(
    member: &str,
    epoch: i32,
    owned: &BTreeSet<(Uuid, i32)>,
) -> ConsumerGroupHeartbeatRequest {
    let mut by_topic: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
    for (t, p) in owned {
        by_topic.entry(*t).or_default().push(*p);
    }
    ConsumerGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        topic_partitions: Some(
            by_topic
                .into_iter()
                .map(|(topic_id, partitions)| TopicPartitions {
                    topic_id,
                    partitions,
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    }
}

/// The partitions of a response's assignment, for one topic.
pub(super) fn assigned(resp: &ConsumerGroupHeartbeatResponse, topic: &str) -> Option<Vec<i32>> {
    let a = resp.assignment.as_ref()?;
    Some(
        a.topic_partitions
            .iter()
            .filter(|tp| tp.topic_id == tid(topic))
            .flat_map(|tp| tp.partitions.iter().copied())
            .collect(),
    )
}

pub(super) fn error(resp: &ConsumerGroupHeartbeatResponse) -> ErrorCode {
    ErrorCode::from_code(resp.error_code).expect("a known error code")
}
