//! `GroupCoordinatorShard` (Kafka's `GroupCoordinatorShard` with its `GroupMetadataManager`
//! and `OffsetMetadataManager`): the state of one `__consumer_offsets` partition.
//!
//! How the runtime drives it:
//! - loading: [`GroupCoordinatorShard::replay`] for every record of the partition in
//!   offset order, then [`GroupCoordinatorShard::on_loaded`];
//! - requests: [`GroupCoordinatorShard::handle`] with a [`ReplyId`] the runtime chose;
//! - time: [`GroupCoordinatorShard::on_timeout`] when [`GroupCoordinatorShard::next_deadline`]
//!   has passed;
//! - after each call, [`GroupCoordinatorShard::take_output`]: the records to append (already
//!   applied to the shard's state) and the replies to send. A reply may come from an earlier
//!   call (a classic JoinGroup waits for the rebalance). The runtime sends a reply only once
//!   everything the shard had written when it produced the reply is committed, so a client
//!   never sees state that a failover could lose; if an append fails, the runtime drops the
//!   shard and loads it again from the log.
//!
//! An operation either writes all its records or, when they do not fit one batch
//! (`max_batch_bytes`), none, and its state is unchanged ([`GroupCoordinatorShard::write`]).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::Arc;

use kraftd_protocol::messages::consumer_group_describe_response::DescribedGroup as ConsumerDescribedGroup;
use kraftd_protocol::messages::delete_groups_response::DeletableGroupResult;
use kraftd_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kraftd_protocol::messages::describe_groups_response::DescribedGroup;
use kraftd_protocol::messages::list_groups_response::ListedGroup;
use kraftd_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kraftd_protocol::messages::offset_fetch_response::OffsetFetchResponseGroup;
use kraftd_protocol::messages::share_group_describe_response::DescribedGroup as ShareDescribedGroup;
use kraftd_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, HeartbeatRequest,
    HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
    SyncGroupRequest, SyncGroupResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kraftd_protocol::messages::{
    InitializeShareGroupStateRequest, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};
use kraftd_protocol::{ErrorCode, GroupCoordinatorRecordKey, GroupCoordinatorRecordValue};

use crate::context::{ReplyId, RequestContext, TopicMetadata};
use crate::group::classic::ClassicGroup;
use crate::group::commit_api::CommitApi;
use crate::group::config::GroupCoordinatorConfig;
use crate::group::consumer::{ConsumerGroup, Partitions};
use crate::group::offsets::OffsetMetadataManager;
use crate::group::record::CoordinatorRecord;
use crate::group::share::{
    ShareGroup, ShareGroupDeletion, ShareOffsetsAlter, ShareOffsetsDeletion,
};
use crate::group::streams::{StreamsGroup, StreamsHeartbeatResult};
use crate::group::timer::{Timer, TimerKey};
use crate::shard::{CoordinatorShard, ReplayFailure};

/// One request, or the part of a request that concerns this shard's groups.
#[derive(Debug, Clone)]
pub enum ShardRequest {
    JoinGroup(JoinGroupRequest),
    SyncGroup(SyncGroupRequest),
    Heartbeat(HeartbeatRequest),
    LeaveGroup(LeaveGroupRequest),
    /// Topic names are filled in (v10 names topics by id; the service resolves them).
    OffsetCommit(OffsetCommitRequest),
    /// One group of an OffsetFetch (v0–7 carry one, v8+ many).
    OffsetFetch {
        group: OffsetFetchRequestGroup,
        require_stable: bool,
    },
    OffsetDelete(OffsetDeleteRequest),
    /// Topic names are filled in (v6 may name topics by id).
    TxnOffsetCommit(TxnOffsetCommitRequest),
    DescribeGroups(Vec<String>),
    ListGroups {
        states: Vec<String>,
        types: Vec<String>,
    },
    DeleteGroups(Vec<String>),
    ConsumerGroupHeartbeat(ConsumerGroupHeartbeatRequest),
    ConsumerGroupDescribe(Vec<String>),
    ShareGroupHeartbeat(ShareGroupHeartbeatRequest),
    ShareGroupDescribe(Vec<String>),
    StreamsGroupHeartbeat(kraftd_protocol::messages::StreamsGroupHeartbeatRequest),
    StreamsGroupDescribe(Vec<String>),
    /// DeleteGroups' first step for share groups: their state partitions moved to the
    /// deleting list, and the share state to delete through the persister before the groups
    /// go (a write; see [`ShareGroupDeletion`]).
    ShareGroupsToDelete(Vec<String>),
    /// DescribeShareGroupOffsets for all of a group's topics (Kafka's
    /// `initializedShareGroupPartitions`): the share partitions whose state is initialized
    /// (a read).
    ShareGroupInitializedPartitions(String),
    /// AlterShareGroupOffsets: the group checked, the accepted topics marked initializing
    /// (a write; see [`ShareOffsetsAlter`]); the broker then initializes their state.
    AlterShareGroupOffsets {
        group_id: String,
        topics: Vec<kraftd_protocol::messages::alter_share_group_offsets_request::AlterShareGroupOffsetsRequestTopic>,
    },
    /// DeleteShareGroupOffsets' first step: the group and the named topics checked, the
    /// initialized topics moved to deleting (a write; see [`ShareOffsetsDeletion`]).
    InitiateDeleteShareGroupOffsets { group_id: String, topics: Vec<String> },
    /// DeleteShareGroupOffsets' last step: the topics whose share state the persister
    /// deleted leave the deleting list (a write).
    CompleteDeleteShareGroupOffsets {
        group_id: String,
        deleted: Vec<(kraftd_protocol::Uuid, String)>,
    },
}

/// What the shard answers, per [`ShardRequest`] kind.
#[derive(Debug, Clone)]
pub enum ShardResponse {
    JoinGroup(JoinGroupResponse),
    SyncGroup(SyncGroupResponse),
    Heartbeat(HeartbeatResponse),
    LeaveGroup(LeaveGroupResponse),
    OffsetCommit(OffsetCommitResponse),
    OffsetFetch(OffsetFetchResponseGroup),
    OffsetDelete(OffsetDeleteResponse),
    TxnOffsetCommit(TxnOffsetCommitResponse),
    DescribeGroups(Vec<DescribedGroup>),
    ListGroups(Vec<ListedGroup>),
    DeleteGroups(Vec<DeletableGroupResult>),
    ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse),
    ConsumerGroupDescribe(Vec<ConsumerDescribedGroup>),
    ShareGroupHeartbeat(ShareGroupHeartbeatResponse),
    ShareGroupDescribe(Vec<ShareDescribedGroup>),
    StreamsGroupHeartbeat(StreamsHeartbeatResult),
    StreamsGroupDescribe(
        Vec<kraftd_protocol::messages::streams_group_describe_response::DescribedGroup>,
    ),
    ShareGroupsToDelete(Vec<(String, ShareGroupDeletion)>),
    ShareGroupInitializedPartitions(Partitions),
    AlterShareGroupOffsets(ShareOffsetsAlter),
    InitiateDeleteShareGroupOffsets(ShareOffsetsDeletion),
    CompleteDeleteShareGroupOffsets(Vec<DeleteShareGroupOffsetsResponseTopic>),
}

/// Work the runtime carries out once the records written before it are committed.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupWork {
    /// Initialize share partitions' state through the persister, then call
    /// [`GroupCoordinatorShard::share_state_initialized`] with what succeeded and failed.
    InitializeShareGroupState(InitializeShareGroupStateRequest),
}

/// What a call produced: records to append (applied already) and replies to send once
/// they, and everything written before them, are committed.
#[derive(Debug, Default)]
pub struct ShardOutput {
    pub records: Vec<CoordinatorRecord>,
    /// Transactional offset commits: records to write in a transactional batch of the
    /// producer (id, epoch), after `records`.
    pub txn_records: Vec<((i64, i16), Vec<CoordinatorRecord>)>,
    pub replies: Vec<(ReplyId, ShardResponse)>,
    /// Work to carry out once `records` are committed.
    pub work: Vec<GroupWork>,
}

impl ShardOutput {
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
            && self.txn_records.is_empty()
            && self.replies.is_empty()
            && self.work.is_empty()
    }
}

/// What the shard has written since it was loaded, for Kafka's rate metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardStats {
    /// Classic generations completed (a GroupMetadata record with members: a SyncGroup
    /// from the leader, or a static member replaced).
    pub classic_rebalances: u64,
    /// KIP-848 group epochs bumped (a ConsumerGroupMetadata record).
    pub consumer_rebalances: u64,
    /// Share group epochs bumped (a ShareGroupMetadata record).
    pub share_rebalances: u64,
    /// Streams group epochs bumped (a StreamsGroupMetadata record).
    pub streams_rebalances: u64,
    /// Offsets committed.
    pub offset_commits: u64,
    /// Offsets deleted (OffsetDelete, DeleteGroups, expiry).
    pub offset_deletions: u64,
}

/// A group of either protocol (Kafka's `Group`). Groups live in one map and are few per
/// shard: the variants' sizes do not matter.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Group {
    Classic(ClassicGroup),
    Consumer(ConsumerGroup),
    Share(ShareGroup),
    Streams(StreamsGroup),
}

impl Group {
    /// `classic`, `consumer`, `share` or `streams` (ListGroups' `group_type`).
    pub fn group_type(&self) -> &'static str {
        match self {
            Group::Classic(_) => "classic",
            Group::Consumer(_) => "consumer",
            Group::Share(_) => "share",
            Group::Streams(_) => "streams",
        }
    }

    /// The state as Kafka names it (ListGroups, DescribeGroups).
    pub fn state_name(&self) -> &'static str {
        match self {
            Group::Classic(g) => g.state_name(),
            Group::Consumer(g) => g.state_name(),
            Group::Share(g) => g.state_name(),
            Group::Streams(g) => g.state_name(),
        }
    }

    pub fn protocol_type(&self) -> &str {
        match self {
            Group::Classic(g) => g.protocol_type(),
            Group::Consumer(_) => "consumer",
            Group::Share(_) => "share",
            Group::Streams(_) => "streams",
        }
    }

    /// No members: offsets may expire and the group may be deleted.
    pub fn is_empty(&self) -> bool {
        match self {
            Group::Classic(g) => g.is_empty(),
            Group::Consumer(g) => g.is_empty(),
            Group::Share(g) => g.is_empty(),
            Group::Streams(g) => g.is_empty(),
        }
    }

    /// Whether a commit by this member may be stored (Kafka's `validateOffsetCommit`):
    /// generation / member epoch fencing.
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_or_epoch: i32,
        api: CommitApi,
    ) -> Result<(), ErrorCode> {
        match self {
            Group::Classic(g) => {
                g.validate_offset_commit(member_id, group_instance_id, generation_or_epoch, api)
            }
            Group::Consumer(g) => {
                g.validate_offset_commit(member_id, group_instance_id, generation_or_epoch, api)
            }
            // Kafka's `ShareGroup.validateOffsetCommit`: share groups keep no offsets here.
            Group::Share(_) => Err(ErrorCode::GroupIdNotFound),
            Group::Streams(g) => {
                g.validate_offset_commit(member_id, group_instance_id, generation_or_epoch, api)
            }
        }
    }

    /// Whether an OffsetFetch naming a member (v9+) may read (Kafka's
    /// `validateOffsetFetch`).
    pub fn validate_offset_fetch(
        &self,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), ErrorCode> {
        match self {
            Group::Classic(_) => Ok(()),
            Group::Consumer(g) => g.validate_offset_fetch(member_id, member_epoch),
            Group::Share(_) => Err(ErrorCode::GroupIdNotFound),
            Group::Streams(g) => g.validate_offset_fetch(member_id, member_epoch),
        }
    }

    /// Whether the group consumes `topic` now (its offsets then never expire).
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        match self {
            Group::Classic(g) => g.is_subscribed_to_topic(topic),
            Group::Consumer(g) => g.is_subscribed_to_topic(topic),
            Group::Share(g) => g.is_subscribed_to_topic(topic),
            Group::Streams(g) => g.is_subscribed_to_topic(topic),
        }
    }

    /// The time an offset's retention counts from when the commit set no expiry of its
    /// own: when an emptied group with a protocol became empty, else the commit's time
    /// (Kafka's `offsetExpirationCondition`).
    pub fn offset_expiration_base(&self, commit_timestamp: i64) -> i64 {
        match self {
            Group::Classic(g) if g.is_empty() && !g.protocol_type().is_empty() => {
                g.current_state_timestamp().unwrap_or(commit_timestamp)
            }
            _ => commit_timestamp,
        }
    }

    /// Whether the group's offsets may expire at all: not while a classic group of another
    /// protocol than `consumer` (Connect's, say) has members, whose subscriptions the
    /// coordinator cannot read (Kafka's `offsetExpirationCondition` is empty then).
    pub fn offsets_may_expire(&self) -> bool {
        match self {
            Group::Classic(g) => g.is_empty() || g.protocol_type() == "consumer",
            Group::Consumer(_) | Group::Share(_) | Group::Streams(_) => true,
        }
    }

    /// The records that delete the group's own state (not its offsets).
    pub fn delete_records(&self) -> Vec<CoordinatorRecord> {
        match self {
            Group::Classic(g) => g.delete_records(),
            Group::Consumer(g) => g.delete_records(),
            Group::Share(g) => g.delete_records(),
            Group::Streams(g) => g.delete_records(),
        }
    }
}

/// The state of one `__consumer_offsets` partition (see the module docs).
#[derive(Debug)]
pub struct GroupCoordinatorShard {
    pub(crate) partition: i32,
    pub(crate) config: Arc<GroupCoordinatorConfig>,
    /// The settings of each group with dynamic configs of its own
    /// ([`GroupCoordinatorConfig::for_group`]), as Kafka's `GroupConfigManager` holds them;
    /// any other group runs by `config`.
    pub(crate) group_configs: HashMap<String, Arc<GroupCoordinatorConfig>>,
    pub(crate) groups: HashMap<String, Group>,
    pub(crate) offsets: OffsetMetadataManager,
    pub(crate) timer: Timer<TimerKey>,
    pub(crate) metadata: Arc<dyn TopicMetadata>,
    pub(crate) out: ShardOutput,
    /// The time of the call being handled.
    pub(crate) now_ms: i64,
    /// The offset of the last record replayed, or a stand-in one past it for a record
    /// written and not yet placed: offsets compare in log order either way.
    pub(crate) last_record_offset: i64,
    pub(crate) stats: ShardStats,
    /// Member ids generated by this shard's classic groups (part of each new id).
    pub(crate) classic_member_seq: u64,
    /// Streams groups a member asked to shut down (group → that member), as Kafka's
    /// `StreamsGroup.shutdownRequestMemberId`: in memory only.
    pub(crate) streams_shutdown_requests: HashMap<String, String>,
    /// The task offsets each streams member last reported ((group, member) → offsets), as
    /// Kafka's `StreamsGroup.taskOffsets`: in memory only, dropped when the member goes.
    pub(crate) streams_task_offsets:
        HashMap<(String, String), crate::group::streams::group::MemberTaskOffsets>,
    /// Each streams group's endpoint information epoch (Kafka's
    /// `StreamsGroup.endpointInformationEpoch`): in memory only.
    pub(crate) streams_endpoint_epochs: HashMap<String, i32>,
}

impl GroupCoordinatorShard {
    pub fn new(
        partition: i32,
        config: Arc<GroupCoordinatorConfig>,
        metadata: Arc<dyn TopicMetadata>,
    ) -> Self {
        GroupCoordinatorShard {
            partition,
            config,
            group_configs: HashMap::new(),
            groups: HashMap::new(),
            offsets: OffsetMetadataManager::default(),
            timer: Timer::default(),
            metadata,
            out: ShardOutput::default(),
            now_ms: 0,
            last_record_offset: -1,
            stats: ShardStats::default(),
            classic_member_seq: 0,
            streams_shutdown_requests: HashMap::new(),
            streams_task_offsets: HashMap::new(),
            streams_endpoint_epochs: HashMap::new(),
        }
    }

    pub fn partition(&self) -> i32 {
        self.partition
    }

    pub fn config(&self) -> &GroupCoordinatorConfig {
        &self.config
    }

    /// A group's dynamic configs changed (ConfigResource GROUP; empty when it has none left):
    /// its session timeouts, heartbeat and assignment intervals follow them from its next
    /// heartbeat on, as Kafka's `GroupConfigManager.updateGroupConfig`.
    pub fn set_group_configs(&mut self, group_id: &str, configs: &BTreeMap<String, String>) {
        if configs.is_empty() {
            self.group_configs.remove(group_id);
        } else {
            self.group_configs.insert(
                group_id.to_string(),
                Arc::new(self.config.for_group(configs)),
            );
        }
    }

    /// The settings `group_id` runs by: its own ([`Self::set_group_configs`]) or the node's.
    pub fn group_config(&self, group_id: &str) -> Arc<GroupCoordinatorConfig> {
        self.group_configs
            .get(group_id)
            .cloned()
            .unwrap_or_else(|| self.config.clone())
    }

    /// The cluster's topics changed: KIP-848 groups whose subscriptions resolve differently
    /// get a new target assignment on their next heartbeat; deleted topics leave the share
    /// groups' state metadata.
    pub fn on_metadata_update(&mut self, metadata: Arc<dyn TopicMetadata>) {
        let config = &self.config;
        self.group_configs = metadata
            .group_configs()
            .into_iter()
            .filter(|(_, configs)| !configs.is_empty())
            .map(|(group, configs)| (group, Arc::new(config.for_group(&configs))))
            .collect();
        self.metadata = metadata;
        self.consumer_on_metadata_update();
        self.share_on_metadata_update();
    }

    /// Applies one record of the partition's log (loading, or a record this shard wrote
    /// with `replay`). `offset` is the record's offset; `producer_id` its batch's (for
    /// transactional offset commits, -1 otherwise).
    pub fn replay(
        &mut self,
        offset: i64,
        producer_id: i64,
        record: CoordinatorRecord,
    ) -> Result<(), ReplayFailure> {
        if offset >= 0 {
            self.last_record_offset = self.last_record_offset.max(offset);
        }
        let partition = self.partition;
        let fail = |reason: String| {
            ReplayFailure::corrupt_record(
                <Self as CoordinatorShard>::TOPIC,
                partition,
                offset,
                &reason,
            )
        };
        let value = record.value.map(|(v, _)| v);
        match (record.key, value) {
            (GroupCoordinatorRecordKey::OffsetCommit(k), v) => {
                let v = match v {
                    None => None,
                    Some(GroupCoordinatorRecordValue::OffsetCommit(v)) => Some(v),
                    Some(other) => {
                        return Err(fail(format!(
                            "OffsetCommit key with a {:?} value",
                            other.key()
                        )))
                    }
                };
                self.replay_offset_commit(offset, producer_id, k, v);
            }
            (GroupCoordinatorRecordKey::LegacyOffsetCommit(k), v) => {
                // Kafka reads the legacy key type as an offset commit too.
                let v = match v {
                    None => None,
                    Some(GroupCoordinatorRecordValue::LegacyOffsetCommit(v)) => Some(v),
                    Some(other) => {
                        return Err(fail(format!(
                            "LegacyOffsetCommit key with a {:?} value",
                            other.key()
                        )))
                    }
                };
                self.replay_legacy_offset_commit(offset, producer_id, k, v);
            }
            (GroupCoordinatorRecordKey::GroupMetadata(k), v) => {
                let v = match v {
                    None => None,
                    Some(GroupCoordinatorRecordValue::GroupMetadata(v)) => Some(v),
                    Some(other) => {
                        return Err(fail(format!(
                            "GroupMetadata key with a {:?} value",
                            other.key()
                        )))
                    }
                };
                self.classic_replay_group_metadata(k, v);
            }
            (key, value) => {
                if !self
                    .share_replay_record(&key, value.clone())
                    .map_err(fail)?
                    && !self
                        .streams_replay_record(&key, value.clone())
                        .map_err(fail)?
                {
                    let _ = self.consumer_replay(key, value).map_err(fail)?;
                }
            }
        }
        Ok(())
    }

    /// After the last record of a load: timers for what was loaded (sessions of loaded
    /// members, offset expiry).
    pub fn on_loaded(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
        self.classic_on_loaded();
        self.consumer_on_loaded();
        self.share_loaded();
        self.streams_loaded();
        self.timer.schedule(
            TimerKey::OffsetExpiration,
            now_ms + self.config.offsets_retention_check_interval_ms,
        );
    }

    /// Handles one request; its reply comes out of [`GroupCoordinatorShard::take_output`],
    /// now or later, under `reply`.
    pub fn handle(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        reply: ReplyId,
        request: ShardRequest,
    ) {
        self.now_ms = now_ms;
        match request {
            ShardRequest::JoinGroup(r) => self.classic_join_group(ctx, reply, r),
            ShardRequest::SyncGroup(r) => self.classic_sync_group(ctx, reply, r),
            ShardRequest::Heartbeat(r) => {
                let response = self.classic_heartbeat(ctx, r);
                self.reply(reply, ShardResponse::Heartbeat(response));
            }
            ShardRequest::LeaveGroup(r) => {
                let response = self.classic_leave_group(ctx, r);
                self.reply(reply, ShardResponse::LeaveGroup(response));
            }
            ShardRequest::OffsetCommit(r) => {
                let response = self.offset_commit(ctx, r);
                self.reply(reply, ShardResponse::OffsetCommit(response));
            }
            ShardRequest::OffsetFetch {
                group,
                require_stable,
            } => {
                let response = self.offset_fetch(ctx, group, require_stable);
                self.reply(reply, ShardResponse::OffsetFetch(response));
            }
            ShardRequest::OffsetDelete(r) => {
                let response = self.offset_delete(r);
                self.reply(reply, ShardResponse::OffsetDelete(response));
            }
            ShardRequest::TxnOffsetCommit(r) => {
                let response = self.txn_offset_commit(ctx, r);
                self.reply(reply, ShardResponse::TxnOffsetCommit(response));
            }
            ShardRequest::DescribeGroups(ids) => {
                let described = ids.iter().map(|id| self.describe_group(ctx, id)).collect();
                self.reply(reply, ShardResponse::DescribeGroups(described));
            }
            ShardRequest::ListGroups { states, types } => {
                let listed = self.list_groups(&states, &types);
                self.reply(reply, ShardResponse::ListGroups(listed));
            }
            ShardRequest::DeleteGroups(ids) => {
                let results = ids.iter().map(|id| self.delete_group(id)).collect();
                self.reply(reply, ShardResponse::DeleteGroups(results));
            }
            ShardRequest::ConsumerGroupHeartbeat(r) => {
                let response = self.consumer_group_heartbeat(ctx, r);
                self.reply(reply, ShardResponse::ConsumerGroupHeartbeat(response));
            }
            ShardRequest::ConsumerGroupDescribe(ids) => {
                let described = ids
                    .iter()
                    .map(|id| self.consumer_group_describe(id))
                    .collect();
                self.reply(reply, ShardResponse::ConsumerGroupDescribe(described));
            }
            ShardRequest::ShareGroupHeartbeat(r) => {
                let response = self.share_heartbeat(ctx, r);
                self.reply(reply, ShardResponse::ShareGroupHeartbeat(response));
            }
            ShardRequest::ShareGroupDescribe(ids) => {
                let described = ids.iter().map(|id| self.share_group_describe(id)).collect();
                self.reply(reply, ShardResponse::ShareGroupDescribe(described));
            }
            ShardRequest::StreamsGroupHeartbeat(r) => {
                let result = self.streams_heartbeat(ctx, r);
                self.reply(reply, ShardResponse::StreamsGroupHeartbeat(result));
            }
            ShardRequest::StreamsGroupDescribe(ids) => {
                let described = ids
                    .iter()
                    .map(|id| self.streams_group_describe(id))
                    .collect();
                self.reply(reply, ShardResponse::StreamsGroupDescribe(described));
            }
            ShardRequest::ShareGroupsToDelete(ids) => {
                let found = self.share_groups_to_delete(&ids);
                self.reply(reply, ShardResponse::ShareGroupsToDelete(found));
            }
            ShardRequest::ShareGroupInitializedPartitions(id) => {
                let found = self.share_group_initialized_partitions(&id);
                self.reply(reply, ShardResponse::ShareGroupInitializedPartitions(found));
            }
            ShardRequest::AlterShareGroupOffsets { group_id, topics } => {
                let answer = self.alter_share_group_offsets(&group_id, &topics);
                self.reply(reply, ShardResponse::AlterShareGroupOffsets(answer));
            }
            ShardRequest::InitiateDeleteShareGroupOffsets { group_id, topics } => {
                let found = self.initiate_delete_share_group_offsets(&group_id, &topics);
                self.reply(reply, ShardResponse::InitiateDeleteShareGroupOffsets(found));
            }
            ShardRequest::CompleteDeleteShareGroupOffsets { group_id, deleted } => {
                let done = self.complete_delete_share_group_offsets(&group_id, &deleted);
                self.reply(reply, ShardResponse::CompleteDeleteShareGroupOffsets(done));
            }
        }
    }

    /// The earliest time [`GroupCoordinatorShard::on_timeout`] has work.
    pub fn next_deadline(&self) -> Option<i64> {
        self.timer.next_deadline()
    }

    /// Fires every timer due at `now_ms`.
    pub fn on_timeout(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
        while let Some(key) = self.timer.pop_expired(now_ms) {
            match key {
                TimerKey::OffsetExpiration => {
                    self.expire_offsets_and_groups();
                    self.timer.schedule(
                        TimerKey::OffsetExpiration,
                        now_ms + self.config.offsets_retention_check_interval_ms,
                    );
                }
                TimerKey::ClassicHeartbeat { .. }
                | TimerKey::ClassicPendingMember { .. }
                | TimerKey::ClassicJoin { .. }
                | TimerKey::ClassicSync { .. } => self.classic_on_timer(key),
                TimerKey::ConsumerSession { .. } | TimerKey::ConsumerRebalance { .. } => {
                    self.consumer_on_timer(key)
                }
                TimerKey::ShareSession { group, member } => {
                    self.share_session_expired(&group, &member)
                }
                TimerKey::StreamsSession { group, member }
                | TimerKey::StreamsRebalance { group, member } => {
                    self.streams_fence(&group, &member)
                }
                TimerKey::StreamsInitialRebalance { group } => {
                    self.streams_initial_rebalance(&group)
                }
            }
        }
    }

    /// The records and replies produced since the last call.
    pub fn take_output(&mut self) -> ShardOutput {
        std::mem::take(&mut self.out)
    }

    /// Groups by type and state (`group-count` metrics).
    pub fn group_counts(&self) -> HashMap<(&'static str, &'static str), usize> {
        let mut counts = HashMap::new();
        for g in self.groups.values() {
            *counts.entry((g.group_type(), g.state_name())).or_insert(0) += 1;
        }
        counts
    }

    /// Counters of what this shard wrote (see [`ShardStats`]); the runtime takes them.
    pub fn take_stats(&mut self) -> ShardStats {
        std::mem::take(&mut self.stats)
    }

    /// Committed offsets held (the `num-offsets` gauge).
    pub fn offsets_count(&self) -> usize {
        self.offsets.len()
    }

    pub fn group(&self, id: &str) -> Option<&Group> {
        self.groups.get(id)
    }

    /// Queues a reply.
    pub(crate) fn reply(&mut self, id: ReplyId, response: ShardResponse) {
        self.out.replies.push((id, response));
    }

    /// Writes an operation's records: all of them, or, when they would not fit one batch
    /// of `max_batch_bytes`, none (Err(RECORD_LIST_TOO_LARGE)), leaving the state as it
    /// was. With `replay`, each record is applied to the state through
    /// [`GroupCoordinatorShard::replay`] (the offsets and KIP-848 records); without it,
    /// the caller has changed the state itself (classic groups, as Kafka's).
    pub(crate) fn write(
        &mut self,
        records: Vec<CoordinatorRecord>,
        replay: bool,
    ) -> Result<(), ErrorCode> {
        self.write_batch(None, records, replay)
    }

    /// [`GroupCoordinatorShard::write`] as one transactional batch of the producer: the
    /// records replay as pending until the transaction's marker.
    pub(crate) fn write_transactional(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        records: Vec<CoordinatorRecord>,
    ) -> Result<(), ErrorCode> {
        self.write_batch(Some((producer_id, producer_epoch)), records, true)
    }

    fn write_batch(
        &mut self,
        producer: Option<(i64, i16)>,
        records: Vec<CoordinatorRecord>,
        replay: bool,
    ) -> Result<(), ErrorCode> {
        if records.is_empty() {
            return Ok(());
        }
        let mut size = 61usize; // record batch header
        for r in &records {
            let (k, v) = r.encode().map_err(|_| ErrorCode::UnknownServerError)?;
            // A record's framing: length, attributes, deltas, key/value lengths, headers.
            size += 21 + k.len() + v.map_or(0, |v| v.len());
        }
        if size > self.config.max_batch_bytes {
            return Err(ErrorCode::RecordListTooLarge);
        }
        for r in &records {
            match &r.value {
                Some((GroupCoordinatorRecordValue::GroupMetadata(v), _))
                    if !v.members.is_empty() =>
                {
                    self.stats.classic_rebalances += 1
                }
                Some((GroupCoordinatorRecordValue::ConsumerGroupMetadata(_), _)) => {
                    self.stats.consumer_rebalances += 1
                }
                Some((GroupCoordinatorRecordValue::ShareGroupMetadata(_), _)) => {
                    self.stats.share_rebalances += 1
                }
                Some((GroupCoordinatorRecordValue::StreamsGroupMetadata(_), _)) => {
                    self.stats.streams_rebalances += 1
                }
                Some((GroupCoordinatorRecordValue::OffsetCommit(_), _)) => {
                    self.stats.offset_commits += 1
                }
                None if matches!(r.key, GroupCoordinatorRecordKey::OffsetCommit(_)) => {
                    self.stats.offset_deletions += 1
                }
                _ => {}
            }
        }
        if replay {
            let producer_id = producer.map_or(-1, |(id, _)| id);
            for r in &records {
                // Placed after everything replayed or written before it.
                let offset = self.last_record_offset + 1;
                // Records built by this shard always replay.
                if let Err(e) = self.replay(offset, producer_id, r.clone()) {
                    debug_assert!(false, "a record the shard wrote does not replay: {e}");
                }
            }
        } else {
            self.last_record_offset += records.len() as i64;
        }
        match producer {
            None => self.out.records.extend(records),
            Some(p) => self.out.txn_records.push((p, records)),
        }
        Ok(())
    }

    fn list_groups(&self, states: &[String], types: &[String]) -> Vec<ListedGroup> {
        let mut listed: Vec<ListedGroup> = self
            .groups
            .iter()
            .filter(|(_, g)| {
                (states.is_empty()
                    || states
                        .iter()
                        .any(|s| s.eq_ignore_ascii_case(g.state_name())))
                    && (types.is_empty()
                        || types.iter().any(|t| t.eq_ignore_ascii_case(g.group_type())))
            })
            .map(|(id, g)| ListedGroup {
                group_id: id.clone(),
                protocol_type: g.protocol_type().to_string(),
                group_state: g.state_name().to_string(),
                group_type: g.group_type().to_string(),
                ..Default::default()
            })
            .collect();
        listed.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        listed
    }

    fn describe_group(&self, ctx: &RequestContext, id: &str) -> DescribedGroup {
        match self.groups.get(id) {
            Some(Group::Classic(g)) => g.describe(),
            Some(Group::Consumer(g)) => g.describe_classic(ctx),
            // Kafka's `describeGroups` reads classic groups only: a share group is
            // described as not found (v6+ name the error).
            Some(Group::Share(_) | Group::Streams(_)) => DescribedGroup {
                group_id: id.to_string(),
                group_state: "Dead".into(),
                error_code: if ctx.api_version >= 6 {
                    ErrorCode::GroupIdNotFound.code()
                } else {
                    0
                },
                error_message: (ctx.api_version >= 6)
                    .then(|| format!("Group {id} is not a classic group.")),
                ..Default::default()
            },
            // Kafka describes an unknown group as Dead with no error.
            None => DescribedGroup {
                group_id: id.to_string(),
                group_state: "Dead".into(),
                ..Default::default()
            },
        }
    }

    /// DeleteGroups for one group (Kafka's `deleteGroups`): only an empty group may go;
    /// its offsets and its own records are deleted by tombstones.
    fn delete_group(&mut self, id: &str) -> DeletableGroupResult {
        let result = |code: ErrorCode| DeletableGroupResult {
            group_id: id.to_string(),
            error_code: code.code(),
            ..Default::default()
        };
        let Some(group) = self.groups.get(id) else {
            return result(ErrorCode::GroupIdNotFound);
        };
        if !group.is_empty() {
            return result(ErrorCode::NonEmptyGroup);
        }
        let mut records = self.offsets.delete_all_records(id);
        records.extend(group.delete_records());
        // Tombstones replay into removals of the offsets; the group goes below.
        let code = match self.write(records, true) {
            Ok(()) => {
                self.groups.remove(id);
                ErrorCode::None
            }
            Err(code) => code,
        };
        result(code)
    }
}
