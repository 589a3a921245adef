//! One hosted topic partition (Kafka's `cluster.Partition`): its log, its role at a leader
//! epoch, and — as leader — what it knows of each follower, the ISR and the high watermark.
//!
//! Synchronous and clock-free: every call takes `now_ms`, nothing here waits, spawns or
//! talks to the network. The [`ReplicaManager`](super::replica_manager) holds each
//! partition under a mutex, does the waiting (produce and fetch purgatories), sends the
//! AlterPartition requests this module asks for, and runs reads
//! ([`PendingRead`]) outside the lock. That keeps the replication rules of seed 001 in one
//! place a test can drive step by step.
//!
//! The rules, with the seed's names:
//! - R1: the leader's HW is the smallest log end offset among the *maximal* ISR (the
//!   committed ISR plus a pending addition — or the old, larger ISR while a shrink is in
//!   flight) and any caught-up, eligible replica about to join; it never decreases.
//! - R2: a follower whose last caught-up time is older than `replica.lag.time.max.ms` is
//!   shrunk out; one whose fetch reached the HW (and this epoch's start) is added; one ISR
//!   change in flight at a time, confirmed by the controller before it counts.
//! - R3/R4: truncation follows leader epochs — the leader answers a follower's last fetched
//!   epoch with a diverging epoch ([`Partition::read`]); the follower truncates with
//!   [`Partition::truncate_on_divergence`].
//! - R5: a fetch's current leader epoch older than ours is FENCED_LEADER_EPOCH, newer is
//!   UNKNOWN_LEADER_EPOCH.
//! - R7: ISR additions carry the follower's broker epoch from its fetches (KIP-903).
//! - R8: with ELR enabled the HW does not advance while |ISR| < `min.insync.replicas`.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{Bytes, BytesMut};
use kraftd_log::{AppendInfo, Log, LogError, PendingRead};
use kraftd_protocol::records::{Batches, RecordBatch};
use kraftd_protocol::ErrorCode;
use tracing::{debug, info, warn};

use super::fetch_session::TopicIdPartition;
use super::producer_state::{BatchMetadata, ProducerCheck, ProducerStateManager};

/// Kafka's `replica.lag.time.max.ms` default.
pub const DEFAULT_REPLICA_LAG_TIME_MAX_MS: i64 = 30_000;

/// What a partition needs from its topic and broker configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionConfig {
    /// `min.insync.replicas` (topic, else broker default).
    pub min_insync_replicas: usize,
    /// `replica.lag.time.max.ms`.
    pub replica_lag_time_max_ms: i64,
    /// `eligible.leader.replicas.version` ≥ 1: KIP-966's HW rule applies.
    pub elr_enabled: bool,
}

impl Default for PartitionConfig {
    fn default() -> Self {
        PartitionConfig {
            min_insync_replicas: 1,
            replica_lag_time_max_ms: DEFAULT_REPLICA_LAG_TIME_MAX_MS,
            elr_enabled: true,
        }
    }
}

/// The partition's place in the replication protocol at its current leader epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Hosted, but the metadata names no leader we can follow (or none yet).
    None,
    Leader,
    Follower {
        leader: i32,
    },
}

/// The metadata's view of a partition, as the controller committed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    pub leader: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// KIP-966's Eligible Leader Replicas (informational here; the controller owns it).
    pub elr: Vec<i32>,
    /// 0 recovered, 1 recovering (a leader elected uncleanly).
    pub leader_recovery_state: i8,
}

/// What the leader knows of one follower (Kafka's `ReplicaState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerState {
    /// The broker epoch the follower's fetches carried (KIP-903), -1 when none did.
    pub broker_epoch: i64,
    /// The follower's log end offset as its last fetch said; -1 until it fetches in this
    /// leader epoch.
    pub log_end_offset: i64,
    pub log_start_offset: i64,
    /// The last time the follower was known to have every record the leader had.
    pub last_caught_up_ms: i64,
    /// The leader's log end offset at the follower's previous fetch, and its time.
    pub last_fetch_leader_log_end_offset: i64,
    pub last_fetch_ms: i64,
}

impl FollowerState {
    fn reset(in_isr: bool, now_ms: i64) -> Self {
        FollowerState {
            broker_epoch: -1,
            log_end_offset: -1,
            log_start_offset: -1,
            last_caught_up_ms: if in_isr { now_ms } else { 0 },
            last_fetch_leader_log_end_offset: -1,
            last_fetch_ms: 0,
        }
    }

    /// Kafka's `isCaughtUp`: at the leader's end, or caught up recently enough.
    fn is_caught_up(&self, leader_end: i64, now_ms: i64, lag_ms: i64) -> bool {
        self.log_end_offset == leader_end || now_ms - self.last_caught_up_ms <= lag_ms
    }
}

/// An ISR change the leader wants the controller to commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrChange {
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// The proposed ISR with each member's broker epoch (-1 where unknown).
    pub new_isr: Vec<(i32, i64)>,
    pub leader_recovery_state: i8,
}

/// Why a partition refused an operation; each maps to the Kafka error a client gets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    #[error("broker {broker} is not the leader of this partition (role {role:?}, epoch {epoch})")]
    NotLeaderOrFollower { broker: i32, role: Role, epoch: i32 },
    #[error("request leader epoch {requested} is older than the current {current}")]
    FencedLeaderEpoch { requested: i32, current: i32 },
    #[error("request leader epoch {requested} is newer than the current {current}")]
    UnknownLeaderEpoch { requested: i32, current: i32 },
    #[error("in-sync replicas {isr} below min.insync.replicas {min_isr}")]
    NotEnoughReplicas { isr: usize, min_isr: usize },
    #[error("offset {offset} out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    #[error("batch of {size} bytes exceeds max.message.bytes {max}")]
    RecordTooLarge { size: usize, max: usize },
    #[error("corrupt record batch: {0}")]
    CorruptMessage(String),
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    #[error("{message}")]
    Producer { code: ErrorCode, message: String },
    #[error("storage error: {0}")]
    Storage(String),
}

impl PartitionError {
    pub fn error_code(&self) -> ErrorCode {
        match self {
            PartitionError::NotLeaderOrFollower { .. } => ErrorCode::NotLeaderOrFollower,
            PartitionError::FencedLeaderEpoch { .. } => ErrorCode::FencedLeaderEpoch,
            PartitionError::UnknownLeaderEpoch { .. } => ErrorCode::UnknownLeaderEpoch,
            PartitionError::NotEnoughReplicas { .. } => ErrorCode::NotEnoughReplicas,
            PartitionError::OffsetOutOfRange { .. } => ErrorCode::OffsetOutOfRange,
            PartitionError::RecordTooLarge { .. } => ErrorCode::MessageTooLarge,
            PartitionError::CorruptMessage(_) => ErrorCode::CorruptMessage,
            PartitionError::InvalidRecord(_) => ErrorCode::InvalidRecord,
            PartitionError::Producer { code, .. } => *code,
            PartitionError::Storage(_) => ErrorCode::KafkaStorageError,
        }
    }
}

impl From<LogError> for PartitionError {
    fn from(e: LogError) -> Self {
        match e {
            LogError::OffsetOutOfRange {
                offset,
                log_start_offset,
                log_end_offset,
            } => PartitionError::OffsetOutOfRange {
                offset,
                log_start_offset,
                log_end_offset,
            },
            LogError::RecordTooLarge {
                size,
                max_message_bytes,
                ..
            } => PartitionError::RecordTooLarge {
                size,
                max: max_message_bytes,
            },
            LogError::InvalidBatch { .. } => PartitionError::CorruptMessage(e.to_string()),
            LogError::InconsistentRecordCount { .. } => {
                PartitionError::InvalidRecord(e.to_string())
            }
            other => PartitionError::Storage(other.to_string()),
        }
    }
}

/// A produce append's outcome (Kafka's `LogAppendInfo` as the response needs it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderAppend {
    pub first_offset: i64,
    pub last_offset: i64,
    /// The append time stamped on a `LogAppendTime` topic, else -1.
    pub log_append_time: i64,
    pub log_start_offset: i64,
    /// The batch was a retry of one already written: nothing was appended and the offsets
    /// are the original's.
    pub duplicate: bool,
}

/// Which offsets a read may return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchIsolation {
    /// Followers replicate up to the leader's log end.
    LogEnd,
    /// Consumers (read_uncommitted) see committed records only.
    HighWatermark,
}

/// One partition's part of a fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadParams {
    pub fetch_offset: i64,
    pub max_bytes: usize,
    /// The fetcher's view of the leader epoch (KIP-320); -1 when it sent none.
    pub current_leader_epoch: i32,
    /// The epoch of the last batch the fetcher holds (KIP-595-style divergence check for
    /// data partitions, Fetch v12+); -1 when unknown.
    pub last_fetched_epoch: i32,
    pub isolation: FetchIsolation,
}

/// What a leader answers one partition of a fetch with (the bytes come from running
/// `read` outside the partition's lock).
#[derive(Debug)]
pub struct ReadInfo {
    pub read: Option<PendingRead>,
    /// The fetcher's log diverges from ours: it must truncate to at most this (epoch, end
    /// offset) before fetching again; no records are returned.
    pub diverging_epoch: Option<(i32, i64)>,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
}

/// What a follower's fetch changed on the leader.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FollowerUpdate {
    pub high_watermark_changed: bool,
    /// The follower's log start moved (a DeleteRecords waits on the low watermark).
    pub log_start_changed: bool,
    /// An ISR expansion to send to the controller.
    pub isr_change: Option<IsrChange>,
}

/// Whether a broker may join an ISR now: registered, unfenced, not shutting down, and (if
/// known) at the broker epoch its fetches carried.
pub trait IsrEligibility {
    fn is_isr_eligible(&self, broker: i32, broker_epoch: i64) -> bool;
}

impl<F: Fn(i32, i64) -> bool> IsrEligibility for F {
    fn is_isr_eligible(&self, broker: i32, broker_epoch: i64) -> bool {
        self(broker, broker_epoch)
    }
}

/// One hosted partition (see the module docs).
#[derive(Debug)]
pub struct Partition {
    tp: TopicIdPartition,
    local_broker: i32,
    /// This broker's epoch, sent with its own ISR membership.
    local_broker_epoch: i64,
    log: Log,
    producers: ProducerStateManager,
    config: PartitionConfig,
    role: Role,
    leader_epoch: i32,
    partition_epoch: i32,
    leader_recovery_state: i8,
    replicas: Vec<i32>,
    isr: Vec<i32>,
    /// The ISR proposed to the controller and not yet answered.
    pending_isr: Option<Vec<i32>>,
    /// Where this leader epoch started in the log (a follower joins the ISR only past it).
    leader_epoch_start_offset: i64,
    followers: BTreeMap<i32, FollowerState>,
    /// Followers the metadata says may not join the ISR now (fenced, shutting down, or at
    /// another broker epoch than their fetches carried): outside the ISR, the HW does not
    /// wait for them even when caught up (Kafka's `isReplicaIsrEligible`, KIP-841).
    ineligible: BTreeSet<i32>,
    high_watermark: i64,
}

impl Partition {
    /// Wraps an opened log; the producer state is rebuilt from its snapshot and the log.
    pub fn new(
        tp: TopicIdPartition,
        local_broker: i32,
        log: Log,
        config: PartitionConfig,
        high_watermark: i64,
        now_ms: i64,
    ) -> Result<Partition, PartitionError> {
        let producers = ProducerStateManager::new(
            log.dir().to_path_buf(),
            super::producer_state::DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        );
        let high_watermark = high_watermark.clamp(log.log_start_offset(), log.log_end_offset());
        let mut partition = Partition {
            tp,
            local_broker,
            local_broker_epoch: -1,
            log,
            producers,
            config,
            role: Role::None,
            leader_epoch: -1,
            partition_epoch: -1,
            leader_recovery_state: 0,
            replicas: Vec::new(),
            isr: Vec::new(),
            pending_isr: None,
            leader_epoch_start_offset: -1,
            followers: BTreeMap::new(),
            ineligible: BTreeSet::new(),
            high_watermark,
        };
        partition.rebuild_producer_state(now_ms)?;
        Ok(partition)
    }

    pub fn tp(&self) -> &TopicIdPartition {
        &self.tp
    }
    pub fn role(&self) -> Role {
        self.role
    }
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }
    pub fn partition_epoch(&self) -> i32 {
        self.partition_epoch
    }
    pub fn isr(&self) -> &[i32] {
        &self.isr
    }
    pub fn replicas(&self) -> &[i32] {
        &self.replicas
    }
    pub fn pending_isr(&self) -> Option<&[i32]> {
        self.pending_isr.as_deref()
    }
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }
    pub fn log(&self) -> &Log {
        &self.log
    }
    pub fn log_mut(&mut self) -> &mut Log {
        &mut self.log
    }
    pub fn log_end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }
    pub fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }
    pub fn config(&self) -> &PartitionConfig {
        &self.config
    }
    pub fn follower_state(&self, broker: i32) -> Option<&FollowerState> {
        self.followers.get(&broker)
    }
    pub fn producers(&self) -> &ProducerStateManager {
        &self.producers
    }
    /// The leader as this replica knows it (-1 when none).
    pub fn leader_id(&self) -> i32 {
        match self.role {
            Role::Leader => self.local_broker,
            Role::Follower { leader } => leader,
            Role::None => -1,
        }
    }
    pub fn is_leader(&self) -> bool {
        self.role == Role::Leader
    }

    /// A topic config change (min ISR, ...) applies at once; the HW may move under the new
    /// rule.
    pub fn set_config(&mut self, config: PartitionConfig, now_ms: i64) -> bool {
        self.config = config;
        self.is_leader() && self.maybe_increment_high_watermark(now_ms)
    }

    /// This broker's current broker epoch (it changes at every registration).
    pub fn set_local_broker_epoch(&mut self, epoch: i64) {
        self.local_broker_epoch = epoch;
    }

    /// The ISR the HW must wait for: the committed one and any member being added; while
    /// a shrink is pending, still the old (larger) one.
    fn maximal_isr(&self) -> Vec<i32> {
        let mut all = self.isr.clone();
        if let Some(pending) = &self.pending_isr {
            for r in pending {
                if !all.contains(r) {
                    all.push(*r);
                }
            }
        }
        all
    }

    /// Applies the metadata's state when it names this broker leader. A new leader epoch
    /// starts at the log end; what is known of followers starts over. The same epoch with a
    /// newer partition epoch is a committed ISR change. Returns whether the leader epoch
    /// changed.
    pub fn make_leader(
        &mut self,
        state: &PartitionState,
        now_ms: i64,
    ) -> Result<bool, PartitionError> {
        debug_assert_eq!(state.leader, self.local_broker);
        let new_epoch = self.role != Role::Leader || state.leader_epoch > self.leader_epoch;
        if !new_epoch && state.partition_epoch <= self.partition_epoch {
            return Ok(false);
        }
        self.replicas = state.replicas.clone();
        self.isr = state.isr.clone();
        self.partition_epoch = state.partition_epoch;
        self.leader_recovery_state = state.leader_recovery_state;
        self.pending_isr = None;
        if new_epoch {
            self.role = Role::Leader;
            self.leader_epoch = state.leader_epoch;
            self.log.assign_epoch_start_offset(state.leader_epoch)?;
            self.leader_epoch_start_offset = self.log.log_end_offset();
            self.followers = self
                .replicas
                .iter()
                .filter(|r| **r != self.local_broker)
                .map(|r| (*r, FollowerState::reset(self.isr.contains(r), now_ms)))
                .collect();
            self.ineligible.clear();
            info!(
                topic = %self.tp.topic, partition = self.tp.partition, epoch = self.leader_epoch,
                start_offset = self.leader_epoch_start_offset, hw = self.high_watermark,
                isr = ?self.isr, "became leader"
            );
        } else {
            // Replicas added by a reassignment start unknown; removed ones are forgotten.
            let local = self.local_broker;
            self.followers
                .retain(|r, _| state.replicas.contains(r) && *r != local);
            for r in &state.replicas {
                if *r != local && !self.followers.contains_key(r) {
                    self.followers
                        .insert(*r, FollowerState::reset(false, now_ms));
                }
            }
        }
        self.maybe_increment_high_watermark(now_ms);
        Ok(new_epoch)
    }

    /// Applies the metadata's state when another broker (or nobody) leads. Returns whether
    /// the leader or epoch changed (the fetcher must move).
    pub fn make_follower(&mut self, state: &PartitionState) -> bool {
        if self.role != Role::Leader
            && state.leader_epoch < self.leader_epoch
            && self.leader_epoch >= 0
        {
            return false;
        }
        let role = if state.leader >= 0 {
            Role::Follower {
                leader: state.leader,
            }
        } else {
            Role::None
        };
        let changed = role != self.role || state.leader_epoch != self.leader_epoch;
        if changed {
            // An epoch this replica started as leader without writing anything describes
            // no data: dropped, so the next fetch names the epoch of its last batch and the
            // new leader's batches of older epochs can follow (Kafka's follower append
            // overwrites such entries; our log refuses a decreasing epoch instead).
            let end = self.log.log_end_offset();
            if let Err(e) = self.log.truncate_to(end) {
                warn!(topic = %self.tp.topic, partition = self.tp.partition, error = %e, "dropping an empty leader epoch failed");
            }
        }
        self.role = role;
        self.leader_epoch = state.leader_epoch;
        self.partition_epoch = state.partition_epoch;
        self.leader_recovery_state = state.leader_recovery_state;
        self.replicas = state.replicas.clone();
        self.isr = state.isr.clone();
        self.pending_isr = None;
        self.followers.clear();
        if changed {
            info!(
                topic = %self.tp.topic, partition = self.tp.partition, epoch = self.leader_epoch,
                leader = state.leader, log_end_offset = self.log.log_end_offset(),
                "became follower"
            );
        }
        changed
    }

    /// The partition is no longer hosted here (topic deleted, replica moved): it leads and
    /// follows nobody, so requests that still hold it are refused and waiters give up.
    pub fn stop(&mut self) {
        self.role = Role::None;
        self.pending_isr = None;
        self.followers.clear();
    }

    /// Checks a request's leader epoch against ours (KIP-320).
    pub fn check_leader_epoch(&self, requested: i32) -> Result<(), PartitionError> {
        if requested < 0 || requested == self.leader_epoch {
            Ok(())
        } else if requested < self.leader_epoch {
            Err(PartitionError::FencedLeaderEpoch {
                requested,
                current: self.leader_epoch,
            })
        } else {
            Err(PartitionError::UnknownLeaderEpoch {
                requested,
                current: self.leader_epoch,
            })
        }
    }

    fn require_leader(&self) -> Result<(), PartitionError> {
        if self.role == Role::Leader {
            Ok(())
        } else {
            Err(PartitionError::NotLeaderOrFollower {
                broker: self.local_broker,
                role: self.role,
                epoch: self.leader_epoch,
            })
        }
    }

    /// Appends a produce request's records (exactly one v2 batch, as Produce v3+ requires)
    /// as leader: checks `acks=all` against `min.insync.replicas` first
    /// (NOT_ENOUGH_REPLICAS), answers an idempotent producer's retry with the original
    /// offsets, stamps offsets and the leader epoch, and moves the HW if the ISR is just us.
    pub fn append_as_leader(
        &mut self,
        records: Bytes,
        required_acks: i16,
        now_ms: i64,
    ) -> Result<LeaderAppend, PartitionError> {
        self.require_leader()?;
        let isr = self.isr.len();
        if required_acks == -1 && isr < self.config.min_insync_replicas {
            return Err(PartitionError::NotEnoughReplicas {
                isr,
                min_isr: self.config.min_insync_replicas,
            });
        }
        let batch = single_batch(&records)?;
        if batch.size_in_bytes() > self.log.config().max_message_bytes {
            return Err(PartitionError::RecordTooLarge {
                size: batch.size_in_bytes(),
                max: self.log.config().max_message_bytes,
            });
        }
        batch
            .validate_crc()
            .map_err(|e| PartitionError::CorruptMessage(e.to_string()))?;
        if batch.is_transactional() {
            return Err(PartitionError::InvalidRecord(
                "transactional batches are not supported by this broker".into(),
            ));
        }
        if batch.is_control() {
            return Err(PartitionError::InvalidRecord(
                "clients may not write control batches".into(),
            ));
        }
        let producer_id = batch.producer_id();
        let producer_epoch = batch.producer_epoch();
        let (first_seq, last_seq) = (batch.base_sequence(), batch.last_sequence());
        if producer_id >= 0 {
            match self
                .producers
                .check(producer_id, producer_epoch, first_seq, last_seq)
            {
                Ok(ProducerCheck::Append) => {}
                Ok(ProducerCheck::Duplicate(original)) => {
                    debug!(
                        topic = %self.tp.topic, partition = self.tp.partition, producer_id, first_seq,
                        offset = original.first_offset, "duplicate batch answered with its original offset"
                    );
                    return Ok(LeaderAppend {
                        first_offset: original.first_offset,
                        last_offset: original.last_offset,
                        log_append_time: -1,
                        log_start_offset: self.log.log_start_offset(),
                        duplicate: true,
                    });
                }
                Err(e) => {
                    return Err(PartitionError::Producer {
                        code: e.error_code(),
                        message: e.to_string(),
                    })
                }
            }
        }
        let max_timestamp = batch.max_timestamp();
        let segments = self.log.segment_count();
        let info =
            self.log
                .append_as_leader(BytesMut::from(&records[..]), self.leader_epoch, now_ms)?;
        if producer_id >= 0 {
            self.producers.update(
                producer_id,
                producer_epoch,
                BatchMetadata {
                    first_seq,
                    last_seq,
                    first_offset: info.first_offset,
                    last_offset: info.last_offset,
                    timestamp: if info.log_append_time >= 0 {
                        info.log_append_time
                    } else {
                        max_timestamp
                    },
                },
            );
        }
        self.producers.set_map_end_offset(self.log.log_end_offset());
        self.snapshot_producers_if_rolled(segments);
        self.maybe_increment_high_watermark(now_ms);
        Ok(LeaderAppend {
            first_offset: info.first_offset,
            last_offset: info.last_offset,
            log_append_time: info.log_append_time,
            log_start_offset: self.log.log_start_offset(),
            duplicate: false,
        })
    }

    /// Whether an `acks=all` write ending at `required_offset` (exclusive) is done: `None`
    /// while the HW is below it, else the error to answer (NONE, or
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below the minimum meanwhile;
    /// NOT_LEADER_OR_FOLLOWER when leadership moved).
    pub fn check_enough_replicas_reach_offset(&self, required_offset: i64) -> Option<ErrorCode> {
        if self.role != Role::Leader {
            return Some(ErrorCode::NotLeaderOrFollower);
        }
        if self.high_watermark < required_offset {
            return None;
        }
        if self.isr.len() < self.config.min_insync_replicas {
            Some(ErrorCode::NotEnoughReplicasAfterAppend)
        } else {
            Some(ErrorCode::None)
        }
    }

    /// Plans one partition's read for a fetch, as leader: the KIP-320 epoch check, the
    /// divergence check against the fetcher's last fetched epoch, the range check, then a
    /// read up to the HW (consumers) or the log end (followers).
    pub fn read(&self, params: &ReadParams) -> Result<ReadInfo, PartitionError> {
        self.check_leader_epoch(params.current_leader_epoch)?;
        self.require_leader()?;
        let log_end_offset = self.log.log_end_offset();
        let log_start_offset = self.log.log_start_offset();
        let mut info = ReadInfo {
            read: None,
            diverging_epoch: None,
            high_watermark: self.high_watermark,
            log_start_offset,
            log_end_offset,
        };
        if params.last_fetched_epoch >= 0 {
            let (epoch, end) = self
                .log
                .end_offset_for_epoch(params.last_fetched_epoch)
                .unwrap_or((-1, log_start_offset));
            if epoch < params.last_fetched_epoch || end < params.fetch_offset {
                info.diverging_epoch = Some((epoch, end));
                return Ok(info);
            }
        }
        let upper_bound = match params.isolation {
            FetchIsolation::LogEnd => log_end_offset,
            FetchIsolation::HighWatermark => self.high_watermark,
        };
        info.read = Some(
            self.log
                .plan_read(params.fetch_offset, params.max_bytes, upper_bound)?,
        );
        Ok(info)
    }

    /// Records a follower's fetch (Kafka's `updateFollowerFetchState`): its position and
    /// broker epoch, its caught-up time, then maybe an ISR expansion and a HW move.
    pub fn update_follower_fetch_state(
        &mut self,
        replica: i32,
        broker_epoch: i64,
        fetch_offset: i64,
        follower_log_start_offset: i64,
        now_ms: i64,
        eligibility: &dyn IsrEligibility,
    ) -> Result<FollowerUpdate, PartitionError> {
        self.require_leader()?;
        let leader_end = self.log.log_end_offset();
        let Some(state) = self.followers.get_mut(&replica) else {
            return Err(PartitionError::NotLeaderOrFollower {
                broker: self.local_broker,
                role: self.role,
                epoch: self.leader_epoch,
            });
        };
        if fetch_offset >= leader_end {
            state.last_caught_up_ms = state.last_caught_up_ms.max(now_ms);
        } else if fetch_offset >= state.last_fetch_leader_log_end_offset {
            state.last_caught_up_ms = state.last_caught_up_ms.max(state.last_fetch_ms);
        }
        state.log_end_offset = fetch_offset;
        let log_start_changed = state.log_start_offset != follower_log_start_offset;
        state.log_start_offset = follower_log_start_offset;
        state.last_fetch_leader_log_end_offset = leader_end;
        state.last_fetch_ms = now_ms;
        if broker_epoch >= 0 {
            state.broker_epoch = broker_epoch;
        }
        if eligibility.is_isr_eligible(replica, state.broker_epoch) {
            self.ineligible.remove(&replica);
        } else {
            self.ineligible.insert(replica);
        }
        let isr_change = self.maybe_expand_isr(replica, eligibility);
        let high_watermark_changed = self.maybe_increment_high_watermark(now_ms);
        Ok(FollowerUpdate {
            high_watermark_changed,
            log_start_changed,
            isr_change,
        })
    }

    /// The metadata changed who may join an ISR (a broker fenced, shutting down or
    /// registered again): re-checks every follower at the broker epoch its fetches carried,
    /// so the HW stops waiting for a caught-up follower that can no longer join. Returns
    /// whether the HW moved.
    pub fn update_isr_eligibility(
        &mut self,
        eligibility: &dyn IsrEligibility,
        now_ms: i64,
    ) -> bool {
        self.ineligible = self
            .followers
            .iter()
            .filter(|(r, s)| !eligibility.is_isr_eligible(**r, s.broker_epoch))
            .map(|(r, _)| *r)
            .collect();
        self.is_leader() && self.maybe_increment_high_watermark(now_ms)
    }

    /// Adds a follower that reached the HW and this epoch's start (R2), if no other ISR
    /// change is in flight and the broker may join (KIP-903).
    fn maybe_expand_isr(
        &mut self,
        replica: i32,
        eligibility: &dyn IsrEligibility,
    ) -> Option<IsrChange> {
        if self.pending_isr.is_some() || self.isr.contains(&replica) {
            return None;
        }
        let state = self.followers.get(&replica)?;
        let caught_up = state.log_end_offset >= self.high_watermark
            && state.log_end_offset >= self.leader_epoch_start_offset;
        if !caught_up || !eligibility.is_isr_eligible(replica, state.broker_epoch) {
            return None;
        }
        let mut new_isr = self.isr.clone();
        new_isr.push(replica);
        info!(
            topic = %self.tp.topic, partition = self.tp.partition, replica, isr = ?self.isr,
            proposed = ?new_isr, "expanding the ISR"
        );
        Some(self.propose_isr(new_isr))
    }

    /// Removes followers that have not caught up within `replica.lag.time.max.ms` (R2);
    /// the ReplicaManager calls it periodically.
    pub fn maybe_shrink_isr(&mut self, now_ms: i64) -> Option<IsrChange> {
        if self.role != Role::Leader || self.pending_isr.is_some() {
            return None;
        }
        let leader_end = self.log.log_end_offset();
        let lag = self.config.replica_lag_time_max_ms;
        let out_of_sync: Vec<i32> = self
            .isr
            .iter()
            .copied()
            .filter(|r| *r != self.local_broker)
            .filter(|r| {
                self.followers
                    .get(r)
                    .is_none_or(|s| !s.is_caught_up(leader_end, now_ms, lag))
            })
            .collect();
        if out_of_sync.is_empty() {
            return None;
        }
        let new_isr: Vec<i32> = self
            .isr
            .iter()
            .copied()
            .filter(|r| !out_of_sync.contains(r))
            .collect();
        warn!(
            topic = %self.tp.topic, partition = self.tp.partition, out_of_sync = ?out_of_sync,
            lag_ms = lag, isr = ?self.isr, proposed = ?new_isr,
            "shrinking the ISR: followers have not caught up within replica.lag.time.max.ms"
        );
        Some(self.propose_isr(new_isr))
    }

    fn propose_isr(&mut self, new_isr: Vec<i32>) -> IsrChange {
        let with_epochs = new_isr
            .iter()
            .map(|r| {
                let epoch = if *r == self.local_broker {
                    self.local_broker_epoch
                } else {
                    self.followers.get(r).map_or(-1, |s| s.broker_epoch)
                };
                (*r, epoch)
            })
            .collect();
        self.pending_isr = Some(new_isr);
        IsrChange {
            leader_epoch: self.leader_epoch,
            partition_epoch: self.partition_epoch,
            new_isr: with_epochs,
            leader_recovery_state: self.leader_recovery_state,
        }
    }

    /// The controller's answer to our ISR change: the committed state (applied if it is
    /// still about our epoch and not older than what we have) or an error (the change is
    /// dropped; the next fetch or shrink check proposes again). Returns whether the HW moved.
    pub fn complete_isr_change(
        &mut self,
        result: Result<(i32, i32, Vec<i32>), ErrorCode>,
        now_ms: i64,
    ) -> bool {
        self.pending_isr = None;
        match result {
            Ok((leader_epoch, partition_epoch, isr))
                if self.role == Role::Leader
                    && leader_epoch == self.leader_epoch
                    && partition_epoch >= self.partition_epoch =>
            {
                info!(
                    topic = %self.tp.topic, partition = self.tp.partition, isr = ?isr,
                    partition_epoch, "ISR change committed"
                );
                self.isr = isr;
                self.partition_epoch = partition_epoch;
                self.maybe_increment_high_watermark(now_ms)
            }
            Ok(_) => false,
            Err(code) => {
                warn!(
                    topic = %self.tp.topic, partition = self.tp.partition, error = ?code,
                    "the controller refused the ISR change"
                );
                false
            }
        }
    }

    /// Moves the leader's HW to the smallest log end offset the maximal ISR (and any
    /// caught-up replica about to join) holds; never backwards; not at all while the ISR is
    /// below `min.insync.replicas` with ELR on (KIP-966). Returns whether it moved.
    fn maybe_increment_high_watermark(&mut self, now_ms: i64) -> bool {
        if self.role != Role::Leader {
            return false;
        }
        if self.config.elr_enabled && self.isr.len() < self.config.min_insync_replicas {
            return false;
        }
        let leader_end = self.log.log_end_offset();
        let lag = self.config.replica_lag_time_max_ms;
        let maximal = self.maximal_isr();
        let mut new_hw = leader_end;
        for (replica, state) in &self.followers {
            let waits = maximal.contains(replica)
                || (state.log_end_offset >= 0
                    && !self.ineligible.contains(replica)
                    && state.is_caught_up(leader_end, now_ms, lag));
            if waits && state.log_end_offset < new_hw {
                new_hw = state.log_end_offset;
            }
        }
        if new_hw > self.high_watermark {
            debug!(topic = %self.tp.topic, partition = self.tp.partition, from = self.high_watermark, to = new_hw, "high watermark advanced");
            self.high_watermark = new_hw;
            true
        } else {
            false
        }
    }

    // ---- follower side -------------------------------------------------------------

    /// Where the follower fetches next: (fetch offset = log end, last fetched epoch or -1).
    pub fn fetch_position(&self) -> (i64, i32) {
        (
            self.log.log_end_offset(),
            self.log.latest_epoch().unwrap_or(-1),
        )
    }

    /// Appends records fetched from the leader and records their producers. The HW follows
    /// the leader's, bounded by our log end.
    pub fn append_as_follower(
        &mut self,
        records: Bytes,
        leader_high_watermark: i64,
        now_ms: i64,
    ) -> Result<AppendInfo, PartitionError> {
        let segments = self.log.segment_count();
        let info = self.log.append_as_follower(records.clone(), now_ms)?;
        if info.last_offset >= info.first_offset {
            self.update_producers_from(&records, info.first_offset, info.last_offset);
        }
        self.producers.set_map_end_offset(self.log.log_end_offset());
        self.snapshot_producers_if_rolled(segments);
        self.update_follower_high_watermark(leader_high_watermark);
        Ok(info)
    }

    /// A follower's HW is the leader's, bounded by its own log end; it never moves back
    /// except by truncation.
    pub fn update_follower_high_watermark(&mut self, leader_high_watermark: i64) -> bool {
        let hw = leader_high_watermark.min(self.log.log_end_offset());
        if hw > self.high_watermark {
            self.high_watermark = hw;
            true
        } else {
            false
        }
    }

    /// The leader said our log diverges after `(epoch, end_offset)`; truncate as Kafka's
    /// follower does (KIP-279): if we hold that epoch, to the smaller of its end on both
    /// sides; otherwise to the end of the largest epoch we hold at or below it (the next
    /// fetch, with that epoch as last fetched, settles the rest). Returns the new log end.
    pub fn truncate_on_divergence(
        &mut self,
        epoch: i32,
        end_offset: i64,
        now_ms: i64,
    ) -> Result<i64, PartitionError> {
        let local = self.log.end_offset_for_epoch(epoch);
        let target = match local {
            Some((e, local_end)) if e == epoch => local_end.min(end_offset),
            Some((_, local_end)) => local_end,
            None => end_offset.min(self.log.log_end_offset()),
        };
        self.truncate_to(target.max(0), now_ms)?;
        Ok(self.log.log_end_offset())
    }

    /// Removes every batch from `offset` on (divergence, or a fresh fetch from a new leader
    /// whose log is shorter). Truncating below the HW is allowed for data partitions (the
    /// HW follows), unlike the metadata log. Producer state is rebuilt to match.
    pub fn truncate_to(&mut self, offset: i64, now_ms: i64) -> Result<(), PartitionError> {
        if offset >= self.log.log_end_offset() {
            // Nothing to remove but an epoch assigned at the end with no data in it.
            self.log.truncate_to(offset)?;
            return Ok(());
        }
        info!(
            topic = %self.tp.topic, partition = self.tp.partition, from = self.log.log_end_offset(),
            to = offset, hw = self.high_watermark, "truncating"
        );
        self.log.truncate_to(offset)?;
        self.high_watermark = self.high_watermark.min(self.log.log_end_offset());
        self.rebuild_producer_state(now_ms)
    }

    /// The leader's log starts where ours never had data: start over at `offset`.
    pub fn truncate_fully_and_start_at(
        &mut self,
        offset: i64,
        now_ms: i64,
    ) -> Result<(), PartitionError> {
        self.log.truncate_fully_and_start_at(offset)?;
        self.high_watermark = offset;
        self.rebuild_producer_state(now_ms)
    }

    /// Loads the latest producer snapshot at or below the log end and replays the batches
    /// after it (Kafka's `loadProducerState`).
    fn rebuild_producer_state(&mut self, now_ms: i64) -> Result<(), PartitionError> {
        let start = self.log.log_start_offset();
        let end = self.log.log_end_offset();
        self.producers
            .truncate_and_reload(start, end, now_ms)
            .map_err(|e| PartitionError::Storage(format!("producer state: {e}")))?;
        let mut offset = self.producers.map_end_offset().max(start);
        while offset < end {
            let read = self.log.read(offset, 1 << 20, end)?;
            if read.bytes.is_empty() {
                break;
            }
            self.update_producers_from(&read.bytes, offset, end - 1);
            offset = read.next_offset;
        }
        self.producers.set_map_end_offset(end);
        Ok(())
    }

    /// Records the idempotent batches of `records` whose offsets lie in `[from, to]`.
    fn update_producers_from(&mut self, records: &Bytes, from: i64, to: i64) {
        for batch in Batches::new(records.clone()) {
            let Ok(batch) = batch else { break };
            if batch.last_offset() < from || batch.base_offset() > to {
                continue;
            }
            if batch.producer_id() < 0 || batch.is_control() {
                continue;
            }
            self.producers.update(
                batch.producer_id(),
                batch.producer_epoch(),
                BatchMetadata {
                    first_seq: batch.base_sequence(),
                    last_seq: batch.last_sequence(),
                    first_offset: batch.base_offset(),
                    last_offset: batch.last_offset(),
                    timestamp: batch.max_timestamp(),
                },
            );
        }
    }

    /// Retention as the topic configures it, never past the HW; a leader re-assigns its
    /// epoch if retention emptied the cache. Returns how many segments went.
    pub fn apply_retention(&mut self, now_ms: i64) -> Result<usize, PartitionError> {
        let deleted = self.log.apply_retention(now_ms, self.high_watermark)?;
        if deleted > 0 {
            if self.role == Role::Leader {
                self.log.assign_epoch_start_offset(self.leader_epoch)?;
            }
            let _ = self
                .producers
                .delete_snapshots_before(self.log.log_start_offset());
        }
        Ok(deleted)
    }

    /// A roll is where Kafka snapshots producer state, so a restart replays at most one
    /// segment to rebuild it.
    fn snapshot_producers_if_rolled(&mut self, segments_before: usize) {
        if self.log.segment_count() > segments_before {
            self.snapshot_producer_state();
        }
    }

    /// Writes a producer-state snapshot at the log end (on roll and on close, as Kafka).
    pub fn snapshot_producer_state(&mut self) {
        if let Err(e) = self.producers.take_snapshot() {
            warn!(topic = %self.tp.topic, partition = self.tp.partition, error = %e, "producer state snapshot failed");
        }
    }

    /// KIP-279's answer for OffsetForLeaderEpoch: the largest epoch ≤ `epoch` we know and
    /// where it ends; (-1, -1) when we know none.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.log.end_offset_for_epoch(epoch).unwrap_or((-1, -1))
    }

    /// The check an OffsetForLeaderEpoch request gets before its answer: current leader
    /// epoch (KIP-320) and, unless a follower's debug fetch, leadership.
    pub fn check_offset_for_leader_epoch(
        &self,
        current_leader_epoch: i32,
    ) -> Result<(), PartitionError> {
        self.check_leader_epoch(current_leader_epoch)?;
        self.require_leader()
    }

    /// DeleteRecords on the leader (Kafka's `Partition.deleteRecordsOnLeader`): moves the
    /// log start offset up to `offset`, -1 meaning the high watermark; past the HW (or
    /// negative otherwise) is OFFSET_OUT_OF_RANGE. Returns the low watermark, which reaches
    /// `offset` once every follower's log start has (see [`Partition::low_watermark`]).
    pub fn delete_records_on_leader(&mut self, offset: i64) -> Result<i64, PartitionError> {
        self.require_leader()?;
        let converted = if offset == -1 {
            self.high_watermark
        } else {
            offset
        };
        if converted < 0 {
            return Err(PartitionError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log.log_start_offset(),
                log_end_offset: self.log.log_end_offset(),
            });
        }
        if self
            .log
            .maybe_increment_log_start_offset(converted, self.high_watermark)?
        {
            info!(
                topic = %self.tp.topic, partition = self.tp.partition,
                log_start_offset = converted, "deleted records"
            );
            self.after_log_start_increment()?;
        }
        Ok(self.low_watermark())
    }

    /// A follower's log start follows the leader's, as the Fetch response carries it
    /// (Kafka's `ReplicaFetcherThread.processPartitionData`:
    /// `log.maybeIncrementLogStartOffset(leaderLogStartOffset)`), bounded by our HW so it
    /// never passes what we know committed. Failures are logged: the next fetch retries.
    pub fn maybe_follow_leader_log_start(&mut self, leader_log_start: i64) {
        if self.role == Role::Leader {
            return;
        }
        let target = leader_log_start.min(self.high_watermark);
        if target <= self.log.log_start_offset() {
            return;
        }
        let result = self
            .log
            .maybe_increment_log_start_offset(target, self.high_watermark)
            .map_err(PartitionError::from)
            .and_then(|changed| {
                if changed {
                    self.after_log_start_increment()
                } else {
                    Ok(())
                }
            });
        if let Err(e) = result {
            warn!(
                topic = %self.tp.topic, partition = self.tp.partition, leader_log_start,
                error = %e, "following the leader's log start failed"
            );
        }
    }

    /// Kafka's `lowWatermarkIfLeader`: the smallest log start among the leader and its
    /// in-sync followers (-1 for one that has not fetched in this leader epoch). Kafka
    /// counts every live replica; the ISR is the set this broker knows to be alive and
    /// following, and one outside it would hold a DeleteRecords to its timeout.
    pub fn low_watermark(&self) -> i64 {
        let leader = self.log.log_start_offset();
        self.isr
            .iter()
            .filter(|&&b| b != self.local_broker)
            .map(|b| self.followers.get(b).map_or(-1, |f| f.log_start_offset))
            .fold(leader, i64::min)
    }

    /// What follows a log start increment: a leader whose epoch cache it emptied assigns
    /// its epoch again (as after retention); producer snapshots below the start go.
    fn after_log_start_increment(&mut self) -> Result<(), PartitionError> {
        if self.role == Role::Leader {
            self.log.assign_epoch_start_offset(self.leader_epoch)?;
        }
        let _ = self
            .producers
            .delete_snapshots_before(self.log.log_start_offset());
        Ok(())
    }
}

/// The one v2 batch a produce request carries for a partition.
fn single_batch(records: &Bytes) -> Result<RecordBatch, PartitionError> {
    let mut batches = Batches::new(records.clone());
    let first = match batches.next() {
        Some(Ok(b)) => b,
        Some(Err(e)) => return Err(PartitionError::CorruptMessage(e.to_string())),
        None => {
            return Err(PartitionError::InvalidRecord(
                "produce request carries no record batch".into(),
            ))
        }
    };
    if first.magic() != 2 {
        return Err(PartitionError::InvalidRecord(format!(
            "record batch magic {} (only v2 batches are accepted)",
            first.magic()
        )));
    }
    if batches.next().is_some() {
        return Err(PartitionError::InvalidRecord(
            "produce requests (v3+) must carry exactly one record batch per partition".into(),
        ));
    }
    Ok(first)
}
