//! The offset APIs as the leader answers them: ListOffsets, OffsetForLeaderEpoch and
//! DeleteRecords (with its wait for the low watermark).

use std::time::Duration;

use kraftd_protocol::ErrorCode;
use tokio::time::Instant;
use tracing::debug;

use super::{wait_for, ReplicaManager};
use crate::replica::TopicIdPartition;

impl ReplicaManager {
    /// ListOffsets for one partition as leader: (offset, timestamp, leader epoch) for the
    /// special timestamps -2 earliest, -1 latest (HW; a follower replica asking gets the
    /// log end), -3 max timestamp, -4 earliest local, or the first offset at or after a
    /// timestamp.
    pub fn list_offset(
        &self,
        tp: &TopicIdPartition,
        current_leader_epoch: i32,
        timestamp: i64,
        replica_id: i32,
    ) -> Result<(i64, i64, i32), ErrorCode> {
        self.list_offset_isolated(tp, current_leader_epoch, timestamp, replica_id, 0)
    }

    /// [`ReplicaManager::list_offset`] at an isolation level: with 1 (read_committed) the
    /// last fetchable offset is the last stable offset instead of the HW (Kafka's
    /// `lastFetchableOffset`): latest is the LSO and lookups stop below it.
    pub fn list_offset_isolated(
        &self,
        tp: &TopicIdPartition,
        current_leader_epoch: i32,
        timestamp: i64,
        replica_id: i32,
        isolation_level: i8,
    ) -> Result<(i64, i64, i32), ErrorCode> {
        let Some(hosted) = self.partition(tp.topic_id, tp.partition) else {
            return Err(self.missing_partition_error(tp.topic_id, tp.partition));
        };
        let p = hosted.lock();
        // Debug replicas (-2) may ask any replica; others only the leader.
        if replica_id != -2 {
            p.check_offset_for_leader_epoch(current_leader_epoch)
                .map_err(|e| e.error_code())?;
        }
        let fetchable = if isolation_level == 1 {
            p.last_stable_offset()
        } else {
            p.high_watermark()
        };
        let epoch_at = |offset: i64| {
            let (e, _) = p.end_offset_for_epoch(i32::MAX);
            let mut found = e;
            for entry in p.log().epoch_entries() {
                if entry.start_offset <= offset {
                    found = entry.epoch;
                }
            }
            found
        };
        match timestamp {
            -2 | -4 => {
                let o = p.log_start_offset();
                Ok((o, -1, epoch_at(o)))
            }
            -1 => {
                let o = if replica_id >= 0 {
                    p.log_end_offset()
                } else {
                    fetchable
                };
                Ok((o, -1, epoch_at(o.saturating_sub(1).max(0))))
            }
            -3 => {
                let found = p
                    .log()
                    .max_timestamp_and_offset()
                    .map_err(|_| ErrorCode::KafkaStorageError)?;
                match found {
                    Some((ts, off)) if off < fetchable => Ok((off, ts, epoch_at(off))),
                    _ => Ok((-1, -1, -1)),
                }
            }
            ts if ts >= 0 => {
                let found = p
                    .log()
                    .offset_for_timestamp(ts)
                    .map_err(|_| ErrorCode::KafkaStorageError)?;
                match found {
                    Some((off, ts)) if off < fetchable => Ok((off, ts, epoch_at(off))),
                    _ => Ok((-1, -1, -1)),
                }
            }
            _ => Err(ErrorCode::UnsupportedVersion),
        }
    }

    /// OffsetForLeaderEpoch for one partition (KIP-279): the largest epoch ≤ `epoch` and
    /// its end offset, as leader (or from any replica for a debug request).
    pub fn offset_for_leader_epoch(
        &self,
        tp: &TopicIdPartition,
        current_leader_epoch: i32,
        epoch: i32,
        replica_id: i32,
    ) -> Result<(i32, i64), ErrorCode> {
        let Some(hosted) = self.partition(tp.topic_id, tp.partition) else {
            return Err(self.missing_partition_error(tp.topic_id, tp.partition));
        };
        let p = hosted.lock();
        if replica_id == -2 {
            p.check_leader_epoch(current_leader_epoch)
                .map_err(|e| e.error_code())?;
        } else {
            p.check_offset_for_leader_epoch(current_leader_epoch)
                .map_err(|e| e.error_code())?;
        }
        Ok(p.end_offset_for_epoch(epoch))
    }

    /// DeleteRecords (Kafka's `ReplicaManager.deleteRecords` and `DelayedDeleteRecords`):
    /// moves each partition's log start on the leader, then waits until its low watermark
    /// (the smallest log start among the leader and its in-sync followers, which learn the
    /// leader's from their fetches) reaches it, or `timeout` (REQUEST_TIMED_OUT). Returns
    /// each partition's low watermark. One bad partition never fails the others.
    pub async fn delete_records(
        &self,
        timeout: Duration,
        entries: Vec<(TopicIdPartition, i64)>,
    ) -> Vec<(TopicIdPartition, Result<i64, ErrorCode>)> {
        let mut results = Vec::with_capacity(entries.len());
        let mut waiting = Vec::new();
        for (tp, offset) in entries {
            let Some(hosted) = self.partition(tp.topic_id, tp.partition) else {
                let code = self.missing_partition_error(tp.topic_id, tp.partition);
                results.push((tp, Err(code)));
                continue;
            };
            let outcome = hosted.lock().delete_records_on_leader(offset);
            match outcome {
                Ok(low_watermark) => {
                    // Kafka waits for the offset asked for (the HW for -1, which the log
                    // start then is), not for the log start, which may be above it.
                    let log_start = hosted.lock().log_start_offset();
                    let required = if offset == -1 { log_start } else { offset };
                    hosted.changed.notify_waiters();
                    if low_watermark < required {
                        waiting.push((results.len(), hosted, required));
                    }
                    results.push((tp, Ok(low_watermark)));
                }
                Err(e) => {
                    debug!(topic = %tp.topic, partition = tp.partition, error = %e, "delete records refused");
                    results.push((tp, Err(e.error_code())));
                }
            }
        }
        let deadline = Instant::now() + timeout;
        for (i, hosted, required) in waiting {
            // A follower's fetch that moves its log start pulses the partition.
            let outcome = wait_for(&hosted, deadline, |p| {
                if !p.is_leader() {
                    return Some(Err(ErrorCode::NotLeaderOrFollower));
                }
                let low_watermark = p.low_watermark();
                (low_watermark >= required).then_some(Ok(low_watermark))
            })
            .await
            .unwrap_or(Err(ErrorCode::RequestTimedOut));
            results[i].1 = outcome;
        }
        results
    }
}
