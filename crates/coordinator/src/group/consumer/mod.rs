//! KIP-848 consumer groups (Kafka's `ConsumerGroup` and the consumer half of
//! `GroupMetadataManager`): ConsumerGroupHeartbeat, ConsumerGroupDescribe, member epochs,
//! the server-side assignors and incremental reconciliation.
//!
//! The rooms:
//! - [`group`]: the group, its state and what offsets and DescribeGroups ask of it;
//! - [`member`]: a member, its subscription and current assignment;
//! - [`records`]: the records and their replay, the only way the state changes;
//! - [`heartbeat`]: joins and heartbeats;
//! - [`lifecycle`]: leaving, fencing, timers, loading and metadata updates;
//! - [`target`]: the group as a change leaves it, and its new target assignment;
//! - [`assignor`]: the `uniform` and `range` assignors;
//! - [`reconciliation`]: a member's step toward its target (`CurrentAssignmentBuilder`);
//! - [`subscription`]: regular expressions and the metadata hash.
//!
//! Each request is computed against the state as it is and produces records; the shard
//! writes them (all or none) and replays them, and only then are timers set. Time is the
//! shard's `now_ms`, topics its `metadata`; nothing is random.

pub mod assignor;
pub mod group;
pub mod heartbeat;
pub mod lifecycle;
pub mod member;
pub mod reconciliation;
pub mod records;
mod replay;
pub mod subscription;
pub mod target;

#[cfg(test)]
mod tests;

pub use group::{ConsumerGroup, ConsumerGroupState, ResolvedRegex};
pub use member::{ConsumerGroupMember, MemberState, PartitionEpochs, Partitions};

use kraftd_protocol::messages::consumer_group_describe_response::DescribedGroup as ConsumerDescribedGroup;
use kraftd_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kraftd_protocol::{ErrorCode, GroupCoordinatorRecordKey, GroupCoordinatorRecordValue};

use crate::context::RequestContext;
use crate::group::shard::{Group, GroupCoordinatorShard};
use crate::group::timer::TimerKey;

impl GroupCoordinatorShard {
    /// The topics changed: regexes are resolved anew and groups whose subscribed topics
    /// changed get a new group epoch.
    pub(crate) fn consumer_on_metadata_update(&mut self) {
        self.consumer_metadata_changed();
    }

    /// Replays a KIP-848 record; `Ok(false)` when the record is not one of them.
    pub(crate) fn consumer_replay(
        &mut self,
        key: GroupCoordinatorRecordKey,
        value: Option<GroupCoordinatorRecordValue>,
    ) -> Result<bool, String> {
        self.consumer_replay_record(key, value)
    }

    /// Timers for the loaded members.
    pub(crate) fn consumer_on_loaded(&mut self) {
        self.consumer_loaded();
    }

    pub(crate) fn consumer_group_heartbeat(
        &mut self,
        ctx: &RequestContext,
        r: ConsumerGroupHeartbeatRequest,
    ) -> ConsumerGroupHeartbeatResponse {
        self.consumer_heartbeat(ctx, r)
    }

    /// ConsumerGroupDescribe for one group: GROUP_ID_NOT_FOUND unless it is a consumer
    /// group.
    pub(crate) fn consumer_group_describe(&mut self, id: &str) -> ConsumerDescribedGroup {
        let not_found = |message: String| ConsumerDescribedGroup {
            group_id: id.to_string(),
            error_code: ErrorCode::GroupIdNotFound.code(),
            error_message: Some(message),
            ..Default::default()
        };
        match self.groups.get(id) {
            Some(Group::Consumer(g)) => {
                g.describe(&*self.metadata, &self.config.consumer_assignors)
            }
            Some(_) => not_found(format!("Group {id} is not a consumer group.")),
            None => not_found(format!("Group {id} not found.")),
        }
    }

    pub(crate) fn consumer_on_timer(&mut self, key: TimerKey) {
        self.consumer_timer_fired(key);
    }
}
