//! What the replica layer needs from the controller for ISR changes (Kafka's
//! `AlterPartitionManager` trait): submit one partition's proposed change, and learn the
//! state the controller committed for it or why it refused.
//!
//! A trait here, not the manager itself, because the manager is the server's: it speaks
//! AlterPartition over the server's `ControllerChannel`, which the broker's registration,
//! heartbeats, forwarding and producer-id blocks share. Moving the manager into `replica/`
//! would only move the arrow pointing up, from `replica` to that channel. So the
//! [`ReplicaManager`](super::replica_manager::ReplicaManager) holds an
//! [`AlterPartitionManager`] — as Kafka's `ReplicaManager` holds one — and the server's
//! `DefaultAlterPartitionManager` (Kafka's name too) implements it: the replica layer knows
//! the contract, the server layer how it reaches the controller, and a test may hand the
//! ReplicaManager a manager of its own.

use std::fmt;

use kraftd_protocol::{ErrorCode, Uuid};
use tokio::sync::oneshot;

/// One partition's proposed change, as its leader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionItem {
    pub topic_id: Uuid,
    pub partition: i32,
    /// The leader epoch the change was made in.
    pub leader_epoch: i32,
    /// The proposed ISR: (broker id, broker epoch, -1 when unknown).
    pub new_isr: Vec<(i32, i64)>,
    pub leader_recovery_state: i8,
    /// The partition epoch the change is based on (the controller refuses a stale one with
    /// INVALID_UPDATE_VERSION).
    pub partition_epoch: i32,
}

/// The state the controller committed for a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedPartitionState {
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub isr: Vec<i32>,
    pub leader_recovery_state: i8,
    pub partition_epoch: i32,
}

/// The controller's answer for one partition: the committed state (leader, leader_epoch,
/// isr, partition_epoch, leader_recovery_state), or an error code.
pub type AlterPartitionResult = Result<CommittedPartitionState, ErrorCode>;

/// Sends the ISR changes partition leaders propose to the active controller.
pub trait AlterPartitionManager: fmt::Debug + Send + Sync {
    /// Queues one partition's ISR change. At most one change per partition is pending: a
    /// second submit while one is answers Err(OPERATION_NOT_ATTEMPTED) at once, because the
    /// leader must learn the first's partition epoch before it can propose the next. The
    /// returned receiver gets that partition's result; a dropped sender means the manager
    /// stopped.
    fn submit(&self, item: AlterPartitionItem) -> oneshot::Receiver<AlterPartitionResult>;
}
