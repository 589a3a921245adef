//! The group coordinator on the runtime (Kafka's `GroupCoordinatorService`): the group
//! shard as a [`CoordinatorShard`], and the service the request handlers call, which routes
//! each group to the shard of its `__consumer_offsets` partition.

use std::sync::Arc;

use bytes::Bytes;
use kraftd_protocol::codec::DecodeErrorKind;
use kraftd_protocol::ErrorCode;

use super::metrics::RuntimeMetrics;
use super::publisher::{CoordinatorPublisher, GROUP_METADATA_TOPIC_NAME};
use super::runtime::{CoordinatorRuntime, RuntimeHandle};
use super::shard::{CoordinatorOutput, CoordinatorShard, Gauge, OutputBatch, ReplayFailure};
use crate::group_coordinator::shard::RequestContext;
use crate::group_coordinator::{
    partition_for, CoordinatorRecord, GroupCoordinatorConfig, GroupCoordinatorShard, ReplyId,
    ShardRequest, ShardResponse, TopicMetadata,
};
use crate::metadata::MetadataCache;
use crate::replica::replica_manager::ReplicaManager;

impl CoordinatorShard for GroupCoordinatorShard {
    type Config = GroupCoordinatorConfig;
    type Request = ShardRequest;
    type Response = ShardResponse;
    type Work = ();

    const TOPIC: &'static str = GROUP_METADATA_TOPIC_NAME;
    const METRICS_GROUP: &'static str = "group-coordinator-metrics";

    fn new(
        partition: i32,
        _leader_epoch: i32,
        config: Arc<GroupCoordinatorConfig>,
        topics: Arc<dyn TopicMetadata>,
    ) -> Self {
        GroupCoordinatorShard::new(partition, config, topics)
    }

    fn replay(
        &mut self,
        offset: i64,
        producer: Option<(i64, i16)>,
        key: Bytes,
        value: Option<Bytes>,
    ) -> Result<(), ReplayFailure> {
        let record = CoordinatorRecord::decode(key, value).map_err(|e| {
            if matches!(e.kind, DecodeErrorKind::UnknownApiKey(_)) {
                ReplayFailure::UnknownType(e.to_string())
            } else {
                ReplayFailure::Corrupt(e.to_string())
            }
        })?;
        let producer_id = producer.map_or(-1, |(id, _)| id);
        GroupCoordinatorShard::replay(self, offset, producer_id, record)
            .map_err(|e| ReplayFailure::Corrupt(e.to_string()))
    }

    fn replay_end_txn(&mut self, _offset: i64, producer_id: i64, commit: bool) {
        self.complete_transaction(producer_id, commit)
    }

    fn on_loaded(&mut self, now_ms: i64) {
        GroupCoordinatorShard::on_loaded(self, now_ms)
    }

    fn on_metadata_update(&mut self, topics: Arc<dyn TopicMetadata>) {
        GroupCoordinatorShard::on_metadata_update(self, topics)
    }

    fn handle(&mut self, now_ms: i64, ctx: &RequestContext, reply: ReplyId, request: ShardRequest) {
        GroupCoordinatorShard::handle(self, now_ms, ctx, reply, request)
    }

    fn on_timeout(&mut self, now_ms: i64) {
        GroupCoordinatorShard::on_timeout(self, now_ms)
    }

    fn next_deadline(&self) -> Option<i64> {
        GroupCoordinatorShard::next_deadline(self)
    }

    fn take_output(&mut self) -> CoordinatorOutput<ShardResponse, ()> {
        let out = GroupCoordinatorShard::take_output(self);
        let encode = |producer: Option<(i64, i16)>, records: &[CoordinatorRecord]| {
            let mut batch = OutputBatch {
                producer,
                records: Vec::with_capacity(records.len()),
            };
            for r in records {
                match r.encode() {
                    Ok(kv) => batch.records.push(kv),
                    // The shard checked each record's encoding when it wrote it.
                    Err(e) => debug_assert!(false, "a written record does not encode: {e}"),
                }
            }
            batch
        };
        let mut batches = vec![encode(None, &out.records)];
        for (producer, records) in &out.txn_records {
            batches.push(encode(Some(*producer), records));
        }
        CoordinatorOutput {
            batches,
            replies: out.replies,
            work: Vec::new(),
        }
    }

    fn gauges(&self) -> Vec<Gauge> {
        let mut out = vec![
            ("group_count", vec![("protocol", "classic".into())], 0),
            ("group_count", vec![("protocol", "consumer".into())], 0),
        ];
        for ((kind, state), n) in self.group_counts() {
            let n = n as u64;
            let protocol = if kind == "classic" { 0 } else { 1 };
            out[protocol].2 += n;
            let name = if kind == "classic" {
                "classic_group_count"
            } else {
                "consumer_group_count"
            };
            out.push((name, vec![("state", state.to_ascii_lowercase())], n));
        }
        out.push(("num_offsets", Vec::new(), self.offsets_count() as u64));
        out
    }

    fn take_counters(&mut self) -> Vec<(&'static str, u64)> {
        let s = self.take_stats();
        vec![
            ("offset_commit_count", s.offset_commits),
            ("offset_deletion_count", s.offset_deletions),
            ("group_completed_rebalance_count", s.classic_rebalances),
            ("consumer_group_rebalance_count", s.consumer_rebalances),
        ]
    }
}

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
