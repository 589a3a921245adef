//! ConsumerGroupHeartbeat (Kafka's `GroupMetadataManager.consumerGroupHeartbeat` and the
//! service's request validation): a join (epoch 0), a heartbeat (the member's epoch) or a
//! leave (-1, or -2 for a static member that comes back). A heartbeat is computed against
//! the state as it is, produces records, and changes the state only by writing them:
//! 1. the member's subscription (a record when it changed), its regex (resolved here, at
//!    once), and a group epoch bump when the subscriptions or their metadata changed;
//! 2. a new target assignment when the group epoch passed the assignment epoch;
//! 3. one reconciliation step of the member toward its target.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::messages::consumer_group_heartbeat_response::{
    Assignment, TopicPartitions as ResponseTopicPartitions,
};
use kraftd_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kraftd_protocol::ErrorCode;

use super::group::{is_released, ConsumerGroup, ResolvedRegex};
use super::member::{
    owned_is_subset, ConsumerGroupMember, MemberState, Partitions, LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
};
use super::reconciliation::Reconciliation;
use super::records;
use super::subscription::{compile, member_topic_names, metadata_hash, resolve, topic_ids};
use super::target::Overlay;
use crate::context::RequestContext;
use crate::group::config::{GroupCoordinatorConfig, MigrationPolicy};
use crate::group::record::CoordinatorRecord;
use crate::group::shard::{Group, GroupCoordinatorShard};
use crate::group::timer::TimerKey;

/// An error answer: the code and Kafka's message.
pub(crate) type Refusal = (ErrorCode, String);

/// v1 is the first version whose clients always generate their member id.
const CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION: i16 = 1;

/// What a heartbeat decided; applied once its records are written.
struct Plan {
    records: Vec<CoordinatorRecord>,
    response: ConsumerGroupHeartbeatResponse,
    member_id: String,
    /// Schedule the rebalance timeout at this epoch (`Some(Some)`), cancel it
    /// (`Some(None)`), or leave it.
    rebalance: Option<Option<(i32, i32)>>,
}

/// Whether a member changed its regex, and whether the new one is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RegexUpdate {
    None,
    Updated,
    UpdatedAndResolved,
}

/// Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid`.
fn validate(
    r: &ConsumerGroupHeartbeatRequest,
    version: i16,
    config: &GroupCoordinatorConfig,
) -> Result<(), Refusal> {
    let invalid = |m: &str| Err((ErrorCode::InvalidRequest, m.to_string()));
    if (version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
        || r.member_epoch > 0
        || r.member_epoch == LEAVE_GROUP_MEMBER_EPOCH)
        && r.member_id.is_empty()
    {
        return invalid("MemberId can't be empty.");
    }
    if r.group_id.is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if r.instance_id.as_deref() == Some("") {
        return invalid("InstanceId can't be empty.");
    }
    if r.rack_id.as_deref() == Some("") {
        return invalid("RackId can't be empty.");
    }
    if r.member_epoch == 0 {
        if r.rebalance_timeout_ms == -1 {
            return invalid("RebalanceTimeoutMs must be provided in first request.");
        }
        if r.topic_partitions.as_ref().is_none_or(|t| !t.is_empty()) {
            return invalid("TopicPartitions must be empty when (re-)joining.");
        }
        if r.subscribed_topic_names.is_none() && r.subscribed_topic_regex.is_none() {
            return invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            );
        }
    } else if r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        if r.instance_id.is_none() {
            return invalid("InstanceId can't be null.");
        }
    } else if r.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        return invalid("MemberEpoch is invalid.");
    }
    if let Some(a) = &r.server_assignor {
        if !config.consumer_assignors.iter().any(|c| c.name() == a) {
            let names: Vec<&str> = config.consumer_assignors.iter().map(|c| c.name()).collect();
            return Err((
                ErrorCode::UnsupportedAssignor,
                format!(
                    "ServerAssignor {a} is not supported. Supported assignors: {}.",
                    names.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Kafka's `throwIfConsumerGroupMemberEpochIsInvalid`: epoch 0 rejoins; a greater epoch is
/// fenced; a smaller one only if it is the previous epoch and the member owns no more than
/// its assignment (the response with the bump was lost).
fn check_epoch(
    m: &ConsumerGroupMember,
    epoch: i32,
    owned: Option<&[kraftd_protocol::messages::consumer_group_heartbeat_request::TopicPartitions]>,
) -> Result<(), Refusal> {
    if epoch == 0 {
        return Ok(());
    }
    let fenced = |which: &str| {
        Err((
            ErrorCode::FencedMemberEpoch,
            format!(
                "The consumer group member has a {which} member epoch ({epoch}) than the one known \
                 by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                m.member_epoch
            ),
        ))
    };
    if epoch > m.member_epoch {
        return fenced("greater");
    }
    if epoch < m.member_epoch
        && (epoch != m.previous_member_epoch || !owned_is_subset(owned, &m.assigned))
    {
        return fenced("smaller");
    }
    Ok(())
}

impl GroupCoordinatorShard {
    /// ConsumerGroupHeartbeat: the answer, with the error when it failed.
    pub(crate) fn consumer_heartbeat(
        &mut self,
        ctx: &RequestContext,
        r: ConsumerGroupHeartbeatRequest,
    ) -> ConsumerGroupHeartbeatResponse {
        let result = validate(&r, ctx.api_version, &self.config).and_then(|()| {
            if r.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
                || r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
            {
                self.consumer_leave(&r)
            } else {
                self.consumer_join_or_heartbeat(ctx, &r)
            }
        });
        result.unwrap_or_else(|(code, message)| ConsumerGroupHeartbeatResponse {
            error_code: code.code(),
            error_message: Some(message),
            ..Default::default()
        })
    }

    fn consumer_join_or_heartbeat(
        &mut self,
        ctx: &RequestContext,
        r: &ConsumerGroupHeartbeatRequest,
    ) -> Result<ConsumerGroupHeartbeatResponse, Refusal> {
        let plan = self.plan_heartbeat(ctx, r)?;
        self.write(plan.records, true).map_err(|code| {
            (
                code,
                "The group's records do not fit one batch.".to_string(),
            )
        })?;
        let now = self.now_ms;
        let session = TimerKey::ConsumerSession {
            group: r.group_id.clone(),
            member: plan.member_id.clone(),
        };
        self.timer.schedule(
            session,
            now + i64::from(self.group_config(&r.group_id).consumer_session_timeout_ms),
        );
        let rebalance = TimerKey::ConsumerRebalance {
            group: r.group_id.clone(),
            member: plan.member_id.clone(),
        };
        let group = match self.groups.get_mut(&r.group_id) {
            Some(Group::Consumer(g)) => Some(g),
            _ => None,
        };
        match plan.rebalance {
            Some(Some((epoch, timeout))) => {
                self.timer.schedule(rebalance, now + i64::from(timeout));
                if let Some(g) = group {
                    g.rebalance_timeouts.insert(plan.member_id.clone(), epoch);
                    g.regexes_fresh = true;
                }
            }
            Some(None) => {
                self.timer.cancel(&rebalance);
                if let Some(g) = group {
                    g.rebalance_timeouts.remove(&plan.member_id);
                    g.regexes_fresh = true;
                }
            }
            None => {
                if let Some(g) = group {
                    g.regexes_fresh = true;
                }
            }
        }
        Ok(plan.response)
    }

    /// Computes a join or heartbeat against the current state (which it does not change).
    fn plan_heartbeat(
        &self,
        ctx: &RequestContext,
        r: &ConsumerGroupHeartbeatRequest,
    ) -> Result<Plan, Refusal> {
        let now = self.now_ms;
        let metadata = &*self.metadata;
        let config = &*self.group_config(&r.group_id);
        let gid = r.group_id.as_str();
        let joining = r.member_epoch == 0;
        let mut out: Vec<CoordinatorRecord> = Vec::new();

        // The group: a consumer group, or a new one (replacing an empty classic group).
        let fresh;
        let group: &ConsumerGroup = match self.groups.get(gid) {
            Some(Group::Consumer(g)) => g,
            Some(classic @ Group::Classic(c)) if joining && c.is_empty() => {
                // Kafka converts an empty classic group whatever the migration policy; its
                // offsets stay.
                out.extend(classic.delete_records());
                fresh = ConsumerGroup::new(gid.to_string());
                &fresh
            }
            Some(Group::Classic(_)) if joining => {
                let why = if matches!(
                    config.migration_policy,
                    MigrationPolicy::Disabled | MigrationPolicy::Downgrade
                ) {
                    "online upgrade is disabled"
                } else {
                    "kraftd converts only empty classic groups"
                };
                return Err((
                    ErrorCode::GroupIdNotFound,
                    format!("Cannot upgrade classic group {gid} to consumer group because {why}."),
                ));
            }
            Some(_) => {
                return Err((
                    ErrorCode::GroupIdNotFound,
                    format!("Group {gid} is not a consumer group."),
                ))
            }
            None if joining => {
                fresh = ConsumerGroup::new(gid.to_string());
                &fresh
            }
            None => {
                return Err((
                    ErrorCode::GroupIdNotFound,
                    format!("Consumer group {gid} not found."),
                ))
            }
        };
        let max = usize::try_from(config.consumer_group_max_size).unwrap_or(0);
        if group.members.len() >= max
            && (r.member_id.is_empty() || !group.members.contains_key(&r.member_id))
        {
            return Err((
                ErrorCode::GroupMaxSizeReached,
                format!("The consumer group has reached its maximum capacity of {max} members."),
            ));
        }
        let member_id = if r.member_id.is_empty() {
            group.generate_member_id(self.partition, now)
        } else {
            r.member_id.clone()
        };
        let owned = r.topic_partitions.as_deref();

        // The member, or a new one; a static member that left may be replaced.
        let (member, replaced) = self.member_for(group, r, &member_id, owned)?;
        if let Some(old) = replaced {
            out.push(records::current_assignment_tombstone(gid, &old.member_id));
            out.push(records::target_assignment_tombstone(gid, &old.member_id));
            out.push(records::member_subscription_tombstone(gid, &old.member_id));
            out.push(records::member_subscription(gid, &member));
            let target = group.target_assignment.get(&old.member_id);
            out.push(records::target_assignment(
                gid,
                &member_id,
                target.unwrap_or(&Partitions::new()),
            ));
            out.push(records::current_assignment(gid, &member));
        }

        // 1. The subscription.
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
        if let Some(a) = &r.server_assignor {
            updated.server_assignor = Some(a.clone());
        }
        if let Some(names) = &r.subscribed_topic_names {
            updated.subscribed_topic_names = names.iter().cloned().collect();
        }
        if let Some(regex) = &r.subscribed_topic_regex {
            updated.subscribed_topic_regex = regex.clone();
        }
        updated.client_id = ctx.client_id.clone();
        updated.client_host = ctx.client_host.clone();
        updated.classic_member_metadata = None;

        let is_new = replaced.is_none() && !group.members.contains_key(&member_id);
        let names_changed = updated.subscribed_topic_names != member.subscribed_topic_names;
        if is_new || updated.metadata_differs(&member) {
            out.push(records::member_subscription(gid, &updated));
        }

        let all_topics = metadata.topic_names();
        let mut regexes: BTreeMap<String, BTreeSet<String>> = group
            .resolved_regexes
            .iter()
            .map(|(k, v)| (k.clone(), v.topics.clone()))
            .collect();
        let mut refreshed = false;
        let put_regex = |out: &mut Vec<CoordinatorRecord>,
                         regexes: &mut BTreeMap<String, BTreeSet<String>>,
                         regex: &str| {
            let topics = resolve(regex, &all_topics);
            let changed = regexes.get(regex) != Some(&topics);
            let resolved = ResolvedRegex {
                topics: topics.clone(),
                version: now,
                timestamp: now,
            };
            out.push(records::regex(gid, regex, &resolved));
            regexes.insert(regex.to_string(), topics);
            changed
        };
        if !group.regexes_fresh {
            // Resolved against metadata this shard no longer has (it was loaded since).
            for regex in group.subscribed_regexes() {
                let current = group.resolved_regexes.get(regex).map(|r| &r.topics);
                if current != Some(&resolve(regex, &all_topics)) {
                    refreshed |= put_regex(&mut out, &mut regexes, regex);
                }
            }
        }
        let mut regex_update = RegexUpdate::None;
        let (old_re, new_re) = (
            &member.subscribed_topic_regex,
            &updated.subscribed_topic_regex,
        );
        if old_re != new_re {
            regex_update = RegexUpdate::Updated;
            let previous = replaced.map_or(member_id.as_str(), |o| o.member_id.as_str());
            let still_in_group = group.member(previous).is_some();
            if !old_re.is_empty() && still_in_group && group.regex_subscribers(old_re) == 1 {
                out.push(records::regex_tombstone(gid, old_re));
                regexes.remove(old_re);
            }
            if !new_re.is_empty() {
                if group.regex_subscribers(new_re) == 0 || !regexes.contains_key(new_re) {
                    compile(new_re)?;
                    put_regex(&mut out, &mut regexes, new_re);
                }
                regex_update = RegexUpdate::UpdatedAndResolved;
            } else if !old_re.is_empty() {
                regex_update = RegexUpdate::UpdatedAndResolved;
            }
        }

        let removed: Vec<&str> = replaced.iter().map(|o| o.member_id.as_str()).collect();
        let overlay = Overlay {
            group,
            removed,
            updated: Some(&updated),
            regexes: &regexes,
        };
        let hash = metadata_hash(&overlay.subscribed_topic_names(), metadata);
        let mut group_epoch = group.group_epoch;
        if group_epoch == 0
            || names_changed
            || regex_update == RegexUpdate::UpdatedAndResolved
            || refreshed
            || hash != group.metadata_hash
        {
            group_epoch = group_epoch.saturating_add(1);
            out.push(records::group_epoch(gid, group_epoch, hash));
            if group.has_partition_metadata_record {
                out.push(records::partition_metadata_tombstone(gid));
            }
        }

        // 2. The target assignment.
        let (target_epoch, target) = if group_epoch > group.assignment_epoch {
            let (mut all, recs) = overlay.compute_target(group_epoch, now, metadata, config);
            out.extend(recs);
            (group_epoch, all.remove(&member_id).unwrap_or_default())
        } else {
            let t = group.target_of(&member_id, updated.instance_id.as_deref());
            (group.assignment_epoch, t.cloned().unwrap_or_default())
        };

        // 3. Reconciliation.
        let subscription_changed = names_changed || regex_update != RegexUpdate::None;
        let mut next = updated.clone();
        let mut rebalance = None;
        if subscription_changed || !updated.is_reconciled_to(target_epoch) {
            let subscribed = topic_ids(&member_topic_names(&updated, &regexes), metadata);
            let is_owned = |t, p| group.owner(t, p).is_some();
            next = Reconciliation {
                target_epoch,
                target: &target,
                subscribed: &subscribed,
                is_owned: &is_owned,
                owned,
                enforce_subscription_consistency: subscription_changed,
            }
            .next(&updated)
            .map_err(|_| {
                (
                    ErrorCode::FencedMemberEpoch,
                    "The consumer group member is in a unknown state. The member must abandon \
                     all its partitions and rejoin."
                        .to_string(),
                )
            })?;
            if is_new || next.assignment_differs(&updated) {
                out.push(records::current_assignment(gid, &next));
                rebalance = Some(if next.state == MemberState::UnrevokedPartitions {
                    Some((next.member_epoch, next.rebalance_timeout_ms))
                } else {
                    None
                });
            }
        }

        // The assignment goes out on a join, a full request, or when it changed.
        let full_request = r.rebalance_timeout_ms != -1
            && (r.subscribed_topic_names.is_some() || r.subscribed_topic_regex.is_some())
            && owned.is_some();
        let assigned = next.assigned_partitions();
        let assignment = (joining || full_request || member.assigned_partitions() != assigned)
            .then(|| response_assignment(&assigned));
        Ok(Plan {
            records: out,
            response: ConsumerGroupHeartbeatResponse {
                member_id: Some(member_id.clone()),
                member_epoch: next.member_epoch,
                heartbeat_interval_ms: config.consumer_heartbeat_interval_ms,
                assignment,
                ..Default::default()
            },
            member_id,
            rebalance,
        })
    }

    /// The member a heartbeat is for (Kafka's `getOrMaybeSubscribe{Dynamic,Static}
    /// ConsumerGroupMember`), and the static member it replaces, if any.
    fn member_for<'g>(
        &self,
        group: &'g ConsumerGroup,
        r: &ConsumerGroupHeartbeatRequest,
        member_id: &str,
        owned: Option<
            &[kraftd_protocol::messages::consumer_group_heartbeat_request::TopicPartitions],
        >,
    ) -> Result<(ConsumerGroupMember, Option<&'g ConsumerGroupMember>), Refusal> {
        let joining = r.member_epoch == 0;
        let unknown = || {
            (
                ErrorCode::UnknownMemberId,
                format!(
                    "Member {member_id} is not a member of group {}.",
                    group.group_id
                ),
            )
        };
        let Some(instance) = &r.instance_id else {
            let m = match group.member(member_id) {
                Some(m) => m.clone(),
                None if joining => ConsumerGroupMember::new(member_id.to_string()),
                None => return Err(unknown()),
            };
            check_epoch(&m, r.member_epoch, owned)?;
            return Ok((m, None));
        };
        let existing = group.static_member(instance);
        if joining {
            return match existing {
                None => Ok((
                    group
                        .member(member_id)
                        .cloned()
                        .unwrap_or_else(|| ConsumerGroupMember::new(member_id.to_string())),
                    None,
                )),
                Some(old) if !is_released(old) => Err((
                    ErrorCode::UnreleasedInstanceId,
                    format!(
                        "Static member {member_id} with instance id {instance} cannot join the \
                         group because the instance id is owned by {} member.",
                        old.member_id
                    ),
                )),
                Some(old) => {
                    let mut m = old.clone();
                    m.member_id = member_id.to_string();
                    m.member_epoch = 0;
                    m.previous_member_epoch = 0;
                    Ok((m, Some(old)))
                }
            };
        }
        let old = existing.ok_or_else(|| {
            (
                ErrorCode::UnknownMemberId,
                format!("Instance id {instance} is unknown."),
            )
        })?;
        if old.member_id != member_id {
            return Err((
                ErrorCode::FencedInstanceId,
                format!(
                    "Static member {member_id} with instance id {instance} was fenced by member {}.",
                    old.member_id
                ),
            ));
        }
        check_epoch(old, r.member_epoch, owned)?;
        Ok((old.clone(), None))
    }
}

/// The assignment as the response carries it, by topic id.
fn response_assignment(p: &Partitions) -> Assignment {
    Assignment {
        topic_partitions: p
            .iter()
            .map(|(t, ps)| ResponseTopicPartitions {
                topic_id: *t,
                partitions: ps.iter().copied().collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
