//! The narrow interface between the QuorumController and the Raft layer, so the controller
//! stays sans-IO: the real Raft driver satisfies [`RaftClient`] and feeds
//! [`CommittedBatch`]es and leader changes in; tests use a fake.
//!
//! The shape follows Kafka's `RaftClient` as the controller uses it: `scheduleAtomicAppend`
//! with a required base offset (so the controller's predicted offsets, such as a broker
//! epoch, are exactly where the records land), `resign`, and the listener callbacks
//! `handleCommit` and `handleLeaderChange`.

use kraftd_protocol::metadata_version::MetadataVersion;
use kraftd_protocol::MetadataRecord;

/// Why a proposal was refused. Any refusal makes the controller renounce leadership.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposeError {
    /// This node is not the leader for that epoch (any more).
    #[error("not the leader for epoch {epoch}")]
    NotLeader { epoch: i32 },
    /// The log's end is not where the controller expected its records to start.
    #[error("expected base offset {expected}, the log ends at {actual}")]
    UnexpectedBaseOffset { expected: i64, actual: i64 },
    /// The batch could not be accepted (too large, the accumulator is full, ...).
    #[error("proposal refused: {0}")]
    Refused(String),
}

/// What the active controller needs from the Raft layer.
pub trait RaftClient {
    /// Appends `records` as one batch in `epoch`, starting exactly at `base_offset`, and
    /// returns the offsets of its first and last record. Atomic: all records or none. Each
    /// record is written at the version `metadata_version` implies
    /// ([`MetadataVersion::record_version`]), as a Kafka controller at that level writes it.
    fn propose(
        &mut self,
        epoch: i32,
        base_offset: i64,
        metadata_version: MetadataVersion,
        records: &[MetadataRecord],
    ) -> Result<(i64, i64), ProposeError>;

    /// Gives up leadership of `epoch` (after a failed proposal), as Kafka's `resign`.
    fn resign(&mut self, epoch: i32);
}

/// A committed batch handed to [`QuorumController::handle_commit`](super::QuorumController::handle_commit).
/// `records` carries each record's offset; control batches (LeaderChange, ...) carry no
/// records but still move `last_offset`, so the committed offset covers them.
#[derive(Debug, Clone, PartialEq)]
pub struct CommittedBatch {
    /// The leader epoch the batch was written in.
    pub epoch: i32,
    /// The offset of the batch's last record (metadata or control).
    pub last_offset: i64,
    /// The metadata records with their offsets, ascending, all at most `last_offset`.
    pub records: Vec<(i64, MetadataRecord)>,
}
