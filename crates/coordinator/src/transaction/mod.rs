//! The transaction coordinator (Kafka's `transaction-coordinator` module with
//! `TransactionCoordinator`/`TransactionStateManager`), sans IO.
//!
//! One [`TransactionCoordinatorShard`] is the state machine of one `__transaction_state`
//! partition: the transactional ids whose id hashes to it ([`partition_for`], Kafka's
//! `abs(hashCode) % transaction.state.log.num.partitions`) and their transactions. It is
//! driven as the group coordinator's shard is ([`crate::group`]): the caller
//! hands it the time, the requests and the partition's records; it hands back records to
//! append, replies to send and marker work (WriteTxnMarkers to send, answered by
//! [`TransactionCoordinatorShard::on_markers_written`]), and says when its next timer is
//! due. Producer ids are allocated by the service and handed in with the requests.
//!
//! The rooms:
//! - [`config`]: `TransactionCoordinatorConfig`, Kafka's `transaction.*` settings;
//! - [`marker_channel`]: what the coordinator needs of whoever sends its markers;
//! - [`metadata`]: `TransactionMetadata` and the transaction states with Kafka's rules;
//! - [`records`]: a `__transaction_state` record as the shard writes and replays it;
//! - [`shard`]: the shard, its request, reply and marker types, loading, timers, Describe
//!   and List;
//! - `init_producer_id`, `add_partitions`, `end_txn`: the transactional requests.

mod add_partitions;
pub mod config;
mod coordinator_shard;
mod end_txn;
mod init_producer_id;
pub mod marker_channel;
pub mod metadata;
pub mod records;
pub mod shard;

#[cfg(test)]
mod tests;

pub use config::TransactionCoordinatorConfig;
pub use coordinator_shard::{TRANSACTION_STATE_TOPIC_NAME, TRANSACTION_VERSION_FEATURE};
pub use marker_channel::{MarkersWritten, TransactionMarkerChannel};
pub use metadata::{TransactionMetadata, TxnState};
pub use records::TransactionRecord;
pub use shard::{
    EndTxnNeeds, MarkerRequest, TransactionCoordinatorShard, TxnShardOutput, TxnShardRequest,
    TxnShardResponse,
};

/// The `__transaction_state` partition coordinating `transactional_id` among `partitions`
/// (> 0): the group coordinator's mapping (Java's `String.hashCode`).
pub fn partition_for(transactional_id: &str, partitions: i32) -> i32 {
    crate::partitioner::partition_for(transactional_id, partitions)
}
