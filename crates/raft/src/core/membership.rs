//! KIP-853 dynamic membership in the core: keeping the voter-set history
//! ([`VoterHistory`]) in step with the log (loaded at start from the latest snapshot and the
//! log's control batches, applied on append, undone on truncation, reset by a snapshot),
//! acting on a change of the set in effect (this node becomes or stops being a voter; a
//! leader recounts its majority), and the leader's voter changes: AddRaftVoter,
//! RemoveRaftVoter and UpdateRaftVoter with Kafka's preconditions and errors
//! (`AddVoterHandler`, `RemoveVoterHandler`, `UpdateVoterHandler`), answered through
//! [`Output::VoterChangeDone`] when the VotersRecord commits; a leader that removed itself
//! resigns once the change commits. And the `kraft.version` 0 → 1 upgrade (Kafka 4.1+'s
//! `LeaderState.maybeAppendUpgradedKRaftVersion`): KRaftVersionRecord plus a VotersRecord of
//! the static voters with the directory ids their fetches carried.
//!
//! Deviation: Kafka's leader asks a new voter for its supported `kraft.version` range with an
//! ApiVersions request before appending; the core takes the range the request (or, for
//! AddRaftVoter, which carries none, this code's own `0..=1`) gives.

use std::collections::BTreeSet;

use bytes::Bytes;
use kraftd_log::SnapshotId;
use kraftd_protocol::messages::KRaftVersionRecord;
use kraftd_protocol::records::{ControlRecord, RecordBatchBuilder};
use kraftd_protocol::{ErrorCode, Uuid};
use tracing::{info, warn};

use super::log::RaftLog;
use super::role::leader::PendingVoterChange;
use super::role::Role;
use super::voter_history::VoterHistory;
use super::voter_set::{ReplicaKey, VoterNode, VoterSet, MAX_KRAFT_VERSION, VOTERS_RECORD_VERSION};
use super::{Output, RaftCore};

/// The bytes the startup scan reads at a time.
const SCAN_CHUNK_BYTES: usize = 1024 * 1024;

/// Why a voter change or a `kraft.version` upgrade was refused: Kafka's error code and
/// message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct VoterChangeError {
    pub code: ErrorCode,
    pub message: String,
}

impl VoterChangeError {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        VoterChangeError {
            code,
            message: message.into(),
        }
    }
}

/// Loads the history from the latest snapshot (its header batch's KRaftVersionRecord and
/// VotersRecord, at its last contained offset; -1 for the bootstrap checkpoint) and the
/// control batches of the log after it.
pub(super) fn load_history<L: RaftLog>(log: &L, history: &mut VoterHistory) {
    let mut from = log.start_offset();
    if let Some(id) = log.latest_snapshot() {
        if let Some(bytes) = read_header_batch(log, id) {
            match crate::snapshot::SnapshotReader::new(bytes) {
                Ok(r) => {
                    let voters = r.voters().and_then(VoterSet::from_record);
                    let kraft = r.kraft_version().map(|v| v.k_raft_version);
                    if kraft.is_some() || voters.is_some() {
                        history.load_snapshot(id.end_offset - 1, kraft, voters);
                    }
                }
                Err(e) => warn!(?id, error = %e, "the latest snapshot's header does not read"),
            }
        }
        from = from.max(id.end_offset);
    }
    while from < log.end_offset() {
        let bytes = log.read(from, SCAN_CHUNK_BYTES);
        let mut next = from;
        for batch in kraftd_protocol::records::Batches::new(bytes) {
            let Ok(batch) = batch else { break };
            history.apply_batch(&batch);
            next = batch.next_offset();
        }
        if next <= from {
            break;
        }
        from = next;
    }
}

/// The first batch of snapshot `id` (its header batch, which holds the KRaftVersionRecord
/// and VotersRecord), read alone: a metadata snapshot of a million partitions is hundreds of
/// MiB, and the voter set is all the history needs of it. The batch's length is in its first
/// 12 bytes (base offset, batch length).
fn read_header_batch<L: RaftLog>(log: &L, id: SnapshotId) -> Option<Bytes> {
    const LENGTH_END: usize = 12;
    let (prefix, _) = log.read_snapshot(id, 0, LENGTH_END)?;
    if prefix.len() < LENGTH_END {
        return Some(prefix);
    }
    let length = i32::from_be_bytes(prefix[8..LENGTH_END].try_into().ok()?);
    let total = LENGTH_END.saturating_add(usize::try_from(length).unwrap_or(0));
    log.read_snapshot(id, 0, total).map(|(bytes, _)| bytes)
}

impl<L: RaftLog> RaftCore<L> {
    // ----- accessors -----

    /// The voter set in effect (the latest in the log, committed or not; else the static
    /// one).
    pub fn voter_set(&self) -> &VoterSet {
        self.voters.latest()
    }

    /// The voter-set history over the log.
    pub fn voter_history(&self) -> &VoterHistory {
        &self.voters
    }

    /// The `kraft.version` in effect.
    pub fn kraft_version(&self) -> i16 {
        self.voters.kraft_version()
    }

    /// This node's replica key.
    pub fn local_key(&self) -> ReplicaKey {
        ReplicaKey::new(self.node_id, self.config.directory_id)
    }

    /// This node as a voter of a set: its key, its own listeners, the versions it supports.
    pub fn local_voter_node(&self) -> VoterNode {
        VoterNode::new(self.local_key(), self.config.local_listeners.clone())
    }

    /// Whether some voter of the set in effect has node id `id`.
    pub(super) fn is_voter_id(&self, id: i32) -> bool {
        self.voter_set().contains_id(id)
    }

    /// A dynamic quorum (KIP-853): no static `controller.quorum.voters`, or `kraft.version`
    /// ≥ 1 (the set in the log rules).
    pub(super) fn is_dynamic_quorum(&self) -> bool {
        !self.voters.has_static_voters() || self.kraft_version() >= 1
    }

    /// Whether a voter change is in flight at this leader.
    pub fn voter_change_pending(&self) -> bool {
        self.leader_state()
            .is_some_and(|l| l.pending_voter_change.is_some())
    }

    // ----- keeping the history in step with the log -----

    /// Batches were appended as follower: read their control records.
    pub(super) fn on_appended_as_follower(&mut self, now_ms: u64, records: &Bytes) {
        let before = self.voters.latest_offset();
        let kraft = self.voters.kraft_version();
        self.voters.apply_batches(records);
        if self.voters.latest_offset() != before || self.voters.kraft_version() != kraft {
            self.on_voter_set_changed(now_ms);
        }
    }

    /// The log was truncated to `end_offset`.
    pub(super) fn on_truncated(&mut self, now_ms: u64, end_offset: i64) {
        let before = self.voters.latest_offset();
        self.voters.truncate_new_entries(end_offset);
        if self.voters.latest_offset() != before {
            self.on_voter_set_changed(now_ms);
        }
    }

    /// A snapshot replaced the log: the history restarts from it and the log after it.
    pub(super) fn reload_history(&mut self, now_ms: u64) {
        self.voters.clear();
        load_history(&self.log, &mut self.voters);
        self.on_voter_set_changed(now_ms);
    }

    /// The set in effect may have changed: this node's voter status and, as leader, whom it
    /// counts.
    pub(super) fn on_voter_set_changed(&mut self, now_ms: u64) {
        let set = self.voter_set().clone();
        let local = self.local_key();
        let is_voter = set.is_voter(local);
        let was_voter = self.quorum.is_voter();
        let deadline = if is_voter && set.len() == 1 {
            now_ms
        } else {
            now_ms + self.config.fetch_timeout_ms
        };
        self.quorum.set_is_voter(is_voter, deadline);
        if was_voter != is_voter {
            info!(
                node = self.node_id,
                voters = %set,
                "this node is {} a voter",
                if is_voter { "now" } else { "no longer" }
            );
        }
        let others: BTreeSet<i32> = set.ids().filter(|id| *id != self.node_id).collect();
        let check_quorum_ms = self.config.check_quorum_timeout_ms();
        if let Role::Leader(l) = self.quorum.role_mut() {
            if l.voters.keys().ne(others.iter()) || l.local_is_voter != is_voter {
                // A new majority to hear from: the check-quorum timer starts again (a lone
                // voter's had no one to reset it).
                l.fetched_since_check.clear();
                l.check_quorum_deadline_ms = now_ms + check_quorum_ms;
            }
            l.set_voters(&others, is_voter);
            for id in &others {
                if l.voters[id].last_fetch_ms.is_none() {
                    l.begin_quorum.schedule(*id, now_ms);
                }
            }
        }
    }

    // ----- appending control records as leader -----

    /// Appends one control batch of `records` as the leader, reads it into the history and
    /// flushes it at once. Returns the offset of its last record.
    fn append_control_batch(&mut self, now_ms: u64, records: &[ControlRecord]) -> i64 {
        let Role::Leader(l) = self.quorum.role() else {
            unreachable!("only a leader appends control records")
        };
        let epoch = l.epoch;
        let mut builder = RecordBatchBuilder::new(0).control(true);
        for r in records {
            builder
                .append(
                    now_ms as i64,
                    Some(r.key()),
                    Some(r.encode_value().expect("control records encode")),
                    Vec::new(),
                )
                .expect("offsets of a fresh batch increase");
        }
        let batch = builder.build().expect("a control batch builds");
        let (first, last) = self
            .log
            .append_as_leader(batch, epoch)
            .expect("the leader's own batch appends");
        for (i, r) in records.iter().enumerate() {
            let offset = first + i as i64;
            match r {
                ControlRecord::KRaftVersion(v) => {
                    self.voters.add_kraft_version(offset, v.k_raft_version)
                }
                ControlRecord::KRaftVoters(v) => {
                    if let Some(set) = VoterSet::from_record(v) {
                        self.voters.add_voters(offset, set);
                    }
                }
                _ => {}
            }
        }
        self.flush_deadline_ms = Some(now_ms);
        self.on_voter_set_changed(now_ms);
        self.complete_parked(now_ms, false);
        last
    }

    /// Kafka's `appendStartOfEpochControlRecords` past the LeaderChange: with `kraft.version`
    /// ≥ 1, the voter set again when it came from the bootstrap checkpoint only (offset -1)
    /// or this node's listeners differ from the set's entry for it.
    pub(super) fn start_of_epoch_voter_records(&self) -> Vec<ControlRecord> {
        let kraft = self.kraft_version();
        if kraft < 1 {
            return Vec::new();
        }
        let set = self.voter_set();
        let local = self.local_voter_node();
        let needs_update = !local.listeners.is_empty()
            && set
                .node(self.node_id)
                .is_some_and(|n| n.key == local.key && n.listeners != local.listeners);
        if self.voters.latest_offset() != Some(-1) && !needs_update {
            return Vec::new();
        }
        let updated = if needs_update {
            set.update(local).unwrap_or_else(|| set.clone())
        } else {
            set.clone()
        };
        vec![
            ControlRecord::KRaftVersion(KRaftVersionRecord {
                version: VOTERS_RECORD_VERSION,
                k_raft_version: kraft,
                ..Default::default()
            }),
            ControlRecord::KRaftVoters(updated.to_record()),
        ]
    }

    /// Reads the start-of-epoch records appended with the LeaderChange into the history.
    pub(super) fn apply_leader_batch(
        &mut self,
        now_ms: u64,
        first_offset: i64,
        records: &[ControlRecord],
    ) {
        let mut changed = false;
        for (i, r) in records.iter().enumerate() {
            let offset = first_offset + i as i64;
            match r {
                ControlRecord::KRaftVersion(v) => {
                    self.voters.add_kraft_version(offset, v.k_raft_version)
                }
                ControlRecord::KRaftVoters(v) => {
                    if let Some(set) = VoterSet::from_record(v) {
                        self.voters.add_voters(offset, set);
                        changed = true;
                    }
                }
                _ => {}
            }
        }
        if changed {
            self.on_voter_set_changed(now_ms);
        }
    }

    // ----- the leader's voter changes -----

    /// The checks every voter change starts with (Kafka's handlers, steps 1-3): this node
    /// leads, no change is in flight, the HW is known (the epoch has committed), the cluster
    /// is at `kraft.version` ≥ 1, and the latest voter set is committed.
    fn check_voter_change(&mut self, now_ms: u64, what: &str) -> Result<(), VoterChangeError> {
        self.expire_voter_change(now_ms);
        let hw = self.high_watermark;
        let kraft = self.kraft_version();
        let latest = self.voters.latest_offset();
        let Role::Leader(l) = self.quorum.role() else {
            return Err(VoterChangeError::new(
                ErrorCode::NotLeaderOrFollower,
                format!("node {} is not the leader", self.node_id),
            ));
        };
        if l.pending_voter_change.is_some() {
            return Err(VoterChangeError::new(
                ErrorCode::RequestTimedOut,
                format!("Request timed out waiting for leader to handle previous voter change before {what}"),
            ));
        }
        if !l.high_watermark_known {
            return Err(VoterChangeError::new(
                ErrorCode::RequestTimedOut,
                "Request timed out waiting for leader to establish HWM and fence previous voter changes",
            ));
        }
        if kraft < 1 {
            return Err(VoterChangeError::new(
                ErrorCode::UnsupportedVersion,
                format!(
                    "Cluster doesn't support {what} because the kraft.version feature is {kraft}"
                ),
            ));
        }
        if latest.is_none_or(|o| o >= hw) {
            return Err(VoterChangeError::new(
                ErrorCode::RequestTimedOut,
                format!(
                    "Request timed out waiting for voters to commit the latest voter change at {latest:?} with HWM {hw}"
                ),
            ));
        }
        Ok(())
    }

    /// AddRaftVoter: appends the set with `node` added once it is an observer that has
    /// caught up; [`Output::VoterChangeDone`] with `token` when it commits (or the deadline
    /// `now_ms + timeout_ms` passes).
    pub fn add_voter(
        &mut self,
        now_ms: u64,
        token: u64,
        node: VoterNode,
        timeout_ms: u64,
    ) -> Result<(), VoterChangeError> {
        if !node.key.has_directory_id() {
            return Err(VoterChangeError::new(
                ErrorCode::InvalidRequest,
                "Add voter request didn't include a valid directory id",
            ));
        }
        if !node.listeners.contains_key(&self.config.listener_name) {
            return Err(VoterChangeError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "Add voter request didn't include the endpoint for the default listener {}",
                    self.config.listener_name
                ),
            ));
        }
        self.check_voter_change(now_ms, "adding voter")?;
        let set = self.voter_set().clone();
        if set.contains_id(node.key.id) {
            return Err(VoterChangeError::new(
                ErrorCode::DuplicateVoter,
                format!(
                    "The voter id for {} is already part of the set of voters {set}.",
                    node.key
                ),
            ));
        }
        let caught_up = self
            .leader_state()
            .is_some_and(|l| l.is_observer_caught_up(node.key.id, node.key.directory_id, now_ms));
        if !caught_up {
            return Err(VoterChangeError::new(
                ErrorCode::RequestTimedOut,
                format!(
                    "Aborted add voter operation for {} since it is lagging behind",
                    node.key
                ),
            ));
        }
        if !node.supports(self.kraft_version()) {
            return Err(VoterChangeError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "Aborted add voter operation for {} since the kraft.version range {:?} doesn't support the finalized version {}",
                    node.key,
                    node.supported_kraft_versions,
                    self.kraft_version()
                ),
            ));
        }
        let key = node.key;
        let next = set.add(node).expect("the id is not a voter");
        self.append_voter_change(now_ms, token, next, timeout_ms);
        info!(node = self.node_id, voter = %key, "adding voter");
        Ok(())
    }

    /// RemoveRaftVoter: appends the set without `key`; [`Output::VoterChangeDone`] with
    /// `token` when it commits. A leader that removes itself resigns then.
    pub fn remove_voter(
        &mut self,
        now_ms: u64,
        token: u64,
        key: ReplicaKey,
    ) -> Result<(), VoterChangeError> {
        self.check_voter_change(now_ms, "removing voter")?;
        let set = self.voter_set().clone();
        let Some(next) = set.remove(key) else {
            return Err(VoterChangeError::new(
                ErrorCode::VoterNotFound,
                format!("Cannot remove voter {key} from the set of voters {set}"),
            ));
        };
        let timeout = self.config.request_timeout_ms;
        self.append_voter_change(now_ms, token, next, timeout);
        info!(node = self.node_id, voter = %key, "removing voter");
        Ok(())
    }

    /// UpdateRaftVoter: the voter `node.key` gets its listeners and supported versions. The
    /// errors of Kafka's `UpdateVoterHandler`.
    pub fn update_voter(
        &mut self,
        now_ms: u64,
        token: u64,
        node: VoterNode,
    ) -> Result<(), VoterChangeError> {
        if !node.listeners.contains_key(&self.config.listener_name) {
            return Err(VoterChangeError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "Update voter request didn't include the endpoint for the default listener {}",
                    self.config.listener_name
                ),
            ));
        }
        self.check_voter_change(now_ms, "updating voter")?;
        if !node.supports(self.kraft_version()) {
            return Err(VoterChangeError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "Update voter request for {} doesn't support the finalized kraft.version {}",
                    node.key,
                    self.kraft_version()
                ),
            ));
        }
        let set = self.voter_set().clone();
        let key = node.key;
        let Some(next) = set.update(node) else {
            return Err(VoterChangeError::new(
                ErrorCode::VoterNotFound,
                format!("Update voter request for {key} is not a voter of {set}"),
            ));
        };
        if next == set {
            // Nothing changes: answered at once.
            self.outputs.push_back(Output::VoterChangeDone {
                token,
                error: ErrorCode::None,
                message: None,
            });
            return Ok(());
        }
        let timeout = self.config.request_timeout_ms;
        self.append_voter_change(now_ms, token, next, timeout);
        Ok(())
    }

    fn append_voter_change(&mut self, now_ms: u64, token: u64, next: VoterSet, timeout_ms: u64) {
        let offset =
            self.append_control_batch(now_ms, &[ControlRecord::KRaftVoters(next.to_record())]);
        if let Role::Leader(l) = self.quorum.role_mut() {
            l.pending_voter_change = Some(PendingVoterChange {
                token,
                offset,
                deadline_ms: now_ms + timeout_ms.max(1),
            });
        }
        self.poll(now_ms);
    }

    /// Kafka's `maybeAppendUpgradedKRaftVersion` for 0 → 1: appends KRaftVersionRecord 1 and
    /// a VotersRecord of the static voters, each with the directory id its fetches carried
    /// (this node's own for itself). Returns whether records were appended (false: already
    /// at `version`, or `validate_only`). Refused while any voter's directory id is unknown.
    pub fn upgrade_kraft_version(
        &mut self,
        now_ms: u64,
        version: i16,
        validate_only: bool,
    ) -> Result<bool, VoterChangeError> {
        let current = self.kraft_version();
        let Role::Leader(l) = self.quorum.role() else {
            return Err(VoterChangeError::new(
                ErrorCode::NotLeaderOrFollower,
                format!("node {} is not the leader", self.node_id),
            ));
        };
        if version == current {
            return Ok(false);
        }
        if version < current {
            return Err(VoterChangeError::new(
                ErrorCode::InvalidUpdateVersion,
                format!("Invalid upgrade of kraft.version from version {current} to {version} because the new version is a downgrade"),
            ));
        }
        if version > MAX_KRAFT_VERSION {
            return Err(VoterChangeError::new(
                ErrorCode::InvalidUpdateVersion,
                format!("Invalid upgrade of kraft.version from version {current} to {version}"),
            ));
        }
        if !l.high_watermark_known || l.pending_voter_change.is_some() {
            return Err(VoterChangeError::new(
                ErrorCode::RequestTimedOut,
                "Request timed out waiting for leader to establish HWM and fence previous voter changes",
            ));
        }
        let set = self.voter_set().clone();
        let mut nodes = Vec::new();
        let mut missing = Vec::new();
        for n in set.nodes() {
            let directory_id = if n.key.id == self.node_id {
                self.config.directory_id
            } else {
                l.voters
                    .get(&n.key.id)
                    .map_or(Uuid::ZERO, |p| p.directory_id)
            };
            if directory_id == Uuid::ZERO {
                missing.push(n.key.id);
            }
            let mut listeners = n.listeners.clone();
            if n.key.id == self.node_id && !self.config.local_listeners.is_empty() {
                listeners = self.config.local_listeners.clone();
            }
            nodes.push(VoterNode::new(
                ReplicaKey::new(n.key.id, directory_id),
                listeners,
            ));
        }
        if !missing.is_empty() {
            return Err(VoterChangeError::new(
                ErrorCode::InvalidUpdateVersion,
                format!(
                    "Unable to update kraft.version to {version} because the directory id of voters {missing:?} is not known yet"
                ),
            ));
        }
        if validate_only {
            return Ok(false);
        }
        let upgraded = VoterSet::from_nodes(nodes);
        info!(node = self.node_id, voters = %upgraded, "upgrading kraft.version to {version}");
        self.append_control_batch(
            now_ms,
            &[
                ControlRecord::KRaftVersion(KRaftVersionRecord {
                    version: VOTERS_RECORD_VERSION,
                    k_raft_version: version,
                    ..Default::default()
                }),
                ControlRecord::KRaftVoters(upgraded.to_record()),
            ],
        );
        self.poll(now_ms);
        Ok(true)
    }

    /// Answers the change in flight once the HW has passed its VotersRecord, and has a
    /// leader that removed itself resign then (Kafka's `highWatermarkUpdated` and
    /// `requestResign`).
    pub(super) fn maybe_complete_voter_change(&mut self, now_ms: u64) {
        let hw = self.high_watermark;
        let Role::Leader(l) = self.quorum.role_mut() else {
            return;
        };
        if let Some(p) = &l.pending_voter_change {
            if hw > p.offset {
                let token = p.token;
                l.pending_voter_change = None;
                self.outputs.push_back(Output::VoterChangeDone {
                    token,
                    error: ErrorCode::None,
                    message: None,
                });
            }
        }
        let committed = self.voters.latest_offset().is_some_and(|o| o < hw);
        if let Role::Leader(l) = self.quorum.role_mut() {
            if !l.local_is_voter && committed && !l.resign_requested {
                l.resign_requested = true;
                info!(node = self.node_id, "removed from the voter set; resigning");
                self.become_resigned(now_ms);
            }
        }
    }

    /// A change in flight past its deadline is answered REQUEST_TIMED_OUT (the record may
    /// still commit).
    pub(super) fn expire_voter_change(&mut self, now_ms: u64) {
        let Role::Leader(l) = self.quorum.role_mut() else {
            return;
        };
        if let Some(p) = l
            .pending_voter_change
            .as_ref()
            .filter(|p| p.deadline_ms <= now_ms)
        {
            let token = p.token;
            l.pending_voter_change = None;
            self.outputs.push_back(Output::VoterChangeDone {
                token,
                error: ErrorCode::RequestTimedOut,
                message: None,
            });
        }
    }

    /// The leader is about to lose its role: a change in flight is answered
    /// NOT_LEADER_OR_FOLLOWER (Kafka's `LeaderState.close`).
    pub(super) fn abort_voter_change(&mut self) {
        let pending = match self.quorum.role_mut() {
            Role::Leader(l) => l.pending_voter_change.take(),
            _ => None,
        };
        if let Some(p) = pending {
            self.outputs.push_back(Output::VoterChangeDone {
                token: p.token,
                error: ErrorCode::NotLeaderOrFollower,
                message: None,
            });
        }
    }
}
