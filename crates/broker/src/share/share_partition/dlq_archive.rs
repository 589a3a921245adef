//! A share partition's dead-letter queue part (KIP-1191; Kafka's `SharePartition`'s
//! `maybeResumeDlqArchiving` and `initiateDLQAndArchive`): the records persisted in
//! ARCHIVING go to the DLQ writer in runs, and once it is done with them they become
//! ARCHIVED, a state write of their own.

use super::{
    DlqBatch, DlqCause, RecordState, SharePartition, SharePartitionConfig, SharePartitionState,
    StateWrite,
};

impl SharePartition {
    /// The records in ARCHIVING whose state is persisted and that are not yet with the
    /// dead-letter queue writer, now handed to it: runs of contiguous offsets with one
    /// delivery count and cause. A record loaded in ARCHIVING (its leader stopped before the
    /// DLQ write finished) goes again, its cause inferred from its delivery count, as Kafka's
    /// `maybeResumeDlqArchiving` does — whatever the group's DLQ configuration is now.
    pub fn take_dlq_batches(&mut self, config: &SharePartitionConfig) -> Vec<DlqBatch> {
        if self.state != SharePartitionState::Active {
            return Vec::new();
        }
        let start = self.start_offset;
        let mut out: Vec<DlqBatch> = Vec::new();
        for (i, r) in self.records.iter_mut().enumerate() {
            if r.state != RecordState::Archiving || r.in_transition.is_some() {
                continue;
            }
            let cause = match r.dlq {
                Some((_, true)) => continue,
                Some((cause, false)) => cause,
                None if r.delivery_count >= config.max_delivery_count => {
                    DlqCause::DeliveryCountExceeded
                }
                None => DlqCause::ClientReject,
            };
            r.dlq = Some((cause, true));
            let offset = start + i as i64;
            if let Some(last) = out.last_mut() {
                if last.last_offset + 1 == offset
                    && last.delivery_count == r.delivery_count
                    && last.cause == cause
                {
                    last.last_offset = offset;
                    continue;
                }
            }
            out.push(DlqBatch {
                first_offset: offset,
                last_offset: offset,
                delivery_count: r.delivery_count,
                cause,
            });
        }
        out
    }

    /// The dead-letter queue writer is done with `batch` (written or failed: Kafka archives
    /// either way): its records are ARCHIVED, and the write to persist that. Applied at once
    /// and never rolled back, as Kafka's `initiateDLQAndArchive`.
    pub fn complete_dlq(&mut self, batch: &DlqBatch) -> Option<StateWrite> {
        if self.state != SharePartitionState::Active {
            return None;
        }
        let mut changed = Vec::new();
        for offset in batch.first_offset..=batch.last_offset {
            if let Some(r) = self.record_mut(offset) {
                if r.state == RecordState::Archiving && r.dlq.is_some_and(|(_, taken)| taken) {
                    r.state = RecordState::Archived;
                    r.dlq = None;
                    changed.push(offset);
                }
            }
        }
        if changed.is_empty() {
            return None;
        }
        let write_id = self.take_write_id();
        let batches = self.state_batches(changed.into_iter());
        let request = self.write_request(write_id, batches);
        self.pending_writes.insert(write_id, Vec::new());
        self.move_start_offset();
        Some(StateWrite { write_id, request })
    }
}
