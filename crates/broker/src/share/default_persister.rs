//! `DefaultStatePersister` (Kafka's `DefaultStatePersister` with its `PersisterStateManager`):
//! the [`Persister`] every share-partition leader and the group coordinator of this broker
//! reach the share coordinator through.
//!
//! A request is split by the share coordinator of each share partition (the leader of the
//! `__share_group_state` partition its key `"<group>:<topic id>:<partition>"` hashes to, as
//! Kafka maps it): the part this broker leads goes straight to its own
//! [`ShareCoordinatorService`], every other part to its leader over the inter-broker
//! listener, all at once. A share partition answered NOT_COORDINATOR,
//! COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS (the partition moving or
//! loading, the leader unreachable) is asked again, of the leader the metadata names then,
//! after a backoff that doubles from [`REQUEST_BACKOFF_MS`] up to [`REQUEST_BACKOFF_MAX_MS`],
//! at most [`MAX_ATTEMPTS`] times, as Kafka's `PersisterStateManager` retries (without its
//! jitter). A missing `__share_group_state` is asked of the controller, as FindCoordinator
//! does. Every share partition of the request is answered, each with its own error code.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kraftd_controller::MetadataImage;
use kraftd_coordinator::context::RequestContext;
use kraftd_coordinator::share::shard::kafka_message;
use kraftd_coordinator::share::{SharePartitionKey, SHARE_GROUP_STATE_TOPIC_NAME};
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::{
    DeleteShareGroupStateRequest, DeleteShareGroupStateResponse, InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse, ReadShareGroupStateRequest, ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateRequest, WriteShareGroupStateResponse,
};
use kraftd_protocol::{ErrorCode, Uuid};
use tracing::debug;

use super::persister::{Persister, PersisterFuture};
use super::state_api::ShareStateRequest;
use crate::coordinator::ShareCoordinatorService;
use crate::metadata::MetadataCache;
use crate::server::broker_channels::BrokerChannels;

/// Kafka's `PersisterStateManager.REQUEST_BACKOFF_MS`: the first retry's wait.
pub const REQUEST_BACKOFF_MS: u64 = 1_000;
/// Kafka's `REQUEST_BACKOFF_MAX_MS`.
pub const REQUEST_BACKOFF_MAX_MS: u64 = 30_000;
/// Kafka's `MAX_FIND_COORD_ATTEMPTS`: tries per share partition before its last error is
/// the answer.
pub const MAX_ATTEMPTS: u32 = 5;

/// Asks the controller for `__share_group_state` (the broker's internal-topic creation,
/// given once the broker's request context exists).
pub type CreateStateTopic = Box<dyn Fn(&MetadataImage) + Send + Sync>;

/// The broker's persister (see the module docs); cheap to clone.
#[derive(Clone)]
pub struct DefaultStatePersister {
    inner: Arc<Inner>,
}

struct Inner {
    node_id: i32,
    cache: MetadataCache,
    coordinator: Arc<ShareCoordinatorService>,
    brokers: BrokerChannels,
    create_state_topic: OnceLock<CreateStateTopic>,
}

impl std::fmt::Debug for DefaultStatePersister {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefaultStatePersister")
            .field("node_id", &self.inner.node_id)
            .finish()
    }
}

/// Whether Kafka's persister asks again after this answer.
fn retriable(code: i16) -> bool {
    code == ErrorCode::NotCoordinator.code()
        || code == ErrorCode::CoordinatorNotAvailable.code()
        || code == ErrorCode::CoordinatorLoadInProgress.code()
}

impl DefaultStatePersister {
    /// A persister for broker `node_id`: `coordinator` is this broker's share coordinator,
    /// `brokers` its channels to the other brokers' inter-broker listener.
    pub fn new(
        node_id: i32,
        cache: MetadataCache,
        coordinator: Arc<ShareCoordinatorService>,
        brokers: BrokerChannels,
    ) -> Self {
        DefaultStatePersister {
            inner: Arc::new(Inner {
                node_id,
                cache,
                coordinator,
                brokers,
                create_state_topic: OnceLock::new(),
            }),
        }
    }

    /// How a missing `__share_group_state` is asked for (set once; later calls are
    /// ignored).
    pub fn set_create_state_topic(&self, create: CreateStateTopic) {
        let _ = self.inner.create_state_topic.set(create);
    }

    fn run<R: ShareStateRequest>(&self, request: R) -> PersisterFuture<R::Response> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.run(request).await })
    }
}

impl Inner {
    async fn run<R: ShareStateRequest>(self: Arc<Self>, request: R) -> R::Response {
        let keys = request.keys();
        if request.group_id().is_empty() {
            return request.fail_all(ErrorCode::InvalidRequest, "Group id must be non-empty");
        }
        let mut answers: HashMap<(Uuid, i32), R::PartitionResult> = HashMap::new();
        let mut todo = keys.clone();
        let mut backoff_ms = REQUEST_BACKOFF_MS;
        for attempt in 1..=MAX_ATTEMPTS {
            let round = Arc::clone(&self).round(&request, &todo).await;
            todo.clear();
            for ((topic_id, partition), result) in round {
                if retriable(R::error_code(&result)) && attempt < MAX_ATTEMPTS {
                    todo.push((topic_id, partition));
                }
                answers.insert((topic_id, partition), result);
            }
            if todo.is_empty() {
                break;
            }
            debug!(api = ?R::API_KEY, pending = todo.len(), attempt, "share coordinator not ready; retrying");
            tokio::time::sleep(Duration::from_millis(backoff_ms)).await;
            backoff_ms = (backoff_ms * 2).min(REQUEST_BACKOFF_MAX_MS);
        }
        R::assemble(
            keys.into_iter()
                .map(|(t, p)| {
                    let answer = answers.remove(&(t, p)).unwrap_or_else(|| {
                        R::failed(
                            p,
                            ErrorCode::UnknownServerError,
                            format!("{}: no answer", R::FAILED),
                        )
                    });
                    (t, answer)
                })
                .collect(),
        )
    }

    /// One try of `keys`: every share partition's answer, failed ones included.
    async fn round<R: ShareStateRequest>(
        self: Arc<Self>,
        request: &R,
        keys: &[(Uuid, i32)],
    ) -> Vec<((Uuid, i32), R::PartitionResult)> {
        let failed = |code: ErrorCode, keys: &[(Uuid, i32)]| {
            keys.iter()
                .map(|&(t, p)| {
                    let message = format!("{}: {}", R::FAILED, kafka_message(code));
                    ((t, p), R::failed(p, code, message))
                })
                .collect::<Vec<_>>()
        };
        let image = self.cache.image();
        let Some(topic) = image.topics.get_by_name(SHARE_GROUP_STATE_TOPIC_NAME) else {
            if let Some(create) = self.create_state_topic.get() {
                create(&image);
            }
            return failed(ErrorCode::CoordinatorNotAvailable, keys);
        };
        let mut by_leader: HashMap<i32, Vec<(Uuid, i32)>> = HashMap::new();
        let mut out = Vec::with_capacity(keys.len());
        for &(topic_id, partition) in keys {
            let key = SharePartitionKey::new(request.group_id(), topic_id, partition);
            let coordinator = self.coordinator.partition_for_share(&key);
            match topic.partitions.get(&coordinator).map(|p| p.leader) {
                Some(leader) if leader >= 0 => by_leader
                    .entry(leader)
                    .or_default()
                    .push((topic_id, partition)),
                _ => out.extend(failed(
                    ErrorCode::CoordinatorNotAvailable,
                    &[(topic_id, partition)],
                )),
            }
        }
        let mut calls = Vec::with_capacity(by_leader.len());
        for (leader, part_keys) in by_leader {
            let part = request.only(&part_keys);
            let this = Arc::clone(&self);
            let address = (leader != self.node_id)
                .then(|| self.brokers.address(&image, leader))
                .flatten();
            if leader != self.node_id && address.is_none() {
                out.extend(failed(ErrorCode::CoordinatorNotAvailable, &part_keys));
                continue;
            }
            let call = tokio::spawn(async move {
                match address {
                    None => {
                        let ctx = RequestContext {
                            api_version: supported_range(R::API_KEY).max,
                            client_id: format!("share-persister-{}", this.node_id),
                            client_host: String::new(),
                        };
                        Some(this.coordinator.state_call(ctx, part).await)
                    }
                    Some(address) => {
                        let channel = this.brokers.channel(&address);
                        let version = supported_range(R::API_KEY).max;
                        match channel
                            .call(channel.next_correlation_id(), version, part.into_body())
                            .await
                        {
                            Ok(body) => R::from_body(body),
                            Err(e) => {
                                debug!(api = ?R::API_KEY, leader, error = %e, "share coordinator unreachable");
                                None
                            }
                        }
                    }
                }
            });
            calls.push((part_keys, call));
        }
        for (part_keys, call) in calls {
            match call.await.ok().flatten() {
                Some(response) => {
                    let mut answered = HashMap::new();
                    for (t, r) in R::results(response) {
                        answered.insert((t, R::partition(&r)), r);
                    }
                    for k in part_keys {
                        match answered.remove(&k) {
                            Some(r) => out.push((k, r)),
                            // An answer that leaves a share partition out: Kafka's
                            // service answers empty for an invalid request.
                            None => out.extend(failed(ErrorCode::UnknownServerError, &[k])),
                        }
                    }
                }
                None => out.extend(failed(ErrorCode::CoordinatorNotAvailable, &part_keys)),
            }
        }
        out
    }
}

impl Persister for DefaultStatePersister {
    fn initialize_state(
        &self,
        request: InitializeShareGroupStateRequest,
    ) -> PersisterFuture<InitializeShareGroupStateResponse> {
        self.run(request)
    }

    fn read_state(
        &self,
        request: ReadShareGroupStateRequest,
    ) -> PersisterFuture<ReadShareGroupStateResponse> {
        self.run(request)
    }

    fn write_state(
        &self,
        request: WriteShareGroupStateRequest,
    ) -> PersisterFuture<WriteShareGroupStateResponse> {
        self.run(request)
    }

    fn delete_state(
        &self,
        request: DeleteShareGroupStateRequest,
    ) -> PersisterFuture<DeleteShareGroupStateResponse> {
        self.run(request)
    }

    fn read_summary(
        &self,
        request: ReadShareGroupStateSummaryRequest,
    ) -> PersisterFuture<ReadShareGroupStateSummaryResponse> {
        self.run(request)
    }
}
