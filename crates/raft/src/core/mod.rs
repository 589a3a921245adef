//! [`RaftCore`]: the sans-IO KIP-595 state machine. It owns the role (through
//! [`quorum_state`]), the log (through the [`RaftLog`] trait), a seeded RNG and the queue of
//! outputs; it has no clock, no socket and no thread.
//!
//! # Call order
//!
//! 1. Build with [`RaftCore::new`] (the persisted quorum state, the log and a seed).
//! 2. Feed inputs as they happen, each with the current time: [`RaftCore::handle_message`]
//!    for an inbound request or response, [`RaftCore::handle_request_failed`] when a request
//!    timed out or its destination is unreachable (the driver owns `request.timeout.ms`, and
//!    drops a response that comes after it gave up on the request), [`RaftCore::propose`] for
//!    records to append, and [`RaftCore::handle_timeout`] when the deadline of
//!    [`RaftCore::poll_timeout`] passes.
//! 3. After every input, drain [`RaftCore::poll_output`] until `None`, acting on each output
//!    in order: a [`Output::PersistQuorumState`] must be durable before any later `Send` goes
//!    out (a vote or an epoch is promised by those messages). An [`Output::Flush`] asks for
//!    the leader's appended records to be made durable: hand the `Send`s before it to the
//!    network first, then call [`RaftCore::flush`] (at once, or later from another event; the
//!    leader's own end offset counts toward the HW only once flushed, so its fsync overlaps
//!    the followers' fetch and fsync instead of preceding them).
//! 4. Sleep until [`RaftCore::poll_timeout`] or the next input, whichever comes first.
//!
//! Snapshots (KIP-630): the state machine calls [`RaftCore::create_snapshot`] with its state
//! at or below the HW, then [`RaftCore::delete_log_before_latest_snapshot`] when it wants
//! the log before it gone. A leader answers a Fetch below its log start (or at it with
//! another epoch) with the latest snapshot's id; the follower then downloads it with
//! FetchSnapshot, one chunk in flight in place of the Fetch, installs it in place of its
//! log and fetches on from its end offset. Listeners behind the log start get an
//! [`Output::Snapshot`] before any further [`Output::Committed`].
//!
//! A [`RaftError::Fatal`] from an input means the node must stop (Kafka's fatal errors, such
//! as a leader asking to truncate committed data); the core refuses further inputs.

pub mod config;
mod describe_quorum;
pub mod log;
pub mod message;
pub mod quorum_state;
pub mod rng;
pub mod role;

use std::collections::{BTreeSet, VecDeque};

use bytes::Bytes;
use kraftd_protocol::messages::{
    begin_quorum_epoch_request, begin_quorum_epoch_response, end_quorum_epoch_request,
    end_quorum_epoch_response, fetch_request, fetch_response, fetch_snapshot_request,
    fetch_snapshot_response, leader_change_message, vote_request, vote_response,
    BeginQuorumEpochRequest, BeginQuorumEpochResponse, EndQuorumEpochRequest,
    EndQuorumEpochResponse, FetchRequest, FetchResponse, FetchSnapshotRequest,
    FetchSnapshotResponse, LeaderChangeMessage, VoteRequest, VoteResponse,
};
use kraftd_protocol::records::{ControlRecord, RecordBatch, RecordBatchBuilder};
use kraftd_protocol::ErrorCode;
use tracing::{debug, error, info, warn};

use self::config::RaftConfig;
use self::log::{LogError, RaftLog, SnapshotId};
use self::message::{
    ApiKind, RaftMessage, CLUSTER_METADATA_PARTITION, CLUSTER_METADATA_TOPIC,
    CLUSTER_METADATA_TOPIC_ID,
};
use self::quorum_state::{QuorumState, QuorumStateData};
use self::rng::Rng;
use self::role::leader::ReplicaProgress;
pub use self::role::RoleName;
use self::role::{is_log_up_to_date, LeaderState, RequestTracker, ResignedState, Role};

/// The most Fetch requests one leader parks at once; more are answered at once.
pub const MAX_PARKED_FETCHES: usize = 1024;
/// The most records one proposal may carry.
pub const MAX_RECORDS_PER_PROPOSAL: usize = 10_000;

/// What the driver must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Write the `quorum-state` file durably before sending anything that follows.
    PersistQuorumState(QuorumStateData),
    /// Send a request (with the correlation id the core chose for it, which the driver puts
    /// in the request header) or a response (with the correlation id of the request it
    /// answers).
    Send {
        to: i32,
        correlation_id: i32,
        msg: RaftMessage,
    },
    /// Make everything appended durable, after handing the outputs before it (the Fetch
    /// responses carrying the new records) to the network, then call [`RaftCore::flush`].
    /// At most one is outstanding: the next comes only after `flush` was called.
    Flush,
    /// A batch below the high watermark, for listeners: each exactly once, in offset order.
    Committed(CommittedBatch),
    /// The epoch or its leader changed.
    LeaderChange { epoch: i32, leader_id: Option<i32> },
    /// Listeners are behind the log start: load this committed snapshot (the state below
    /// `id.end_offset`) instead of the batches it replaces; `Committed` batches resume from
    /// its end offset. At most once per incarnation and snapshot, before those batches.
    Snapshot { id: SnapshotId, bytes: Bytes },
}

/// A committed record batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    pub epoch: i32,
    pub is_control: bool,
    pub bytes: Bytes,
}

/// Counters the driver exports as metrics (D3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RaftStats {
    /// Fetch replies with NOT_LEADER_OR_FOLLOWER: a node keeps asking one that is not the
    /// leader (the signal that found seed 003's stuck observer).
    pub not_leader_or_follower_replies: u64,
}

/// How often the repeated NOT_LEADER_OR_FOLLOWER warning may be logged.
pub const NOT_LEADER_WARNING_INTERVAL_MS: u64 = 10_000;

/// A proposal reached a node that is not the leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not the leader (epoch {epoch}, leader {leader_id:?})")]
pub struct NotLeader {
    pub epoch: i32,
    pub leader_id: Option<i32>,
}

/// Why a proposal was not appended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposeError {
    #[error(transparent)]
    NotLeader(#[from] NotLeader),
    #[error("a proposal needs 1 to {MAX_RECORDS_PER_PROPOSAL} records, got {0}")]
    BadRecordCount(usize),
}

/// Errors from the core's inputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RaftError {
    /// The node must stop: continuing would break Raft's guarantees.
    #[error("fatal: {0}")]
    Fatal(String),
}

/// A fetcher's position against the leader's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FetchPosition {
    Valid,
    Diverging { epoch: i32, end: i64 },
    Snapshot(SnapshotId),
}

/// A snapshot being downloaded from the leader of `epoch` with FetchSnapshot (KIP-630),
/// into the log's partial snapshot; `position` bytes are held.
#[derive(Debug, Clone)]
struct SnapshotDownload {
    epoch: i32,
    id: SnapshotId,
    position: u64,
}

/// A Fetch waiting at the leader for data, an HW change or its max wait.
#[derive(Debug, Clone)]
struct ParkedFetch {
    from: i32,
    correlation_id: i32,
    request: FetchRequest,
    deadline_ms: u64,
}

/// The sans-IO Raft node. See the module doc for the call order.
#[derive(Debug)]
pub struct RaftCore<L: RaftLog> {
    config: RaftConfig,
    node_id: i32,
    voters: BTreeSet<i32>,
    log: L,
    rng: Rng,
    quorum: QuorumState,
    /// Exclusive: every offset below it is committed. Monotonic per incarnation.
    high_watermark: i64,
    /// Listeners have been given every batch below this offset.
    delivered_offset: i64,
    outputs: VecDeque<Output>,
    /// The destination of the one Fetch in flight.
    fetch_in_flight: Option<(i32, i32)>,
    /// The correlation id of the next request.
    next_correlation_id: i32,
    fetch_backoff_until_ms: u64,
    /// The bootstrap server an unattached observer (or one cut off from its leader) asks.
    bootstrap_cursor: usize,
    /// When the leader flushes what it appended (append.linger.ms).
    flush_deadline_ms: Option<u64>,
    /// An [`Output::Flush`] was emitted and [`RaftCore::flush`] not yet called.
    flush_requested: bool,
    parked: Vec<ParkedFetch>,
    /// The snapshot a follower far behind is downloading instead of fetching.
    snapshot_download: Option<SnapshotDownload>,
    /// Vote or pre-vote requests of the current election.
    vote_requests: RequestTracker,
    last_leader_notice: Option<(i32, Option<i32>)>,
    /// A new leader's own notice waits until its listener has read up to the epoch start.
    pending_leader_notice: Option<(i32, i64)>,
    stats: RaftStats,
    last_not_leader_warning_ms: Option<u64>,
    fatal: Option<String>,
}

impl<L: RaftLog> RaftCore<L> {
    /// A node `node_id` of a quorum with the static `voters` (it is an observer when not one
    /// of them), restored from `persisted` and `log`.
    pub fn new(
        config: RaftConfig,
        node_id: i32,
        voters: impl IntoIterator<Item = i32>,
        persisted: Option<QuorumStateData>,
        log: L,
        seed: u64,
        now_ms: u64,
    ) -> Self {
        let voters: BTreeSet<i32> = voters.into_iter().collect();
        assert!(!voters.is_empty(), "a quorum needs at least one voter");
        let mut rng = Rng::new(seed ^ (node_id as u64).wrapping_mul(0x1000_0000_01b3));
        let is_voter = voters.contains(&node_id);
        let deadline = now_ms + random_election_timeout(&config, &mut rng);
        let quorum =
            QuorumState::initialize(node_id, is_voter, persisted, log.last_epoch(), deadline);
        let bootstrap_cursor = rng.below(64) as usize;
        // A random start keeps a new incarnation's ids apart from the last one's.
        let next_correlation_id = rng.below(i32::MAX as u64) as i32;
        let mut core = RaftCore {
            config,
            node_id,
            voters,
            log,
            rng,
            quorum,
            high_watermark: 0,
            delivered_offset: 0,
            outputs: VecDeque::new(),
            fetch_in_flight: None,
            next_correlation_id,
            fetch_backoff_until_ms: 0,
            bootstrap_cursor,
            flush_deadline_ms: None,
            flush_requested: false,
            parked: Vec::new(),
            snapshot_download: None,
            vote_requests: RequestTracker::default(),
            last_leader_notice: None,
            pending_leader_notice: None,
            stats: RaftStats::default(),
            last_not_leader_warning_ms: None,
            fatal: None,
        };
        if persisted != Some(core.quorum.durable()) {
            core.outputs
                .push_back(Output::PersistQuorumState(core.quorum.durable()));
        }
        if let Role::Resigned(r) = core.quorum.role_mut() {
            // A restarted leader tells the voters its epoch is over.
            let others: Vec<i32> = core
                .voters
                .iter()
                .copied()
                .filter(|v| *v != node_id)
                .collect();
            r.end_quorum = RequestTracker::new(others.clone(), now_ms);
            r.preferred_successors = others;
        }
        if core.voters.len() == 1 && is_voter {
            // A lone voter need not wait for anyone: it elects itself at once.
            match core.quorum.role_mut() {
                Role::Unattached(u) => u.election_deadline_ms = Some(now_ms),
                Role::Resigned(r) => r.election_deadline_ms = now_ms,
                _ => {}
            }
        }
        core.notice_leader();
        core.poll(now_ms);
        core
    }

    // ----- accessors -----

    pub fn node_id(&self) -> i32 {
        self.node_id
    }

    pub fn is_voter(&self) -> bool {
        self.quorum.is_voter()
    }

    pub fn role(&self) -> RoleName {
        self.quorum.name()
    }

    pub fn epoch(&self) -> i32 {
        self.quorum.epoch()
    }

    pub fn leader_id(&self) -> Option<i32> {
        self.quorum.leader_id()
    }

    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    pub fn durable_state(&self) -> QuorumStateData {
        self.quorum.durable()
    }

    /// Where the next Fetch goes (followers and observers).
    pub fn fetch_target(&self) -> Option<i32> {
        self.current_fetch_target()
    }

    /// The leader's view of every replica (end offsets, last fetch and caught-up times), for
    /// DescribeQuorum; `None` unless this node leads.
    pub fn leader_state(&self) -> Option<&LeaderState> {
        match self.quorum.role() {
            Role::Leader(l) => Some(l),
            _ => None,
        }
    }

    /// The Fetch in flight: (destination, correlation id).
    pub fn fetch_in_flight(&self) -> Option<(i32, i32)> {
        self.fetch_in_flight
    }

    pub fn log(&self) -> &L {
        &self.log
    }

    /// The log back, e.g. to simulate a crash and restart.
    pub fn into_log(self) -> L {
        self.log
    }

    pub fn is_fatal(&self) -> bool {
        self.fatal.is_some()
    }

    // ----- outputs -----

    /// The next thing to do; drain after every input.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// The time `handle_timeout` must next be called (u64::MAX when nothing is scheduled).
    pub fn poll_timeout(&self) -> u64 {
        if self.fatal.is_some() {
            return u64::MAX;
        }
        let mut t = u64::MAX;
        let mut at = |x: Option<u64>| {
            if let Some(x) = x {
                t = t.min(x);
            }
        };
        match self.quorum.role() {
            Role::Unattached(s) => at(s.election_deadline_ms),
            Role::Prospective(s) => {
                at(Some(s.election_deadline_ms));
                at(self.vote_requests.next_due_ms());
            }
            Role::Candidate(s) => {
                at(Some(s.election_deadline_ms));
                if !s.election.is_lost() {
                    at(self.vote_requests.next_due_ms());
                }
            }
            Role::Leader(s) => {
                if self.voters.len() > 1 {
                    at(Some(s.check_quorum_deadline_ms));
                }
                at(s.begin_quorum.next_due_ms());
                at(Some(s.begin_quorum_heartbeat_ms));
            }
            Role::Follower(s) => at(s.fetch_deadline_ms),
            Role::Resigned(s) => {
                at(Some(s.election_deadline_ms));
                at(s.end_quorum.next_due_ms());
            }
        }
        if self.fetch_in_flight.is_none() && self.current_fetch_target().is_some() {
            at(Some(self.fetch_backoff_until_ms));
        }
        if !self.flush_requested {
            at(self.flush_deadline_ms);
        }
        at(self.parked.iter().map(|p| p.deadline_ms).min());
        t
    }

    // ----- inputs -----

    /// Time passed; act on what is due.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        if self.fatal.is_some() {
            return;
        }
        self.poll(now_ms);
    }

    /// The request `correlation_id` to `to` timed out or could not be sent.
    pub fn handle_request_failed(
        &mut self,
        now_ms: u64,
        to: i32,
        correlation_id: i32,
        kind: ApiKind,
    ) {
        if self.fatal.is_some() {
            return;
        }
        let retry_at = now_ms + self.config.retry_backoff_ms;
        match kind {
            ApiKind::Fetch | ApiKind::FetchSnapshot => {
                if self.fetch_in_flight == Some((to, correlation_id)) {
                    self.fetch_in_flight = None;
                    self.fetch_backoff_until_ms = retry_at;
                    self.on_fetch_target_unreachable(to);
                }
            }
            ApiKind::Vote => self.vote_requests.failed(to, correlation_id, retry_at),
            ApiKind::BeginQuorumEpoch => {
                if let Role::Leader(l) = self.quorum.role_mut() {
                    l.begin_quorum.failed(to, correlation_id, retry_at);
                }
            }
            ApiKind::EndQuorumEpoch => {
                if let Role::Resigned(r) = self.quorum.role_mut() {
                    r.end_quorum.failed(to, correlation_id, retry_at);
                }
            }
        }
        self.poll(now_ms);
    }

    /// An inbound request or response from node `from`, with the correlation id of its
    /// header. A request's comes back on its response; a response whose id is not that of
    /// the request in flight to `from` is stale and ignored (Kafka's "no longer needed").
    pub fn handle_message(
        &mut self,
        now_ms: u64,
        from: i32,
        correlation_id: i32,
        msg: RaftMessage,
    ) -> Result<(), RaftError> {
        let corr = correlation_id;
        if let Some(reason) = &self.fatal {
            return Err(RaftError::Fatal(reason.clone()));
        }
        match msg {
            RaftMessage::VoteRequest(r) => self.on_vote_request(now_ms, from, corr, r),
            RaftMessage::VoteResponse(r) => self.on_vote_response(now_ms, from, corr, r),
            RaftMessage::BeginQuorumEpochRequest(r) => {
                self.on_begin_quorum_epoch_request(now_ms, from, corr, r)
            }
            RaftMessage::BeginQuorumEpochResponse(r) => {
                self.on_begin_quorum_epoch_response(now_ms, from, corr, r)
            }
            RaftMessage::EndQuorumEpochRequest(r) => {
                self.on_end_quorum_epoch_request(now_ms, from, corr, r)
            }
            RaftMessage::EndQuorumEpochResponse(r) => {
                self.on_end_quorum_epoch_response(now_ms, from, corr, r)
            }
            RaftMessage::FetchRequest(r) => self.on_fetch_request(now_ms, from, corr, r),
            RaftMessage::FetchResponse(r) => self.on_fetch_response(now_ms, from, corr, *r),
            RaftMessage::FetchSnapshotRequest(r) => {
                self.on_fetch_snapshot_request(now_ms, from, corr, r)
            }
            RaftMessage::FetchSnapshotResponse(r) => {
                self.on_fetch_snapshot_response(now_ms, from, corr, *r)
            }
        }
        self.poll(now_ms);
        match &self.fatal {
            Some(reason) => Err(RaftError::Fatal(reason.clone())),
            None => Ok(()),
        }
    }

    /// Appends `records` (one batch) as the leader; returns the first and last offset. The
    /// batch is flushed within `append.linger.ms` and committed once a majority holds it.
    pub fn propose(&mut self, now_ms: u64, records: &[Bytes]) -> Result<(i64, i64), ProposeError> {
        let not_leader = NotLeader {
            epoch: self.epoch(),
            leader_id: self.leader_id(),
        };
        let epoch = match self.quorum.role() {
            Role::Leader(l) if self.fatal.is_none() => l.epoch,
            _ => return Err(not_leader.into()),
        };
        if records.is_empty() || records.len() > MAX_RECORDS_PER_PROPOSAL {
            return Err(ProposeError::BadRecordCount(records.len()));
        }
        let mut builder = RecordBatchBuilder::new(0);
        for r in records {
            builder
                .append(now_ms as i64, None, Some(r.clone()), Vec::new())
                .expect("offsets of a fresh batch increase");
        }
        let batch = builder.build().expect("a batch of valid records builds");
        let range = self
            .log
            .append_as_leader(batch, epoch)
            .expect("the leader's own batch appends");
        if self.flush_deadline_ms.is_none() {
            self.flush_deadline_ms = Some(now_ms + self.config.append_linger_ms);
        }
        self.complete_parked(now_ms, false);
        self.poll(now_ms);
        Ok(range)
    }

    /// The driver performed the [`Output::Flush`] asked for: flushes the log (everything
    /// appended so far, which a flush already done by the log makes cheap) and lets the
    /// leader count its end offset toward the HW.
    pub fn flush(&mut self, now_ms: u64) {
        if self.fatal.is_some() {
            return;
        }
        self.flush_requested = false;
        self.log.flush();
        if self.log.flushed_offset() >= self.log.end_offset() {
            self.flush_deadline_ms = None;
        }
        self.maybe_advance_leader_hw(now_ms);
        self.poll(now_ms);
    }

    /// The state machine saved its state after every committed record below
    /// `id.end_offset`, the last of which was written in `id.epoch` (KIP-630): stores the
    /// snapshot. Refused above the high watermark, below the log start, or when `id.epoch`
    /// is not an epoch of the log ending at or after `id.end_offset`.
    pub fn create_snapshot(&mut self, id: SnapshotId, data: &[u8]) -> Result<(), LogError> {
        let refused = |reason: &str| LogError::Snapshot {
            end_offset: id.end_offset,
            epoch: id.epoch,
            reason: reason.to_string(),
        };
        if id.end_offset > self.high_watermark {
            return Err(refused("above the high watermark"));
        }
        if id.end_offset < self.log.start_offset() {
            return Err(refused("below the log start offset"));
        }
        let (found, end) = self.log.end_offset_for_epoch(id.epoch);
        if found != id.epoch || end < id.end_offset {
            return Err(refused("the epoch does not hold the end offset"));
        }
        self.log.store_snapshot(id, data)
    }

    /// Deletes the log below the latest snapshot (whole batches or segments); returns the
    /// new log start offset. A fetcher below it is sent the snapshot.
    pub fn delete_log_before_latest_snapshot(&mut self) -> i64 {
        self.log.delete_before_latest_snapshot()
    }

    /// Graceful shutdown of a leader: resign and tell the voters (a no-op otherwise).
    pub fn resign(&mut self, now_ms: u64) {
        if matches!(self.quorum.role(), Role::Leader(_)) {
            self.become_resigned(now_ms);
            self.poll(now_ms);
        }
    }

    // ----- the poll loop -----

    /// Acts on everything due at `now_ms`, by role.
    fn poll(&mut self, now_ms: u64) {
        if self.fatal.is_some() {
            return;
        }
        // Role transitions may cascade (a lone voter goes Unattached → Prospective →
        // Candidate → Leader at once); a bound keeps a bug from looping forever.
        for _ in 0..8 {
            let before = (self.quorum.name(), self.epoch());
            match self.quorum.name() {
                RoleName::Unattached => self.poll_unattached(now_ms),
                RoleName::Prospective => self.poll_prospective(now_ms),
                RoleName::Candidate => self.poll_candidate(now_ms),
                RoleName::Leader => self.poll_leader(now_ms),
                RoleName::Follower => self.poll_follower(now_ms),
                RoleName::Resigned => self.poll_resigned(now_ms),
            }
            if before == (self.quorum.name(), self.epoch()) {
                break;
            }
        }
        self.maybe_flush(now_ms);
        self.maybe_send_fetch(now_ms);
        self.expire_parked(now_ms);
        self.deliver_committed();
        self.maybe_release_leader_notice();
    }

    fn poll_unattached(&mut self, now_ms: u64) {
        let Role::Unattached(s) = self.quorum.role() else {
            unreachable!()
        };
        if s.election_deadline_ms.is_some_and(|d| d <= now_ms) {
            self.become_prospective(now_ms);
        }
    }

    fn poll_prospective(&mut self, now_ms: u64) {
        let Role::Prospective(s) = self.quorum.role() else {
            unreachable!()
        };
        if s.election.is_won() {
            self.become_candidate(now_ms);
            return;
        }
        if s.election_deadline_ms <= now_ms {
            self.prospective_lost(now_ms);
            return;
        }
        self.send_vote_requests(now_ms, true);
    }

    fn poll_candidate(&mut self, now_ms: u64) {
        let Role::Candidate(s) = self.quorum.role() else {
            unreachable!()
        };
        if s.election.is_won() {
            self.become_leader(now_ms);
            return;
        }
        if s.election_deadline_ms <= now_ms {
            // Lost or timed out: try again with a pre-vote in the candidate's epoch.
            self.become_prospective(now_ms);
            return;
        }
        if !s.election.is_lost() {
            self.send_vote_requests(now_ms, false);
        }
    }

    fn poll_leader(&mut self, now_ms: u64) {
        self.maybe_flush(now_ms);
        let Role::Leader(l) = self.quorum.role_mut() else {
            unreachable!()
        };
        if self.voters.len() > 1 && l.check_quorum_deadline_ms <= now_ms {
            warn!(
                node = self.node_id,
                epoch = l.epoch,
                "no fetch from a majority of voters within the check-quorum timeout; resigning"
            );
            self.become_resigned(now_ms);
            return;
        }
        if l.begin_quorum_heartbeat_ms <= now_ms {
            // BeginQuorumEpoch again to every voter that has not fetched recently.
            let window = self.config.fetch_timeout_ms / 2;
            let stale: Vec<i32> = l
                .voters
                .iter()
                .filter(|(_, p)| p.last_fetch_ms.is_none_or(|t| t + window <= now_ms))
                .map(|(id, _)| *id)
                .collect();
            for v in stale {
                l.begin_quorum.schedule(v, now_ms);
            }
            l.begin_quorum_heartbeat_ms = now_ms + window.max(1);
        }
        let due = l.begin_quorum.take_due(now_ms);
        let epoch = l.epoch;
        for to in due {
            let req = self.begin_quorum_epoch_request(to, epoch);
            let corr = self.send(to, RaftMessage::BeginQuorumEpochRequest(req));
            if let Role::Leader(l) = self.quorum.role_mut() {
                l.begin_quorum.sent(to, corr);
            }
        }
    }

    /// Asks the driver to flush what the leader appended once `append.linger.ms` has passed
    /// ([`Output::Flush`], after the Fetch responses queued before it); the leader's own end
    /// offset counts toward the HW only when flushed ([`RaftCore::flush`]).
    fn maybe_flush(&mut self, now_ms: u64) {
        if !self.flush_requested && self.flush_deadline_ms.is_some_and(|d| d <= now_ms) {
            self.flush_deadline_ms = None;
            self.flush_requested = true;
            self.outputs.push_back(Output::Flush);
        }
    }

    fn poll_follower(&mut self, now_ms: u64) {
        let Role::Follower(f) = self.quorum.role() else {
            unreachable!()
        };
        if f.fetch_deadline_ms.is_some_and(|d| d <= now_ms) {
            info!(
                node = self.node_id,
                epoch = f.epoch,
                leader = f.leader_id,
                "no successful fetch within fetch.timeout.ms; starting a pre-vote"
            );
            self.become_prospective(now_ms);
        }
    }

    fn poll_resigned(&mut self, now_ms: u64) {
        let Role::Resigned(r) = self.quorum.role_mut() else {
            unreachable!()
        };
        if r.election_deadline_ms <= now_ms {
            self.become_candidate(now_ms);
            return;
        }
        let due = r.end_quorum.take_due(now_ms);
        let (epoch, successors) = (r.epoch, r.preferred_successors.clone());
        for to in due {
            let req = self.end_quorum_epoch_request(epoch, &successors);
            let corr = self.send(to, RaftMessage::EndQuorumEpochRequest(req));
            if let Role::Resigned(r) = self.quorum.role_mut() {
                r.end_quorum.sent(to, corr);
            }
        }
    }

    // ----- transitions (all through quorum_state) -----

    fn become_unattached(&mut self, now_ms: u64, epoch: i32, voted_id: Option<i32>) {
        let deadline = now_ms + self.random_election_timeout();
        let persist = self
            .quorum
            .transition_to_unattached(epoch, voted_id, deadline);
        self.after_transition(now_ms, persist);
    }

    fn become_prospective(&mut self, now_ms: u64) {
        let deadline = now_ms + self.random_election_timeout();
        let persist = self
            .quorum
            .transition_to_prospective(self.voters.len(), deadline);
        self.vote_requests = RequestTracker::new(self.other_voters(), now_ms);
        self.after_transition(now_ms, persist);
    }

    fn become_candidate(&mut self, now_ms: u64) {
        if self.epoch() == i32::MAX {
            // Only a hostile or broken peer can have pushed the epoch this far.
            let reason = format!("node {}: no epoch after i32::MAX", self.node_id);
            error!("{reason}");
            self.fatal = Some(reason);
            return;
        }
        let deadline = now_ms + self.random_election_timeout();
        let persist = self
            .quorum
            .transition_to_candidate(self.voters.len(), deadline);
        self.vote_requests = RequestTracker::new(self.other_voters(), now_ms);
        info!(node = self.node_id, epoch = self.epoch(), "candidate");
        self.after_transition(now_ms, persist);
    }

    fn become_follower(&mut self, now_ms: u64, epoch: i32, leader_id: i32) {
        let deadline = now_ms + self.config.fetch_timeout_ms;
        let persist = self
            .quorum
            .transition_to_follower(epoch, leader_id, deadline);
        self.after_transition(now_ms, persist);
    }

    fn become_leader(&mut self, now_ms: u64) {
        let Role::Candidate(c) = self.quorum.role() else {
            unreachable!()
        };
        let epoch = c.epoch;
        let granting: BTreeSet<i32> = c.election.granted.clone();
        let others: Vec<i32> = self
            .voters
            .iter()
            .copied()
            .filter(|v| *v != self.node_id)
            .collect();
        let state = LeaderState {
            epoch,
            epoch_start_offset: self.log.end_offset(),
            voters: others
                .iter()
                .map(|v| (*v, ReplicaProgress::default()))
                .collect(),
            observers: Default::default(),
            granting_voters: granting,
            high_watermark_known: false,
            fetched_since_check: BTreeSet::new(),
            check_quorum_deadline_ms: now_ms + self.config.check_quorum_timeout_ms(),
            begin_quorum: RequestTracker::new(others, now_ms),
            begin_quorum_heartbeat_ms: now_ms + self.config.fetch_timeout_ms / 2,
        };
        let persist = self.quorum.transition_to_leader(state);
        info!(node = self.node_id, epoch, "elected leader");
        self.after_transition(now_ms, persist);
        self.append_leader_change(now_ms);
    }

    fn become_resigned(&mut self, now_ms: u64) {
        let Role::Leader(l) = self.quorum.role() else {
            unreachable!()
        };
        let successors = l.voters_by_descending_end_offset();
        let state = ResignedState {
            epoch: l.epoch,
            election_deadline_ms: now_ms + self.random_election_timeout(),
            end_quorum: RequestTracker::new(successors.clone(), now_ms),
            preferred_successors: successors,
        };
        let persist = self.quorum.transition_to_resigned(state);
        self.after_transition(now_ms, persist);
    }

    /// A lost pre-vote: back to the leader it knew, or Unattached.
    fn prospective_lost(&mut self, now_ms: u64) {
        let Role::Prospective(p) = self.quorum.role() else {
            unreachable!()
        };
        let (epoch, leader) = (p.epoch, p.leader_id);
        match leader {
            Some(l) => self.become_follower(now_ms, epoch, l),
            None => self.become_unattached(now_ms, epoch, None),
        }
    }

    /// What every transition does after the role changed: persist first, reset the fetch
    /// loop, answer parked fetches with the new role's error, tell listeners.
    fn after_transition(&mut self, now_ms: u64, persist: Option<QuorumStateData>) {
        if let Some(d) = persist {
            self.outputs.push_back(Output::PersistQuorumState(d));
        }
        self.fetch_in_flight = None;
        self.fetch_backoff_until_ms = 0;
        self.complete_parked(now_ms, true);
        self.notice_leader();
        debug!(node = self.node_id, state = %self.quorum, "transition");
    }

    /// Tells listeners of a new epoch or leader. On the node that became leader the notice
    /// waits until listeners have read up to the epoch's start offset (Kafka's rule: a
    /// controller must have applied everything before its own epoch before acting as leader).
    fn notice_leader(&mut self) {
        let notice = (self.epoch(), self.leader_id());
        if self.last_leader_notice == Some(notice) {
            return;
        }
        self.last_leader_notice = Some(notice);
        self.pending_leader_notice = None;
        if let Role::Leader(l) = self.quorum.role() {
            self.pending_leader_notice = Some((l.epoch, l.epoch_start_offset));
            self.maybe_release_leader_notice();
            return;
        }
        self.outputs.push_back(Output::LeaderChange {
            epoch: notice.0,
            leader_id: notice.1,
        });
    }

    fn maybe_release_leader_notice(&mut self) {
        let Some((epoch, start)) = self.pending_leader_notice else {
            return;
        };
        if self.delivered_offset >= start {
            self.pending_leader_notice = None;
            self.outputs.push_back(Output::LeaderChange {
                epoch,
                leader_id: Some(self.node_id),
            });
        }
    }

    /// Counters for metrics.
    pub fn stats(&self) -> &RaftStats {
        &self.stats
    }

    /// A response or request showed a newer epoch (or a leader for ours): follow it.
    /// Returns whether the role changed.
    fn maybe_follow(&mut self, now_ms: u64, leader_id: i32, epoch: i32) -> bool {
        let current = self.epoch();
        if epoch == i32::MAX {
            // No epoch can follow it; a peer claiming it is broken or hostile.
            warn!(node = self.node_id, "ignoring a message at epoch i32::MAX");
            return false;
        }
        // Only a voter can lead; a hint naming anyone else is no hint.
        let leader_id = if self.voters.contains(&leader_id) {
            leader_id
        } else {
            -1
        };
        if epoch > current {
            if leader_id >= 0 && leader_id != self.node_id {
                self.become_follower(now_ms, epoch, leader_id);
            } else {
                self.become_unattached(now_ms, epoch, None);
            }
            return true;
        }
        if epoch == current && leader_id >= 0 && leader_id != self.node_id {
            match self.quorum.role() {
                // A prospective that timed out on this very leader keeps its pre-vote going:
                // the responders only repeat what it already knew.
                Role::Prospective(p) if p.leader_id == Some(leader_id) => {}
                Role::Unattached(_) | Role::Prospective(_) | Role::Candidate(_) => {
                    self.become_follower(now_ms, epoch, leader_id);
                    return true;
                }
                _ => {}
            }
        }
        false
    }

    // ----- Vote -----

    fn send_vote_requests(&mut self, now_ms: u64, pre_vote: bool) {
        let epoch = self.epoch();
        for to in self.vote_requests.take_due(now_ms) {
            let req = self.vote_request(to, epoch, pre_vote);
            let corr = self.send(to, RaftMessage::VoteRequest(req));
            self.vote_requests.sent(to, corr);
        }
    }

    fn on_vote_request(&mut self, now_ms: u64, from: i32, corr: i32, req: VoteRequest) {
        if !self.has_valid_cluster_id(req.cluster_id.as_deref()) {
            let resp = VoteResponse {
                error_code: ErrorCode::InconsistentClusterId.code(),
                ..Default::default()
            };
            self.respond(from, corr, RaftMessage::VoteResponse(resp));
            return;
        }
        let Some(p) = single_partition(
            &req.topics,
            |t| &t.topic_name,
            |t| &t.partitions,
            |p| p.partition_index,
        )
        .cloned() else {
            let resp = VoteResponse {
                error_code: ErrorCode::InvalidRequest.code(),
                ..Default::default()
            };
            self.respond(from, corr, RaftMessage::VoteResponse(resp));
            return;
        };
        let candidate = p.replica_id;
        let respond = |core: &mut Self, error: ErrorCode, granted: bool| {
            let resp = core.vote_response(error, granted);
            core.respond(from, corr, RaftMessage::VoteResponse(resp));
        };
        // Kafka's order: the request's own consistency, then who may vote, then epochs. A
        // candidate bumped its epoch past its log's; a prospective did not.
        let illegal_epoch = if p.pre_vote {
            p.last_offset_epoch > p.replica_epoch
        } else {
            p.last_offset_epoch >= p.replica_epoch
        };
        if p.last_offset < 0
            || p.last_offset_epoch < 0
            || illegal_epoch
            || p.replica_epoch == i32::MAX
        {
            respond(self, ErrorCode::InvalidRequest, false);
            return;
        }
        if !self.is_voter() || !self.voters.contains(&candidate) || candidate == self.node_id {
            respond(self, ErrorCode::InconsistentVoterSet, false);
            return;
        }
        if p.replica_epoch < self.epoch() {
            respond(self, ErrorCode::FencedLeaderEpoch, false);
            return;
        }
        // A higher epoch, even in a pre-vote, is news: this node moves to it (as Kafka does).
        if p.replica_epoch > self.epoch() {
            self.become_unattached(now_ms, p.replica_epoch, None);
        }
        if req.voter_id >= 0 && req.voter_id != self.node_id {
            respond(self, ErrorCode::InvalidVoterKey, false);
            return;
        }
        let up_to_date = is_log_up_to_date(
            p.last_offset_epoch,
            p.last_offset,
            self.log.last_epoch(),
            self.log.end_offset(),
        );
        let granted = match self.quorum.role() {
            Role::Unattached(s) => s.can_grant_vote(candidate, up_to_date, p.pre_vote),
            Role::Prospective(s) => s.can_grant_vote(candidate, up_to_date, p.pre_vote),
            Role::Candidate(s) => s.can_grant_vote(up_to_date, p.pre_vote),
            Role::Follower(s) => s.can_grant_vote(up_to_date, p.pre_vote),
            Role::Leader(_) | Role::Resigned(_) => false,
        };
        if granted && !p.pre_vote && self.quorum.voted_id().is_none() {
            // The vote is durable before the response that carries it leaves.
            self.become_unattached(now_ms, p.replica_epoch, Some(candidate));
        }
        respond(self, ErrorCode::None, granted);
    }

    fn on_vote_response(&mut self, now_ms: u64, from: i32, corr: i32, resp: VoteResponse) {
        let expected = matches!(
            self.quorum.role(),
            Role::Prospective(_) | Role::Candidate(_)
        ) && self.vote_requests.answered(from, corr);
        if !expected {
            debug!(node = self.node_id, from, "vote response no longer needed");
            return;
        }
        if resp.error_code == ErrorCode::UnsupportedVersion.code()
            && matches!(self.quorum.role(), Role::Prospective(_))
        {
            // KIP-996: a voter too old for pre-vote sends the node straight to a real vote.
            info!(
                node = self.node_id,
                from, "pre-vote unsupported by a voter; candidate"
            );
            self.become_candidate(now_ms);
            return;
        }
        if resp.error_code != ErrorCode::None.code() {
            debug!(
                node = self.node_id,
                from,
                code = resp.error_code,
                "vote error; retrying after the backoff"
            );
            self.vote_requests
                .schedule(from, now_ms + self.config.retry_backoff_ms);
            return;
        }
        let Some(p) = single_partition(
            &resp.topics,
            |t| &t.topic_name,
            |t| &t.partitions,
            |p| p.partition_index,
        )
        .cloned() else {
            return;
        };
        if self.maybe_follow(now_ms, p.leader_id, p.leader_epoch) {
            return;
        }
        if p.leader_epoch != self.epoch() || !self.voters.contains(&from) {
            return;
        }
        let granted = p.error_code == ErrorCode::None.code() && p.vote_granted;
        match self.quorum.role_mut() {
            Role::Prospective(s) => {
                s.election.record(from, granted);
                if s.election.is_lost() {
                    self.prospective_lost(now_ms);
                }
            }
            Role::Candidate(s) => {
                s.election.record(from, granted);
                if s.election.is_lost() {
                    info!(
                        node = self.node_id,
                        epoch = s.epoch,
                        "election lost; waiting out the election timeout"
                    );
                }
            }
            _ => {}
        }
    }

    // ----- BeginQuorumEpoch / EndQuorumEpoch -----

    fn on_begin_quorum_epoch_request(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        req: BeginQuorumEpochRequest,
    ) {
        let error = if !self.has_valid_cluster_id(req.cluster_id.as_deref()) {
            Some(ErrorCode::InconsistentClusterId)
        } else {
            None
        };
        let part = single_partition(
            &req.topics,
            |t| &t.topic_name,
            |t| &t.partitions,
            |p| p.partition_index,
        )
        .cloned();
        let code = match (error, part) {
            (Some(e), _) => e,
            (None, None) => ErrorCode::InvalidRequest,
            (None, Some(p)) => {
                if p.leader_epoch < self.epoch() {
                    ErrorCode::FencedLeaderEpoch
                } else if p.leader_id == self.node_id || !self.voters.contains(&p.leader_id) {
                    ErrorCode::InconsistentVoterSet
                } else {
                    self.maybe_follow(now_ms, p.leader_id, p.leader_epoch);
                    if req.voter_id >= 0 && req.voter_id != self.node_id {
                        // Meant for another replica (KIP-853's voter key check).
                        ErrorCode::InvalidVoterKey
                    } else {
                        ErrorCode::None
                    }
                }
            }
        };
        let resp = self.begin_quorum_epoch_response(code);
        self.respond(from, corr, RaftMessage::BeginQuorumEpochResponse(resp));
    }

    fn on_begin_quorum_epoch_response(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        resp: BeginQuorumEpochResponse,
    ) {
        let expected = match self.quorum.role_mut() {
            Role::Leader(l) => l.begin_quorum.answered(from, corr),
            _ => false,
        };
        if !expected {
            return;
        }
        let Some(p) = single_partition(
            &resp.topics,
            |t| &t.topic_name,
            |t| &t.partitions,
            |p| p.partition_index,
        )
        .cloned() else {
            return;
        };
        self.maybe_follow(now_ms, p.leader_id, p.leader_epoch);
    }

    fn on_end_quorum_epoch_request(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        req: EndQuorumEpochRequest,
    ) {
        let part = single_partition(
            &req.topics,
            |t| &t.topic_name,
            |t| &t.partitions,
            |p| p.partition_index,
        )
        .cloned();
        let code = if !self.has_valid_cluster_id(req.cluster_id.as_deref()) {
            ErrorCode::InconsistentClusterId
        } else {
            match part {
                None => ErrorCode::InvalidRequest,
                Some(p) if p.leader_epoch < self.epoch() => ErrorCode::FencedLeaderEpoch,
                Some(p) if p.leader_id == self.node_id || !self.voters.contains(&p.leader_id) => {
                    ErrorCode::InconsistentVoterSet
                }
                Some(p) => {
                    self.maybe_follow(now_ms, p.leader_id, p.leader_epoch);
                    self.on_leader_resigned(now_ms, &p);
                    ErrorCode::None
                }
            }
        };
        let resp = self.end_quorum_epoch_response(code);
        self.respond(from, corr, RaftMessage::EndQuorumEpochResponse(resp));
    }

    /// The leader of our epoch resigned: a preferred successor starts its election after a
    /// backoff that grows with its position in the list (the first at once).
    fn on_leader_resigned(&mut self, now_ms: u64, p: &end_quorum_epoch_request::PartitionData) {
        let position = p
            .preferred_candidates
            .iter()
            .position(|c| c.candidate_id == self.node_id)
            .or_else(|| {
                p.preferred_successors
                    .iter()
                    .position(|c| *c == self.node_id)
            });
        let total = p
            .preferred_candidates
            .len()
            .max(p.preferred_successors.len());
        let backoff = strict_exponential_election_backoff_ms(
            position,
            total,
            self.config.election_backoff_max_ms,
        );
        let is_voter = self.is_voter();
        match self.quorum.role_mut() {
            Role::Follower(f) if f.leader_id == p.leader_id && f.epoch == p.leader_epoch => {
                f.has_fetched_from_leader = false;
                if is_voter {
                    f.fetch_deadline_ms = Some(now_ms + backoff);
                }
            }
            Role::Unattached(u) if u.epoch == p.leader_epoch && is_voter => {
                u.election_deadline_ms = Some(now_ms);
            }
            _ => {}
        }
    }

    fn on_end_quorum_epoch_response(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        resp: EndQuorumEpochResponse,
    ) {
        let expected = match self.quorum.role_mut() {
            Role::Resigned(r) => r.end_quorum.answered(from, corr),
            _ => false,
        };
        if !expected {
            return;
        }
        let Some(p) = single_partition(
            &resp.topics,
            |t| &t.topic_name,
            |t| &t.partitions,
            |p| p.partition_index,
        )
        .cloned() else {
            return;
        };
        self.maybe_follow(now_ms, p.leader_id, p.leader_epoch);
    }

    // ----- Fetch: the leader's side -----

    fn on_fetch_request(&mut self, now_ms: u64, from: i32, corr: i32, req: FetchRequest) {
        if let Some(resp) = self.validate_fetch(&req) {
            self.respond(from, corr, RaftMessage::FetchResponse(Box::new(resp)));
            return;
        }
        let p = fetch_partition(&req).expect("validated").clone();
        let replica = req.replica_state.replica_id;
        let position = self.check_fetch_position(p.fetch_offset, p.last_fetched_epoch);
        if position == FetchPosition::Valid && replica >= 0 && replica != self.node_id {
            let leader_end = self.log.end_offset();
            let timeout = self.config.check_quorum_timeout_ms();
            if let Role::Leader(l) = self.quorum.role_mut() {
                l.record_fetch(replica, p.fetch_offset, leader_end, now_ms, timeout);
            }
            self.maybe_advance_leader_hw(now_ms);
        }
        self.answer_or_park(now_ms, from, corr, req, false);
    }

    /// The checks of KafkaRaftClient.handleFetchRequest, in its order; `Some` is the error
    /// response.
    fn validate_fetch(&self, req: &FetchRequest) -> Option<FetchResponse> {
        if !self.has_valid_cluster_id(req.cluster_id.as_deref()) {
            return Some(FetchResponse {
                error_code: ErrorCode::InconsistentClusterId.code(),
                ..Default::default()
            });
        }
        let Some(p) = fetch_partition(req) else {
            return Some(FetchResponse {
                error_code: ErrorCode::InvalidRequest.code(),
                ..Default::default()
            });
        };
        if p.fetch_offset < 0
            || p.last_fetched_epoch < 0
            || p.last_fetched_epoch > p.current_leader_epoch
            || req.max_wait_ms < 0
        {
            return Some(self.fetch_error(ErrorCode::InvalidRequest));
        }
        let epoch = self.epoch();
        let code = if p.current_leader_epoch < epoch {
            ErrorCode::FencedLeaderEpoch
        } else if p.current_leader_epoch > epoch {
            ErrorCode::UnknownLeaderEpoch
        } else if !matches!(self.quorum.role(), Role::Leader(_)) {
            ErrorCode::NotLeaderOrFollower
        } else {
            return None;
        };
        Some(self.fetch_error(code))
    }

    /// Where the fetcher's position stands against our log (Kafka's
    /// `validateOffsetAndEpoch`): fine, below our log start (it must fetch the latest
    /// snapshot, KIP-630), or diverging from ours at the largest epoch ≤ its last fetched
    /// epoch that we hold, which ends at the given offset (KIP-279).
    fn check_fetch_position(&self, fetch_offset: i64, last_fetched_epoch: i32) -> FetchPosition {
        let start = self.log.start_offset();
        let latest = self.log.latest_snapshot();
        let snapshot_at_start = latest.filter(|s| s.end_offset == start);
        if fetch_offset == start && last_fetched_epoch == 0 && snapshot_at_start.is_none() {
            return FetchPosition::Valid;
        }
        if let Some(latest) = latest {
            let before_start = fetch_offset < start
                || snapshot_at_start.is_some_and(|s| {
                    (fetch_offset == start && last_fetched_epoch != s.epoch)
                        || last_fetched_epoch < s.epoch
                });
            if before_start {
                return FetchPosition::Snapshot(latest);
            }
        }
        let (epoch, end) = self.log.end_offset_for_epoch(last_fetched_epoch);
        if epoch != last_fetched_epoch || fetch_offset > end {
            FetchPosition::Diverging { epoch, end }
        } else {
            FetchPosition::Valid
        }
    }

    /// Answers a valid Fetch now, or parks it when it has nothing to return.
    fn answer_or_park(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        req: FetchRequest,
        force: bool,
    ) {
        let (resp, has_news) = self.build_fetch_response(&req);
        if force || has_news || req.max_wait_ms == 0 || self.parked.len() >= MAX_PARKED_FETCHES {
            self.respond(from, corr, RaftMessage::FetchResponse(Box::new(resp)));
        } else {
            let deadline_ms = now_ms + (req.max_wait_ms as u64).min(self.config.fetch_max_wait_ms);
            self.parked.push(ParkedFetch {
                from,
                correlation_id: corr,
                request: req,
                deadline_ms,
            });
        }
    }

    /// The response to a Fetch (errors included) and whether it tells the fetcher anything
    /// new: an error, a divergence, records, or an HW above the one it sent (KIP-1166).
    fn build_fetch_response(&self, req: &FetchRequest) -> (FetchResponse, bool) {
        if let Some(resp) = self.validate_fetch(req) {
            return (resp, true);
        }
        let p = fetch_partition(req).expect("validated");
        let hw = match self.quorum.role() {
            Role::Leader(l) if l.high_watermark_known => self.high_watermark,
            _ => -1,
        };
        let mut part = self.partition_response(ErrorCode::None);
        part.high_watermark = hw;
        match self.check_fetch_position(p.fetch_offset, p.last_fetched_epoch) {
            FetchPosition::Valid => {}
            FetchPosition::Diverging { epoch, end } => {
                part.diverging_epoch = fetch_response::EpochEndOffset {
                    epoch,
                    end_offset: end,
                    ..Default::default()
                };
                return (self.wrap_partition(part), true);
            }
            FetchPosition::Snapshot(id) => {
                part.snapshot_id = fetch_response::SnapshotId {
                    end_offset: id.end_offset,
                    epoch: id.epoch,
                    ..Default::default()
                };
                return (self.wrap_partition(part), true);
            }
        }
        let max_bytes = (p.partition_max_bytes.max(0) as usize)
            .min(req.max_bytes.max(0) as usize)
            .min(self.config.fetch_max_bytes)
            .max(1);
        let records = self.log.read(p.fetch_offset, max_bytes);
        let fetcher_hw_behind = p.high_watermark != i64::MAX && hw >= 0 && p.high_watermark < hw;
        let has_news = !records.is_empty() || fetcher_hw_behind;
        part.records = Some(records);
        (self.wrap_partition(part), has_news)
    }

    /// Answers parked fetches that now have something to say (or all, on a role change).
    fn complete_parked(&mut self, now_ms: u64, all: bool) {
        if self.parked.is_empty() {
            return;
        }
        let parked = std::mem::take(&mut self.parked);
        for p in parked {
            self.answer_or_park(now_ms, p.from, p.correlation_id, p.request, all);
        }
    }

    fn expire_parked(&mut self, now_ms: u64) {
        if !self.parked.iter().any(|p| p.deadline_ms <= now_ms) {
            return;
        }
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.parked)
            .into_iter()
            .partition(|p| p.deadline_ms <= now_ms);
        self.parked = keep;
        for p in due {
            self.answer_or_park(now_ms, p.from, p.correlation_id, p.request, true);
        }
    }

    /// Recomputes the leader's HW from the voters' end offsets (M3).
    fn maybe_advance_leader_hw(&mut self, now_ms: u64) {
        let flushed = self.log.flushed_offset();
        let current = self.high_watermark;
        let Role::Leader(l) = self.quorum.role_mut() else {
            return;
        };
        let majority = l.majority_end_offset(flushed);
        // The HW stays unknown until a record of this epoch commits.
        if majority <= l.epoch_start_offset {
            return;
        }
        l.high_watermark_known = true;
        if majority > current {
            self.set_high_watermark(majority);
            self.complete_parked(now_ms, false);
        } else if majority < current {
            error!(
                node = self.node_id,
                epoch = self.epoch(),
                computed = majority,
                high_watermark = current,
                "computed high watermark below the current one: a voter lost committed data"
            );
        }
    }

    fn set_high_watermark(&mut self, hw: i64) {
        assert!(
            hw >= self.high_watermark,
            "node {}: high watermark would go back from {} to {hw}",
            self.node_id,
            self.high_watermark
        );
        assert!(
            hw <= self.log.end_offset(),
            "node {}: high watermark {hw} above the log end offset {}",
            self.node_id,
            self.log.end_offset()
        );
        self.high_watermark = hw;
    }

    fn append_leader_change(&mut self, now_ms: u64) {
        let Role::Leader(l) = self.quorum.role() else {
            unreachable!()
        };
        let voter = |id: i32| leader_change_message::Voter {
            voter_id: id,
            ..Default::default()
        };
        let msg = LeaderChangeMessage {
            version: 0,
            leader_id: self.node_id,
            voters: self.voters.iter().map(|v| voter(*v)).collect(),
            granting_voters: l.granting_voters.iter().map(|v| voter(*v)).collect(),
            ..Default::default()
        };
        let epoch = l.epoch;
        let record = ControlRecord::LeaderChange(msg);
        let mut builder = RecordBatchBuilder::new(0).control(true);
        builder
            .append(
                now_ms as i64,
                Some(record.key()),
                Some(record.encode_value().expect("LeaderChangeMessage encodes")),
                Vec::new(),
            )
            .expect("first record of a batch");
        let batch = builder.build().expect("control batch builds");
        self.log
            .append_as_leader(batch, epoch)
            .expect("the leader's own batch appends");
        // The epoch's first record is flushed at once: no HW is known until it commits.
        self.flush_deadline_ms = Some(now_ms);
        self.complete_parked(now_ms, false);
    }

    // ----- Fetch: the follower's and observer's side -----

    fn current_fetch_target(&self) -> Option<i32> {
        match self.quorum.role() {
            Role::Follower(f) => Some(f.fetch_target),
            Role::Unattached(_) if !self.is_voter() => self.bootstrap_target(),
            _ => None,
        }
    }

    fn bootstrap_servers(&self) -> Vec<i32> {
        let list: Vec<i32> = if self.config.bootstrap_servers.is_empty() {
            self.voters.iter().copied().collect()
        } else {
            self.config.bootstrap_servers.clone()
        };
        list.into_iter().filter(|b| *b != self.node_id).collect()
    }

    fn bootstrap_target(&self) -> Option<i32> {
        let list = self.bootstrap_servers();
        (!list.is_empty()).then(|| list[self.bootstrap_cursor % list.len()])
    }

    /// The next bootstrap server, avoiding `avoid` when another exists.
    fn next_bootstrap(&mut self, avoid: i32) -> Option<i32> {
        let list = self.bootstrap_servers();
        if list.is_empty() {
            return None;
        }
        for _ in 0..list.len() {
            self.bootstrap_cursor = self.bootstrap_cursor.wrapping_add(1);
            let b = list[self.bootstrap_cursor % list.len()];
            if b != avoid {
                return Some(b);
            }
        }
        Some(list[self.bootstrap_cursor % list.len()])
    }

    /// A Fetch to `to` failed. An observer that cannot reach its leader asks a bootstrap
    /// server (D2), and one that cannot reach a bootstrap server tries the leader again.
    fn on_fetch_target_unreachable(&mut self, to: i32) {
        let is_voter = self.is_voter();
        let leader = match self.quorum.role() {
            Role::Follower(f) if !is_voter => Some(f.leader_id),
            Role::Unattached(_) if !is_voter => {
                self.next_bootstrap(to);
                return;
            }
            _ => return,
        };
        let Some(leader) = leader else { return };
        let next = if to == leader {
            self.next_bootstrap(leader).unwrap_or(leader)
        } else {
            leader
        };
        if let Role::Follower(f) = self.quorum.role_mut() {
            info!(
                node = self.node_id,
                unreachable = to,
                next,
                "fetch failed; switching fetch target"
            );
            f.fetch_target = next;
        }
    }

    fn maybe_send_fetch(&mut self, now_ms: u64) {
        if self.fetch_in_flight.is_some() || now_ms < self.fetch_backoff_until_ms {
            return;
        }
        let Some(target) = self.current_fetch_target() else {
            return;
        };
        if self
            .snapshot_download
            .as_ref()
            .is_some_and(|d| d.epoch != self.epoch())
        {
            // The download belonged to an older epoch's leader; start over by fetching.
            self.snapshot_download = None;
        }
        let msg = match &self.snapshot_download {
            Some(d) => RaftMessage::FetchSnapshotRequest(self.fetch_snapshot_request(d)),
            None => RaftMessage::FetchRequest(self.fetch_request()),
        };
        let corr = self.send(target, msg);
        self.fetch_in_flight = Some((target, corr));
    }

    fn on_fetch_response(&mut self, now_ms: u64, from: i32, corr: i32, resp: FetchResponse) {
        if self.fetch_in_flight != Some((from, corr)) {
            debug!(
                node = self.node_id,
                from, "fetch response not asked for; ignored"
            );
            return;
        }
        self.fetch_in_flight = None;
        let backoff = now_ms + self.config.retry_backoff_ms;
        if resp.error_code != ErrorCode::None.code() {
            warn!(
                node = self.node_id,
                from,
                code = resp.error_code,
                "fetch failed"
            );
            self.fetch_backoff_until_ms = backoff;
            self.on_fetch_target_unreachable(from);
            return;
        }
        let Some(p) = resp
            .responses
            .iter()
            .find(|t| t.topic_id == CLUSTER_METADATA_TOPIC_ID)
            .and_then(|t| {
                t.partitions
                    .iter()
                    .find(|p| p.partition_index == CLUSTER_METADATA_PARTITION)
            })
            .cloned()
        else {
            warn!(
                node = self.node_id,
                from, "fetch response without the metadata partition"
            );
            self.fetch_backoff_until_ms = backoff;
            return;
        };
        let leader = p.current_leader.leader_id;
        let leader_epoch = p.current_leader.leader_epoch;
        if p.error_code == ErrorCode::NotLeaderOrFollower.code() {
            self.stats.not_leader_or_follower_replies += 1;
            let due = self
                .last_not_leader_warning_ms
                .is_none_or(|t| t + NOT_LEADER_WARNING_INTERVAL_MS <= now_ms);
            if due {
                self.last_not_leader_warning_ms = Some(now_ms);
                warn!(
                    node = self.node_id,
                    asked = from,
                    named_leader = leader,
                    named_epoch = leader_epoch,
                    total = self.stats.not_leader_or_follower_replies,
                    "fetch answered NOT_LEADER_OR_FOLLOWER"
                );
            }
        }
        if self.maybe_follow(now_ms, leader, leader_epoch) {
            return;
        }
        if p.error_code != ErrorCode::None.code() {
            // A reply naming our leader sends us back to it at once (D1); otherwise retry
            // after the backoff, from another bootstrap server when we were on one.
            let names_our_leader = leader_epoch == self.epoch()
                && matches!(self.quorum.role(), Role::Follower(f) if f.leader_id == leader);
            if names_our_leader && from != leader {
                if let Role::Follower(f) = self.quorum.role_mut() {
                    f.fetch_target = leader;
                }
            } else {
                self.fetch_backoff_until_ms = backoff;
                if from != leader {
                    self.on_fetch_target_unreachable(from);
                }
            }
            return;
        }
        let fetch_timeout = self.config.fetch_timeout_ms;
        let epoch = self.epoch();
        let Role::Follower(f) = self.quorum.role_mut() else {
            return;
        };
        if from != f.leader_id {
            return;
        }
        f.has_fetched_from_leader = true;
        if f.fetch_deadline_ms.is_some() {
            f.fetch_deadline_ms = Some(now_ms + fetch_timeout);
        }
        if p.diverging_epoch.epoch >= 0 && p.diverging_epoch.end_offset >= 0 {
            let (div_epoch, div_end) = (p.diverging_epoch.epoch, p.diverging_epoch.end_offset);
            // KIP-279: cut at the smaller of the two ends of the largest epoch ≤ the
            // leader's (ours ends where our next epoch starts, or at our end). When we hold
            // an older epoch only, its end is below the leader's and we cut there, then ask
            // again.
            let (_, local_end) = self.log.end_offset_for_epoch(div_epoch);
            let target = local_end.min(div_end);
            if target < self.high_watermark {
                let reason = format!(
                    "node {}: leader {from} asks to truncate to {target} (diverging epoch {div_epoch} end {div_end}), below the high watermark {}",
                    self.node_id, self.high_watermark
                );
                error!("{reason}");
                self.fatal = Some(reason);
                return;
            }
            info!(
                node = self.node_id,
                target, div_epoch, "truncating diverged log"
            );
            self.log.truncate_to(target);
            self.log.flush();
            return;
        }
        if p.snapshot_id.end_offset >= 0 || p.snapshot_id.epoch >= 0 {
            let id = SnapshotId {
                end_offset: p.snapshot_id.end_offset,
                epoch: p.snapshot_id.epoch,
            };
            if id.end_offset < 0 || id.epoch < 0 || id.epoch > epoch {
                warn!(
                    node = self.node_id,
                    from,
                    ?id,
                    "invalid snapshot id; ignored"
                );
                self.fetch_backoff_until_ms = backoff;
                return;
            }
            if id.end_offset < self.high_watermark {
                warn!(
                    node = self.node_id,
                    from,
                    ?id,
                    hw = self.high_watermark,
                    "snapshot below our high watermark; ignored"
                );
                self.fetch_backoff_until_ms = backoff;
                return;
            }
            if self.log.read_snapshot(id, 0, 0).is_some() {
                // Held already (a restart after a download, before the log was replaced).
                if let Err(e) = self.log.install_snapshot(id, &[]) {
                    warn!(node = self.node_id, from, error = %e, "snapshot install refused");
                    self.fetch_backoff_until_ms = backoff;
                    return;
                }
                self.on_snapshot_installed(id);
                return;
            }
            if let Err(e) = self.log.begin_snapshot_download(id) {
                warn!(node = self.node_id, from, error = %e, "snapshot download refused");
                self.fetch_backoff_until_ms = backoff;
                return;
            }
            info!(node = self.node_id, from, ?id, "fetching snapshot");
            self.snapshot_download = Some(SnapshotDownload {
                epoch,
                id,
                position: 0,
            });
            return;
        }
        if let Some(records) = p.records.filter(|r| !r.is_empty()) {
            if let Err(reason) = self.check_fetched_batches(&records, epoch) {
                warn!(node = self.node_id, from, %reason, "fetched batches refused");
                self.fetch_backoff_until_ms = backoff;
                return;
            }
            if let Err(e) = self.log.append_as_follower(records, epoch) {
                warn!(node = self.node_id, from, error = %e, "fetched batches refused");
                self.fetch_backoff_until_ms = backoff;
                return;
            }
            self.log.flush();
        }
        if p.high_watermark >= 0 {
            let hw = p.high_watermark.min(self.log.end_offset());
            if hw > self.high_watermark {
                self.set_high_watermark(hw);
            }
        }
    }

    // ----- FetchSnapshot (KIP-630) -----

    /// The leader serves a chunk of one of its snapshots (KafkaRaftClient
    /// `handleFetchSnapshotRequest`).
    fn on_fetch_snapshot_request(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        req: FetchSnapshotRequest,
    ) {
        let resp = self.build_fetch_snapshot_response(&req);
        let served = resp.error_code == ErrorCode::None.code()
            && resp
                .topics
                .iter()
                .flat_map(|t| t.partitions.iter())
                .all(|p| p.error_code == ErrorCode::None.code());
        if served && req.replica_id >= 0 && req.replica_id != self.node_id {
            let timeout = self.config.check_quorum_timeout_ms();
            if let Role::Leader(l) = self.quorum.role_mut() {
                l.record_check_quorum(req.replica_id, now_ms, timeout);
            }
        }
        self.respond(
            from,
            corr,
            RaftMessage::FetchSnapshotResponse(Box::new(resp)),
        );
    }

    fn build_fetch_snapshot_response(&self, req: &FetchSnapshotRequest) -> FetchSnapshotResponse {
        if !self.has_valid_cluster_id(req.cluster_id.as_deref()) {
            return FetchSnapshotResponse {
                error_code: ErrorCode::InconsistentClusterId.code(),
                ..Default::default()
            };
        }
        let Some(p) =
            single_partition(&req.topics, |t| &t.name, |t| &t.partitions, |p| p.partition)
        else {
            return FetchSnapshotResponse {
                error_code: ErrorCode::InvalidRequest.code(),
                ..Default::default()
            };
        };
        let epoch = self.epoch();
        let code = if p.current_leader_epoch < epoch {
            ErrorCode::FencedLeaderEpoch
        } else if p.current_leader_epoch > epoch {
            ErrorCode::UnknownLeaderEpoch
        } else if !matches!(self.quorum.role(), Role::Leader(_)) {
            ErrorCode::NotLeaderOrFollower
        } else {
            ErrorCode::None
        };
        let mut part = fetch_snapshot_response::PartitionSnapshot {
            index: CLUSTER_METADATA_PARTITION,
            error_code: code.code(),
            snapshot_id: fetch_snapshot_response::SnapshotId {
                end_offset: p.snapshot_id.end_offset,
                epoch: p.snapshot_id.epoch,
                ..Default::default()
            },
            current_leader: fetch_snapshot_response::LeaderIdAndEpoch {
                leader_id: self.leader_id().unwrap_or(-1),
                leader_epoch: epoch,
                ..Default::default()
            },
            ..Default::default()
        };
        if code == ErrorCode::None {
            let id = SnapshotId {
                end_offset: p.snapshot_id.end_offset,
                epoch: p.snapshot_id.epoch,
            };
            let max_bytes = (req.max_bytes.max(1) as usize).min(self.config.fetch_max_bytes);
            match u64::try_from(p.position) {
                Err(_) => part.error_code = ErrorCode::PositionOutOfRange.code(),
                Ok(position) => match self.log.read_snapshot(id, position, max_bytes) {
                    None => part.error_code = ErrorCode::SnapshotNotFound.code(),
                    Some((_, size)) if position > size => {
                        part.error_code = ErrorCode::PositionOutOfRange.code()
                    }
                    Some((bytes, size)) => {
                        part.size = i64::try_from(size).unwrap_or(i64::MAX);
                        part.position = p.position;
                        part.unaligned_records = bytes;
                    }
                },
            }
        }
        FetchSnapshotResponse {
            topics: vec![fetch_snapshot_response::TopicSnapshot {
                name: CLUSTER_METADATA_TOPIC.to_string(),
                partitions: vec![part],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// A follower stores a chunk; the last one installs the snapshot in place of its log
    /// (KafkaRaftClient `handleFetchSnapshotResponse`).
    fn on_fetch_snapshot_response(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        resp: FetchSnapshotResponse,
    ) {
        if self.fetch_in_flight != Some((from, corr)) {
            debug!(
                node = self.node_id,
                from, "fetch snapshot response not asked for; ignored"
            );
            return;
        }
        self.fetch_in_flight = None;
        let backoff = now_ms + self.config.retry_backoff_ms;
        if resp.error_code != ErrorCode::None.code() {
            warn!(
                node = self.node_id,
                from,
                code = resp.error_code,
                "fetch snapshot failed"
            );
            self.fetch_backoff_until_ms = backoff;
            self.on_fetch_target_unreachable(from);
            return;
        }
        let Some(p) =
            single_partition(&resp.topics, |t| &t.name, |t| &t.partitions, |p| p.index).cloned()
        else {
            warn!(
                node = self.node_id,
                from, "fetch snapshot response without the metadata partition"
            );
            self.fetch_backoff_until_ms = backoff;
            return;
        };
        if self.maybe_follow(
            now_ms,
            p.current_leader.leader_id,
            p.current_leader.leader_epoch,
        ) {
            self.snapshot_download = None;
            return;
        }
        if p.error_code != ErrorCode::None.code() {
            warn!(
                node = self.node_id,
                from,
                code = p.error_code,
                "fetch snapshot refused"
            );
            if p.error_code == ErrorCode::SnapshotNotFound.code()
                || p.error_code == ErrorCode::PositionOutOfRange.code()
            {
                // Fetch again: the leader names its current snapshot.
                self.snapshot_download = None;
            }
            // As for Fetch: a reply naming our leader sends us back to it at once (D1);
            // otherwise retry after the backoff, elsewhere when we were on a bootstrap
            // server.
            let leader = p.current_leader.leader_id;
            let names_our_leader = p.current_leader.leader_epoch == self.epoch()
                && matches!(self.quorum.role(), Role::Follower(f) if f.leader_id == leader);
            if names_our_leader && from != leader {
                if let Role::Follower(f) = self.quorum.role_mut() {
                    f.fetch_target = leader;
                }
            } else {
                self.fetch_backoff_until_ms = backoff;
                if from != leader {
                    self.on_fetch_target_unreachable(from);
                }
            }
            return;
        }
        let fetch_timeout = self.config.fetch_timeout_ms;
        let Role::Follower(f) = self.quorum.role_mut() else {
            return;
        };
        if from != f.leader_id {
            return;
        }
        f.has_fetched_from_leader = true;
        if f.fetch_deadline_ms.is_some() {
            f.fetch_deadline_ms = Some(now_ms + fetch_timeout);
        }
        let Some(d) = self.snapshot_download.clone() else {
            return;
        };
        let same_id =
            p.snapshot_id.end_offset == d.id.end_offset && p.snapshot_id.epoch == d.id.epoch;
        let expected_position = i64::try_from(d.position).unwrap_or(i64::MAX);
        let fits = p.size >= 0
            && expected_position.saturating_add(p.unaligned_records.len() as i64) <= p.size;
        if !same_id || p.position != expected_position || !fits {
            warn!(
                node = self.node_id,
                from,
                position = p.position,
                size = p.size,
                "fetch snapshot chunk does not fit the download; starting over"
            );
            self.snapshot_download = None;
            self.fetch_backoff_until_ms = backoff;
            return;
        }
        let position = match self
            .log
            .append_snapshot_download(d.id, &p.unaligned_records)
        {
            Ok(position) => position,
            Err(e) => {
                warn!(node = self.node_id, from, error = %e, "snapshot chunk refused");
                self.snapshot_download = None;
                self.fetch_backoff_until_ms = backoff;
                return;
            }
        };
        if (position as i64) < p.size {
            if p.unaligned_records.is_empty() {
                self.fetch_backoff_until_ms = backoff;
            }
            if let Some(d) = self.snapshot_download.as_mut() {
                d.position = position;
            }
            return;
        }
        self.snapshot_download = None;
        if let Err(e) = self.log.finish_snapshot_download(d.id) {
            warn!(node = self.node_id, from, error = %e, "snapshot install refused");
            self.fetch_backoff_until_ms = backoff;
            return;
        }
        self.on_snapshot_installed(d.id);
    }

    /// The log now starts at snapshot `id`, which the leader holds committed.
    fn on_snapshot_installed(&mut self, id: SnapshotId) {
        info!(node = self.node_id, ?id, "installed snapshot");
        if id.end_offset > self.high_watermark {
            self.set_high_watermark(id.end_offset);
        }
    }

    fn fetch_snapshot_request(&self, d: &SnapshotDownload) -> FetchSnapshotRequest {
        FetchSnapshotRequest {
            cluster_id: Some(self.config.cluster_id.clone()),
            replica_id: self.node_id,
            max_bytes: self.config.fetch_max_bytes.min(i32::MAX as usize) as i32,
            topics: vec![fetch_snapshot_request::TopicSnapshot {
                name: CLUSTER_METADATA_TOPIC.to_string(),
                partitions: vec![fetch_snapshot_request::PartitionSnapshot {
                    partition: CLUSTER_METADATA_PARTITION,
                    current_leader_epoch: self.epoch(),
                    snapshot_id: fetch_snapshot_request::SnapshotId {
                        end_offset: d.id.end_offset,
                        epoch: d.id.epoch,
                        ..Default::default()
                    },
                    position: i64::try_from(d.position).unwrap_or(i64::MAX),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// What a follower checks before appending fetched batches, whatever the log does:
    /// each parses, its CRC holds, it starts where the previous ended (the first at our end
    /// offset), and its partition leader epoch is not above the current epoch.
    fn check_fetched_batches(&self, records: &Bytes, epoch: i32) -> Result<(), String> {
        let mut next = self.log.end_offset();
        for batch in kraftd_protocol::records::Batches::new(records.clone()) {
            let batch = batch.map_err(|e| format!("batch does not parse: {e}"))?;
            batch
                .validate_crc()
                .map_err(|e| format!("batch at {}: {e}", batch.base_offset()))?;
            if batch.base_offset() != next {
                return Err(format!(
                    "batch at {} but the log ends at {next}",
                    batch.base_offset()
                ));
            }
            if batch.partition_leader_epoch() > epoch {
                return Err(format!(
                    "batch at {} has epoch {} above the current {epoch}",
                    batch.base_offset(),
                    batch.partition_leader_epoch()
                ));
            }
            next = batch.next_offset();
        }
        Ok(())
    }

    // ----- listeners -----

    fn deliver_committed(&mut self) {
        if self.delivered_offset < self.log.start_offset() {
            // The batches listeners need are gone: they load the snapshot first.
            let Some(id) = self.log.latest_snapshot() else {
                return;
            };
            if id.end_offset > self.high_watermark || id.end_offset < self.log.start_offset() {
                return;
            }
            let Some((bytes, _)) = self.log.read_snapshot(id, 0, usize::MAX) else {
                return;
            };
            self.delivered_offset = id.end_offset;
            self.outputs.push_back(Output::Snapshot { id, bytes });
        }
        while self.delivered_offset < self.high_watermark {
            let bytes = self
                .log
                .read(self.delivered_offset, self.config.fetch_max_bytes);
            if bytes.is_empty() {
                return;
            }
            let mut progressed = false;
            for batch in kraftd_protocol::records::Batches::new(bytes) {
                let Ok(batch) = batch else { return };
                if batch.next_offset() > self.high_watermark {
                    return;
                }
                self.deliver_batch(&batch);
                progressed = true;
            }
            if !progressed {
                return;
            }
        }
    }

    fn deliver_batch(&mut self, batch: &RecordBatch) {
        assert_eq!(
            batch.base_offset(),
            self.delivered_offset,
            "node {}: committed batches must be delivered in order",
            self.node_id
        );
        self.delivered_offset = batch.next_offset();
        self.outputs.push_back(Output::Committed(CommittedBatch {
            base_offset: batch.base_offset(),
            last_offset: batch.last_offset(),
            epoch: batch.partition_leader_epoch(),
            is_control: batch.is_control(),
            bytes: batch.as_bytes().clone(),
        }));
    }

    // ----- helpers -----

    /// Queues a request; returns its correlation id.
    fn send(&mut self, to: i32, msg: RaftMessage) -> i32 {
        debug_assert!(msg.is_request());
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1) & i32::MAX;
        let correlation_id = self.next_correlation_id;
        self.outputs.push_back(Output::Send {
            to,
            correlation_id,
            msg,
        });
        correlation_id
    }

    fn respond(&mut self, to: i32, correlation_id: i32, msg: RaftMessage) {
        debug_assert!(!msg.is_request());
        self.outputs.push_back(Output::Send {
            to,
            correlation_id,
            msg,
        });
    }

    fn other_voters(&self) -> Vec<i32> {
        self.voters
            .iter()
            .copied()
            .filter(|v| *v != self.node_id)
            .collect()
    }

    fn random_election_timeout(&mut self) -> u64 {
        random_election_timeout(&self.config, &mut self.rng)
    }

    fn has_valid_cluster_id(&self, cluster_id: Option<&str>) -> bool {
        cluster_id.is_none_or(|c| c == self.config.cluster_id)
    }

    fn vote_request(&self, to: i32, epoch: i32, pre_vote: bool) -> VoteRequest {
        VoteRequest {
            cluster_id: Some(self.config.cluster_id.clone()),
            voter_id: to,
            topics: vec![vote_request::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![vote_request::PartitionData {
                    partition_index: CLUSTER_METADATA_PARTITION,
                    replica_epoch: epoch,
                    replica_id: self.node_id,
                    last_offset_epoch: self.log.last_epoch(),
                    last_offset: self.log.end_offset(),
                    pre_vote,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn vote_response(&self, error: ErrorCode, granted: bool) -> VoteResponse {
        VoteResponse {
            error_code: 0,
            topics: vec![vote_response::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![vote_response::PartitionData {
                    partition_index: CLUSTER_METADATA_PARTITION,
                    error_code: error.code(),
                    leader_id: self.leader_id().unwrap_or(-1),
                    leader_epoch: self.epoch(),
                    vote_granted: granted,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn begin_quorum_epoch_response(&self, error: ErrorCode) -> BeginQuorumEpochResponse {
        BeginQuorumEpochResponse {
            topics: vec![begin_quorum_epoch_response::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![begin_quorum_epoch_response::PartitionData {
                    partition_index: CLUSTER_METADATA_PARTITION,
                    error_code: error.code(),
                    leader_id: self.leader_id().unwrap_or(-1),
                    leader_epoch: self.epoch(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn end_quorum_epoch_response(&self, error: ErrorCode) -> EndQuorumEpochResponse {
        EndQuorumEpochResponse {
            topics: vec![end_quorum_epoch_response::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![end_quorum_epoch_response::PartitionData {
                    partition_index: CLUSTER_METADATA_PARTITION,
                    error_code: error.code(),
                    leader_id: self.leader_id().unwrap_or(-1),
                    leader_epoch: self.epoch(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn begin_quorum_epoch_request(&self, to: i32, epoch: i32) -> BeginQuorumEpochRequest {
        BeginQuorumEpochRequest {
            cluster_id: Some(self.config.cluster_id.clone()),
            voter_id: to,
            topics: vec![begin_quorum_epoch_request::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![begin_quorum_epoch_request::PartitionData {
                    partition_index: CLUSTER_METADATA_PARTITION,
                    leader_id: self.node_id,
                    leader_epoch: epoch,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn end_quorum_epoch_request(&self, epoch: i32, successors: &[i32]) -> EndQuorumEpochRequest {
        EndQuorumEpochRequest {
            cluster_id: Some(self.config.cluster_id.clone()),
            topics: vec![end_quorum_epoch_request::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![end_quorum_epoch_request::PartitionData {
                    partition_index: CLUSTER_METADATA_PARTITION,
                    leader_id: self.node_id,
                    leader_epoch: epoch,
                    preferred_candidates: successors
                        .iter()
                        .map(|c| end_quorum_epoch_request::ReplicaInfo {
                            candidate_id: *c,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn fetch_request(&self) -> FetchRequest {
        FetchRequest {
            cluster_id: Some(self.config.cluster_id.clone()),
            replica_id: -1,
            replica_state: fetch_request::ReplicaState {
                replica_id: self.node_id,
                replica_epoch: -1,
                ..Default::default()
            },
            max_wait_ms: self.config.fetch_max_wait_ms.min(i32::MAX as u64) as i32,
            min_bytes: 0,
            max_bytes: self.config.fetch_max_bytes.min(i32::MAX as usize) as i32,
            topics: vec![fetch_request::FetchTopic {
                topic_id: CLUSTER_METADATA_TOPIC_ID,
                partitions: vec![fetch_request::FetchPartition {
                    partition: CLUSTER_METADATA_PARTITION,
                    current_leader_epoch: self.epoch(),
                    fetch_offset: self.log.end_offset(),
                    last_fetched_epoch: self.log.last_epoch(),
                    log_start_offset: self.log.start_offset(),
                    partition_max_bytes: self.config.fetch_max_bytes.min(i32::MAX as usize) as i32,
                    high_watermark: self.high_watermark,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn partition_response(&self, error: ErrorCode) -> fetch_response::PartitionData {
        fetch_response::PartitionData {
            partition_index: CLUSTER_METADATA_PARTITION,
            error_code: error.code(),
            high_watermark: -1,
            log_start_offset: self.log.start_offset(),
            current_leader: fetch_response::LeaderIdAndEpoch {
                leader_id: self.leader_id().unwrap_or(-1),
                leader_epoch: self.epoch(),
                ..Default::default()
            },
            records: Some(Bytes::new()),
            ..Default::default()
        }
    }

    fn wrap_partition(&self, part: fetch_response::PartitionData) -> FetchResponse {
        FetchResponse {
            responses: vec![fetch_response::FetchableTopicResponse {
                topic_id: CLUSTER_METADATA_TOPIC_ID,
                partitions: vec![part],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn fetch_error(&self, error: ErrorCode) -> FetchResponse {
        self.wrap_partition(self.partition_response(error))
    }
}

/// Kafka's `strictExponentialElectionBackoffMs`: the first preferred successor starts at
/// once, the k-th (of n) after `max >> (n - 1) << (k - 1)`, anyone else after the max.
fn strict_exponential_election_backoff_ms(
    position: Option<usize>,
    total: usize,
    election_backoff_max_ms: u64,
) -> u64 {
    match position {
        Some(0) => 0,
        Some(k) if k < total => {
            let base = election_backoff_max_ms >> (total - 1).min(63);
            base.checked_shl((k - 1).min(63) as u32)
                .unwrap_or(u64::MAX)
                .min(election_backoff_max_ms)
        }
        _ => election_backoff_max_ms,
    }
}

/// Kafka's randomized election timeout: base plus up to base again.
fn random_election_timeout(config: &RaftConfig, rng: &mut Rng) -> u64 {
    config.election_timeout_ms + rng.below(config.election_timeout_ms.max(1))
}

/// The one `__cluster_metadata` partition of a request with topics by name.
fn single_partition<T, P>(
    topics: &[T],
    name: impl Fn(&T) -> &String,
    partitions: impl Fn(&T) -> &Vec<P>,
    index: impl Fn(&P) -> i32,
) -> Option<&P> {
    match topics {
        [t] if name(t) == CLUSTER_METADATA_TOPIC => match partitions(t).as_slice() {
            [p] if index(p) == CLUSTER_METADATA_PARTITION => Some(p),
            _ => None,
        },
        _ => None,
    }
}

/// The one `__cluster_metadata` partition of a Fetch (topics by id since v13).
fn fetch_partition(req: &FetchRequest) -> Option<&fetch_request::FetchPartition> {
    match req.topics.as_slice() {
        [t] if t.topic_id == CLUSTER_METADATA_TOPIC_ID => match t.partitions.as_slice() {
            [p] if p.partition == CLUSTER_METADATA_PARTITION => Some(p),
            _ => None,
        },
        _ => None,
    }
}
