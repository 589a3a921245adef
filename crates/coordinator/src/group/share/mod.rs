//! KIP-932 share groups (Kafka's `ShareGroup` and the share half of
//! `GroupMetadataManager`): ShareGroupHeartbeat, ShareGroupDescribe, the `simple`
//! server-side assignor, and the share-group state initialization handed to the persister.
//!
//! Share groups live in the group-id namespace of classic and consumer groups; a request
//! of one type on a group of another is refused with GROUP_ID_NOT_FOUND, as Kafka does (no
//! conversion between share groups and the others).
//!
//! The rooms:
//! - [`group`]: the group, its members and its state-partition metadata;
//! - [`records`]: the ShareGroup* records; `replay.rs`, the only way the state changes;
//! - [`heartbeat`]: joins, heartbeats, leaving, session expiry, state initialization;
//! - [`assignor`]: the `simple` assignor, where members may share a partition;
//! - [`offsets_admin`]: what Describe-, Alter- and DeleteShareGroupOffsets need
//!   of the shard (the persister calls are the broker's).

pub mod assignor;
pub mod group;
pub mod heartbeat;
pub mod offsets_admin;
pub mod records;
mod replay;

#[cfg(test)]
mod tests;

pub use group::{
    InitMapValue, ShareGroup, ShareGroupDeletion, ShareGroupMember, ShareGroupState,
    ShareOffsetsAlter, ShareOffsetsDeletion, StatePartitionMetadata, SHARE_ASSIGNOR_NAME,
};

use kraftd_protocol::messages::share_group_describe_response::DescribedGroup as ShareDescribedGroup;
use kraftd_protocol::messages::{delete_share_group_state_request, DeleteShareGroupStateRequest};
use kraftd_protocol::ErrorCode;

use crate::group::shard::{Group, GroupCoordinatorShard};

impl GroupCoordinatorShard {
    /// ShareGroupDescribe for one group: GROUP_ID_NOT_FOUND unless it is a share group.
    pub(crate) fn share_group_describe(&self, id: &str) -> ShareDescribedGroup {
        let not_found = |message: String| ShareDescribedGroup {
            group_id: id.to_string(),
            error_code: ErrorCode::GroupIdNotFound.code(),
            error_message: Some(message),
            authorized_operations: i32::MIN,
            ..Default::default()
        };
        match self.groups.get(id) {
            Some(Group::Share(g)) => g.describe(&*self.metadata),
            Some(_) => not_found(format!("Group {id} is not a share group.")),
            None => not_found(format!("Group {id} not found.")),
        }
    }

    /// For DeleteGroups: the share state each named share group holds. Groups that are not
    /// share groups are left out (the deletion of the others goes on as before); a share
    /// group with members is refused with NON_EMPTY_GROUP.
    pub(crate) fn share_groups_to_delete(
        &self,
        ids: &[String],
    ) -> Vec<(String, ShareGroupDeletion)> {
        let mut out = Vec::new();
        for id in ids {
            let Some(Group::Share(g)) = self.groups.get(id) else {
                continue;
            };
            if !g.is_empty() {
                out.push((id.clone(), Err(ErrorCode::NonEmptyGroup)));
                continue;
            }
            let Some(state) = &g.state_metadata else {
                out.push((id.clone(), Ok(None)));
                continue;
            };
            let mut topics = group::combine_init_maps(&state.initialized, &state.initializing);
            // A deletion that did not complete before is retried for the topics that exist.
            for topic in state.deleting.keys() {
                if let Some((name, n)) = self.metadata.topic_by_id(*topic) {
                    let all = (0..n).collect();
                    let v = InitMapValue {
                        name,
                        partitions: all,
                        timestamp: -1,
                    };
                    topics = group::combine_init_maps(&topics, &[(*topic, v)].into());
                }
            }
            // A deleted topic's share state went with it (the share coordinator tombstones
            // it): only topics that still exist under their id are asked for, as Kafka
            // leaves vanished topics out of a deletion.
            topics.retain(|t, _| self.metadata.topic_by_id(*t).is_some());
            if topics.is_empty() {
                out.push((id.clone(), Ok(None)));
                continue;
            }
            let request = DeleteShareGroupStateRequest {
                group_id: id.clone(),
                topics: topics
                    .iter()
                    .map(|(t, v)| delete_share_group_state_request::DeleteStateData {
                        topic_id: *t,
                        partitions: v
                            .partitions
                            .iter()
                            .map(|p| delete_share_group_state_request::PartitionData {
                                partition: *p,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            out.push((id.clone(), Ok(Some(request))));
        }
        out
    }
}
