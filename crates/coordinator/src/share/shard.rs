//! `ShareCoordinatorShard` (Kafka's `ShareCoordinatorShard`): the share partitions' states
//! of one `__share_group_state` partition, with Kafka 4.4's rules.
//!
//! Each request names one share partition (the service splits a request by key, as Kafka's
//! `ShareCoordinatorService` does). The state of a share partition lives in a ShareSnapshot
//! record followed by ShareUpdate records: a write becomes an update (its batches merged
//! among themselves), replayed onto the snapshot by merging batches
//! ([`super::offset::combine_state_batches`]); after
//! `share.coordinator.snapshot.update.records.per.snapshot` updates the next write is a whole
//! snapshot again, so loading a share partition never replays more than that many updates.
//!
//! Fencing: a write or read whose leader epoch is below the one recorded gets
//! FENCED_LEADER_EPOCH; a write or initialize whose state epoch is below the recorded one
//! gets FENCED_STATE_EPOCH; a read or write of a share partition never initialized gets
//! INVALID_REQUEST; negative ids and epochs are INVALID_REQUEST; a topic or partition the
//! metadata does not know is UNKNOWN_TOPIC_OR_PARTITION. A read with a new leader epoch
//! records it (an update with no batches), so a share-partition leader that lost its
//! leadership is fenced on its next write.
//!
//! State changes only in [`ShareCoordinatorShard::replay`]: a request's records are applied
//! by replaying them at once, the path a load takes too.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use kraftd_protocol::messages::{
    delete_share_group_state_response as delete_resp,
    initialize_share_group_state_response as init_resp,
    read_share_group_state_response as read_resp,
    read_share_group_state_summary_response as summary_resp,
    write_share_group_state_response as write_resp, DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse, InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse, ReadShareGroupStateRequest, ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateRequest, WriteShareGroupStateResponse,
};
use kraftd_protocol::{ErrorCode, ShareCoordinatorRecordKey, ShareCoordinatorRecordValue, Uuid};

use crate::context::{NoTopics, ReplyId, TopicMetadata};
use crate::shard::ReplayFailure;
use crate::timer::Timer;

use super::config::ShareCoordinatorConfig;
use super::offset::{
    combine_state_batches, PersisterStateBatch, ShareGroupOffset,
    UNINITIALIZED_DELIVERY_COMPLETE_COUNT, UNINITIALIZED_EPOCH, UNINITIALIZED_START_OFFSET,
};
use super::records::{offset_from_snapshot, update_batches, ShareCoordinatorRecord};
use super::{SharePartitionKey, SHARE_GROUP_STATE_TOPIC_NAME, SHARE_VERSION_FEATURE};

/// One share partition's request: the request holds exactly one topic with one partition
/// (the service splits the client's request by key).
#[derive(Debug, Clone)]
pub enum ShareShardRequest {
    Initialize(InitializeShareGroupStateRequest),
    Read(ReadShareGroupStateRequest),
    Write(WriteShareGroupStateRequest),
    Delete(DeleteShareGroupStateRequest),
    ReadSummary(ReadShareGroupStateSummaryRequest),
}

/// The answer to a [`ShareShardRequest`] of the same kind, for its one partition.
#[derive(Debug, Clone, PartialEq)]
pub enum ShareShardResponse {
    Initialize(InitializeShareGroupStateResponse),
    Read(ReadShareGroupStateResponse),
    Write(WriteShareGroupStateResponse),
    Delete(DeleteShareGroupStateResponse),
    ReadSummary(ReadShareGroupStateSummaryResponse),
}

/// Work the runtime carries out once everything written before it is committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareWork {
    /// Delete the partition's records below `offset` (Kafka's prune job: every share
    /// partition's state is in records at or after it).
    DeleteRecordsBefore { offset: i64 },
}

/// What a call produced: records to append (already replayed), replies and work to release
/// once they, and everything written before them, are committed.
#[derive(Debug, Default)]
pub struct ShareShardOutput {
    pub records: Vec<ShareCoordinatorRecord>,
    pub replies: Vec<(ReplyId, ShareShardResponse)>,
    pub work: Vec<ShareWork>,
}

/// The shard's periodic work (Kafka's service timer tasks).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ShareTimerKey {
    /// `share.coordinator.cold.partition.snapshot.interval.ms`.
    SnapshotColdPartitions,
    /// `share.coordinator.state.topic.prune.interval.ms`.
    PruneRecords,
}

/// The state of one `__share_group_state` partition (see the module docs).
#[derive(Debug)]
pub struct ShareCoordinatorShard {
    partition: i32,
    config: Arc<ShareCoordinatorConfig>,
    topics: Arc<dyn TopicMetadata>,
    share_state: HashMap<SharePartitionKey, ShareGroupOffset>,
    /// The highest leader epoch recorded per share partition (snapshots and updates).
    leader_epochs: HashMap<SharePartitionKey, i32>,
    /// The highest state epoch recorded per share partition (snapshots only).
    state_epochs: HashMap<SharePartitionKey, i32>,
    /// Updates since the last snapshot that reset the count.
    snapshot_update_count: HashMap<SharePartitionKey, i32>,
    /// The topics of this shard's share partitions that the last metadata had: one gone
    /// from the next metadata was deleted (a topic never seen is not taken for deleted, so
    /// a shard loaded before its first metadata deletes nothing).
    present_topics: BTreeSet<Uuid>,
    /// Where the records that matter are (Kafka's `ShareCoordinatorOffsetsManager`).
    offsets: OffsetsManager,
    /// What this shard wrote whose offsets the runtime has not reported yet, in order:
    /// (share partition, whether it is a snapshot, whether it is a tombstone).
    unplaced: VecDeque<(SharePartitionKey, bool, bool)>,
    /// The offset the last prune asked for (Kafka's `lastPrunedOffsets`): not asked twice.
    last_pruned: Option<i64>,
    /// State writes asked of this shard since the runtime last took the count (Kafka's
    /// `ShareCoordinatorWrite` sensor, `write-total`): every WriteShareGroupState, refused
    /// ones included, and every read that records a new leader epoch.
    writes: u64,
    timer: Timer<ShareTimerKey>,
    out: ShareShardOutput,
}

impl ShareCoordinatorShard {
    pub fn new(partition: i32, config: Arc<ShareCoordinatorConfig>) -> Self {
        ShareCoordinatorShard {
            partition,
            config,
            topics: Arc::new(NoTopics),
            share_state: HashMap::new(),
            leader_epochs: HashMap::new(),
            state_epochs: HashMap::new(),
            snapshot_update_count: HashMap::new(),
            present_topics: BTreeSet::new(),
            offsets: OffsetsManager::default(),
            unplaced: VecDeque::new(),
            last_pruned: None,
            writes: 0,
            timer: Timer::default(),
            out: ShareShardOutput::default(),
        }
    }

    /// The state writes counted since the last call (see `writes`), for the runtime's
    /// `write-total`.
    pub fn take_write_count(&mut self) -> u64 {
        std::mem::take(&mut self.writes)
    }

    pub fn partition(&self) -> i32 {
        self.partition
    }

    /// A share partition's state, if initialized.
    pub fn state(&self, key: &SharePartitionKey) -> Option<&ShareGroupOffset> {
        self.share_state.get(key)
    }

    /// The leader and state epochs recorded for a share partition.
    pub fn epochs(&self, key: &SharePartitionKey) -> (Option<i32>, Option<i32>) {
        (
            self.leader_epochs.get(key).copied(),
            self.state_epochs.get(key).copied(),
        )
    }

    /// Every share partition with state here, sorted.
    pub fn keys(&self) -> Vec<SharePartitionKey> {
        let mut keys: Vec<_> = self.share_state.keys().cloned().collect();
        keys.sort();
        keys
    }

    pub fn share_partition_count(&self) -> usize {
        self.share_state.len()
    }

    /// Applies one record of the partition's log (Kafka's `ShareCoordinatorShard.replay`),
    /// at `offset` when known (loading; a record written live learns its offset from
    /// [`ShareCoordinatorShard::on_appended`]).
    pub fn replay(
        &mut self,
        offset: Option<i64>,
        record: &ShareCoordinatorRecord,
    ) -> Result<(), ReplayFailure> {
        let key = record.share_partition_key();
        let is_snapshot = matches!(record.key, ShareCoordinatorRecordKey::ShareSnapshot(_));
        match offset {
            Some(offset) => {
                if is_snapshot {
                    self.offsets
                        .update(key.clone(), offset, record.value.is_none());
                }
            }
            None => self
                .unplaced
                .push_back((key.clone(), is_snapshot, record.value.is_none())),
        }
        match (&record.key, &record.value) {
            (ShareCoordinatorRecordKey::ShareSnapshot(_), None) => {
                self.share_state.remove(&key);
                self.leader_epochs.remove(&key);
                self.state_epochs.remove(&key);
                self.snapshot_update_count.remove(&key);
            }
            (
                ShareCoordinatorRecordKey::ShareSnapshot(_),
                Some((ShareCoordinatorRecordValue::ShareSnapshot(v), _)),
            ) => {
                raise(&mut self.leader_epochs, &key, v.leader_epoch);
                raise(&mut self.state_epochs, &key, v.state_epoch);
                self.share_state
                    .insert(key.clone(), offset_from_snapshot(v));
                if let Some(n) = self.snapshot_update_count.get_mut(&key) {
                    if *n >= self.config.snapshot_update_records_per_snapshot {
                        *n = 0;
                    }
                }
            }
            (
                ShareCoordinatorRecordKey::ShareUpdate(_),
                Some((ShareCoordinatorRecordValue::ShareUpdate(v), _)),
            ) => {
                raise(&mut self.leader_epochs, &key, v.leader_epoch);
                let batches = update_batches(v);
                let next = match self.share_state.get(&key) {
                    Some(so_far) => so_far.merge_update(
                        v.start_offset,
                        v.leader_epoch,
                        v.delivery_complete_count,
                        &batches,
                    ),
                    None => ShareGroupOffset {
                        snapshot_epoch: v.snapshot_epoch,
                        state_epoch: UNINITIALIZED_EPOCH,
                        leader_epoch: v.leader_epoch,
                        start_offset: v.start_offset,
                        delivery_complete_count: v.delivery_complete_count,
                        state_batches: batches,
                        create_timestamp: 0,
                        write_timestamp: 0,
                    },
                };
                self.share_state.insert(key.clone(), next);
                *self.snapshot_update_count.entry(key).or_insert(0) += 1;
            }
            // An update tombstone means nothing to Kafka's shard either.
            (ShareCoordinatorRecordKey::ShareUpdate(_), None) => {}
            (_, Some(_)) => {
                return Err(ReplayFailure::Corrupt(format!(
                    "{SHARE_GROUP_STATE_TOPIC_NAME}-{}: a record whose value type is not its key's",
                    self.partition
                )))
            }
        }
        Ok(())
    }

    /// After the last record of a load: the cold-partition snapshot task.
    pub fn on_loaded(&mut self, now_ms: i64) {
        self.timer.schedule(
            ShareTimerKey::SnapshotColdPartitions,
            now_ms + self.config.cold_partition_snapshot_interval_ms,
        );
        self.timer.schedule(
            ShareTimerKey::PruneRecords,
            now_ms + self.config.state_topic_prune_interval_ms,
        );
    }

    /// The records this shard wrote last were appended from `base_offset` on: they count
    /// for pruning from now on.
    pub fn on_appended(&mut self, base_offset: i64) {
        let unplaced = std::mem::take(&mut self.unplaced);
        for (offset, (key, is_snapshot, is_delete)) in (base_offset..).zip(unplaced) {
            if is_snapshot {
                self.offsets.update(key, offset, is_delete);
            }
        }
    }

    /// The offset below which every record of this partition is redundant (each share
    /// partition's state is in its last snapshot and the updates after it), if any.
    pub fn last_redundant_offset(&self) -> Option<i64> {
        self.offsets.last_redundant_offset()
    }

    /// New metadata: the share partitions of topics that are gone are deleted (Kafka's
    /// `maybeCleanupShareState` on a topics delta). Only this shard's topics are looked up,
    /// so the cost follows the shard's state, not the cluster's topic count.
    pub fn on_metadata_update(&mut self, topics: Arc<dyn TopicMetadata>) {
        let ours: BTreeSet<Uuid> = self.share_state.keys().map(|k| k.topic_id).collect();
        let (present, absent): (BTreeSet<Uuid>, BTreeSet<Uuid>) = ours
            .into_iter()
            .partition(|id| topics.topic_by_id(*id).is_some());
        let deleted: BTreeSet<Uuid> = absent.intersection(&self.present_topics).copied().collect();
        self.present_topics = present;
        self.topics = topics;
        if deleted.is_empty() {
            return;
        }
        for key in self.keys() {
            if deleted.contains(&key.topic_id) {
                self.write(ShareCoordinatorRecord::tombstone(&key));
            }
        }
    }

    pub fn next_deadline(&self) -> Option<i64> {
        self.timer.next_deadline()
    }

    /// Fires what is due: the cold-partition snapshots, while share groups are enabled
    /// (`share.version` >= 1), as Kafka's service runs the task.
    pub fn on_timeout(&mut self, now_ms: i64) {
        while let Some(key) = self.timer.pop_expired(now_ms) {
            match key {
                ShareTimerKey::SnapshotColdPartitions => {
                    if self.topics.feature_level(SHARE_VERSION_FEATURE) >= 1 {
                        self.snapshot_cold_partitions(now_ms);
                    }
                    self.timer.schedule(
                        ShareTimerKey::SnapshotColdPartitions,
                        now_ms + self.config.cold_partition_snapshot_interval_ms,
                    );
                }
                ShareTimerKey::PruneRecords => {
                    let enabled = self.topics.feature_level(SHARE_VERSION_FEATURE) >= 1;
                    if let Some(offset) = self.last_redundant_offset() {
                        if enabled && self.last_pruned != Some(offset) {
                            self.out
                                .work
                                .push(ShareWork::DeleteRecordsBefore { offset });
                            self.last_pruned = Some(offset);
                        }
                    }
                    self.timer.schedule(
                        ShareTimerKey::PruneRecords,
                        now_ms + self.config.state_topic_prune_interval_ms,
                    );
                }
            }
        }
    }

    /// Handles one request; its reply comes out of [`ShareCoordinatorShard::take_output`].
    pub fn handle(&mut self, now_ms: i64, reply: ReplyId, request: ShareShardRequest) {
        let response = match request {
            ShareShardRequest::Initialize(r) => {
                ShareShardResponse::Initialize(self.initialize_state(now_ms, &r))
            }
            ShareShardRequest::Read(r) => ShareShardResponse::Read(self.read_state(now_ms, &r)),
            ShareShardRequest::Write(r) => ShareShardResponse::Write(self.write_state(now_ms, &r)),
            ShareShardRequest::Delete(r) => ShareShardResponse::Delete(self.delete_state(&r)),
            ShareShardRequest::ReadSummary(r) => {
                ShareShardResponse::ReadSummary(self.read_state_summary(&r))
            }
        };
        self.out.replies.push((reply, response));
    }

    pub fn take_output(&mut self) -> ShareShardOutput {
        std::mem::take(&mut self.out)
    }

    /// A record written: replayed now, appended by the runtime.
    fn write(&mut self, record: ShareCoordinatorRecord) {
        if let Err(e) = self.replay(None, &record) {
            panic!("a record the shard wrote does not replay: {e}");
        }
        self.out.records.push(record);
    }

    /// UNKNOWN_TOPIC_OR_PARTITION unless the metadata has the topic with that partition.
    fn check_topic(&self, topic_id: Uuid, partition: i32) -> Result<(), ErrorCode> {
        match self.topics.topic_by_id(topic_id) {
            Some((_, count)) if partition < count => Ok(()),
            _ => Err(ErrorCode::UnknownTopicOrPartition),
        }
    }

    fn initialize_state(
        &mut self,
        now_ms: i64,
        request: &InitializeShareGroupStateRequest,
    ) -> InitializeShareGroupStateResponse {
        let Some((topic_id, p)) = single(&request.topics, |t| (t.topic_id, &t.partitions)) else {
            return InitializeShareGroupStateResponse::default();
        };
        let key = SharePartitionKey::new(&request.group_id, topic_id, p.partition);
        let result = (|| {
            if p.partition < 0 {
                return Err((ErrorCode::InvalidRequest, Some(NEGATIVE_PARTITION_ID)));
            }
            if p.state_epoch < 0 {
                return Err((ErrorCode::InvalidRequest, Some(NEGATIVE_STATE_EPOCH)));
            }
            if self
                .state_epochs
                .get(&key)
                .is_some_and(|e| *e > p.state_epoch)
            {
                return Err((ErrorCode::FencedStateEpoch, None));
            }
            self.check_topic(topic_id, p.partition)
                .map_err(|e| (e, None))
        })();
        if let Err((code, message)) = result {
            return init_response(topic_id, p.partition, code, message);
        }
        let snapshot_epoch = self
            .share_state
            .get(&key)
            .map_or(0, |s| s.snapshot_epoch + 1);
        let offset = ShareGroupOffset {
            snapshot_epoch,
            state_epoch: p.state_epoch,
            leader_epoch: UNINITIALIZED_EPOCH,
            start_offset: p.start_offset,
            // Lag is known once the start offset is (an altered offset), not before.
            delivery_complete_count: if p.start_offset == UNINITIALIZED_START_OFFSET {
                UNINITIALIZED_DELIVERY_COMPLETE_COUNT
            } else {
                0
            },
            state_batches: Vec::new(),
            create_timestamp: now_ms,
            write_timestamp: now_ms,
        };
        self.write(ShareCoordinatorRecord::snapshot(&key, &offset));
        // The metadata has the topic (checked above): its deletion must be noticed.
        self.present_topics.insert(topic_id);
        init_response(topic_id, p.partition, ErrorCode::None, None)
    }

    fn write_state(
        &mut self,
        now_ms: i64,
        request: &WriteShareGroupStateRequest,
    ) -> WriteShareGroupStateResponse {
        self.writes += 1;
        let Some((topic_id, p)) = single(&request.topics, |t| (t.topic_id, &t.partitions)) else {
            return WriteShareGroupStateResponse::default();
        };
        let key = SharePartitionKey::new(&request.group_id, topic_id, p.partition);
        let result = (|| {
            if p.partition < 0 {
                return Err((ErrorCode::InvalidRequest, Some(NEGATIVE_PARTITION_ID)));
            }
            if p.leader_epoch < 0 {
                return Err((ErrorCode::InvalidRequest, Some(NEGATIVE_LEADER_EPOCH)));
            }
            if p.state_epoch < 0 {
                return Err((ErrorCode::InvalidRequest, Some(NEGATIVE_STATE_EPOCH)));
            }
            if !self.share_state.contains_key(&key) {
                return Err((ErrorCode::InvalidRequest, Some(WRITE_UNINITIALIZED)));
            }
            if self
                .leader_epochs
                .get(&key)
                .is_some_and(|e| *e > p.leader_epoch)
            {
                return Err((ErrorCode::FencedLeaderEpoch, None));
            }
            if self
                .state_epochs
                .get(&key)
                .is_some_and(|e| *e > p.state_epoch)
            {
                return Err((ErrorCode::FencedStateEpoch, None));
            }
            self.check_topic(topic_id, p.partition)
                .map_err(|e| (e, None))
        })();
        if let Err((code, message)) = result {
            return write_response(topic_id, p.partition, code, message);
        }
        let batches: Vec<PersisterStateBatch> = p
            .state_batches
            .iter()
            .map(PersisterStateBatch::from)
            .collect();
        let record = self.share_state_record(
            now_ms,
            &key,
            StateWrite {
                leader_epoch: None,
                start_offset: p.start_offset,
                delivery_complete_count: p.delivery_complete_count,
                batches: &batches,
            },
        );
        self.write(record);
        write_response(topic_id, p.partition, ErrorCode::None, None)
    }

    fn read_state(
        &mut self,
        now_ms: i64,
        request: &ReadShareGroupStateRequest,
    ) -> ReadShareGroupStateResponse {
        let Some((topic_id, p)) = single(&request.topics, |t| (t.topic_id, &t.partitions)) else {
            return ReadShareGroupStateResponse::default();
        };
        let key = SharePartitionKey::new(&request.group_id, topic_id, p.partition);
        let result = (|| {
            if p.partition < 0 {
                return Err((ErrorCode::InvalidRequest, Some(NEGATIVE_PARTITION_ID)));
            }
            if p.leader_epoch < 0 {
                return Err((ErrorCode::InvalidRequest, Some(NEGATIVE_LEADER_EPOCH)));
            }
            if !self.share_state.contains_key(&key) {
                return Err((ErrorCode::InvalidRequest, Some(READ_UNINITIALIZED)));
            }
            if self
                .leader_epochs
                .get(&key)
                .is_some_and(|e| *e > p.leader_epoch)
            {
                return Err((ErrorCode::FencedLeaderEpoch, None));
            }
            self.check_topic(topic_id, p.partition)
                .map_err(|e| (e, None))
        })();
        if let Err((code, message)) = result {
            return ReadShareGroupStateResponse {
                results: vec![read_resp::ReadStateResult {
                    topic_id,
                    partitions: vec![read_resp::PartitionResult {
                        partition: p.partition,
                        error_code: code.code(),
                        error_message: Some(message.unwrap_or(kafka_message(code)).to_string()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
        }
        let state = self.share_state[&key].clone();
        let response = ReadShareGroupStateResponse {
            results: vec![read_resp::ReadStateResult {
                topic_id,
                partitions: vec![read_resp::PartitionResult {
                    partition: p.partition,
                    error_code: 0,
                    error_message: None,
                    state_epoch: state.state_epoch,
                    start_offset: state.start_offset,
                    state_batches: state.state_batches.iter().map(Into::into).collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        if self.leader_epochs.get(&key) != Some(&p.leader_epoch) {
            // A new share-partition leader: its epoch is recorded, fencing the old one.
            self.writes += 1;
            let record = self.share_state_record(
                now_ms,
                &key,
                StateWrite {
                    leader_epoch: Some(p.leader_epoch),
                    start_offset: state.start_offset,
                    delivery_complete_count: state.delivery_complete_count,
                    batches: &[],
                },
            );
            self.write(record);
        }
        response
    }

    fn read_state_summary(
        &self,
        request: &ReadShareGroupStateSummaryRequest,
    ) -> ReadShareGroupStateSummaryResponse {
        let Some((topic_id, p)) = single(&request.topics, |t| (t.topic_id, &t.partitions)) else {
            return ReadShareGroupStateSummaryResponse::default();
        };
        let result = if p.partition < 0 {
            Err((ErrorCode::InvalidRequest, Some(NEGATIVE_PARTITION_ID)))
        } else {
            self.check_topic(topic_id, p.partition)
                .map_err(|e| (e, None))
        };
        let partition = match result {
            Err((code, message)) => summary_resp::PartitionResult {
                partition: p.partition,
                error_code: code.code(),
                error_message: Some(message.unwrap_or(kafka_message(code)).to_string()),
                ..Default::default()
            },
            Ok(()) => {
                let key = SharePartitionKey::new(&request.group_id, topic_id, p.partition);
                match self.share_state.get(&key) {
                    // Kafka's PartitionFactory defaults for a share partition never
                    // initialized.
                    None => summary_resp::PartitionResult {
                        partition: p.partition,
                        start_offset: UNINITIALIZED_START_OFFSET,
                        delivery_complete_count: UNINITIALIZED_DELIVERY_COMPLETE_COUNT,
                        leader_epoch: 0,
                        state_epoch: 0,
                        ..Default::default()
                    },
                    Some(s) => summary_resp::PartitionResult {
                        partition: p.partition,
                        start_offset: s.start_offset,
                        delivery_complete_count: s.delivery_complete_count,
                        leader_epoch: s.leader_epoch,
                        state_epoch: s.state_epoch,
                        ..Default::default()
                    },
                }
            }
        };
        ReadShareGroupStateSummaryResponse {
            results: vec![summary_resp::ReadStateSummaryResult {
                topic_id,
                partitions: vec![partition],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn delete_state(
        &mut self,
        request: &DeleteShareGroupStateRequest,
    ) -> DeleteShareGroupStateResponse {
        let Some((topic_id, p)) = single(&request.topics, |t| (t.topic_id, &t.partitions)) else {
            return DeleteShareGroupStateResponse::default();
        };
        let result = if p.partition < 0 {
            Err((ErrorCode::InvalidRequest, Some(NEGATIVE_PARTITION_ID)))
        } else {
            self.check_topic(topic_id, p.partition)
                .map_err(|e| (e, None))
        };
        if let Err((code, message)) = result {
            return delete_response(topic_id, p.partition, code, message);
        }
        let key = SharePartitionKey::new(&request.group_id, topic_id, p.partition);
        // Deleting what is not there succeeds and writes nothing.
        if self.share_state.contains_key(&key) {
            self.write(ShareCoordinatorRecord::tombstone(&key));
        }
        delete_response(topic_id, p.partition, ErrorCode::None, None)
    }

    /// Kafka's `generateShareStateRecord`: a snapshot once the share partition has had
    /// `snapshot.update.records.per.snapshot` updates since its last, else an update. The
    /// start offset never moves back; the delivery complete count follows the start offset
    /// that wins.
    fn share_state_record(
        &self,
        now_ms: i64,
        key: &SharePartitionKey,
        write: StateWrite<'_>,
    ) -> ShareCoordinatorRecord {
        let current = &self.share_state[key];
        let leader_epoch = write.leader_epoch.unwrap_or(current.leader_epoch);
        let start_offset = write.start_offset.max(current.start_offset);
        let delivery_complete_count = if write.start_offset == current.start_offset {
            write
                .delivery_complete_count
                .max(current.delivery_complete_count)
        } else if write.start_offset < current.start_offset {
            current.delivery_complete_count
        } else {
            write.delivery_complete_count
        };
        let updates = self.snapshot_update_count.get(key).copied().unwrap_or(0);
        if updates >= self.config.snapshot_update_records_per_snapshot {
            let snapshot = ShareGroupOffset {
                snapshot_epoch: current.snapshot_epoch + 1,
                state_epoch: current.state_epoch,
                leader_epoch,
                start_offset,
                delivery_complete_count,
                state_batches: combine_state_batches(
                    &current.state_batches,
                    write.batches,
                    start_offset,
                ),
                create_timestamp: now_ms,
                write_timestamp: now_ms,
            };
            ShareCoordinatorRecord::snapshot(key, &snapshot)
        } else {
            let update = ShareGroupOffset {
                snapshot_epoch: current.snapshot_epoch,
                leader_epoch,
                start_offset,
                delivery_complete_count,
                state_batches: combine_state_batches(&[], write.batches, start_offset),
                ..Default::default()
            };
            ShareCoordinatorRecord::update(key, &update)
        }
    }

    /// Kafka's `snapshotColdPartitions`: unless every share partition's last snapshot is
    /// already a cold one, those not written for the interval get a new snapshot of their
    /// unchanged state, so the records before it become redundant.
    fn snapshot_cold_partitions(&mut self, now_ms: i64) {
        let cold = self
            .share_state
            .values()
            .filter(|s| s.create_timestamp != s.write_timestamp)
            .count();
        if cold == self.share_state.len() {
            return;
        }
        for key in self.keys() {
            let state = &self.share_state[&key];
            if now_ms - state.write_timestamp >= self.config.cold_partition_snapshot_interval_ms {
                let snapshot = ShareGroupOffset {
                    snapshot_epoch: state.snapshot_epoch + 1,
                    write_timestamp: now_ms,
                    ..state.clone()
                };
                self.write(ShareCoordinatorRecord::snapshot(&key, &snapshot));
            }
        }
    }
}

/// What a write or a leader-epoch read asks to record.
struct StateWrite<'a> {
    /// `Some` only from a read with a new leader epoch: writes keep the recorded one.
    leader_epoch: Option<i32>,
    start_offset: i64,
    delivery_complete_count: i32,
    batches: &'a [PersisterStateBatch],
}

const NEGATIVE_PARTITION_ID: &str = "The partition id cannot be a negative number.";
const NEGATIVE_LEADER_EPOCH: &str = "The leader epoch cannot be a negative number.";
const NEGATIVE_STATE_EPOCH: &str = "The state epoch cannot be a negative number.";
const WRITE_UNINITIALIZED: &str = "Write operation on uninitialized share partition not allowed.";
const READ_UNINITIALIZED: &str = "Read operation on uninitialized share partition not allowed.";

fn raise(map: &mut HashMap<SharePartitionKey, i32>, key: &SharePartitionKey, epoch: i32) {
    let e = map.entry(key.clone()).or_insert(epoch);
    if *e < epoch {
        *e = epoch;
    }
}

/// The one topic and partition of a request the service split, or `None` if it holds
/// anything else (the service never sends such a request).
fn single<'a, T, P>(
    topics: &'a [T],
    parts: impl Fn(&'a T) -> (Uuid, &'a Vec<P>),
) -> Option<(Uuid, &'a P)> {
    let [topic] = topics else { return None };
    let (topic_id, partitions) = parts(topic);
    let [p] = partitions.as_slice() else {
        return None;
    };
    Some((topic_id, p))
}

/// The answers to the one-partition state requests that carry no state (initialize, write,
/// delete) share one shape: the topic's one partition with `code` and its message (none on
/// success).
macro_rules! single_partition_responses {
    ($($name:ident: $resp:ident, $m:ident::$result:ident;)*) => {$(
        fn $name(
            topic_id: Uuid,
            partition: i32,
            code: ErrorCode,
            message: Option<&str>,
        ) -> $resp {
            $resp {
                results: vec![$m::$result {
                    topic_id,
                    partitions: vec![$m::PartitionResult {
                        partition,
                        error_code: code.code(),
                        error_message: error_message(code, message),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }
        }
    )*};
}

single_partition_responses! {
    init_response: InitializeShareGroupStateResponse, init_resp::InitializeStateResult;
    write_response: WriteShareGroupStateResponse, write_resp::WriteStateResult;
    delete_response: DeleteShareGroupStateResponse, delete_resp::DeleteStateResult;
}

/// No message on success; the given one, or the code's own, on an error.
fn error_message(code: ErrorCode, message: Option<&str>) -> Option<String> {
    (code != ErrorCode::None).then(|| message.unwrap_or(kafka_message(code)).to_string())
}

/// Kafka's `Errors.message()` of the codes the share coordinator answers without a message
/// of its own.
pub fn kafka_message(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::UnknownTopicOrPartition => "This server does not host this topic-partition.",
        ErrorCode::CoordinatorLoadInProgress => {
            "The coordinator is loading and hence can't process requests."
        }
        ErrorCode::CoordinatorNotAvailable => "The coordinator is not available.",
        ErrorCode::NotCoordinator => "This is not the correct coordinator.",
        ErrorCode::FencedLeaderEpoch => {
            "The leader epoch in the request is older than the epoch on the broker."
        }
        ErrorCode::FencedStateEpoch => {
            "The coordinator rejected the request because the state epoch did not match."
        }
        other => other.name(),
    }
}

/// Kafka's `ShareCoordinatorOffsetsManager`: the offset of each share partition's last
/// snapshot, and the smallest offset still needed (everything below is redundant).
#[derive(Debug)]
struct OffsetsManager {
    snapshots: HashMap<SharePartitionKey, i64>,
    last_redundant: i64,
}

impl Default for OffsetsManager {
    fn default() -> Self {
        OffsetsManager {
            snapshots: HashMap::new(),
            last_redundant: i64::MAX,
        }
    }
}

impl OffsetsManager {
    /// A snapshot (or tombstone, `is_delete`) of `key` at `offset`.
    fn update(&mut self, key: SharePartitionKey, offset: i64, is_delete: bool) {
        self.last_redundant = self.last_redundant.min(offset);
        self.snapshots.insert(key.clone(), offset);
        if let Some(min) = self.snapshots.values().copied().min() {
            self.last_redundant = min;
        }
        // Nothing after a deletion changes that share partition: its offset holds nothing
        // back.
        if is_delete {
            self.snapshots.remove(&key);
        }
    }

    fn last_redundant_offset(&self) -> Option<i64> {
        (self.last_redundant > 0 && self.last_redundant != i64::MAX).then_some(self.last_redundant)
    }
}
