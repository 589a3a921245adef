//! What the coordinators need of their partitions, as the `ReplicaManager`'s primitives:
//! append a batch or a marker as leader at a known leader epoch, wait until the ISR holds
//! it, and read the log back when loading. `coordinator/partition_writer.rs` shapes them
//! into `kraftd_coordinator`'s `PartitionWriter` (Kafka's `CoordinatorPartitionWriter`).

use std::sync::Arc;

use bytes::Bytes;
use kraftd_log::clock::unix_ms;
use kraftd_log::ReadResult;
use kraftd_protocol::{ErrorCode, Uuid};
use tokio::time::Instant;

use super::{wait_for, ReplicaManager};
use crate::replica::partition::{FetchIsolation, HostedPartition, ReadParams, Role};

impl ReplicaManager {
    /// Appends `batch` to a partition this broker leads at exactly `leader_epoch` (a
    /// coordinator's state belongs to one leader epoch: a write from an older one must not
    /// land). Returns the partition and the offset after the batch.
    pub fn append_coordinator_batch(
        &self,
        topic_id: Uuid,
        partition: i32,
        leader_epoch: i32,
        batch: Bytes,
    ) -> Result<(Arc<HostedPartition>, i64), ErrorCode> {
        let hosted = self
            .partition(topic_id, partition)
            .ok_or(ErrorCode::NotLeaderOrFollower)?;
        let append = {
            let mut p = hosted.lock();
            if p.role() != Role::Leader || p.leader_epoch() != leader_epoch {
                return Err(ErrorCode::NotLeaderOrFollower);
            }
            p.append_as_coordinator(batch, unix_ms())
                .map_err(|e| e.error_code())?
        };
        hosted.changed.notify_waiters();
        Ok((hosted, append.last_offset + 1))
    }

    /// Appends a COMMIT (`commit`) or ABORT marker of `producer` (id, epoch, coordinator
    /// epoch) to a partition this broker leads at exactly `leader_epoch`, as
    /// WriteTxnMarkers writes one; its offset.
    pub fn append_coordinator_marker(
        &self,
        topic_id: Uuid,
        partition: i32,
        leader_epoch: i32,
        (producer_id, producer_epoch, coordinator_epoch): (i64, i16, i32),
        commit: bool,
    ) -> Result<i64, ErrorCode> {
        let hosted = self
            .partition(topic_id, partition)
            .ok_or(ErrorCode::NotLeaderOrFollower)?;
        let append = {
            let mut p = hosted.lock();
            if p.role() != Role::Leader || p.leader_epoch() != leader_epoch {
                return Err(ErrorCode::NotLeaderOrFollower);
            }
            p.append_markers_as_leader(
                producer_id,
                producer_epoch,
                coordinator_epoch,
                commit,
                unix_ms(),
            )
            .map_err(|e| e.error_code())?
        };
        hosted.changed.notify_waiters();
        Ok(append.first_offset)
    }

    /// Waits until the partition's HW reaches `required_offset` while this broker still
    /// leads it at `leader_epoch`: NONE, or why not (NOT_LEADER_OR_FOLLOWER when leadership
    /// moved, NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT at `deadline`).
    pub async fn wait_for_coordinator_commit(
        hosted: &Arc<HostedPartition>,
        leader_epoch: i32,
        required_offset: i64,
        deadline: Instant,
    ) -> ErrorCode {
        wait_for(hosted, deadline, |p| {
            if p.role() != Role::Leader || p.leader_epoch() != leader_epoch {
                return Some(ErrorCode::NotLeaderOrFollower);
            }
            p.check_enough_replicas_reach_offset(required_offset)
        })
        .await
        .unwrap_or(ErrorCode::RequestTimedOut)
    }

    /// Reads whole batches from `offset` up to the log end, as leader at `leader_epoch`
    /// (loading a coordinator). With the read: the partition's HW at the time.
    pub fn read_coordinator_log(
        &self,
        topic_id: Uuid,
        partition: i32,
        leader_epoch: i32,
        offset: i64,
        max_bytes: usize,
    ) -> Result<(ReadResult, i64), ErrorCode> {
        let hosted = self
            .partition(topic_id, partition)
            .ok_or(ErrorCode::NotLeaderOrFollower)?;
        let (pending, high_watermark) = {
            let p = hosted.lock();
            let info = p
                .read(&ReadParams {
                    fetch_offset: offset,
                    max_bytes,
                    current_leader_epoch: leader_epoch,
                    last_fetched_epoch: -1,
                    isolation: FetchIsolation::LogEnd,
                })
                .map_err(|e| e.error_code())?;
            (info.read, info.high_watermark)
        };
        let Some(pending) = pending else {
            return Err(ErrorCode::NotLeaderOrFollower);
        };
        let read = pending
            .execute()
            .map_err(|_| ErrorCode::KafkaStorageError)?;
        Ok((read, high_watermark))
    }

    /// The log start offset and HW of a partition this broker leads at `leader_epoch`.
    pub fn coordinator_log_bounds(
        &self,
        topic_id: Uuid,
        partition: i32,
        leader_epoch: i32,
    ) -> Result<(i64, i64, i64), ErrorCode> {
        let hosted = self
            .partition(topic_id, partition)
            .ok_or(ErrorCode::NotLeaderOrFollower)?;
        let p = hosted.lock();
        if p.role() != Role::Leader || p.leader_epoch() != leader_epoch {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        Ok((p.log_start_offset(), p.high_watermark(), p.log_end_offset()))
    }
}
