//! KIP-1071 streams groups (Kafka's `StreamsGroup` and the streams half of
//! `GroupMetadataManager`): StreamsGroupHeartbeat with the application's topology, its
//! internal topics (the broker creates the missing ones), member epochs, the `sticky` task
//! assignor and incremental reconciliation; StreamsGroupDescribe.
//!
//! Streams groups live in the group-id namespace of the other types; a request of another
//! type on a streams group is refused with GROUP_ID_NOT_FOUND, as Kafka does.
//!
//! The rooms:
//! - [`group`]: the group, its members and their tasks;
//! - [`topology`]: the topology against the topics (task counts, internal topics, status);
//! - [`records`]: the StreamsGroup* records; `replay.rs`, the only way the state changes;
//! - [`heartbeat`]: joins, heartbeats, leaving, timeouts, the initial rebalance delay;
//! - [`assignor`]: the `sticky` task assignor;
//! - [`endpoints`]: the Interactive Queries map (endpoint → partitions);
//! - [`reconciliation`]: a member's step toward its target (`CurrentAssignmentBuilder`).

pub mod assignor;
pub mod endpoints;
pub mod group;
pub mod heartbeat;
pub mod reconciliation;
pub mod records;
mod replay;
pub mod topology;

#[cfg(test)]
mod tests;

pub use group::{
    StreamsGroup, StreamsGroupMember, StreamsGroupState, StreamsHeartbeatResult, TasksTuple,
};

use kraftd_protocol::messages::streams_group_describe_response::DescribedGroup;
use kraftd_protocol::ErrorCode;

use crate::group::shard::{Group, GroupCoordinatorShard};

/// The one task assignor kraftd has (`group.streams.assignors`' default).
pub const STREAMS_ASSIGNOR_NAME: &str = "sticky";

impl GroupCoordinatorShard {
    /// StreamsGroupDescribe for one group: GROUP_ID_NOT_FOUND unless it is a streams group.
    pub(crate) fn streams_group_describe(&self, id: &str) -> DescribedGroup {
        let not_found = |message: String| DescribedGroup {
            group_id: id.to_string(),
            error_code: ErrorCode::GroupIdNotFound.code(),
            error_message: Some(message),
            authorized_operations: i32::MIN,
            ..Default::default()
        };
        match self.groups.get(id) {
            Some(Group::Streams(g)) => g.describe(),
            Some(_) => not_found(format!("Group {id} is not a streams group.")),
            None => not_found(format!("Group {id} not found.")),
        }
    }
}
