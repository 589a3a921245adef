//! The glue between a partition and its log's producer state
//! ([`ProducerStateManager`](crate::replica::producer_state::ProducerStateManager), kept by
//! the log since it tracks transactions): loaded once the partition is created, reloaded
//! after truncations, snapshotted on roll.

use tracing::warn;

use super::{Partition, PartitionError};

impl Partition {
    /// Loads the latest producer snapshot at or below the log end and replays the batches
    /// after it (Kafka's `loadProducerState`).
    pub(super) fn rebuild_producer_state(&mut self, now_ms: i64) -> Result<(), PartitionError> {
        self.log
            .load_producer_state(now_ms)
            .map_err(|e| PartitionError::Storage(format!("producer state: {e}")))?;
        self.producers_follow_high_watermark();
        Ok(())
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
        if let Err(e) = self.log.take_producer_snapshot() {
            warn!(topic = %self.tp.topic, partition = self.tp.partition, error = %e, "producer state snapshot failed");
        }
    }

    /// The last stable offset (Kafka's): the first offset of the oldest open transaction
    /// when below the HW, else the HW.
    pub fn last_stable_offset(&self) -> i64 {
        self.log.last_stable_offset(self.high_watermark)
    }

    /// Completed transactions whose markers the HW passed stop holding the LSO back.
    pub(super) fn producers_follow_high_watermark(&mut self) {
        let hw = self.high_watermark;
        self.log.producer_state_mut().on_high_watermark_updated(hw);
    }
}
