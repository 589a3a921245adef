//! ShareGroupHeartbeat (Kafka's `GroupMetadataManager.shareGroupHeartbeat` and
//! `shareGroupLeave`), session expiry, and the share-group state initialization the
//! heartbeat asks for (`maybeCreateInitializeShareGroupStateRequest`,
//! `initializeShareGroupState`, `uninitializeShareGroupState`).
//!
//! A heartbeat is computed against the state as it is and produces records; the shard writes
//! them (all or none) and replays them, and only then are the session timer set and the
//! initialization handed out as work. The work is released by the runtime once the records
//! are committed; the broker calls the persister and comes back with
//! [`GroupCoordinatorShard::share_state_initialized`].

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::messages::initialize_share_group_state_request::{
    InitializeStateData, PartitionData,
};
use kraftd_protocol::messages::share_group_heartbeat_response::{
    Assignment as HeartbeatAssignment, TopicPartitions as HeartbeatTopicPartitions,
};
use kraftd_protocol::messages::{
    InitializeShareGroupStateRequest, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};
use kraftd_protocol::{ErrorCode, Uuid};

use super::assignor::{self, AssignorMember};
use super::group::{combine_init_maps, InitMapValue, ShareGroup, ShareGroupMember};
use super::records;
use crate::context::{RequestContext, TopicMetadata};
use crate::group::consumer::subscription::{metadata_hash, topic_ids};
use crate::group::consumer::{MemberState, Partitions};
use crate::group::record::CoordinatorRecord;
use crate::group::shard::{Group, GroupCoordinatorShard, GroupWork};
use crate::group::timer::TimerKey;

/// The epoch a member leaves with (`ShareGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH`).
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;

/// The start offset of a share partition whose group's `share.auto.offset.reset` decides
/// it (Kafka's `PartitionFactory.UNINITIALIZED_START_OFFSET`).
pub const UNINITIALIZED_START_OFFSET: i64 = -1;

type Refusal = (ErrorCode, String);

/// Kafka's `throwIfShareGroupHeartbeatRequestIsInvalid` (GroupCoordinatorService).
fn validate(r: &ShareGroupHeartbeatRequest) -> Result<(), Refusal> {
    let invalid = |m: &str| Err((ErrorCode::InvalidRequest, m.to_string()));
    if r.member_id.trim().is_empty() {
        return invalid("MemberId can't be empty.");
    }
    if r.group_id.trim().is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if r.rack_id.as_deref().is_some_and(|s| s.trim().is_empty()) {
        return invalid("RackId can't be empty.");
    }
    if r.member_epoch == 0 {
        if r.subscribed_topic_names
            .as_ref()
            .is_none_or(|t| t.is_empty())
        {
            return invalid("SubscribedTopicNames must be set in first request.");
        }
    } else if r.member_epoch < LEAVE_GROUP_MEMBER_EPOCH {
        return invalid("MemberEpoch is invalid.");
    }
    Ok(())
}

/// Kafka's `throwIfShareGroupMemberEpochIsInvalid`: 0 rejoins; the previous epoch is
/// accepted, its answer may have been lost.
fn check_epoch(member: &ShareGroupMember, received: i32) -> Result<(), Refusal> {
    if received == 0 {
        return Ok(());
    }
    if received > member.member_epoch {
        return Err((
            ErrorCode::FencedMemberEpoch,
            format!(
                "The share group member has a greater member epoch ({received}) than the one \
                 known by the group coordinator ({}). The member must abandon all its \
                 partitions and rejoin.",
                member.member_epoch
            ),
        ));
    }
    if received < member.member_epoch && received != member.previous_member_epoch {
        return Err((
            ErrorCode::FencedMemberEpoch,
            format!(
                "The share group member has a smaller member epoch ({received}) than the one \
                 known by the group coordinator ({}), and it does not match the previous \
                 member epoch ({}). The member must abandon all its partitions and rejoin.",
                member.member_epoch, member.previous_member_epoch
            ),
        ));
    }
    Ok(())
}

fn heartbeat_assignment(p: &Partitions) -> HeartbeatAssignment {
    HeartbeatAssignment {
        topic_partitions: p
            .iter()
            .map(|(t, ps)| HeartbeatTopicPartitions {
                topic_id: *t,
                partitions: ps.iter().copied().collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The records fencing `member` out of `group` (Kafka's `shareGroupFenceMember`): its
/// three records' tombstones, and a new group epoch (with the assignment epoch when the
/// group empties, stamped 0 so the next member is assigned at once).
fn fence_records(
    group: &ShareGroup,
    member_id: &str,
    metadata: &dyn TopicMetadata,
) -> Vec<CoordinatorRecord> {
    let g = &group.group_id;
    let mut out = vec![
        records::current_assignment_tombstone(g, member_id),
        records::target_assignment_tombstone(g, member_id),
        records::member_subscription_tombstone(g, member_id),
    ];
    let remaining = group.subscribed_topic_names_with(group.members.get(member_id), None);
    let epoch = group.group_epoch + 1;
    out.push(records::group_epoch(
        g,
        epoch,
        metadata_hash(&remaining, metadata),
    ));
    if group.members.len() == 1 {
        out.push(records::target_assignment_epoch(g, epoch, 0));
    }
    out
}

/// What a heartbeat computed: records, its answer, and the initialization to hand out.
struct Plan {
    records: Vec<CoordinatorRecord>,
    response: ShareGroupHeartbeatResponse,
    initialize: Option<InitializeShareGroupStateRequest>,
}

impl GroupCoordinatorShard {
    /// ShareGroupHeartbeat: the answer, with the error when it failed.
    pub(crate) fn share_heartbeat(
        &mut self,
        ctx: &RequestContext,
        r: ShareGroupHeartbeatRequest,
    ) -> ShareGroupHeartbeatResponse {
        let result = validate(&r).and_then(|()| {
            if r.member_epoch == LEAVE_GROUP_MEMBER_EPOCH {
                self.share_leave(&r)
            } else {
                self.share_join_or_heartbeat(ctx, &r)
            }
        });
        result.unwrap_or_else(|(code, message)| ShareGroupHeartbeatResponse {
            error_code: code.code(),
            error_message: Some(message),
            ..Default::default()
        })
    }

    fn share_group_of(&self, id: &str) -> Result<&ShareGroup, Refusal> {
        match self.groups.get(id) {
            Some(Group::Share(g)) => Ok(g),
            Some(_) => Err((
                ErrorCode::GroupIdNotFound,
                format!("Group {id} is not a share group."),
            )),
            None => Err((
                ErrorCode::GroupIdNotFound,
                format!("Share group {id} not found."),
            )),
        }
    }

    fn share_leave(
        &mut self,
        r: &ShareGroupHeartbeatRequest,
    ) -> Result<ShareGroupHeartbeatResponse, Refusal> {
        let group = self.share_group_of(&r.group_id)?;
        if !group.members.contains_key(&r.member_id) {
            return Err((
                ErrorCode::UnknownMemberId,
                format!(
                    "Member {} is not a member of group {}.",
                    r.member_id, r.group_id
                ),
            ));
        }
        let records = fence_records(group, &r.member_id, &*self.metadata);
        self.write(records, true).map_err(|code| {
            (
                code,
                "The group's records do not fit one batch.".to_string(),
            )
        })?;
        self.timer.cancel(&TimerKey::ShareSession {
            group: r.group_id.clone(),
            member: r.member_id.clone(),
        });
        Ok(ShareGroupHeartbeatResponse {
            member_id: Some(r.member_id.clone()),
            member_epoch: LEAVE_GROUP_MEMBER_EPOCH,
            ..Default::default()
        })
    }

    fn share_join_or_heartbeat(
        &mut self,
        ctx: &RequestContext,
        r: &ShareGroupHeartbeatRequest,
    ) -> Result<ShareGroupHeartbeatResponse, Refusal> {
        let plan = self.plan_share_heartbeat(ctx, r)?;
        self.write(plan.records, true).map_err(|code| {
            (
                code,
                "The group's records do not fit one batch.".to_string(),
            )
        })?;
        self.timer.schedule(
            TimerKey::ShareSession {
                group: r.group_id.clone(),
                member: r.member_id.clone(),
            },
            self.now_ms + i64::from(self.group_config(&r.group_id).share_session_timeout_ms),
        );
        if let Some(init) = plan.initialize {
            self.out
                .work
                .push(GroupWork::InitializeShareGroupState(init));
        }
        Ok(plan.response)
    }

    /// Computes a join or heartbeat against the current state (which it does not change).
    fn plan_share_heartbeat(
        &self,
        ctx: &RequestContext,
        r: &ShareGroupHeartbeatRequest,
    ) -> Result<Plan, Refusal> {
        let now = self.now_ms;
        let metadata = &*self.metadata;
        let config = &*self.group_config(&r.group_id);
        let gid = r.group_id.as_str();
        let joining = r.member_epoch == 0;
        let mut out = Vec::new();

        let fresh;
        let group: &ShareGroup = match self.share_group_of(gid) {
            Ok(g) => g,
            Err(_) if joining && !self.groups.contains_key(gid) => {
                fresh = ShareGroup::new(gid.to_string());
                &fresh
            }
            Err(e) => return Err(e),
        };
        if group.members.len() >= config.share_group_max_size as usize
            && !group.members.contains_key(&r.member_id)
        {
            return Err((
                ErrorCode::GroupMaxSizeReached,
                format!(
                    "The share group has reached its maximum capacity of {} members.",
                    config.share_group_max_size
                ),
            ));
        }
        let member = match group.members.get(&r.member_id) {
            Some(m) => m.clone(),
            None if joining => ShareGroupMember::new(r.member_id.clone()),
            None => {
                return Err((
                    ErrorCode::UnknownMemberId,
                    format!("Member {} is not a member of group {gid}.", r.member_id),
                ))
            }
        };
        check_epoch(&member, r.member_epoch)?;

        // 1. The member's subscription.
        let mut updated = member.clone();
        if let Some(rack) = &r.rack_id {
            updated.rack_id = Some(rack.clone());
        }
        if let Some(names) = &r.subscribed_topic_names {
            updated.subscribed_topic_names = names.iter().cloned().collect();
        }
        updated.client_id = ctx.client_id.clone();
        updated.client_host = ctx.client_host.clone();
        let is_new = !group.members.contains_key(&r.member_id);
        let mut bump = false;
        if updated != member || is_new {
            out.push(records::member_subscription(gid, &updated));
            bump |= updated.subscribed_topic_names != member.subscribed_topic_names;
        }
        let subscription_changed = bump;
        let mut group_epoch = group.group_epoch;
        if group.assignment_epoch >= group_epoch {
            bump |= initialized_assignment_pending(group, Some(&updated), metadata);
        }
        let subscribed = group.subscribed_topic_names_with(Some(&member), Some(&updated));
        let hash = metadata_hash(&subscribed, metadata);
        bump |= hash != group.metadata_hash;
        if bump {
            group_epoch += 1;
            out.push(records::group_epoch(gid, group_epoch, hash));
        }

        // 2. A new target assignment when the group epoch moved past it, no more often
        // than `group.share.assignment.interval.ms`.
        let mut target_epoch = group.assignment_epoch;
        let mut target = group
            .target_assignment
            .get(&r.member_id)
            .cloned()
            .unwrap_or_default();
        let due = group.assignment_timestamp == 0
            || now - group.assignment_timestamp >= i64::from(config.share_assignment_interval_ms);
        if group.assignment_epoch < group_epoch && due {
            let mut members: BTreeMap<&str, &ShareGroupMember> = group
                .members
                .iter()
                .map(|(id, m)| (id.as_str(), m))
                .collect();
            members.insert(updated.member_id.as_str(), &updated);
            let specs: Vec<AssignorMember<'_>> = members
                .values()
                .map(|m| AssignorMember {
                    member_id: &m.member_id,
                    subscribed: topic_ids(&m.subscribed_topic_names, metadata),
                    current: group
                        .target_assignment
                        .get(&m.member_id)
                        .cloned()
                        .unwrap_or_default(),
                })
                .collect();
            let assignment = assignor::assign(&specs, &group.initialized_partitions());
            for (id, p) in &assignment {
                if group.target_assignment.get(id) != Some(p) {
                    out.push(records::target_assignment(gid, id, p));
                }
            }
            out.push(records::target_assignment_epoch(gid, group_epoch, now));
            target_epoch = group_epoch;
            target = assignment.get(&r.member_id).cloned().unwrap_or_default();
        }

        // 3. A share member reaches its target at once: nothing to revoke first (Kafka's
        // `ShareGroupAssignmentBuilder`).
        let mut reconciled = updated.clone();
        if target_epoch != updated.member_epoch || subscription_changed {
            let subscribed_ids = topic_ids(&updated.subscribed_topic_names, metadata);
            let mut assigned = target;
            assigned.retain(|t, _| subscribed_ids.contains(t));
            if target_epoch != updated.member_epoch {
                reconciled.previous_member_epoch = updated.member_epoch;
                reconciled.member_epoch = target_epoch;
            }
            reconciled.state = MemberState::Stable;
            reconciled.assigned = assigned;
            if reconciled != updated || is_new {
                out.push(records::current_assignment(gid, &reconciled));
            }
        }

        let full = r.subscribed_topic_names.is_some();
        let response = ShareGroupHeartbeatResponse {
            member_id: Some(reconciled.member_id.clone()),
            member_epoch: reconciled.member_epoch,
            heartbeat_interval_ms: config.share_heartbeat_interval_ms,
            assignment: (joining || full || reconciled.assigned != member.assigned)
                .then(|| heartbeat_assignment(&reconciled.assigned)),
            ..Default::default()
        };
        let initialize = self.share_initialize_request(group, group_epoch, &subscribed, &mut out);
        Ok(Plan {
            records: out,
            response,
            initialize,
        })
    }

    /// The partitions of the subscribed topics whose state is neither initialized nor being
    /// initialized (an initialization older than `group.share.initialize.retry.interval.ms`
    /// counts as failed): the record marking them initializing and the request to the
    /// persister (Kafka's `maybeCreateInitializeShareGroupStateRequest`). A partition of a
    /// topic the group knows starts at offset 0 (its records were produced while the group
    /// consumed the topic); a new topic's at -1, so that `share.auto.offset.reset` decides.
    fn share_initialize_request(
        &self,
        group: &ShareGroup,
        group_epoch: i32,
        subscribed: &BTreeSet<String>,
        out: &mut Vec<CoordinatorRecord>,
    ) -> Option<InitializeShareGroupStateRequest> {
        let now = self.now_ms;
        let retry = i64::from(self.config.share_initialize_retry_interval_ms);
        let current = group.state_metadata.clone().unwrap_or_default();
        let fresh_initializing: BTreeMap<Uuid, InitMapValue> = current
            .initializing
            .iter()
            .filter(|(_, v)| now - v.timestamp < retry)
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        let known = combine_init_maps(&current.initialized, &fresh_initializing);
        let mut change: BTreeMap<Uuid, InitMapValue> = BTreeMap::new();
        for name in subscribed {
            let Some((id, count)) = self.metadata.topic_by_name(name) else {
                continue;
            };
            let have = known.get(&id).map(|v| &v.partitions);
            let missing: BTreeSet<i32> = (0..count)
                .filter(|p| have.is_none_or(|h| !h.contains(p)))
                .collect();
            if !missing.is_empty() {
                change.insert(
                    id,
                    InitMapValue {
                        name: name.clone(),
                        partitions: missing,
                        timestamp: now,
                    },
                );
            }
        }
        if change.is_empty() {
            return None;
        }
        let mut next = current.clone();
        next.initializing = combine_init_maps(&current.initializing, &change);
        for id in change.keys() {
            next.deleting.remove(id);
        }
        out.push(records::state_partition_metadata(&group.group_id, &next));
        Some(InitializeShareGroupStateRequest {
            group_id: group.group_id.clone(),
            topics: change
                .iter()
                .map(|(id, v)| {
                    let known_topic = current.initialized.contains_key(id)
                        || current.initializing.contains_key(id);
                    let start_offset = if known_topic {
                        0
                    } else {
                        UNINITIALIZED_START_OFFSET
                    };
                    InitializeStateData {
                        topic_id: *id,
                        partitions: v
                            .partitions
                            .iter()
                            .map(|p| PartitionData {
                                partition: *p,
                                state_epoch: group_epoch,
                                start_offset,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        })
    }

    /// The persister answered an initialization: `initialized` partitions move from
    /// initializing to initialized, `failed` ones leave initializing so that the next
    /// heartbeat asks again (Kafka's `initializeShareGroupState` and
    /// `uninitializeShareGroupState`). The group's members get them assigned on their next
    /// heartbeat.
    pub fn share_state_initialized(
        &mut self,
        now_ms: i64,
        group_id: &str,
        initialized: &Partitions,
        failed: &Partitions,
    ) {
        self.now_ms = now_ms;
        let Some(Group::Share(group)) = self.groups.get(group_id) else {
            return;
        };
        let mut next = group.state_metadata.clone().unwrap_or_default();
        for (id, ps) in initialized.iter().chain(failed) {
            if let Some(v) = next.initializing.get_mut(id) {
                v.partitions.retain(|p| !ps.contains(p));
                if v.partitions.is_empty() {
                    next.initializing.remove(id);
                }
            }
        }
        let done: BTreeMap<Uuid, InitMapValue> = initialized
            .iter()
            .filter(|(_, ps)| !ps.is_empty())
            .map(|(id, ps)| {
                let name = self
                    .metadata
                    .topic_by_id(*id)
                    .map(|(n, _)| n)
                    .unwrap_or_else(|| "<UNKNOWN>".to_string());
                (
                    *id,
                    InitMapValue {
                        name,
                        partitions: ps.clone(),
                        timestamp: now_ms,
                    },
                )
            })
            .collect();
        next.initialized = combine_init_maps(&next.initialized, &done);
        if group.state_metadata.as_ref() == Some(&next) {
            return;
        }
        let record = records::state_partition_metadata(group_id, &next);
        // One small record always fits a batch.
        let _ = self.write(vec![record], true);
    }

    /// A share member's session expired: it is fenced (Kafka's
    /// `shareGroupFenceMemberOperation`).
    pub(crate) fn share_session_expired(&mut self, group_id: &str, member_id: &str) {
        let Some(Group::Share(group)) = self.groups.get(group_id) else {
            return;
        };
        if !group.members.contains_key(member_id) {
            return;
        }
        let records = fence_records(group, member_id, &*self.metadata);
        let _ = self.write(records, true);
    }

    /// Session timers for the loaded members (Kafka schedules them as it replays).
    pub(crate) fn share_loaded(&mut self) {
        let keys: Vec<(TimerKey, i64)> = self
            .groups
            .iter()
            .filter_map(|(id, g)| match g {
                Group::Share(g) => Some((id, g)),
                _ => None,
            })
            .flat_map(|(id, g)| {
                let deadline =
                    self.now_ms + i64::from(self.group_config(id).share_session_timeout_ms);
                g.members.keys().map(move |m| {
                    (
                        TimerKey::ShareSession {
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
    }
}

/// Whether the group has members subscribed to initialized partitions that its target
/// assignment does not hold yet (Kafka's `initializedAssignmentPending`): a partition whose
/// state was initialized after the last assignment gets assigned.
///
/// Only topics that still exist under the recorded id count: Kafka drops a deleted topic from
/// the metadata when it is deleted; kraftd skips it here, so that a topic deleted and created
/// again under its name does not bump the epoch on every heartbeat.
fn initialized_assignment_pending(
    group: &ShareGroup,
    updated: Option<&ShareGroupMember>,
    metadata: &dyn TopicMetadata,
) -> bool {
    if group.members.is_empty() && updated.is_none() {
        return false;
    }
    let Some(state) = &group.state_metadata else {
        return false;
    };
    let subscribed = group.subscribed_topic_names_with(updated, updated);
    let mut assigned: BTreeMap<Uuid, BTreeSet<i32>> = BTreeMap::new();
    for p in group.target_assignment.values() {
        for (t, ps) in p {
            assigned.entry(*t).or_default().extend(ps.iter().copied());
        }
    }
    state.initialized.iter().any(|(id, v)| {
        subscribed.contains(&v.name)
            && metadata.topic_by_id(*id).is_some()
            && assigned.get(id) != Some(&v.partitions)
    })
}
