//! Heartbeat and LeaveGroup (Kafka's `classicGroupHeartbeat` and `classicGroupLeave`).

use kraftd_protocol::messages::leave_group_request::MemberIdentity;
use kraftd_protocol::messages::leave_group_response::MemberResponse;
use kraftd_protocol::messages::{
    HeartbeatRequest, HeartbeatResponse, LeaveGroupRequest, LeaveGroupResponse,
};
use kraftd_protocol::ErrorCode;

use super::group::ClassicGroupState;
use super::{pending_member_key, LEAVE_BATCH_VERSION};
use crate::context::RequestContext;
use crate::group::shard::{Group, GroupCoordinatorShard};

impl GroupCoordinatorShard {
    /// Heartbeat v0–4: keeps the member's session; REBALANCE_IN_PROGRESS tells it to
    /// rejoin.
    pub(crate) fn classic_heartbeat(
        &mut self,
        _ctx: &RequestContext,
        r: HeartbeatRequest,
    ) -> HeartbeatResponse {
        HeartbeatResponse {
            error_code: self.heartbeat(&r).code(),
            ..Default::default()
        }
    }

    fn heartbeat(&mut self, r: &HeartbeatRequest) -> ErrorCode {
        if r.group_id.is_empty() {
            return ErrorCode::InvalidGroupId;
        }
        // An unknown group, or a KIP-848 one (whose classic members are not served).
        let Some(Group::Classic(g)) = self.groups.get(&r.group_id) else {
            return ErrorCode::UnknownMemberId;
        };
        if g.state == ClassicGroupState::Dead {
            return ErrorCode::CoordinatorNotAvailable;
        }
        if let Err(code) = g.validate_member(&r.member_id, r.group_instance_id.as_deref()) {
            return code;
        }
        if r.generation_id != g.generation_id {
            return ErrorCode::IllegalGeneration;
        }
        let session = g
            .member(&r.member_id)
            .map_or(0, |m| i64::from(m.session_timeout_ms));
        let code = match g.state {
            ClassicGroupState::Empty => return ErrorCode::UnknownMemberId,
            ClassicGroupState::Dead => return ErrorCode::CoordinatorNotAvailable,
            ClassicGroupState::PreparingRebalance => ErrorCode::RebalanceInProgress,
            // A member may heartbeat between its JoinGroup answer and its assignment.
            ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => ErrorCode::None,
        };
        self.schedule_heartbeat(&r.group_id, &r.member_id, session);
        code
    }

    /// LeaveGroup v0–5: v0–2 name one member; v3+ a batch of members by member id or
    /// group instance id, each with its own answer.
    pub(crate) fn classic_leave_group(
        &mut self,
        ctx: &RequestContext,
        r: LeaveGroupRequest,
    ) -> LeaveGroupResponse {
        let batched = ctx.api_version >= LEAVE_BATCH_VERSION;
        let identities = if batched {
            r.members
        } else {
            vec![MemberIdentity {
                member_id: r.member_id,
                ..Default::default()
            }]
        };
        match self.leave(&r.group_id, identities) {
            Err(code) => LeaveGroupResponse {
                error_code: code.code(),
                ..Default::default()
            },
            Ok(members) if batched => LeaveGroupResponse {
                members,
                ..Default::default()
            },
            // Before v3 the member's error is the response's.
            Ok(members) => LeaveGroupResponse {
                error_code: members
                    .iter()
                    .map(|m| m.error_code)
                    .find(|c| *c != 0)
                    .unwrap_or(0),
                ..Default::default()
            },
        }
    }

    fn leave(
        &mut self,
        group_id: &str,
        identities: Vec<MemberIdentity>,
    ) -> Result<Vec<MemberResponse>, ErrorCode> {
        if group_id.is_empty() {
            return Err(ErrorCode::InvalidGroupId);
        }
        let Some(mut g) = self.take_classic(group_id) else {
            return Err(ErrorCode::UnknownMemberId);
        };
        if g.state == ClassicGroupState::Dead {
            self.put_classic(g);
            return Err(ErrorCode::CoordinatorNotAvailable);
        }
        let mut responses = Vec::with_capacity(identities.len());
        let mut left = false;
        for id in identities {
            let code = if id.member_id.is_empty() {
                // An admin removing a static member by its instance id.
                let member = id
                    .group_instance_id
                    .as_deref()
                    .and_then(|i| g.static_member_id(i))
                    .map(str::to_string);
                match member {
                    Some(member) => {
                        self.drop_member(&mut g, &member, ErrorCode::UnknownMemberId);
                        ErrorCode::None
                    }
                    None => ErrorCode::UnknownMemberId,
                }
            } else if g.is_pending_member(&id.member_id) {
                g.remove(&id.member_id);
                self.timer
                    .cancel(&pending_member_key(group_id, &id.member_id));
                ErrorCode::None
            } else {
                match g.validate_member(&id.member_id, id.group_instance_id.as_deref()) {
                    Ok(()) => {
                        self.drop_member(&mut g, &id.member_id, ErrorCode::UnknownMemberId);
                        ErrorCode::None
                    }
                    Err(code) => code,
                }
            };
            left |= code == ErrorCode::None;
            responses.push(MemberResponse {
                member_id: id.member_id,
                group_instance_id: id.group_instance_id,
                error_code: code.code(),
                ..Default::default()
            });
        }
        if left {
            match g.state {
                ClassicGroupState::Stable | ClassicGroupState::CompletingRebalance => {
                    self.maybe_prepare_rebalance_or_complete_join(&mut g);
                }
                ClassicGroupState::PreparingRebalance => self.maybe_complete_join_phase(&mut g),
                _ => {}
            }
        }
        self.put_classic(g);
        Ok(responses)
    }
}
