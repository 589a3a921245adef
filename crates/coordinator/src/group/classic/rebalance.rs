//! The rebalance (Kafka's `prepareRebalance`, `completeClassicGroupJoin` and their
//! helpers): starting a join phase (with the initial delay for an empty group), completing
//! it into the next generation, handing out or withdrawing assignments, removing members,
//! and the classic timers (sessions, pending members, join and sync phases).

use std::collections::HashMap;

use bytes::Bytes;
use kraftd_protocol::messages::{JoinGroupResponse, SyncGroupResponse};
use kraftd_protocol::ErrorCode;

use super::group::{ClassicGroup, ClassicGroupState};
use super::records::group_metadata_record;
use super::{join_error, join_key, pending_member_key, sync_error, sync_key};
use crate::group::shard::GroupCoordinatorShard;
use crate::group::timer::TimerKey;

/// A JoinGroup answer about the group's current generation; the leader's lists the
/// members with their metadata.
pub(super) fn current_generation_response(
    g: &ClassicGroup,
    member_id: &str,
    with_members: bool,
) -> JoinGroupResponse {
    JoinGroupResponse {
        members: if with_members {
            g.members_for_leader()
        } else {
            Vec::new()
        },
        member_id: member_id.to_string(),
        generation_id: g.generation_id,
        protocol_name: g.protocol_name.clone(),
        protocol_type: g.protocol_type.clone(),
        leader: g.leader_id.clone().unwrap_or_default(),
        skip_assignment: false,
        ..Default::default()
    }
}

impl GroupCoordinatorShard {
    /// Starts a rebalance when the group may, else tries to complete the one under way.
    pub(super) fn maybe_prepare_rebalance_or_complete_join(&mut self, g: &mut ClassicGroup) {
        if g.can_rebalance() {
            self.prepare_rebalance(g);
        } else {
            self.maybe_complete_join_phase(g);
        }
    }

    /// Completes the join phase if every member rejoined, except during the initial
    /// delay.
    pub(super) fn maybe_complete_join_phase(&mut self, g: &mut ClassicGroup) {
        if g.state == ClassicGroupState::PreparingRebalance
            && g.previous_state != ClassicGroupState::Empty
            && g.has_all_members_joined()
        {
            self.complete_join(g);
        }
    }

    /// Starts a join phase (Kafka's `prepareRebalance`). Members awaiting their assignment
    /// are told to rejoin; an empty group waits `group.initial.rebalance.delay.ms` for more
    /// members, otherwise the phase lasts until every member rejoined or the rebalance
    /// timeout.
    pub(super) fn prepare_rebalance(&mut self, g: &mut ClassicGroup) {
        if g.state == ClassicGroupState::CompletingRebalance {
            self.reset_and_propagate_assignment_with_error(g, ErrorCode::RebalanceInProgress);
        }
        g.pending_sync_members.clear();
        self.timer.cancel(&sync_key(&g.group_id));
        let initial = g.state == ClassicGroupState::Empty;
        if initial {
            let delay = self.config.classic_initial_rebalance_delay_ms.max(0);
            let remaining = g.rebalance_timeout_ms().saturating_sub(delay).max(0);
            self.timer
                .schedule(join_key(&g.group_id), self.now_ms + i64::from(delay));
            g.initial_join = Some((delay, remaining));
        }
        g.transition_to(ClassicGroupState::PreparingRebalance, self.now_ms);
        if !initial {
            self.maybe_complete_join_else_schedule(g);
        }
    }

    fn maybe_complete_join_else_schedule(&mut self, g: &mut ClassicGroup) {
        if g.has_all_members_joined() {
            self.complete_join(g);
        } else {
            g.initial_join = None;
            let deadline = self.now_ms + i64::from(g.rebalance_timeout_ms());
            self.timer.schedule(join_key(&g.group_id), deadline);
        }
    }

    /// The initial delay ran out: if members kept arriving, wait again (up to the
    /// rebalance timeout in all), else complete (Kafka's
    /// `tryCompleteInitialRebalanceElseSchedule`).
    fn try_complete_initial_rebalance(&mut self, g: &mut ClassicGroup, delay: i32, remaining: i32) {
        if g.new_member_added && remaining != 0 {
            g.new_member_added = false;
            let new_delay = self
                .config
                .classic_initial_rebalance_delay_ms
                .min(remaining);
            let new_remaining = remaining.saturating_sub(delay).max(0);
            self.timer
                .schedule(join_key(&g.group_id), self.now_ms + i64::from(new_delay));
            g.initial_join = Some((new_delay, new_remaining));
        } else {
            self.complete_join(g);
        }
    }

    /// Ends the join phase (Kafka's `completeClassicGroupJoin`): dynamic members that did
    /// not rejoin are removed, the generation moves on, every waiting member gets its
    /// JoinGroup answer (the leader with the members' metadata) and the sync phase
    /// starts; a group left without members becomes Empty and is written.
    pub(super) fn complete_join(&mut self, g: &mut ClassicGroup) {
        self.timer.cancel(&join_key(&g.group_id));
        g.initial_join = None;
        for id in g.not_yet_rejoined_dynamic_members() {
            self.drop_member(g, &id, ErrorCode::UnknownMemberId);
        }
        if g.state == ClassicGroupState::Dead {
            return;
        }
        if !g.maybe_elect_new_joined_leader() && !g.members.is_empty() {
            // Only static members that did not rejoin are left: wait for them, or for
            // their sessions to end. (At least 1 ms: a client's rebalance timeout of 0
            // must not make the timer fire again at once, forever.)
            let deadline = self.now_ms + i64::from(g.rebalance_timeout_ms().max(1));
            self.timer.schedule(join_key(&g.group_id), deadline);
            return;
        }
        g.init_next_generation(self.now_ms);
        if g.state == ClassicGroupState::Empty {
            // Kafka only logs a failure here: the group has no member to tell.
            let record = group_metadata_record(g, None);
            let _ = self.write(vec![record], false);
            return;
        }
        let leader_members = g.members_for_leader();
        let ids: Vec<String> = g.members.keys().cloned().collect();
        for id in &ids {
            let is_leader = g.is_leader(id);
            let mut response = current_generation_response(g, id, false);
            if is_leader {
                response.members = leader_members.clone();
            }
            let Some(m) = g.members.get_mut(id) else {
                continue;
            };
            let reply = m.awaiting_join.take();
            m.is_new = false;
            let session = i64::from(m.session_timeout_ms);
            if let Some(reply) = reply {
                self.reply_join(reply, response);
            }
            self.schedule_heartbeat(&g.group_id, id, session);
            g.pending_sync_members.insert(id.clone());
        }
        let deadline = self.now_ms + i64::from(g.rebalance_timeout_ms());
        self.timer.schedule(sync_key(&g.group_id), deadline);
    }

    /// Clears every assignment and answers the members awaiting theirs with `code`.
    pub(super) fn reset_and_propagate_assignment_with_error(
        &mut self,
        g: &mut ClassicGroup,
        code: ErrorCode,
    ) {
        for m in g.members.values_mut() {
            m.assignment = Bytes::new();
        }
        self.propagate_assignment(g, code);
    }

    /// Sets every member's assignment (empty when the leader gave none) and answers the
    /// members awaiting it.
    pub(super) fn set_and_propagate_assignment(
        &mut self,
        g: &mut ClassicGroup,
        assignment: &HashMap<String, Bytes>,
    ) {
        for m in g.members.values_mut() {
            m.assignment = assignment.get(&m.member_id).cloned().unwrap_or_default();
        }
        self.propagate_assignment(g, ErrorCode::None);
    }

    fn propagate_assignment(&mut self, g: &mut ClassicGroup, code: ErrorCode) {
        let (protocol_type, protocol_name) = if code == ErrorCode::None {
            (g.protocol_type.clone(), g.protocol_name.clone())
        } else {
            (None, None)
        };
        let group_id = g.group_id.clone();
        for m in g.members.values_mut() {
            let Some(reply) = m.awaiting_sync.take() else {
                continue;
            };
            let response = SyncGroupResponse {
                error_code: code.code(),
                protocol_type: protocol_type.clone(),
                protocol_name: protocol_name.clone(),
                assignment: m.assignment.clone(),
                ..Default::default()
            };
            let session = i64::from(m.session_timeout_ms);
            self.reply_sync(reply, response);
            // Its session counts again from its answer.
            self.schedule_heartbeat(&group_id, &m.member_id, session);
        }
    }

    /// Removes a member (or a pending one) with its timers; a JoinGroup or SyncGroup it
    /// had parked is answered with `code`.
    pub(super) fn drop_member(&mut self, g: &mut ClassicGroup, member_id: &str, code: ErrorCode) {
        self.cancel_heartbeat(&g.group_id, member_id);
        self.timer
            .cancel(&pending_member_key(&g.group_id, member_id));
        let Some(mut m) = g.remove(member_id) else {
            return;
        };
        if let Some(reply) = m.awaiting_join.take() {
            // UNKNOWN_MEMBER_ID makes a client still there join again.
            self.reply_join(reply, join_error("", code));
        }
        if let Some(reply) = m.awaiting_sync.take() {
            self.reply_sync(reply, sync_error(code));
        }
    }

    /// A member left or failed: the group rebalances, or the join phase under way may now
    /// be complete (Kafka's `removeMemberAndUpdateClassicGroup`).
    pub(super) fn remove_member_and_update(&mut self, g: &mut ClassicGroup, member_id: &str) {
        self.drop_member(g, member_id, ErrorCode::UnknownMemberId);
        match g.state {
            ClassicGroupState::Stable | ClassicGroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance_or_complete_join(g);
            }
            ClassicGroupState::PreparingRebalance if g.has_all_members_joined() => {
                self.complete_join(g);
            }
            _ => {}
        }
    }

    /// The partition is given up (Kafka's `onUnloaded`): every classic group is Dead and
    /// every parked JoinGroup and SyncGroup is answered NOT_COORDINATOR, so that clients
    /// look for the new coordinator. The runtime calls it before dropping a shard that
    /// served requests.
    pub fn classic_on_unloaded(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
        let mut ids: Vec<String> = self
            .groups
            .iter()
            .filter(|(_, g)| matches!(g, crate::group::shard::Group::Classic(_)))
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        for id in ids {
            let Some(mut g) = self.take_classic(&id) else {
                continue;
            };
            g.transition_to(ClassicGroupState::Dead, self.now_ms);
            for m in g.members.values_mut() {
                if let Some(reply) = m.awaiting_join.take() {
                    self.reply_join(reply, join_error(&m.member_id, ErrorCode::NotCoordinator));
                }
                if let Some(reply) = m.awaiting_sync.take() {
                    self.reply_sync(reply, sync_error(ErrorCode::NotCoordinator));
                }
            }
            self.put_classic(g);
        }
    }

    /// A classic timer fired.
    pub(crate) fn classic_on_timer(&mut self, key: TimerKey) {
        let group_id = match &key {
            TimerKey::ClassicHeartbeat { group, .. }
            | TimerKey::ClassicPendingMember { group, .. }
            | TimerKey::ClassicJoin { group }
            | TimerKey::ClassicSync { group } => group.clone(),
            _ => return,
        };
        // A group deleted, or taken over by the other protocol, has nothing to expire.
        let Some(mut g) = self.take_classic(&group_id) else {
            return;
        };
        if g.state != ClassicGroupState::Dead {
            match key {
                TimerKey::ClassicHeartbeat { member, .. } => {
                    self.expire_member_heartbeat(&mut g, &member)
                }
                TimerKey::ClassicPendingMember { member, .. } => {
                    self.expire_pending_member(&mut g, &member)
                }
                // A join phase ended (or its initial delay did).
                TimerKey::ClassicJoin { .. }
                    if g.state == ClassicGroupState::PreparingRebalance =>
                {
                    match g.initial_join {
                        Some((delay, remaining)) => {
                            self.try_complete_initial_rebalance(&mut g, delay, remaining)
                        }
                        None => self.complete_join(&mut g),
                    }
                }
                TimerKey::ClassicSync { .. } => self.expire_pending_sync(&mut g),
                _ => {}
            }
        }
        self.put_classic(g);
    }

    /// A member's session ran out (Kafka's `expireClassicGroupMemberHeartbeat`); one
    /// waiting in a rebalance keeps it, unless it is new.
    fn expire_member_heartbeat(&mut self, g: &mut ClassicGroup, member_id: &str) {
        if g.is_pending_member(member_id) {
            self.expire_pending_member(g, member_id);
            return;
        }
        let Some(member) = g.member(member_id) else {
            return;
        };
        if !member.has_satisfied_heartbeat() {
            self.remove_member_and_update(g, member_id);
        }
    }

    /// A member told MEMBER_ID_REQUIRED did not come back in time.
    fn expire_pending_member(&mut self, g: &mut ClassicGroup, member_id: &str) {
        if g.is_pending_member(member_id) {
            g.remove(member_id);
            if g.state == ClassicGroupState::PreparingRebalance && g.has_all_members_joined() {
                self.complete_join(g);
            }
        }
    }

    /// The sync phase ran out: members that did not send SyncGroup are removed and the
    /// group rebalances (Kafka's `expirePendingSync`).
    fn expire_pending_sync(&mut self, g: &mut ClassicGroup) {
        if matches!(
            g.state,
            ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable
        ) && !g.pending_sync_members.is_empty()
        {
            let late: Vec<String> = g.pending_sync_members.iter().cloned().collect();
            for id in late {
                self.drop_member(g, &id, ErrorCode::UnknownMemberId);
            }
            self.prepare_rebalance(g);
        }
    }
}
