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

    /// DeleteGroups' first step for share groups (Kafka's `sharePartitionDeleteRequests`
    /// and `shareGroupBuildPartitionDeleteRequest`): the share state each named share group
    /// holds, to delete through the persister before the group goes. Groups that are not
    /// share groups are left out (the deletion of the others goes on as before); a share
    /// group with members is refused with NON_EMPTY_GROUP. A group with state metadata has
    /// its initialized and initializing topics moved to the deleting list first, in one
    /// ShareGroupStatePartitionMetadata record as Kafka writes it: should the persister
    /// fail, the group stays with its state marked deleting, and the next DeleteGroups asks
    /// for those topics again.
    pub(crate) fn share_groups_to_delete(
        &mut self,
        ids: &[String],
    ) -> Vec<(String, ShareGroupDeletion)> {
        let mut out = Vec::new();
        let mut written = Vec::new();
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
            let deleting = StatePartitionMetadata {
                deleting: topics.iter().map(|(t, v)| (*t, v.name.clone())).collect(),
                ..Default::default()
            };
            written.push(records::state_partition_metadata(id, &deleting));
            if topics.is_empty() {
                out.push((id.clone(), Ok(None)));
                continue;
            }
            let request =
                group::delete_state_request(id, topics.into_iter().map(|(t, v)| (t, v.partitions)));
            out.push((id.clone(), Ok(Some(request))));
        }
        // One write for the whole request, as Kafka's one write operation: when it fails,
        // every share group is refused with its error and none is deleted.
        if let Err(code) = self.write(written, true) {
            for (_, deletion) in &mut out {
                *deletion = Err(code);
            }
        }
        out
    }

    /// The cluster's topics changed: topics that are gone leave every share group's state
    /// metadata, from the initializing, initialized and deleting lists alike (Kafka's
    /// `maybeCleanupShareGroupState` on deleted topics; their share state the share
    /// coordinator drops on its own, `ShareCoordinatorShard::on_metadata_update`). A topic
    /// is gone when the image knows no topic by its id — one deleted and created again under
    /// its name has a new id. The image a shard is handed is never older than the records it
    /// replayed: its leadership was published from an image past the previous leader's
    /// resignation, and that leader only wrote what its own older image knew. Each group's
    /// record is its own write, so one large group cannot keep the others from being cleaned.
    pub(crate) fn share_on_metadata_update(&mut self) {
        let metadata = &*self.metadata;
        let gone = |t: &kraftd_protocol::Uuid| metadata.topic_by_id(*t).is_none();
        let mut written: Vec<(String, StatePartitionMetadata)> = Vec::new();
        for (id, g) in &self.groups {
            let Group::Share(g) = g else {
                continue;
            };
            let Some(state) = &g.state_metadata else {
                continue;
            };
            if !(state.initializing.keys().any(gone)
                || state.initialized.keys().any(gone)
                || state.deleting.keys().any(gone))
            {
                continue;
            }
            let mut next = state.clone();
            next.initializing.retain(|t, _| !gone(t));
            next.initialized.retain(|t, _| !gone(t));
            next.deleting.retain(|t, _| !gone(t));
            written.push((id.clone(), next));
        }
        // The groups live in a hash map: the records go out in group-id order, so that
        // every run of the same inputs writes the same log.
        written.sort_by(|a, b| a.0.cmp(&b.0));
        for (id, next) in written {
            // A record too large for a batch leaves the group as it was; the next
            // metadata update tries again.
            let _ = self.write(vec![records::state_partition_metadata(&id, &next)], true);
        }
    }
}
