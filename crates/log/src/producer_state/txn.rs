//! Transactions in the producer state (the transactional half of Kafka's
//! `ProducerAppendInfo` and `ProducerStateManager`): a transactional batch opens or continues
//! its producer's transaction, a marker (a control batch) completes it, and the open and
//! not-yet-replicated transactions hold the last stable offset back.

use super::{ProducerStateEntry, ProducerStateError, ProducerStateManager, NO_PRODUCER_EPOCH};

/// A transaction a marker completed (Kafka's `CompletedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    /// The offset of the transaction's first batch.
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    pub is_aborted: bool,
}

/// One entry of a segment's aborted-transaction index (Kafka's `AbortedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The abort marker's offset.
    pub last_offset: i64,
    /// The last stable offset when the marker was written: a reader at or past it needs no
    /// older index entry.
    pub last_stable_offset: i64,
}

impl ProducerStateManager {
    /// The transactional check a leader makes before a data batch (Kafka's
    /// `ProducerAppendInfo.checkProducerEpoch`/`appendDataBatch`): a non-transactional batch
    /// from a producer with an open transaction is INVALID_TXN_STATE. Combine with
    /// [`ProducerStateManager::check`].
    pub fn check_txn_state(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        is_transactional: bool,
    ) -> Result<(), ProducerStateError> {
        if producer_id < 0 || is_transactional {
            return Ok(());
        }
        match self.producers.get(&producer_id) {
            Some(e)
                if e.current_txn_first_offset.is_some() && e.producer_epoch == producer_epoch =>
            {
                Err(ProducerStateError::InvalidTxnState { producer_id })
            }
            _ => Ok(()),
        }
    }

    /// A transactional data batch of `producer_id` starting at `first_offset` was appended
    /// (after [`ProducerStateManager::update`]): it opens the producer's transaction unless
    /// one is open.
    pub fn update_txn_data(&mut self, producer_id: i64, first_offset: i64) {
        if producer_id < 0 {
            return;
        }
        let entry = self
            .producers
            .entry(producer_id)
            .or_insert_with(|| ProducerStateEntry::empty(producer_id));
        if entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(first_offset);
            self.ongoing_txns.insert(first_offset, producer_id);
        }
    }

    /// The leader's check of a marker before writing it (Kafka's `appendEndTxnMarker`
    /// checks): an older producer epoch is INVALID_PRODUCER_EPOCH, an older coordinator epoch
    /// TRANSACTION_COORDINATOR_FENCED.
    pub fn check_end_txn(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
    ) -> Result<(), ProducerStateError> {
        let Some(entry) = self.producers.get(&producer_id) else {
            return Ok(());
        };
        if entry.producer_epoch != NO_PRODUCER_EPOCH && producer_epoch < entry.producer_epoch {
            return Err(ProducerStateError::InvalidProducerEpoch {
                producer_id,
                producer_epoch,
                current_epoch: entry.producer_epoch,
            });
        }
        if entry.coordinator_epoch > coordinator_epoch {
            return Err(ProducerStateError::TransactionCoordinatorFenced {
                producer_id,
                coordinator_epoch,
                current_coordinator_epoch: entry.coordinator_epoch,
            });
        }
        Ok(())
    }

    /// A marker of `producer_id` at `offset` was appended: the producer's transaction (if it
    /// wrote anything) is complete. Returns it, and the caller records it with
    /// [`ProducerStateManager::last_stable_offset_of`] (for the abort index) and then
    /// [`ProducerStateManager::complete_txn`]. A marker of a transaction that wrote nothing
    /// completes nothing, as in Kafka.
    pub fn append_end_txn_marker(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        is_abort: bool,
        offset: i64,
        timestamp: i64,
    ) -> Option<CompletedTxn> {
        if producer_id < 0 {
            return None;
        }
        let entry = self
            .producers
            .entry(producer_id)
            .or_insert_with(|| ProducerStateEntry::empty(producer_id));
        let completed = entry.current_txn_first_offset.map(|first| CompletedTxn {
            producer_id,
            first_offset: first,
            last_offset: offset,
            is_aborted: is_abort,
        });
        if entry.producer_epoch != producer_epoch {
            // Kafka's maybeUpdateProducerEpoch: a bumped epoch forgets the old batches.
            entry.batches.clear();
            entry.producer_epoch = producer_epoch;
        }
        entry.current_txn_first_offset = None;
        entry.coordinator_epoch = coordinator_epoch;
        entry.last_timestamp = timestamp;
        // Kafka's updateProducers: a marker ends the verification, except a transactions V2
        // marker at the verification's epoch (the next transaction's, already started:
        // V2 bumps the epoch at every marker).
        let next_started = self
            .verification
            .get(&producer_id)
            .is_some_and(|v| v.supports_epoch_bump && v.epoch == producer_epoch);
        if !next_started {
            self.verification.remove(&producer_id);
        }
        completed
    }

    /// Kafka's `lastStableOffset(completedTxn)`: the first offset of the oldest transaction
    /// still open by another producer, else the offset after the marker.
    pub fn last_stable_offset_of(&self, completed: &CompletedTxn) -> i64 {
        self.ongoing_txns
            .iter()
            .find(|(_, pid)| **pid != completed.producer_id)
            .map_or(completed.last_offset + 1, |(first, _)| *first)
    }

    /// Kafka's `completeTxn`: the transaction is no longer open, but holds the last stable
    /// offset back until the high watermark passes its marker.
    pub fn complete_txn(&mut self, completed: &CompletedTxn) {
        if self.ongoing_txns.get(&completed.first_offset) == Some(&completed.producer_id) {
            self.ongoing_txns.remove(&completed.first_offset);
        }
        self.unreplicated_txns.insert(
            completed.first_offset,
            (completed.producer_id, completed.last_offset),
        );
    }

    /// Kafka's `onHighWatermarkUpdated`: completed transactions whose marker is below the
    /// high watermark no longer hold the last stable offset back.
    pub fn on_high_watermark_updated(&mut self, high_watermark: i64) {
        self.unreplicated_txns
            .retain(|_, (_, marker)| *marker >= high_watermark);
    }

    /// Kafka's `firstUnstableOffset`: the first offset of the oldest open or unreplicated
    /// transaction.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        let ongoing = self.ongoing_txns.keys().next().copied();
        let unreplicated = self.unreplicated_txns.keys().next().copied();
        match (ongoing, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Kafka's `lastStableOffset`: the first unstable offset when below the high watermark,
    /// else the high watermark. Transactions whose marker is below `high_watermark` do not
    /// count even if [`ProducerStateManager::on_high_watermark_updated`] was not called.
    pub fn last_stable_offset(&self, high_watermark: i64) -> i64 {
        let ongoing = self.ongoing_txns.keys().next().copied();
        let unreplicated = self
            .unreplicated_txns
            .iter()
            .find(|(_, (_, marker))| *marker >= high_watermark)
            .map(|(first, _)| *first);
        [ongoing, unreplicated]
            .into_iter()
            .flatten()
            .fold(high_watermark, i64::min)
    }

    /// The open transactions, oldest first: (first offset, producer id).
    pub fn ongoing_txns(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.ongoing_txns.iter().map(|(f, p)| (*f, *p))
    }

    /// After the producers were replaced (snapshot load): the open transactions are those
    /// the entries name; nothing is unreplicated.
    pub(super) fn rebuild_ongoing_txns(&mut self) {
        self.ongoing_txns = self
            .producers
            .values()
            .filter_map(|e| e.current_txn_first_offset.map(|f| (f, e.producer_id)))
            .collect();
        self.unreplicated_txns.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::super::BatchMetadata;
    use super::*;

    fn data(psm: &mut ProducerStateManager, pid: i64, offset: i64, txn: bool) {
        psm.update(
            pid,
            0,
            BatchMetadata {
                first_seq: offset as i32,
                last_seq: offset as i32,
                first_offset: offset,
                last_offset: offset,
                timestamp: 0,
            },
        );
        if txn {
            psm.update_txn_data(pid, offset);
        }
    }

    #[test]
    fn transactions_open_complete_and_hold_the_last_stable_offset() {
        let dir = tempfile::tempdir().unwrap();
        let mut psm = ProducerStateManager::new(dir.path().to_path_buf(), 1000);
        data(&mut psm, 1, 0, true);
        data(&mut psm, 2, 1, true);
        data(&mut psm, 1, 2, true);
        assert_eq!(psm.first_unstable_offset(), Some(0));
        assert_eq!(psm.last_stable_offset(10), 0);
        assert_eq!(
            psm.check_txn_state(1, 0, false),
            Err(ProducerStateError::InvalidTxnState { producer_id: 1 })
        );
        let done = psm.append_end_txn_marker(1, 0, 5, true, 3, 0).unwrap();
        assert_eq!(
            done,
            CompletedTxn {
                producer_id: 1,
                first_offset: 0,
                last_offset: 3,
                is_aborted: true
            }
        );
        assert_eq!(psm.last_stable_offset_of(&done), 1);
        psm.complete_txn(&done);
        // Unreplicated until the HW passes the marker.
        assert_eq!(psm.last_stable_offset(3), 0);
        assert_eq!(psm.last_stable_offset(4), 1);
        psm.on_high_watermark_updated(4);
        assert_eq!(psm.first_unstable_offset(), Some(1));
        assert_eq!(
            psm.check_end_txn(1, 0, 4).unwrap_err().error_code(),
            kraftd_protocol::ErrorCode::TransactionCoordinatorFenced
        );
        assert!(psm.check_end_txn(1, 0, 5).is_ok());
        // A marker of an empty transaction completes nothing.
        assert_eq!(psm.append_end_txn_marker(1, 0, 5, false, 4, 0), None);
        let done = psm.append_end_txn_marker(2, 0, 5, false, 5, 0).unwrap();
        assert_eq!(psm.last_stable_offset_of(&done), 6);
        psm.complete_txn(&done);
        psm.on_high_watermark_updated(6);
        assert_eq!(psm.first_unstable_offset(), None);
        assert_eq!(psm.last_stable_offset(6), 6);
    }
}
