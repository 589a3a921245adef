//! StreamsGroupHeartbeat (Kafka's `GroupMetadataManager.streamsGroupHeartbeat`,
//! `streamsGroupLeave`, `streamsGroupFenceMember`), session and rebalance timeouts, and the
//! initial rebalance delay.
//!
//! A heartbeat is computed against the state as it is and produces records; the shard writes
//! them (all or none) and replays them, and only then are the timers set. The internal
//! topics the topology misses go back to the broker with the answer, which creates them
//! through the controller (Kafka's `AutoTopicCreationManager.createStreamsInternalTopics`).

use std::collections::BTreeMap;

use kraftd_protocol::messages::streams_group_heartbeat_request::TaskIds as RequestTaskIds;
use kraftd_protocol::messages::streams_group_heartbeat_response::{Status, TaskIds};
use kraftd_protocol::messages::{StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse};
use kraftd_protocol::ErrorCode;

use super::assignor::{self, AssignorMember, SubtopologyTasks};
use super::endpoints;
use super::group::{
    MemberTaskOffsets, StreamsGroup, StreamsGroupMember, StreamsHeartbeatResult, TargetTasks,
    Tasks, TasksTuple,
};
use super::reconciliation::{self, OwnedTasks};
use super::records;
use super::topology::{self, status};
use crate::context::RequestContext;
use crate::group::consumer::subscription::metadata_hash;
use crate::group::consumer::MemberState;
use crate::group::record::CoordinatorRecord;
use crate::group::shard::{Group, GroupCoordinatorShard};
use crate::group::timer::TimerKey;

/// The epoch a member leaves with.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// The epoch a static member leaves with, meaning to come back.
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;

type Refusal = (ErrorCode, String);

/// Kafka's `throwIfStreamsGroupHeartbeatRequestIsInvalid` and
/// `throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures`.
fn validate(r: &StreamsGroupHeartbeatRequest) -> Result<(), Refusal> {
    let invalid = |m: &str| Err((ErrorCode::InvalidRequest, m.to_string()));
    let blank = |s: &Option<String>| s.as_deref().is_some_and(|s| s.trim().is_empty());
    if r.member_id.trim().is_empty() {
        return invalid("MemberId can't be empty.");
    }
    if r.group_id.trim().is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if blank(&r.instance_id) {
        return invalid("InstanceId can't be empty.");
    }
    if blank(&r.rack_id) {
        return invalid("RackId can't be empty.");
    }
    let non_empty = |t: &Option<Vec<RequestTaskIds>>| t.as_ref().is_some_and(|t| !t.is_empty());
    if r.member_epoch == 0 {
        if r.rebalance_timeout_ms == -1 {
            return invalid("RebalanceTimeoutMs must be provided in first request.");
        }
        if non_empty(&r.active_tasks) {
            return invalid("ActiveTasks must be empty when (re-)joining.");
        }
        if non_empty(&r.standby_tasks) {
            return invalid("StandbyTasks must be empty when (re-)joining.");
        }
        if non_empty(&r.warmup_tasks) {
            return invalid("WarmupTasks must be empty when (re-)joining.");
        }
        let Some(t) = &r.topology else {
            return invalid("Topology must be non-null when (re-)joining.");
        };
        for s in &t.subtopologies {
            if !s.source_topic_regex.is_empty() {
                return invalid("Regular expressions for source topics are not supported yet.");
            }
        }
    } else if r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        if r.instance_id.is_none() {
            return invalid("InstanceId can't be null.");
        }
    } else if r.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        return Err((
            ErrorCode::InvalidRequest,
            format!(
                "MemberEpoch is {}, but must be greater than or equal to -2.",
                r.member_epoch
            ),
        ));
    }
    let given = [&r.active_tasks, &r.standby_tasks, &r.warmup_tasks];
    if given.iter().any(|t| t.is_some()) && given.iter().any(|t| t.is_none()) {
        return invalid("If one task-type is non-null, all must be non-null.");
    }
    if r.member_epoch != 0 && r.topology.is_some() {
        return invalid("Topology can only be provided when (re-)joining.");
    }
    Ok(())
}

fn tasks_of(list: &[RequestTaskIds]) -> Tasks {
    let mut out = Tasks::new();
    for t in list {
        out.entry(t.subtopology_id.clone())
            .or_default()
            .extend(t.partitions.iter().copied());
    }
    out.retain(|_, p| !p.is_empty());
    out
}

/// What the member reports owning (Kafka's `TasksTuple.fromHeartbeatRequest`).
fn owned_of(r: &StreamsGroupHeartbeatRequest) -> OwnedTasks {
    let (Some(a), Some(s), Some(w)) = (&r.active_tasks, &r.standby_tasks, &r.warmup_tasks) else {
        return None;
    };
    Some(TasksTuple {
        active: tasks_of(a)
            .into_iter()
            .map(|(k, ps)| (k, ps.into_iter().map(|p| (p, 0)).collect()))
            .collect(),
        standby: tasks_of(s),
        warmup: tasks_of(w),
    })
}

fn response_ids(t: &Tasks) -> Vec<TaskIds> {
    t.iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(s, p)| TaskIds {
            subtopology_id: s.clone(),
            partitions: p.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

/// Kafka's `throwIfStreamsGroupMemberEpochIsInvalid`.
fn check_epoch(
    member: &StreamsGroupMember,
    received: i32,
    owned: &OwnedTasks,
) -> Result<(), Refusal> {
    if received == 0 {
        return Ok(());
    }
    if received > member.member_epoch {
        return Err((
            ErrorCode::FencedMemberEpoch,
            format!(
                "The streams group member has a greater member epoch ({received}) than the one \
                 known by the group coordinator ({}). The member must abandon all its \
                 partitions and rejoin.",
                member.member_epoch
            ),
        ));
    }
    if received < member.member_epoch {
        let contained = |o: &TasksTuple| {
            let sub = |a: &Tasks, b: &Tasks| {
                a.iter()
                    .all(|(s, ps)| b.get(s).is_some_and(|bs| ps.iter().all(|p| bs.contains(p))))
            };
            sub(&o.active_tasks(), &member.assigned.active_tasks())
                && sub(&o.standby, &member.assigned.standby)
                && sub(&o.warmup, &member.assigned.warmup)
        };
        if received != member.previous_member_epoch || !owned.as_ref().is_none_or(contained) {
            return Err((
                ErrorCode::FencedMemberEpoch,
                format!(
                    "The streams group member has a smaller member epoch ({received}) than the \
                     one known by the group coordinator ({}). The member must abandon all its \
                     partitions and rejoin.",
                    member.member_epoch
                ),
            ));
        }
    }
    Ok(())
}

/// The static member with `instance` (Kafka's `throwIfStaticMemberIsUnknown` and
/// `throwIfInstanceIdIsFenced`): it must exist and be `member_id`.
fn static_member_of<'g>(
    group: &'g StreamsGroup,
    instance: &str,
    member_id: &str,
) -> Result<&'g StreamsGroupMember, Refusal> {
    let member = group.static_member(instance).ok_or_else(|| {
        (
            ErrorCode::UnknownMemberId,
            format!("Instance id {instance} is unknown."),
        )
    })?;
    if member.member_id != member_id {
        return Err((
            ErrorCode::FencedInstanceId,
            format!(
                "Static member {member_id} with instance id {instance} was fenced by member {}.",
                member.member_id
            ),
        ));
    }
    Ok(member)
}

/// Whether a new target assignment may be computed now (Kafka's
/// `canComputeNextTargetAssignment`): the first one, with no interval, or once the interval
/// since the last one has passed.
fn assignment_due(last_ms: i64, interval_ms: i32, now_ms: i64) -> bool {
    last_ms == 0 || interval_ms == 0 || now_ms >= last_ms + i64::from(interval_ms)
}

/// The records fencing `member_id` out of `group` (Kafka's `streamsGroupFenceMember`): its
/// three records' tombstones and a new group epoch.
fn fence_records(group: &StreamsGroup, member_id: &str) -> Vec<CoordinatorRecord> {
    let g = &group.group_id;
    vec![
        records::current_assignment_tombstone(g, member_id),
        records::target_assignment_tombstone(g, member_id),
        records::member_metadata_tombstone(g, member_id),
        records::group_epoch(
            group,
            group.group_epoch + 1,
            group.metadata_hash,
            group.validated_topology_epoch,
        ),
    ]
}

/// A heartbeat computed against the state as it is: its records, its answer, the member's
/// state with its rebalance timeout (for the timers) and its reported task offsets (kept
/// once the records are written).
struct HeartbeatPlan {
    records: Vec<CoordinatorRecord>,
    result: StreamsHeartbeatResult,
    state: (MemberState, i32),
    task_offsets: Option<MemberTaskOffsets>,
    /// The group's endpoint information epoch after it (none for a group it creates).
    endpoint_epoch: Option<i32>,
}

/// What the target assignment is computed from (Kafka's `TargetAssignmentBuilder` inputs).
struct AssignmentInput<'a> {
    subtopologies: &'a BTreeMap<String, SubtopologyTasks>,
    num_standby: i32,
    epoch: i32,
    now: i64,
    /// The task offsets each member last reported (the updated member's included).
    task_offsets: &'a dyn Fn(&str) -> Option<&'a MemberTaskOffsets>,
}

/// The target assignment of `group` with `updated` in it (Kafka's `TargetAssignmentBuilder`):
/// the records of the members whose target changed and the epoch's. The assignor reads each
/// member's current assignment (not its tasks pending revocation) and its reported offsets.
fn target_records(
    group: &StreamsGroup,
    updated: Option<&StreamsGroupMember>,
    input: &AssignmentInput<'_>,
    out: &mut Vec<CoordinatorRecord>,
) -> BTreeMap<String, TargetTasks> {
    let mut members: BTreeMap<&str, &StreamsGroupMember> = group
        .members
        .iter()
        .map(|(id, m)| (id.as_str(), m))
        .collect();
    if let Some(u) = updated {
        members.insert(u.member_id.as_str(), u);
    }
    let specs: Vec<AssignorMember<'_>> = members
        .values()
        .map(|m| AssignorMember {
            member_id: &m.member_id,
            process_id: &m.process_id,
            active: m.assigned.active_tasks(),
            standby: m.assigned.standby.clone(),
            task_offsets: (input.task_offsets)(&m.member_id)
                .map(|o| o.task_offsets.clone())
                .unwrap_or_default(),
        })
        .collect();
    let assignment = assignor::assign(&specs, input.subtopologies, input.num_standby);
    for (id, t) in &assignment {
        if group.target_assignment.get(id) != Some(t) {
            out.push(records::target_assignment(&group.group_id, id, t));
        }
    }
    out.push(records::target_assignment_epoch(
        &group.group_id,
        input.epoch,
        input.now,
    ));
    assignment
}

impl GroupCoordinatorShard {
    /// StreamsGroupHeartbeat: the answer, with the error when it failed.
    pub(crate) fn streams_heartbeat(
        &mut self,
        ctx: &RequestContext,
        r: StreamsGroupHeartbeatRequest,
    ) -> StreamsHeartbeatResult {
        let result = validate(&r).and_then(|()| match r.member_epoch {
            LEAVE_GROUP_MEMBER_EPOCH | LEAVE_GROUP_STATIC_MEMBER_EPOCH => self.streams_leave(&r),
            _ => self.streams_join_or_heartbeat(ctx, &r),
        });
        result.unwrap_or_else(|(code, message)| StreamsHeartbeatResult {
            response: StreamsGroupHeartbeatResponse {
                error_code: code.code(),
                error_message: (!message.is_empty()).then_some(message),
                ..Default::default()
            },
            topics_to_create: Vec::new(),
        })
    }

    fn streams_group_of(&self, id: &str) -> Result<&StreamsGroup, Refusal> {
        match self.groups.get(id) {
            Some(Group::Streams(g)) => Ok(g),
            Some(_) => Err((
                ErrorCode::GroupIdNotFound,
                format!("Group {id} is not a streams group."),
            )),
            None => Err((
                ErrorCode::GroupIdNotFound,
                format!("Streams group {id} not found."),
            )),
        }
    }

    fn write_or_refuse(&mut self, records: Vec<CoordinatorRecord>) -> Result<(), Refusal> {
        self.write(records, true).map_err(|code| {
            (
                code,
                "The group's records do not fit one batch.".to_string(),
            )
        })
    }

    /// A member leaves (-1) or a static member steps out meaning to return (-2): the
    /// latter keeps its tasks, at epoch -2, until its session expires.
    fn streams_leave(
        &mut self,
        r: &StreamsGroupHeartbeatRequest,
    ) -> Result<StreamsHeartbeatResult, Refusal> {
        self.streams_group_of(&r.group_id)?;
        // Kafka records the request before it looks the member up (in memory, kept even
        // when the leave is refused).
        if r.shutdown_application {
            self.streams_shutdown_requests
                .entry(r.group_id.clone())
                .or_insert_with(|| r.member_id.clone());
        }
        let group = self.streams_group_of(&r.group_id)?;
        let member = match &r.instance_id {
            None => group.members.get(&r.member_id).ok_or_else(|| {
                (
                    ErrorCode::UnknownMemberId,
                    format!(
                        "Member {} is not a member of group {}.",
                        r.member_id, r.group_id
                    ),
                )
            })?,
            Some(instance) => static_member_of(group, instance, &r.member_id)?,
        };
        let member_id = member.member_id.clone();
        let records =
            if r.instance_id.is_some() && r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                // Kafka's `streamsGroupStaticMemberGroupLeave`: the member stays, at epoch -2,
                // nothing pending, its active tasks at epoch 0 for whoever comes back under the
                // instance id.
                let mut m = member.clone();
                m.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
                m.pending_revocation = TasksTuple::default();
                for partitions in m.assigned.active.values_mut() {
                    partitions.values_mut().for_each(|e| *e = 0);
                }
                vec![records::current_assignment(&r.group_id, &m)]
            } else {
                fence_records(group, &member_id)
            };
        self.write_or_refuse(records)?;
        self.prune_streams_task_offsets(&r.group_id);
        let group = r.group_id.clone();
        self.timer.cancel(&TimerKey::StreamsRebalance {
            group: group.clone(),
            member: member_id.clone(),
        });
        if r.member_epoch == LEAVE_GROUP_MEMBER_EPOCH {
            self.timer.cancel(&TimerKey::StreamsSession {
                group,
                member: member_id,
            });
        }
        Ok(StreamsHeartbeatResult {
            response: StreamsGroupHeartbeatResponse {
                member_id: r.member_id.clone(),
                member_epoch: r.member_epoch,
                status: Some(Vec::new()),
                ..Default::default()
            },
            topics_to_create: Vec::new(),
        })
    }

    fn streams_join_or_heartbeat(
        &mut self,
        ctx: &RequestContext,
        r: &StreamsGroupHeartbeatRequest,
    ) -> Result<StreamsHeartbeatResult, Refusal> {
        let was_empty = match self.groups.get(&r.group_id) {
            Some(Group::Streams(g)) => g.is_empty(),
            _ => true,
        };
        let HeartbeatPlan {
            records,
            result,
            state,
            task_offsets,
            endpoint_epoch,
        } = self.plan_streams_heartbeat(ctx, r)?;
        self.write_or_refuse(records)?;
        match endpoint_epoch {
            Some(epoch) => self
                .streams_endpoint_epochs
                .insert(r.group_id.clone(), epoch),
            None => self.streams_endpoint_epochs.remove(&r.group_id),
        };
        if let Some(offsets) = task_offsets {
            self.streams_task_offsets.insert(
                (r.group_id.clone(), result.response.member_id.clone()),
                offsets,
            );
        }
        self.prune_streams_task_offsets(&r.group_id);
        if was_empty {
            self.streams_shutdown_requests.remove(&r.group_id);
        }
        if r.shutdown_application {
            self.streams_shutdown_requests
                .entry(r.group_id.clone())
                .or_insert_with(|| r.member_id.clone());
        }
        let config = self.group_config(&r.group_id).streams.clone();
        let key = |member: &str| (r.group_id.clone(), member.to_string());
        let (g, m) = key(&r.member_id);
        self.timer.schedule(
            TimerKey::StreamsSession {
                group: g.clone(),
                member: m.clone(),
            },
            self.now_ms + i64::from(config.session_timeout_ms),
        );
        let rebalance = TimerKey::StreamsRebalance {
            group: g.clone(),
            member: m,
        };
        match state {
            (MemberState::UnrevokedPartitions, timeout) => {
                if !self.timer.is_scheduled(&rebalance) {
                    self.timer
                        .schedule(rebalance, self.now_ms + i64::from(timeout.max(0)));
                }
            }
            _ => self.timer.cancel(&rebalance),
        }
        if was_empty && config.initial_rebalance_delay_ms > 0 {
            let k = TimerKey::StreamsInitialRebalance { group: g };
            if !self.timer.is_scheduled(&k) {
                self.timer.schedule(
                    k,
                    self.now_ms + i64::from(config.initial_rebalance_delay_ms),
                );
            }
        }
        Ok(result)
    }

    /// Computes a join or heartbeat against the current state (which it does not change):
    /// the records, the answer, and the member's state with its rebalance timeout.
    fn plan_streams_heartbeat(
        &self,
        ctx: &RequestContext,
        r: &StreamsGroupHeartbeatRequest,
    ) -> Result<HeartbeatPlan, Refusal> {
        let now = self.now_ms;
        let metadata = &*self.metadata;
        let config = &self.group_config(&r.group_id).streams;
        let gid = r.group_id.as_str();
        let joining = r.member_epoch == 0;
        let mut out = Vec::new();
        let mut statuses: Vec<Status> = Vec::new();

        let fresh;
        let group: &StreamsGroup = match self.streams_group_of(gid) {
            Ok(g) => g,
            Err(_) if joining && !self.groups.contains_key(gid) => {
                fresh = StreamsGroup::new(gid.to_string());
                &fresh
            }
            Err(e) => match self.groups.get(gid) {
                // Kafka's `maybeDeleteEmptyClassicGroup`: an empty classic group is
                // replaced.
                Some(Group::Classic(c)) if joining && c.is_empty() => {
                    out.extend(c.delete_records());
                    fresh = StreamsGroup::new(gid.to_string());
                    &fresh
                }
                _ => return Err(e),
            },
        };
        let static_owner = r
            .instance_id
            .as_deref()
            .and_then(|i| group.static_member(i));
        if joining
            && static_owner.is_none()
            && group.members.len() >= config.max_size as usize
            && !group.members.contains_key(&r.member_id)
        {
            return Err((
                ErrorCode::GroupMaxSizeReached,
                format!(
                    "The streams group has reached its maximum capacity of {} members.",
                    config.max_size
                ),
            ));
        }
        let owned = owned_of(r);
        // Kafka's `getOrMaybeCreateStaticStreamsGroupMember` /
        // `getOrMaybeCreateDynamicStreamsGroupMember`. A static member coming back under a
        // new member id takes the old one's place: a copy of it under the new id at epoch 0,
        // with its target (`replaceStreamsMember`), so no rebalance follows.
        let mut replaced: Option<&StreamsGroupMember> = None;
        let member = match (&r.instance_id, static_owner) {
            (Some(_), Some(old)) if joining => {
                if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                    return Err((
                        ErrorCode::UnreleasedInstanceId,
                        format!(
                            "Static member {} with instance id {} cannot join the group \
                             because the instance id is owned by {} member.",
                            r.member_id,
                            r.instance_id.as_deref().unwrap_or_default(),
                            old.member_id
                        ),
                    ));
                }
                replaced = Some(old);
                let mut copy = old.clone();
                copy.member_id = r.member_id.clone();
                copy.member_epoch = 0;
                copy.previous_member_epoch = 0;
                out.push(records::current_assignment_tombstone(gid, &old.member_id));
                out.push(records::target_assignment_tombstone(gid, &old.member_id));
                out.push(records::member_metadata_tombstone(gid, &old.member_id));
                out.push(records::member_metadata(gid, &copy));
                let old_target = group
                    .target_assignment
                    .get(&old.member_id)
                    .cloned()
                    .unwrap_or_default();
                out.push(records::target_assignment(
                    gid,
                    &copy.member_id,
                    &old_target,
                ));
                out.push(records::current_assignment(gid, &copy));
                copy
            }
            (Some(instance), _) if !joining => {
                let m = static_member_of(group, instance, &r.member_id)?;
                check_epoch(m, r.member_epoch, &owned)?;
                m.clone()
            }
            _ => match group.members.get(&r.member_id) {
                Some(m) => {
                    check_epoch(m, r.member_epoch, &owned)?;
                    m.clone()
                }
                None if joining => StreamsGroupMember::new(r.member_id.clone()),
                None => {
                    return Err((
                        ErrorCode::UnknownMemberId,
                        format!("Member {} is not a member of group {gid}.", r.member_id),
                    ))
                }
            },
        };

        // 1. The member's metadata.
        let mut updated = member.clone();
        if let Some(i) = &r.instance_id {
            updated.instance_id = Some(i.clone());
        }
        if let Some(rack) = &r.rack_id {
            updated.rack_id = Some(rack.clone());
        }
        if r.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = r.rebalance_timeout_ms;
        }
        if let Some(t) = &r.topology {
            updated.topology_epoch = t.epoch;
        }
        updated.client_id = ctx.client_id.clone();
        updated.client_host = ctx.client_host.clone();
        if let Some(p) = &r.process_id {
            updated.process_id = p.clone();
        }
        if let Some(tags) = &r.client_tags {
            updated.client_tags = tags
                .iter()
                .map(|kv| (kv.key.clone(), kv.value.clone()))
                .collect();
        }
        if joining || r.user_endpoint.is_some() {
            updated.user_endpoint = r.user_endpoint.as_ref().map(|e| (e.host.clone(), e.port));
        }
        let is_new = !group.members.contains_key(&r.member_id) && replaced.is_none();
        let mut bump = false;
        if is_new || !updated.same_metadata(&member) {
            out.push(records::member_metadata(gid, &updated));
            bump = true;
        }

        // 2. The topology: the first member's, then only the same one.
        let topology = match (&r.topology, &group.topology) {
            (Some(t), None) => {
                let value = topology::topology_value(t);
                out.push(records::topology(gid, &value));
                value
            }
            (Some(t), Some(current)) if current.epoch > t.epoch => current.clone(),
            (Some(t), Some(current)) => {
                if topology::topology_value(t) != *current {
                    return Err((
                        ErrorCode::InvalidRequest,
                        "Topology updates are not supported yet.".to_string(),
                    ));
                }
                current.clone()
            }
            (None, Some(current)) => current.clone(),
            // Kafka throws an IllegalStateException here, which its coordinator answers as
            // UNKNOWN_SERVER_ERROR without a message.
            (None, None) => return Err((ErrorCode::UnknownServerError, String::new())),
        };
        if updated.topology_epoch < topology.epoch {
            statuses.push(Status {
                status_code: status::STALE_TOPOLOGY,
                status_detail: format!(
                    "The member's topology epoch {} is behind the group's topology epoch {}.",
                    updated.topology_epoch, topology.epoch
                ),
                ..Default::default()
            });
        }

        // 3. The topology against the topics.
        let configured = topology::configure(&topology, metadata);
        let hash = metadata_hash(&topology::required_topics(&topology), metadata);
        bump |= hash != group.metadata_hash;
        let validated = if configured.is_ready() {
            topology.epoch
        } else {
            -1
        };
        // Kafka's `throwIfRequestContainsInvalidTasks`, against a ready topology only.
        if let Some(tasks) = configured.tasks.as_ref().filter(|_| configured.is_ready()) {
            for owned_list in [&r.active_tasks, &r.standby_tasks, &r.warmup_tasks]
                .into_iter()
                .flatten()
            {
                for t in owned_list {
                    let Some(n) = tasks.get(&t.subtopology_id) else {
                        return Err((
                            ErrorCode::InvalidRequest,
                            format!(
                                "Subtopology {} does not exist in the topology.",
                                t.subtopology_id
                            ),
                        ));
                    };
                    if let Some(p) = t.partitions.iter().find(|p| **p < 0 || **p >= *n) {
                        return Err((
                            ErrorCode::InvalidRequest,
                            format!(
                                "Task {p} for subtopology {} is invalid. Number of tasks for \
                                 this subtopology: {n}",
                                t.subtopology_id
                            ),
                        ));
                    }
                }
            }
        }
        // The offsets the member reports, once its tasks are known valid (Kafka stores them
        // after that check so that a refused join leaves none behind).
        let key = (gid.to_string(), r.member_id.clone());
        let task_offsets = if r.task_offsets.is_some() || r.task_end_offsets.is_some() {
            let current = self
                .streams_task_offsets
                .get(&key)
                .cloned()
                .unwrap_or_default();
            Some(
                current
                    .update(r.task_offsets.as_deref(), r.task_end_offsets.as_deref())
                    .map_err(|m| (ErrorCode::InvalidRequest, m))?,
            )
        } else {
            self.streams_task_offsets.get(&key).cloned()
        };
        bump |= validated != group.validated_topology_epoch;
        let mut group_epoch = group.group_epoch;
        if bump {
            group_epoch += 1;
            out.push(records::group_epoch(group, group_epoch, hash, validated));
        }

        // 4. A new target assignment when the group epoch moved past it, unless the
        // initial rebalance delay holds it back.
        let delayed = self.timer.is_scheduled(&TimerKey::StreamsInitialRebalance {
            group: gid.to_string(),
        }) || (group.is_empty() && config.initial_rebalance_delay_ms > 0);
        let mut target_epoch = group.assignment_epoch.max(0);
        let mut target = group
            .target_assignment
            .get(&r.member_id)
            .or_else(|| replaced.and_then(|o| group.target_assignment.get(&o.member_id)))
            .cloned()
            .unwrap_or_default();
        if delayed {
            statuses.push(Status {
                status_code: status::ASSIGNMENT_DELAYED,
                status_detail: "Assignment delayed due to the configured initial rebalance delay."
                    .to_string(),
                ..Default::default()
            });
            if group.assignment_epoch < 1 {
                // A new group: an empty assignment at its epoch, so the member has an
                // epoch (0 means joining) until the delayed one is computed.
                out.push(records::target_assignment_epoch(gid, group_epoch, now));
                target_epoch = group_epoch;
                target = TargetTasks::default();
            }
        } else if group.assignment_epoch < group_epoch
            && !assignment_due(
                group.assignment_timestamp,
                config.assignment_interval_ms,
                now,
            )
        {
            statuses.push(Status {
                status_code: status::ASSIGNMENT_DELAYED,
                status_detail: "Assignment delayed due to the configured assignment interval."
                    .to_string(),
                ..Default::default()
            });
        } else if group.assignment_epoch < group_epoch {
            let subtopologies = topology::assignor_subtopologies(&topology, &configured);
            let mut view = group.clone();
            if let Some(old) = replaced {
                view.members.remove(&old.member_id);
            }
            let offsets_of = |m: &str| {
                if m == r.member_id {
                    task_offsets.as_ref()
                } else {
                    self.streams_task_offsets
                        .get(&(gid.to_string(), m.to_string()))
                }
            };
            let assignment = target_records(
                &view,
                Some(&updated),
                &AssignmentInput {
                    subtopologies: &subtopologies,
                    num_standby: config.num_standby_replicas,
                    epoch: group_epoch,
                    now,
                    task_offsets: &offsets_of,
                },
                &mut out,
            );
            target_epoch = group_epoch;
            target = assignment.get(&r.member_id).cloned().unwrap_or_default();
        }

        // 5. The member's step toward its target.
        let mut view = group.clone();
        if let Some(old) = replaced {
            view.members.remove(&old.member_id);
        }
        let reconciled = if updated.is_reconciled_to(target_epoch) {
            updated.clone()
        } else {
            reconciliation::reconcile(&view, &updated, target_epoch, &target, &owned).ok_or_else(
                || {
                    (
                        ErrorCode::FencedMemberEpoch,
                        "The streams group member is in a unknown state. The member must \
                         abandon all its tasks and rejoin."
                            .to_string(),
                    )
                },
            )?
        };
        if is_new || replaced.is_some() || !reconciled.same_assignment(&updated) {
            out.push(records::current_assignment(gid, &reconciled));
        }

        // The answer.
        let changed = reconciled.assigned != member.assigned;
        let mut response = StreamsGroupHeartbeatResponse {
            member_id: reconciled.member_id.clone(),
            member_epoch: reconciled.member_epoch,
            heartbeat_interval_ms: config.heartbeat_interval_ms,
            task_offset_interval_ms: config.task_offset_interval_ms,
            ..Default::default()
        };
        // v0 carries the lag as an int32, v1+ as an int64 (KIP-1331's version bump).
        if ctx.api_version == 0 {
            response.acceptable_recovery_lag_legacy =
                i32::try_from(config.acceptable_recovery_lag).unwrap_or(i32::MAX);
        } else {
            response.acceptable_recovery_lag = config.acceptable_recovery_lag;
        }
        // The Interactive Queries map (Kafka's endpoint epoch rules): the epoch moves when
        // the member's endpoint changes or an endpoint's tasks change; a member behind it
        // gets the map. A group created by this heartbeat answers epoch 0 and keeps none,
        // as Kafka's transient new group does.
        let endpoint_changed =
            endpoints::user_endpoint_changed((!is_new).then_some(&member), &reconciled);
        let mut endpoint_epoch = self.streams_endpoint_epochs.get(gid).copied().unwrap_or(0);
        if endpoint_changed || (changed && reconciled.user_endpoint.is_some()) {
            endpoint_epoch += 1;
        }
        if endpoint_epoch != r.endpoint_information_epoch {
            response.partitions_by_user_endpoint = Some(endpoints::build(
                group,
                &reconciled,
                replaced.map(|o| o.member_id.as_str()),
                Some(&topology),
                metadata,
            ));
        }
        let endpoint_epoch = self.groups.contains_key(gid).then_some(endpoint_epoch);
        response.endpoint_information_epoch = endpoint_epoch.unwrap_or(0);
        if joining || changed {
            response.active_tasks = Some(response_ids(&reconciled.assigned.active_tasks()));
            response.standby_tasks = Some(response_ids(&reconciled.assigned.standby));
            response.warmup_tasks = Some(response_ids(&reconciled.assigned.warmup));
        }
        let mut topics_to_create = Vec::new();
        if let Some((code, detail)) = &configured.error {
            topics_to_create = configured.to_create.clone();
            statuses.push(Status {
                status_code: *code,
                status_detail: detail.clone(),
                ..Default::default()
            });
        }
        // Kafka's `shutdownRequestMemberId`: once one member asked, every member hears it
        // (cleared when the group empties; kept in memory only, as Kafka keeps it).
        let requester = self
            .streams_shutdown_requests
            .get(&r.group_id)
            .filter(|_| !group.is_empty())
            .cloned()
            .or_else(|| r.shutdown_application.then(|| r.member_id.clone()));
        if let Some(requester) = requester {
            statuses.push(shutdown_status(&requester));
        }
        response.status = Some(statuses);
        Ok(HeartbeatPlan {
            records: out,
            result: StreamsHeartbeatResult {
                response,
                topics_to_create,
            },
            state: (reconciled.state, reconciled.rebalance_timeout_ms),
            task_offsets,
            endpoint_epoch,
        })
    }

    /// The initial rebalance delay ended: the group's first target assignment, at a new
    /// group epoch when the delay's placeholder holds the current one (Kafka's
    /// `computeDelayedTargetAssignment`).
    pub(crate) fn streams_initial_rebalance(&mut self, group_id: &str) {
        let Some(Group::Streams(group)) = self.groups.get(group_id) else {
            return;
        };
        if group.is_empty() {
            return;
        }
        let Some(topology) = &group.topology else {
            return;
        };
        let now = self.now_ms;
        let configured = topology::configure(topology, &*self.metadata);
        let subtopologies = topology::assignor_subtopologies(topology, &configured);
        let mut out = Vec::new();
        let mut epoch = group.group_epoch;
        if epoch <= group.assignment_epoch {
            epoch = group.assignment_epoch + 1;
            out.push(records::group_epoch(
                group,
                epoch,
                group.metadata_hash,
                group.validated_topology_epoch,
            ));
        }
        let standby = self.group_config(group_id).streams.num_standby_replicas;
        let offsets_of = |m: &str| {
            self.streams_task_offsets
                .get(&(group_id.to_string(), m.to_string()))
        };
        target_records(
            group,
            None,
            &AssignmentInput {
                subtopologies: &subtopologies,
                num_standby: standby,
                epoch,
                now,
                task_offsets: &offsets_of,
            },
            &mut out,
        );
        let _ = self.write(out, true);
    }

    /// Drops the task offsets of `group_id`'s members that are gone (Kafka's `removeMember`
    /// drops them with the member).
    fn prune_streams_task_offsets(&mut self, group_id: &str) {
        let members = match self.groups.get(group_id) {
            Some(Group::Streams(g)) => Some(&g.members),
            _ => None,
        };
        self.streams_task_offsets
            .retain(|(g, m), _| g != group_id || members.is_some_and(|ms| ms.contains_key(m)));
    }

    /// A member's session expired, or it did not revoke its tasks within its rebalance
    /// timeout: it is fenced (Kafka's `streamsGroupFenceMemberOperation`).
    pub(crate) fn streams_fence(&mut self, group_id: &str, member_id: &str) {
        let Some(Group::Streams(group)) = self.groups.get(group_id) else {
            return;
        };
        if !group.members.contains_key(member_id) {
            return;
        }
        let records = fence_records(group, member_id);
        let _ = self.write(records, true);
        self.prune_streams_task_offsets(group_id);
        let (group, member) = (group_id.to_string(), member_id.to_string());
        self.timer.cancel(&TimerKey::StreamsSession {
            group: group.clone(),
            member: member.clone(),
        });
        self.timer
            .cancel(&TimerKey::StreamsRebalance { group, member });
    }

    /// Session timers for the loaded members (Kafka schedules them as it replays).
    pub(crate) fn streams_loaded(&mut self) {
        let keys: Vec<(TimerKey, i64)> = self
            .groups
            .iter()
            .filter_map(|(id, g)| match g {
                Group::Streams(g) => Some((id, g)),
                _ => None,
            })
            .flat_map(|(id, g)| {
                let deadline =
                    self.now_ms + i64::from(self.group_config(id).streams.session_timeout_ms);
                g.members.keys().map(move |m| {
                    (
                        TimerKey::StreamsSession {
                            group: id.clone(),
                            member: m.clone(),
                        },
                        deadline,
                    )
                })
            })
            .collect();
        for (k, deadline) in keys {
            self.timer.schedule(k, deadline);
        }
        // A group loaded while its initial rebalance delay ran (the previous coordinator's
        // timer, in memory only, is gone): its target is still the empty placeholder at
        // the group epoch, which no heartbeat would replace. Compute it at once, as Kafka's
        // next heartbeat would (it writes no placeholder).
        let waiting: Vec<String> = self
            .groups
            .iter()
            .filter_map(|(id, g)| match g {
                Group::Streams(g)
                    if !g.members.is_empty()
                        && g.assignment_epoch == g.group_epoch
                        && g.target_assignment.values().all(TargetTasks::is_empty) =>
                {
                    Some(id.clone())
                }
                _ => None,
            })
            .collect();
        for group in waiting {
            self.timer
                .schedule(TimerKey::StreamsInitialRebalance { group }, self.now_ms);
        }
    }
}

/// The SHUTDOWN_APPLICATION status every member of a group gets once `requester` asked
/// (Kafka's detail text).
fn shutdown_status(requester: &str) -> Status {
    Status {
        status_code: status::SHUTDOWN_APPLICATION,
        status_detail: format!(
            "Streams group member {requester} encountered a fatal error and requested a \
             shutdown for the entire application."
        ),
        ..Default::default()
    }
}
