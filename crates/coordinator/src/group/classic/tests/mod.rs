//! Classic group tests, sans IO: the shard is driven through its public API (`handle`,
//! `on_timeout`, `take_output`, `replay`, `on_loaded`) with a hand-held clock. Every reply
//! is checked to be answered once and to encode at its request's version.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kraftd_protocol::coordinator::GroupMetadataValue;
use kraftd_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kraftd_protocol::messages::leave_group_request::MemberIdentity;
use kraftd_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kraftd_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kraftd_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kraftd_protocol::messages::{
    ConsumerProtocolSubscription, DescribeGroupsResponse, HeartbeatRequest, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, OffsetCommitRequest,
    SyncGroupRequest, SyncGroupResponse, TxnOffsetCommitRequest,
};
use kraftd_protocol::{ErrorCode, GroupCoordinatorRecordKey, GroupCoordinatorRecordValue, Message};

use super::ClassicGroup;
use crate::context::{NoTopics, ReplyId, RequestContext};
use crate::group::config::GroupCoordinatorConfig;
use crate::group::record::CoordinatorRecord;
use crate::group::shard::{Group, GroupCoordinatorShard, ShardRequest, ShardResponse};

mod fuzz;
mod join_sync;
mod membership;
mod records;
mod static_members;

pub(super) const GROUP: &str = "g";
pub(super) const SESSION: i32 = 10_000;
pub(super) const REBALANCE: i32 = 20_000;
pub(super) const DELAY: i32 = 3_000;

pub(super) fn code(c: ErrorCode) -> i16 {
    c.code()
}

/// A consumer's subscription metadata (ConsumerProtocolSubscription v1 with its version).
pub(super) fn sub(topics: &[&str]) -> Bytes {
    let s = ConsumerProtocolSubscription {
        topics: topics.iter().map(|t| t.to_string()).collect(),
        ..Default::default()
    };
    let mut out = BytesMut::new();
    out.put_i16(1);
    out.extend_from_slice(&s.to_bytes(1).expect("subscription encodes"));
    out.freeze()
}

/// One JoinGroup, by default a dynamic consumer of topic `t` with the range protocol.
#[derive(Debug, Clone)]
pub(super) struct JoinArgs {
    pub group: String,
    pub version: i16,
    pub client: String,
    pub member_id: String,
    pub instance: Option<String>,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    pub session: i32,
    pub rebalance: i32,
}

impl JoinArgs {
    pub fn new(client: &str) -> Self {
        JoinArgs {
            group: GROUP.into(),
            version: 5,
            client: client.into(),
            member_id: String::new(),
            instance: None,
            protocol_type: "consumer".into(),
            protocols: vec![("range".into(), sub(&["t"]))],
            session: SESSION,
            rebalance: REBALANCE,
        }
    }

    pub fn id(mut self, member_id: &str) -> Self {
        self.member_id = member_id.into();
        self
    }

    pub fn version(mut self, version: i16) -> Self {
        self.version = version;
        self
    }

    pub fn instance(mut self, instance: &str) -> Self {
        self.instance = Some(instance.into());
        self
    }

    pub fn group(mut self, group: &str) -> Self {
        self.group = group.into();
        self
    }

    pub fn protocols(mut self, protocols: &[(&str, Bytes)]) -> Self {
        self.protocols = protocols
            .iter()
            .map(|(n, m)| (n.to_string(), m.clone()))
            .collect();
        self
    }
}

/// The shard, its clock and everything it answered and wrote.
pub(super) struct H {
    pub shard: GroupCoordinatorShard,
    pub now: i64,
    next: ReplyId,
    versions: HashMap<ReplyId, i16>,
    pub replies: HashMap<ReplyId, ShardResponse>,
    pub records: Vec<CoordinatorRecord>,
}

impl H {
    pub fn new() -> Self {
        H::with_config(GroupCoordinatorConfig {
            classic_initial_rebalance_delay_ms: DELAY,
            ..Default::default()
        })
    }

    pub fn with_config(config: GroupCoordinatorConfig) -> Self {
        H {
            shard: GroupCoordinatorShard::new(0, Arc::new(config), Arc::new(NoTopics)),
            now: 1_000_000,
            next: 1,
            versions: HashMap::new(),
            replies: HashMap::new(),
            records: Vec::new(),
        }
    }

    pub fn send(&mut self, version: i16, client: &str, request: ShardRequest) -> ReplyId {
        let id = self.next;
        self.next += 1;
        self.versions.insert(id, version);
        let ctx = RequestContext {
            api_version: version,
            client_id: client.into(),
            client_host: "/127.0.0.1".into(),
        };
        self.shard.handle(self.now, &ctx, id, request);
        self.collect();
        id
    }

    fn collect(&mut self) {
        let out = self.shard.take_output();
        self.records.extend(out.records);
        for (id, response) in out.replies {
            let v = self.versions[&id];
            let encoded = match &response {
                ShardResponse::JoinGroup(r) => r.to_bytes(v),
                ShardResponse::SyncGroup(r) => r.to_bytes(v),
                ShardResponse::Heartbeat(r) => r.to_bytes(v),
                ShardResponse::LeaveGroup(r) => r.to_bytes(v),
                ShardResponse::DescribeGroups(groups) => DescribeGroupsResponse {
                    groups: groups.clone(),
                    ..Default::default()
                }
                .to_bytes(v),
                _ => Ok(Bytes::new()),
            };
            assert!(encoded.is_ok(), "reply {id} at v{v}: {encoded:?}");
            assert!(
                self.replies.insert(id, response).is_none(),
                "reply {id} answered twice"
            );
        }
    }

    /// Moves the clock on by `ms`, firing each timer at its deadline (as a runtime that
    /// wakes up on time would).
    pub fn advance(&mut self, ms: i64) {
        let target = self.now + ms;
        while let Some(deadline) = self.shard.next_deadline() {
            if deadline > target {
                break;
            }
            self.now = self.now.max(deadline);
            self.shard.on_timeout(self.now);
            self.collect();
        }
        self.now = target;
        self.shard.on_timeout(self.now);
        self.collect();
    }

    pub fn join(&mut self, a: &JoinArgs) -> ReplyId {
        let request = JoinGroupRequest {
            group_id: a.group.clone(),
            session_timeout_ms: a.session,
            rebalance_timeout_ms: a.rebalance,
            member_id: a.member_id.clone(),
            group_instance_id: a.instance.clone(),
            protocol_type: a.protocol_type.clone(),
            protocols: a
                .protocols
                .iter()
                .map(|(n, m)| JoinGroupRequestProtocol {
                    name: n.clone(),
                    metadata: m.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        self.send(a.version, &a.client, ShardRequest::JoinGroup(request))
    }

    /// The JoinGroup answer to `id`, if there is one yet.
    pub fn joined(&mut self, id: ReplyId) -> Option<JoinGroupResponse> {
        match self.replies.get(&id)? {
            ShardResponse::JoinGroup(r) => Some(r.clone()),
            other => panic!("not a JoinGroup answer: {other:?}"),
        }
    }

    pub fn must_join(&mut self, id: ReplyId) -> JoinGroupResponse {
        self.joined(id).expect("JoinGroup answered")
    }

    /// A new dynamic member: MEMBER_ID_REQUIRED, then the JoinGroup with its id (whose
    /// reply id is returned with the member id).
    pub fn new_member(&mut self, a: &JoinArgs) -> (String, ReplyId) {
        let first = self.join(a);
        let r = self.must_join(first);
        assert_eq!(r.error_code, code(ErrorCode::MemberIdRequired));
        assert!(r.member_id.starts_with(&format!("{}-", a.client)));
        let member = r.member_id.clone();
        let second = self.join(&a.clone().id(&member));
        (member, second)
    }

    pub fn sync(
        &mut self,
        member: &str,
        generation: i32,
        assignments: &[(&str, &[u8])],
    ) -> ReplyId {
        self.sync_as(GROUP, member, None, generation, assignments)
    }

    pub fn sync_as(
        &mut self,
        group: &str,
        member: &str,
        instance: Option<&str>,
        generation: i32,
        assignments: &[(&str, &[u8])],
    ) -> ReplyId {
        let request = SyncGroupRequest {
            group_id: group.into(),
            generation_id: generation,
            member_id: member.into(),
            group_instance_id: instance.map(str::to_string),
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments: assignments
                .iter()
                .map(|(m, a)| SyncGroupRequestAssignment {
                    member_id: m.to_string(),
                    assignment: Bytes::copy_from_slice(a),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        self.send(5, "c", ShardRequest::SyncGroup(request))
    }

    pub fn synced(&mut self, id: ReplyId) -> Option<SyncGroupResponse> {
        match self.replies.get(&id)? {
            ShardResponse::SyncGroup(r) => Some(r.clone()),
            other => panic!("not a SyncGroup answer: {other:?}"),
        }
    }

    pub fn must_sync(&mut self, id: ReplyId) -> SyncGroupResponse {
        self.synced(id).expect("SyncGroup answered")
    }

    pub fn heartbeat_as(
        &mut self,
        group: &str,
        member: &str,
        instance: Option<&str>,
        generation: i32,
    ) -> i16 {
        let request = HeartbeatRequest {
            group_id: group.into(),
            generation_id: generation,
            member_id: member.into(),
            group_instance_id: instance.map(str::to_string),
            ..Default::default()
        };
        let id = self.send(4, "c", ShardRequest::Heartbeat(request));
        match &self.replies[&id] {
            ShardResponse::Heartbeat(r) => r.error_code,
            other => panic!("not a Heartbeat answer: {other:?}"),
        }
    }

    pub fn heartbeat(&mut self, member: &str, generation: i32) -> i16 {
        self.heartbeat_as(GROUP, member, None, generation)
    }

    /// LeaveGroup v5 with a batch of (member id, instance id).
    pub fn leave(&mut self, members: &[(&str, Option<&str>)]) -> LeaveGroupResponse {
        let request = LeaveGroupRequest {
            group_id: GROUP.into(),
            members: members
                .iter()
                .map(|(m, i)| MemberIdentity {
                    member_id: m.to_string(),
                    group_instance_id: i.map(str::to_string),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        self.leave_request(5, request)
    }

    pub fn leave_request(&mut self, version: i16, r: LeaveGroupRequest) -> LeaveGroupResponse {
        let id = self.send(version, "c", ShardRequest::LeaveGroup(r));
        match &self.replies[&id] {
            ShardResponse::LeaveGroup(r) => r.clone(),
            other => panic!("not a LeaveGroup answer: {other:?}"),
        }
    }

    /// OffsetCommit v8 of partition t-0; the partition's error.
    pub fn commit(&mut self, member: &str, instance: Option<&str>, generation: i32) -> i16 {
        let request = OffsetCommitRequest {
            group_id: GROUP.into(),
            generation_id_or_member_epoch: generation,
            member_id: member.into(),
            group_instance_id: instance.map(str::to_string),
            topics: vec![OffsetCommitRequestTopic {
                name: "t".into(),
                partitions: vec![OffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 42,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let id = self.send(8, "c", ShardRequest::OffsetCommit(request));
        match &self.replies[&id] {
            ShardResponse::OffsetCommit(r) => r.topics[0].partitions[0].error_code,
            other => panic!("not an OffsetCommit answer: {other:?}"),
        }
    }

    /// TxnOffsetCommit v3 of partition t-0 by producer 1000; the partition's error.
    pub fn txn_commit(&mut self, member: &str, instance: Option<&str>, generation: i32) -> i16 {
        let request = TxnOffsetCommitRequest {
            transactional_id: "tx".into(),
            group_id: GROUP.into(),
            producer_id: 1000,
            producer_epoch: 0,
            generation_id_or_member_epoch: generation,
            member_id: member.into(),
            group_instance_id: instance.map(str::to_string),
            topics: vec![TxnOffsetCommitRequestTopic {
                name: "t".into(),
                partitions: vec![TxnOffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 43,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let id = self.send(3, "c", ShardRequest::TxnOffsetCommit(request));
        match &self.replies[&id] {
            ShardResponse::TxnOffsetCommit(r) => r.topics[0].partitions[0].error_code,
            other => panic!("not a TxnOffsetCommit answer: {other:?}"),
        }
    }

    pub fn group(&self, group: &str) -> &ClassicGroup {
        match self.shard.group(group) {
            Some(Group::Classic(g)) => g,
            other => panic!("no classic group {group}: {other:?}"),
        }
    }

    pub fn g(&self) -> &ClassicGroup {
        self.group(GROUP)
    }

    /// The GroupMetadata records written for `group`, in order (None: a tombstone).
    pub fn metadata_records(&self, group: &str) -> Vec<Option<GroupMetadataValue>> {
        self.records
            .iter()
            .filter_map(|r| match &r.key {
                GroupCoordinatorRecordKey::GroupMetadata(k) if k.group == group => {
                    Some(match &r.value {
                        None => None,
                        Some((GroupCoordinatorRecordValue::GroupMetadata(v), version)) => {
                            assert_eq!(*version, 3, "GroupMetadataValue is written at v3");
                            Some(v.clone())
                        }
                        Some(other) => panic!("GroupMetadata key with {other:?}"),
                    })
                }
                _ => None,
            })
            .collect()
    }

    pub fn last_metadata(&self, group: &str) -> GroupMetadataValue {
        self.metadata_records(group)
            .pop()
            .flatten()
            .expect("a GroupMetadata record")
    }
}

/// A Stable group of dynamic members made through the full flow (MEMBER_ID_REQUIRED,
/// the initial delay, the leader's assignment `assign-<n>` for member n).
#[derive(Debug)]
pub(super) struct Stable {
    pub members: Vec<String>,
    pub leader: String,
    pub generation: i32,
}

impl Stable {
    pub fn assignment(i: usize) -> Vec<u8> {
        format!("assign-{i}").into_bytes()
    }
}

pub(super) fn stable_group(h: &mut H, clients: &[&str]) -> Stable {
    let mut joins = Vec::new();
    for c in clients {
        joins.push(h.new_member(&JoinArgs::new(c)));
    }
    h.advance(i64::from(DELAY));
    if clients.len() > 1 {
        // Members kept arriving during the first delay: one more.
        h.advance(i64::from(DELAY));
    }
    let responses: Vec<JoinGroupResponse> = joins.iter().map(|(_, r)| h.must_join(*r)).collect();
    let leader = responses[0].leader.clone();
    let generation = responses[0].generation_id;
    let members: Vec<String> = joins.iter().map(|(m, _)| m.clone()).collect();
    let assignments: Vec<(String, Vec<u8>)> = members
        .iter()
        .enumerate()
        .map(|(i, m)| (m.clone(), Stable::assignment(i)))
        .collect();
    let refs: Vec<(&str, &[u8])> = assignments
        .iter()
        .map(|(m, a)| (m.as_str(), a.as_slice()))
        .collect();
    let mut syncs = Vec::new();
    for m in &members {
        let a: &[(&str, &[u8])] = if *m == leader { &refs } else { &[] };
        syncs.push(h.sync(m, generation, a));
    }
    for (i, s) in syncs.iter().enumerate() {
        let r = h.must_sync(*s);
        assert_eq!(r.error_code, 0);
        assert_eq!(r.assignment.as_ref(), Stable::assignment(i).as_slice());
    }
    assert_eq!(h.g().state_name(), "Stable");
    Stable {
        members,
        leader,
        generation,
    }
}
