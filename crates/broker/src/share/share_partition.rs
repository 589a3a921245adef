//! `SharePartition` (Kafka's `kafka.server.share.SharePartition`): one share group's view of
//! one topic partition on its leader. It owns the share-partition start offset (SPSO), the
//! in-flight records between the SPSO and the end offset with their state (available,
//! acquired, acknowledged, archived), their delivery counts and acquisition locks.
//!
//! Sans-IO: time comes in as an argument (`now_ms`), log data as [`FetchedBatch`] summaries
//! of the batches a read returned, and every durable change leaves as a
//! [`StateWrite`] (a WriteShareGroupState request) that the caller sends through the
//! `Persister` and reports back with [`SharePartition::complete_write`]. Until then the
//! records it changes are "in transition": neither acquirable nor acknowledgeable, so the
//! client is answered only once the state is persisted, and a failed write rolls them back,
//! as Kafka's `rollbackOrProcessStateUpdates` does.
//!
//! Kafka keeps in-flight batches with optional per-offset states; kraftd keeps one compact
//! entry per offset from the SPSO (a `VecDeque`), bounded by
//! `group.share.partition.max.record.locks`, which gives the same answers with one code path
//! for whole-batch and per-offset acknowledgements. The AcquiredRecords ranges it returns
//! are the runs of contiguous offsets with one delivery count.
//!
//! Dead-letter queues (KIP-1191, `share.version` 2, a group with
//! `errors.deadletterqueue.topic.name`): a rejected record, or one past the delivery count
//! limit, goes to ARCHIVING instead of ARCHIVED. Once that state is persisted, the record is
//! handed to the DLQ writer ([`SharePartition::take_dlq_batches`]); whatever the write's
//! outcome, it then becomes ARCHIVED ([`SharePartition::complete_dlq`]), as Kafka's
//! `initiateDLQAndArchive`. ARCHIVING is not terminal: the SPSO waits for it.
//!
//! The rooms: this file, the acquisition and acknowledgement state machine;
//! `share_partition/state_write.rs`, the state writes and their answers;
//! `share_partition/fair_share.rs`, the in-flight window shared among the fetching members;
//! `share_partition/dlq_archive.rs`, the hand-over to the DLQ writer.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use kraftd_protocol::messages::read_share_group_state_request::{
    PartitionData as ReadPartitionData, ReadStateData,
};
use kraftd_protocol::messages::read_share_group_state_response::PartitionResult;
use kraftd_protocol::messages::share_fetch_response::AcquiredRecords;
use kraftd_protocol::messages::{ReadShareGroupStateRequest, WriteShareGroupStateRequest};
use kraftd_protocol::{ErrorCode, Uuid};

/// The start offset the share coordinator answers for a partition whose state was never
/// initialized (Kafka's `PartitionFactory.UNINITIALIZED_START_OFFSET`).
pub const UNINITIALIZED_START_OFFSET: i64 = -1;

/// Kafka's `RecordState`, with its persisted ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    Available,
    Acquired,
    Acknowledged,
    /// On its way to the group's dead-letter queue (KIP-1191).
    Archiving,
    Archived,
}

impl RecordState {
    /// The id in WriteShareGroupState / ReadShareGroupState.
    pub fn id(self) -> i8 {
        match self {
            RecordState::Available => 0,
            RecordState::Acquired => 1,
            RecordState::Acknowledged => 2,
            RecordState::Archiving => 3,
            RecordState::Archived => 4,
        }
    }

    /// A persisted state. An acquired record is read back as available (its lock died with
    /// the leader that held it); an ARCHIVING one resumes its way to the dead-letter queue.
    pub fn from_persisted(id: i8) -> Option<RecordState> {
        match id {
            0 | 1 => Some(RecordState::Available),
            2 => Some(RecordState::Acknowledged),
            3 => Some(RecordState::Archiving),
            4 => Some(RecordState::Archived),
            _ => None,
        }
    }

    /// Acknowledged and archived records are done: the SPSO may move past them.
    pub fn is_terminal(self) -> bool {
        matches!(self, RecordState::Acknowledged | RecordState::Archived)
    }
}

/// Kafka's `AcknowledgeType` plus the gap marker 0 the client sends for offsets it never
/// received (compacted away, transaction markers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcknowledgeType {
    Gap,
    Accept,
    Release,
    Reject,
    /// Renews the acquisition lock (KIP-1222); the record stays acquired.
    Renew,
}

impl AcknowledgeType {
    pub fn from_id(id: i8) -> Option<AcknowledgeType> {
        match id {
            0 => Some(AcknowledgeType::Gap),
            1 => Some(AcknowledgeType::Accept),
            2 => Some(AcknowledgeType::Release),
            3 => Some(AcknowledgeType::Reject),
            4 => Some(AcknowledgeType::Renew),
            _ => None,
        }
    }
}

/// Kafka's `ShareAcquireMode` (ShareFetch v2 `ShareAcquireMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareAcquireMode {
    /// Whole fetched batches are acquired; the fetch's max records is a soft limit.
    BatchOptimized,
    /// No more than max records are acquired, splitting batches if needed.
    RecordLimit,
}

impl ShareAcquireMode {
    pub fn from_id(id: i8) -> Option<ShareAcquireMode> {
        match id {
            0 => Some(ShareAcquireMode::BatchOptimized),
            1 => Some(ShareAcquireMode::RecordLimit),
            _ => None,
        }
    }
}

/// The settings a share partition reads, resolved per call from the group's dynamic
/// configs with the broker's `group.share.*` defaults (Kafka's `ShareGroupConfigProvider`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharePartitionConfig {
    /// `group.share.partition.max.record.locks`: the most in-flight records.
    pub max_in_flight_records: usize,
    /// `share.delivery.count.limit` / `group.share.delivery.count.limit`.
    pub max_delivery_count: i16,
    /// `share.record.lock.duration.ms` / `group.share.record.lock.duration.ms`.
    pub record_lock_duration_ms: i64,
    /// `share.renew.acknowledge.enable`.
    pub renew_acknowledge_enabled: bool,
    /// Rejected records and those past the delivery count limit go to the group's
    /// dead-letter queue: `share.version` >= 2 and `errors.deadletterqueue.topic.name` set
    /// (Kafka's `isDLQEnabledForGroup`).
    pub dlq_enabled: bool,
}

impl Default for SharePartitionConfig {
    /// Kafka 4.4's defaults.
    fn default() -> Self {
        SharePartitionConfig {
            max_in_flight_records: 2000,
            max_delivery_count: 5,
            record_lock_duration_ms: 30_000,
            renew_acknowledge_enabled: true,
            dlq_enabled: false,
        }
    }
}

/// What acquisition needs of one batch a log read returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchedBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    /// -1 without one.
    pub producer_id: i64,
    pub is_transactional: bool,
    /// A control batch whose first record is an ABORT marker.
    pub is_abort_marker: bool,
}

/// One acknowledgement batch of ShareFetch / ShareAcknowledge (Kafka's
/// `ShareAcknowledgementBatch`): one type for the whole range, or one per offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcknowledgementBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub acknowledge_types: Vec<i8>,
}

/// Where a share partition is in its life (Kafka's `SharePartitionState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharePartitionState {
    /// Not yet loaded from the share coordinator.
    Empty,
    /// ReadShareGroupState sent, not answered.
    Initializing,
    /// Serving fetches and acknowledgements.
    Active,
    /// The load failed with this error; the manager drops the partition and retries.
    Failed(ErrorCode),
    /// Leadership moved away; nothing may change it any more.
    Fenced,
}

/// Why a record goes to the dead-letter queue (Kafka's `ShareGroupDLQManager.CLIENT_REJECT`
/// and `DELIVERY_COUNT_EXCEEDED`); the message is the `__dlq.errors.message` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DlqCause {
    ClientReject,
    DeliveryCountExceeded,
}

impl DlqCause {
    /// Kafka's throwable message.
    pub fn message(self) -> &'static str {
        match self {
            DlqCause::ClientReject => "Offset rejected by client.",
            DlqCause::DeliveryCountExceeded => "Offset delivery count exceeded the threshold.",
        }
    }
}

/// Records in ARCHIVING whose state is persisted, for the dead-letter queue: contiguous
/// offsets with one delivery count and cause (Kafka's `ShareGroupDLQRecordParameter` less
/// the group and partition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DlqBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub delivery_count: i16,
    pub cause: DlqCause,
}

/// A WriteShareGroupState to send; its answer goes back through
/// [`SharePartition::complete_write`] with `write_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct StateWrite {
    pub write_id: u64,
    pub request: WriteShareGroupStateRequest,
}

/// The outcome of an acquisition: the ranges for the ShareFetch answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShareAcquiredRecords {
    pub acquired_records: Vec<AcquiredRecords>,
    /// How many offsets were acquired.
    pub count: usize,
}

/// One share group's state of one partition (see the module docs).
#[derive(Debug)]
pub struct SharePartition {
    group_id: String,
    topic_id: Uuid,
    partition: i32,
    leader_epoch: i32,
    state: SharePartitionState,
    /// The SPSO: every offset below it is acknowledged or archived.
    start_offset: i64,
    state_epoch: i32,
    /// One entry per offset from `start_offset`.
    records: VecDeque<InFlightRecord>,
    /// The records of each unanswered write as they were before it, for a rollback.
    pending_writes: BTreeMap<u64, Vec<(i64, InFlightRecord)>>,
    next_write_id: u64,
    /// Records whose acquisition lock expired (a metric).
    acquisition_lock_timeouts: u64,
    /// The members that asked this partition for records within the acquisition lock
    /// duration, with when they last did: the in-flight limit is shared among them
    /// ([`SharePartition::fair_share`]).
    fetchers: HashMap<Arc<str>, i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct InFlightRecord {
    state: RecordState,
    delivery_count: i16,
    /// The owner while acquired.
    member_id: Option<Arc<str>>,
    /// When the acquisition lock expires, while acquired.
    lock_expiry_ms: i64,
    /// The write that carries this record's last change, until it is answered.
    in_transition: Option<u64>,
    /// While ARCHIVING: why, and whether it was handed to the dead-letter queue writer.
    dlq: Option<(DlqCause, bool)>,
}

impl InFlightRecord {
    fn new(state: RecordState, delivery_count: i16) -> Self {
        InFlightRecord {
            state,
            delivery_count,
            member_id: None,
            lock_expiry_ms: 0,
            in_transition: None,
            dlq: None,
        }
    }

    fn acquirable(&self) -> bool {
        self.state == RecordState::Available && self.in_transition.is_none()
    }

    /// Kafka's transition to AVAILABLE: archived instead once the delivery count reached
    /// the limit (on its way to the dead-letter queue when the group has one).
    fn release(&mut self, config: &SharePartitionConfig) {
        if self.delivery_count >= config.max_delivery_count {
            self.archive(config, DlqCause::DeliveryCountExceeded);
        } else {
            self.state = RecordState::Available;
        }
        self.member_id = None;
        self.lock_expiry_ms = 0;
    }

    /// Archived, or ARCHIVING for the dead-letter queue when the group has one.
    fn archive(&mut self, config: &SharePartitionConfig, cause: DlqCause) {
        if config.dlq_enabled {
            self.state = RecordState::Archiving;
            self.dlq = Some((cause, false));
        } else {
            self.state = RecordState::Archived;
        }
        self.member_id = None;
    }
}

impl SharePartition {
    pub fn new(group_id: String, topic_id: Uuid, partition: i32, leader_epoch: i32) -> Self {
        SharePartition {
            group_id,
            topic_id,
            partition,
            leader_epoch,
            state: SharePartitionState::Empty,
            start_offset: 0,
            state_epoch: 0,
            records: VecDeque::new(),
            pending_writes: BTreeMap::new(),
            next_write_id: 1,
            acquisition_lock_timeouts: 0,
            fetchers: HashMap::new(),
        }
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }

    pub fn state(&self) -> SharePartitionState {
        self.state
    }

    /// The SPSO.
    pub fn start_offset(&self) -> i64 {
        self.start_offset
    }

    /// The offset after the last in-flight record (Kafka's `endOffset` + 1 while records are
    /// in flight, its `endOffset` when none are).
    pub fn end_offset(&self) -> i64 {
        self.start_offset + self.records.len() as i64
    }

    pub fn state_epoch(&self) -> i32 {
        self.state_epoch
    }

    /// The state of `offset`, if it is in flight.
    pub fn record_state(&self, offset: i64) -> Option<(RecordState, i16)> {
        self.record(offset).map(|r| (r.state, r.delivery_count))
    }

    /// The member holding `offset`, if acquired.
    pub fn record_owner(&self, offset: i64) -> Option<&str> {
        self.record(offset).and_then(|r| r.member_id.as_deref())
    }

    /// Records whose acquisition lock expired here (Kafka's `AcquisitionLockTimeoutPerSec`).
    pub fn acquisition_lock_timeouts(&self) -> u64 {
        self.acquisition_lock_timeouts
    }

    /// How many records are in flight (counted against `max_in_flight_records`).
    pub fn in_flight_records(&self) -> usize {
        self.records.len()
    }

    /// Starts the load: the ReadShareGroupState request to send, or None when the partition
    /// is past `Empty` (already loading or loaded).
    pub fn begin_initialize(&mut self) -> Option<ReadShareGroupStateRequest> {
        if self.state != SharePartitionState::Empty {
            return None;
        }
        self.state = SharePartitionState::Initializing;
        Some(ReadShareGroupStateRequest {
            group_id: self.group_id.clone(),
            topics: vec![ReadStateData {
                topic_id: self.topic_id,
                partitions: vec![ReadPartitionData {
                    partition: self.partition,
                    leader_epoch: self.leader_epoch,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    /// Ends the load with the share coordinator's answer for this partition (or the error
    /// that stopped it). A start offset of [`UNINITIALIZED_START_OFFSET`] is replaced with
    /// `reset_start_offset()`: the offset `share.auto.offset.reset` names, as Kafka's
    /// `startOffsetDuringInitialization` decides on the partition leader.
    pub fn complete_initialize(
        &mut self,
        result: Result<&PartitionResult, ErrorCode>,
        reset_start_offset: impl FnOnce() -> i64,
    ) -> Result<(), ErrorCode> {
        if self.state != SharePartitionState::Initializing {
            return Err(ErrorCode::UnknownServerError);
        }
        let outcome = result.and_then(|p| self.load(p, reset_start_offset));
        match outcome {
            Ok(()) => self.state = SharePartitionState::Active,
            Err(e) => self.state = SharePartitionState::Failed(e),
        }
        outcome
    }

    fn load(
        &mut self,
        p: &PartitionResult,
        reset_start_offset: impl FnOnce() -> i64,
    ) -> Result<(), ErrorCode> {
        if p.partition != self.partition {
            return Err(ErrorCode::UnknownServerError);
        }
        if p.error_code != ErrorCode::None.code() {
            return Err(ErrorCode::from_code(p.error_code).unwrap_or(ErrorCode::UnknownServerError));
        }
        let start = if p.start_offset == UNINITIALIZED_START_OFFSET {
            reset_start_offset()
        } else {
            p.start_offset
        };
        if start < 0 {
            return Err(ErrorCode::UnknownServerError);
        }
        let mut records = VecDeque::new();
        let mut next = start;
        for b in &p.state_batches {
            // Batches out of order, before the start offset or inverted are a corrupt state:
            // Kafka fails the load (IllegalStateException) rather than guess.
            if b.first_offset < next || b.last_offset < b.first_offset {
                return Err(ErrorCode::UnknownServerError);
            }
            let state = RecordState::from_persisted(b.delivery_state)
                .ok_or(ErrorCode::UnknownServerError)?;
            // Offsets between persisted batches were never delivered: available again.
            while next < b.first_offset {
                records.push_back(InFlightRecord::new(RecordState::Available, 0));
                next += 1;
            }
            while next <= b.last_offset {
                records.push_back(InFlightRecord::new(state, b.delivery_count.max(0)));
                next += 1;
            }
        }
        self.start_offset = start;
        self.state_epoch = p.state_epoch;
        self.records = records;
        self.move_start_offset();
        Ok(())
    }

    /// Leadership moved: the partition answers nothing any more (Kafka's `markFenced`).
    pub fn mark_fenced(&mut self) {
        self.state = SharePartitionState::Fenced;
    }

    /// The offset the next log read starts at: the first available record, or the end.
    pub fn next_fetch_offset(&self) -> i64 {
        match self.records.iter().position(InFlightRecord::acquirable) {
            Some(i) => self.start_offset + i as i64,
            None => self.end_offset(),
        }
    }

    /// Whether a fetch could acquire anything now (Kafka's `canAcquireRecords`): available
    /// records in flight, or room for new ones.
    pub fn can_acquire_records(&self, config: &SharePartitionConfig) -> bool {
        self.state == SharePartitionState::Active
            && (self.records.iter().any(InFlightRecord::acquirable)
                || self.records.len() < config.max_in_flight_records)
    }

    /// Acquires for `member_id` what the read from `fetch_offset` returned (`batches`, in
    /// offset order), as Kafka's `acquire`: available in-flight records and new ones, within
    /// the in-flight limit and the fetch's max records (a soft limit in batch-optimized mode:
    /// whole batches). With `aborted_transactions` (read_committed), the batches of aborted
    /// transactions are archived instead of delivered.
    #[allow(clippy::too_many_arguments)]
    pub fn acquire(
        &mut self,
        member_id: &str,
        config: &SharePartitionConfig,
        mode: ShareAcquireMode,
        max_fetch_records: i32,
        fetch_offset: i64,
        batches: &[FetchedBatch],
        aborted_transactions: Option<&[(i64, i64)]>,
        now_ms: i64,
    ) -> ShareAcquiredRecords {
        let mut out = ShareAcquiredRecords::default();
        if self.state != SharePartitionState::Active || max_fetch_records <= 0 {
            return out;
        }
        self.note_fetch(member_id, config, now_ms);
        // A hard limit in both modes, so that whole batches do not let one member take
        // another's share of the in-flight window.
        let share = self.share_left(member_id, config);
        if share.is_some_and(|share| share <= 0) {
            return out;
        }
        let (Some(first), Some(last)) = (batches.first(), batches.last()) else {
            return out;
        };
        if last.last_offset < self.start_offset {
            return out;
        }
        // The in-flight limit: only what fills it, unless the read is between in-flight
        // records (released or expired ones), which never grows the in-flight window.
        let end = self.end_offset();
        let room = config.max_in_flight_records as i64 - self.records.len() as i64;
        let mut max_records = (max_fetch_records as i64).min(room);
        let mut last_to_acquire = last.last_offset;
        if max_records <= 0 {
            if fetch_offset >= end {
                return out;
            }
            max_records = (max_fetch_records as i64).min(end - fetch_offset);
            last_to_acquire = last_to_acquire.min(end - 1);
        }
        // Offsets the read skipped from where it started are gone from the log
        // (compaction): archive them so the SPSO can move (Kafka's maybeArchiveStaleBatches).
        for offset in fetch_offset.max(self.start_offset)..first.base_offset.min(end) {
            if let Some(r) = self.record_mut(offset) {
                if r.acquirable() {
                    r.state = RecordState::Archived;
                }
            }
        }
        let aborted = aborted_batches(batches, aborted_transactions.unwrap_or(&[]));
        let member: Arc<str> = Arc::from(member_id);
        let lock_expiry_ms = now_ms.saturating_add(config.record_lock_duration_ms);
        let max_delivery_count = config.max_delivery_count;
        let throttle_limit = throttle_records_delivery_limit(max_delivery_count);
        let mut acquired: Vec<(i64, i16)> = Vec::new();
        'batches: for (i, batch) in batches.iter().enumerate() {
            if mode == ShareAcquireMode::BatchOptimized && acquired.len() as i64 >= max_records {
                break;
            }
            let lo = batch.base_offset.max(self.start_offset);
            let hi = batch.last_offset.min(last_to_acquire);
            // Records delivered often already go in smaller and smaller groups, the last
            // delivery alone, so that one bad record does not take a whole batch with it
            // to the delivery limit (Kafka's throttled delivery, KIP-1191's companion).
            let throttled = (lo..=hi).any(|o| {
                self.record(o)
                    .is_some_and(|r| r.acquirable() && r.delivery_count >= throttle_limit)
            });
            if throttled && !acquired.is_empty() {
                break;
            }
            let batch_len = batch.last_offset - batch.base_offset + 1;
            let mut throttle_cap: Option<i64> = None;
            let mut batch_acquired = 0;
            for offset in lo..=hi {
                if mode == ShareAcquireMode::RecordLimit && acquired.len() as i64 >= max_records {
                    break 'batches;
                }
                if share.is_some_and(|share| acquired.len() as i64 >= share) {
                    break 'batches;
                }
                if let Some(r) = self.record(offset).filter(|r| r.acquirable()) {
                    let count = r.delivery_count;
                    if max_delivery_count > 2
                        && count == max_delivery_count - 1
                        && !acquired.is_empty()
                    {
                        break 'batches;
                    }
                    if count >= throttle_limit && throttle_cap.is_none() {
                        let shift = (count - throttle_limit + 1).min(62) as u32;
                        throttle_cap = Some((batch_len >> shift).max(1));
                    }
                }
                let end = self.end_offset();
                if offset >= end {
                    // Offsets between batches are absent from the log: archived.
                    for _ in end..offset {
                        self.records
                            .push_back(InFlightRecord::new(RecordState::Archived, 0));
                    }
                    self.records
                        .push_back(InFlightRecord::new(RecordState::Available, 0));
                }
                let r = self.record_mut(offset).expect("offset in flight");
                if !r.acquirable() {
                    continue;
                }
                r.delivery_count = r.delivery_count.saturating_add(1);
                if aborted[i] {
                    r.state = RecordState::Archived;
                    continue;
                }
                r.state = RecordState::Acquired;
                r.member_id = Some(member.clone());
                r.lock_expiry_ms = lock_expiry_ms;
                let count = r.delivery_count;
                acquired.push((offset, count));
                batch_acquired += 1;
                if max_delivery_count > 2 && count == max_delivery_count {
                    break 'batches;
                }
                if throttle_cap == Some(batch_acquired) {
                    break 'batches;
                }
            }
            if throttle_cap.is_some() && batch_acquired > 0 {
                break;
            }
        }
        out.count = acquired.len();
        out.acquired_records = ranges(&acquired);
        self.move_start_offset();
        out
    }

    /// Applies `member_id`'s acknowledgements (Kafka's `acknowledge`): every offset must be
    /// acquired by the member and not in transition, or nothing changes and the partition's
    /// error is INVALID_RECORD_STATE (INVALID_REQUEST for malformed batches or offsets past
    /// the in-flight records). The answer: the write to persist before the client hears
    /// back, or None when nothing durable changed (only renewals, or offsets already below
    /// the SPSO).
    pub fn acknowledge(
        &mut self,
        member_id: &str,
        config: &SharePartitionConfig,
        batches: &[AcknowledgementBatch],
        now_ms: i64,
    ) -> Result<Option<StateWrite>, ErrorCode> {
        if self.state != SharePartitionState::Active {
            return Err(self.not_active_error());
        }
        // Validate everything first so that a refused request changes nothing.
        let mut previous_last_offset = -1;
        for b in batches {
            validate_batch_shape(b)?;
            // Kafka lets one batch start where the previous ended; the offset is then in
            // transition when the second batch reaches it.
            if b.first_offset < previous_last_offset {
                return Err(ErrorCode::InvalidRequest);
            }
            if b.first_offset == previous_last_offset {
                return Err(ErrorCode::InvalidRecordState);
            }
            previous_last_offset = b.last_offset;
            let ack_type = |offset: i64| -> Result<AcknowledgeType, ErrorCode> {
                let id = if b.acknowledge_types.len() == 1 {
                    b.acknowledge_types[0]
                } else {
                    b.acknowledge_types[(offset - b.first_offset) as usize]
                };
                AcknowledgeType::from_id(id).ok_or(ErrorCode::InvalidRequest)
            };
            if b.last_offset < self.start_offset {
                continue;
            }
            if b.first_offset >= self.end_offset() || b.last_offset >= self.end_offset() {
                return Err(ErrorCode::InvalidRequest);
            }
            for offset in b.first_offset.max(self.start_offset)..=b.last_offset {
                let t = ack_type(offset)?;
                if t == AcknowledgeType::Renew && !config.renew_acknowledge_enabled {
                    return Err(ErrorCode::InvalidRecordState);
                }
                let r = self.record(offset).expect("offset in flight");
                if r.state != RecordState::Acquired
                    || r.in_transition.is_some()
                    || r.member_id.as_deref() != Some(member_id)
                {
                    return Err(ErrorCode::InvalidRecordState);
                }
            }
        }
        let write_id = self.take_write_id();
        let mut previous = Vec::new();
        for b in batches {
            if b.last_offset < self.start_offset {
                continue;
            }
            for offset in b.first_offset.max(self.start_offset)..=b.last_offset {
                let id = if b.acknowledge_types.len() == 1 {
                    b.acknowledge_types[0]
                } else {
                    b.acknowledge_types[(offset - b.first_offset) as usize]
                };
                let t = AcknowledgeType::from_id(id).expect("validated");
                let r = self.record_mut(offset).expect("offset in flight");
                if t == AcknowledgeType::Renew {
                    r.lock_expiry_ms = now_ms.saturating_add(config.record_lock_duration_ms);
                    continue;
                }
                previous.push((offset, r.clone()));
                match t {
                    AcknowledgeType::Accept => {
                        r.state = RecordState::Acknowledged;
                        r.member_id = None;
                    }
                    AcknowledgeType::Gap => {
                        r.state = RecordState::Archived;
                        r.member_id = None;
                    }
                    AcknowledgeType::Reject => r.archive(config, DlqCause::ClientReject),
                    AcknowledgeType::Release => r.release(config),
                    AcknowledgeType::Renew => unreachable!("renewals change no state"),
                }
                r.in_transition = Some(write_id);
            }
        }
        Ok(self.write_for(write_id, previous))
    }

    /// Releases every record `member_id` holds (its share session closed or its connection
    /// dropped; Kafka's `releaseAcquiredRecords`): available again, or archived at the
    /// delivery count limit.
    pub fn release_acquired_records(
        &mut self,
        member_id: &str,
        config: &SharePartitionConfig,
    ) -> Option<StateWrite> {
        // A member that leaves no longer takes a share of the in-flight window.
        self.fetchers.remove(member_id);
        if self.state != SharePartitionState::Active {
            return None;
        }
        let write_id = self.take_write_id();
        let mut previous = Vec::new();
        let start = self.start_offset;
        for (i, r) in self.records.iter_mut().enumerate() {
            if r.state == RecordState::Acquired
                && r.in_transition.is_none()
                && r.member_id.as_deref() == Some(member_id)
            {
                previous.push((start + i as i64, r.clone()));
                r.release(config);
                r.in_transition = Some(write_id);
            }
        }
        self.write_for(write_id, previous)
    }

    /// The earliest acquisition lock expiry, for the caller's timer.
    pub fn next_lock_expiry_ms(&self) -> Option<i64> {
        self.records
            .iter()
            .filter(|r| r.state == RecordState::Acquired && r.in_transition.is_none())
            .map(|r| r.lock_expiry_ms)
            .min()
    }

    /// Expires the acquisition locks due at `now_ms` (Kafka's acquisition lock timeout): the
    /// records become available again, or archived at the delivery count limit. Applied at
    /// once (Kafka does not roll an expiry back); the write only records it.
    pub fn expire_acquisition_locks(
        &mut self,
        config: &SharePartitionConfig,
        now_ms: i64,
    ) -> Option<StateWrite> {
        if self.state != SharePartitionState::Active {
            return None;
        }
        let start = self.start_offset;
        let mut changed = Vec::new();
        for (i, r) in self.records.iter_mut().enumerate() {
            if r.state == RecordState::Acquired
                && r.in_transition.is_none()
                && r.lock_expiry_ms <= now_ms
            {
                r.release(config);
                changed.push(start + i as i64);
            }
        }
        if changed.is_empty() {
            return None;
        }
        self.acquisition_lock_timeouts += changed.len() as u64;
        let write_id = self.take_write_id();
        let batches = self.state_batches(changed.iter().copied());
        let request = self.write_request(write_id, batches);
        self.pending_writes.insert(write_id, Vec::new());
        self.move_start_offset();
        Some(StateWrite { write_id, request })
    }

    /// The log start offset moved past the SPSO (retention, DeleteRecords): records below
    /// it that nobody holds are archived and the SPSO follows (Kafka's
    /// `updateCacheAndOffsets`).
    pub fn update_log_start_offset(&mut self, log_start_offset: i64) {
        if self.state != SharePartitionState::Active || log_start_offset <= self.start_offset {
            return;
        }
        if self.records.is_empty() {
            self.start_offset = log_start_offset;
            return;
        }
        for offset in self.start_offset..log_start_offset.min(self.end_offset()) {
            let r = self.record_mut(offset).expect("offset in flight");
            if r.acquirable() {
                r.state = RecordState::Archived;
            }
        }
        self.move_start_offset();
        if self.records.is_empty() && self.start_offset < log_start_offset {
            self.start_offset = log_start_offset;
        }
    }

    fn not_active_error(&self) -> ErrorCode {
        match self.state {
            SharePartitionState::Fenced => ErrorCode::FencedStateEpoch,
            SharePartitionState::Failed(e) => e,
            _ => ErrorCode::CoordinatorLoadInProgress,
        }
    }

    fn record(&self, offset: i64) -> Option<&InFlightRecord> {
        let i = offset.checked_sub(self.start_offset)?;
        usize::try_from(i).ok().and_then(|i| self.records.get(i))
    }

    fn record_mut(&mut self, offset: i64) -> Option<&mut InFlightRecord> {
        let i = offset.checked_sub(self.start_offset)?;
        usize::try_from(i)
            .ok()
            .and_then(|i| self.records.get_mut(i))
    }
}

/// One acknowledgement batch's shape: a range, one type or one per offset, every type
/// known (the part of Kafka's `validateAcknowledgementBatches` that needs no request context).
pub fn validate_batch_shape(b: &AcknowledgementBatch) -> Result<(), ErrorCode> {
    if b.first_offset < 0 || b.last_offset < b.first_offset {
        return Err(ErrorCode::InvalidRequest);
    }
    let len = b.last_offset - b.first_offset + 1;
    let types = b.acknowledge_types.len() as i64;
    if types == 0 || (types != 1 && types != len) {
        return Err(ErrorCode::InvalidRequest);
    }
    if b.acknowledge_types
        .iter()
        .any(|t| AcknowledgeType::from_id(*t).is_none())
    {
        return Err(ErrorCode::InvalidRequest);
    }
    Ok(())
}

/// Kafka's `KafkaApis.validateAcknowledgementBatches` for one partition: each batch well
/// formed, in order (a batch may start where the previous ended), types up to RENEW (4)
/// only where the request version has it, and RENEW only in a renew request.
pub fn validate_acknowledgement_batches(
    batches: &[AcknowledgementBatch],
    supports_renew: bool,
    is_renew_ack: bool,
) -> Result<(), ErrorCode> {
    let max_type = if supports_renew { 4 } else { 3 };
    let mut previous_end_offset = -1;
    for b in batches {
        if b.first_offset > b.last_offset || b.first_offset < previous_end_offset {
            return Err(ErrorCode::InvalidRequest);
        }
        let types = b.acknowledge_types.len() as i64;
        if types == 0 || (types > 1 && b.last_offset - b.first_offset != types - 1) {
            return Err(ErrorCode::InvalidRequest);
        }
        if b.acknowledge_types.iter().any(|t| *t < 0 || *t > max_type) {
            return Err(ErrorCode::InvalidRequest);
        }
        if b.acknowledge_types.contains(&4) && !is_renew_ack {
            return Err(ErrorCode::InvalidRequest);
        }
        previous_end_offset = b.last_offset;
    }
    Ok(())
}

/// The delivery count from which records are delivered in throttled groups (Kafka's
/// `throttleRecordsDeliveryLimit`: half the limit, at least 2).
fn throttle_records_delivery_limit(max_delivery_count: i16) -> i16 {
    let half = (max_delivery_count as i32 + 1) / 2;
    half.max(2) as i16
}

/// Which batches belong to aborted transactions (Kafka's
/// `fetchAbortedTransactionRecordBatches`): a transactional batch of a producer whose
/// aborted transaction started at or before it, until that producer's ABORT marker.
fn aborted_batches(batches: &[FetchedBatch], aborted_transactions: &[(i64, i64)]) -> Vec<bool> {
    let mut pending: Vec<(i64, i64)> = aborted_transactions.to_vec();
    // By first offset, taken from the front.
    pending.sort_by_key(|(_, first_offset)| std::cmp::Reverse(*first_offset));
    let mut aborting = std::collections::HashSet::new();
    batches
        .iter()
        .map(|b| {
            if b.producer_id < 0 {
                return false;
            }
            while let Some((pid, first)) = pending.last().copied() {
                if first > b.last_offset {
                    break;
                }
                aborting.insert(pid);
                pending.pop();
            }
            if b.is_abort_marker {
                aborting.remove(&b.producer_id);
                false
            } else {
                b.is_transactional && aborting.contains(&b.producer_id)
            }
        })
        .collect()
}

/// Acquired offsets as AcquiredRecords: runs of contiguous offsets with one delivery count.
fn ranges(acquired: &[(i64, i16)]) -> Vec<AcquiredRecords> {
    let mut out: Vec<AcquiredRecords> = Vec::new();
    for &(offset, delivery_count) in acquired {
        if let Some(last) = out.last_mut() {
            if last.last_offset + 1 == offset && last.delivery_count == delivery_count {
                last.last_offset = offset;
                continue;
            }
        }
        out.push(AcquiredRecords {
            first_offset: offset,
            last_offset: offset,
            delivery_count,
            ..Default::default()
        });
    }
    out
}

/// Kafka's `createBatches` for a batch-optimized fetch: an acquired range longer than the
/// request's `batch_size` records is cut at the first log batch boundary at or past each
/// `batch_size` records, so the client acknowledges in pieces of about that size (a batch is
/// never cut inside). `batch_size` <= 0 cuts nothing.
pub fn split_by_batch_size(
    acquired: Vec<AcquiredRecords>,
    batches: &[FetchedBatch],
    batch_size: i32,
) -> Vec<AcquiredRecords> {
    if batch_size <= 0 {
        return acquired;
    }
    let size = i64::from(batch_size);
    let mut out = Vec::with_capacity(acquired.len());
    for range in acquired {
        if range.last_offset - range.first_offset < size {
            out.push(range);
            continue;
        }
        let mut first = range.first_offset;
        for b in batches {
            if b.base_offset > range.last_offset {
                break;
            }
            if b.base_offset > first && b.base_offset - first >= size {
                out.push(AcquiredRecords {
                    first_offset: first,
                    last_offset: b.base_offset - 1,
                    ..range.clone()
                });
                first = b.base_offset;
            }
        }
        out.push(AcquiredRecords {
            first_offset: first,
            ..range
        });
    }
    out
}

mod dlq_archive;
mod fair_share;
mod state_write;

#[cfg(test)]
mod tests;
