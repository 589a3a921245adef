//! Share groups (KIP-932) on the broker: the partition side (Kafka's `SharePartitionManager`,
//! `SharePartition`, `ShareSessionCache`) and the [`persister`] through which a share
//! partition's state reaches the share coordinator (`__share_group_state`): the
//! [`default_persister`] (Kafka's `DefaultStatePersister`) over the five state APIs, which
//! [`state_api`] sees as one shape.

pub mod default_persister;
pub mod dlq;
pub mod persister;
pub mod share_group_config;
pub mod share_partition;
pub mod share_partition_manager;
pub mod share_session_cache;
pub mod state_api;

pub use default_persister::DefaultStatePersister;
pub use persister::Persister;
pub use share_partition::SharePartition;
pub use share_partition_manager::SharePartitionManager;

use std::time::Duration;

use crate::replica::fetch_session::PartitionFetchParams;
use crate::replica::replica_manager::{FetchLimits, FetchOrigin, FetchResult, ReplicaManager};
use crate::replica::TopicIdPartition;

/// One read of a partition this broker leads, from `fetch_offset`, without waiting: the
/// share fetch's read (at the share partition's leader epoch, `partition_max_bytes` of the
/// partition within the fetch's `max_bytes` left) and the DLQ's read of the records it
/// copies (any epoch, Kafka's `DLQ_MAX_FETCH_BYTES`). `None` when the ReplicaManager
/// answered nothing for it.
pub(crate) async fn read_local(
    replica_manager: &ReplicaManager,
    origin: FetchOrigin,
    tp: &TopicIdPartition,
    fetch_offset: i64,
    current_leader_epoch: i32,
    partition_max_bytes: i32,
    max_bytes: usize,
) -> Option<FetchResult> {
    let read = PartitionFetchParams {
        fetch_offset,
        log_start_offset: -1,
        max_bytes: partition_max_bytes.max(0),
        current_leader_epoch,
        last_fetched_epoch: -1,
        high_watermark: i64::MAX,
    };
    let limits = FetchLimits {
        max_wait: Duration::ZERO,
        min_bytes: 0,
        max_bytes,
    };
    let mut results = replica_manager
        .fetch_messages(origin, limits, &[(tp.clone(), read)])
        .await;
    results.pop().map(|(_, result)| result)
}
