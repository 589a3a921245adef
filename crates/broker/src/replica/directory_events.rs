//! What the replica layer tells the broker about its log directories (Kafka's
//! `DirectoryEventHandler`): a replica is in a directory other than the one the metadata
//! names (KIP-858), or a directory failed. The server's `AssignmentsManager` implements it by reporting the
//! directory to the controller with AssignReplicasToDirs; a trait here for the same reason
//! as [`AlterPartitionManager`](super::alter_partition::AlterPartitionManager): the replica
//! layer knows the contract, the server how it reaches the controller.

use std::fmt;

use kraftd_protocol::Uuid;

/// Receives the replica layer's directory events.
pub trait DirectoryEventHandler: fmt::Debug + Send + Sync {
    /// The replica of (`topic_id`, `partition`) lives in the log directory `directory_id`,
    /// which the metadata does not say yet; `reason` is for the logs. Returns at once: the
    /// report is queued, sent and retried by the handler.
    fn handle_assignment(&self, topic_id: Uuid, partition: i32, directory_id: Uuid, reason: &str);

    /// The log directory `directory_id` failed: the controller is to learn it (Kafka's
    /// `handleFailure`: the lifecycle manager's OfflineLogDirs). Returns at once.
    fn handle_failure(&self, directory_id: Uuid);
}
