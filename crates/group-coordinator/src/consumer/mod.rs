//! KIP-848 consumer groups (Kafka's `ConsumerGroup` and the consumer half of
//! `GroupMetadataManager`): ConsumerGroupHeartbeat, ConsumerGroupDescribe, member epochs,
//! the server-side assignors and incremental reconciliation.
//!
//! STUB: to be written (see the issue); the signatures are the shard's contract.

use kraftd_protocol::messages::consumer_group_describe_response::DescribedGroup as ConsumerDescribedGroup;
use kraftd_protocol::messages::describe_groups_response::DescribedGroup;
use kraftd_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kraftd_protocol::{ErrorCode, GroupCoordinatorRecordKey, GroupCoordinatorRecordValue};

use crate::record::CoordinatorRecord;
use crate::shard::{GroupCoordinatorShard, RequestContext};
use crate::timer::TimerKey;

/// A KIP-848 consumer group.
#[derive(Debug, Clone)]
pub struct ConsumerGroup {
    pub group_id: String,
}

impl ConsumerGroup {
    pub fn state_name(&self) -> &'static str {
        "Empty"
    }

    pub fn is_empty(&self) -> bool {
        true
    }

    pub fn validate_offset_commit(
        &self,
        _member_id: &str,
        _group_instance_id: Option<&str>,
        _member_epoch: i32,
        _api_version: i16,
    ) -> Result<(), ErrorCode> {
        Ok(())
    }

    pub fn validate_offset_fetch(
        &self,
        _member_id: Option<&str>,
        _member_epoch: i32,
    ) -> Result<(), ErrorCode> {
        Ok(())
    }

    pub fn is_subscribed_to_topic(&self, _topic: &str) -> bool {
        false
    }

    pub fn delete_records(&self) -> Vec<CoordinatorRecord> {
        Vec::new()
    }

    /// The group as the classic DescribeGroups shows it.
    pub fn describe_classic(&self, _ctx: &RequestContext) -> DescribedGroup {
        DescribedGroup {
            group_id: self.group_id.clone(),
            group_state: self.state_name().into(),
            protocol_type: "consumer".into(),
            ..Default::default()
        }
    }
}

impl GroupCoordinatorShard {
    pub(crate) fn consumer_on_metadata_update(&mut self) {}

    /// Replays a KIP-848 record; `Ok(false)` when the record is not one of them.
    pub(crate) fn consumer_replay(
        &mut self,
        _key: GroupCoordinatorRecordKey,
        _value: Option<GroupCoordinatorRecordValue>,
    ) -> Result<bool, String> {
        Ok(false)
    }

    pub(crate) fn consumer_on_loaded(&mut self) {}

    pub(crate) fn consumer_group_heartbeat(
        &mut self,
        _ctx: &RequestContext,
        _r: ConsumerGroupHeartbeatRequest,
    ) -> ConsumerGroupHeartbeatResponse {
        ConsumerGroupHeartbeatResponse {
            error_code: ErrorCode::UnsupportedVersion.code(),
            ..Default::default()
        }
    }

    pub(crate) fn consumer_group_describe(&mut self, id: &str) -> ConsumerDescribedGroup {
        ConsumerDescribedGroup {
            group_id: id.to_string(),
            error_code: ErrorCode::GroupIdNotFound.code(),
            ..Default::default()
        }
    }

    pub(crate) fn consumer_on_timer(&mut self, _key: TimerKey) {}
}
