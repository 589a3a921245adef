//! SyncGroup (Kafka's `classicGroupSync`): members of a new generation wait for the
//! leader's assignment, which is written in a GroupMetadata record before anyone gets it.

use std::collections::HashMap;

use bytes::Bytes;
use kraftd_protocol::messages::{SyncGroupRequest, SyncGroupResponse};
use kraftd_protocol::ErrorCode;

use super::group::{ClassicGroup, ClassicGroupState};
use super::records::group_metadata_record;
use super::{append_error_to_response, sync_error, sync_key, PendingReply};
use crate::context::{ReplyId, RequestContext};
use crate::group::shard::GroupCoordinatorShard;

/// Whether a request's protocol type or name contradicts the group's (both named and
/// different).
fn inconsistent(requested: Option<&str>, group: Option<&str>) -> bool {
    matches!((requested, group), (Some(r), Some(g)) if r != g)
}

impl GroupCoordinatorShard {
    /// SyncGroup v0–5. In CompletingRebalance the answer waits for the leader's
    /// assignment; in Stable it is the member's current assignment.
    pub(crate) fn classic_sync_group(
        &mut self,
        ctx: &RequestContext,
        reply: ReplyId,
        r: SyncGroupRequest,
    ) {
        let reply = PendingReply {
            id: reply,
            api_version: ctx.api_version,
        };
        if r.group_id.is_empty() {
            self.reply_sync(reply, sync_error(ErrorCode::InvalidGroupId));
            return;
        }
        // An unknown group, or a KIP-848 one (whose classic members are not served).
        let Some(mut g) = self.take_classic(&r.group_id) else {
            self.reply_sync(reply, sync_error(ErrorCode::UnknownMemberId));
            return;
        };
        self.sync_classic_group(&mut g, reply, r);
        self.put_classic(g);
    }

    fn sync_classic_group(
        &mut self,
        g: &mut ClassicGroup,
        reply: PendingReply,
        r: SyncGroupRequest,
    ) {
        if g.is_empty() {
            self.reply_sync(reply, sync_error(ErrorCode::UnknownMemberId));
            return;
        }
        if let Err(code) = validate_sync(g, &r) {
            self.reply_sync(reply, sync_error(code));
            return;
        }
        let member_id = r.member_id.clone();
        match g.state {
            ClassicGroupState::PreparingRebalance => {
                self.reply_sync(reply, sync_error(ErrorCode::RebalanceInProgress));
            }
            ClassicGroupState::CompletingRebalance => {
                let Some(m) = g.members.get_mut(&member_id) else {
                    self.reply_sync(reply, sync_error(ErrorCode::UnknownMemberId));
                    return;
                };
                if let Some(old) = m.awaiting_sync.replace(reply) {
                    if old != reply {
                        // A second SyncGroup from the member replaces the first.
                        self.reply_sync(old, sync_error(ErrorCode::RebalanceInProgress));
                    }
                }
                self.remove_pending_sync_member(g, &member_id);
                if g.is_leader(&member_id) {
                    self.leader_assignment(g, r);
                }
            }
            ClassicGroupState::Stable => {
                self.remove_pending_sync_member(g, &member_id);
                let assignment = g
                    .member(&member_id)
                    .map(|m| m.assignment.clone())
                    .unwrap_or_default();
                let response = SyncGroupResponse {
                    protocol_type: g.protocol_type.clone(),
                    protocol_name: g.protocol_name.clone(),
                    assignment,
                    ..Default::default()
                };
                self.reply_sync(reply, response);
            }
            ClassicGroupState::Empty | ClassicGroupState::Dead => {
                self.reply_sync(reply, sync_error(ErrorCode::CoordinatorNotAvailable));
            }
        }
    }

    /// The leader's SyncGroup: the assignment (empty for members it left out) is written,
    /// then handed to every waiting member and the group is Stable. When the record cannot
    /// be written (`max_batch_bytes`), the waiting members get the error and the group
    /// rebalances (Kafka's failure path).
    fn leader_assignment(&mut self, g: &mut ClassicGroup, r: SyncGroupRequest) {
        let mut assignment: HashMap<String, Bytes> = r
            .assignments
            .into_iter()
            .map(|a| (a.member_id, a.assignment))
            .collect();
        for id in g.members.keys() {
            assignment.entry(id.clone()).or_default();
        }
        let record = group_metadata_record(g, Some(&assignment));
        match self.write(vec![record], false) {
            Ok(()) => {
                self.set_and_propagate_assignment(g, &assignment);
                g.transition_to(ClassicGroupState::Stable, self.now_ms);
            }
            Err(code) => {
                self.reset_and_propagate_assignment_with_error(g, append_error_to_response(code));
                self.maybe_prepare_rebalance_or_complete_join(g);
            }
        }
    }

    /// The member sent its SyncGroup; the sync timer stops once everyone has.
    fn remove_pending_sync_member(&mut self, g: &mut ClassicGroup, member_id: &str) {
        g.pending_sync_members.remove(member_id);
        let done = match g.state {
            ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => {
                g.pending_sync_members.is_empty()
            }
            _ => true,
        };
        if done {
            self.timer.cancel(&sync_key(&g.group_id));
        }
    }
}

/// Kafka's `validateSyncGroup`.
fn validate_sync(g: &ClassicGroup, r: &SyncGroupRequest) -> Result<(), ErrorCode> {
    if g.state == ClassicGroupState::Dead {
        return Err(ErrorCode::CoordinatorNotAvailable);
    }
    g.validate_member(&r.member_id, r.group_instance_id.as_deref())?;
    if r.generation_id != g.generation_id {
        return Err(ErrorCode::IllegalGeneration);
    }
    if inconsistent(r.protocol_type.as_deref(), g.protocol_type.as_deref())
        || inconsistent(r.protocol_name.as_deref(), g.protocol_name.as_deref())
    {
        return Err(ErrorCode::InconsistentGroupProtocol);
    }
    Ok(())
}
