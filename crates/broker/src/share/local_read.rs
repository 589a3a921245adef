//! The one read of a partition this broker leads that share groups make: the share fetch's
//! (`share_partition_manager/delayed_share_fetch.rs`) and the DLQ writer's read of the
//! records it copies (`dlq.rs`). In a file of its own so that both reach it without going
//! through the share module's root, which re-exports the manager.

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
