//! The coordinators' log over a real partition (Kafka's `CoordinatorPartitionWriter` with
//! the reading half of `CoordinatorLoaderImpl`): [`CoordinatorPartitionWriter`] implements
//! `kraftd_coordinator`'s [`PartitionWriter`] on one partition of a coordinator's topic that
//! this broker leads, at the leader epoch its shard was loaded in. The runtime appends
//! through it and loads shards with [`kraftd_coordinator::writer::load`] over it, the loader
//! the replay check runs over the in-memory writer; `crates/broker/tests/replica_manager/
//! coordinator_writer.rs` runs the trait's conformance check against it.
//!
//! Every call goes to the `ReplicaManager` again (`replica_manager/coordinator.rs`), and
//! each refuses with NOT_LEADER_OR_FOLLOWER once this broker no longer leads the partition
//! at that epoch: a shard's state belongs to one leader epoch, and a write from an older
//! one must not land.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use kraftd_coordinator::shard::OutputBatch;
use kraftd_coordinator::writer::{Appended, LogEntry, LogRead, PartitionWriter};
use kraftd_log::clock::unix_ms;
use kraftd_protocol::records::{Batches, ControlRecord, ControlRecordType, RecordBatchBuilder};
use kraftd_protocol::{ErrorCode, Uuid};
use tokio::time::Instant;
use tracing::warn;

use crate::replica::replica_manager::ReplicaManager;

/// How much one read of the log brings in (while loading).
const READ_BYTES: usize = 8 * 1024 * 1024;

/// One coordinator partition as its leader writes and reads it (see the module docs).
#[derive(Debug, Clone)]
pub struct CoordinatorPartitionWriter {
    replica_manager: Arc<ReplicaManager>,
    topic_id: Uuid,
    partition: i32,
    leader_epoch: i32,
}

impl CoordinatorPartitionWriter {
    /// The writer of `partition` of the topic `topic_id`, led here at `leader_epoch`.
    pub fn new(
        replica_manager: Arc<ReplicaManager>,
        topic_id: Uuid,
        partition: i32,
        leader_epoch: i32,
    ) -> Self {
        CoordinatorPartitionWriter {
            replica_manager,
            topic_id,
            partition,
            leader_epoch,
        }
    }

    pub fn topic_id(&self) -> Uuid {
        self.topic_id
    }

    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }

    /// Resolves once the HW reaches `end_offset` while this broker still leads the
    /// partition at the writer's epoch: NONE, or why not (NOT_LEADER_OR_FOLLOWER,
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT at `deadline`). Kafka's writer
    /// tells a listener of HW changes; here the runtime awaits this on a task of its own.
    pub fn wait_for_commit(
        &self,
        end_offset: i64,
        deadline: Instant,
    ) -> impl Future<Output = ErrorCode> + Send + 'static {
        let hosted = self
            .replica_manager
            .partition(self.topic_id, self.partition);
        let leader_epoch = self.leader_epoch;
        async move {
            let Some(hosted) = hosted else {
                return ErrorCode::NotLeaderOrFollower;
            };
            ReplicaManager::wait_for_coordinator_commit(&hosted, leader_epoch, end_offset, deadline)
                .await
        }
    }

    fn bounds(&self) -> Result<(i64, i64, i64), ErrorCode> {
        self.replica_manager.coordinator_log_bounds(
            self.topic_id,
            self.partition,
            self.leader_epoch,
        )
    }
}

impl PartitionWriter for CoordinatorPartitionWriter {
    fn append(&mut self, batch: &OutputBatch) -> Result<Appended, ErrorCode> {
        if batch.records.is_empty() {
            return Err(ErrorCode::InvalidRecord);
        }
        let now = unix_ms();
        let mut builder = RecordBatchBuilder::new(0);
        if let Some((producer_id, producer_epoch)) = batch.producer {
            builder = builder
                .producer(producer_id, producer_epoch, -1)
                .transactional(true);
        }
        for (key, value) in &batch.records {
            builder
                .append(now, Some(key.clone()), value.clone(), Vec::new())
                .map_err(|_| ErrorCode::UnknownServerError)?;
        }
        let bytes: Bytes = builder.build().map_err(|_| ErrorCode::UnknownServerError)?;
        let (_, end_offset) = self.replica_manager.append_coordinator_batch(
            self.topic_id,
            self.partition,
            self.leader_epoch,
            bytes,
        )?;
        // One offset per record: the builder writes no gaps.
        Ok(Appended {
            base_offset: end_offset - batch.records.len() as i64,
            last_offset: end_offset - 1,
            end_offset,
        })
    }

    fn append_end_txn(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
    ) -> Result<i64, ErrorCode> {
        self.replica_manager.append_coordinator_marker(
            self.topic_id,
            self.partition,
            self.leader_epoch,
            (producer_id, producer_epoch, coordinator_epoch),
            commit,
        )
    }

    fn read(&self, offset: i64, max_entries: usize) -> Result<LogRead, ErrorCode> {
        let (read, high_watermark) = self.replica_manager.read_coordinator_log(
            self.topic_id,
            self.partition,
            self.leader_epoch,
            offset,
            READ_BYTES,
        )?;
        let entries = entries_of(read.bytes, offset, max_entries).map_err(|(at, what)| {
            warn!(topic_id = %self.topic_id, partition = self.partition, offset = at, error = %what,
                "a coordinator partition holds a batch that does not decode");
            ErrorCode::CorruptMessage
        })?;
        Ok(LogRead {
            entries,
            high_watermark,
        })
    }

    fn log_start_offset(&self) -> Result<i64, ErrorCode> {
        self.bounds().map(|(start, _, _)| start)
    }

    fn log_end_offset(&self) -> Result<i64, ErrorCode> {
        self.bounds().map(|(_, _, end)| end)
    }

    fn high_watermark(&self) -> Result<i64, ErrorCode> {
        self.bounds().map(|(_, hw, _)| hw)
    }
}

/// The entries of the whole batches in `bytes` that end after `offset`, at most
/// `max_entries` (at least one when there is any): a data batch as runs of consecutive
/// offsets (a compacted batch may have gaps), a COMMIT/ABORT control batch as a marker (no
/// other control record belongs to a coordinator's topic). What does not decode: its
/// offset and why.
fn entries_of(
    bytes: Bytes,
    offset: i64,
    max_entries: usize,
) -> Result<Vec<LogEntry>, (i64, String)> {
    let max_entries = max_entries.max(1);
    let mut entries = Vec::new();
    for batch in Batches::new(bytes) {
        let batch = batch.map_err(|e| (offset, e.to_string()))?;
        let base = batch.base_offset();
        if batch.next_offset() <= offset {
            continue;
        }
        let corrupt = |e: &dyn std::fmt::Display| (base, e.to_string());
        let records = batch.records().map_err(|e| corrupt(&e))?;
        if batch.is_control() {
            for record in records {
                let record = record.map_err(|e| corrupt(&e))?;
                let key = record.key.unwrap_or_default();
                let commit = match ControlRecordType::decode_key(&key) {
                    Ok(ControlRecordType::Commit) => true,
                    Ok(ControlRecordType::Abort) => false,
                    _ => continue,
                };
                let marker = match ControlRecord::decode(&key, record.value.unwrap_or_default())
                    .map_err(|e| corrupt(&e))?
                {
                    ControlRecord::Commit(m) | ControlRecord::Abort(m) => m,
                    _ => continue,
                };
                entries.push(LogEntry::Marker {
                    offset: base,
                    producer_id: batch.producer_id(),
                    producer_epoch: batch.producer_epoch(),
                    coordinator_epoch: marker.coordinator_epoch,
                    commit,
                });
            }
        } else {
            let producer = batch
                .is_transactional()
                .then(|| (batch.producer_id(), batch.producer_epoch()));
            let first = entries.len();
            for record in records {
                let record = record.map_err(|e| corrupt(&e))?;
                let at = base + i64::from(record.offset_delta);
                let Some(key) = record.key else {
                    return Err((at, "a coordinator record without a key".into()));
                };
                let in_batch = entries.len() > first;
                match entries.last_mut() {
                    Some(LogEntry::Records {
                        base_offset,
                        records,
                        ..
                    }) if in_batch && *base_offset + records.len() as i64 == at => {
                        records.push((key, record.value));
                    }
                    _ => entries.push(LogEntry::Records {
                        base_offset: at,
                        producer,
                        records: vec![(key, record.value)],
                    }),
                }
            }
        }
        entries.retain(|e| e.next_offset() > offset);
        if entries.len() >= max_entries {
            entries.truncate(max_entries);
            break;
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Option<Bytes> {
        Some(Bytes::copy_from_slice(k.as_bytes()))
    }

    /// A data batch at `base` holding records at the given offset deltas (gaps: compacted).
    fn batch(base: i64, deltas: &[i64], producer: Option<(i64, i16)>) -> Bytes {
        let mut b = RecordBatchBuilder::new(base);
        if let Some((id, epoch)) = producer {
            b = b.producer(id, epoch, -1).transactional(true);
        }
        for d in deltas {
            b.append_with_offset(base + d, 0, key(&format!("k{d}")), key("v"), Vec::new())
                .unwrap();
        }
        b.build().unwrap()
    }

    fn concat(parts: &[Bytes]) -> Bytes {
        parts.iter().flat_map(|b| b.iter().copied()).collect()
    }

    #[test]
    fn a_compacted_batch_reads_as_runs_of_consecutive_offsets() {
        let log = concat(&[
            batch(0, &[0, 1, 3, 4, 6], Some((9, 1))),
            batch(7, &[0], None),
        ]);
        let entries = entries_of(log.clone(), 0, 100).unwrap();
        let spans: Vec<(i64, i64, bool)> = entries
            .iter()
            .map(|e| match e {
                LogEntry::Records {
                    base_offset,
                    producer,
                    ..
                } => (*base_offset, e.next_offset(), producer.is_some()),
                LogEntry::Marker { .. } => panic!("no marker here"),
            })
            .collect();
        assert_eq!(
            spans,
            vec![(0, 2, true), (3, 5, true), (6, 7, true), (7, 8, false)]
        );
        // From inside the batch: the runs ending at or before the offset are left out, and a
        // read asked for at most two entries gets two.
        let from = entries_of(log, 4, 2).unwrap();
        assert_eq!(
            from.iter().map(LogEntry::base_offset).collect::<Vec<_>>(),
            vec![3, 6]
        );
    }

    #[test]
    fn a_record_without_a_key_is_corrupt() {
        let mut b = RecordBatchBuilder::new(5);
        b.append(0, None, key("v"), Vec::new()).unwrap();
        let err = entries_of(b.build().unwrap(), 0, 10).unwrap_err();
        assert_eq!(err.0, 5);
    }
}
