//! Transactions during a clean (Kafka's `CleanedTransactionMetadata`): which data batches
//! belong to aborted transactions, and when a transaction marker may go.
//!
//! [`AbortedRanges`] answers "is this data batch aborted?" by offset ranges; the offset map
//! pass uses it so the keys of aborted records are never mapped (an aborted value must not
//! hide an older committed one), while committed transactional records are mapped like any.
//!
//! [`CleanedTxns`] walks the batches of the rewritten range in order, carried across the
//! groups of one clean, as Kafka's does:
//!
//! - an aborted transaction becomes *ongoing* for its producer when the walk reaches its
//!   first offset, and ends at its producer's ABORT marker; a transactional data batch of a
//!   producer with an ongoing aborted transaction is discardable (and counts as *observed*),
//!   any other transactional data batch puts its producer in the ongoing committed set;
//! - an ABORT marker is discardable when no batch of its transaction was observed in this
//!   walk; otherwise it stays, and so does its `.txnindex` entry (written to the cleaned
//!   segment holding the marker). Entries of aborted transactions with no data left are
//!   dropped, as Kafka drops them;
//! - a COMMIT marker is discardable when no batch of its producer's transaction was read
//!   since its previous marker;
//! - a control batch with no records (a marker emptied by an earlier clean) is discardable;
//!   other control types never are.
//!
//! "Discardable" is not "removed": the filter removes a marker only once its batch's
//! delete horizon has passed (KIP-534), and never a producer's last batch (see `filter.rs`).

use std::collections::{HashMap, HashSet, VecDeque};

use kraftd_protocol::records::{ControlRecordType, RecordBatch};

use crate::producer_state::AbortedTxn;

/// Aborted transactions by producer, `(first offset, marker offset)` sorted by first offset.
#[derive(Debug, Default)]
pub(crate) struct AbortedRanges {
    by_producer: HashMap<i64, Vec<(i64, i64)>>,
}

impl AbortedRanges {
    pub fn new(aborted: &[AbortedTxn]) -> Self {
        let mut by_producer: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        for t in aborted {
            by_producer
                .entry(t.producer_id)
                .or_default()
                .push((t.first_offset, t.last_offset));
        }
        for ranges in by_producer.values_mut() {
            ranges.sort_unstable();
            ranges.dedup();
        }
        AbortedRanges { by_producer }
    }

    /// Whether `batch` is transactional data inside an aborted transaction of its producer
    /// (a producer has one transaction open at a time, so the range is exact).
    pub fn is_aborted_data(&self, batch: &RecordBatch) -> bool {
        if !batch.is_transactional() || batch.is_control() {
            return false;
        }
        let Some(ranges) = self.by_producer.get(&batch.producer_id()) else {
            return false;
        };
        let i = ranges.partition_point(|&(first, _)| first <= batch.base_offset());
        i > 0 && batch.last_offset() <= ranges[i - 1].1
    }
}

/// Kafka's `CleanedTransactionMetadata` (see the module doc).
#[derive(Debug)]
pub(crate) struct CleanedTxns {
    /// Aborted transactions not reached yet, by first offset.
    pending: VecDeque<AbortedTxn>,
    /// Producer → its ongoing aborted transaction and whether a batch of it was observed.
    ongoing_aborted: HashMap<i64, (AbortedTxn, bool)>,
    /// Producers with a batch of a (not aborted) transaction read since their last marker.
    ongoing_committed: HashSet<i64>,
    /// `.txnindex` entries of the retained ABORT markers, not yet written.
    retained: Vec<AbortedTxn>,
}

impl CleanedTxns {
    /// Over the aborted transactions whose data may lie in the walked range (every
    /// `.txnindex` entry of the log starting below the end of the range).
    pub fn new(aborted: &[AbortedTxn]) -> Self {
        let mut pending = aborted.to_vec();
        pending.sort_by_key(|t| (t.first_offset, t.last_offset, t.producer_id));
        pending.dedup();
        CleanedTxns {
            pending: pending.into(),
            ongoing_aborted: HashMap::new(),
            ongoing_committed: HashSet::new(),
            retained: Vec::new(),
        }
    }

    fn reach(&mut self, offset: i64) {
        while self
            .pending
            .front()
            .is_some_and(|t| t.first_offset <= offset)
        {
            let t = self.pending.pop_front().expect("checked");
            self.ongoing_aborted
                .entry(t.producer_id)
                .or_insert((t, false));
        }
    }

    /// Kafka's `onBatchRead`: a data batch was read; whether it is aborted (discardable).
    pub fn on_batch(&mut self, batch: &RecordBatch) -> bool {
        self.reach(batch.last_offset());
        if !batch.is_transactional() {
            return false;
        }
        match self.ongoing_aborted.get_mut(&batch.producer_id()) {
            Some((_, observed)) => {
                *observed = true;
                true
            }
            None => {
                self.ongoing_committed.insert(batch.producer_id());
                false
            }
        }
    }

    /// Kafka's `onControlBatchRead`: a control batch was read, `first_key` the key of its
    /// first record (`None` when it has none); whether the marker is discardable.
    pub fn on_control(&mut self, batch: &RecordBatch, first_key: Option<Option<&[u8]>>) -> bool {
        self.reach(batch.last_offset());
        let Some(key) = first_key else {
            // Emptied by an earlier clean.
            return true;
        };
        let kind = key
            .filter(|k| k.len() >= ControlRecordType::KEY_SIZE)
            .and_then(|k| ControlRecordType::from_id(i16::from_be_bytes([k[2], k[3]])));
        let pid = batch.producer_id();
        match kind {
            Some(ControlRecordType::Abort) => match self.ongoing_aborted.remove(&pid) {
                Some((t, true)) => {
                    self.retained.push(t);
                    false
                }
                _ => true,
            },
            Some(ControlRecordType::Commit) => !self.ongoing_committed.remove(&pid),
            _ => false,
        }
    }

    /// The `.txnindex` entries of the ABORT markers kept since the last call, in marker
    /// order (for the cleaned segment being written).
    pub fn take_retained(&mut self) -> Vec<AbortedTxn> {
        std::mem::take(&mut self.retained)
    }
}
