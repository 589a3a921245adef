//! A streams group and its members (Kafka's `StreamsGroup`, `StreamsGroupMember`,
//! `TasksTuple`), as the StreamsGroup* records leave them: replay (`replay.rs`) is the only
//! writer.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::coordinator::streams_group_topology_value::StreamsGroupTopologyValue;
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::streams_group_describe_response::{
    Assignment, DescribedGroup, Endpoint, KeyValue, Member, Subtopology, TaskIds, TopicInfo,
    Topology,
};
use kraftd_protocol::messages::streams_group_heartbeat_request::TaskOffset;
use kraftd_protocol::messages::StreamsGroupHeartbeatResponse;

use kraftd_protocol::ErrorCode;

use crate::group::commit_api::CommitApi;
use crate::group::consumer::group::{CONSUMER_PROTOCOL_COMMIT_VERSION, UNKNOWN_GENERATION_ID};
use crate::group::consumer::MemberState;
use crate::group::record::CoordinatorRecord;

use super::records;

/// A StreamsGroupHeartbeat's answer and the internal topics the broker should create
/// (Kafka's `StreamsGroupHeartbeatResult`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamsHeartbeatResult {
    pub response: StreamsGroupHeartbeatResponse,
    pub topics_to_create: Vec<CreatableTopic>,
}

/// Tasks by subtopology id: the partitions of each (Kafka's `Map<String, Set<Integer>>`).
pub type Tasks = BTreeMap<String, BTreeSet<i32>>;

/// Active tasks with the epoch each was assigned at (Kafka's `activeTasksWithEpochs`):
/// an offset commit with an older member epoch is fenced by them.
pub type TasksWithEpochs = BTreeMap<String, BTreeMap<i32, i32>>;

/// A member's tasks of each role (Kafka's `TasksTuple`; active tasks carry their epochs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TasksTuple {
    pub active: TasksWithEpochs,
    pub standby: Tasks,
    pub warmup: Tasks,
}

impl TasksTuple {
    pub fn is_empty(&self) -> bool {
        self.active.values().all(|p| p.is_empty())
            && self.standby.values().all(|p| p.is_empty())
            && self.warmup.values().all(|p| p.is_empty())
    }

    /// The active tasks without their epochs.
    pub fn active_tasks(&self) -> Tasks {
        without_epochs(&self.active)
    }

    /// Whether any of `other`'s tasks is among these, role by role (Kafka's `containsAny`).
    pub fn contains_any(&self, other: &TasksTuple) -> bool {
        let any = |a: &Tasks, b: &Tasks| {
            b.iter().any(|(s, ps)| {
                a.get(s)
                    .is_some_and(|mine| ps.iter().any(|p| mine.contains(p)))
            })
        };
        any(&self.active_tasks(), &other.active_tasks())
            || any(&self.standby, &other.standby)
            || any(&self.warmup, &other.warmup)
    }
}

/// `tasks` without their epochs.
pub fn without_epochs(tasks: &TasksWithEpochs) -> Tasks {
    tasks
        .iter()
        .filter(|(_, ps)| !ps.is_empty())
        .map(|(s, ps)| (s.clone(), ps.keys().copied().collect()))
        .collect()
}

/// A target assignment: what a member should run (no epochs: the reconciliation stamps them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetTasks {
    pub active: Tasks,
    pub standby: Tasks,
    pub warmup: Tasks,
}

impl TargetTasks {
    /// No task of any kind.
    pub fn is_empty(&self) -> bool {
        [&self.active, &self.standby, &self.warmup]
            .iter()
            .all(|tasks| tasks.values().all(|p| p.is_empty()))
    }
}

/// The changelog offsets a member last reported (Kafka's `MemberTaskOffsets`): telemetry
/// the assignor ranks standby candidates by, kept in memory only (KIP-1071: "not persisted,
/// as they are constantly changing") and re-reported every `task.offset.interval.ms`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberTaskOffsets {
    pub task_offsets: BTreeMap<String, BTreeMap<i32, i64>>,
    pub task_end_offsets: BTreeMap<String, BTreeMap<i32, i64>>,
}

impl MemberTaskOffsets {
    /// These offsets with a heartbeat's reports applied (Kafka's `update`): an absent list
    /// leaves its map as it was; a task reported twice is refused with Kafka's message.
    pub fn update(
        &self,
        offsets: Option<&[TaskOffset]>,
        end_offsets: Option<&[TaskOffset]>,
    ) -> Result<MemberTaskOffsets, String> {
        let nested = |list: &[TaskOffset]| {
            let mut out: BTreeMap<String, BTreeMap<i32, i64>> = BTreeMap::new();
            for t in list {
                let by_partition = out.entry(t.subtopology_id.clone()).or_default();
                if by_partition.insert(t.partition, t.offset).is_some() {
                    return Err(format!(
                        "Task offsets contain a duplicate entry for subtopology {} and \
                         partition {}.",
                        t.subtopology_id, t.partition
                    ));
                }
            }
            Ok(out)
        };
        Ok(MemberTaskOffsets {
            task_offsets: match offsets {
                Some(list) => nested(list)?,
                None => self.task_offsets.clone(),
            },
            task_end_offsets: match end_offsets {
                Some(list) => nested(list)?,
                None => self.task_end_offsets.clone(),
            },
        })
    }
}

/// A streams group's state (Kafka's `StreamsGroupState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamsGroupState {
    Empty,
    /// Members, but no topology validated against the topics yet (missing topics).
    NotReady,
    Assigning,
    Reconciling,
    Stable,
}

impl StreamsGroupState {
    /// Kafka's `StreamsGroupState.toString()` (ListGroups, StreamsGroupDescribe).
    pub fn name(self) -> &'static str {
        match self {
            StreamsGroupState::Empty => "Empty",
            StreamsGroupState::NotReady => "NotReady",
            StreamsGroupState::Assigning => "Assigning",
            StreamsGroupState::Reconciling => "Reconciling",
            StreamsGroupState::Stable => "Stable",
        }
    }
}

/// One Kafka Streams client (Kafka's `StreamsGroupMember`): its metadata
/// (StreamsGroupMemberMetadata) and its current assignment
/// (StreamsGroupCurrentMemberAssignment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsGroupMember {
    pub member_id: String,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub topology_epoch: i32,
    /// The process (one `KafkaStreams` instance) the member runs in: standby tasks go to
    /// other processes than their active task's.
    pub process_id: String,
    pub user_endpoint: Option<(String, u16)>,
    pub client_tags: BTreeMap<String, String>,
    pub assigned: TasksTuple,
    pub pending_revocation: TasksTuple,
}

impl StreamsGroupMember {
    pub fn new(member_id: String) -> Self {
        StreamsGroupMember {
            member_id,
            member_epoch: 0,
            previous_member_epoch: -1,
            state: MemberState::Stable,
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: -1,
            topology_epoch: -1,
            process_id: String::new(),
            user_endpoint: None,
            client_tags: BTreeMap::new(),
            assigned: TasksTuple::default(),
            pending_revocation: TasksTuple::default(),
        }
    }

    /// The metadata the StreamsGroupMemberMetadata record holds.
    pub fn same_metadata(&self, other: &StreamsGroupMember) -> bool {
        self.instance_id == other.instance_id
            && self.rack_id == other.rack_id
            && self.client_id == other.client_id
            && self.client_host == other.client_host
            && self.rebalance_timeout_ms == other.rebalance_timeout_ms
            && self.topology_epoch == other.topology_epoch
            && self.process_id == other.process_id
            && self.user_endpoint == other.user_endpoint
            && self.client_tags == other.client_tags
    }

    /// The current assignment the StreamsGroupCurrentMemberAssignment record holds.
    pub fn same_assignment(&self, other: &StreamsGroupMember) -> bool {
        self.member_epoch == other.member_epoch
            && self.previous_member_epoch == other.previous_member_epoch
            && self.state == other.state
            && self.assigned == other.assigned
            && self.pending_revocation == other.pending_revocation
    }

    /// Stable at `epoch` (Kafka's `isReconciledTo`).
    pub fn is_reconciled_to(&self, epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == epoch
    }
}

/// A streams group (Kafka's `StreamsGroup`).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamsGroup {
    pub group_id: String,
    pub group_epoch: i32,
    pub metadata_hash: i64,
    /// The topology epoch last found valid against the topics (-1: none).
    pub validated_topology_epoch: i32,
    /// StreamsGroupMetadata's fields kraftd keeps as written (KIP-1331's topology
    /// descriptions and the assignment configs), so that rewriting the record keeps them.
    pub last_assignment_configs: BTreeMap<String, String>,
    pub stored_description_topology_epoch: i32,
    pub failed_description_topology_epoch: i32,
    pub topology: Option<StreamsGroupTopologyValue>,
    /// The epoch of the target assignment (-1 before the first record).
    pub assignment_epoch: i32,
    pub assignment_timestamp: i64,
    pub members: BTreeMap<String, StreamsGroupMember>,
    pub target_assignment: BTreeMap<String, TargetTasks>,
}

impl StreamsGroup {
    pub fn new(group_id: String) -> Self {
        StreamsGroup {
            group_id,
            group_epoch: 0,
            metadata_hash: 0,
            validated_topology_epoch: -1,
            last_assignment_configs: BTreeMap::new(),
            stored_description_topology_epoch: -1,
            failed_description_topology_epoch: -1,
            topology: None,
            assignment_epoch: -1,
            assignment_timestamp: 0,
            members: BTreeMap::new(),
            target_assignment: BTreeMap::new(),
        }
    }

    /// Kafka's `maybeUpdateGroupState`.
    pub fn state(&self) -> StreamsGroupState {
        if self.members.is_empty() {
            return StreamsGroupState::Empty;
        }
        let ready = self
            .topology
            .as_ref()
            .is_some_and(|t| t.epoch == self.validated_topology_epoch);
        if !ready {
            return StreamsGroupState::NotReady;
        }
        if self.group_epoch > self.assignment_epoch {
            return StreamsGroupState::Assigning;
        }
        if self
            .members
            .values()
            .any(|m| !m.is_reconciled_to(self.assignment_epoch))
        {
            return StreamsGroupState::Reconciling;
        }
        StreamsGroupState::Stable
    }

    pub fn state_name(&self) -> &'static str {
        self.state().name()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Kafka's `StreamsGroup.validateOffsetCommit`: an admin's commit (negative epoch) on
    /// an empty group and a transactional commit naming no member pass; otherwise the member
    /// must exist, commit with OffsetCommit v9+ (or transactionally), and name its epoch or
    /// an older one at which it already ran an active task (Kafka checks the epoch of the
    /// task each partition belongs to; kraftd checks the member's oldest active task).
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
        member_epoch: i32,
        api: CommitApi,
    ) -> Result<(), ErrorCode> {
        if member_epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        if api == CommitApi::Transactional
            && member_epoch == UNKNOWN_GENERATION_ID
            && member_id.is_empty()
            && group_instance_id.is_none()
        {
            return Ok(());
        }
        let member = self
            .members
            .get(member_id)
            .ok_or(ErrorCode::UnknownMemberId)?;
        if matches!(api, CommitApi::OffsetCommit(v) if v < CONSUMER_PROTOCOL_COMMIT_VERSION) {
            return Err(ErrorCode::UnsupportedVersion);
        }
        if member_epoch == member.member_epoch {
            return Ok(());
        }
        if member_epoch > member.member_epoch {
            return Err(ErrorCode::StaleMemberEpoch);
        }
        let oldest = member
            .assigned
            .active
            .values()
            .chain(member.pending_revocation.active.values())
            .flat_map(|ps| ps.values().copied())
            .min();
        match oldest {
            Some(e) if e <= member_epoch => Ok(()),
            _ => Err(ErrorCode::StaleMemberEpoch),
        }
    }

    /// Kafka's `StreamsGroup.validateOffsetFetch`.
    pub fn validate_offset_fetch(
        &self,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), ErrorCode> {
        if member_id.is_none() && member_epoch < 0 {
            return Ok(());
        }
        let member = member_id
            .and_then(|id| self.members.get(id))
            .ok_or(ErrorCode::UnknownMemberId)?;
        if member_epoch != member.member_epoch {
            return Err(ErrorCode::StaleMemberEpoch);
        }
        Ok(())
    }

    /// The member with this static instance id.
    pub fn static_member(&self, instance_id: &str) -> Option<&StreamsGroupMember> {
        self.members
            .values()
            .find(|m| m.instance_id.as_deref() == Some(instance_id))
    }

    /// Whether `topic` is one the topology reads (its offsets then do not expire).
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        !self.members.is_empty()
            && self.topology.as_ref().is_some_and(|t| {
                t.subtopologies.iter().any(|s| {
                    s.source_topics.iter().any(|n| n == topic)
                        || s.repartition_source_topics.iter().any(|r| r.name == topic)
                })
            })
    }

    /// The process running active task (subtopology, partition), its tasks pending
    /// revocation included (Kafka's `currentActiveTaskProcessId`).
    pub fn current_active_task_process(&self, subtopology: &str, partition: i32) -> Option<&str> {
        self.members
            .values()
            .find(|m| {
                [&m.assigned.active, &m.pending_revocation.active]
                    .iter()
                    .any(|t| {
                        t.get(subtopology)
                            .is_some_and(|p| p.contains_key(&partition))
                    })
            })
            .map(|m| m.process_id.as_str())
    }

    /// Whether a member of `process` holds (subtopology, partition) as a standby task,
    /// pending revocation included (Kafka's `currentStandbyTaskProcessIds(..).contains`).
    pub fn standby_held_on_process(
        &self,
        subtopology: &str,
        partition: i32,
        process: &str,
    ) -> bool {
        self.replica_held_on_process(process, |m| {
            [&m.assigned.standby, &m.pending_revocation.standby]
                .iter()
                .any(|t| t.get(subtopology).is_some_and(|p| p.contains(&partition)))
        })
    }

    /// As [`Self::standby_held_on_process`], for warm-up tasks (Kafka's
    /// `currentWarmupTaskProcessIds(..).contains`).
    pub fn warmup_held_on_process(&self, subtopology: &str, partition: i32, process: &str) -> bool {
        self.replica_held_on_process(process, |m| {
            [&m.assigned.warmup, &m.pending_revocation.warmup]
                .iter()
                .any(|t| t.get(subtopology).is_some_and(|p| p.contains(&partition)))
        })
    }

    fn replica_held_on_process(
        &self,
        process: &str,
        holds: impl Fn(&StreamsGroupMember) -> bool,
    ) -> bool {
        self.members
            .values()
            .any(|m| m.process_id == process && holds(m))
    }

    /// The records deleting the group (Kafka's `createGroupTombstoneRecords`).
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
            out.push(records::member_metadata_tombstone(g, id));
        }
        out.push(records::group_epoch_tombstone(g));
        out.push(records::topology_tombstone(g));
        out
    }

    /// StreamsGroupDescribe's entry for the group (Kafka's `asDescribedGroup`).
    pub fn describe(&self) -> DescribedGroup {
        DescribedGroup {
            group_id: self.group_id.clone(),
            group_state: self.state_name().to_string(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            topology: self.topology.as_ref().map(describe_topology),
            members: self
                .members
                .values()
                .map(|m| {
                    let target = self.target_assignment.get(&m.member_id);
                    Member {
                        member_id: m.member_id.clone(),
                        member_epoch: m.member_epoch,
                        instance_id: m.instance_id.clone(),
                        rack_id: m.rack_id.clone(),
                        client_id: m.client_id.clone(),
                        client_host: m.client_host.clone(),
                        topology_epoch: m.topology_epoch,
                        process_id: m.process_id.clone(),
                        user_endpoint: m.user_endpoint.as_ref().map(|(h, p)| Endpoint {
                            host: h.clone(),
                            port: *p,
                            ..Default::default()
                        }),
                        client_tags: m
                            .client_tags
                            .iter()
                            .map(|(k, v)| KeyValue {
                                key: k.clone(),
                                value: v.clone(),
                                ..Default::default()
                            })
                            .collect(),
                        assignment: Assignment {
                            active_tasks: task_ids(&m.assigned.active_tasks()),
                            standby_tasks: task_ids(&m.assigned.standby),
                            warmup_tasks: task_ids(&m.assigned.warmup),
                            ..Default::default()
                        },
                        target_assignment: target
                            .map(|t| Assignment {
                                active_tasks: task_ids(&t.active),
                                standby_tasks: task_ids(&t.standby),
                                warmup_tasks: task_ids(&t.warmup),
                                ..Default::default()
                            })
                            .unwrap_or_default(),
                        ..Default::default()
                    }
                })
                .collect(),
            authorized_operations: i32::MIN,
            ..Default::default()
        }
    }
}

fn task_ids(tasks: &Tasks) -> Vec<TaskIds> {
    tasks
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(s, p)| TaskIds {
            subtopology_id: s.clone(),
            partitions: p.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

fn describe_topology(t: &StreamsGroupTopologyValue) -> Topology {
    let info =
        |i: &kraftd_protocol::coordinator::streams_group_topology_value::TopicInfo| TopicInfo {
            name: i.name.clone(),
            partitions: i.partitions,
            replication_factor: i.replication_factor,
            topic_configs: i
                .topic_configs
                .iter()
                .map(|c| KeyValue {
                    key: c.key.clone(),
                    value: c.value.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
    Topology {
        epoch: t.epoch,
        subtopologies: Some(
            t.subtopologies
                .iter()
                .map(|s| Subtopology {
                    subtopology_id: s.subtopology_id.clone(),
                    source_topics: s.source_topics.clone(),
                    repartition_sink_topics: s.repartition_sink_topics.clone(),
                    state_changelog_topics: s.state_changelog_topics.iter().map(info).collect(),
                    repartition_source_topics: s
                        .repartition_source_topics
                        .iter()
                        .map(info)
                        .collect(),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    }
}
