//! One hosted topic partition (Kafka's `cluster.Partition`): its log, its role at a leader
//! epoch, and — as leader — what it knows of each follower, the ISR and the high watermark.
//!
//! Synchronous and clock-free: every call takes `now_ms`, nothing here waits, spawns or
//! talks to the network. The [`ReplicaManager`](super::replica_manager) holds each
//! partition under a mutex (a [`HostedPartition`]), does the waiting (produce and fetch purgatories), sends the
//! AlterPartition requests this module asks for, and runs reads
//! ([`PendingRead`](kraftd_log::PendingRead)) outside the lock. That keeps the replication
//! rules of seed 001 in one place a test can drive step by step.
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
//!
//! The rooms, one `impl Partition` each:
//! - `mod.rs`: the shared types, construction, accessors, the epoch checks and stopping;
//! - `leader.rs`: becoming leader, produce appends, reads and the offset-for-epoch answers;
//! - `isr.rs`: the leader's view of its followers, the ISR (R2, R7) and the HW (R1, R8);
//! - `follower.rs`: becoming follower, appending fetched records, truncation (R3/R4);
//! - `producers.rs`: the idempotent-producer state kept beside the log;
//! - `log_start.rs`: what moves the log start — retention, DeleteRecords, the leader's;
//! - `future.rs`: the future log of a replica moving to another log dir.
//!
//! Beside them, `hosted.rs` holds [`HostedPartition`]: the partition under its mutex with its
//! change pulse, as the ReplicaManager, the fetchers and the log cleaner share it.

mod follower;
mod future;
mod hosted;
mod isr;
mod leader;
mod log_start;
mod producers;
mod validator;

use std::collections::{BTreeMap, BTreeSet};

use kraftd_log::{Log, LogError};
use kraftd_protocol::ErrorCode;

use super::producer_state::ProducerStateManager;
use super::TopicIdPartition;

pub use self::future::FutureStep;
pub use self::hosted::HostedPartition;
pub use self::isr::{FollowerUpdate, IsrChange, IsrEligibility, ReplicaState};
pub use self::leader::{FetchIsolation, LeaderAppend, ReadInfo, ReadParams};

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

/// One record a produce refused: its index in the batch and why (Kafka's
/// `ProduceResponse.RecordError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub batch_index: i32,
    pub message: String,
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
    #[error("{0}")]
    RecordListTooLarge(String),
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// Records of the batch failed validation (Kafka's `RecordValidationException`): the
    /// whole batch is refused, and each bad record is named by its index in the batch.
    #[error("{message}")]
    RecordErrors {
        code: ErrorCode,
        message: String,
        records: Vec<RecordError>,
    },
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
            PartitionError::RecordListTooLarge(_) => ErrorCode::RecordListTooLarge,
            PartitionError::InvalidRecord(_) => ErrorCode::InvalidRecord,
            PartitionError::RecordErrors { code, .. } => *code,
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
            // Kafka's RecordBatchTooLargeException: not retriable, unlike a storage error
            // (a client would retry it forever).
            LogError::AppendTooLarge { .. } => PartitionError::RecordListTooLarge(e.to_string()),
            LogError::InconsistentRecordCount { .. } => {
                PartitionError::InvalidRecord(e.to_string())
            }
            other => PartitionError::Storage(other.to_string()),
        }
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
    /// The copy of `log` being built in another log dir (AlterReplicaLogDirs).
    future: Option<Log>,
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
    followers: BTreeMap<i32, ReplicaState>,
    /// Followers the metadata says may not join the ISR now (fenced, shutting down, or at
    /// another broker epoch than their fetches carried): outside the ISR, the HW does not
    /// wait for them even when caught up (Kafka's `isReplicaIsrEligible`, KIP-841).
    ineligible: BTreeSet<i32>,
    high_watermark: i64,
    /// The log's dir failed ([`Partition::stop_offline`]): requests still holding the
    /// partition get KAFKA_STORAGE_ERROR, as Kafka answers for an offline partition.
    offline: bool,
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
        let high_watermark = high_watermark.clamp(log.log_start_offset(), log.log_end_offset());
        log.note_high_watermark(high_watermark);
        let mut partition = Partition {
            tp,
            local_broker,
            local_broker_epoch: -1,
            log,
            future: None,
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
            offline: false,
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
    pub fn replica_state(&self, broker: i32) -> Option<&ReplicaState> {
        self.followers.get(&broker)
    }
    pub fn producers(&self) -> &ProducerStateManager {
        self.log.producer_state()
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

    /// The partition is no longer hosted here (topic deleted, replica moved): it leads and
    /// follows nobody, so requests that still hold it are refused and waiters give up.
    pub fn stop(&mut self) {
        self.role = Role::None;
        self.pending_isr = None;
        self.followers.clear();
    }

    /// The partition's log dir failed: it is stopped as [`Partition::stop`] does, and
    /// whatever still holds it is answered KAFKA_STORAGE_ERROR from now on.
    pub fn stop_offline(&mut self) {
        self.stop();
        self.offline = true;
    }

    /// Whether [`Partition::stop_offline`] stopped it.
    pub fn is_offline(&self) -> bool {
        self.offline
    }

    /// Kafka's message for a partition in an offline log dir.
    fn offline_message(&self) -> String {
        format!(
            "Partition {}-{} is in an offline log directory",
            self.tp.topic, self.tp.partition
        )
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
        if self.offline {
            return Err(PartitionError::Storage(self.offline_message()));
        }
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
}
