//! Classic groups (Kafka's `ClassicGroup` and the classic half of `GroupMetadataManager`):
//! JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the rebalance state machine.
//!
//! STUB: to be written (see the issue); the signatures are the shard's contract.

use kraftd_protocol::coordinator::{GroupMetadataKey, GroupMetadataValue};
use kraftd_protocol::messages::describe_groups_response::DescribedGroup;
use kraftd_protocol::messages::{
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, SyncGroupRequest, SyncGroupResponse,
};
use kraftd_protocol::{ErrorCode, GroupCoordinatorRecordKey};

use crate::record::CoordinatorRecord;
use crate::shard::{Group, GroupCoordinatorShard, ReplyId, RequestContext, ShardResponse};
use crate::timer::TimerKey;

/// A classic group.
#[derive(Debug, Clone)]
pub struct ClassicGroup {
    pub group_id: String,
    pub protocol_type: Option<String>,
    pub generation_id: i32,
    pub current_state_timestamp: Option<i64>,
}

impl ClassicGroup {
    /// An empty group with no protocol (created by an offset commit outside a generation).
    pub fn new_empty(group_id: String, now_ms: i64) -> Self {
        ClassicGroup {
            group_id,
            protocol_type: None,
            generation_id: 0,
            current_state_timestamp: Some(now_ms),
        }
    }

    pub fn state_name(&self) -> &'static str {
        "Empty"
    }

    pub fn protocol_type(&self) -> &str {
        self.protocol_type.as_deref().unwrap_or("")
    }

    pub fn is_empty(&self) -> bool {
        true
    }

    pub fn current_state_timestamp(&self) -> Option<i64> {
        self.current_state_timestamp
    }

    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        _group_instance_id: Option<&str>,
        generation: i32,
        _api_version: i16,
    ) -> Result<(), ErrorCode> {
        if generation < 0 && member_id.is_empty() {
            Ok(())
        } else {
            Err(ErrorCode::IllegalGeneration)
        }
    }

    pub fn is_subscribed_to_topic(&self, _topic: &str) -> bool {
        false
    }

    pub fn delete_records(&self) -> Vec<CoordinatorRecord> {
        vec![CoordinatorRecord::tombstone(
            GroupCoordinatorRecordKey::GroupMetadata(GroupMetadataKey {
                group: self.group_id.clone(),
            }),
        )]
    }

    pub fn describe(&self) -> DescribedGroup {
        DescribedGroup {
            group_id: self.group_id.clone(),
            group_state: self.state_name().into(),
            protocol_type: self.protocol_type().into(),
            ..Default::default()
        }
    }
}

impl GroupCoordinatorShard {
    pub(crate) fn classic_replay_group_metadata(
        &mut self,
        key: GroupMetadataKey,
        value: Option<GroupMetadataValue>,
    ) {
        match value {
            None => {
                self.groups.remove(&key.group);
            }
            Some(v) => {
                let mut g = ClassicGroup::new_empty(key.group.clone(), self.now_ms);
                g.protocol_type = Some(v.protocol_type);
                g.generation_id = v.generation;
                self.groups.insert(key.group, Group::Classic(g));
            }
        }
    }

    pub(crate) fn classic_on_loaded(&mut self) {}

    pub(crate) fn classic_join_group(
        &mut self,
        _ctx: &RequestContext,
        reply: ReplyId,
        r: JoinGroupRequest,
    ) {
        let _ = r;
        self.reply(
            reply,
            ShardResponse::JoinGroup(JoinGroupResponse {
                error_code: ErrorCode::UnknownServerError.code(),
                ..Default::default()
            }),
        );
    }

    pub(crate) fn classic_sync_group(
        &mut self,
        _ctx: &RequestContext,
        reply: ReplyId,
        _r: SyncGroupRequest,
    ) {
        self.reply(
            reply,
            ShardResponse::SyncGroup(SyncGroupResponse {
                error_code: ErrorCode::UnknownServerError.code(),
                ..Default::default()
            }),
        );
    }

    pub(crate) fn classic_heartbeat(
        &mut self,
        _ctx: &RequestContext,
        _r: HeartbeatRequest,
    ) -> HeartbeatResponse {
        HeartbeatResponse {
            error_code: ErrorCode::UnknownServerError.code(),
            ..Default::default()
        }
    }

    pub(crate) fn classic_leave_group(
        &mut self,
        _ctx: &RequestContext,
        _r: LeaveGroupRequest,
    ) -> LeaveGroupResponse {
        LeaveGroupResponse {
            error_code: ErrorCode::UnknownServerError.code(),
            ..Default::default()
        }
    }

    pub(crate) fn classic_on_timer(&mut self, _key: TimerKey) {}
}
