//! Classic groups (Kafka's `ClassicGroup` and the classic half of `GroupMetadataManager`):
//! JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the rebalance state machine
//! Empty → PreparingRebalance → CompletingRebalance → Stable.
//!
//! A classic group changes its state directly and writes GroupMetadata records that are not
//! replayed (as Kafka's); they are replayed only when the partition loads. A JoinGroup or
//! SyncGroup may be answered later than the call that brought it (when the join phase
//! completes, when the leader's assignment arrives, on a timeout); the parked request's
//! `ReplyId` is kept on the member.
//!
//! The rooms:
//! - `group`: `ClassicGroup` and the rules on its state alone;
//! - `member`: `ClassicGroupMember`;
//! - `join`: JoinGroup (new, pending, existing and static members);
//! - `rebalance`: starting and completing a join phase, assignments, and the timers;
//! - `sync`: SyncGroup;
//! - `heartbeat_leave`: Heartbeat and LeaveGroup;
//! - `records`: GroupMetadata records, their replay and loading, consumer subscriptions.

use kraftd_protocol::messages::{JoinGroupResponse, SyncGroupResponse};
use kraftd_protocol::ErrorCode;

use crate::group::shard::{Group, GroupCoordinatorShard, ShardResponse};
use crate::group::timer::TimerKey;

pub mod group;
mod heartbeat_leave;
mod join;
pub mod member;
mod rebalance;
mod records;
mod sync;
#[cfg(test)]
mod tests;

pub(crate) use group::PendingReply;
pub use group::{ClassicGroup, ClassicGroupMember, ClassicGroupState, CONSUMER_PROTOCOL_TYPE};

/// How long a new member's JoinGroup may wait for the join phase to complete before the
/// member is dropped (Kafka's `CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS`).
pub const NEW_MEMBER_JOIN_TIMEOUT_MS: i64 = 5 * 60 * 1000;

/// The GroupMetadataValue version Kafka 4.4 writes.
pub const GROUP_METADATA_VALUE_VERSION: i16 = 3;

/// JoinGroup v4+ gets MEMBER_ID_REQUIRED for an empty member id (KIP-394).
const JOIN_REQUIRES_KNOWN_MEMBER_ID_VERSION: i16 = 4;
/// JoinGroup v9+ may tell a static leader to skip the assignment (KIP-814).
const JOIN_SKIP_ASSIGNMENT_VERSION: i16 = 9;
/// LeaveGroup v3+ names members in a batch (KIP-345).
const LEAVE_BATCH_VERSION: i16 = 3;

/// The error a client gets when its group's record could not be written (Kafka's
/// `appendGroupMetadataErrorToResponseError`).
fn append_error_to_response(code: ErrorCode) -> ErrorCode {
    match code {
        ErrorCode::UnknownTopicOrPartition
        | ErrorCode::NotEnoughReplicas
        | ErrorCode::RequestTimedOut => ErrorCode::CoordinatorNotAvailable,
        ErrorCode::NotLeaderOrFollower | ErrorCode::KafkaStorageError => ErrorCode::NotCoordinator,
        ErrorCode::MessageTooLarge
        | ErrorCode::RecordListTooLarge
        | ErrorCode::InvalidFetchSize => ErrorCode::UnknownServerError,
        other => other,
    }
}

/// A JoinGroup error answer.
fn join_error(member_id: &str, code: ErrorCode) -> JoinGroupResponse {
    JoinGroupResponse {
        error_code: code.code(),
        member_id: member_id.to_string(),
        ..Default::default()
    }
}

/// A SyncGroup error answer.
fn sync_error(code: ErrorCode) -> SyncGroupResponse {
    SyncGroupResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

/// What a JoinGroup response may hold at `version` (Kafka's `JoinGroupResponse`
/// constructor): no null protocol name before v7, an empty one is null from v7,
/// `skip_assignment` only from v9. (Error answers made at the broker's edge, where no shard
/// runs, get the protocol name fitted when encoded: `error_response::fit_to_version`.)
fn join_response_for_version(mut r: JoinGroupResponse, version: i16) -> JoinGroupResponse {
    if version < 7 {
        if r.protocol_name.is_none() {
            r.protocol_name = Some(String::new());
        }
    } else if r.protocol_name.as_deref() == Some("") {
        r.protocol_name = None;
    }
    if version < JOIN_SKIP_ASSIGNMENT_VERSION {
        r.skip_assignment = false;
    }
    r
}

fn heartbeat_key(group: &str, member: &str) -> TimerKey {
    TimerKey::ClassicHeartbeat {
        group: group.to_string(),
        member: member.to_string(),
    }
}

fn pending_member_key(group: &str, member: &str) -> TimerKey {
    TimerKey::ClassicPendingMember {
        group: group.to_string(),
        member: member.to_string(),
    }
}

fn join_key(group: &str) -> TimerKey {
    TimerKey::ClassicJoin {
        group: group.to_string(),
    }
}

fn sync_key(group: &str) -> TimerKey {
    TimerKey::ClassicSync {
        group: group.to_string(),
    }
}

impl GroupCoordinatorShard {
    /// Answers a parked (or current) JoinGroup.
    fn reply_join(&mut self, reply: PendingReply, response: JoinGroupResponse) {
        let response = join_response_for_version(response, reply.api_version);
        self.reply(reply.id, ShardResponse::JoinGroup(response));
    }

    fn reply_sync(&mut self, reply: PendingReply, response: SyncGroupResponse) {
        self.reply(reply.id, ShardResponse::SyncGroup(response));
    }

    /// Takes a classic group out of the map to work on it beside the shard; it goes back
    /// with [`GroupCoordinatorShard::put_classic`]. A group of the other protocol stays.
    fn take_classic(&mut self, group_id: &str) -> Option<ClassicGroup> {
        match self.groups.remove(group_id) {
            Some(Group::Classic(g)) => Some(g),
            Some(other) => {
                self.groups.insert(group_id.to_string(), other);
                None
            }
            None => None,
        }
    }

    fn put_classic(&mut self, group: ClassicGroup) {
        self.groups
            .insert(group.group_id.clone(), Group::Classic(group));
    }

    /// A new member id (Kafka's `clientId-UUID`, or `groupInstanceId-UUID` for a static
    /// member): the UUID's bits are the time, this partition and a counter of the shard,
    /// so ids differ across members, shards and loads without any randomness; an id the
    /// group already knows is skipped.
    fn generate_member_id(&mut self, group: &ClassicGroup, prefix: &str) -> String {
        loop {
            let seq = self.classic_member_seq;
            self.classic_member_seq = self.classic_member_seq.wrapping_add(1);
            let time = self.now_ms as u64;
            let partition = self.partition as u32;
            let a = (time >> 16) as u32;
            let b = (time & 0xffff) as u16;
            // Version nibble 8 (a custom UUID) and the RFC 4122 variant.
            let c = 0x8000 | ((seq >> 46) & 0x0fff) as u16;
            let d = 0x8000 | ((seq >> 32) & 0x3fff) as u16;
            let e = (u64::from(partition) & 0xffff) << 32 | (seq & 0xffff_ffff);
            let id = format!("{prefix}-{a:08x}-{b:04x}-{c:04x}-{d:04x}-{e:012x}");
            if !group.has_member(&id) && !group.is_pending_member(&id) {
                return id;
            }
        }
    }

    /// An offset commit by a member of a classic group counts as a heartbeat while the group
    /// is Stable or PreparingRebalance (Kafka's `commitOffset` → `rescheduleClassicGroupMemberHeartbeat`).
    pub(crate) fn classic_commit_heartbeat(&mut self, group_id: &str, member_id: &str) {
        let Some(Group::Classic(g)) = self.groups.get(group_id) else {
            return;
        };
        if !matches!(
            g.state(),
            ClassicGroupState::Stable | ClassicGroupState::PreparingRebalance
        ) {
            return;
        }
        let Some(timeout) = g
            .member(member_id)
            .map(|m| i64::from(m.session_timeout_ms()))
        else {
            return;
        };
        self.schedule_heartbeat(group_id, member_id, timeout);
    }

    /// Restarts a member's session: it must heartbeat (or rejoin) within `timeout_ms`.
    fn schedule_heartbeat(&mut self, group: &str, member: &str, timeout_ms: i64) {
        self.timer
            .schedule(heartbeat_key(group, member), self.now_ms + timeout_ms);
    }

    fn cancel_heartbeat(&mut self, group: &str, member: &str) {
        self.timer.cancel(&heartbeat_key(group, member));
    }
}
