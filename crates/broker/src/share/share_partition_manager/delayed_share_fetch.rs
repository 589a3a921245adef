//! A member's share fetch (Kafka's `SharePartitionManager.fetchMessages` and
//! `DelayedShareFetch`): every partition loaded if needed, read from its next fetch offset
//! through the one local read ([`crate::share::local_read::read_local`]) and acquired; with nothing
//! acquired and no error, the fetch waits until its max wait for an append or for records
//! to become available again, and tries again.

use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use kraftd_log::clock::unix_ms;
use kraftd_protocol::messages::share_fetch_response::AcquiredRecords;
use kraftd_protocol::records::{Batches, ControlRecordType};
use kraftd_protocol::ErrorCode;
use tokio::time::Instant;

use super::{
    GroupShareSettings, ShareFetchParams, ShareFetchPartition, ShareFetchPartitionData,
    SharePartitionManager,
};
use crate::replica::replica_manager::FetchOrigin;
use crate::replica::TopicIdPartition;
use crate::share::metrics::ShareRequest;
use crate::share::share_partition::{
    split_by_batch_size, FetchedBatch, ShareAcquireMode, ShareAcquiredRecords,
};

impl SharePartitionManager {
    /// Reads and acquires for a member (Kafka's `fetchMessages` and `DelayedShareFetch`):
    /// every partition is loaded if needed and read from its next fetch offset; with
    /// nothing acquired and no error, it waits up to `max_wait` for an append or for
    /// records to become available again, and tries again. The fetch's max records spans
    /// the partitions in order.
    pub async fn fetch_messages(
        &self,
        params: &ShareFetchParams,
        partitions: &[ShareFetchPartition],
    ) -> Vec<(TopicIdPartition, ShareFetchPartitionData)> {
        let answers = self.fetch_until_done(params, partitions).await;
        // Kafka's share-fetch meters: every topic of the request, and those with a failed
        // partition.
        let failed = answers
            .iter()
            .filter(|(_, d)| d.error != ErrorCode::None)
            .map(|(tp, _)| tp.topic.as_str());
        self.metrics().record_request(
            ShareRequest::Fetch,
            partitions.iter().map(|p| p.tp.topic.as_str()),
            failed,
        );
        answers
    }

    async fn fetch_until_done(
        &self,
        params: &ShareFetchParams,
        partitions: &[ShareFetchPartition],
    ) -> Vec<(TopicIdPartition, ShareFetchPartitionData)> {
        let deadline = Instant::now() + params.max_wait;
        let settings = self.group_settings(&params.group_id);
        // A fetch made in a share session acquires only while that session lasts.
        let in_session = self.has_session(&params.group_id, &params.member_id);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let mut pulses = Vec::new();
            let last = Instant::now() >= deadline;
            let answers = self
                .fetch_once(params, &settings, partitions, &mut pulses, last, in_session)
                .await;
            if let Some(answers) = answers {
                let done = answers
                    .iter()
                    .any(|(_, d)| d.error != ErrorCode::None || !d.acquired_records.is_empty());
                if done || last {
                    return answers;
                }
            }
            let pulse = std::future::poll_fn(|cx| {
                for p in pulses.iter_mut() {
                    if std::future::Future::poll(p.as_mut(), cx).is_ready() {
                        return std::task::Poll::Ready(());
                    }
                }
                std::task::Poll::Pending
            });
            tokio::select! {
                _ = changed => {}
                _ = pulse => {}
                _ = tokio::time::sleep_until(deadline) => {}
            }
        }
    }

    /// One pass over the partitions: each read from its next fetch offset, then — when the
    /// reads hold at least `min_bytes`, something failed, or `last` (the max wait passed) —
    /// acquired. None when the pass should wait for more data (nothing was acquired).
    /// `in_session`: the fetch came in a share session, which must still be open for it to
    /// acquire.
    async fn fetch_once(
        &self,
        params: &ShareFetchParams,
        settings: &GroupShareSettings,
        partitions: &[ShareFetchPartition],
        pulses: &mut Vec<Pin<Box<tokio::sync::futures::OwnedNotified>>>,
        last: bool,
        in_session: bool,
    ) -> Option<Vec<(TopicIdPartition, ShareFetchPartitionData)>> {
        let mut answers: Vec<(TopicIdPartition, ShareFetchPartitionData)> =
            Vec::with_capacity(partitions.len());
        let mut reads = Vec::new();
        let mut remaining_bytes = params.max_bytes.max(0) as usize;
        let origin = if settings.read_committed {
            FetchOrigin::ConsumerReadCommitted
        } else {
            FetchOrigin::Consumer
        };
        for p in partitions {
            let entry = match self
                .share_partition(&params.group_id, &p.tp, settings)
                .await
            {
                Ok(e) => e,
                Err((error, leader)) => {
                    answers.push((p.tp.clone(), ShareFetchPartitionData::error(error, leader)));
                    continue;
                }
            };
            let Some(hosted) = self
                .replica_manager
                .partition(p.tp.topic_id, p.tp.partition)
            else {
                answers.push((
                    p.tp.clone(),
                    ShareFetchPartitionData::error(ErrorCode::UnknownTopicOrPartition, None),
                ));
                continue;
            };
            // Enabled before the read, so an append right after it still wakes the wait.
            let mut pulse = Box::pin(Arc::clone(&hosted.changed).notified_owned());
            pulse.as_mut().enable();
            pulses.push(pulse);
            let (fetch_offset, leader_epoch) = {
                let mut sp = entry.lock();
                let log_start = hosted.lock().log_start_offset();
                sp.update_log_start_offset(log_start);
                // A member waiting for room counts in the sharing of the in-flight window.
                sp.note_fetch(&params.member_id, &settings.partition, unix_ms());
                if !sp.can_acquire_records(&settings.partition) {
                    answers.push((
                        p.tp.clone(),
                        ShareFetchPartitionData::error(ErrorCode::None, None),
                    ));
                    continue;
                }
                (sp.next_fetch_offset(), sp.leader_epoch())
            };
            let result = crate::share::local_read::read_local(
                &self.replica_manager,
                origin,
                &p.tp,
                fetch_offset,
                leader_epoch,
                p.partition_max_bytes,
                remaining_bytes,
            )
            .await;
            let Some(result) = result else {
                answers.push((
                    p.tp.clone(),
                    ShareFetchPartitionData::error(ErrorCode::UnknownServerError, None),
                ));
                continue;
            };
            if result.error != ErrorCode::None {
                if matches!(
                    result.error,
                    ErrorCode::NotLeaderOrFollower | ErrorCode::FencedLeaderEpoch
                ) {
                    self.drop_partition(&params.group_id, &p.tp);
                }
                // Kafka moves the share partition to the log start and answers no error.
                if result.error == ErrorCode::OffsetOutOfRange {
                    entry
                        .lock()
                        .update_log_start_offset(hosted.lock().log_start_offset());
                    answers.push((
                        p.tp.clone(),
                        ShareFetchPartitionData::error(ErrorCode::None, None),
                    ));
                    continue;
                }
                answers.push((
                    p.tp.clone(),
                    ShareFetchPartitionData::error(result.error, result.current_leader),
                ));
                continue;
            }
            remaining_bytes = remaining_bytes.saturating_sub(result.records.len());
            reads.push((p.tp.clone(), entry, fetch_offset, result));
        }
        // Kafka's DelayedShareFetch completes once the data read reaches min bytes; an
        // error is news at once.
        let read_bytes: usize = reads.iter().map(|(_, _, _, r)| r.records.len()).sum();
        let errors = answers.iter().any(|(_, d)| d.error != ErrorCode::None);
        if !last && !errors && read_bytes < params.min_bytes.max(1) as usize {
            return None;
        }
        let mut remaining_records = params.max_records;
        for (tp, entry, fetch_offset, result) in reads {
            let acquired = if remaining_records > 0 {
                let mut sp = entry.lock();
                // A member whose session ended while this fetch waited (its connection
                // closed: Kafka drops the answer) acquires nothing. The session ends before
                // its records are released, and the release takes this lock after us, so
                // whatever is acquired here goes back with it.
                if in_session && !self.has_session(&params.group_id, &params.member_id) {
                    answers.push((tp, ShareFetchPartitionData::error(ErrorCode::None, None)));
                    continue;
                }
                let batches = fetched_batches(&result.records);
                let mut acquired = sp.acquire(
                    &params.member_id,
                    &settings.partition,
                    params.acquire_mode,
                    remaining_records,
                    fetch_offset,
                    &batches,
                    result.aborted_transactions.as_deref(),
                    unix_ms(),
                );
                if params.acquire_mode == ShareAcquireMode::BatchOptimized {
                    acquired.acquired_records =
                        split_by_batch_size(acquired.acquired_records, &batches, params.batch_size);
                }
                acquired
            } else {
                ShareAcquiredRecords::default()
            };
            if acquired.acquired_records.is_empty() {
                answers.push((tp, ShareFetchPartitionData::error(ErrorCode::None, None)));
                continue;
            }
            remaining_records -= acquired.count as i32;
            let records = slice_records(&result.records, &acquired.acquired_records);
            // The expiry timer re-plans for the new locks.
            self.locks.notify_waiters();
            answers.push((
                tp,
                ShareFetchPartitionData {
                    error: ErrorCode::None,
                    records,
                    acquired_records: acquired.acquired_records,
                    current_leader: None,
                },
            ));
        }
        // In the request's order.
        answers.sort_by_key(|(tp, _)| {
            partitions
                .iter()
                .position(|p| p.tp == *tp)
                .unwrap_or(usize::MAX)
        });
        Some(answers)
    }
}

/// The batch summaries acquisition needs, from a read's bytes. A batch that does not parse
/// ends the list: what follows it is not delivered now and is read again later.
fn fetched_batches(records: &Bytes) -> Vec<FetchedBatch> {
    let mut out = Vec::new();
    for batch in Batches::new(records.clone()) {
        let Ok(b) = batch else {
            break;
        };
        let is_abort_marker = b.is_control()
            && b.records()
                .ok()
                .and_then(|mut r| r.next())
                .is_some_and(|r| {
                    r.ok()
                        .and_then(|r| r.key)
                        .and_then(|k| ControlRecordType::decode_key(&k).ok())
                        == Some(ControlRecordType::Abort)
                });
        out.push(FetchedBatch {
            base_offset: b.base_offset(),
            last_offset: b.last_offset(),
            producer_id: b.producer_id(),
            is_transactional: b.is_transactional(),
            is_abort_marker,
        });
    }
    out
}

/// The batches of a read that overlap the acquired records (Kafka's
/// `maybeSliceFetchRecords`): from the batch holding the first acquired offset to the one
/// holding the last.
fn slice_records(records: &Bytes, acquired: &[AcquiredRecords]) -> Bytes {
    let (Some(first), Some(last)) = (acquired.first(), acquired.last()) else {
        return Bytes::new();
    };
    let (first, last) = (first.first_offset, last.last_offset);
    let mut start: Option<usize> = None;
    let mut end = 0;
    let mut position = 0;
    for batch in Batches::new(records.clone()) {
        let Ok(b) = batch else {
            break;
        };
        let size = b.size_in_bytes();
        if b.last_offset() >= first && b.base_offset() <= last {
            start.get_or_insert(position);
            end = position + size;
        }
        position += size;
    }
    match start {
        Some(s) => records.slice(s..end),
        None => Bytes::new(),
    }
}
