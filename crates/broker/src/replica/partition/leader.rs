//! The leader side of a partition: becoming leader at a new epoch, produce appends (with
//! the idempotent-producer checks) and the `acks=all` check, fetch reads with the KIP-320
//! epoch check and the diverging-epoch answer, and the OffsetForLeaderEpoch answer.

use bytes::{Bytes, BytesMut};
use kraftd_log::PendingRead;
use kraftd_protocol::messages::EndTxnMarker;
use kraftd_protocol::records::{Batches, ControlRecord, RecordBatch, RecordBatchBuilder};
use kraftd_protocol::ErrorCode;
use tracing::debug;

use super::isr::ReplicaState;
use super::validator::{validate, Validated};
use super::{Partition, PartitionError, PartitionState, Role};
use crate::replica::producer_state::ProducerCheck;

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
    /// Consumers with read_committed see records below the last stable offset only.
    TxnCommitted,
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
    /// The last stable offset (Fetch v4+).
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
}

impl Partition {
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
        // A leader elected uncleanly comes as RECOVERING; as leader it has recovered (its log
        // is the partition's now), so its ISR changes say RECOVERED, as Kafka's
        // `Partition.makeLeader` does. Kept RECOVERING, every ISR expansion would be refused
        // (the controller takes no ISR of more than the leader while RECOVERING) and the
        // partition would stay at an ISR of one for good.
        self.leader_recovery_state = 0;
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
                .map(|r| (*r, ReplicaState::reset(self.isr.contains(r), now_ms)))
                .collect();
            self.ineligible.clear();
            debug!(
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
                        .insert(*r, ReplicaState::reset(false, now_ms));
                }
            }
        }
        self.maybe_increment_high_watermark(now_ms);
        Ok(new_epoch)
    }

    /// Appends a produce request's records (exactly one v2 batch, as Produce v3+ requires)
    /// as leader: checks `acks=all` against `min.insync.replicas` first
    /// (NOT_ENOUGH_REPLICAS), validates the batch as Kafka's `LogValidator` (`validator.rs`:
    /// batch and record checks, re-compression to the topic's `compression.type`), answers
    /// an idempotent producer's retry with the original offsets, stamps offsets and the
    /// leader epoch, and moves the HW if the ISR is just us.
    pub fn append_as_leader(
        &mut self,
        records: Bytes,
        required_acks: i16,
        now_ms: i64,
    ) -> Result<LeaderAppend, PartitionError> {
        self.append_from(records, required_acks, now_ms, true)
    }

    /// A coordinator's own batch (Kafka's append origin COORDINATOR): as
    /// [`Partition::append_as_leader`] with `acks=all`, but a transactional batch's
    /// sequence is not checked (the coordinator writes offsets for a producer whose
    /// sequences belong to its own partitions, with no sequence of its own).
    pub fn append_as_coordinator(
        &mut self,
        records: Bytes,
        now_ms: i64,
    ) -> Result<LeaderAppend, PartitionError> {
        self.append_from(records, -1, now_ms, false)
    }

    fn append_from(
        &mut self,
        records: Bytes,
        required_acks: i16,
        now_ms: i64,
        from_client: bool,
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
        if batch.is_transactional() && batch.producer_id() < 0 {
            return Err(PartitionError::InvalidRecord(
                "a transactional batch must carry a producer id".into(),
            ));
        }
        let (batch, records) =
            match validate(&batch, &self.tp, self.log.config(), now_ms, from_client)? {
                Validated::AsSent => (batch, records),
                Validated::Rebuilt(rebuilt) => (single_batch(&rebuilt)?, rebuilt),
            };
        let producer_id = batch.producer_id();
        let producer_epoch = batch.producer_epoch();
        let (first_seq, last_seq) = (batch.base_sequence(), batch.last_sequence());
        if producer_id >= 0 && !from_client {
            self.log
                .producer_state()
                .check_txn_state(producer_id, producer_epoch, batch.is_transactional())
                .map_err(|e| PartitionError::Producer {
                    code: e.error_code(),
                    message: e.to_string(),
                })?;
        } else if producer_id >= 0 {
            let producers = self.log.producer_state();
            let checked = producers
                .check(producer_id, producer_epoch, first_seq, last_seq)
                .and_then(|c| {
                    producers
                        .check_txn_state(producer_id, producer_epoch, batch.is_transactional())
                        .map(|()| c)
                });
            match checked {
                Ok(ProducerCheck::Append) => {}
                Ok(ProducerCheck::Duplicate(original)) => {
                    // As Kafka's appendRecordsToLeader, the HW is looked at again after a
                    // duplicate too: the retry of a batch whose wait timed out is what moves
                    // it once a follower that stopped fetching (its log dir failed) no
                    // longer holds it.
                    self.maybe_increment_high_watermark(now_ms);
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
        let segments = self.log.segment_count();
        // The log records the batch in the producer state (and opens its transaction).
        let info =
            self.log
                .append_as_leader(BytesMut::from(&records[..]), self.leader_epoch, now_ms)?;
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

    /// Writes a transaction marker (Kafka's `appendRecordsToLeader` with origin
    /// COORDINATOR, for WriteTxnMarkers): `min.insync.replicas` is checked as for `acks=all`,
    /// then the producer (INVALID_PRODUCER_EPOCH for an older producer epoch) and the
    /// coordinator epoch (TRANSACTION_COORDINATOR_FENCED for an older one); the marker is a
    /// control batch of one record (key: version 0 and type ABORT 0 / COMMIT 1; value:
    /// version 0 and the coordinator epoch) at the leader epoch. The producer's transaction
    /// completes, and an abort goes into the segment's `.txnindex`.
    pub fn append_markers_as_leader(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
        now_ms: i64,
    ) -> Result<LeaderAppend, PartitionError> {
        self.require_leader()?;
        let isr = self.isr.len();
        if isr < self.config.min_insync_replicas {
            return Err(PartitionError::NotEnoughReplicas {
                isr,
                min_isr: self.config.min_insync_replicas,
            });
        }
        self.log
            .producer_state()
            .check_end_txn(producer_id, producer_epoch, coordinator_epoch)
            .map_err(|e| PartitionError::Producer {
                code: e.error_code(),
                message: e.to_string(),
            })?;
        let records = marker_batch(
            producer_id,
            producer_epoch,
            coordinator_epoch,
            commit,
            self.leader_epoch,
            now_ms,
        )?;
        let segments = self.log.segment_count();
        let info =
            self.log
                .append_as_leader(BytesMut::from(&records[..]), self.leader_epoch, now_ms)?;
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
        if self.offline {
            return Some(ErrorCode::KafkaStorageError);
        }
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
            last_stable_offset: self.last_stable_offset(),
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
            FetchIsolation::TxnCommitted => info.last_stable_offset,
        };
        info.read = Some(
            self.log
                .plan_read(params.fetch_offset, params.max_bytes, upper_bound)?,
        );
        Ok(info)
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

/// A transaction marker: a transactional control batch with one record whose key is the
/// control record type and whose value is Kafka's `EndTransactionMarker` (version 0 and the
/// coordinator epoch).
pub fn marker_batch(
    producer_id: i64,
    producer_epoch: i16,
    coordinator_epoch: i32,
    commit: bool,
    leader_epoch: i32,
    now_ms: i64,
) -> Result<Bytes, PartitionError> {
    let marker = EndTxnMarker { coordinator_epoch };
    let record = if commit {
        ControlRecord::Commit(marker)
    } else {
        ControlRecord::Abort(marker)
    };
    let value = record
        .encode_value()
        .map_err(|e| PartitionError::InvalidRecord(e.to_string()))?;
    let mut builder = RecordBatchBuilder::new(0)
        .producer(producer_id, producer_epoch, -1)
        .transactional(true)
        .control(true)
        .partition_leader_epoch(leader_epoch);
    builder
        .append(now_ms, Some(record.key()), Some(value), Vec::new())
        .map_err(|e| PartitionError::InvalidRecord(e.to_string()))?;
    builder
        .build()
        .map_err(|e| PartitionError::InvalidRecord(e.to_string()))
}
