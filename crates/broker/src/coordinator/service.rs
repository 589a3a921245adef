//! A coordinator on the runtime, as the request handlers see it (Kafka's
//! `GroupCoordinatorService` and `TransactionCoordinator` share this shape): which
//! partition of the coordinator's topic owns a key, and calls into that partition's shard.
//! One generic service; `group.rs` and `transaction.rs` start it for their shard and add
//! what only that coordinator does.

use std::future::Future;
use std::sync::Arc;

use kraftd_coordinator::context::RequestContext;
use kraftd_coordinator::partitioner::partition_for;
use kraftd_coordinator::shard::CoordinatorShard;
use kraftd_protocol::ErrorCode;

use super::metrics::RuntimeMetrics;
use super::publisher::CoordinatorPublisher;
use super::runtime::{CoordinatorRuntime, RuntimeHandle, WorkHandler};
use crate::metadata::MetadataCache;
use crate::replica::replica_manager::ReplicaManager;

/// One coordinator's shards on this broker (see the module docs).
#[derive(Debug)]
pub struct CoordinatorService<S: CoordinatorShard> {
    runtime: RuntimeHandle<S>,
    config: Arc<S::Config>,
    cache: MetadataCache,
    metrics: Arc<RuntimeMetrics>,
}

impl<S: CoordinatorShard> CoordinatorService<S> {
    /// Starts the runtime (with `work` carrying out what the shards hand back, if any);
    /// the returned publisher must run after the ReplicaManager's.
    pub fn start(
        config: S::Config,
        node_id: i32,
        replica_manager: Arc<ReplicaManager>,
        cache: MetadataCache,
        work: Option<WorkHandler<S>>,
    ) -> (Arc<Self>, CoordinatorPublisher<S>) {
        let config = Arc::new(config);
        let metrics = Arc::new(RuntimeMetrics::new(S::METRICS_GROUP));
        let runtime = CoordinatorRuntime::<S>::start(
            Arc::clone(&config),
            replica_manager,
            Arc::clone(&metrics),
            work,
        );
        let publisher = CoordinatorPublisher::new(node_id, runtime.clone());
        let service = CoordinatorService {
            runtime,
            config,
            cache,
            metrics,
        };
        (Arc::new(service), publisher)
    }

    pub fn config(&self) -> &S::Config {
        &self.config
    }

    pub fn metrics(&self) -> &RuntimeMetrics {
        &self.metrics
    }

    pub(super) fn runtime(&self) -> &RuntimeHandle<S> {
        &self.runtime
    }

    /// The coordinator topic's partition count: the topic's own once it exists (so a
    /// changed setting never remaps keys), the configured one before.
    pub fn topic_partitions(&self) -> i32 {
        self.cache
            .image()
            .topics
            .get_by_name(S::TOPIC)
            .map(|t| t.partitions.len() as i32)
            .filter(|n| *n > 0)
            .unwrap_or_else(|| S::topic_partitions(&self.config))
    }

    /// The partition coordinating `key` (a group id, a transactional id).
    pub fn partition_for(&self, key: &str) -> i32 {
        partition_for(key, self.topic_partitions())
    }

    /// Runs `request` on the shard of `key`'s partition.
    pub async fn call(
        &self,
        key: &str,
        ctx: RequestContext,
        request: S::Request,
    ) -> Result<S::Response, ErrorCode> {
        self.call_partition(self.partition_for(key), ctx, request)
            .await
    }

    /// Runs `request` on one partition's shard.
    pub async fn call_partition(
        &self,
        partition: i32,
        ctx: RequestContext,
        request: S::Request,
    ) -> Result<S::Response, ErrorCode> {
        self.runtime.call_partition(partition, ctx, request).await
    }

    /// Queues `request` for one partition's shard now (sequenced: see
    /// [`RuntimeHandle::submit`]); its answer to come.
    pub fn submit_partition(
        &self,
        partition: i32,
        ctx: RequestContext,
        request: S::Request,
    ) -> impl Future<Output = Result<S::Response, ErrorCode>> + Send + 'static {
        self.runtime.submit(partition, ctx, request)
    }

    /// Runs `request` on every shard this broker serves; the answers, and whether some
    /// shard is still loading (ListGroups then reports COORDINATOR_LOAD_IN_PROGRESS).
    pub async fn broadcast(
        &self,
        request: S::Request,
    ) -> (Vec<Result<S::Response, ErrorCode>>, bool) {
        self.runtime.broadcast(request).await
    }
}
