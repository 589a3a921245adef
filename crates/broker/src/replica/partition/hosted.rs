//! `HostedPartition`: a [`Partition`] as the broker hosts it — its state machine under a
//! mutex, and the change pulse its waiters and the fetch sessions watch.
//!
//! It sits with the partition, not in the `ReplicaManager` that creates it, because three
//! parts of the replica layer share it: the ReplicaManager (produce, fetch, metadata), the
//! follower's fetchers (appending what they fetch) and the log cleaner. Nothing here waits:
//! the purgatories that wait on [`HostedPartition::changed`] stay in the ReplicaManager.

use std::sync::{Arc, Mutex, MutexGuard};

use super::Partition;
use crate::replica::fetch_session::ChangeNotify;
use crate::replica::TopicIdPartition;

/// One hosted partition: its state machine under a mutex, and the pulse waiters watch.
#[derive(Debug)]
pub struct HostedPartition {
    pub tp: TopicIdPartition,
    state: Mutex<Partition>,
    /// Pulsed (`notify_waiters`) on every append, HW move, truncation and role change;
    /// marks the partition in the fetch sessions watching it.
    pub changed: Arc<ChangeNotify>,
}

impl HostedPartition {
    /// Hosts `partition` as `tp`, with a change pulse no one watches yet.
    pub fn new(tp: TopicIdPartition, partition: Partition) -> HostedPartition {
        HostedPartition {
            changed: Arc::new(ChangeNotify::new(tp.clone())),
            tp,
            state: Mutex::new(partition),
        }
    }

    /// The partition's state; a panic while it was held does not make it unusable (every
    /// mutation leaves the partition consistent before it can panic).
    pub fn lock(&self) -> MutexGuard<'_, Partition> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
