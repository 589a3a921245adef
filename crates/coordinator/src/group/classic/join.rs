//! JoinGroup (Kafka's `classicGroupJoin` and the methods it calls): request checks, new
//! members (KIP-394's MEMBER_ID_REQUIRED), pending members, existing members and static
//! members (KIP-345), each ending in a rebalance or in an answer about the current
//! generation.

use bytes::Bytes;
use kraftd_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use kraftd_protocol::ErrorCode;

use super::group::{plain_protocols, ClassicGroup, ClassicGroupMember, ClassicGroupState};
use super::rebalance::current_generation_response;
use super::records::empty_group_metadata_record;
use super::{
    append_error_to_response, join_error, pending_member_key, PendingReply,
    JOIN_REQUIRES_KNOWN_MEMBER_ID_VERSION, JOIN_SKIP_ASSIGNMENT_VERSION,
    NEW_MEMBER_JOIN_TIMEOUT_MS,
};
use crate::context::{ReplyId, RequestContext};
use crate::group::record::CoordinatorRecord;
use crate::group::shard::{Group, GroupCoordinatorShard};

/// A JoinGroup as the group handles it: protocols without repeated names, the rebalance
/// timeout settled (v0 has none: the session timeout stands for it), the client named.
#[derive(Debug)]
struct Join {
    member_id: String,
    group_instance_id: Option<String>,
    protocol_type: String,
    protocols: Vec<(String, Bytes)>,
    session_timeout_ms: i32,
    rebalance_timeout_ms: i32,
    client_id: String,
    client_host: String,
    reply: PendingReply,
}

impl GroupCoordinatorShard {
    /// JoinGroup v0–9. The answer comes now (errors, MEMBER_ID_REQUIRED, the current
    /// generation) or when the join phase completes.
    pub(crate) fn classic_join_group(
        &mut self,
        ctx: &RequestContext,
        reply: ReplyId,
        r: JoinGroupRequest,
    ) {
        let reply = PendingReply {
            id: reply,
            api_version: ctx.api_version,
        };
        if r.group_id.is_empty() {
            self.reply_join(reply, join_error(&r.member_id, ErrorCode::InvalidGroupId));
            return;
        }
        if r.session_timeout_ms < self.config.classic_min_session_timeout_ms
            || r.session_timeout_ms > self.config.classic_max_session_timeout_ms
        {
            self.reply_join(
                reply,
                join_error(&r.member_id, ErrorCode::InvalidSessionTimeout),
            );
            return;
        }
        let join = Join {
            rebalance_timeout_ms: if ctx.api_version == 0 {
                r.session_timeout_ms
            } else {
                r.rebalance_timeout_ms
            },
            member_id: r.member_id,
            group_instance_id: r.group_instance_id,
            protocol_type: r.protocol_type,
            protocols: plain_protocols(&r.protocols),
            session_timeout_ms: r.session_timeout_ms,
            client_id: ctx.client_id.clone(),
            client_host: ctx.client_host.clone(),
            reply,
        };
        let group_id = r.group_id;

        // The classic group, or a new one: a group is created only for a member without
        // an id, and may take the place of an empty KIP-848 group (whose records are
        // deleted with the new group's first record).
        let (mut group, created) = match self.groups.remove(&group_id) {
            Some(Group::Classic(g)) => (g, None),
            // A share group is never converted (Kafka's `getOrMaybeCreateClassicGroup`).
            Some(Group::Share(s)) => {
                self.groups.insert(group_id, Group::Share(s));
                self.reply_join(
                    join.reply,
                    join_error(&join.member_id, ErrorCode::GroupIdNotFound),
                );
                return;
            }
            Some(Group::Consumer(c)) if !c.is_empty() => {
                // Classic members in a KIP-848 group (online migration) are not served.
                self.groups.insert(group_id, Group::Consumer(c));
                self.reply_join(
                    join.reply,
                    join_error(&join.member_id, ErrorCode::InconsistentGroupProtocol),
                );
                return;
            }
            other if !join.member_id.is_empty() => {
                if let Some(g) = other {
                    self.groups.insert(group_id, g);
                }
                self.reply_join(
                    join.reply,
                    join_error(&join.member_id, ErrorCode::UnknownMemberId),
                );
                return;
            }
            other => (
                ClassicGroup::new_empty(group_id.clone(), self.now_ms),
                Some(other),
            ),
        };
        if let Some(replaced) = created {
            // The new group is written at once (Kafka writes it with the join's outcome,
            // which for a new group never has records of its own).
            let mut records: Vec<CoordinatorRecord> = match &replaced {
                Some(g) => g.delete_records(),
                None => Vec::new(),
            };
            records.push(empty_group_metadata_record(&group));
            if let Err(code) = self.write(records, false) {
                if let Some(g) = replaced {
                    self.groups.insert(group_id, g);
                }
                self.reply_join(join.reply, join_error("", append_error_to_response(code)));
                return;
            }
        }
        self.join_classic_group(&mut group, join);
        self.put_classic(group);
    }

    fn join_classic_group(&mut self, g: &mut ClassicGroup, join: Join) {
        if !self.accept_joining_member(g, &join.member_id) {
            self.drop_member(g, &join.member_id, ErrorCode::GroupMaxSizeReached);
            self.reply_join(join.reply, join_error("", ErrorCode::GroupMaxSizeReached));
        } else if join.member_id.is_empty() {
            self.join_new_member(g, join);
        } else {
            self.join_existing_member(g, join);
        }
    }

    /// Whether the group has room for the member (Kafka's `acceptJoiningMember`): while
    /// rebalancing, the members that already rejoined count; otherwise all members.
    fn accept_joining_member(&self, g: &ClassicGroup, member_id: &str) -> bool {
        let max = usize::try_from(self.config.classic_group_max_size).unwrap_or(0);
        match g.state {
            ClassicGroupState::Empty | ClassicGroupState::Dead => true,
            ClassicGroupState::PreparingRebalance => {
                g.member(member_id).is_some_and(|m| m.is_awaiting_join())
                    || g.num_awaiting_join() < max
            }
            ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => {
                g.has_member(member_id) || g.num_members() < max
            }
        }
    }

    fn join_new_member(&mut self, g: &mut ClassicGroup, join: Join) {
        if g.state == ClassicGroupState::Dead {
            self.reply_join(
                join.reply,
                join_error("", ErrorCode::CoordinatorNotAvailable),
            );
            return;
        }
        if !g.supports_protocols(&join.protocol_type, &join.protocols) {
            self.reply_join(
                join.reply,
                join_error("", ErrorCode::InconsistentGroupProtocol),
            );
            return;
        }
        match join.group_instance_id.clone() {
            Some(instance) => {
                let new_id = self.generate_member_id(g, &instance);
                match g.static_member_id(&instance).map(str::to_string) {
                    Some(old_id) => self.update_static_member(g, join, &old_id, new_id),
                    None => self.add_member(g, join, new_id),
                }
            }
            None => {
                let new_id = self.generate_member_id(g, &join.client_id);
                if join.reply.api_version >= JOIN_REQUIRES_KNOWN_MEMBER_ID_VERSION {
                    // The member must come back with this id within its session.
                    g.pending_join_members.insert(new_id.clone());
                    self.timer.schedule(
                        pending_member_key(&g.group_id, &new_id),
                        self.now_ms + i64::from(join.session_timeout_ms),
                    );
                    self.reply_join(join.reply, join_error(&new_id, ErrorCode::MemberIdRequired));
                } else {
                    self.add_member(g, join, new_id);
                }
            }
        }
    }

    fn join_existing_member(&mut self, g: &mut ClassicGroup, join: Join) {
        let member_id = join.member_id.clone();
        if g.state == ClassicGroupState::Dead {
            self.reply_join(
                join.reply,
                join_error(&member_id, ErrorCode::CoordinatorNotAvailable),
            );
            return;
        }
        if !g.supports_protocols(&join.protocol_type, &join.protocols) {
            self.reply_join(
                join.reply,
                join_error(&member_id, ErrorCode::InconsistentGroupProtocol),
            );
            return;
        }
        if g.is_pending_member(&member_id) {
            if join.group_instance_id.is_some() {
                // Only dynamic members are told MEMBER_ID_REQUIRED; Kafka fails the
                // request the same way (an internal error).
                self.reply_join(
                    join.reply,
                    join_error(&member_id, ErrorCode::UnknownServerError),
                );
                return;
            }
            self.timer
                .cancel(&pending_member_key(&g.group_id, &member_id));
            self.add_member(g, join, member_id);
            return;
        }
        if let Err(code) = g.validate_member(&member_id, join.group_instance_id.as_deref()) {
            self.reply_join(join.reply, join_error(&member_id, code));
            return;
        }
        let Some(member) = g.member(&member_id) else {
            self.reply_join(
                join.reply,
                join_error(&member_id, ErrorCode::UnknownMemberId),
            );
            return;
        };
        let same_protocols = member.matches(&join.protocols);
        match g.state {
            ClassicGroupState::PreparingRebalance => self.update_member(g, join),
            ClassicGroupState::CompletingRebalance if same_protocols => {
                // The member missed the JoinGroup answer: it gets it again.
                let leader = g.is_leader(&member_id);
                let response = current_generation_response(g, &member_id, leader);
                self.reply_join(join.reply, response);
            }
            ClassicGroupState::CompletingRebalance => self.update_member(g, join),
            ClassicGroupState::Stable if g.is_leader(&member_id) || !same_protocols => {
                // The leader rejoining forces a rebalance (its view of the topics may have
                // changed), as do new protocols.
                self.update_member(g, join);
            }
            ClassicGroupState::Stable => {
                let response = current_generation_response(g, &member_id, false);
                self.reply_join(join.reply, response);
            }
            ClassicGroupState::Empty | ClassicGroupState::Dead => {
                // Kafka: a member rejoining a group in an unexpected state starts over.
                self.reply_join(
                    join.reply,
                    join_error(&member_id, ErrorCode::UnknownMemberId),
                );
            }
        }
    }

    /// Kafka's `updateMemberThenRebalanceOrCompleteJoin`.
    fn update_member(&mut self, g: &mut ClassicGroup, join: Join) {
        let superseded = g.update_member(
            &join.member_id,
            join.protocols,
            join.rebalance_timeout_ms,
            join.session_timeout_ms,
            Some(join.reply),
        );
        if let Some(old) = superseded {
            // A second JoinGroup from the member: the first is answered so that no request
            // stays parked forever.
            self.reply_join(
                old,
                join_error(&join.member_id, ErrorCode::RebalanceInProgress),
            );
        }
        self.maybe_prepare_rebalance_or_complete_join(g);
    }

    /// Kafka's `addMemberThenRebalanceOrCompleteJoin`.
    fn add_member(&mut self, g: &mut ClassicGroup, join: Join, member_id: String) {
        let member = ClassicGroupMember {
            member_id: member_id.clone(),
            group_instance_id: join.group_instance_id,
            client_id: join.client_id,
            client_host: join.client_host,
            rebalance_timeout_ms: join.rebalance_timeout_ms,
            session_timeout_ms: join.session_timeout_ms,
            protocol_type: join.protocol_type,
            protocols: join.protocols,
            assignment: Bytes::new(),
            awaiting_join: Some(join.reply),
            awaiting_sync: None,
            is_new: true,
        };
        if g.state == ClassicGroupState::PreparingRebalance
            && g.previous_state == ClassicGroupState::Empty
        {
            // The initial delay is extended for it.
            g.new_member_added = true;
        }
        g.add(member);
        // A new member cannot heartbeat while its JoinGroup waits; a JoinGroup abandoned
        // by its client must not keep the member forever.
        self.schedule_heartbeat(&g.group_id, &member_id, NEW_MEMBER_JOIN_TIMEOUT_MS);
        self.maybe_prepare_rebalance_or_complete_join(g);
    }

    /// A known static member joined without its member id (Kafka's
    /// `updateStaticMemberThenRebalanceOrCompleteJoin`): it takes a new member id, the old
    /// one is fenced, and in a Stable group whose protocol stays it keeps its assignment
    /// without a rebalance.
    fn update_static_member(
        &mut self,
        g: &mut ClassicGroup,
        join: Join,
        old_id: &str,
        new_id: String,
    ) {
        let group_id = g.group_id.clone();
        let instance = join.group_instance_id.clone().unwrap_or_default();
        let current_leader = g.leader_id.clone().unwrap_or_default();
        let Some((old_join, old_sync)) = g.replace_static_member(&instance, old_id, &new_id) else {
            self.reply_join(join.reply, join_error("", ErrorCode::UnknownMemberId));
            return;
        };
        if let Some(r) = old_join {
            let fenced = JoinGroupResponse {
                error_code: ErrorCode::FencedInstanceId.code(),
                member_id: old_id.to_string(),
                protocol_name: None,
                ..Default::default()
            };
            self.reply_join(r, fenced);
        }
        if let Some(r) = old_sync {
            self.reply_sync(r, super::sync_error(ErrorCode::FencedInstanceId));
        }
        let Some(member) = g.member(&new_id) else {
            self.reply_join(join.reply, join_error("", ErrorCode::UnknownMemberId));
            return;
        };
        let (old_protocols, old_rebalance, old_session) = (
            member.protocols.clone(),
            member.rebalance_timeout_ms,
            member.session_timeout_ms,
        );
        self.cancel_heartbeat(&group_id, old_id);
        self.schedule_heartbeat(&group_id, &new_id, i64::from(old_session));
        g.update_member(
            &new_id,
            join.protocols,
            join.rebalance_timeout_ms,
            join.session_timeout_ms,
            Some(join.reply),
        );
        match g.state {
            ClassicGroupState::Stable => {
                let selected = g.select_protocol();
                if selected.is_none() || selected.as_deref() != g.protocol_name() {
                    self.maybe_prepare_rebalance_or_complete_join(g);
                    return;
                }
                // Same protocol: persist the new member id and hand back the assignment.
                let record = super::records::group_metadata_record(g, None);
                match self.write(vec![record], false) {
                    Ok(()) => {
                        let reply = g
                            .members
                            .get_mut(&new_id)
                            .and_then(|m| m.awaiting_join.take());
                        let Some(reply) = reply else {
                            return;
                        };
                        let mut response = if reply.api_version >= JOIN_SKIP_ASSIGNMENT_VERSION {
                            // The leader learns it leads, and that it need not assign.
                            let leader = g.is_leader(&new_id);
                            let mut r = current_generation_response(g, &new_id, leader);
                            r.skip_assignment = leader;
                            r
                        } else {
                            // Before v9 the old leader id is named, so a static leader
                            // that rejoined acts as a follower and keeps its assignment.
                            current_generation_response(g, &new_id, false)
                        };
                        if reply.api_version < JOIN_SKIP_ASSIGNMENT_VERSION {
                            response.leader = current_leader;
                        }
                        self.reply_join(reply, response);
                    }
                    Err(code) => {
                        // Back to the old member id, which the group still knows.
                        let reply = g.update_member(
                            &new_id,
                            old_protocols,
                            old_rebalance,
                            old_session,
                            None,
                        );
                        g.replace_static_member(&instance, &new_id, old_id);
                        self.cancel_heartbeat(&group_id, &new_id);
                        self.schedule_heartbeat(&group_id, old_id, i64::from(old_session));
                        let mut response = current_generation_response(g, "", false);
                        response.leader = current_leader;
                        response.error_code = append_error_to_response(code).code();
                        self.reply_join(reply.unwrap_or(join.reply), response);
                    }
                }
            }
            ClassicGroupState::CompletingRebalance => {
                // The leader may be assigning to the old member id: rebalance.
                self.prepare_rebalance(g);
            }
            ClassicGroupState::PreparingRebalance
            | ClassicGroupState::Empty
            | ClassicGroupState::Dead => self.maybe_complete_join_phase(g),
        }
    }
}
