//! `ControllerResult`: what every control manager returns, as Kafka's
//! `org.apache.kafka.controller.ControllerResult`.
//!
//! Managers are pure: they read the current [`MetadataImage`](crate::MetadataImage) and
//! return the records that would make a change together with the response to send once those
//! records commit. Nothing changes until the records are replayed, so the active controller,
//! standbys and snapshot loading all reach the same state through the one replay path.

use kraftd_protocol::MetadataRecord;

/// The most records a non-atomic result puts in one Raft proposal (Kafka's
/// `QuorumController.maxRecordsPerBatch`, 10,000): the Raft layer's own limit. A manager
/// whose records may exceed it writes them non-atomically.
pub const MAX_RECORDS_PER_BATCH: usize = kraftd_raft::core::MAX_RECORDS_PER_PROPOSAL;

/// The records an operation wants written and the response to send once they commit.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerResult<T> {
    /// Records to append to the metadata log, in order.
    pub records: Vec<MetadataRecord>,
    /// The reply, valid only once every record above is committed.
    pub response: T,
    /// Whether the records must be committed in one batch (all or none), as Kafka's
    /// `ControllerResult.atomicOf`; otherwise they may be split across batches.
    pub is_atomic: bool,
}

impl<T> ControllerResult<T> {
    /// Records that may be split across batches (Kafka's `ControllerResult.of`).
    pub fn of(records: Vec<MetadataRecord>, response: T) -> Self {
        ControllerResult {
            records,
            response,
            is_atomic: false,
        }
    }

    /// Records that must commit together or not at all (Kafka's `ControllerResult.atomicOf`).
    pub fn atomic_of(records: Vec<MetadataRecord>, response: T) -> Self {
        ControllerResult {
            records,
            response,
            is_atomic: true,
        }
    }

    /// A result with no records: a reply that needs nothing written (often an error).
    pub fn response_only(response: T) -> Self {
        ControllerResult::of(Vec::new(), response)
    }

    /// The same records with the response mapped, so managers can compose results.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> ControllerResult<U> {
        ControllerResult {
            records: self.records,
            response: f(self.response),
            is_atomic: self.is_atomic,
        }
    }
}
