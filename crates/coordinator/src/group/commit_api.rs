//! Which API commits offsets, OffsetCommit at a version or TxnOffsetCommit: the classic and
//! consumer groups validate a commit by it, so it lives in a leaf both import rather than in
//! the shard that holds the groups.

/// The API committing offsets: OffsetCommit and TxnOffsetCommit are validated apart
/// (Kafka's `isTransactional`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitApi {
    /// OffsetCommit at this version.
    OffsetCommit(i16),
    /// TxnOffsetCommit: may name no member at all, is exempt from OffsetCommit's v9 rule
    /// for consumer-protocol members and is not held back by a classic rebalance.
    Transactional,
}
