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
//!    drops a response that comes after it gave up on the request),
//!    [`RaftCore::handle_leader_connection_lost`] when a connection closed and a reconnect
//!    was refused (the peer's process is gone), [`RaftCore::propose`] for
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
//!
//! # Where the code is
//!
//! This file holds the state, the accessors and the public inputs (with the output types).
//! The rest sits in one file per part of `KafkaRaftClient`, each an `impl RaftCore` block:
//! - `poll.rs` — the output queue and the poll loop: [`RaftCore::poll_output`],
//!   [`RaftCore::poll_timeout`], queueing requests and responses, and what is due by role
//!   (Kafka's `KafkaRaftClient.poll`, `pollCurrentState` and its `poll*` per role);
//! - `transition.rs` — every role change as the core sees it (`transitionTo*`,
//!   `maybeTransition`, `onBecomeLeader`'s LeaderChangeMessage);
//! - `election.rs` — Vote and pre-vote (KIP-996) on both sides, BeginQuorumEpoch and
//!   EndQuorumEpoch;
//! - `fetch.rs` — the leader's side of Fetch: validation, diverging epoch, snapshot id, the
//!   purgatory of parked fetches, the high watermark;
//! - `follower.rs` — the follower's and observer's side of Fetch: whom to fetch from (D1, D2),
//!   truncation, appending, following the high watermark;
//! - `snapshot.rs` — FetchSnapshot on both sides (KIP-630);
//! - `endpoints.rs` — KIP-853 leader endpoints: filled into what is sent, learned from
//!   what is received;
//! - `membership.rs` — KIP-853: the voter-set history kept in step with the log, this
//!   node's voter status, the leader's AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter and
//!   the `kraft.version` upgrade (the data: [`voter_set`], [`voter_history`]);
//! - `listener.rs` — what listeners are told: committed batches, snapshots, leader changes;
//! - `describe_quorum.rs` — DescribeQuorum.

pub mod config;
mod describe_quorum;
pub mod endpoints;
pub mod log;
pub mod message;
pub mod quorum_state;
pub mod rng;
pub mod role;
pub mod voter_history;
pub mod voter_set;

mod election;
mod fetch;
mod follower;
mod listener;
mod membership;
mod poll;
mod snapshot;
mod transition;

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use kraftd_log::SnapshotId;
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::ErrorCode;
use tracing::{debug, warn};

use self::config::RaftConfig;
use self::endpoints::{Endpoint, LearnedEndpoint};
use self::fetch::ParkedFetch;
use self::log::{LogError, RaftLog};
pub use self::membership::VoterChangeError;
use self::message::{ApiKind, RaftMessage, CLUSTER_METADATA_PARTITION, CLUSTER_METADATA_TOPIC};
use self::quorum_state::{QuorumState, QuorumStateData};
use self::rng::Rng;
pub use self::role::RoleName;
use self::role::{LeaderState, RequestTracker, Role};
use self::snapshot::SnapshotDownload;
use self::voter_history::VoterHistory;
use self::voter_set::VoterSet;

/// The most Fetch requests one leader parks at once; more are answered at once.
pub const MAX_PARKED_FETCHES: usize = 1024;
/// The most records one proposal may carry.
pub const MAX_RECORDS_PER_PROPOSAL: usize = 10_000;
/// The largest batch a proposal may make (Kafka's `KafkaRaftClient.MAX_BATCH_SIZE_BYTES`,
/// which the metadata log's `max.message.bytes` matches).
pub const MAX_BATCH_SIZE_BYTES: usize = 8 * 1024 * 1024;

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
    /// The voter change accepted with `token` ([`RaftCore::add_voter`],
    /// [`RaftCore::remove_voter`], [`RaftCore::update_voter`]) is answered: NONE once its
    /// VotersRecord committed, REQUEST_TIMED_OUT past its deadline, NOT_LEADER_OR_FOLLOWER
    /// when this node stopped leading first.
    VoterChangeDone {
        token: u64,
        error: ErrorCode,
        message: Option<String>,
    },
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
    /// Pre-votes started because the connection to the leader was lost (the crash
    /// failover rule), not by `fetch.timeout.ms`.
    pub connection_loss_pre_votes: u64,
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
    #[error("a proposal of {0} bytes is over the {MAX_BATCH_SIZE_BYTES}-byte batch limit")]
    TooLarge(usize),
    #[error("the log refused the leader's own batch: {0}")]
    LogRefused(String),
}

/// Errors from the core's inputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RaftError {
    /// The node must stop: continuing would break Raft's guarantees.
    #[error("fatal: {0}")]
    Fatal(String),
}

/// The sans-IO Raft node. See the module doc for the call order.
#[derive(Debug)]
pub struct RaftCore<L: RaftLog> {
    config: RaftConfig,
    node_id: i32,
    /// The voter sets over the log (KIP-853); the latest is in effect.
    voters: VoterHistory,
    log: L,
    rng: Rng,
    quorum: QuorumState,
    /// Exclusive: every offset below it is committed. Monotonic per incarnation.
    high_watermark: i64,
    /// The highest HW a leader has reported in a Fetch response, before it is capped at this
    /// node's log end: how far the committed log reaches, which a follower far behind (a
    /// restarted broker) needs to know it has not caught up yet.
    leader_high_watermark: i64,
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
    /// The earliest deadline in `parked` (None when empty), kept as fetches park and leave,
    /// so the next-deadline question asked after every event is O(1), not O(observers).
    parked_deadline_ms: Option<u64>,
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
    /// Leader endpoints learned from the wire (KIP-853), by leader id, at most
    /// [`endpoints::MAX_LEARNED_ENDPOINTS`]: what the driver routes to for an id that
    /// `controller.quorum.voters` gives no endpoint.
    learned_endpoints: BTreeMap<i32, LearnedEndpoint>,
}

impl<L: RaftLog> RaftCore<L> {
    /// A node `node_id` of a quorum with the static `voters` (`controller.quorum.voters`,
    /// `kraft.version` 0; empty for a dynamic quorum, whose voter set comes from the latest
    /// snapshot, the bootstrap checkpoint included, and the log), restored from `persisted`
    /// and `log`. It is an observer when its key is not a voter's.
    pub fn new(
        config: RaftConfig,
        node_id: i32,
        voters: impl IntoIterator<Item = i32>,
        persisted: Option<QuorumStateData>,
        log: L,
        seed: u64,
        now_ms: u64,
    ) -> Self {
        let ids: Vec<i32> = voters.into_iter().collect();
        let static_set = (!ids.is_empty())
            .then(|| VoterSet::from_static(ids, &config.voter_endpoints, &config.listener_name));
        let mut voters = VoterHistory::new(static_set);
        membership::load_history(&log, &mut voters);
        let mut rng = Rng::new(seed ^ (node_id as u64).wrapping_mul(0x1000_0000_01b3));
        let local_key = voter_set::ReplicaKey::new(node_id, config.directory_id);
        let is_voter = voters.latest().is_voter(local_key);
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
            leader_high_watermark: -1,
            delivered_offset: 0,
            outputs: VecDeque::new(),
            fetch_in_flight: None,
            next_correlation_id,
            fetch_backoff_until_ms: 0,
            bootstrap_cursor,
            flush_deadline_ms: None,
            flush_requested: false,
            parked: Vec::new(),
            parked_deadline_ms: None,
            snapshot_download: None,
            vote_requests: RequestTracker::default(),
            last_leader_notice: None,
            pending_leader_notice: None,
            stats: RaftStats::default(),
            last_not_leader_warning_ms: None,
            fatal: None,
            learned_endpoints: BTreeMap::new(),
        };
        if persisted != Some(core.quorum.durable()) {
            core.outputs
                .push_back(Output::PersistQuorumState(core.quorum.durable()));
        }
        let others = core.other_voters();
        if let Role::Resigned(r) = core.quorum.role_mut() {
            // A restarted leader tells the voters its epoch is over.
            r.end_quorum = RequestTracker::new(others.clone(), now_ms);
            r.preferred_successors = others;
        }
        if core.voter_set().len() == 1 && is_voter {
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

    pub fn config(&self) -> &RaftConfig {
        &self.config
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

    /// The endpoint of voter `id` this node names when naming it leader: the one
    /// `controller.quorum.voters` gives, else the one learned from the wire. The
    /// configuration wins for a static voter: the operator wrote the address this node can
    /// reach, while an advertised one may be unroutable from here (the D2 case) or stale.
    pub fn leader_endpoint(&self, id: i32) -> Option<Endpoint> {
        let own = (id == self.node_id)
            .then(|| self.config.local_listeners.get(&self.config.listener_name))
            .flatten();
        self.config
            .voter_endpoints
            .get(&id)
            .or(own)
            .or_else(|| self.voter_set().endpoint(id, &self.config.listener_name))
            .or_else(|| self.learned_endpoints.get(&id).map(|l| &l.endpoint))
            .cloned()
    }

    /// The endpoint a message named for leader `id` (KIP-853), with that message's epoch.
    pub fn learned_endpoint(&self, id: i32) -> Option<&LearnedEndpoint> {
        self.learned_endpoints.get(&id)
    }

    /// Every endpoint learned from the wire, by leader id.
    pub fn learned_endpoints(&self) -> &BTreeMap<i32, LearnedEndpoint> {
        &self.learned_endpoints
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

    /// Counters for metrics.
    pub fn stats(&self) -> &RaftStats {
        &self.stats
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
        self.learn_endpoints(&msg);
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
        if batch.len() > MAX_BATCH_SIZE_BYTES {
            return Err(ProposeError::TooLarge(batch.len()));
        }
        let range = match self.log.append_as_leader(batch, epoch) {
            Ok(range) => range,
            Err(e) => {
                // Nothing was appended; the log is as it was, so the node may go on.
                warn!(node = self.node_id, error = %e, "the log refused a proposal");
                return Err(ProposeError::LogRefused(e.to_string()));
            }
        };
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
        // KIP-853: a snapshot of a dynamic quorum carries the kraft.version and voter set at
        // its last contained offset in its header batch, as Kafka's `createSnapshot` writes
        // them, or the set would be lost with the log before it.
        let last = id.end_offset - 1;
        let kraft = self.voters.kraft_version_at(last);
        if kraft >= 1 {
            let voters = self.voters.voters_at(last).map(|s| s.to_record());
            let with = crate::snapshot::with_kraft_control(data, kraft, voters)
                .map_err(|e| refused(&format!("adding the voter set: {e}")))?;
            return self.log.store_snapshot(id, &with);
        }
        self.log.store_snapshot(id, data)
    }

    /// Deletes the log below the latest snapshot (whole batches or segments); returns the
    /// new log start offset. A fetcher below it is sent the snapshot.
    pub fn delete_log_before_latest_snapshot(&mut self) -> i64 {
        let start = self.log.delete_before_latest_snapshot();
        self.voters.truncate_old_entries(start);
        start
    }

    /// Graceful shutdown of a leader: resign and tell the voters (a no-op otherwise).
    pub fn resign(&mut self, now_ms: u64) {
        if matches!(self.quorum.role(), Role::Leader(_)) {
            self.become_resigned(now_ms);
            self.poll(now_ms);
        }
    }

    // ----- helpers -----

    /// KIP-853: the endpoint of the leader `msg` names goes with it, where its version has
    /// room (Kafka's `RaftUtil.singleton*`). This node's own from the configuration when it
    /// is the one named; another's as [`RaftCore::leader_endpoint`] knows it.
    fn fill_endpoints(&self, msg: &mut RaftMessage) {
        let Some((leader_id, _)) = endpoints::named_leader(msg) else {
            return;
        };
        let leader = self.leader_endpoint(leader_id);
        let version = msg.kind().version();
        endpoints::fill_endpoints(msg, version, &self.config.listener_name, leader.as_ref());
    }

    /// KIP-853: remembers the endpoint a message gives for the voter it names leader, when
    /// its epoch is not older than ours (Kafka ignores such responses in
    /// `maybeHandleCommonResponse`).
    fn learn_endpoints(&mut self, msg: &RaftMessage) {
        let Some((leader_id, epoch, endpoint)) =
            endpoints::leader_endpoint_in(msg, &self.config.listener_name)
        else {
            return;
        };
        let known = self.is_voter_id(leader_id) || self.is_dynamic_quorum();
        if leader_id == self.node_id || !known || epoch < self.epoch() {
            return;
        }
        if endpoints::learn(&mut self.learned_endpoints, leader_id, epoch, endpoint) {
            debug!(
                node = self.node_id,
                leader_id,
                epoch,
                endpoint = %self.learned_endpoints[&leader_id].endpoint.address(),
                "learned the leader's endpoint"
            );
        }
    }

    fn other_voters(&self) -> Vec<i32> {
        self.voter_set()
            .ids()
            .filter(|v| *v != self.node_id)
            .collect()
    }

    fn random_election_timeout(&mut self) -> u64 {
        random_election_timeout(&self.config, &mut self.rng)
    }

    fn has_valid_cluster_id(&self, cluster_id: Option<&str>) -> bool {
        cluster_id.is_none_or(|c| c == self.config.cluster_id)
    }

    /// Kafka's `validateLeaderOnlyRequest`, for Fetch and FetchSnapshot: the error for a
    /// request made in `request_epoch`, or `None` when this node leads that epoch.
    fn validate_leader_only_request(&self, request_epoch: i32) -> Option<ErrorCode> {
        let epoch = self.epoch();
        if request_epoch < epoch {
            Some(ErrorCode::FencedLeaderEpoch)
        } else if request_epoch > epoch {
            Some(ErrorCode::UnknownLeaderEpoch)
        } else if !matches!(self.quorum.role(), Role::Leader(_)) {
            Some(ErrorCode::NotLeaderOrFollower)
        } else {
            None
        }
    }

    /// The committed log's end as far as this node knows: the HW on a leader, the highest
    /// HW a leader reported on a follower or observer (which may be above this node's own
    /// HW, capped at its log end); -1 before any. A follower's own HW does not count: after
    /// a restart it comes from local state (a snapshot's end), and a state machine that took
    /// it for the leader's would call itself caught up before fetching anything.
    pub fn leader_high_watermark(&self) -> i64 {
        if self.role() == RoleName::Leader {
            self.high_watermark
        } else {
            self.leader_high_watermark
        }
    }

    /// The one place the HW changes (leader, follower and snapshot install alike): never
    /// back, never past the log end.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::log::MemoryLog;

    /// A single voter that has elected itself.
    fn leader() -> (RaftCore<MemoryLog>, u64) {
        let mut core = RaftCore::new(RaftConfig::new("c"), 1, [1], None, MemoryLog::new(), 7, 0);
        let mut now = 0;
        while core.role() != RoleName::Leader {
            now = core.poll_timeout().max(now + 1);
            core.handle_timeout(now);
            while core.poll_output().is_some() {}
        }
        (core, now)
    }

    #[test]
    fn only_a_leader_reports_its_own_high_watermark_as_the_leaders() {
        // A restarted observer knows no leader's HW until a fetch response says one: its own
        // (0 at start) must not pass for it, or a state machine would think itself caught up.
        let observer = RaftCore::new(
            RaftConfig::new("c"),
            4,
            [1, 2, 3],
            None,
            MemoryLog::new(),
            7,
            0,
        );
        assert_eq!(observer.high_watermark(), 0);
        assert_eq!(observer.leader_high_watermark(), -1);
        let (core, _) = leader();
        assert_eq!(core.leader_high_watermark(), core.high_watermark());
    }

    #[test]
    fn a_proposal_over_the_batch_limit_is_refused_and_nothing_is_appended() {
        let (mut core, now) = leader();
        let end = core.log().end_offset();
        let huge = Bytes::from(vec![0u8; MAX_BATCH_SIZE_BYTES + 1]);
        assert!(matches!(
            core.propose(now, &[huge]),
            Err(ProposeError::TooLarge(n)) if n > MAX_BATCH_SIZE_BYTES
        ));
        assert_eq!(core.log().end_offset(), end);
        assert!(!core.is_fatal());
        let (first, last) = core.propose(now, &[Bytes::from_static(b"ok")]).unwrap();
        assert_eq!((first, last), (end, end));
    }
}
