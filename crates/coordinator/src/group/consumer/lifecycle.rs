//! Members leaving and being fenced (Kafka's `consumerGroupLeave`,
//! `consumerGroupFenceMember`), the session and rebalance timeouts, the timers of a loaded
//! shard, and metadata updates (regexes resolved anew, the group epoch bumped when the
//! subscribed topics' metadata changed).

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kraftd_protocol::ErrorCode;

use super::group::{ConsumerGroup, ResolvedRegex};
use super::heartbeat::Refusal;
use super::member::{ConsumerGroupMember, MemberState, LEAVE_GROUP_STATIC_MEMBER_EPOCH};
use super::records;
use super::subscription::{metadata_hash, resolve};
use super::target::Overlay;
use crate::context::TopicMetadata;
use crate::group::record::CoordinatorRecord;
use crate::group::shard::{Group, GroupCoordinatorShard};
use crate::group::timer::TimerKey;

/// The records that remove a member and bump the group epoch (with the metadata hash of
/// what the others subscribe to); a regex nobody else subscribes to goes too.
pub(crate) fn fence_records(
    group: &ConsumerGroup,
    member: &ConsumerGroupMember,
    metadata: &dyn TopicMetadata,
) -> Vec<CoordinatorRecord> {
    let gid = &group.group_id;
    let id = &member.member_id;
    let mut out = vec![
        records::current_assignment_tombstone(gid, id),
        records::target_assignment_tombstone(gid, id),
        records::member_subscription_tombstone(gid, id),
    ];
    let mut regexes: BTreeMap<String, BTreeSet<String>> = group
        .resolved_regexes
        .iter()
        .map(|(k, v)| (k.clone(), v.topics.clone()))
        .collect();
    if member.has_regex() && group.regex_subscribers(&member.subscribed_topic_regex) == 1 {
        out.push(records::regex_tombstone(
            gid,
            &member.subscribed_topic_regex,
        ));
        regexes.remove(&member.subscribed_topic_regex);
    }
    let overlay = Overlay {
        group,
        removed: vec![id.as_str()],
        updated: None,
        regexes: &regexes,
    };
    let hash = metadata_hash(&overlay.subscribed_topic_names(), metadata);
    out.push(records::group_epoch(
        gid,
        group.group_epoch.saturating_add(1),
        hash,
    ));
    out
}

impl GroupCoordinatorShard {
    /// A leave: -1 removes the member; -2 keeps a static member's place (and
    /// assignment) for its session, to be taken over by its next instance.
    pub(crate) fn consumer_leave(
        &mut self,
        r: &ConsumerGroupHeartbeatRequest,
    ) -> Result<ConsumerGroupHeartbeatResponse, Refusal> {
        let gid = &r.group_id;
        let group = match self.groups.get(gid) {
            Some(Group::Consumer(g)) => g,
            Some(_) => {
                return Err((
                    ErrorCode::GroupIdNotFound,
                    format!("Group {gid} is not a consumer group."),
                ))
            }
            None => {
                return Err((
                    ErrorCode::GroupIdNotFound,
                    format!("Consumer group {gid} not found."),
                ))
            }
        };
        let member = match &r.instance_id {
            None => group.member(&r.member_id).ok_or_else(|| {
                (
                    ErrorCode::UnknownMemberId,
                    format!("Member {} is not a member of group {gid}.", r.member_id),
                )
            })?,
            Some(instance) => {
                let m = group.static_member(instance).ok_or_else(|| {
                    (
                        ErrorCode::UnknownMemberId,
                        format!("Instance id {instance} is unknown."),
                    )
                })?;
                if m.member_id != r.member_id {
                    return Err((
                        ErrorCode::FencedInstanceId,
                        format!(
                            "Static member {} with instance id {instance} was fenced by member {}.",
                            r.member_id, m.member_id
                        ),
                    ));
                }
                m
            }
        };
        let member_id = member.member_id.clone();
        let batch_too_large = |code| (code, "The group's records do not fit one batch.".into());
        if r.instance_id.is_some() && r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
            let mut leaving = member.clone();
            leaving.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
            leaving.pending_revocation.clear();
            let record = records::current_assignment(gid, &leaving);
            self.write(vec![record], true).map_err(batch_too_large)?;
            self.cancel_rebalance_timeout(gid, &member_id);
            return Ok(ConsumerGroupHeartbeatResponse {
                member_id: Some(member_id),
                member_epoch: LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                ..Default::default()
            });
        }
        let records = fence_records(group, member, &*self.metadata);
        self.write(records, true).map_err(batch_too_large)?;
        self.cancel_member_timers(gid, &member_id);
        Ok(ConsumerGroupHeartbeatResponse {
            member_id: Some(r.member_id.clone()),
            member_epoch: r.member_epoch,
            ..Default::default()
        })
    }

    /// Removes a member (its session expired, or it did not revoke in time). Nothing
    /// happens when the member is gone; when the records do not fit, the session timer
    /// tries again later.
    fn consumer_fence(&mut self, gid: &str, member_id: &str) {
        let Some(Group::Consumer(group)) = self.groups.get(gid) else {
            return;
        };
        let Some(member) = group.member(member_id) else {
            return;
        };
        let records = fence_records(group, member, &*self.metadata);
        if self.write(records, true).is_ok() {
            self.cancel_member_timers(gid, member_id);
        } else {
            let retry = self.now_ms + i64::from(self.group_config(gid).consumer_session_timeout_ms);
            self.timer.schedule(
                TimerKey::ConsumerSession {
                    group: gid.to_string(),
                    member: member_id.to_string(),
                },
                retry,
            );
        }
    }

    fn cancel_member_timers(&mut self, gid: &str, member_id: &str) {
        self.timer.cancel(&TimerKey::ConsumerSession {
            group: gid.to_string(),
            member: member_id.to_string(),
        });
        self.cancel_rebalance_timeout(gid, member_id);
    }

    fn cancel_rebalance_timeout(&mut self, gid: &str, member_id: &str) {
        self.timer.cancel(&TimerKey::ConsumerRebalance {
            group: gid.to_string(),
            member: member_id.to_string(),
        });
        if let Some(Group::Consumer(g)) = self.groups.get_mut(gid) {
            g.rebalance_timeouts.remove(member_id);
        }
    }

    /// A consumer timer fired: an expired session fences the member; an expired rebalance
    /// timeout fences it if it is still in the epoch it had to revoke from.
    pub(crate) fn consumer_timer_fired(&mut self, key: TimerKey) {
        match key {
            TimerKey::ConsumerSession { group, member } => self.consumer_fence(&group, &member),
            TimerKey::ConsumerRebalance { group, member } => {
                let Some(Group::Consumer(g)) = self.groups.get(&group) else {
                    return;
                };
                let Some(m) = g.member(&member) else {
                    return;
                };
                let still = match g.rebalance_timeouts.get(&member) {
                    Some(epoch) => *epoch == m.member_epoch,
                    None => m.state == MemberState::UnrevokedPartitions,
                };
                if still {
                    self.consumer_fence(&group, &member);
                }
            }
            _ => {}
        }
    }

    /// After a load: a session timeout for every member, and a rebalance timeout for those
    /// that were revoking.
    pub(crate) fn consumer_loaded(&mut self) {
        let now = self.now_ms;
        let default_session = self.config.consumer_session_timeout_ms;
        let group_configs = &self.group_configs;
        let mut groups: Vec<&mut ConsumerGroup> = self
            .groups
            .values_mut()
            .filter_map(|g| match g {
                Group::Consumer(g) => Some(g),
                Group::Classic(_) | Group::Share(_) | Group::Streams(_) => None,
            })
            .collect();
        groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        for g in groups {
            let session = i64::from(
                group_configs
                    .get(&g.group_id)
                    .map_or(default_session, |c| c.consumer_session_timeout_ms),
            );
            for m in g.members.values() {
                let (group, member) = (g.group_id.clone(), m.member_id.clone());
                self.timer.schedule(
                    TimerKey::ConsumerSession {
                        group: group.clone(),
                        member: member.clone(),
                    },
                    now + session,
                );
                if m.state == MemberState::UnrevokedPartitions {
                    self.timer.schedule(
                        TimerKey::ConsumerRebalance { group, member },
                        now + i64::from(m.rebalance_timeout_ms),
                    );
                    g.rebalance_timeouts
                        .insert(m.member_id.clone(), m.member_epoch);
                }
            }
        }
    }

    /// The topics changed: every group's regexes are resolved again, and a group whose
    /// subscribed topics now hash differently gets a new group epoch (its next heartbeat
    /// computes a new target assignment). Each group writes its own batch.
    pub(crate) fn consumer_metadata_changed(&mut self) {
        let mut ids: Vec<String> = self
            .groups
            .iter()
            .filter(|(_, g)| matches!(g, Group::Consumer(_)))
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        let all_topics = self.metadata.topic_names();
        for id in ids {
            let Some(Group::Consumer(group)) = self.groups.get(&id) else {
                continue;
            };
            let records = metadata_records(group, &all_topics, &*self.metadata, self.now_ms);
            if self.write(records, true).is_ok() {
                if let Some(Group::Consumer(g)) = self.groups.get_mut(&id) {
                    g.regexes_fresh = true;
                }
            }
        }
    }
}

/// A group's records for new metadata: its regexes resolved anew, and a group epoch bump
/// when they or the subscribed topics' metadata changed.
fn metadata_records(
    group: &ConsumerGroup,
    all_topics: &[String],
    metadata: &dyn TopicMetadata,
    now: i64,
) -> Vec<CoordinatorRecord> {
    let mut out = Vec::new();
    let mut regexes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut changed = false;
    for (regex, resolved) in &group.resolved_regexes {
        regexes.insert(regex.clone(), resolved.topics.clone());
    }
    for regex in group.subscribed_regexes() {
        let topics = resolve(regex, all_topics);
        if regexes.get(regex) != Some(&topics) {
            changed = true;
            let r = ResolvedRegex {
                topics: topics.clone(),
                version: now,
                timestamp: now,
            };
            out.push(records::regex(&group.group_id, regex, &r));
            regexes.insert(regex.to_string(), topics);
        }
    }
    if group.members.is_empty() {
        return out;
    }
    let overlay = Overlay {
        group,
        removed: Vec::new(),
        updated: None,
        regexes: &regexes,
    };
    let hash = metadata_hash(&overlay.subscribed_topic_names(), metadata);
    if changed || hash != group.metadata_hash {
        out.push(records::group_epoch(
            &group.group_id,
            group.group_epoch.saturating_add(1),
            hash,
        ));
    }
    out
}
