//! Followers pulling from their leaders (Kafka's `ReplicaFetcherManager` and
//! `ReplicaFetcherThread`): one fetcher task per source broker, fetching every partition
//! this broker follows there in one Fetch request.
//!
//! Each Fetch carries, per partition, the follower's log end as fetch offset, the epoch of
//! its last batch (`lastFetchedEpoch`: the leader answers a diverging epoch instead of
//! records when our log went astray — KIP-101/279 in one round trip), and its current
//! leader epoch (KIP-320); the request carries this broker's epoch in `ReplicaState`
//! (KIP-903). Responses are applied under the partition's lock: truncate on divergence,
//! else append and take the leader's HW. A partition the leader refuses (not leader, fenced
//! or unknown epoch) waits `replica.fetch.backoff.ms` and for the metadata to move it.
//!
//! Replication throttles (Kafka's `shouldFollowerThrottle`): the bytes fetched for the
//! partitions `follower.replication.throttled.replicas` names here are recorded against the
//! follower quota, and while it is exceeded those partitions are left out of the request
//! unless they had caught up with the leader's HW at their last fetch; a fetcher left with
//! nothing to ask waits `replica.fetch.backoff.ms`, as Kafka's does.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kraftd_net::{Channel, ClientConfig, ClientError};
use kraftd_protocol::messages::fetch_request::{FetchPartition, ReplicaState};
use kraftd_protocol::messages::fetch_response::PartitionData;
use kraftd_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kraftd_protocol::messages::{FetchRequest, ListOffsetsRequest};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody, Uuid};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::fetch_session_handler::{FetchSessionHandler, WantedPartition};
use super::partition::HostedPartition;
use super::partition::Role;
use super::replication_quota::ReplicationQuotas;
use super::TopicIdPartition;
use crate::metadata::MetadataCache;
use kraftd_log::clock::unix_ms;

mod round;

/// The follower side's settings, with Kafka's names.
#[derive(Debug, Clone)]
pub struct FetcherConfig {
    pub broker_id: i32,
    /// `inter.broker.listener.name`: the leader's listener to fetch from (`None`: its first).
    pub listener_name: Option<String>,
    /// How to reach that listener (TLS, SASL).
    pub security: kraftd_net::ClientSecurity,
    /// `replica.fetch.wait.max.ms`.
    pub max_wait_ms: i32,
    /// `replica.fetch.min.bytes`.
    pub min_bytes: i32,
    /// `replica.fetch.response.max.bytes`.
    pub max_bytes: i32,
    /// `replica.fetch.max.bytes`.
    pub partition_max_bytes: i32,
    /// `replica.fetch.backoff.ms`.
    pub backoff: Duration,
    /// `replica.socket.timeout.ms`.
    pub request_timeout: Duration,
}

impl FetcherConfig {
    pub fn new(broker_id: i32) -> Self {
        FetcherConfig {
            broker_id,
            listener_name: None,
            security: Default::default(),
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 10 * 1024 * 1024,
            partition_max_bytes: 1024 * 1024,
            backoff: Duration::from_millis(1000),
            request_timeout: Duration::from_millis(30_000),
        }
    }
}

/// A followed partition and when it may be fetched again.
#[derive(Debug)]
struct Followed {
    hosted: Arc<HostedPartition>,
    delayed_until: Option<Instant>,
    /// Kafka's `PartitionFetchState.lag`: the leader's HW minus our log end after the last
    /// fetch answered (`None` before one); 0 is in sync, never throttled.
    lag: Option<i64>,
}

type Key = (Uuid, i32);

#[derive(Debug, Default)]
struct FetcherShared {
    partitions: Mutex<BTreeMap<Key, Followed>>,
    /// Partitions whose position may have moved since the fetcher's last round — added,
    /// removed, delayed, or named by the last response (`round.rs` looks at those, not at
    /// every partition).
    touched: Mutex<BTreeSet<Key>>,
    /// Set when every partition must be looked at again (endpoints changed: delays cleared).
    look_at_all: AtomicBool,
    wake: Notify,
}

impl FetcherShared {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<Key, Followed>> {
        self.partitions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn touch(&self, keys: impl IntoIterator<Item = Key>) {
        self.touched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(keys);
    }

    fn take_touched(&self) -> BTreeSet<Key> {
        std::mem::take(&mut *self.touched.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[derive(Debug)]
struct FetcherTask {
    shared: Arc<FetcherShared>,
    task: JoinHandle<()>,
}

/// The follower's fetch-session counters (all fetchers), exported as
/// `kraftd_replica_fetcher_*` (Kafka has no metric for its `FetchSessionHandler`).
#[derive(Debug, Default)]
pub struct FetcherStats {
    /// Fetch requests sent in full (no session yet, or after a reset).
    pub full_requests: AtomicU64,
    /// Fetch requests sent in a session (only the partitions that changed named).
    pub incremental_requests: AtomicU64,
    /// Partitions named in requests, and those left to the leader's session.
    pub partitions_sent: AtomicU64,
    pub partitions_omitted: AtomicU64,
    /// Sessions ended by an error, a failed request or an inconsistent response.
    pub session_resets: AtomicU64,
}

/// The fetchers, one per leader broker.
#[derive(Debug)]
pub struct ReplicaFetcherManager {
    stats: Arc<FetcherStats>,
    config: FetcherConfig,
    cache: MetadataCache,
    broker_epoch: Arc<AtomicI64>,
    quotas: Arc<ReplicationQuotas>,
    fetchers: Mutex<HashMap<i32, FetcherTask>>,
}

impl ReplicaFetcherManager {
    pub fn new(
        config: FetcherConfig,
        cache: MetadataCache,
        broker_epoch: Arc<AtomicI64>,
        quotas: Arc<ReplicationQuotas>,
    ) -> Self {
        ReplicaFetcherManager {
            stats: Arc::default(),
            config,
            cache,
            broker_epoch,
            quotas,
            fetchers: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<i32, FetcherTask>> {
        self.fetchers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The fetch-session counters of every fetcher.
    pub fn stats(&self) -> &FetcherStats {
        &self.stats
    }

    /// Starts fetching `hosted` from `leader` (starting that leader's fetcher if needed).
    pub fn add_partition(&self, leader: i32, hosted: Arc<HostedPartition>) {
        let key = (hosted.tp.topic_id, hosted.tp.partition);
        let mut fetchers = self.lock();
        let fetcher = fetchers.entry(leader).or_insert_with(|| {
            let shared = Arc::new(FetcherShared::default());
            let run = FetcherRun {
                leader,
                config: self.config.clone(),
                cache: self.cache.clone(),
                broker_epoch: Arc::clone(&self.broker_epoch),
                quotas: Arc::clone(&self.quotas),
                shared: Arc::clone(&shared),
                channel: None,
                session: FetchSessionHandler::new(),
                stats: Arc::clone(&self.stats),
                rounds: round::RoundState::new(),
            };
            info!(
                broker = self.config.broker_id,
                leader, "starting replica fetcher"
            );
            FetcherTask {
                shared,
                task: tokio::spawn(run.run()),
            }
        });
        fetcher.shared.lock().insert(
            key,
            Followed {
                hosted,
                delayed_until: None,
                lag: None,
            },
        );
        fetcher.shared.touch([key]);
        fetcher.shared.wake.notify_one();
    }

    /// Stops fetching a partition (it became leader, moved, or was deleted). A fetcher left
    /// with nothing stops.
    pub fn remove_partition(&self, tp: &TopicIdPartition) {
        let key = (tp.topic_id, tp.partition);
        let mut fetchers = self.lock();
        let mut idle = Vec::new();
        for (leader, fetcher) in fetchers.iter() {
            let mut parts = fetcher.shared.lock();
            if parts.remove(&key).is_some() {
                fetcher.shared.touch([key]);
                if parts.is_empty() {
                    idle.push(*leader);
                }
            }
        }
        for leader in idle {
            if let Some(f) = fetchers.remove(&leader) {
                f.task.abort();
            }
        }
    }

    /// Brokers changed (a leader's endpoint may have moved): wake every fetcher so its next
    /// request resolves the endpoint again, and retry partitions that were backing off.
    pub fn endpoints_changed(&self) {
        for fetcher in self.lock().values() {
            for f in fetcher.shared.lock().values_mut() {
                f.delayed_until = None;
            }
            fetcher.shared.look_at_all.store(true, Ordering::SeqCst);
            fetcher.shared.wake.notify_one();
        }
    }

    /// The partitions being fetched, by leader (for tests and metrics).
    pub fn assignments(&self) -> BTreeMap<i32, Vec<TopicIdPartition>> {
        self.lock()
            .iter()
            .map(|(leader, f)| {
                (
                    *leader,
                    f.shared
                        .lock()
                        .values()
                        .map(|p| p.hosted.tp.clone())
                        .collect(),
                )
            })
            .collect()
    }

    pub fn shutdown(&self) {
        for (_, f) in self.lock().drain() {
            f.task.abort();
        }
    }
}

impl Drop for ReplicaFetcherManager {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// One leader's fetch loop.
struct FetcherRun {
    leader: i32,
    config: FetcherConfig,
    cache: MetadataCache,
    broker_epoch: Arc<AtomicI64>,
    quotas: Arc<ReplicationQuotas>,
    shared: Arc<FetcherShared>,
    channel: Option<Channel>,
    /// The KIP-227 session with the leader: after a full fetch, each request names only the
    /// partitions whose position changed, and the leader answers only those with news.
    session: FetchSessionHandler,
    stats: Arc<FetcherStats>,
    /// Which partitions the next round looks at (`round.rs`).
    rounds: round::RoundState,
}

/// What one partition was asked at, to check the answer still applies.
#[derive(Debug)]
struct Asked {
    hosted: Arc<HostedPartition>,
    fetch_offset: i64,
    leader_epoch: i32,
}

impl FetcherRun {
    async fn run(mut self) {
        loop {
            let shared = Arc::clone(&self.shared);
            let wake = shared.wake.notified();
            let round = self.next_round();
            if round.is_idle(&self.session) {
                match round.next_delay {
                    Some(at) => {
                        let _ = tokio::time::timeout_at(at, wake).await;
                    }
                    None => wake.await,
                }
                continue;
            }
            let Some(channel) = self.channel() else {
                debug!(leader = self.leader, "no endpoint for the leader yet");
                self.delay_all();
                continue;
            };
            if !round.all && self.session.next_metadata().is_full() {
                // A new connection started the session over: the request must name every
                // partition, so the next round looks at all of them.
                continue;
            }
            self.fetch_once(&channel, round).await;
        }
    }

    fn delay<'a>(&self, tps: impl Iterator<Item = &'a TopicIdPartition>) {
        let until = Instant::now() + self.config.backoff;
        let mut parts = self.shared.lock();
        let mut keys = Vec::new();
        for tp in tps {
            let key = (tp.topic_id, tp.partition);
            if let Some(f) = parts.get_mut(&key) {
                f.delayed_until = Some(until);
                keys.push(key);
            }
        }
        drop(parts);
        self.shared.touch(keys);
    }

    /// Every partition waits `replica.fetch.backoff.ms` (the request failed, or the leader
    /// cannot be reached).
    fn delay_all(&self) {
        let until = Instant::now() + self.config.backoff;
        let mut parts = self.shared.lock();
        for f in parts.values_mut() {
            f.delayed_until = Some(until);
        }
        drop(parts);
        self.shared.look_at_all.store(true, Ordering::SeqCst);
    }

    /// The channel to the leader's listener, re-created when its endpoint changes.
    fn channel(&mut self) -> Option<Channel> {
        let image = self.cache.image();
        let broker = image.cluster.broker(self.leader)?;
        let destination =
            crate::kafka_apis::broker_address(broker, self.config.listener_name.as_deref())?;
        if self
            .channel
            .as_ref()
            .is_none_or(|c| c.destination() != destination)
        {
            let mut client =
                ClientConfig::new(format!("broker-{}-fetcher-0", self.config.broker_id));
            client.request_timeout = self.config.request_timeout;
            client.security = self.config.security.clone();
            client.max_frame_bytes = (self.config.max_bytes as usize)
                .saturating_mul(2)
                .max(client.max_frame_bytes);
            self.channel = Some(Channel::spawn(destination, client));
            // A new connection (maybe to a restarted leader): start a new session.
            self.session.restart();
        }
        self.channel.clone()
    }

    async fn fetch_once(&mut self, channel: &Channel, round: round::Round) {
        // The version Kafka's replica fetcher sends at the cluster's metadata.version, which
        // every broker of the cluster serves.
        let version = self
            .cache
            .image()
            .features
            .version()
            .fetch_request_version();
        let round::Round {
            asked,
            gone,
            all: looked_at_all,
            ..
        } = round;
        let wanted: Vec<WantedPartition> = asked
            .iter()
            .map(|a| {
                let p = a.hosted.lock();
                let (fetch_offset, last_fetched_epoch) = p.fetch_position();
                WantedPartition {
                    topic_id: a.hosted.tp.topic_id,
                    topic: a.hosted.tp.topic.clone(),
                    data: FetchPartition {
                        partition: a.hosted.tp.partition,
                        current_leader_epoch: p.leader_epoch(),
                        fetch_offset,
                        last_fetched_epoch,
                        log_start_offset: p.log_start_offset(),
                        partition_max_bytes: self.config.partition_max_bytes,
                        high_watermark: p.high_watermark(),
                        ..Default::default()
                    },
                }
            })
            .collect();
        // Topic ids are what v13+ sessions key by; an older leader gets full fetches.
        let built = if looked_at_all {
            self.session.build(wanted)
        } else {
            self.session.build_changed(wanted, &gone)
        };
        let (session_id, session_epoch) = if version >= 13 {
            (built.metadata.session_id, built.metadata.epoch)
        } else {
            (0, -1)
        };
        let stats = &self.stats;
        if built.metadata.is_full() {
            stats.full_requests.fetch_add(1, Ordering::Relaxed);
        } else {
            stats.incremental_requests.fetch_add(1, Ordering::Relaxed);
        }
        stats
            .partitions_sent
            .fetch_add(built.sent as u64, Ordering::Relaxed);
        stats
            .partitions_omitted
            .fetch_add(built.omitted as u64, Ordering::Relaxed);
        let resets_before = self.session.resets();
        let broker_epoch = self.broker_epoch.load(Ordering::Relaxed);
        let request = FetchRequest {
            // v15+ carries the replica in ReplicaState; the top-level field is gone.
            replica_id: if version >= 15 {
                -1
            } else {
                self.config.broker_id
            },
            replica_state: ReplicaState {
                replica_id: self.config.broker_id,
                replica_epoch: broker_epoch,
                ..Default::default()
            },
            max_wait_ms: self.config.max_wait_ms,
            min_bytes: self.config.min_bytes,
            max_bytes: self.config.max_bytes,
            isolation_level: 0,
            session_id,
            session_epoch,
            topics: built.topics,
            forgotten_topics_data: built.forgotten,
            ..Default::default()
        };
        let response = channel
            .call(
                channel.next_correlation_id(),
                version,
                RequestBody::Fetch(request),
            )
            .await;
        let response = match response {
            Ok(ResponseBody::Fetch(r)) => r,
            Ok(other) => {
                warn!(leader = self.leader, response = ?other, "unexpected response to Fetch");
                self.session.handle_error();
                self.stats.session_resets.fetch_add(1, Ordering::Relaxed);
                self.delay_all();
                return;
            }
            Err(e @ (ClientError::Encode(_) | ClientError::Decode(_))) => {
                warn!(leader = self.leader, error = %e, "fetch failed; backing off");
                self.session.handle_error();
                self.stats.session_resets.fetch_add(1, Ordering::Relaxed);
                self.delay_all();
                return;
            }
            Err(e) => {
                debug!(leader = self.leader, error = %e, "fetch failed; backing off");
                self.session.handle_error();
                self.stats.session_resets.fetch_add(1, Ordering::Relaxed);
                self.delay_all();
                return;
            }
        };
        let session_applies = self.session.handle_response(&response);
        self.stats
            .session_resets
            .fetch_add(self.session.resets() - resets_before, Ordering::Relaxed);
        let session_error = matches!(
            ErrorCode::from_code(response.error_code),
            Some(ErrorCode::FetchSessionIdNotFound | ErrorCode::InvalidFetchSessionEpoch)
        );
        if session_error {
            // The session is gone on the leader's side: ask again, in full, at once.
            debug!(leader = self.leader, error = ?ErrorCode::from_code(response.error_code), "fetch session reset");
            return;
        }
        if !session_applies && response.error_code == 0 {
            // A response the session cannot explain: nothing of it is applied, and the
            // next request is full, so nothing is skipped.
            warn!(
                leader = self.leader,
                "fetch response inconsistent with the session; fetching in full"
            );
            return;
        }
        if response.error_code != 0 {
            warn!(leader = self.leader, error = ?ErrorCode::from_code(response.error_code), "fetch refused");
            self.delay_all();
            return;
        }
        let mut by_key: HashMap<Key, Asked> = asked
            .into_iter()
            .map(|a| ((a.hosted.tp.topic_id, a.hosted.tp.partition), a))
            .collect();
        // Whatever came back moved (or may have moved) a partition's position: the next round
        // looks at it. One the request left to the session was asked at what it last sent.
        let named: Vec<Key> = response
            .responses
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(move |p| (t.topic_id, p.partition_index))
            })
            .collect();
        for key in &named {
            if !by_key.contains_key(key) {
                if let Some(a) = self.asked_as_last_sent(*key) {
                    by_key.insert(*key, a);
                }
            }
        }
        self.shared.touch(named);
        let mut backoff = Vec::new();
        let mut out_of_range = Vec::new();
        let mut fetched = Vec::new();
        for topic in response.responses {
            for data in topic.partitions {
                let Some(a) = by_key.get(&(topic.topic_id, data.partition_index)) else {
                    continue;
                };
                match self.apply(a, data) {
                    Applied::Done(None) => {}
                    Applied::Done(Some((bytes, lag))) => fetched.push((a, bytes, lag)),
                    Applied::Backoff => backoff.push(a.hosted.tp.clone()),
                    Applied::OutOfRange(leader_start) => {
                        out_of_range.push((Arc::clone(&a.hosted), a.leader_epoch, leader_start))
                    }
                }
            }
        }
        self.account_fetched(&fetched);
        if !backoff.is_empty() {
            self.delay(backoff.iter());
        }
        for (hosted, epoch, leader_start) in out_of_range {
            self.handle_out_of_range(channel, &hosted, epoch, leader_start)
                .await;
        }
    }

    /// The partitions' new lags, their bytes as ReplicationBytesIn and, for the throttled
    /// ones, against the follower quota (in-sync ones' included, as Kafka counts them).
    fn account_fetched(&self, fetched: &[(&Asked, usize, i64)]) {
        let bytes: usize = fetched.iter().map(|(_, b, _)| b).sum();
        self.quotas
            .replication_bytes_in
            .fetch_add(bytes as u64, Ordering::Relaxed);
        if bytes > 0 {
            self.quotas.follower.record_throttled(
                fetched
                    .iter()
                    .map(|(a, b, _)| (a.hosted.tp.topic.as_str(), a.hosted.tp.partition, *b)),
                unix_ms().max(0) as u64,
            );
        }
        let mut parts = self.shared.lock();
        for (a, _, lag) in fetched {
            if let Some(f) = parts.get_mut(&(a.hosted.tp.topic_id, a.hosted.tp.partition)) {
                f.lag = Some(*lag);
            }
        }
    }

    /// Applies one partition's answer under its lock; for records taken (or none left to
    /// take), their size and the lag behind the leader's HW after them.
    fn apply(&self, asked: &Asked, data: PartitionData) -> Applied {
        let hosted = &asked.hosted;
        let mut p = hosted.lock();
        if p.role()
            != (Role::Follower {
                leader: self.leader,
            })
            || p.leader_epoch() != asked.leader_epoch
            || p.log_end_offset() != asked.fetch_offset
        {
            // Moved on while the request was out: the answer no longer applies.
            return Applied::Done(None);
        }
        let now = unix_ms();
        let code = ErrorCode::from_code(data.error_code);
        match code {
            Some(ErrorCode::None) => {
                let mut bytes = 0;
                let diverging = data.diverging_epoch;
                if diverging.epoch >= 0 || diverging.end_offset >= 0 {
                    match p.truncate_on_divergence(diverging.epoch, diverging.end_offset, now) {
                        Ok(end) => {
                            info!(
                                topic = %hosted.tp.topic, partition = hosted.tp.partition,
                                leader = self.leader, diverging_epoch = diverging.epoch,
                                leader_end_offset = diverging.end_offset, new_end = end,
                                "truncated on the leader's diverging epoch"
                            );
                        }
                        Err(e) => {
                            warn!(topic = %hosted.tp.topic, partition = hosted.tp.partition, error = %e, "truncation failed");
                            return Applied::Backoff;
                        }
                    }
                } else if let Some(records) = data.records.filter(|r| !r.is_empty()) {
                    bytes = records.len();
                    if let Err(e) = p.append_as_follower(records, data.high_watermark, now) {
                        warn!(
                            topic = %hosted.tp.topic, partition = hosted.tp.partition,
                            leader = self.leader, error = %e, "appending fetched records failed"
                        );
                        return Applied::Backoff;
                    }
                } else {
                    p.update_follower_high_watermark(data.high_watermark);
                }
                p.maybe_follow_leader_log_start(data.log_start_offset);
                let lag = (data.high_watermark - p.log_end_offset()).max(0);
                drop(p);
                hosted.changed.notify_waiters();
                Applied::Done(Some((bytes, lag)))
            }
            Some(ErrorCode::OffsetOutOfRange) => Applied::OutOfRange(data.log_start_offset),
            other => {
                debug!(
                    topic = %hosted.tp.topic, partition = hosted.tp.partition, leader = self.leader,
                    error = ?other, "leader refused the partition; waiting for metadata"
                );
                Applied::Backoff
            }
        }
    }

    /// Our fetch offset is outside the leader's log: below its start (start over there) or
    /// past its end (an unclean leader: truncate to its end), as Kafka's
    /// `handleOutOfRangeError` does.
    async fn handle_out_of_range(
        &self,
        channel: &Channel,
        hosted: &Arc<HostedPartition>,
        epoch: i32,
        leader_start: i64,
    ) {
        let request = ListOffsetsRequest {
            replica_id: self.config.broker_id,
            isolation_level: 0,
            topics: vec![ListOffsetsTopic {
                name: hosted.tp.topic.clone(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: hosted.tp.partition,
                    current_leader_epoch: epoch,
                    timestamp: -1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let version = self
            .cache
            .image()
            .features
            .version()
            .list_offset_request_version();
        let leader_end = match channel
            .call(
                channel.next_correlation_id(),
                version,
                RequestBody::ListOffsets(request),
            )
            .await
        {
            Ok(ResponseBody::ListOffsets(r)) => r
                .topics
                .first()
                .and_then(|t| t.partitions.first())
                .filter(|p| p.error_code == 0)
                .map(|p| p.offset),
            _ => None,
        };
        let now = unix_ms();
        let mut p = hosted.lock();
        if p.leader_epoch() != epoch
            || p.role()
                != (Role::Follower {
                    leader: self.leader,
                })
        {
            return;
        }
        let result = match leader_end {
            Some(end) if p.log_end_offset() > end => {
                warn!(
                    topic = %hosted.tp.topic, partition = hosted.tp.partition,
                    local_end = p.log_end_offset(), leader_end = end,
                    "our log is longer than the leader's (unclean election): truncating"
                );
                p.truncate_to(end, now)
            }
            _ if p.log_end_offset() < leader_start => {
                info!(
                    topic = %hosted.tp.topic, partition = hosted.tp.partition,
                    local_end = p.log_end_offset(), leader_start,
                    "the leader's log starts past ours: starting over there"
                );
                p.truncate_fully_and_start_at(leader_start, now)
            }
            _ => Ok(()),
        };
        drop(p);
        match result {
            Ok(()) => hosted.changed.notify_waiters(),
            Err(e) => {
                warn!(topic = %hosted.tp.topic, partition = hosted.tp.partition, error = %e, "out-of-range recovery failed");
                self.delay(std::iter::once(&hosted.tp));
            }
        }
    }
}

enum Applied {
    /// Applied; with the records' size and the lag after them, unless it no longer applied.
    Done(Option<(usize, i64)>),
    Backoff,
    OutOfRange(i64),
}
