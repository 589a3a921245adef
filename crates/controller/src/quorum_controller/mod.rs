//! The QuorumController as a deterministic, sans-IO state machine, after Kafka's
//! `org.apache.kafka.controller.QuorumController`.
//!
//! One event loop owns everything, so there are no locks: callers queue operations with
//! [`QuorumController::submit_write`] / [`QuorumController::submit_read`], the driver calls
//! [`QuorumController::process`], feeds Raft's outputs in ([`QuorumController::handle_commit`],
//! [`QuorumController::handle_leader_change`]) and the clock ([`QuorumController::tick`]),
//! and collects finished operations with [`QuorumController::drain_completions`].
//!
//! Two images are kept, as Kafka's snapshot registry does:
//! - the *committed* image (up to the committed offset): reads answer from it, standbys
//!   only have this one, and the leader reverts to it when it loses leadership;
//! - the *latest* image (up to the last written offset): the active controller runs its
//!   pure managers against it, so an operation sees the effects of operations proposed
//!   before it even if they have not committed yet.
//!
//! A write's reply is released only once the committed offset reaches the write's last
//! record. Losing leadership, or a refused proposal, reverts the latest image to the
//! committed one and fails every pending operation with NOT_CONTROLLER.
//!
//! - [`raft`]: the interface the Raft layer satisfies.
//! - [`ops`]: write and read operations and the managers they run against.

pub mod ops;
pub mod raft;

use std::collections::VecDeque;

use kraftd_protocol::metadata::NoOpRecord;
use kraftd_protocol::metadata_version::MetadataVersion;
use kraftd_protocol::{ErrorCode, MetadataRecord};

use crate::control::{ControllerResult, MAX_RECORDS_PER_BATCH};
use crate::image::METADATA_VERSION_FEATURE;
use crate::{MetadataDelta, MetadataImage, ReplayError};

pub use ops::{Managers, ManagersConfig, ReadOp, WriteContext, WriteOp};
pub use raft::{CommittedBatch, ProposeError, RaftClient};

/// Kafka's `metadata.max.idle.interval.ms` default: how long the active controller may
/// write nothing before it appends a NoOpRecord so followers see the high watermark move.
pub const METADATA_MAX_IDLE_INTERVAL_MS_DEFAULT: u64 = 500;
/// The most operations that may wait in the queue; more are refused.
pub const MAX_QUEUED_EVENTS_DEFAULT: usize = 10_000;

/// The most stale brokers fenced in one tick; the rest wait for the next tick.
pub const MAX_FENCED_BROKERS_PER_TICK: usize = 16;

/// Kafka's `leader.imbalance.check.interval.seconds` default (300), in milliseconds.
pub const LEADER_IMBALANCE_CHECK_INTERVAL_MS_DEFAULT: u64 = 300_000;
/// Kafka's internal `unclean.leader.election.interval.ms` default (5 minutes).
pub const UNCLEAN_LEADER_ELECTION_INTERVAL_MS_DEFAULT: u64 = 300_000;
/// How soon a periodic election round that stopped at its cap runs again (Kafka delays an
/// immediate reschedule by 10 ms so queued requests go first).
const PERIODIC_RERUN_DELAY_MS: u64 = 10;

/// The QuorumController's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct QuorumControllerConfig {
    /// This controller's node id (Kafka's `node.id`).
    pub node_id: i32,
    /// Kafka's `metadata.max.idle.interval.ms`; 0 disables no-op records.
    pub metadata_max_idle_interval_ms: u64,
    /// How often the active controller moves leadership back to preferred replicas:
    /// `leader.imbalance.check.interval.seconds` when `auto.leader.rebalance.enable`, `None`
    /// when it is off (Kafka's `leaderImbalanceCheckIntervalNs`).
    pub leader_imbalance_check_interval_ms: Option<u64>,
    /// How often the active controller tries unclean elections for leaderless partitions
    /// of topics that allow them (Kafka's internal `unclean.leader.election.interval.ms`).
    pub unclean_leader_election_interval_ms: u64,
    pub max_queued_events: usize,
    pub managers: ManagersConfig,
    /// The records an active controller writes first when the log holds no
    /// `metadata.version` yet (Kafka's bootstrap metadata from `bootstrap.checkpoint`): the
    /// feature levels the cluster starts at.
    pub bootstrap_records: Vec<MetadataRecord>,
}

/// The controller's periodic election tasks (Kafka's `maybeBalancePartitionLeaders` and
/// `maybeElectUncleanLeaders`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PeriodicTask {
    BalanceLeaders,
    ElectUncleanLeaders,
}

/// When a periodic election round runs next (Kafka's `ImbalanceSchedule`): after the
/// interval, at once (the last round stopped at its cap), or at a time already chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PeriodicSchedule {
    Deferred,
    Immediately,
    At(u64),
}

impl PeriodicSchedule {
    /// Whether the round is due at `now_ms`, scheduling it first if it is `needed` and not
    /// scheduled yet (Kafka schedules after every write; a tick sees the same state).
    fn due(&mut self, needed: bool, interval_ms: u64, now_ms: u64) -> bool {
        match *self {
            PeriodicSchedule::Deferred if needed => {
                *self = PeriodicSchedule::At(now_ms.saturating_add(interval_ms));
            }
            PeriodicSchedule::Immediately if needed => {
                *self = PeriodicSchedule::At(now_ms + PERIODIC_RERUN_DELAY_MS);
            }
            _ => {}
        }
        matches!(*self, PeriodicSchedule::At(at) if now_ms >= at)
    }

    /// The round ran at `now_ms` and stopped at its cap (`more`) or not; rescheduled as
    /// Kafka does right after the write: at once if it stopped at the cap, else after the
    /// interval if a round is still `needed`.
    fn ran(&mut self, more: bool, needed: bool, interval_ms: u64, now_ms: u64) {
        *self = if more {
            PeriodicSchedule::Immediately
        } else {
            PeriodicSchedule::Deferred
        };
        self.due(needed, interval_ms, now_ms);
    }
}

/// Identifies a submitted operation; its [`Completion`] carries the same id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(pub u64);

/// Why an operation failed without a response of its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControllerError {
    /// This node is not (or is no longer) the active controller; `leader_id` is the current
    /// leader if known.
    #[error("not the active controller (leader: {leader_id:?})")]
    NotController { leader_id: Option<i32> },
    /// The event queue is full.
    #[error("the controller's event queue is full")]
    QueueFull,
    /// The operation's records did not replay (a manager bug); nothing was written.
    #[error("the operation's records failed to replay: {0}")]
    InvalidRecords(String),
}

/// A finished operation: its response, or why it failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion<R> {
    pub id: OpId,
    pub result: Result<R, ControllerError>,
}

/// Who leads the metadata quorum, as Raft last reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderAndEpoch {
    pub leader_id: Option<i32>,
    pub epoch: i32,
}

/// The controller. `R` is the caller's response type (often an enum over the APIs).
pub struct QuorumController<R> {
    config: QuorumControllerConfig,
    managers: Managers,
    committed: MetadataImage,
    committed_offset: i64,
    latest: MetadataImage,
    last_written_offset: i64,
    leader: LeaderAndEpoch,
    /// The epoch this node is active controller in, if it is.
    active_epoch: Option<i32>,
    queue: VecDeque<(OpId, Event<R>)>,
    /// Writes proposed and waiting for their last offset to commit, ascending offsets.
    pending: VecDeque<Pending<R>>,
    completions: Vec<Completion<R>>,
    now_ms: u64,
    last_write_ms: u64,
    next_op_id: u64,
    /// What the last committed batch replayed, for the node's publishers.
    commit_delta: Option<MetadataDelta>,
    /// The next preferred-leader balancing round.
    balance_schedule: PeriodicSchedule,
    /// The next round of unclean elections.
    unclean_schedule: PeriodicSchedule,
    /// When the active controller next sweeps expired delegation tokens (Kafka's
    /// `maybeScheduleNextExpiredDelegationTokenSweep`); `None` until it is active with
    /// tokens enabled.
    token_sweep_at: Option<u64>,
}

enum Event<R> {
    Write(WriteOp<R>),
    Read(ReadOp<R>),
}

struct Pending<R> {
    /// None for the controller's own writes (no-ops, fencing).
    reply: Option<(OpId, R)>,
    last_offset: i64,
}

impl Default for QuorumControllerConfig {
    fn default() -> Self {
        QuorumControllerConfig {
            node_id: 0,
            metadata_max_idle_interval_ms: METADATA_MAX_IDLE_INTERVAL_MS_DEFAULT,
            leader_imbalance_check_interval_ms: Some(LEADER_IMBALANCE_CHECK_INTERVAL_MS_DEFAULT),
            unclean_leader_election_interval_ms: UNCLEAN_LEADER_ELECTION_INTERVAL_MS_DEFAULT,
            max_queued_events: MAX_QUEUED_EVENTS_DEFAULT,
            managers: ManagersConfig::default(),
            bootstrap_records: Vec::new(),
        }
    }
}

impl ControllerError {
    /// The Kafka error code to put in a response.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            ControllerError::NotController { .. } => ErrorCode::NotController,
            ControllerError::QueueFull => ErrorCode::ThrottlingQuotaExceeded,
            ControllerError::InvalidRecords(_) => ErrorCode::UnknownServerError,
        }
    }
}

impl<R> std::fmt::Debug for QuorumController<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuorumController")
            .field("node_id", &self.config.node_id)
            .field("leader", &self.leader)
            .field("active_epoch", &self.active_epoch)
            .field("committed_offset", &self.committed_offset)
            .field("last_written_offset", &self.last_written_offset)
            .field("queued", &self.queue.len())
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl<R: 'static> QuorumController<R> {
    /// A controller with an empty log: a standby until Raft names it leader.
    pub fn new(config: QuorumControllerConfig) -> Self {
        let managers = Managers::new(config.managers.clone());
        QuorumController {
            config,
            managers,
            committed: MetadataImage::empty().with_controller_indexes(),
            committed_offset: -1,
            latest: MetadataImage::empty().with_controller_indexes(),
            last_written_offset: -1,
            leader: LeaderAndEpoch {
                leader_id: None,
                epoch: 0,
            },
            active_epoch: None,
            queue: VecDeque::new(),
            pending: VecDeque::new(),
            completions: Vec::new(),
            now_ms: 0,
            last_write_ms: 0,
            next_op_id: 0,
            commit_delta: None,
            balance_schedule: PeriodicSchedule::Deferred,
            unclean_schedule: PeriodicSchedule::Deferred,
            token_sweep_at: None,
        }
    }

    pub fn node_id(&self) -> i32 {
        self.config.node_id
    }

    /// Whether this node is the active controller.
    pub fn is_active(&self) -> bool {
        self.active_epoch.is_some()
    }

    pub fn leader(&self) -> LeaderAndEpoch {
        self.leader
    }

    /// The image up to the committed offset.
    pub fn committed_image(&self) -> &MetadataImage {
        &self.committed
    }

    /// The offset of the last committed record, -1 before any.
    pub fn committed_offset(&self) -> i64 {
        self.committed_offset
    }

    /// The image including proposed but uncommitted records (the committed image on a
    /// standby).
    pub fn latest_image(&self) -> &MetadataImage {
        &self.latest
    }

    /// The offset of the last record written (proposed), at least the committed offset.
    pub fn last_written_offset(&self) -> i64 {
        self.last_written_offset
    }

    /// How many proposed writes wait for their commit.
    pub fn pending_writes(&self) -> usize {
        self.pending.len()
    }

    /// How many operations wait in the queue for [`process`](Self::process).
    pub fn queued_events(&self) -> usize {
        self.queue.len()
    }

    /// Queues a write; it runs at the next [`process`](Self::process).
    pub fn submit_write(&mut self, op: WriteOp<R>) -> Result<OpId, ControllerError> {
        self.enqueue(Event::Write(op))
    }

    /// Queues a read of the committed image.
    pub fn submit_read(&mut self, op: ReadOp<R>) -> Result<OpId, ControllerError> {
        self.enqueue(Event::Read(op))
    }

    /// Runs every queued operation in order. Writes on a non-active node fail with
    /// NOT_CONTROLLER; reads are answered on any node.
    pub fn process(&mut self, raft: &mut impl RaftClient) {
        self.maybe_bootstrap(raft);
        while let Some((id, event)) = self.queue.pop_front() {
            match event {
                Event::Read(op) => {
                    let response = (op.0)(&self.committed);
                    self.complete(id, Ok(response));
                }
                Event::Write(op) => match self.write(raft, op.0) {
                    Ok((last_offset, response)) => {
                        if last_offset <= self.committed_offset {
                            self.complete(id, Ok(response));
                        } else {
                            self.pending.push_back(Pending {
                                reply: Some((id, response)),
                                last_offset,
                            });
                        }
                    }
                    Err(error) => self.complete(id, Err(error)),
                },
            }
        }
    }

    /// Takes every operation finished so far.
    pub fn drain_completions(&mut self) -> Vec<Completion<R>> {
        std::mem::take(&mut self.completions)
    }

    /// A committed batch from Raft (Kafka's `handleCommit`): replayed into the committed
    /// image on every node; on the active controller it releases the replies whose records
    /// are now committed. An error means the committed log cannot be replayed, which the
    /// caller must treat as fatal for this node; the committed state is then unchanged.
    pub fn handle_commit(&mut self, batch: &CommittedBatch) -> Result<(), ReplayError> {
        if batch.last_offset <= self.committed_offset {
            // Already seen (a duplicate delivery after a reconnect, say).
            return Ok(());
        }
        let mut delta = MetadataDelta::new(&self.committed);
        for (offset, record) in &batch.records {
            if *offset <= self.committed_offset {
                continue;
            }
            delta.replay(record)?;
        }
        self.committed = delta.apply();
        self.committed_offset = batch.last_offset;
        self.commit_delta = Some(delta);
        let ours = self.active_epoch == Some(batch.epoch);
        if ours
            && self.committed_offset > self.last_written_offset
            && batch
                .records
                .iter()
                .all(|(o, _)| *o <= self.last_written_offset)
        {
            // The Raft layer's own control records in this epoch (the VotersRecord of an
            // AddRaftVoter / RemoveRaftVoter, the KRaftVersionRecord of an upgrade,
            // KIP-853): the log moved past what this controller wrote without superseding
            // it, and its next write goes after them. Everything it wrote is committed.
            self.last_written_offset = self.committed_offset;
        }
        if ours && self.committed_offset <= self.last_written_offset {
            while let Some(first) = self.pending.front() {
                if first.last_offset > self.committed_offset {
                    break;
                }
                if let Some(Pending {
                    reply: Some((id, response)),
                    ..
                }) = self.pending.pop_front()
                {
                    self.complete(id, Ok(response));
                }
            }
        } else {
            // A standby follows the committed log; an active controller that sees commits
            // of another epoch, or beyond what it wrote, has been superseded and starts over
            // from them.
            if self.is_active() {
                tracing::warn!(
                    committed = self.committed_offset,
                    last_written = self.last_written_offset,
                    "committed offset passed the last written offset; renouncing"
                );
                self.renounce();
            }
            self.latest = self.committed.clone();
            self.last_written_offset = self.committed_offset;
        }
        debug_assert!(self.last_written_offset >= self.committed_offset);
        Ok(())
    }

    /// The delta the last [`handle_commit`](Self::handle_commit) replayed onto the previous
    /// committed image (the result is [`committed_image`](Self::committed_image)), once:
    /// what the node's publishers are fed after each batch.
    pub fn take_commit_delta(&mut self) -> Option<MetadataDelta> {
        self.commit_delta.take()
    }

    /// Raft names a new leader (Kafka's `handleLeaderChange`). The driver reports this node
    /// as leader only once its committed offset has reached the epoch's start (the Raft
    /// leader's epoch-start record), as Kafka's Raft client does, so the next write offset
    /// is the committed offset plus one.
    pub fn handle_leader_change(&mut self, leader_id: Option<i32>, epoch: i32) {
        self.handle_leader_change_at(leader_id, epoch, None);
    }

    /// [`handle_leader_change`](Self::handle_leader_change) with the Raft log's end offset
    /// when this node is named leader (Kafka's `claim` reads `raftClient.logEndOffset()`):
    /// the leader's epoch-start record sits there uncommitted, so the first write goes
    /// after it. Without it the controller writes after its committed offset.
    pub fn handle_leader_change_at(
        &mut self,
        leader_id: Option<i32>,
        epoch: i32,
        log_end_offset: Option<i64>,
    ) {
        if epoch < self.leader.epoch {
            return;
        }
        self.leader = LeaderAndEpoch { leader_id, epoch };
        let leads_now = leader_id == Some(self.config.node_id);
        if let Some(active) = self.active_epoch {
            if leads_now && active == epoch {
                return;
            }
            self.renounce();
        }
        if leads_now {
            self.claim(epoch, log_end_offset);
        }
    }

    /// The Raft leader appended control records of its own (a voter change's VotersRecord,
    /// the `kraft.version` upgrade) at `base_offset..end_offset` in `epoch`. Right after what
    /// this active controller wrote, they only move its next write past them (Kafka's
    /// controller asks its Raft client for the offset, so never predicts into them);
    /// anywhere else, a write of its own is in flight at those offsets and is refused, and
    /// the refusal renounces as before.
    pub fn handle_leader_append(&mut self, epoch: i32, base_offset: i64, end_offset: i64) {
        if self.active_epoch == Some(epoch) && base_offset == self.last_written_offset + 1 {
            self.last_written_offset = end_offset - 1;
        }
    }

    /// The clock (Kafka's periodic tasks): on the active controller, fences brokers whose
    /// session expired, runs the periodic preferred and unclean elections when due, and
    /// appends a no-op record after `metadata.max.idle.interval.ms` without writes.
    pub fn tick(&mut self, now_ms: u64, raft: &mut impl RaftClient) {
        self.now_ms = self.now_ms.max(now_ms);
        if !self.is_active() {
            return;
        }
        self.maybe_bootstrap(raft);
        for _ in 0..MAX_FENCED_BROKERS_PER_TICK {
            let write = self.write(raft, |ctx: &mut WriteContext<'_>| {
                ctx.managers.cluster.maybe_fence_one_stale_broker(
                    ctx.image,
                    &ctx.managers.heartbeats,
                    ctx.now_ms,
                )
            });
            match write {
                Ok((last_offset, Some(broker))) => {
                    tracing::info!(broker, last_offset, "fenced a broker whose session expired");
                    self.pending.push_back(Pending {
                        reply: None,
                        last_offset,
                    });
                }
                Ok((_, None)) | Err(_) => break,
            }
        }
        self.maybe_run_periodic(PeriodicTask::BalanceLeaders, raft);
        self.maybe_run_periodic(PeriodicTask::ElectUncleanLeaders, raft);
        self.maybe_sweep_expired_tokens(raft);
        let idle = self.config.metadata_max_idle_interval_ms;
        if self.is_active() && idle > 0 && self.now_ms.saturating_sub(self.last_write_ms) >= idle {
            let write = self.write(raft, |_ctx: &mut WriteContext<'_>| {
                ControllerResult::of(vec![MetadataRecord::NoOp(NoOpRecord::default())], ())
            });
            if let Ok((last_offset, ())) = write {
                self.pending.push_back(Pending {
                    reply: None,
                    last_offset,
                });
            }
        }
    }

    /// Runs `task` if it is due (Kafka's `maybeBalancePartitionLeaders` and
    /// `maybeElectUncleanLeaders` tasks): the first round one interval after the need was
    /// seen, the next at once if one stopped at its cap. Preferred-leader balancing needs
    /// `auto.leader.rebalance.enable` and a partition not led by its preferred replica; unclean
    /// elections, a leaderless partition (so one enabled after a partition went offline
    /// happens without waiting for a broker or ISR change).
    fn maybe_run_periodic(&mut self, task: PeriodicTask, raft: &mut impl RaftClient) {
        let interval = match task {
            PeriodicTask::BalanceLeaders => self.config.leader_imbalance_check_interval_ms,
            PeriodicTask::ElectUncleanLeaders => {
                Some(self.config.unclean_leader_election_interval_ms)
            }
        };
        let Some(interval) = interval else {
            return;
        };
        let needed = |image: &MetadataImage| match task {
            PeriodicTask::BalanceLeaders => image.topics.any_imbalanced(),
            PeriodicTask::ElectUncleanLeaders => image.topics.any_leaderless(),
        };
        let now = self.now_ms;
        let due = needed(&self.latest);
        if !self.is_active() || !self.schedule(task).due(due, interval, now) {
            return;
        }
        let write = self.write(raft, |ctx: &mut WriteContext<'_>| {
            let replication = &ctx.managers.replication;
            let result = match task {
                PeriodicTask::BalanceLeaders => {
                    replication.maybe_balance_partition_leaders(ctx.image)
                }
                PeriodicTask::ElectUncleanLeaders => {
                    replication.maybe_elect_unclean_leaders(ctx.image)
                }
            };
            let records = result.records.len();
            result.map(|more| (records, more))
        });
        let more = self.periodic_written(task, write);
        let still = needed(&self.latest);
        self.schedule(task).ran(more, still, interval, now);
    }

    /// Removes expired delegation tokens every `delegation.token.expiry.check.interval.ms`
    /// while active with tokens enabled (Kafka's `sweepExpiredDelegationTokens` task): the
    /// first sweep one interval after becoming active, the next at once if one stopped at
    /// its cap.
    fn maybe_sweep_expired_tokens(&mut self, raft: &mut impl RaftClient) {
        let config = self.managers.delegation_tokens.config();
        if !self.is_active() || !config.enabled() {
            return;
        }
        let interval = config.expiry_check_interval_ms.max(1) as u64;
        let now = self.now_ms;
        let at = *self
            .token_sweep_at
            .get_or_insert(now.saturating_add(interval));
        if now < at {
            return;
        }
        let write = self.write(raft, |ctx: &mut WriteContext<'_>| {
            let result = ctx
                .managers
                .delegation_tokens
                .sweep_expired(ctx.image, ctx.now_ms as i64);
            let records = result.records.len();
            result.map(|more| (records, more))
        });
        let more = match write {
            Ok((last_offset, (records, more))) => {
                if records > 0 {
                    tracing::info!(records, last_offset, "expired delegation tokens removed");
                    self.pending.push_back(Pending {
                        reply: None,
                        last_offset,
                    });
                }
                more
            }
            Err(error) => {
                tracing::warn!(%error, "expired delegation tokens not removed");
                false
            }
        };
        let delay = if more {
            PERIODIC_RERUN_DELAY_MS
        } else {
            interval
        };
        self.token_sweep_at = Some(now.saturating_add(delay));
    }

    fn schedule(&mut self, task: PeriodicTask) -> &mut PeriodicSchedule {
        match task {
            PeriodicTask::BalanceLeaders => &mut self.balance_schedule,
            PeriodicTask::ElectUncleanLeaders => &mut self.unclean_schedule,
        }
    }

    /// Queues a periodic round's write for its commit and logs it as Kafka does; whether
    /// the round stopped at its cap.
    fn periodic_written(
        &mut self,
        task: PeriodicTask,
        write: Result<(i64, (usize, bool)), ControllerError>,
    ) -> bool {
        match write {
            Ok((last_offset, (records, more))) => {
                if records > 0 {
                    tracing::info!(
                        ?task,
                        records,
                        last_offset,
                        rescheduling_immediately = more,
                        "periodic elections written"
                    );
                    self.pending.push_back(Pending {
                        reply: None,
                        last_offset,
                    });
                }
                more
            }
            Err(error) => {
                tracing::warn!(?task, %error, "periodic elections not written");
                false
            }
        }
    }

    /// Raft refused an append this controller scheduled in `epoch` (Kafka: the
    /// `scheduleAtomicAppend` failure path): everything written after the committed offset is
    /// in doubt, so the controller renounces and Raft resigns, as Kafka does.
    pub fn handle_append_refused(&mut self, epoch: i32, raft: &mut impl RaftClient) {
        if self.active_epoch == Some(epoch) {
            tracing::warn!(epoch, "Raft refused an append; renouncing leadership");
            raft.resign(epoch);
            self.renounce();
        }
    }

    /// Raft delivered a committed snapshot (KIP-630): the state below `end_offset` is
    /// `image`, and committed batches resume at `end_offset`. A lagging standby or a node
    /// restarting behind the log start takes this path; an active controller never does
    /// (it is never behind its own log start), and renounces if it happens.
    pub fn handle_snapshot(&mut self, image: MetadataImage, end_offset: i64) {
        if end_offset - 1 <= self.committed_offset {
            return;
        }
        if self.is_active() {
            tracing::warn!(
                end_offset,
                "a snapshot past the committed offset; renouncing"
            );
            self.renounce();
        }
        // A snapshot loads as any image does; the controller indexes it once here.
        self.committed = image.with_controller_indexes();
        self.committed_offset = end_offset - 1;
        self.latest = self.committed.clone();
        self.last_written_offset = self.committed_offset;
    }

    /// The first active controller of a new cluster writes the bootstrap records (Kafka's
    /// `ActivationRecordsGenerator` for an empty log), before any other write.
    fn maybe_bootstrap(&mut self, raft: &mut impl RaftClient) {
        if !self.is_active()
            || self.config.bootstrap_records.is_empty()
            || self.latest.features.metadata_version.is_some()
        {
            return;
        }
        let records = self.config.bootstrap_records.clone();
        tracing::info!(count = records.len(), "writing the bootstrap metadata");
        let write = self.write(raft, move |_ctx: &mut WriteContext<'_>| {
            ControllerResult::of(records, ())
        });
        if let Ok((last_offset, ())) = write {
            self.pending.push_back(Pending {
                reply: None,
                last_offset,
            });
        }
    }

    fn enqueue(&mut self, event: Event<R>) -> Result<OpId, ControllerError> {
        if self.queue.len() >= self.config.max_queued_events {
            return Err(ControllerError::QueueFull);
        }
        let id = OpId(self.next_op_id);
        self.next_op_id += 1;
        self.queue.push_back((id, event));
        Ok(id)
    }

    fn complete(&mut self, id: OpId, result: Result<R, ControllerError>) {
        self.completions.push(Completion { id, result });
    }

    fn not_controller(&self) -> ControllerError {
        ControllerError::NotController {
            leader_id: self.leader.leader_id,
        }
    }

    /// Runs one write on the active controller (Kafka's `ControllerWriteEvent.run`): the
    /// manager against the latest image, the records replayed into a new latest image
    /// before they are proposed (so a bad result writes nothing), then proposed at the
    /// predicted offset. Returns the offset the reply waits for and the response.
    fn write<T>(
        &mut self,
        raft: &mut impl RaftClient,
        op: impl FnOnce(&mut WriteContext<'_>) -> ControllerResult<T>,
    ) -> Result<(i64, T), ControllerError> {
        let Some(epoch) = self.active_epoch else {
            return Err(self.not_controller());
        };
        let next_offset = self.last_written_offset + 1;
        let result = {
            let mut ctx = WriteContext {
                image: &self.latest,
                managers: &mut self.managers,
                next_offset,
                now_ms: self.now_ms,
            };
            op(&mut ctx)
        };
        if result.records.is_empty() {
            // Nothing to write, but the reply may rest on uncommitted state: it waits for
            // everything written so far, as Kafka does.
            return Ok((self.last_written_offset, result.response));
        }
        let mut delta = MetadataDelta::new(&self.latest);
        for record in &result.records {
            if let Err(error) = delta.replay(record) {
                tracing::error!(%error, "an operation produced records that do not replay");
                return Err(ControllerError::InvalidRecords(error.to_string()));
            }
        }
        // A result that need not commit as one (Kafka's `ControllerResult.of`: fencing a
        // broker that leads 20,000 partitions) goes in batches of at most what Raft takes
        // in one proposal, as Kafka's `appendRecords` splits by `maxRecordsPerBatch`; an
        // atomic one goes whole (Raft refuses it if too large).
        let batch = if result.is_atomic {
            result.records.len()
        } else {
            MAX_RECORDS_PER_BATCH
        };
        // The records go out at the versions of the level they were made under; the bootstrap
        // records (no level yet) at the level they finalize.
        let metadata_version = match self.latest.features.metadata_version {
            Some(_) => self.latest.features.version(),
            None => result
                .records
                .iter()
                .rev()
                .find_map(|r| match r {
                    MetadataRecord::FeatureLevel(f) if f.name == METADATA_VERSION_FEATURE => {
                        MetadataVersion::from_feature_level(f.feature_level).ok()
                    }
                    _ => None,
                })
                .unwrap_or(MetadataVersion::LATEST_PRODUCTION),
        };
        let mut base = next_offset;
        for chunk in result.records.chunks(batch.max(1)) {
            match raft.propose(epoch, base, metadata_version, chunk) {
                Ok((base_offset, last_offset)) => {
                    assert_eq!(
                        base_offset, base,
                        "Raft placed the batch at {base_offset}, not the required {base}"
                    );
                    let expected_last = base + chunk.len() as i64 - 1;
                    assert_eq!(
                        last_offset, expected_last,
                        "Raft reported last offset {last_offset} for a batch of {} records at {base}",
                        chunk.len()
                    );
                    base = last_offset + 1;
                }
                Err(error) => {
                    tracing::warn!(%error, epoch, "proposal refused; renouncing leadership");
                    raft.resign(epoch);
                    self.renounce();
                    return Err(self.not_controller());
                }
            }
        }
        let last_offset = base - 1;
        self.latest = delta.apply();
        self.last_written_offset = last_offset;
        self.last_write_ms = self.now_ms;
        Ok((last_offset, result.response))
    }

    /// Becomes the active controller for `epoch` (Kafka's `claim`).
    fn claim(&mut self, epoch: i32, log_end_offset: Option<i64>) {
        tracing::info!(
            epoch,
            committed = self.committed_offset,
            "becoming the active controller"
        );
        debug_assert!(self.pending.is_empty());
        self.active_epoch = Some(epoch);
        self.latest = self.committed.clone();
        // Between the committed offset and the log end there are only the epoch-start
        // control records: Raft names a leader only once everything before its epoch is
        // committed and delivered.
        self.last_written_offset = self
            .committed_offset
            .max(log_end_offset.map_or(i64::MIN, |end| end - 1));
        self.last_write_ms = self.now_ms;
        self.managers
            .heartbeats
            .activate(&self.committed, self.now_ms);
    }

    /// Stops being active (Kafka's `renounce`): reverts to the committed image and fails
    /// every pending operation with NOT_CONTROLLER.
    fn renounce(&mut self) {
        tracing::info!(epoch = ?self.active_epoch, "renouncing leadership");
        self.active_epoch = None;
        self.balance_schedule = PeriodicSchedule::Deferred;
        self.unclean_schedule = PeriodicSchedule::Deferred;
        self.token_sweep_at = None;
        self.latest = self.committed.clone();
        self.last_written_offset = self.committed_offset;
        let error = self.not_controller();
        while let Some(pending) = self.pending.pop_front() {
            if let Some((id, _)) = pending.reply {
                self.complete(id, Err(error.clone()));
            }
        }
    }
}
