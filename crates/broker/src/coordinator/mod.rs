//! The group coordinator on the broker (Kafka's `GroupCoordinatorService`): routes each
//! group's requests to the shard of its `__consumer_offsets` partition, which this broker
//! serves while it leads that partition.
//!
//! - [`runtime`]: the event loop owning the shards (load, write, commit, timers);
//! - [`loader`]: replaying a partition's log into a shard;
//! - [`publisher`]: leadership of the offsets topic's partitions, from committed metadata;
//! - [`metrics`]: the `group-coordinator-metrics` group.
//!
//! The protocol state machines are the sans-IO [`crate::group_coordinator`]; the
//! request handlers that shape each API's versions are `server/group_apis.rs`.

pub mod loader;
pub mod metrics;
pub mod publisher;
pub mod runtime;

use std::sync::Arc;

use crate::group_coordinator::shard::{NoTopics, RequestContext};
use crate::group_coordinator::{
    partition_for, GroupCoordinatorConfig, ShardRequest, ShardResponse, TopicMetadata,
};
use kraftd_protocol::ErrorCode;
use tokio::sync::{mpsc, oneshot};

use self::metrics::CoordinatorMetrics;
use self::publisher::{GroupCoordinatorPublisher, GROUP_METADATA_TOPIC_NAME};
use self::runtime::{CoordinatorRuntime, Event};
use crate::metadata::MetadataCache;
use crate::replica::replica_manager::ReplicaManager;

/// The broker's group coordinator (see the module docs).
#[derive(Debug)]
pub struct GroupCoordinatorService {
    events: mpsc::UnboundedSender<Event>,
    config: Arc<GroupCoordinatorConfig>,
    cache: MetadataCache,
    metrics: Arc<CoordinatorMetrics>,
}

impl GroupCoordinatorService {
    /// Starts the runtime; the returned publisher must run after the ReplicaManager's.
    pub fn start(
        config: GroupCoordinatorConfig,
        node_id: i32,
        replica_manager: Arc<ReplicaManager>,
        cache: MetadataCache,
    ) -> (Arc<GroupCoordinatorService>, GroupCoordinatorPublisher) {
        let config = Arc::new(config);
        let (tx, rx) = mpsc::unbounded_channel();
        let metrics = Arc::new(CoordinatorMetrics::default());
        let no_topics: Arc<dyn TopicMetadata> = Arc::new(NoTopics);
        let runtime = CoordinatorRuntime::new(
            Arc::clone(&config),
            replica_manager,
            no_topics,
            tx.clone(),
            Arc::clone(&metrics),
        );
        tokio::spawn(runtime.run(rx));
        let publisher = GroupCoordinatorPublisher::new(node_id, tx.clone());
        (
            Arc::new(GroupCoordinatorService {
                events: tx,
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

    pub fn metrics(&self) -> &CoordinatorMetrics {
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
        let (respond, rx) = oneshot::channel();
        self.events
            .send(Event::Request {
                partition,
                ctx,
                request,
                respond,
            })
            .map_err(|_| ErrorCode::CoordinatorNotAvailable)?;
        rx.await.unwrap_or(Err(ErrorCode::CoordinatorNotAvailable))
    }

    /// Runs `request` on every shard this broker serves; the answers, and whether some
    /// shard is still loading (ListGroups then reports COORDINATOR_LOAD_IN_PROGRESS).
    pub async fn broadcast(
        &self,
        request: ShardRequest,
    ) -> (Vec<Result<ShardResponse, ErrorCode>>, bool) {
        let (respond, rx) = oneshot::channel();
        if self
            .events
            .send(Event::Broadcast { request, respond })
            .is_err()
        {
            return (vec![Err(ErrorCode::CoordinatorNotAvailable)], false);
        }
        let Ok((receivers, loading)) = rx.await else {
            return (vec![Err(ErrorCode::CoordinatorNotAvailable)], false);
        };
        let mut answers = Vec::with_capacity(receivers.len());
        for r in receivers {
            answers.push(r.await.unwrap_or(Err(ErrorCode::CoordinatorNotAvailable)));
        }
        (answers, loading)
    }
}
