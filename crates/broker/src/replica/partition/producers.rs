//! The glue between a partition's log and its idempotent-producer state
//! ([`ProducerStateManager`](crate::replica::producer_state::ProducerStateManager)):
//! rebuilt from a snapshot and the log, updated from appended batches, snapshotted on roll.

use bytes::Bytes;
use kraftd_protocol::records::Batches;
use tracing::warn;

use super::{Partition, PartitionError};
use crate::replica::producer_state::BatchMetadata;

impl Partition {
    /// Loads the latest producer snapshot at or below the log end and replays the batches
    /// after it (Kafka's `loadProducerState`).
    pub(super) fn rebuild_producer_state(&mut self, now_ms: i64) -> Result<(), PartitionError> {
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
    pub(super) fn update_producers_from(&mut self, records: &Bytes, from: i64, to: i64) {
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

    /// A roll is where Kafka snapshots producer state, so a restart replays at most one
    /// segment to rebuild it.
    pub(super) fn snapshot_producers_if_rolled(&mut self, segments_before: usize) {
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
}
