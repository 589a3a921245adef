//! `TransactionMetadata` (Kafka's): what the coordinator knows of one transactional id, and
//! the states a transaction moves through (Kafka's `TransactionState`, with its ids as the
//! log stores them and its table of valid previous states).

use std::collections::BTreeSet;

/// No producer id (Kafka's `RecordBatch.NO_PRODUCER_ID`).
pub const NO_PRODUCER_ID: i64 = -1;
/// No producer epoch (Kafka's `RecordBatch.NO_PRODUCER_EPOCH`).
pub const NO_PRODUCER_EPOCH: i16 = -1;

/// Transaction version 2 (KIP-890 part 2): the epoch is bumped at every transaction end.
pub const TV_2: i16 = 2;

/// A transaction's state (Kafka's `TransactionState`); the discriminant is the id written
/// in `TransactionLogValue.TransactionStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i8)]
pub enum TxnState {
    Empty = 0,
    Ongoing = 1,
    PrepareCommit = 2,
    PrepareAbort = 3,
    CompleteCommit = 4,
    CompleteAbort = 5,
    Dead = 6,
    PrepareEpochFence = 7,
}

impl TxnState {
    pub const ALL: [TxnState; 8] = [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
        TxnState::Dead,
        TxnState::PrepareEpochFence,
    ];

    pub fn id(self) -> i8 {
        self as i8
    }

    pub fn from_id(id: i8) -> Option<Self> {
        TxnState::ALL.into_iter().find(|s| s.id() == id)
    }

    /// The name DescribeTransactions and ListTransactions report.
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        TxnState::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether an idle transactional id in this state may expire.
    pub fn expiration_allowed(self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
    }

    /// Kafka's `validPreviousStates`: the states this one may be entered from.
    pub fn valid_previous_states(self) -> &'static [TxnState] {
        use TxnState::*;
        match self {
            Empty => &[Empty, CompleteCommit, CompleteAbort],
            Ongoing => &[Ongoing, Empty, CompleteCommit, CompleteAbort],
            PrepareCommit => &[Ongoing],
            PrepareAbort => &[
                Ongoing,
                PrepareEpochFence,
                Empty,
                CompleteCommit,
                CompleteAbort,
            ],
            CompleteCommit => &[PrepareCommit],
            CompleteAbort => &[PrepareAbort],
            Dead => &[Empty, CompleteAbort, CompleteCommit],
            PrepareEpochFence => &[Ongoing],
        }
    }

    pub fn can_transition_to(self, to: TxnState) -> bool {
        to.valid_previous_states().contains(&self)
    }
}

/// A topic partition in a transaction.
pub type TopicPartition = (String, i32);

/// What the coordinator holds for one transactional id (Kafka's `TransactionMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionMetadata {
    pub transactional_id: String,
    pub producer_id: i64,
    /// The producer id before the last transition that changed it (TransactionLogValue v1).
    pub prev_producer_id: i64,
    /// The producer id the next epoch lives on after an epoch overflow (TV2).
    pub next_producer_id: i64,
    pub producer_epoch: i16,
    /// The epoch before the last bump (KIP-360 retries, TV2 EndTxn retries). Kafka does not
    /// write it to the log: a loaded transaction has none.
    pub last_producer_epoch: i16,
    pub txn_timeout_ms: i32,
    pub state: TxnState,
    /// The partitions in the transaction, sorted.
    pub partitions: BTreeSet<TopicPartition>,
    /// When the first partition was added (-1 when no transaction is open).
    pub txn_start_timestamp: i64,
    pub txn_last_update_timestamp: i64,
    /// The client's transaction version (0/1: TV1, 2: TV2).
    pub client_transaction_version: i16,
}

impl TransactionMetadata {
    /// Kafka's `isEpochExhausted`: an epoch this high cannot be bumped twice more.
    pub fn is_epoch_exhausted(epoch: i16) -> bool {
        epoch >= i16::MAX - 1
    }

    pub fn is_producer_epoch_exhausted(&self) -> bool {
        Self::is_epoch_exhausted(self.producer_epoch)
    }

    /// A freshly created transactional id (before its first InitProducerId is written).
    pub fn new_empty(transactional_id: &str, producer_id: i64, timeout_ms: i32, now: i64) -> Self {
        TransactionMetadata {
            transactional_id: transactional_id.to_string(),
            producer_id,
            prev_producer_id: NO_PRODUCER_ID,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms: timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            txn_start_timestamp: -1,
            txn_last_update_timestamp: now,
            client_transaction_version: 0,
        }
    }

    pub fn supports_epoch_bump(&self) -> bool {
        self.client_transaction_version >= TV_2
    }

    /// The partitions grouped by topic, topics and partitions sorted.
    pub fn partitions_by_topic(&self) -> Vec<(String, Vec<i32>)> {
        let mut out: Vec<(String, Vec<i32>)> = Vec::new();
        for (topic, p) in &self.partitions {
            match out.last_mut() {
                Some((t, ps)) if t == topic => ps.push(*p),
                _ => out.push((topic.clone(), vec![*p])),
            }
        }
        out
    }

    /// The next state of this metadata, checked against Kafka's transition table; the
    /// previous producer id becomes the current one (Kafka's `prepareTransitionTo`).
    pub fn transit(&self, next: TransactionMetadata) -> Result<TransactionMetadata, String> {
        if !self.state.can_transition_to(next.state) {
            return Err(format!(
                "transactional id {}: {} cannot go to {}",
                self.transactional_id,
                self.state.name(),
                next.state.name()
            ));
        }
        if next.producer_id < 0 {
            return Err(format!("illegal producer id {}", next.producer_id));
        }
        if next.state != TxnState::Dead && next.producer_epoch < 0 {
            return Err(format!("illegal producer epoch {}", next.producer_epoch));
        }
        Ok(TransactionMetadata {
            prev_producer_id: self.producer_id,
            ..next
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_transition_table() {
        use TxnState::*;
        assert!(Ongoing.can_transition_to(PrepareCommit));
        assert!(!Empty.can_transition_to(PrepareCommit));
        assert!(Empty.can_transition_to(PrepareAbort));
        assert!(PrepareCommit.can_transition_to(CompleteCommit));
        assert!(!PrepareCommit.can_transition_to(CompleteAbort));
        assert!(!Ongoing.can_transition_to(Dead));
        assert!(CompleteAbort.can_transition_to(Dead));
        for s in TxnState::ALL {
            assert_eq!(TxnState::from_id(s.id()), Some(s));
            assert_eq!(TxnState::from_name(s.name()), Some(s));
        }
        assert_eq!(TxnState::from_id(8), None);
        assert_eq!(PrepareEpochFence.id(), 7);
    }
}
