//! `ClassicGroupMember` (Kafka's class of that name): one member of a classic group, with
//! the JoinGroup and SyncGroup it may have parked.

use crate::context::ReplyId;
use std::collections::BTreeSet;

use bytes::Bytes;
use kraftd_protocol::messages::describe_groups_response::DescribedGroupMember;
use kraftd_protocol::messages::join_group_request::JoinGroupRequestProtocol;

/// A request the shard has not answered yet (a parked JoinGroup or SyncGroup).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PendingReply {
    pub id: ReplyId,
    pub api_version: i16,
}

/// One member of a classic group (Kafka's `ClassicGroupMember`).
#[derive(Debug, Clone)]
pub struct ClassicGroupMember {
    pub(crate) member_id: String,
    pub(crate) group_instance_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) rebalance_timeout_ms: i32,
    pub(crate) session_timeout_ms: i32,
    pub(crate) protocol_type: String,
    /// (name, metadata) by preference, each name once.
    pub(crate) protocols: Vec<(String, Bytes)>,
    pub(crate) assignment: Bytes,
    pub(crate) awaiting_join: Option<PendingReply>,
    pub(crate) awaiting_sync: Option<PendingReply>,
    /// Joined but not yet through a join phase: its session is not kept by waiting.
    pub(crate) is_new: bool,
}

impl ClassicGroupMember {
    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    pub fn group_instance_id(&self) -> Option<&str> {
        self.group_instance_id.as_deref()
    }

    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    pub fn client_host(&self) -> &str {
        &self.client_host
    }

    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.rebalance_timeout_ms
    }

    pub fn session_timeout_ms(&self) -> i32 {
        self.session_timeout_ms
    }

    pub fn assignment(&self) -> &Bytes {
        &self.assignment
    }

    /// The protocol names the member supports, by preference.
    pub fn protocol_names(&self) -> impl Iterator<Item = &str> {
        self.protocols.iter().map(|(n, _)| n.as_str())
    }

    /// The member's metadata for `protocol` (empty when it does not support it).
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(n, _)| n == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }

    pub fn is_awaiting_join(&self) -> bool {
        self.awaiting_join.is_some()
    }

    pub fn is_awaiting_sync(&self) -> bool {
        self.awaiting_sync.is_some()
    }

    /// A member waiting in a rebalance keeps its session, unless it is new (Kafka's
    /// `hasSatisfiedHeartbeat`).
    pub(crate) fn has_satisfied_heartbeat(&self) -> bool {
        !self.is_new && (self.is_awaiting_join() || self.is_awaiting_sync())
    }

    /// Whether `protocols` are the member's (same names, metadata and order).
    pub(crate) fn matches(&self, protocols: &[(String, Bytes)]) -> bool {
        self.protocols == protocols
    }

    /// The member's most preferred protocol among `candidates`.
    pub(crate) fn vote(&self, candidates: &BTreeSet<&str>) -> Option<&str> {
        self.protocol_names().find(|n| candidates.contains(n))
    }

    pub(crate) fn describe(&self, protocol: Option<&str>) -> DescribedGroupMember {
        DescribedGroupMember {
            member_id: self.member_id.clone(),
            group_instance_id: self.group_instance_id.clone(),
            client_id: self.client_id.clone(),
            client_host: self.client_host.clone(),
            member_metadata: protocol.map(|p| self.metadata(p)).unwrap_or_default(),
            member_assignment: self.assignment.clone(),
            ..Default::default()
        }
    }
}

/// A JoinGroup's protocols as a member keeps them: each name once, first wins.
pub(crate) fn plain_protocols(protocols: &[JoinGroupRequestProtocol]) -> Vec<(String, Bytes)> {
    let mut out: Vec<(String, Bytes)> = Vec::with_capacity(protocols.len());
    for p in protocols {
        if !out.iter().any(|(n, _)| *n == p.name) {
            out.push((p.name.clone(), p.metadata.clone()));
        }
    }
    out
}
