//! A share group and its members (Kafka's `ShareGroup`, `ShareGroupMember` and the
//! `ShareGroupStatePartitionMetadataInfo` the `GroupMetadataManager` keeps beside it), as
//! the ShareGroup* records leave them: replay (`replay.rs`) is the only writer.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::messages::alter_share_group_offsets_response::AlterShareGroupOffsetsResponseTopic;
use kraftd_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kraftd_protocol::messages::share_group_describe_response::{
    Assignment as DescribedAssignment, DescribedGroup, Member as DescribedMember,
    TopicPartitions as DescribedTopicPartitions,
};
use kraftd_protocol::messages::{
    delete_share_group_state_request, DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
};
use kraftd_protocol::{ErrorCode, Uuid};

use crate::context::TopicMetadata;
use crate::group::consumer::{MemberState, Partitions};
use crate::group::record::CoordinatorRecord;

use super::records;

/// What DeleteGroups must delete in the share coordinator before a share group goes
/// (Kafka's `shareGroupBuildPartitionDeleteRequest`), per group id: the request, `None`
/// when the group holds no share state, or the error that refuses the deletion.
pub type ShareGroupDeletion = Result<Option<DeleteShareGroupStateRequest>, ErrorCode>;

/// The DeleteShareGroupState request for a group's share partitions, topic by topic: what
/// both DeleteGroups and DeleteShareGroupOffsets hand the persister.
pub fn delete_state_request<P: IntoIterator<Item = i32>>(
    group_id: &str,
    topics: impl IntoIterator<Item = (Uuid, P)>,
) -> DeleteShareGroupStateRequest {
    DeleteShareGroupStateRequest {
        group_id: group_id.to_string(),
        topics: topics
            .into_iter()
            .map(
                |(topic_id, partitions)| delete_share_group_state_request::DeleteStateData {
                    topic_id,
                    partitions: partitions
                        .into_iter()
                        .map(
                            |partition| delete_share_group_state_request::PartitionData {
                                partition,
                                ..Default::default()
                            },
                        )
                        .collect(),
                    ..Default::default()
                },
            )
            .collect(),
        ..Default::default()
    }
}

/// DeleteShareGroupOffsets' first step (Kafka's `DeleteShareGroupOffsetsResultHolder`):
/// the error refusing the whole request, or the topics answered with an error here and the
/// share state to delete through the persister (`None`: nothing to delete).
#[derive(Debug, Clone, PartialEq)]
pub enum ShareOffsetsDeletion {
    Refused(ErrorCode, String),
    Eligible {
        error_topics: Vec<DeleteShareGroupOffsetsResponseTopic>,
        request: Option<DeleteShareGroupStateRequest>,
    },
}

/// AlterShareGroupOffsets as the shard answers it (Kafka's `alterShareGroupOffsets`): the
/// error refusing the whole request, or each topic's partitions answered and the
/// initialization of the accepted partitions at their new start offsets (`None`: nothing
/// accepted).
#[derive(Debug, Clone, PartialEq)]
pub enum ShareOffsetsAlter {
    Refused(ErrorCode, String),
    Accepted {
        topics: Vec<AlterShareGroupOffsetsResponseTopic>,
        request: Option<InitializeShareGroupStateRequest>,
    },
}

/// The one server-side assignor of share groups (Kafka's `SimpleAssignor`), as
/// ShareGroupDescribe names it.
pub const SHARE_ASSIGNOR_NAME: &str = "simple";

/// A share group's state (Kafka's `ShareGroupState`): it has members or it has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareGroupState {
    Empty,
    Stable,
}

impl ShareGroupState {
    pub fn name(self) -> &'static str {
        match self {
            ShareGroupState::Empty => "Empty",
            ShareGroupState::Stable => "Stable",
        }
    }
}

/// One member (Kafka's `ShareGroupMember`): its subscription (ShareGroupMemberMetadata)
/// and its current assignment (ShareGroupCurrentMemberAssignment). A share member never
/// revokes: it moves to its target at once, several members may hold one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupMember {
    pub member_id: String,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: BTreeSet<String>,
    pub assigned: Partitions,
}

impl ShareGroupMember {
    pub fn new(member_id: String) -> Self {
        ShareGroupMember {
            member_id,
            member_epoch: 0,
            previous_member_epoch: -1,
            state: MemberState::Stable,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: BTreeSet::new(),
            assigned: Partitions::new(),
        }
    }
}

/// Topic partitions of a share group's state as ShareGroupStatePartitionMetadata lists
/// them (Kafka's `InitMapValue`): the topic's name, the partitions, and when this
/// coordinator saw them enter the list (an initialization older than
/// `group.share.initialize.retry.interval.ms` is tried again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitMapValue {
    pub name: String,
    pub partitions: BTreeSet<i32>,
    pub timestamp: i64,
}

/// Which share partitions of the group have their state in the share coordinator
/// (Kafka's `ShareGroupStatePartitionMetadataInfo`): only initialized partitions are
/// assigned, so a member never fetches a partition whose start offset is not set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatePartitionMetadata {
    pub initializing: BTreeMap<Uuid, InitMapValue>,
    pub initialized: BTreeMap<Uuid, InitMapValue>,
    pub deleting: BTreeMap<Uuid, String>,
}

/// The union of two maps' partitions, `b`'s name and timestamp winning (Kafka's
/// `combineInitMaps`).
pub fn combine_init_maps(
    a: &BTreeMap<Uuid, InitMapValue>,
    b: &BTreeMap<Uuid, InitMapValue>,
) -> BTreeMap<Uuid, InitMapValue> {
    let mut out = a.clone();
    for (id, v) in b {
        match out.get_mut(id) {
            Some(e) => {
                e.partitions.extend(v.partitions.iter().copied());
                e.name = v.name.clone();
                e.timestamp = v.timestamp;
            }
            None => {
                out.insert(*id, v.clone());
            }
        }
    }
    out
}

/// A share group (Kafka's `ShareGroup`).
#[derive(Debug, Clone, PartialEq)]
pub struct ShareGroup {
    pub group_id: String,
    pub group_epoch: i32,
    pub metadata_hash: i64,
    /// The epoch of the target assignment (-1 before the first record).
    pub assignment_epoch: i32,
    pub assignment_timestamp: i64,
    pub members: BTreeMap<String, ShareGroupMember>,
    pub target_assignment: BTreeMap<String, Partitions>,
    /// ShareGroupStatePartitionMetadata, if written.
    pub state_metadata: Option<StatePartitionMetadata>,
}

impl ShareGroup {
    pub fn new(group_id: String) -> Self {
        ShareGroup {
            group_id,
            group_epoch: 0,
            metadata_hash: 0,
            assignment_epoch: -1,
            assignment_timestamp: 0,
            members: BTreeMap::new(),
            target_assignment: BTreeMap::new(),
            state_metadata: None,
        }
    }

    pub fn state(&self) -> ShareGroupState {
        if self.members.is_empty() {
            ShareGroupState::Empty
        } else {
            ShareGroupState::Stable
        }
    }

    pub fn state_name(&self) -> &'static str {
        self.state().name()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Every topic some member subscribes to, `old` replaced by `new` (a member leaving
    /// when `new` is `None`): Kafka's `computeSubscribedTopicNames`.
    pub fn subscribed_topic_names_with(
        &self,
        old: Option<&ShareGroupMember>,
        new: Option<&ShareGroupMember>,
    ) -> BTreeSet<String> {
        let skip = old.or(new).map(|m| m.member_id.as_str());
        let mut names: BTreeSet<String> = self
            .members
            .values()
            .filter(|m| Some(m.member_id.as_str()) != skip)
            .flat_map(|m| m.subscribed_topic_names.iter().cloned())
            .collect();
        if let Some(n) = new {
            names.extend(n.subscribed_topic_names.iter().cloned());
        }
        names
    }

    /// Whether any member subscribes to `topic`.
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        self.members
            .values()
            .any(|m| m.subscribed_topic_names.contains(topic))
    }

    /// The initialized share partitions, by topic id.
    pub fn initialized_partitions(&self) -> Partitions {
        self.state_metadata
            .as_ref()
            .map(|s| {
                s.initialized
                    .iter()
                    .map(|(id, v)| (*id, v.partitions.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The records deleting the group (Kafka's `ShareGroup.createGroupTombstoneRecords`):
    /// every member's, the assignment's, the epoch's and the state metadata's tombstones.
    pub fn delete_records(&self) -> Vec<CoordinatorRecord> {
        let g = &self.group_id;
        let mut out = Vec::new();
        for id in self.members.keys() {
            out.push(records::current_assignment_tombstone(g, id));
        }
        for id in self.target_assignment.keys() {
            out.push(records::target_assignment_tombstone(g, id));
        }
        out.push(records::target_assignment_epoch_tombstone(g));
        for id in self.members.keys() {
            out.push(records::member_subscription_tombstone(g, id));
        }
        out.push(records::group_epoch_tombstone(g));
        out.push(records::state_partition_metadata_tombstone(g));
        out
    }

    /// ShareGroupDescribe's entry for the group (Kafka's `asDescribedGroup`).
    pub fn describe(&self, metadata: &dyn TopicMetadata) -> DescribedGroup {
        DescribedGroup {
            group_id: self.group_id.clone(),
            group_state: self.state_name().to_string(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            assignor_name: SHARE_ASSIGNOR_NAME.to_string(),
            members: self
                .members
                .values()
                .map(|m| DescribedMember {
                    member_id: m.member_id.clone(),
                    rack_id: m.rack_id.clone(),
                    member_epoch: m.member_epoch,
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    subscribed_topic_names: m.subscribed_topic_names.iter().cloned().collect(),
                    assignment: DescribedAssignment {
                        topic_partitions: m
                            .assigned
                            .iter()
                            .filter_map(|(id, ps)| {
                                // A deleted topic is left out, as Kafka's
                                // `topicPartitionsFromMap` does.
                                let (name, _) = metadata.topic_by_id(*id)?;
                                Some(DescribedTopicPartitions {
                                    topic_id: *id,
                                    topic_name: name,
                                    partitions: ps.iter().copied().collect(),
                                    ..Default::default()
                                })
                            })
                            .collect(),
                        ..Default::default()
                    },
                    ..Default::default()
                })
                .collect(),
            authorized_operations: i32::MIN,
            ..Default::default()
        }
    }
}
