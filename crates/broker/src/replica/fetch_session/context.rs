//! [`FetchContext`]: one fetch request's view of its session (Kafka's `FetchContext`
//! kinds: sessionless, full, incremental, error), from `new_context` to the response it
//! builds and the session it creates or updates.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use kraftd_protocol::codec::Encoder;
use kraftd_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kraftd_protocol::messages::FetchResponse;
use kraftd_protocol::{ErrorCode, Message};

use super::{
    has_records, lock, next_epoch, refresh_name, session_key, Cache, CachedPartition, PartKey,
    PartitionFetchParams, Session, SessionWatch, TopicRef, INITIAL_EPOCH, INVALID_SESSION_ID,
};
use crate::replica::TopicIdPartition;

#[derive(Debug)]
pub(super) enum Kind {
    Error {
        error: ErrorCode,
    },
    Sessionless {
        partitions: Vec<(TopicIdPartition, PartitionFetchParams)>,
        unresolved: Vec<(TopicIdPartition, PartitionFetchParams, ErrorCode)>,
    },
    Full {
        partitions: Vec<(TopicIdPartition, PartitionFetchParams)>,
        unresolved: Vec<(TopicIdPartition, PartitionFetchParams, ErrorCode)>,
        uses_topic_ids: bool,
        is_follower: bool,
        /// The watch of the session this request creates: the partitions register with it
        /// as they are read, so no change after the read is missed.
        watch: Arc<SessionWatch>,
    },
    Incremental {
        session_id: i32,
        request_epoch: i32,
        partitions: Vec<(TopicIdPartition, PartitionFetchParams)>,
        unresolved: Vec<(TopicIdPartition, PartitionFetchParams, ErrorCode)>,
        watch: Arc<SessionWatch>,
    },
}

/// One request's view of its session, from `new_context` to the response; it holds no lock,
/// so the caller may read logs (and wait for data) between the two calls.
#[derive(Debug)]
pub struct FetchContext {
    pub(super) cache: Arc<Mutex<Cache>>,
    pub(super) kind: Kind,
    /// An error found only when the response is built: another request on the same session
    /// got there first (Kafka's "possible duplicate request"), or the session was evicted.
    pub(super) late_error: Mutex<Option<ErrorCode>>,
}

impl FetchContext {
    /// The whole-request error to answer with, if any. Check it again after
    /// `update_and_generate_response`: a concurrent request on the same session can
    /// invalidate this one in between, and the answer is then this error with no partitions.
    #[must_use]
    pub fn error(&self) -> Option<ErrorCode> {
        if let Kind::Error { error } = self.kind {
            return Some(error);
        }
        *self
            .late_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the response will leave out unchanged partitions; a caller sizing its reads
    /// can use `would_include` only then.
    #[must_use]
    pub fn is_incremental(&self) -> bool {
        matches!(self.kind, Kind::Incremental { .. })
    }

    /// The session's change watch: the partitions read register with it, and a waiting
    /// fetch wakes on it. `None` without a session.
    #[must_use]
    pub fn watch(&self) -> Option<Arc<SessionWatch>> {
        match &self.kind {
            Kind::Full { watch, .. } | Kind::Incremental { watch, .. } => Some(Arc::clone(watch)),
            _ => None,
        }
    }

    /// For an incremental request waiting for data: the session's partitions that changed
    /// since it was planned (or since the last call), resolvable ones only, to read as well.
    #[must_use]
    pub fn take_news(
        &self,
        resolve: &dyn Fn(TopicRef) -> Option<(kraftd_protocol::Uuid, String)>,
    ) -> Vec<(TopicIdPartition, PartitionFetchParams)> {
        let Kind::Incremental {
            session_id, watch, ..
        } = &self.kind
        else {
            return Vec::new();
        };
        let changed = watch.take();
        if changed.is_empty() {
            return Vec::new();
        }
        let cache = lock(&self.cache);
        let Some(session) = cache.sessions.get(session_id) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for tp in changed {
            let Some(key) = session_key(session, &tp) else {
                continue;
            };
            let p = &session.partitions[&key];
            let (tip, known) = refresh_name(p, session.uses_topic_ids, resolve);
            if known {
                out.push((tip, p.params.clone()));
            }
        }
        out
    }

    /// Every resolvable partition to read, in the session's order (for an incremental request:
    /// those named, changed, unresolved, or all of them when a full scan is due).
    #[must_use]
    pub fn partitions(&self) -> Vec<(TopicIdPartition, PartitionFetchParams)> {
        match &self.kind {
            Kind::Error { .. } => Vec::new(),
            Kind::Sessionless { partitions, .. }
            | Kind::Full { partitions, .. }
            | Kind::Incremental { partitions, .. } => partitions.clone(),
        }
    }

    /// Partitions whose topic does not resolve, with the error that answers them. They stay in
    /// the session; `update_and_generate_response` answers them itself unless given results.
    #[must_use]
    pub fn unresolved(&self) -> Vec<(TopicIdPartition, ErrorCode)> {
        match &self.kind {
            Kind::Error { .. } => Vec::new(),
            Kind::Sessionless { unresolved, .. }
            | Kind::Full { unresolved, .. }
            | Kind::Incremental { unresolved, .. } => {
                unresolved.iter().map(|(t, _, e)| (t.clone(), *e)).collect()
            }
        }
    }

    /// Whether `data` for `tip` would be in the response, without changing the session: lets
    /// the caller count only returned partitions against the response's `max_bytes`.
    #[must_use]
    pub fn would_include(&self, tip: &TopicIdPartition, data: &PartitionData) -> bool {
        let Kind::Incremental { session_id, .. } = &self.kind else {
            return !matches!(self.kind, Kind::Error { .. });
        };
        let cache = lock(&self.cache);
        let Some(session) = cache.sessions.get(session_id) else {
            return true;
        };
        match session
            .partitions
            .get(&PartKey::of(tip, session.uses_topic_ids))
        {
            Some(cached) => cached.clone().must_respond(data, false),
            None => true,
        }
    }

    /// Records what the fetcher is about to be told and returns the response's session id and
    /// topics, grouped per consecutive topic in result order as Kafka's `FetchResponse.of`
    /// does. An incremental session returns only partitions with records, an error, a
    /// diverging epoch, a preferred replica, or a high watermark / log start offset that
    /// changed; a full one returns all, and creates its session here, from exactly the
    /// partitions answered. Unresolved partitions missing from `results` are answered with
    /// their error (after the others).
    /// Topics carry both name and id; `version` does not change the result because the codec
    /// writes only the one the version has.
    pub fn update_and_generate_response(
        &self,
        version: i16,
        results: Vec<(TopicIdPartition, PartitionData)>,
        now_ms: i64,
    ) -> (i32, Vec<FetchableTopicResponse>) {
        let _ = version;
        let results = self.with_unresolved(results);
        match &self.kind {
            Kind::Error { .. } => (INVALID_SESSION_ID, Vec::new()),
            Kind::Sessionless { .. } => (INVALID_SESSION_ID, group(results)),
            Kind::Full {
                partitions,
                unresolved,
                uses_topic_ids,
                is_follower,
                watch,
            } => {
                let id = self.create_session(
                    partitions,
                    unresolved,
                    *uses_topic_ids,
                    *is_follower,
                    watch,
                    &results,
                    now_ms,
                );
                (id, group(results))
            }
            Kind::Incremental {
                session_id,
                request_epoch,
                ..
            } => {
                let mut cache = lock(&self.cache);
                let Some(session) = cache.sessions.get_mut(session_id) else {
                    drop(cache);
                    self.set_late_error(ErrorCode::FetchSessionIdNotFound);
                    return (INVALID_SESSION_ID, Vec::new());
                };
                if session.epoch != next_epoch(*request_epoch) {
                    let id = session.id;
                    drop(cache);
                    self.set_late_error(ErrorCode::InvalidFetchSessionEpoch);
                    return (id, Vec::new());
                }
                let uses_topic_ids = session.uses_topic_ids;
                let mut kept = Vec::with_capacity(results.len());
                for (tip, data) in results {
                    let key = PartKey::of(&tip, uses_topic_ids);
                    let include = match session.partitions.get_mut(&key) {
                        Some(cached) => cached.must_respond(&data, true),
                        None => true,
                    };
                    if include {
                        if has_records(&data) {
                            session.move_to_back(&key);
                        }
                        kept.push((tip, data));
                    }
                }
                (*session_id, group(kept))
            }
        }
    }

    /// Kafka's `getResponseSize`: the encoded size of the response `results` would make
    /// (an incremental session's unchanged partitions left out), the session unchanged. A
    /// consumer's fetch quota counts it.
    #[must_use]
    pub fn response_size(
        &self,
        version: i16,
        results: &[(TopicIdPartition, PartitionData)],
    ) -> usize {
        if matches!(self.kind, Kind::Error { .. }) {
            return 0;
        }
        let included: Vec<_> = results
            .iter()
            .filter(|(tip, data)| self.would_include(tip, data))
            .cloned()
            .collect();
        let response = FetchResponse {
            responses: group(included),
            ..FetchResponse::default()
        };
        let mut encoder = Encoder::new();
        match response.encode(&mut encoder, version) {
            // The size prefix and the correlation id of the response header besides.
            Ok(()) => encoder.len() + 8,
            Err(_) => 0,
        }
    }

    /// Kafka's `getThrottledResponse`: what a throttled consumer is answered instead of
    /// its data — no partitions, the session as it was (a full fetch creates none, so the
    /// client starts over), or INVALID_FETCH_SESSION_EPOCH when another request on the
    /// session got there first. The session id and the error, if any.
    #[must_use]
    pub fn throttled_response(&self) -> (i32, Option<ErrorCode>) {
        match &self.kind {
            Kind::Error { error } => (INVALID_SESSION_ID, Some(*error)),
            Kind::Sessionless { .. } | Kind::Full { .. } => (INVALID_SESSION_ID, None),
            Kind::Incremental {
                session_id,
                request_epoch,
                ..
            } => match lock(&self.cache).sessions.get(session_id) {
                Some(session) if session.epoch == next_epoch(*request_epoch) => (*session_id, None),
                Some(_) => (*session_id, Some(ErrorCode::InvalidFetchSessionEpoch)),
                None => (INVALID_SESSION_ID, Some(ErrorCode::FetchSessionIdNotFound)),
            },
        }
    }

    fn set_late_error(&self, error: ErrorCode) {
        *self
            .late_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(error);
    }

    fn with_unresolved(
        &self,
        mut results: Vec<(TopicIdPartition, PartitionData)>,
    ) -> Vec<(TopicIdPartition, PartitionData)> {
        let unresolved = match &self.kind {
            Kind::Error { .. } => return results,
            Kind::Sessionless { unresolved, .. }
            | Kind::Full { unresolved, .. }
            | Kind::Incremental { unresolved, .. } => unresolved,
        };
        if unresolved.is_empty() {
            return results;
        }
        let answered: std::collections::HashSet<TopicIdPartition> =
            results.iter().map(|(t, _)| t.clone()).collect();
        for (tip, _, error) in unresolved {
            if !answered.contains(tip) {
                results.push((tip.clone(), error_data(tip.partition, *error)));
            }
        }
        results
    }

    fn create_session(
        &self,
        partitions: &[(TopicIdPartition, PartitionFetchParams)],
        unresolved: &[(TopicIdPartition, PartitionFetchParams, ErrorCode)],
        uses_topic_ids: bool,
        privileged: bool,
        watch: &Arc<SessionWatch>,
        results: &[(TopicIdPartition, PartitionData)],
        now_ms: i64,
    ) -> i32 {
        let mut cache = lock(&self.cache);
        if cache.sessions.len() >= cache.max_slots
            && !cache.try_evict(privileged, results.len(), now_ms)
        {
            return INVALID_SESSION_ID;
        }
        let params: HashMap<PartKey, &PartitionFetchParams> = partitions
            .iter()
            .map(|(t, p)| (PartKey::of(t, uses_topic_ids), p))
            .chain(
                unresolved
                    .iter()
                    .map(|(t, p, _)| (PartKey::of(t, uses_topic_ids), p)),
            )
            .collect();
        let id = cache.new_session_id();
        let mut session = Session {
            id,
            privileged,
            uses_topic_ids,
            creation_ms: now_ms,
            last_used_ms: now_ms,
            epoch: next_epoch(INITIAL_EPOCH),
            cached_size: None,
            next_seq: 0,
            partitions: HashMap::new(),
            order: BTreeMap::new(),
            watch: Arc::clone(watch),
            unresolved: unresolved
                .iter()
                .map(|(t, _, _)| PartKey::of(t, uses_topic_ids))
                .collect(),
            last_full_scan_ms: now_ms,
        };
        for (tip, data) in results {
            let key = PartKey::of(tip, uses_topic_ids);
            let params = params.get(&key).map_or_else(
                || PartitionFetchParams {
                    fetch_offset: 0,
                    log_start_offset: -1,
                    max_bytes: 0,
                    current_leader_epoch: -1,
                    last_fetched_epoch: -1,
                    high_watermark: i64::MAX,
                },
                |p| (*p).clone(),
            );
            session.remove(&key);
            session.push(
                key,
                CachedPartition {
                    seq: 0,
                    topic_id: tip.topic_id,
                    topic: tip.topic.clone(),
                    partition: tip.partition,
                    params,
                    high_watermark: data.high_watermark,
                    local_log_start_offset: data.log_start_offset,
                },
            );
        }
        cache.sessions.insert(id, session);
        cache.touch(id, now_ms);
        id
    }
}

/// The answer for a partition that was never read.
fn error_data(partition: i32, error: ErrorCode) -> PartitionData {
    PartitionData {
        partition_index: partition,
        error_code: error.code(),
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        records: None,
        ..PartitionData::default()
    }
}

fn group(results: Vec<(TopicIdPartition, PartitionData)>) -> Vec<FetchableTopicResponse> {
    let mut out: Vec<FetchableTopicResponse> = Vec::new();
    for (tip, mut data) in results {
        data.partition_index = tip.partition;
        match out.last_mut() {
            Some(last) if last.topic == tip.topic && last.topic_id == tip.topic_id => {
                last.partitions.push(data);
            }
            _ => out.push(FetchableTopicResponse {
                topic: tip.topic,
                topic_id: tip.topic_id,
                partitions: vec![data],
                ..FetchableTopicResponse::default()
            }),
        }
    }
    out
}
