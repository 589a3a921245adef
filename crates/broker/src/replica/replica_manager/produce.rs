//! The produce path: appends as leader and the produce purgatory (`acks=all` waits until
//! the HW covers the batch).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kraftd_log::clock::unix_ms;
use kraftd_protocol::ErrorCode;
use tokio::time::Instant;
use tracing::debug;

use super::{wait_for, ReplicaManager};
use crate::replica::partition::{HostedPartition, LeaderAppend, PartitionError, RecordError};
use crate::replica::TopicIdPartition;

/// One partition's produce outcome, as the response reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceResult {
    pub error: ErrorCode,
    pub message: Option<String>,
    /// The records that made the batch fail validation (ProduceResponse v8+ `record_errors`).
    pub record_errors: Vec<RecordError>,
    pub base_offset: i64,
    pub log_append_time: i64,
    pub log_start_offset: i64,
}

impl ProduceResult {
    pub fn error(error: ErrorCode, message: Option<String>) -> Self {
        ProduceResult {
            error,
            message,
            record_errors: Vec::new(),
            base_offset: -1,
            log_append_time: -1,
            log_start_offset: -1,
        }
    }
}

impl ReplicaManager {
    /// Appends each partition's batch as leader and, for `acks=all`, waits until the ISR
    /// holds it or `timeout` passes (REQUEST_TIMED_OUT). One bad partition never fails the
    /// others. [`ReplicaManager::append_records_now`] then [`PendingProduce::complete`].
    pub async fn append_records(
        &self,
        acks: i16,
        timeout: Duration,
        entries: Vec<(TopicIdPartition, Bytes)>,
    ) -> Vec<(TopicIdPartition, ProduceResult)> {
        self.append_records_now(acks, timeout, entries)
            .complete()
            .await
    }

    /// The append half of a produce, done at once: the request handler calls it before it
    /// takes the connection's next request, so batches are appended in the order a client
    /// sent them (as Kafka handles one request per connection at a time), while the
    /// `acks=all` waits of pipelined requests overlap.
    pub fn append_records_now(
        &self,
        acks: i16,
        timeout: Duration,
        entries: Vec<(TopicIdPartition, Bytes)>,
    ) -> PendingProduce {
        let deadline = Instant::now() + timeout;
        let now = unix_ms();
        let mut results = Vec::with_capacity(entries.len());
        let mut waiting = Vec::new();
        for (tp, records) in entries {
            let Some(hosted) = self.partition(tp.topic_id, tp.partition) else {
                let code = self.missing_partition_error(tp.topic_id, tp.partition);
                results.push((tp, ProduceResult::error(code, None)));
                continue;
            };
            let size = records.len() as u64;
            let outcome = hosted.lock().append_as_leader(records, acks, now);
            match outcome {
                Ok(append) => {
                    if !append.duplicate {
                        let m = &self.metrics;
                        m.bytes_in.fetch_add(size, Ordering::Relaxed);
                        let count = (append.last_offset - append.first_offset + 1).max(0) as u64;
                        m.messages_in.fetch_add(count, Ordering::Relaxed);
                    }
                    hosted.changed.notify_waiters();
                    let result = produce_ok(&append);
                    // A retried duplicate waits like the original: its ack must not
                    // come before the ISR holds the original batch.
                    if acks == -1 {
                        waiting.push((results.len(), hosted, append.last_offset + 1));
                    }
                    results.push((tp, result));
                }
                Err(e) => {
                    debug!(topic = %tp.topic, partition = tp.partition, error = %e, "produce refused");
                    self.metrics
                        .failed_produce_requests
                        .fetch_add(1, Ordering::Relaxed);
                    let mut result = ProduceResult::error(e.error_code(), Some(e.to_string()));
                    if let PartitionError::RecordErrors { records, .. } = e {
                        result.record_errors = records;
                    }
                    results.push((tp, result));
                }
            }
        }
        PendingProduce {
            results,
            waiting,
            deadline,
        }
    }
}

/// A produce whose batches are appended; for `acks=all`, the waits for the ISR remain.
#[derive(Debug)]
pub struct PendingProduce {
    results: Vec<(TopicIdPartition, ProduceResult)>,
    /// (index in `results`, partition, offset the HW must reach).
    waiting: Vec<(usize, Arc<HostedPartition>, i64)>,
    deadline: Instant,
}

impl PendingProduce {
    /// Waits until every `acks=all` partition's HW covers its batch (or the request's
    /// timeout: REQUEST_TIMED_OUT) and gives each partition's answer.
    pub async fn complete(mut self) -> Vec<(TopicIdPartition, ProduceResult)> {
        for (i, hosted, required) in std::mem::take(&mut self.waiting) {
            let error = wait_for(&hosted, self.deadline, |p| {
                p.check_enough_replicas_reach_offset(required)
            })
            .await
            .unwrap_or(ErrorCode::RequestTimedOut);
            if error != ErrorCode::None {
                self.results[i].1 = ProduceResult::error(error, None);
            }
        }
        self.results
    }
}

fn produce_ok(append: &LeaderAppend) -> ProduceResult {
    ProduceResult {
        error: ErrorCode::None,
        message: None,
        record_errors: Vec::new(),
        base_offset: append.first_offset,
        log_append_time: append.log_append_time,
        log_start_offset: append.log_start_offset,
    }
}
