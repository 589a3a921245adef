//! `SharePartitionManager` (Kafka's `kafka.server.share.SharePartitionManager`, with the
//! parts of `DelayedShareFetch`, `ShareFetchUtils` and `SharePartitionCache` it needs): the
//! tokio edge of the share partitions this broker leads. It keeps one [`SharePartition`] per
//! (group, topic partition), loads it through the [`Persister`], reads the local log through
//! the `ReplicaManager` (up to the HW, or the LSO with the aborted transactions for
//! read_committed), acquires what the read returned, persists acknowledgements before it
//! answers, expires acquisition locks on a timer, and holds the share sessions.
//!
//! Dead-letter queues (KIP-1191): records a write left in ARCHIVING go to the
//! [`ShareGroupDlqManager`] once that write is persisted (or once a load finds them), then are
//! archived and persisted again ([`SharePartitionManager::maybe_dlq`]).
//!
//! Leadership: a share partition belongs to one leader epoch. Each use checks the hosted
//! partition; a partition this broker no longer leads, or leads at another epoch, is fenced
//! and dropped, and the next use loads its state afresh from the share coordinator (what
//! Kafka's listeners on the ReplicaManager do).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use kraftd_controller::image::{ConfigResource, ConfigResourceType};
use kraftd_log::clock::unix_ms;
use kraftd_protocol::messages::read_share_group_state_response::PartitionResult;
use kraftd_protocol::messages::share_fetch_response::AcquiredRecords;
use kraftd_protocol::ErrorCode;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::dlq::{ShareGroupDlqManager, ShareGroupDlqRecordParameter};
use super::metrics::{ShareGroupMetrics, SharePartitionValues, ShareRequest};
use super::persister::Persister;
pub use super::share_group_config::ShareGroupConfig;
use super::share_partition::{
    AcknowledgeType, AcknowledgementBatch, DlqBatch, ShareAcquireMode, SharePartition,
    SharePartitionConfig, SharePartitionState, StateWrite,
};
use super::share_session_cache::ShareSessionCache;
use crate::metadata::MetadataCache;
use crate::replica::replica_manager::ReplicaManager;
use crate::replica::TopicIdPartition;

/// `share.auto.offset.reset` (Kafka's `ShareGroupAutoOffsetResetStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoOffsetReset {
    Earliest,
    Latest,
    /// `by_duration:<ISO-8601 duration>`: the first offset at or after now minus it.
    ByDuration(Duration),
}

impl AutoOffsetReset {
    /// Parses Kafka's values (case-insensitive, as its validator accepts them).
    pub fn parse(value: &str) -> Option<AutoOffsetReset> {
        let v = value.trim();
        if v.eq_ignore_ascii_case("earliest") {
            return Some(AutoOffsetReset::Earliest);
        }
        if v.eq_ignore_ascii_case("latest") {
            return Some(AutoOffsetReset::Latest);
        }
        let (prefix, duration) = v.split_at_checked("by_duration:".len())?;
        if !prefix.eq_ignore_ascii_case("by_duration:") {
            return None;
        }
        parse_iso8601_duration(duration).map(AutoOffsetReset::ByDuration)
    }
}

/// What the share partitions of one group read, resolved from the group's dynamic configs
/// over the broker defaults (Kafka's `ShareGroupConfigProvider`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupShareSettings {
    pub partition: SharePartitionConfig,
    pub read_committed: bool,
    pub auto_offset_reset: AutoOffsetReset,
}

/// One partition of a share fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareFetchPartition {
    pub tp: TopicIdPartition,
    pub partition_max_bytes: i32,
}

/// A share fetch's parameters (Kafka's `ShareFetch` / `FetchParams`).
#[derive(Debug, Clone)]
pub struct ShareFetchParams {
    pub group_id: String,
    pub member_id: String,
    pub max_wait: Duration,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub max_records: i32,
    /// The records per acquired range the client asked for (ShareFetch `BatchSize`).
    pub batch_size: i32,
    pub acquire_mode: ShareAcquireMode,
}

/// One partition's answer to a share fetch.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareFetchPartitionData {
    pub error: ErrorCode,
    /// The batches covering the acquired records (empty without any).
    pub records: Bytes,
    pub acquired_records: Vec<AcquiredRecords>,
    /// (leader id, leader epoch) as this broker knows them, for leadership errors.
    pub current_leader: Option<(i32, i32)>,
}

impl ShareFetchPartitionData {
    fn error(error: ErrorCode, current_leader: Option<(i32, i32)>) -> Self {
        ShareFetchPartitionData {
            error,
            records: Bytes::new(),
            acquired_records: Vec::new(),
            current_leader,
        }
    }
}

/// The share partitions of this broker (see the module docs).
pub struct SharePartitionManager {
    replica_manager: Arc<ReplicaManager>,
    persister: Arc<dyn Persister>,
    metadata: Option<MetadataCache>,
    config: ShareGroupConfig,
    partitions: Mutex<HashMap<(String, TopicIdPartition), Arc<SharePartitionEntry>>>,
    sessions: Mutex<ShareSessionCache>,
    /// Pulsed when records become acquirable again (released, expired, or room made under
    /// the in-flight limit): waiting fetches try again.
    changed: Notify,
    /// Pulsed when acquisition locks are taken or renewed: the expiry timer re-plans. Apart
    /// from `changed`, so that one member's acquisition does not wake every waiting fetch.
    locks: Notify,
    /// The dead-letter queue writer; without one, records bound for a DLQ are archived
    /// (Kafka's `NoOpShareGroupDLQManager`).
    dlq: OnceLock<Arc<ShareGroupDlqManager>>,
    /// Kafka's `ShareGroupMetrics` and the share meters of `BrokerTopicMetrics`.
    metrics: Arc<ShareGroupMetrics>,
    /// This manager, for the DLQ tasks it spawns.
    weak_self: Weak<SharePartitionManager>,
}

impl std::fmt::Debug for SharePartitionManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharePartitionManager")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A share partition and the lock its one loader holds while ReadShareGroupState runs.
#[derive(Debug)]
struct SharePartitionEntry {
    partition: Mutex<SharePartition>,
    load: tokio::sync::Mutex<()>,
}

impl SharePartitionEntry {
    fn lock(&self) -> MutexGuard<'_, SharePartition> {
        self.partition.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl SharePartitionManager {
    /// `metadata` gives the groups' dynamic configs (GROUP config resources); without it the
    /// broker defaults apply.
    pub fn new(
        replica_manager: Arc<ReplicaManager>,
        persister: Arc<dyn Persister>,
        metadata: Option<MetadataCache>,
        config: ShareGroupConfig,
    ) -> Arc<SharePartitionManager> {
        Arc::new_cyclic(|weak_self| SharePartitionManager {
            replica_manager,
            persister,
            metadata,
            sessions: Mutex::new(ShareSessionCache::new(
                config.max_share_sessions.max(1) as usize
            )),
            config,
            partitions: Mutex::new(HashMap::new()),
            changed: Notify::new(),
            locks: Notify::new(),
            dlq: OnceLock::new(),
            metrics: Arc::new(ShareGroupMetrics::default()),
            weak_self: weak_self.clone(),
        })
    }

    /// The share-group metrics (the DLQ writer records its own in them).
    pub fn metrics(&self) -> &Arc<ShareGroupMetrics> {
        &self.metrics
    }

    /// Prometheus text of the share-group metrics and of every share partition held here.
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        let entries: Vec<_> = {
            let map = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
            map.iter()
                .map(|((g, tp), e)| (g.clone(), tp.clone(), Arc::clone(e)))
                .collect()
        };
        let mut partitions: Vec<SharePartitionValues> = entries
            .into_iter()
            .map(|(group, tp, entry)| {
                let sp = entry.lock();
                SharePartitionValues {
                    group,
                    topic: tp.topic,
                    partition: tp.partition,
                    in_flight_messages: sp.in_flight_records() as u64,
                    acquisition_lock_timeouts: sp.acquisition_lock_timeouts(),
                }
            })
            .collect();
        partitions.sort_by(|a, b| {
            (&a.group, &a.topic, a.partition).cmp(&(&b.group, &b.topic, b.partition))
        });
        let now = unix_ms().max(0) as u64;
        self.metrics
            .write_prometheus(node_id, now, &partitions, out);
    }

    /// Sets the dead-letter queue writer (once; `BrokerServer` does at start).
    pub fn set_dlq_manager(&self, dlq: Arc<ShareGroupDlqManager>) {
        let _ = self.dlq.set(dlq);
    }

    /// A manager with its acquisition lock timer running: what `BrokerServer` builds once it
    /// has the share coordinator's persister.
    pub fn start(
        replica_manager: Arc<ReplicaManager>,
        persister: Arc<dyn Persister>,
        metadata: Option<MetadataCache>,
        config: ShareGroupConfig,
    ) -> Arc<SharePartitionManager> {
        let manager = SharePartitionManager::new(replica_manager, persister, metadata, config);
        // The task holds the manager weakly between rounds and ends with it.
        drop(manager.start_lock_timer());
        manager
    }

    /// Starts the acquisition lock timer: it sleeps until the earliest lock expiry (or a new
    /// acquisition), then expires what is due and persists it. It holds the manager only
    /// while it works or sleeps (at most a second), so it ends soon after the manager.
    pub fn start_lock_timer(self: &Arc<Self>) -> JoinHandle<()> {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let Some(manager) = weak.upgrade() else {
                    return;
                };
                let changed = manager.locks.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                let next = manager.expire_locks().await;
                // Sleep at most a second so that a dropped manager ends the task.
                let now = unix_ms();
                let wait_ms = next.map_or(1_000, |at| (at - now).clamp(0, 1_000)) as u64;
                tokio::select! {
                    _ = changed => {}
                    _ = tokio::time::sleep(Duration::from_millis(wait_ms)) => {}
                }
            }
        })
    }

    /// The share sessions.
    pub fn sessions(&self) -> MutexGuard<'_, ShareSessionCache> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The settings of `group_id`'s share partitions.
    pub fn group_settings(&self, group_id: &str) -> GroupShareSettings {
        let image = self.metadata.as_ref().map(MetadataCache::image);
        let resource = ConfigResource::new(ConfigResourceType::Group, group_id);
        let value = |key: &str| -> Option<String> {
            image
                .as_ref()
                .and_then(|i| i.configs.value(&resource, key).map(str::to_owned))
        };
        let int = |key: &str, default: i32| -> i32 {
            value(key)
                .and_then(|v| v.trim().parse::<i32>().ok())
                .unwrap_or(default)
        };
        GroupShareSettings {
            partition: SharePartitionConfig {
                max_in_flight_records: int(
                    "share.partition.max.record.locks",
                    self.config.partition_max_record_locks,
                )
                .max(1) as usize,
                max_delivery_count: int(
                    "share.delivery.count.limit",
                    self.config.delivery_count_limit,
                )
                .clamp(1, i16::MAX as i32) as i16,
                record_lock_duration_ms: int(
                    "share.record.lock.duration.ms",
                    self.config.record_lock_duration_ms,
                ) as i64,
                renew_acknowledge_enabled: value("share.renew.acknowledge.enable")
                    .is_none_or(|v| !v.trim().eq_ignore_ascii_case("false")),
                // Kafka's isDLQEnabledForGroup: share.version >= 2 and a DLQ topic named.
                dlq_enabled: image.as_ref().is_some_and(|i| {
                    i.features
                        .level(kraftd_coordinator::share::SHARE_VERSION_FEATURE)
                        >= 2
                }) && value(super::dlq::ERRORS_DEADLETTERQUEUE_TOPIC_NAME)
                    .is_some_and(|v| !v.trim().is_empty()),
            },
            read_committed: value("share.isolation.level")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("read_committed")),
            auto_offset_reset: value("share.auto.offset.reset")
                .and_then(|v| AutoOffsetReset::parse(&v))
                .unwrap_or(AutoOffsetReset::Latest),
        }
    }

    /// Applies a member's acknowledgements (Kafka's `acknowledge`): each partition's are
    /// persisted before its answer, which is its error code.
    pub async fn acknowledge(
        &self,
        group_id: &str,
        member_id: &str,
        acknowledgements: Vec<(TopicIdPartition, Vec<AcknowledgementBatch>)>,
    ) -> Vec<(TopicIdPartition, ErrorCode)> {
        let settings = self.group_settings(group_id);
        let now = unix_ms();
        let mut writes = Vec::new();
        let mut answers = Vec::new();
        let topics: Vec<String> = acknowledgements
            .iter()
            .map(|(tp, _)| tp.topic.clone())
            .collect();
        for (tp, batches) in acknowledgements {
            // Only the leader at the share partition's epoch may change it.
            if let Err(e) = self.check_leader(group_id, &tp) {
                answers.push((tp, e));
                continue;
            }
            let Some(entry) = self.existing(group_id, &tp) else {
                answers.push((tp, ErrorCode::UnknownTopicOrPartition));
                continue;
            };
            let result = entry
                .lock()
                .acknowledge(member_id, &settings.partition, &batches, now);
            match result {
                Err(e) => answers.push((tp, e)),
                Ok(None) => {
                    self.record_acknowledgements(&batches);
                    answers.push((tp, ErrorCode::None));
                }
                Ok(Some(w)) => writes.push((tp, entry, batches, self.spawn_write(w))),
            }
        }
        for (tp, entry, batches, (write_id, handle)) in writes {
            let result = handle.await.unwrap_or(Err(ErrorCode::UnknownServerError));
            if result.is_ok() {
                self.record_acknowledgements(&batches);
            }
            // Accepted records move the SPSO and so make room under the in-flight limit;
            // released ones are acquirable again: either way waiting fetches try again.
            entry.lock().complete_write(write_id, result);
            if result.is_ok() {
                self.changed.notify_waiters();
                // Renewed locks expire later.
                self.locks.notify_waiters();
                self.maybe_dlq(group_id, &tp, &entry);
            }
            if let Err(e) = result {
                self.on_persister_error(group_id, &tp, e);
            }
            answers.push((tp, result.err().unwrap_or(ErrorCode::None)));
        }
        let failed = answers
            .iter()
            .filter(|(_, e)| *e != ErrorCode::None)
            .map(|(tp, _)| tp.topic.as_str());
        self.metrics.record_request(
            ShareRequest::Acknowledge,
            topics.iter().map(String::as_str),
            failed,
        );
        answers
    }

    /// Kafka's acknowledgement meter: a batch with one type counts all its offsets as that
    /// type, one with a type per offset counts each (gaps are not metered).
    fn record_acknowledgements(&self, batches: &[AcknowledgementBatch]) {
        for b in batches {
            if let [one] = b.acknowledge_types[..] {
                if let Some(t) = AcknowledgeType::from_id(one) {
                    let count = (b.last_offset - b.first_offset + 1).max(0) as u64;
                    self.metrics.record_acknowledgement(t, count);
                }
            } else {
                for t in b
                    .acknowledge_types
                    .iter()
                    .filter_map(|&id| AcknowledgeType::from_id(id))
                {
                    self.metrics.record_acknowledgement(t, 1);
                }
            }
        }
    }

    /// Ends a member's share session and releases the records it holds on the session's
    /// partitions (Kafka's `releaseSession`); SHARE_SESSION_NOT_FOUND without one.
    pub async fn release_session(&self, group_id: &str, member_id: &str) -> Result<(), ErrorCode> {
        let key = super::share_session_cache::ShareSessionKey {
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
        };
        let session = self
            .sessions()
            .remove(&key)
            .ok_or(ErrorCode::ShareSessionNotFound)?;
        let partitions: Vec<_> = session.partitions().collect();
        self.release_acquired_records(group_id, member_id, &partitions)
            .await;
        self.drop_group_if_empty(group_id);
        Ok(())
    }

    fn has_session(&self, group_id: &str, member_id: &str) -> bool {
        let key = super::share_session_cache::ShareSessionKey {
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
        };
        self.sessions().get(&key).is_some()
    }

    /// A client connection closed: the share session it opened ends and its member's
    /// records go back (Kafka's `ShareGroupListener.onMemberLeave` via the disconnect
    /// listener).
    pub async fn on_disconnect(&self, connection_id: &str) {
        let Some(session) = self.sessions().on_disconnect(connection_id) else {
            return;
        };
        let partitions: Vec<_> = session.partitions().collect();
        let group_id = &session.key.group_id;
        self.release_acquired_records(group_id, &session.key.member_id, &partitions)
            .await;
        self.drop_group_if_empty(group_id);
    }

    /// The group's last session on this broker ended (closed at epoch -1 or with its
    /// connection): its share partitions go (Kafka's `onGroupEmpty`), to be loaded afresh
    /// from the share coordinator when a member comes back — so offsets altered while the
    /// group was empty (AlterShareGroupOffsets, `kafka-share-groups --reset-offsets`) are
    /// what the next member reads from.
    fn drop_group_if_empty(&self, group_id: &str) {
        if self.sessions().has_group(group_id) {
            return;
        }
        let mut map = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|(g, _), entry| {
            let keep = g != group_id;
            if !keep {
                entry.lock().mark_fenced();
            }
            keep
        });
    }

    async fn release_acquired_records(
        &self,
        group_id: &str,
        member_id: &str,
        partitions: &[(kraftd_protocol::Uuid, i32)],
    ) {
        let settings = self.group_settings(group_id);
        let entries: Vec<_> = {
            let map = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
            map.iter()
                .filter(|((g, tp), _)| {
                    g == group_id && partitions.contains(&(tp.topic_id, tp.partition))
                })
                .map(|((_, tp), e)| (tp.clone(), Arc::clone(e)))
                .collect()
        };
        for (tp, entry) in entries {
            let write = entry
                .lock()
                .release_acquired_records(member_id, &settings.partition);
            if let Some(w) = write {
                let (write_id, handle) = self.spawn_write(w);
                let result = handle.await.unwrap_or(Err(ErrorCode::UnknownServerError));
                entry.lock().complete_write(write_id, result);
                match result {
                    Ok(()) => self.maybe_dlq(group_id, &tp, &entry),
                    Err(e) => self.on_persister_error(group_id, &tp, e),
                }
            }
        }
        self.changed.notify_waiters();
    }

    /// Expires the acquisition locks due now on every share partition and persists the
    /// changes; the answer is the next expiry to wake for.
    pub async fn expire_locks(&self) -> Option<i64> {
        let entries: Vec<_> = {
            let map = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
            map.iter()
                .map(|((g, tp), e)| (g.clone(), tp.clone(), Arc::clone(e)))
                .collect()
        };
        let now = unix_ms();
        let mut next: Option<i64> = None;
        let mut expired = false;
        for (group_id, tp, entry) in entries {
            // A partition led elsewhere now is dropped, not written for.
            if self.check_leader(&group_id, &tp).is_err() {
                continue;
            }
            let settings = self.group_settings(&group_id);
            let write = entry
                .lock()
                .expire_acquisition_locks(&settings.partition, now);
            if let Some(w) = write {
                expired = true;
                let (write_id, handle) = self.spawn_write(w);
                // Kafka does not roll an expiry back: the records are available already.
                let result = handle.await.unwrap_or(Err(ErrorCode::UnknownServerError));
                entry.lock().complete_write(write_id, result);
                match result {
                    Ok(()) => self.maybe_dlq(&group_id, &tp, &entry),
                    Err(e) => self.on_persister_error(&group_id, &tp, e),
                }
            }
            if let Some(at) = entry.lock().next_lock_expiry_ms() {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        if expired {
            self.changed.notify_waiters();
        }
        next
    }

    /// The state of a share partition, if this broker has it loaded (for tests and
    /// metrics): its SPSO and end offset.
    pub fn share_partition_offsets(
        &self,
        group_id: &str,
        tp: &TopicIdPartition,
    ) -> Option<(i64, i64)> {
        self.existing(group_id, tp).map(|e| {
            let sp = e.lock();
            (sp.start_offset(), sp.end_offset())
        })
    }

    /// Hands the share partition's persisted ARCHIVING records to the DLQ writer, each batch
    /// in a task that archives it once the writer is done — written or failed, as Kafka's
    /// `initiateDLQAndArchive` — and persists that.
    fn maybe_dlq(&self, group_id: &str, tp: &TopicIdPartition, entry: &Arc<SharePartitionEntry>) {
        let settings = self.group_settings(group_id);
        let batches = entry.lock().take_dlq_batches(&settings.partition);
        let Some(manager) = self.weak_self.upgrade() else {
            return;
        };
        for batch in batches {
            let param = ShareGroupDlqRecordParameter {
                group_id: group_id.to_owned(),
                tp: tp.clone(),
                first_offset: batch.first_offset,
                last_offset: batch.last_offset,
                delivery_count: Some(batch.delivery_count),
                cause: Some(batch.cause),
            };
            let entry = Arc::clone(entry);
            let manager = Arc::clone(&manager);
            tokio::spawn(async move { manager.dlq_and_archive(param, batch, entry).await });
        }
    }

    async fn dlq_and_archive(
        &self,
        param: ShareGroupDlqRecordParameter,
        batch: DlqBatch,
        entry: Arc<SharePartitionEntry>,
    ) {
        match self.dlq.get() {
            Some(dlq) => {
                if let Err(e) = dlq.enqueue(&param).await {
                    tracing::warn!(group = %param.group_id, topic = %param.tp.topic,
                        partition = param.tp.partition, first_offset = param.first_offset,
                        last_offset = param.last_offset, error = %e,
                        "Failed to write to DLQ, proceeding to ARCHIVED regardless.");
                }
            }
            None => tracing::warn!(?param, "No DLQ writer: archiving the records"),
        }
        let write = entry.lock().complete_dlq(&batch);
        if let Some(w) = write {
            let (write_id, handle) = self.spawn_write(w);
            let result = handle.await.unwrap_or(Err(ErrorCode::UnknownServerError));
            entry.lock().complete_write(write_id, result);
            if let Err(e) = result {
                self.on_persister_error(&param.group_id, &param.tp, e);
            }
        }
        // The SPSO may have moved: room under the in-flight limit for waiting fetches.
        self.changed.notify_waiters();
    }

    /// Sends a write to the persister and answers its outcome for this partition.
    fn spawn_write(&self, w: StateWrite) -> (u64, JoinHandle<Result<(), ErrorCode>>) {
        let write_id = w.write_id;
        let call = self.persister.write_state(w.request);
        let handle = tokio::spawn(async move {
            let answer = call.await;
            let code = answer
                .results
                .first()
                .and_then(|t| t.partitions.first())
                .map_or(ErrorCode::UnknownServerError.code(), |p| p.error_code);
            match ErrorCode::from_code(code) {
                Some(ErrorCode::None) => Ok(()),
                Some(e) => Err(persister_error(e)),
                None => Err(ErrorCode::UnknownServerError),
            }
        });
        (write_id, handle)
    }

    /// A share coordinator error that means the state moved on elsewhere drops the share
    /// partition so the next use reloads it (Kafka's `fencedSharePartitionHandler`).
    fn on_persister_error(&self, group_id: &str, tp: &TopicIdPartition, error: ErrorCode) {
        if matches!(
            error,
            ErrorCode::FencedStateEpoch
                | ErrorCode::NotLeaderOrFollower
                | ErrorCode::UnknownTopicOrPartition
        ) {
            self.drop_partition(group_id, tp);
        }
    }

    /// Drops the share partition unless this broker leads `tp` at its leader epoch (what
    /// Kafka's listeners on the ReplicaManager do on a leadership change); an
    /// acknowledgement then finds no share partition: UNKNOWN_TOPIC_OR_PARTITION, Kafka's
    /// answer.
    fn check_leader(&self, group_id: &str, tp: &TopicIdPartition) -> Result<(), ErrorCode> {
        let Some(hosted) = self.replica_manager.partition(tp.topic_id, tp.partition) else {
            self.drop_partition(group_id, tp);
            return Err(ErrorCode::UnknownTopicOrPartition);
        };
        let (is_leader, leader_epoch) = {
            let p = hosted.lock();
            (p.is_leader(), p.leader_epoch())
        };
        let stale = self
            .existing(group_id, tp)
            .is_some_and(|e| e.lock().leader_epoch() != leader_epoch);
        if !is_leader || stale {
            self.drop_partition(group_id, tp);
            return Err(ErrorCode::UnknownTopicOrPartition);
        }
        Ok(())
    }

    fn existing(&self, group_id: &str, tp: &TopicIdPartition) -> Option<Arc<SharePartitionEntry>> {
        let map = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&(group_id.to_owned(), tp.clone())).cloned()
    }

    fn drop_partition(&self, group_id: &str, tp: &TopicIdPartition) {
        let removed = {
            let mut map = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
            map.remove(&(group_id.to_owned(), tp.clone()))
        };
        if let Some(entry) = removed {
            entry.lock().mark_fenced();
        }
    }

    /// The loaded share partition of (group, tp) at the current leader epoch, loading it
    /// if needed. Errors carry the leader as this broker knows it.
    async fn share_partition(
        &self,
        group_id: &str,
        tp: &TopicIdPartition,
        settings: &GroupShareSettings,
    ) -> Result<Arc<SharePartitionEntry>, (ErrorCode, Option<(i32, i32)>)> {
        let Some(hosted) = self.replica_manager.partition(tp.topic_id, tp.partition) else {
            self.drop_partition(group_id, tp);
            return Err((ErrorCode::UnknownTopicOrPartition, None));
        };
        let (is_leader, leader_epoch, leader) = {
            let p = hosted.lock();
            (p.is_leader(), p.leader_epoch(), p.leader_id())
        };
        if !is_leader {
            self.drop_partition(group_id, tp);
            return Err((ErrorCode::NotLeaderOrFollower, Some((leader, leader_epoch))));
        }
        let entry = {
            let mut map = self.partitions.lock().unwrap_or_else(|p| p.into_inner());
            let key = (group_id.to_owned(), tp.clone());
            let stale = map
                .get(&key)
                .is_some_and(|e| e.lock().leader_epoch() != leader_epoch);
            if stale {
                if let Some(old) = map.remove(&key) {
                    old.lock().mark_fenced();
                }
            }
            Arc::clone(map.entry(key).or_insert_with(|| {
                Arc::new(SharePartitionEntry {
                    partition: Mutex::new(SharePartition::new(
                        group_id.to_owned(),
                        tp.topic_id,
                        tp.partition,
                        leader_epoch,
                    )),
                    load: tokio::sync::Mutex::new(()),
                })
            }))
        };
        let _loading = entry.load.lock().await;
        let read = {
            let mut sp = entry.lock();
            match sp.state() {
                SharePartitionState::Active => return Ok(Arc::clone(&entry)),
                SharePartitionState::Fenced => {
                    return Err((ErrorCode::NotLeaderOrFollower, Some((leader, leader_epoch))))
                }
                SharePartitionState::Failed(e) => {
                    drop(sp);
                    self.drop_partition(group_id, tp);
                    return Err((e, None));
                }
                SharePartitionState::Empty | SharePartitionState::Initializing => {
                    sp.begin_initialize()
                }
            }
        };
        let Some(read) = read else {
            return Err((ErrorCode::CoordinatorLoadInProgress, None));
        };
        let load_started = std::time::Instant::now();
        let answer = self.persister.read_state(read).await;
        let partition: Result<PartitionResult, ErrorCode> = answer
            .results
            .into_iter()
            .find(|t| t.topic_id == tp.topic_id)
            .and_then(|t| {
                t.partitions
                    .into_iter()
                    .find(|p| p.partition == tp.partition)
            })
            .ok_or(ErrorCode::UnknownServerError);
        let reset = || self.reset_offset(tp, leader_epoch, settings.auto_offset_reset);
        let loaded = {
            let mut sp = entry.lock();
            sp.complete_initialize(partition.as_ref().map_err(|e| *e), reset)
        };
        match loaded {
            Ok(()) => {
                let load_ms = load_started.elapsed().as_millis() as u64;
                self.metrics
                    .record_partition_load(load_ms, unix_ms().max(0) as u64);
                self.maybe_dlq(group_id, tp, &entry);
                Ok(Arc::clone(&entry))
            }
            Err(e) => {
                self.drop_partition(group_id, tp);
                Err((persister_error(e), None))
            }
        }
    }

    /// The start offset `share.auto.offset.reset` gives a partition without state: the log
    /// start (earliest), the HW (latest), or the first offset at or after now minus the
    /// duration (Kafka's `startOffsetDuringInitialization`).
    fn reset_offset(
        &self,
        tp: &TopicIdPartition,
        leader_epoch: i32,
        reset: AutoOffsetReset,
    ) -> i64 {
        let timestamp = match reset {
            AutoOffsetReset::Earliest => -2,
            AutoOffsetReset::Latest => -1,
            AutoOffsetReset::ByDuration(d) => unix_ms() - d.as_millis() as i64,
        };
        match self
            .replica_manager
            .list_offset(tp, leader_epoch, timestamp, -1)
        {
            Ok((offset, _, _)) if offset >= 0 => offset,
            // No record at or after the timestamp: the latest offset, as Kafka's lookup
            // answers then.
            _ => self
                .replica_manager
                .list_offset(tp, leader_epoch, -1, -1)
                .map_or(-1, |(offset, _, _)| offset),
        }
    }
}

/// Kafka's `fetchPersisterError`: what a client hears for a share coordinator's error.
fn persister_error(error: ErrorCode) -> ErrorCode {
    match error {
        ErrorCode::NotCoordinator
        | ErrorCode::CoordinatorNotAvailable
        | ErrorCode::CoordinatorLoadInProgress => ErrorCode::CoordinatorNotAvailable,
        ErrorCode::FencedStateEpoch => ErrorCode::FencedStateEpoch,
        ErrorCode::FencedLeaderEpoch => ErrorCode::NotLeaderOrFollower,
        ErrorCode::UnknownTopicOrPartition => ErrorCode::UnknownTopicOrPartition,
        ErrorCode::GroupIdNotFound => ErrorCode::GroupIdNotFound,
        ErrorCode::InvalidRequest => ErrorCode::InvalidRequest,
        _ => ErrorCode::UnknownServerError,
    }
}

/// An ISO-8601 duration as Java's `Duration.parse` reads it: `PnDTnHnMn.nS`, signs
/// excluded (Kafka refuses negative durations for `by_duration`).
fn parse_iso8601_duration(text: &str) -> Option<Duration> {
    let t = text.trim().to_ascii_uppercase();
    let rest = t.strip_prefix('P')?;
    let (days, time) = match rest.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let mut ms: f64 = 0.0;
    let mut any = false;
    if !days.is_empty() {
        ms += days.strip_suffix('D')?.parse::<f64>().ok()? * 86_400_000.0;
        any = true;
    }
    if let Some(mut time) = time {
        if time.is_empty() {
            return None;
        }
        for (unit, factor) in [('H', 3_600_000.0), ('M', 60_000.0), ('S', 1_000.0)] {
            if let Some(i) = time.find(unit) {
                ms += time[..i].parse::<f64>().ok()? * factor;
                time = &time[i + 1..];
                any = true;
            }
        }
        if !time.is_empty() {
            return None;
        }
    }
    (any && ms >= 0.0 && ms.is_finite()).then(|| Duration::from_millis(ms as u64))
}

mod delayed_share_fetch;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_offset_reset_values_parse_as_kafka_reads_them() {
        assert_eq!(
            AutoOffsetReset::parse("EARLIEST"),
            Some(AutoOffsetReset::Earliest)
        );
        assert_eq!(
            AutoOffsetReset::parse("latest"),
            Some(AutoOffsetReset::Latest)
        );
        assert_eq!(
            AutoOffsetReset::parse("by_duration:PT1H30M"),
            Some(AutoOffsetReset::ByDuration(Duration::from_secs(5_400)))
        );
        assert_eq!(
            AutoOffsetReset::parse("by_duration:P1DT0.5S"),
            Some(AutoOffsetReset::ByDuration(Duration::from_millis(
                86_400_500
            )))
        );
        assert_eq!(AutoOffsetReset::parse("by_duration:1H"), None);
        assert_eq!(AutoOffsetReset::parse("none"), None);
    }
}
