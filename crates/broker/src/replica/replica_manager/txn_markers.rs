//! Transaction markers as the partition leader writes them for the transaction coordinator
//! (Kafka's `ReplicaManager.appendRecords` with origin COORDINATOR, from
//! `KafkaApis.handleWriteTxnMarkersRequest`): each marker is appended with `acks=all`
//! semantics, and its answer waits until the HW covers it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use kraftd_log::clock::unix_ms;
use kraftd_protocol::ErrorCode;
use tokio::time::Instant;
use tracing::debug;

use super::{wait_for, ReplicaManager};
use crate::replica::partition::HostedPartition;
use crate::replica::TopicIdPartition;

/// One marker of a WriteTxnMarkers request: end the transaction of a producer on these
/// partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMarkerWrite {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub coordinator_epoch: i32,
    /// Commit (true) or abort.
    pub commit: bool,
    pub partitions: Vec<TopicIdPartition>,
}

impl ReplicaManager {
    /// Writes each marker on each of its partitions as leader, then waits (up to
    /// `timeout`, REQUEST_TIMED_OUT after) until each partition's HW covers its marker.
    /// Per marker, per partition (in the order given): NONE, NOT_LEADER_OR_FOLLOWER,
    /// UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
    /// TRANSACTION_COORDINATOR_FENCED, INVALID_PRODUCER_EPOCH, KAFKA_STORAGE_ERROR.
    pub async fn write_txn_markers(
        &self,
        timeout: Duration,
        markers: &[TxnMarkerWrite],
    ) -> Vec<Vec<(TopicIdPartition, ErrorCode)>> {
        let deadline = Instant::now() + timeout;
        let now = unix_ms();
        let mut results: Vec<Vec<(TopicIdPartition, ErrorCode)>> = Vec::new();
        let mut waiting: Vec<(usize, usize, Arc<HostedPartition>, i64)> = Vec::new();
        for (m, marker) in markers.iter().enumerate() {
            let mut out = Vec::with_capacity(marker.partitions.len());
            for tp in &marker.partitions {
                let Some(hosted) = self.partition(tp.topic_id, tp.partition) else {
                    let code = self.missing_partition_error(tp.topic_id, tp.partition);
                    out.push((tp.clone(), code));
                    continue;
                };
                let outcome = hosted.lock().append_markers_as_leader(
                    marker.producer_id,
                    marker.producer_epoch,
                    marker.coordinator_epoch,
                    marker.commit,
                    now,
                );
                match outcome {
                    Ok(append) => {
                        hosted.changed.notify_waiters();
                        waiting.push((m, out.len(), hosted, append.last_offset + 1));
                        out.push((tp.clone(), ErrorCode::None));
                    }
                    Err(e) => {
                        debug!(topic = %tp.topic, partition = tp.partition, error = %e,
                            producer_id = marker.producer_id, "transaction marker refused");
                        self.metrics
                            .failed_produce_requests
                            .fetch_add(1, Ordering::Relaxed);
                        out.push((tp.clone(), e.error_code()));
                    }
                }
            }
            results.push(out);
        }
        for (m, i, hosted, required) in waiting {
            let error = wait_for(&hosted, deadline, |p| {
                p.check_enough_replicas_reach_offset(required)
            })
            .await
            .unwrap_or(ErrorCode::RequestTimedOut);
            results[m][i].1 = error;
        }
        results
    }
}
