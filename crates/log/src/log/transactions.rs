//! Producer state and transactions on the log (Kafka's `UnifiedLog` producer-state and
//! transaction parts): the [`ProducerStateManager`] rebuilt from its latest snapshot and the
//! log after it (Kafka's `LogLoader`/`rebuildProducerState`), updated by every append, leader
//! or follower; abort markers recorded in their segment's `.txnindex`; the last stable
//! offset; the aborted transactions of a fetched range.
//!
//! The producer state is loaded on demand ([`Log::load_producer_state`]): a data partition's
//! owner loads it once after opening, the metadata log never does. Until it is loaded appends
//! do not touch it.

use bytes::Bytes;
use kraftd_protocol::records::{Batches, ControlRecord, RecordBatch};

use super::Log;
use crate::error::{LogError, Result};
use crate::producer_state::{AbortedTxn, BatchMetadata, ProducerStateManager};

/// Replay reads this much of the log at a time.
const REPLAY_READ_BYTES: usize = 1 << 20;

/// What a transaction marker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarker {
    pub is_abort: bool,
    pub coordinator_epoch: i32,
}

/// The transaction marker a control batch carries, if it is one (its first record's key is
/// ABORT or COMMIT and its value an EndTxnMarker); `None` for other control records or
/// unreadable ones.
pub fn txn_marker_of(batch: &RecordBatch) -> Option<TxnMarker> {
    if !batch.is_control() {
        return None;
    }
    let record = batch.records().ok()?.next()?.ok()?;
    let key = record.key?;
    match ControlRecord::decode(&key, record.value.unwrap_or_default()).ok()? {
        ControlRecord::Abort(m) => Some(TxnMarker {
            is_abort: true,
            coordinator_epoch: m.coordinator_epoch,
        }),
        ControlRecord::Commit(m) => Some(TxnMarker {
            is_abort: false,
            coordinator_epoch: m.coordinator_epoch,
        }),
        _ => None,
    }
}

impl Log {
    /// The producer state (empty until [`Log::load_producer_state`]).
    pub fn producer_state(&self) -> &ProducerStateManager {
        &self.producers
    }

    /// The producer state, to expire producers or follow the high watermark.
    pub fn producer_state_mut(&mut self) -> &mut ProducerStateManager {
        &mut self.producers
    }

    /// Whether [`Log::load_producer_state`] ran.
    pub fn producer_state_loaded(&self) -> bool {
        self.producers_loaded
    }

    /// Loads the latest producer snapshot at or below the log end (deleting later ones and
    /// ones not past the log start) and replays the batches after it, recording abort
    /// markers in their segments' `.txnindex` where recovery lost them (Kafka's
    /// `loadProducerState`). From then on every append updates the state.
    pub fn load_producer_state(&mut self, now_ms: i64) -> Result<()> {
        let start = self.log_start_offset;
        let end = self.log_end_offset;
        self.producers
            .truncate_and_reload(start, end, now_ms)
            .map_err(LogError::io("reload producer state", &self.dir))?;
        let mut offset = self.producers.map_end_offset().max(start);
        while offset < end {
            let read = self.read(offset, REPLAY_READ_BYTES, end)?;
            if read.bytes.is_empty() {
                break;
            }
            self.apply_to_producers(&read.bytes, offset)?;
            if read.next_offset <= offset {
                break;
            }
            offset = read.next_offset;
        }
        self.producers.set_map_end_offset(end);
        self.producers_loaded = true;
        Ok(())
    }

    /// After a truncation: the loaded state is reloaded to match the shorter log. Nothing
    /// expires here (the owner expires producers on its own schedule).
    pub(super) fn reload_producer_state_after_truncation(&mut self) -> Result<()> {
        if self.producers_loaded {
            self.load_producer_state(i64::MIN)?;
        }
        Ok(())
    }

    /// Updates the producer state from appended batches at or past `from`; abort markers go
    /// into their segment's `.txnindex`.
    pub(super) fn apply_to_producers(&mut self, records: &Bytes, from: i64) -> Result<()> {
        for batch in Batches::new(records.clone()) {
            let Ok(batch) = batch else { break };
            if batch.last_offset() < from {
                continue;
            }
            self.apply_batch_to_producers(&batch)?;
        }
        Ok(())
    }

    fn apply_batch_to_producers(&mut self, batch: &RecordBatch) -> Result<()> {
        let producer_id = batch.producer_id();
        if producer_id < 0 {
            return Ok(());
        }
        if batch.is_control() {
            let Some(marker) = txn_marker_of(batch) else {
                tracing::warn!(dir = %self.dir.display(), offset = batch.base_offset(),
                    "control batch of a producer that is no transaction marker");
                return Ok(());
            };
            let offset = batch.base_offset();
            let completed = self.producers.append_end_txn_marker(
                producer_id,
                batch.producer_epoch(),
                marker.coordinator_epoch,
                marker.is_abort,
                offset,
                batch.max_timestamp(),
            );
            if let Some(completed) = completed {
                let last_stable_offset = self.producers.last_stable_offset_of(&completed);
                if completed.is_aborted {
                    let aborted = AbortedTxn {
                        producer_id,
                        first_offset: completed.first_offset,
                        last_offset: completed.last_offset,
                        last_stable_offset,
                    };
                    if let Some((_, seg)) = self.segments.range_mut(..=offset).next_back() {
                        seg.append_aborted_txn(aborted)?;
                    }
                }
                self.producers.complete_txn(&completed);
            }
            return Ok(());
        }
        self.producers.update(
            producer_id,
            batch.producer_epoch(),
            BatchMetadata {
                first_seq: batch.base_sequence(),
                last_seq: batch.last_sequence(),
                first_offset: batch.base_offset(),
                last_offset: batch.last_offset(),
                timestamp: batch.max_timestamp(),
            },
        );
        if batch.is_transactional() {
            self.producers
                .update_txn_data(producer_id, batch.base_offset());
        }
        Ok(())
    }

    /// Writes a producer-state snapshot at the log end (on roll and close, as Kafka).
    pub fn take_producer_snapshot(&mut self) -> Result<()> {
        let result = self.take_producer_snapshot_unreported();
        self.report(result)
    }

    fn take_producer_snapshot_unreported(&mut self) -> Result<()> {
        if !self.producers_loaded {
            return Ok(());
        }
        self.producers
            .take_snapshot()
            .map_err(LogError::io("write producer snapshot", &self.dir))
    }

    /// The first offset of the oldest open (or not yet replicated) transaction.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.producers.first_unstable_offset()
    }

    /// Kafka's `lastStableOffset`: the first unstable offset when below the high watermark,
    /// else the high watermark.
    pub fn last_stable_offset(&self, high_watermark: i64) -> i64 {
        self.producers.last_stable_offset(high_watermark)
    }

    /// Kafka's `collectAbortedTransactions`: the aborted transactions overlapping
    /// `[start_offset, upper_bound_offset)`, from the `.txnindex` of the segment holding
    /// `start_offset` on, stopping at the first segment whose entries say no later one
    /// matters.
    pub fn collect_aborted_transactions(
        &self,
        start_offset: i64,
        upper_bound_offset: i64,
    ) -> Vec<AbortedTxn> {
        let first = self
            .segments
            .range(..=start_offset)
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        let mut all = Vec::new();
        // A later segment may hold the marker of a transaction that started in range, so
        // the scan goes on until an entry's last stable offset says nothing later matters.
        for seg in self.segments.range(first..).map(|(_, s)| s) {
            let search = seg.collect_aborted_txns(start_offset, upper_bound_offset);
            all.extend(search.aborted);
            if search.complete {
                break;
            }
        }
        all
    }

    /// Every segment's aborted transactions, by segment base offset (for tests and tools).
    pub fn aborted_txn_index(&self) -> Vec<(i64, Vec<AbortedTxn>)> {
        self.segments
            .iter()
            .map(|(b, s)| (*b, s.aborted_txns().to_vec()))
            .collect()
    }
}
