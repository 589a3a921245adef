//! Fetch reads (consumers and followers) and the fetch purgatory: reads planned under the
//! partition's lock and executed outside it; with too little data, a wait for an append or
//! HW move.

use std::collections::HashSet;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use kraftd_log::clock::unix_ms;
use kraftd_log::LogError;
use kraftd_protocol::{ErrorCode, Uuid};
use tokio::time::Instant;
use tracing::warn;

use super::ReplicaManager;
use crate::replica::fetch_session::{PartitionFetchParams, SessionWatch};
use crate::replica::partition::{
    FetchIsolation, HostedPartition, PartitionError, ReadParams, Role,
};
use crate::replica::TopicIdPartition;

/// Who is fetching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchOrigin {
    /// A consumer reading uncommitted (up to the HW).
    Consumer,
    /// A consumer with isolation level read_committed: up to the last stable offset, with
    /// the aborted transactions of the range.
    ConsumerReadCommitted,
    /// A follower replica with the broker epoch its request carried (KIP-903).
    Follower { replica_id: i32, broker_epoch: i64 },
}

/// A fetch request's limits.
#[derive(Debug, Clone, Copy)]
pub struct FetchLimits {
    pub max_wait: Duration,
    pub min_bytes: usize,
    pub max_bytes: usize,
}

/// One partition's read outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResult {
    pub error: ErrorCode,
    pub high_watermark: i64,
    /// The last stable offset (the HW when no transaction is open).
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub diverging_epoch: Option<(i32, i64)>,
    pub records: Bytes,
    /// For read_committed: (producer id, first offset) of the aborted transactions
    /// overlapping the records returned (Kafka's `FetchDataInfo.abortedTransactions`).
    pub aborted_transactions: Option<Vec<(i64, i64)>>,
    /// The leader as this broker knows it, for NOT_LEADER_OR_FOLLOWER / FENCED answers.
    pub current_leader: Option<(i32, i32)>,
    /// Answered without records because the leader's replication quota is exceeded: no
    /// news for the follower, so it does not end the fetch's wait.
    pub throttled: bool,
}

impl FetchResult {
    /// A partition's answer that is only an error (offsets unknown, no records).
    pub fn error(error: ErrorCode) -> Self {
        FetchResult {
            error,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            log_end_offset: -1,
            diverging_epoch: None,
            records: Bytes::new(),
            aborted_transactions: None,
            current_leader: None,
            throttled: false,
        }
    }
}

/// A fetch session's watch and how to read the partitions it reports changed (with their
/// fetch positions), for [`ReplicaManager::fetch_messages_in_session`].
pub type SessionNews<'a> = (
    &'a Arc<SessionWatch>,
    &'a mut (dyn FnMut() -> Vec<(TopicIdPartition, PartitionFetchParams)> + Send),
);

impl ReplicaManager {
    /// Reads every partition once; if that gives fewer than `min_bytes` and nothing to
    /// report at once (errors, divergence), waits for appends or HW moves on the
    /// partitions read, up to `max_wait`, and reads again.
    pub async fn fetch_messages(
        &self,
        origin: FetchOrigin,
        limits: FetchLimits,
        partitions: &[(TopicIdPartition, PartitionFetchParams)],
    ) -> Vec<(TopicIdPartition, FetchResult)> {
        self.fetch_messages_in_session(origin, limits, partitions.to_vec(), None)
            .await
    }

    /// [`ReplicaManager::fetch_messages`] for a fetch session: every partition read
    /// registers with the session's watch; a wait also wakes on the watch, and then reads
    /// the partitions `news` reports changed as well (an incremental request reads only the
    /// partitions with news, so one that gets data while it waits joins it). Partitions
    /// whose answer is an error or left data unread (replication throttle, the response's
    /// byte budget) are marked in the watch without waking it, so the session's next
    /// request reads them again.
    pub async fn fetch_messages_in_session(
        &self,
        origin: FetchOrigin,
        limits: FetchLimits,
        mut partitions: Vec<(TopicIdPartition, PartitionFetchParams)>,
        session: Option<SessionNews<'_>>,
    ) -> Vec<(TopicIdPartition, FetchResult)> {
        let deadline = Instant::now() + limits.max_wait;
        let (watch, mut news) = match session {
            Some((w, n)) => (Some(w), Some(n)),
            None => (None, None),
        };
        let mut hosted: Vec<Option<Arc<HostedPartition>>> = partitions
            .iter()
            .map(|(tp, _)| self.partition(tp.topic_id, tp.partition))
            .collect();
        let mut seen: HashSet<(Uuid, i32)> = partitions
            .iter()
            .map(|(tp, _)| (tp.topic_id, tp.partition))
            .collect();
        loop {
            // With a session, its watch wakes the wait (every partition read registers
            // with it); without, each partition's own signal does.
            let mut notified: Vec<Pin<Box<tokio::sync::futures::OwnedNotified>>> = match watch {
                Some(_) => Vec::new(),
                None => hosted
                    .iter()
                    .flatten()
                    .map(|h| Box::pin(Arc::clone(&h.changed).notified_owned()))
                    .collect(),
            };
            for n in &mut notified {
                n.as_mut().enable();
            }
            if let Some(w) = watch {
                for h in hosted.iter().flatten() {
                    h.changed.watch(w);
                }
            }
            let results = self.read_all(origin, limits.max_bytes, &partitions, &hosted);
            let bytes: usize = results.iter().map(|(_, r)| r.records.len()).sum();
            // Errors and divergence are news at once; so is a HW above the one a follower
            // says it knows (KIP-1166), or its HW would lag until the next append; but not
            // on a partition throttled for it, which would then be asked again at once, and
            // again, for nothing.
            let urgent = results
                .iter()
                .zip(&partitions)
                .any(|((_, r), (_, params))| {
                    r.error != ErrorCode::None
                        || r.diverging_epoch.is_some()
                        || (matches!(origin, FetchOrigin::Follower { .. })
                            && !r.throttled
                            && r.high_watermark > params.high_watermark)
                });
            let waitable = watch.is_some() || !notified.is_empty();
            if bytes >= limits.min_bytes || urgent || Instant::now() >= deadline || !waitable {
                return self.finish(origin, results, &partitions, watch);
            }
            // Parked until data arrives or max wait passes: Kafka's RemoteTimeMs. What it
            // read took effect (a follower's fetch position, the session): the connection's
            // next request may be read meanwhile.
            kraftd_net::mark_local_complete();
            kraftd_net::mark_sequenced();
            let woke = match watch {
                Some(w) => tokio::time::timeout_at(deadline, w.notified()).await,
                None => {
                    tokio::time::timeout_at(
                        deadline,
                        poll_fn(|cx| {
                            for n in notified.iter_mut() {
                                if std::future::Future::poll(n.as_mut(), cx).is_ready() {
                                    return Poll::Ready(());
                                }
                            }
                            Poll::Pending
                        }),
                    )
                    .await
                }
            };
            if let Some(news) = news.as_mut() {
                for (tp, params) in news() {
                    if seen.insert((tp.topic_id, tp.partition)) {
                        hosted.push(self.partition(tp.topic_id, tp.partition));
                        partitions.push((tp, params));
                    }
                }
            }
            if woke.is_err() {
                let results = self.read_all(origin, limits.max_bytes, &partitions, &hosted);
                return self.finish(origin, results, &partitions, watch);
            }
        }
    }

    /// Counts what is answered and, in a session, marks the partitions to read again.
    fn finish(
        &self,
        origin: FetchOrigin,
        results: Vec<(TopicIdPartition, FetchResult)>,
        partitions: &[(TopicIdPartition, PartitionFetchParams)],
        watch: Option<&Arc<SessionWatch>>,
    ) -> Vec<(TopicIdPartition, FetchResult)> {
        if let Some(w) = watch {
            for ((tp, r), (_, params)) in results.iter().zip(partitions) {
                let available = match origin {
                    FetchOrigin::Follower { .. } => r.log_end_offset,
                    FetchOrigin::Consumer => r.high_watermark,
                    FetchOrigin::ConsumerReadCommitted => r.last_stable_offset,
                };
                let unread = r.records.is_empty() && available > params.fetch_offset;
                if r.error != ErrorCode::None || unread {
                    w.mark_quiet(tp);
                }
            }
        }
        self.count_fetched(origin, results)
    }

    /// Counts the bytes answered: a consumer's as BytesOut, a follower's as ReplicationBytesOut
    /// and, for its throttled partitions, against the leader's replication quota (Kafka's
    /// `sizeOfThrottledPartitions`, in-sync followers' included).
    fn count_fetched(
        &self,
        origin: FetchOrigin,
        results: Vec<(TopicIdPartition, FetchResult)>,
    ) -> Vec<(TopicIdPartition, FetchResult)> {
        let bytes: usize = results.iter().map(|(_, r)| r.records.len()).sum();
        let m = &self.metrics;
        if matches!(origin, FetchOrigin::Follower { .. }) {
            let quotas = &self.replication_quotas;
            quotas
                .replication_bytes_out
                .fetch_add(bytes as u64, Ordering::Relaxed);
            if bytes > 0 {
                quotas.leader.record_throttled(
                    results
                        .iter()
                        .map(|(tp, r)| (tp.topic.as_str(), tp.partition, r.records.len())),
                    unix_ms().max(0) as u64,
                );
            }
        } else {
            m.bytes_out.fetch_add(bytes as u64, Ordering::Relaxed);
        }
        if results.iter().any(|(_, r)| r.error != ErrorCode::None) {
            m.failed_fetch_requests.fetch_add(1, Ordering::Relaxed);
        }
        results
    }

    fn read_all(
        &self,
        origin: FetchOrigin,
        max_bytes: usize,
        partitions: &[(TopicIdPartition, PartitionFetchParams)],
        hosted: &[Option<Arc<HostedPartition>>],
    ) -> Vec<(TopicIdPartition, FetchResult)> {
        let now = unix_ms();
        let mut budget = max_bytes;
        let mut first = true;
        let image = self.cache.image();
        let eligible = |broker: i32, epoch: i64| Self::isr_eligible(&image, broker, epoch);
        let mut out = Vec::with_capacity(partitions.len());
        for ((tp, params), hosted) in partitions.iter().zip(hosted) {
            let Some(hosted) = hosted else {
                let code = self.missing_partition_error(tp.topic_id, tp.partition);
                let mut r = FetchResult::error(code);
                r.current_leader = self.current_leader(tp);
                out.push((tp.clone(), r));
                continue;
            };
            // Kafka returns at least one batch (the first partition's first) even past
            // the limits, so a batch larger than max.bytes can always be consumed.
            let limit = if first {
                (params.max_bytes.max(0) as usize).min(budget.max(1))
            } else {
                (params.max_bytes.max(0) as usize).min(budget)
            };
            let result = self.read_partition(origin, hosted, params, limit, now, &eligible);
            if !result.records.is_empty() {
                first = false;
                budget = budget.saturating_sub(result.records.len());
            }
            out.push((tp.clone(), result));
        }
        out
    }

    fn read_partition(
        &self,
        origin: FetchOrigin,
        hosted: &Arc<HostedPartition>,
        params: &PartitionFetchParams,
        limit: usize,
        now: i64,
        eligible: &dyn Fn(i32, i64) -> bool,
    ) -> FetchResult {
        let read_params = ReadParams {
            fetch_offset: params.fetch_offset,
            max_bytes: limit,
            current_leader_epoch: params.current_leader_epoch,
            last_fetched_epoch: params.last_fetched_epoch,
            isolation: match origin {
                FetchOrigin::Consumer => FetchIsolation::HighWatermark,
                FetchOrigin::ConsumerReadCommitted => FetchIsolation::TxnCommitted,
                FetchOrigin::Follower { .. } => FetchIsolation::LogEnd,
            },
        };
        for _attempt in 0..3 {
            let planned = {
                let mut p = hosted.lock();
                let planned = p.read(&read_params);
                let in_sync = match origin {
                    FetchOrigin::Follower { replica_id, .. } => p.isr().contains(&replica_id),
                    _ => true,
                };
                if let (
                    Ok(info),
                    FetchOrigin::Follower {
                        replica_id,
                        broker_epoch,
                    },
                ) = (&planned, origin)
                {
                    if info.diverging_epoch.is_none() {
                        match p.update_follower_fetch_state(
                            replica_id,
                            broker_epoch,
                            params.fetch_offset,
                            params.log_start_offset,
                            now,
                            &eligible,
                        ) {
                            Ok(update) => {
                                if update.high_watermark_changed || update.log_start_changed {
                                    hosted.changed.notify_waiters();
                                }
                                if let Some(change) = update.isr_change {
                                    self.metrics.isr_expands.fetch_add(1, Ordering::Relaxed);
                                    self.submit_isr_change(hosted, change);
                                }
                            }
                            Err(e) => {
                                let mut r = FetchResult::error(e.error_code());
                                r.current_leader = Some((p.leader_id(), p.leader_epoch()));
                                return r;
                            }
                        }
                    }
                }
                (planned, p.leader_epoch(), p.role(), in_sync)
            };
            let (planned, leader_epoch, role, in_sync) = planned;
            let info = match planned {
                Ok(info) => info,
                Err(e) => {
                    let mut r = FetchResult::error(e.error_code());
                    if let PartitionError::OffsetOutOfRange {
                        log_start_offset,
                        log_end_offset,
                        ..
                    } = e
                    {
                        r.log_start_offset = log_start_offset;
                        r.log_end_offset = log_end_offset;
                    }
                    r.current_leader = match role {
                        Role::Leader => Some((self.config.broker_id, leader_epoch)),
                        Role::Follower { leader } => Some((leader, leader_epoch)),
                        Role::None => self.current_leader(&hosted.tp),
                    };
                    return r;
                }
            };
            let mut result = FetchResult {
                error: ErrorCode::None,
                high_watermark: info.high_watermark,
                last_stable_offset: info.last_stable_offset,
                log_start_offset: info.log_start_offset,
                log_end_offset: info.log_end_offset,
                diverging_epoch: info.diverging_epoch,
                records: Bytes::new(),
                current_leader: None,
                aborted_transactions: None,
                throttled: false,
            };
            // Kafka's shouldLeaderThrottle: a follower out of the ISR gets a throttled
            // partition's offsets but no records while the leader is over its quota.
            if !in_sync
                && self.replication_quotas.leader.should_throttle(
                    &hosted.tp.topic,
                    hosted.tp.partition,
                    now.max(0) as u64,
                )
            {
                result.throttled = true;
                return result;
            }
            let read_committed = origin == FetchOrigin::ConsumerReadCommitted;
            match info.read.map(|r| r.execute()) {
                None => return result,
                Some(Ok(read)) => {
                    if read_committed {
                        // Kafka's addAbortedTransactions: the aborted transactions
                        // overlapping [fetch offset, the offset after the records read).
                        let upper = if read.bytes.is_empty() {
                            params.fetch_offset
                        } else {
                            read.next_offset
                        };
                        let aborted = hosted
                            .lock()
                            .log()
                            .collect_aborted_transactions(params.fetch_offset, upper);
                        result.aborted_transactions = Some(
                            aborted
                                .into_iter()
                                .map(|t| (t.producer_id, t.first_offset))
                                .collect(),
                        );
                    }
                    result.records = read.bytes;
                    return result;
                }
                Some(Err(LogError::ConcurrentTruncation { .. })) => continue,
                Some(Err(e)) => {
                    warn!(topic = %hosted.tp.topic, partition = hosted.tp.partition, error = %e, "read failed");
                    return FetchResult::error(ErrorCode::KafkaStorageError);
                }
            }
        }
        FetchResult::error(ErrorCode::NotLeaderOrFollower)
    }
}
