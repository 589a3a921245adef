//! The group coordinator on the runtime (Kafka's `GroupCoordinatorService`): the service the
//! request handlers call, which routes each group to the shard of its `__consumer_offsets`
//! partition.

use std::sync::Arc;

use kraftd_protocol::ErrorCode;

use super::metrics::RuntimeMetrics;
use super::publisher::CoordinatorPublisher;
use super::runtime::{CoordinatorRuntime, RuntimeHandle};
use crate::metadata::MetadataCache;
use crate::replica::replica_manager::ReplicaManager;
use kraftd_coordinator::context::RequestContext;
use kraftd_coordinator::group::{
    partition_for, GroupCoordinatorConfig, GroupCoordinatorShard, ShardRequest, ShardResponse,
    GROUP_METADATA_TOPIC_NAME,
};
use kraftd_coordinator::shard::CoordinatorShard;

/// The broker's group coordinator (see the module docs).
#[derive(Debug)]
pub struct GroupCoordinatorService {
    runtime: RuntimeHandle<GroupCoordinatorShard>,
    config: Arc<GroupCoordinatorConfig>,
    cache: MetadataCache,
    metrics: Arc<RuntimeMetrics>,
}

impl GroupCoordinatorService {
    /// Starts the runtime; the returned publisher must run after the ReplicaManager's.
    pub fn start(
        config: GroupCoordinatorConfig,
        node_id: i32,
        replica_manager: Arc<ReplicaManager>,
        cache: MetadataCache,
    ) -> (
        Arc<GroupCoordinatorService>,
        CoordinatorPublisher<GroupCoordinatorShard>,
    ) {
        let config = Arc::new(config);
        let metrics = Arc::new(RuntimeMetrics::new(GroupCoordinatorShard::METRICS_GROUP));
        let runtime = CoordinatorRuntime::<GroupCoordinatorShard>::start(
            Arc::clone(&config),
            replica_manager,
            Arc::clone(&metrics),
            None,
        );
        let publisher = CoordinatorPublisher::new(node_id, runtime.clone());
        (
            Arc::new(GroupCoordinatorService {
                runtime,
                config,
                cache,
                metrics,
            }),
            publisher,
        )
    }

    pub fn config(&self) -> &GroupCoordinatorConfig {
        &self.config
    }

    pub fn metrics(&self) -> &RuntimeMetrics {
        &self.metrics
    }

    /// The offsets topic's partition count: the topic's own once it exists (so a changed
    /// setting never remaps groups), `offsets.topic.num.partitions` before.
    pub fn offsets_partitions(&self) -> i32 {
        self.cache
            .image()
            .topics
            .get_by_name(GROUP_METADATA_TOPIC_NAME)
            .map(|t| t.partitions.len() as i32)
            .filter(|n| *n > 0)
            .unwrap_or(self.config.offsets_topic_partitions)
    }

    /// The partition coordinating `group_id`.
    pub fn partition_for(&self, group_id: &str) -> i32 {
        partition_for(group_id, self.offsets_partitions())
    }

    /// Runs `request` on the shard of `group_id`'s partition.
    pub async fn call(
        &self,
        group_id: &str,
        ctx: RequestContext,
        request: ShardRequest,
    ) -> Result<ShardResponse, ErrorCode> {
        self.call_partition(self.partition_for(group_id), ctx, request)
            .await
    }

    /// Runs `request` on one partition's shard.
    pub async fn call_partition(
        &self,
        partition: i32,
        ctx: RequestContext,
        request: ShardRequest,
    ) -> Result<ShardResponse, ErrorCode> {
        self.runtime.call_partition(partition, ctx, request).await
    }

    /// Queues `request` for one partition's shard now (sequenced: see
    /// [`RuntimeHandle::submit`](super::runtime::RuntimeHandle::submit)); its answer to come.
    pub fn submit_partition(
        &self,
        partition: i32,
        ctx: RequestContext,
        request: ShardRequest,
    ) -> impl std::future::Future<Output = Result<ShardResponse, ErrorCode>> + Send + 'static {
        self.runtime.submit(partition, ctx, request)
    }

    /// A transaction marker landed on `__consumer_offsets-<partition>` here: the
    /// producer's pending offsets there become committed or are dropped (Kafka's
    /// `onTransactionCompleted`). Loading replays the marker too, so a shard that is not
    /// loaded yet misses nothing.
    pub fn complete_transaction(&self, partition: i32, producer_id: i64, commit: bool) {
        self.runtime.run_on(
            partition,
            -1,
            Box::new(move |shard, _now| shard.complete_transaction(producer_id, commit)),
        );
    }

    /// Runs `request` on every shard this broker serves; the answers, and whether some
    /// shard is still loading (ListGroups then reports COORDINATOR_LOAD_IN_PROGRESS).
    pub async fn broadcast(
        &self,
        request: ShardRequest,
    ) -> (Vec<Result<ShardResponse, ErrorCode>>, bool) {
        self.runtime.broadcast(request).await
    }
}
