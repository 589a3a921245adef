//! KIP-227 incremental fetch sessions (Kafka's `FetchSession`/`FetchManager`).
//!
//! A fetcher that polls the same partitions over and over would otherwise resend, and be
//! resent, every partition on every request. A session lets both sides send only what
//! changed: the broker remembers the fetcher's partitions and request parameters, and the
//! high watermark and log start offset it last told the fetcher about.
//!
//! The request's `(session_id, session_epoch)` picks one of four contexts, as in Kafka's
//! `FetchManager.newContext`:
//!
//! | session_id | session_epoch | context                                                  |
//! |------------|---------------|----------------------------------------------------------|
//! | any        | -1 (FINAL)    | sessionless; closes `session_id` if it names a session    |
//! | any        | 0 (INITIAL)   | full; closes `session_id`, creates a new session if room  |
//! | unknown    | > 0           | error `FETCH_SESSION_ID_NOT_FOUND`                         |
//! | known      | ≠ expected    | error `INVALID_FETCH_SESSION_EPOCH`                        |
//! | known      | = expected    | incremental; emptied session is closed (sessionless)      |
//!
//! A session created by a v13+ request keys its partitions by topic id, one created by an
//! older request by topic name; an incremental request on the other side of that line is
//! answered `FETCH_SESSION_TOPIC_ID_ERROR`, as Kafka does. Because v13+ sessions key by id,
//! a topic recreated under the same name is a different partition to the session: the old
//! id stops resolving and is answered `UNKNOWN_TOPIC_ID` until the fetcher forgets it. Like
//! Kafka since 3.1, the session itself never answers `INCONSISTENT_TOPIC_ID`: that is the
//! log's verdict when the id a fetch names is not the id of the partition's log.
//!
//! Locking: one `std::sync::Mutex` guards the whole cache and every session in it. Kafka has
//! a lock per session as well; the work done under ours is a few map operations per
//! partition, so a second level of locks would buy nothing but deadlock rules.
//!
//! Unlike Kafka, an incremental request does not read every partition of its session: only
//! the partitions it names, those that changed since the session was last answered (each
//! session's [`SessionWatch`], marked by the partitions' change signals), those whose last
//! answer was an error or left data unread, and — every [`FULL_SCAN_INTERVAL_MS`], as a
//! safety net — all of them. A waiting fetch is woken by its session's partitions that got
//! data. So a follower of 10,000 partitions costs the leader, per request, in proportion to
//! the partitions with news.
//!
//! Three rooms: this file holds the sessions and their cache (Kafka's `FetchSession`,
//! `CachedPartition`, `FetchSessionCache` and `FetchManager.newContext`); `context.rs` holds
//! the [`FetchContext`] a request keeps from `new_context` to its response; `watch.rs` the
//! change tracking.

mod context;
mod watch;

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use kraftd_protocol::messages::fetch_request::{FetchRequest, ForgottenTopic};
use kraftd_protocol::messages::fetch_response::PartitionData;
use kraftd_protocol::{ErrorCode, Uuid};

pub use self::context::FetchContext;
use self::context::Kind;
pub use self::watch::{ChangeNotify, SessionWatch};
use super::TopicIdPartition;

/// Kafka's `max.incremental.fetch.session.cache.slots` default.
pub const DEFAULT_MAX_SLOTS: usize = 1000;
/// Kafka's `min.incremental.fetch.session.eviction.ms` default.
pub const DEFAULT_EVICTION_MS: i64 = 120_000;
/// The session id of a fetch with no session (`FetchMetadata.INVALID_SESSION_ID`).
pub const INVALID_SESSION_ID: i32 = 0;
/// The epoch that asks for a full fetch and a new session (`FetchMetadata.INITIAL_EPOCH`).
pub const INITIAL_EPOCH: i32 = 0;
/// The epoch that closes a session and fetches without one (`FetchMetadata.FINAL_EPOCH`).
pub const FINAL_EPOCH: i32 = -1;
/// How often an incremental request reads every partition of its session anyway (a
/// safety net: changes are tracked, this bounds the damage of one not signalled).
pub const FULL_SCAN_INTERVAL_MS: i64 = 10_000;
/// The first request version that names topics by id (KIP-516).
pub const TOPIC_ID_VERSION: i16 = 13;

/// What is asked of one partition; kept in the session so incremental requests can omit it.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionFetchParams {
    pub fetch_offset: i64,
    pub log_start_offset: i64,
    pub max_bytes: i32,
    pub current_leader_epoch: i32,
    pub last_fetched_epoch: i32,
    /// The HW a follower last learned (Fetch v18, KIP-1166): the leader answers at once when
    /// its own is higher. `i64::MAX` when not sent.
    pub high_watermark: i64,
}

/// How a request names a topic: v13+ by id, older versions by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopicRef<'a> {
    Id(Uuid),
    Name(&'a str),
}

/// Kafka's `FetchMetadata.nextEpoch`: epochs wrap to 1, never to 0 or -1, which mean
/// "initial" and "final".
#[must_use]
pub fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        FINAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// The identity of a partition within a session: id-based sessions must not depend on a name
/// that may fail to resolve, name-based ones have no id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum PartKey {
    Id(Uuid, i32),
    Name(String, i32),
}

impl PartKey {
    fn of(tip: &TopicIdPartition, uses_topic_ids: bool) -> PartKey {
        if uses_topic_ids {
            PartKey::Id(tip.topic_id, tip.partition)
        } else {
            PartKey::Name(tip.topic.clone(), tip.partition)
        }
    }
}

/// Kafka's `CachedPartition`.
#[derive(Clone, Debug)]
struct CachedPartition {
    /// Position in the session's order; partitions that returned records move to the back so
    /// that a size-limited response serves every partition in turn.
    seq: u64,
    topic_id: Uuid,
    /// The name the partition was last known by; empty for an id never resolved.
    topic: String,
    partition: i32,
    params: PartitionFetchParams,
    high_watermark: i64,
    local_log_start_offset: i64,
}

impl CachedPartition {
    /// Kafka's `maybeUpdateResponseData`: whether the fetcher must hear about this partition.
    fn must_respond(&mut self, data: &PartitionData, update: bool) -> bool {
        let mut must = has_records(data);
        if self.high_watermark != data.high_watermark {
            must = true;
            if update {
                self.high_watermark = data.high_watermark;
            }
        }
        if self.local_log_start_offset != data.log_start_offset {
            must = true;
            if update {
                self.local_log_start_offset = data.log_start_offset;
            }
        }
        if data.preferred_read_replica >= 0 {
            must = true;
        }
        if data.error_code != ErrorCode::None.code() {
            // A forgotten high watermark makes the partition reappear once the error clears.
            if update {
                self.high_watermark = -1;
            }
            must = true;
        }
        if data.diverging_epoch.epoch >= 0 || data.diverging_epoch.end_offset >= 0 {
            must = true;
        }
        must
    }
}

fn has_records(data: &PartitionData) -> bool {
    data.records.as_ref().is_some_and(|r| !r.is_empty())
}

/// Kafka's `FetchSession`.
#[derive(Debug)]
struct Session {
    id: i32,
    privileged: bool,
    uses_topic_ids: bool,
    creation_ms: i64,
    last_used_ms: i64,
    /// The epoch the next incremental request must carry.
    epoch: i32,
    /// The size the cache's eviction index knows this session by; `None` until first touched.
    cached_size: Option<usize>,
    next_seq: u64,
    partitions: HashMap<PartKey, CachedPartition>,
    order: BTreeMap<u64, PartKey>,
    /// The partitions that changed since they were last read.
    watch: Arc<SessionWatch>,
    /// Partitions whose topic did not resolve when last read: read on every request.
    unresolved: HashSet<PartKey>,
    /// When the session last read all its partitions.
    last_full_scan_ms: i64,
}

impl Session {
    fn push(&mut self, key: PartKey, mut part: CachedPartition) {
        part.seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(part.seq, key.clone());
        self.partitions.insert(key, part);
    }

    fn remove(&mut self, key: &PartKey) -> bool {
        match self.partitions.remove(key) {
            Some(p) => {
                self.order.remove(&p.seq);
                true
            }
            None => false,
        }
    }

    fn move_to_back(&mut self, key: &PartKey) {
        if let Some(p) = self.partitions.get_mut(key) {
            self.order.remove(&p.seq);
            p.seq = self.next_seq;
            self.next_seq += 1;
            self.order.insert(p.seq, key.clone());
        }
    }

    fn evictable_key(&self) -> (bool, usize, i32) {
        (self.privileged, self.cached_size.unwrap_or(0), self.id)
    }
}

/// Kafka's `FetchSessionCache` (one shard).
#[derive(Debug)]
struct Cache {
    max_slots: usize,
    eviction_ms: i64,
    sessions: HashMap<i32, Session>,
    /// `(last_used_ms, id)`: the stalest session first.
    last_used: BTreeSet<(i64, i32)>,
    /// `(privileged, size, id)`: sessions any new session may displace, least valuable first.
    evictable_by_all: BTreeSet<(bool, usize, i32)>,
    /// Sessions a new follower session may displace.
    evictable_by_privileged: BTreeSet<(bool, usize, i32)>,
    total_partitions: usize,
    evictions: u64,
    rng: u64,
    /// See [`FetchManager::with_full_scan_ms`].
    full_scan_ms: i64,
}

impl Cache {
    fn new_session_id(&mut self) -> i32 {
        loop {
            // xorshift64*: session ids only need to be hard to collide with, not secret.
            self.rng ^= self.rng >> 12;
            self.rng ^= self.rng << 25;
            self.rng ^= self.rng >> 27;
            let r = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33;
            // Kafka draws from [1, i32::MAX).
            let id = 1 + (r % (i32::MAX as u64 - 1)) as i32;
            if !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }

    fn remove(&mut self, id: i32) -> Option<Session> {
        let session = self.sessions.remove(&id)?;
        self.last_used.remove(&(session.last_used_ms, id));
        let key = session.evictable_key();
        self.evictable_by_all.remove(&key);
        self.evictable_by_privileged.remove(&key);
        self.total_partitions -= session.cached_size.unwrap_or(0);
        Some(session)
    }

    /// Kafka's `touch`: a session becomes displaceable by anyone only once it has outlived
    /// the eviction interval, so a burst of new sessions cannot churn young ones; consumer
    /// sessions are displaceable by followers at any age.
    fn touch(&mut self, id: i32, now_ms: i64) {
        let eviction_ms = self.eviction_ms;
        let Some(session) = self.sessions.get_mut(&id) else {
            return;
        };
        self.last_used.remove(&(session.last_used_ms, id));
        session.last_used_ms = now_ms;
        self.last_used.insert((now_ms, id));
        if let Some(old) = session.cached_size {
            let old_key = session.evictable_key();
            self.evictable_by_all.remove(&old_key);
            self.evictable_by_privileged.remove(&old_key);
            self.total_partitions -= old;
        }
        session.cached_size = Some(session.partitions.len());
        let key = session.evictable_key();
        let mature = now_ms - session.creation_ms > eviction_ms;
        if !session.privileged || mature {
            self.evictable_by_privileged.insert(key);
        }
        if mature {
            self.evictable_by_all.insert(key);
        }
        self.total_partitions += session.partitions.len();
    }

    /// Kafka's `tryEvict`: a stale session goes first; otherwise the least valuable
    /// displaceable session, if it is worth less than the newcomer.
    fn try_evict(&mut self, privileged: bool, size: usize, now_ms: i64) -> bool {
        let Some(&(last_used, stale_id)) = self.last_used.first() else {
            return false;
        };
        if now_ms - last_used > self.eviction_ms {
            self.remove(stale_id);
            self.evictions += 1;
            return true;
        }
        let set = if privileged {
            &self.evictable_by_privileged
        } else {
            &self.evictable_by_all
        };
        match set.first() {
            Some(&victim) if (privileged, size, 0) >= victim => {
                self.remove(victim.2);
                self.evictions += 1;
                true
            }
            _ => false,
        }
    }

    /// Drops sessions idle longer than the eviction interval, so that an abandoned session's
    /// memory does not wait for cache pressure to be reclaimed.
    fn expire(&mut self, now_ms: i64) {
        while let Some(&(last_used, id)) = self.last_used.first() {
            if now_ms - last_used <= self.eviction_ms {
                break;
            }
            self.remove(id);
            self.evictions += 1;
        }
    }
}

/// Owns the session cache; one per broker, shared by every request handler.
#[derive(Debug)]
pub struct FetchManager {
    cache: Arc<Mutex<Cache>>,
}

/// A snapshot of the cache, for metrics (`NumIncrementalFetchSessions`,
/// `NumIncrementalFetchPartitionsCached`, `IncrementalFetchSessionEvictionsPerSec`) and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchSessionStats {
    pub sessions: usize,
    pub partitions: usize,
    pub evictions: u64,
}

fn lock(cache: &Mutex<Cache>) -> MutexGuard<'_, Cache> {
    // The cache holds no invariant a panicking holder could half-break that a later request
    // cannot live with: at worst one session is stale, and its fetcher recovers with a full
    // fetch.
    cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl FetchManager {
    /// `max_slots` is `max.incremental.fetch.session.cache.slots`.
    #[must_use]
    pub fn new(max_slots: usize) -> Self {
        Self::with_eviction_ms(max_slots, DEFAULT_EVICTION_MS)
    }

    /// `eviction_ms` is `min.incremental.fetch.session.eviction.ms`.
    #[must_use]
    pub fn with_eviction_ms(max_slots: usize, eviction_ms: i64) -> Self {
        let seed = RandomState::new().build_hasher().finish() | 1;
        FetchManager {
            cache: Arc::new(Mutex::new(Cache {
                max_slots,
                eviction_ms,
                sessions: HashMap::new(),
                last_used: BTreeSet::new(),
                evictable_by_all: BTreeSet::new(),
                evictable_by_privileged: BTreeSet::new(),
                total_partitions: 0,
                evictions: 0,
                rng: seed,
                full_scan_ms: FULL_SCAN_INTERVAL_MS,
            })),
        }
    }

    /// Sets how often an incremental request reads every partition of its session
    /// ([`FULL_SCAN_INTERVAL_MS`] by default); 0 reads them all on every request, as
    /// Kafka does.
    #[must_use]
    pub fn with_full_scan_ms(self, full_scan_ms: i64) -> Self {
        lock(&self.cache).full_scan_ms = full_scan_ms;
        self
    }

    #[must_use]
    pub fn stats(&self) -> FetchSessionStats {
        let cache = lock(&self.cache);
        FetchSessionStats {
            sessions: cache.sessions.len(),
            partitions: cache.total_partitions,
            evictions: cache.evictions,
        }
    }

    /// Whether `session_id` names a live session; lets tests and diagnostics see eviction.
    #[must_use]
    pub fn contains(&self, session_id: i32) -> bool {
        lock(&self.cache).sessions.contains_key(&session_id)
    }

    /// Builds the context for one request. `resolve` maps a topic id to its name (None: the
    /// id is unknown, answered `UNKNOWN_TOPIC_ID`) and, for v<13 requests, a name to its id
    /// (None: the topic is unknown, answered `UNKNOWN_TOPIC_OR_PARTITION`). Partitions that do
    /// not resolve still join the session, as in Kafka, so they are served once they do.
    pub fn new_context(
        &self,
        version: i16,
        request: &FetchRequest,
        is_follower: bool,
        resolve: &dyn Fn(TopicRef) -> Option<(Uuid, String)>,
        now_ms: i64,
    ) -> FetchContext {
        let uses_topic_ids = version >= TOPIC_ID_VERSION;
        let requested = requested_partitions(request, uses_topic_ids, resolve);
        let mut cache = lock(&self.cache);
        cache.expire(now_ms);
        let full_scan_ms = cache.full_scan_ms;
        let session_id = request.session_id;
        let epoch = request.session_epoch;
        let kind = if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
            if session_id != INVALID_SESSION_ID {
                // A full request closes whatever session it names.
                cache.remove(session_id);
            }
            let (partitions, unresolved) = split(requested, uses_topic_ids);
            if epoch == FINAL_EPOCH {
                Kind::Sessionless {
                    partitions,
                    unresolved,
                }
            } else {
                Kind::Full {
                    partitions,
                    unresolved,
                    uses_topic_ids,
                    is_follower,
                    watch: SessionWatch::new(),
                }
            }
        } else {
            match cache.sessions.get_mut(&session_id) {
                None => Kind::Error {
                    error: ErrorCode::FetchSessionIdNotFound,
                },
                Some(session) if session.epoch != epoch => Kind::Error {
                    error: ErrorCode::InvalidFetchSessionEpoch,
                },
                Some(session) if session.uses_topic_ids != uses_topic_ids => Kind::Error {
                    error: ErrorCode::FetchSessionTopicIdError,
                },
                Some(session) => {
                    let named: Vec<PartKey> = requested
                        .iter()
                        .map(|(tip, _, _)| PartKey::of(tip, uses_topic_ids))
                        .collect();
                    update_session(session, requested, &request.forgotten_topics_data);
                    if session.partitions.is_empty() {
                        // Kafka answers the request sessionless and drops the empty session.
                        cache.remove(session_id);
                        Kind::Sessionless {
                            partitions: Vec::new(),
                            unresolved: Vec::new(),
                        }
                    } else {
                        session.epoch = next_epoch(session.epoch);
                        let keys = candidates(session, named, now_ms, full_scan_ms);
                        let mut read: Requested = Vec::with_capacity(keys.len());
                        for (_, key) in keys {
                            let p = &session.partitions[&key];
                            let (tip, known) = refresh_name(p, uses_topic_ids, resolve);
                            if known {
                                session.unresolved.remove(&key);
                            } else {
                                session.unresolved.insert(key);
                            }
                            read.push((tip, p.params.clone(), known));
                        }
                        let (partitions, unresolved) = split(read, uses_topic_ids);
                        let watch = Arc::clone(&session.watch);
                        cache.touch(session_id, now_ms);
                        Kind::Incremental {
                            session_id,
                            request_epoch: epoch,
                            partitions,
                            unresolved,
                            watch,
                        }
                    }
                }
            }
        };
        FetchContext {
            cache: Arc::clone(&self.cache),
            kind,
            late_error: Mutex::new(None),
        }
    }
}

/// The partitions an incremental request reads, in the session's order (by `seq`): the
/// ones it names, the changed ones, the unresolved ones, or all of them when a full scan is
/// due.
fn candidates(
    session: &mut Session,
    named: Vec<PartKey>,
    now_ms: i64,
    full_scan_ms: i64,
) -> BTreeMap<u64, PartKey> {
    let mut out = BTreeMap::new();
    if now_ms - session.last_full_scan_ms >= full_scan_ms {
        session.last_full_scan_ms = now_ms;
        session.watch.take();
        for (seq, key) in &session.order {
            out.insert(*seq, key.clone());
        }
        return out;
    }
    let uses_topic_ids = session.uses_topic_ids;
    let changed = session
        .watch
        .take()
        .into_iter()
        .map(|tp| PartKey::of(&tp, uses_topic_ids));
    for key in named
        .into_iter()
        .chain(changed)
        .chain(session.unresolved.iter().cloned())
    {
        if let Some(p) = session.partitions.get(&key) {
            out.insert(p.seq, key);
        }
    }
    out
}

/// The session partitions a changed partition stands for (one: its key in the session).
fn session_key(session: &Session, tp: &TopicIdPartition) -> Option<PartKey> {
    let key = PartKey::of(tp, session.uses_topic_ids);
    session.partitions.contains_key(&key).then_some(key)
}

/// A request's partitions with their resolution: `resolved` is false when the topic is
/// unknown.
type Requested = Vec<(TopicIdPartition, PartitionFetchParams, bool)>;

fn requested_partitions(
    request: &FetchRequest,
    uses_topic_ids: bool,
    resolve: &dyn Fn(TopicRef) -> Option<(Uuid, String)>,
) -> Requested {
    let mut out: Requested = Vec::new();
    let mut index: HashMap<PartKey, usize> = HashMap::new();
    for topic in &request.topics {
        let (tip_id, name, known) =
            resolve_topic(uses_topic_ids, topic.topic_id, &topic.topic, resolve);
        for p in &topic.partitions {
            let tip = TopicIdPartition {
                topic_id: tip_id,
                topic: name.clone(),
                partition: p.partition,
            };
            let params = PartitionFetchParams {
                fetch_offset: p.fetch_offset,
                log_start_offset: p.log_start_offset,
                max_bytes: p.partition_max_bytes,
                current_leader_epoch: p.current_leader_epoch,
                last_fetched_epoch: p.last_fetched_epoch,
                high_watermark: p.high_watermark,
            };
            // A partition named twice keeps its first place and its last parameters, as in
            // Kafka's LinkedHashMap.
            match index.get(&PartKey::of(&tip, uses_topic_ids)) {
                Some(&i) => out[i] = (tip, params, known),
                None => {
                    index.insert(PartKey::of(&tip, uses_topic_ids), out.len());
                    out.push((tip, params, known));
                }
            }
        }
    }
    out
}

/// Returns `(id for the TopicIdPartition, name, known)`. Name-based requests carry the zero
/// id, as in Kafka, so the log's topic-id consistency check is skipped for them.
fn resolve_topic(
    uses_topic_ids: bool,
    topic_id: Uuid,
    topic: &str,
    resolve: &dyn Fn(TopicRef) -> Option<(Uuid, String)>,
) -> (Uuid, String, bool) {
    if uses_topic_ids {
        match resolve(TopicRef::Id(topic_id)) {
            Some((_, name)) => (topic_id, name, true),
            None => (topic_id, String::new(), false),
        }
    } else {
        let known = resolve(TopicRef::Name(topic)).is_some();
        (Uuid::ZERO, topic.to_owned(), known)
    }
}

fn unresolved_error(uses_topic_ids: bool) -> ErrorCode {
    if uses_topic_ids {
        ErrorCode::UnknownTopicId
    } else {
        ErrorCode::UnknownTopicOrPartition
    }
}

type Split = (
    Vec<(TopicIdPartition, PartitionFetchParams)>,
    Vec<(TopicIdPartition, PartitionFetchParams, ErrorCode)>,
);

fn split(requested: Requested, uses_topic_ids: bool) -> Split {
    let mut partitions = Vec::new();
    let mut unresolved = Vec::new();
    for (tip, params, known) in requested {
        if known {
            partitions.push((tip, params));
        } else {
            unresolved.push((tip, params, unresolved_error(uses_topic_ids)));
        }
    }
    (partitions, unresolved)
}

/// Resolves a cached partition's topic again: a topic unknown when the partition joined may
/// exist now, and one deleted since must not be read under its old name.
fn refresh_name(
    p: &CachedPartition,
    uses_topic_ids: bool,
    resolve: &dyn Fn(TopicRef) -> Option<(Uuid, String)>,
) -> (TopicIdPartition, bool) {
    let (topic_id, topic, known) = resolve_topic(uses_topic_ids, p.topic_id, &p.topic, resolve);
    (
        TopicIdPartition {
            topic_id,
            topic,
            partition: p.partition,
        },
        known,
    )
}

/// Kafka's `FetchSession.update`: named partitions are added or their parameters replaced,
/// then forgotten ones removed.
fn update_session(session: &mut Session, requested: Requested, forgotten: &[ForgottenTopic]) {
    let uses_topic_ids = session.uses_topic_ids;
    for (tip, params, _) in requested {
        let key = PartKey::of(&tip, uses_topic_ids);
        match session.partitions.get_mut(&key) {
            Some(cached) => {
                cached.params = params;
                if !tip.topic.is_empty() {
                    cached.topic = tip.topic;
                }
            }
            None => session.push(
                key,
                CachedPartition {
                    seq: 0,
                    topic_id: tip.topic_id,
                    topic: tip.topic,
                    partition: tip.partition,
                    params,
                    high_watermark: -1,
                    local_log_start_offset: -1,
                },
            ),
        }
    }
    for topic in forgotten {
        for &partition in &topic.partitions {
            let key = if uses_topic_ids {
                PartKey::Id(topic.topic_id, partition)
            } else {
                PartKey::Name(topic.topic.clone(), partition)
            };
            session.remove(&key);
        }
    }
}
