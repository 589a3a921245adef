//! The share shard as a [`CoordinatorShard`]: what the runtime drives (records decoded on
//! replay and encoded on output, the metrics it reports).

use std::sync::Arc;

use bytes::Bytes;

use crate::context::{ReplyId, RequestContext, TopicMetadata};
use crate::shard::{CoordinatorOutput, CoordinatorShard, Gauge, OutputBatch, ReplayFailure};

use super::shard::ShareWork;
use super::{
    ShareCoordinatorConfig, ShareCoordinatorRecord, ShareCoordinatorShard, ShareShardRequest,
    ShareShardResponse,
};

/// The share coordinator's topic.
pub const SHARE_GROUP_STATE_TOPIC_NAME: &str = "__share_group_state";
pub use kraftd_protocol::features::SHARE_VERSION_FEATURE;

impl CoordinatorShard for ShareCoordinatorShard {
    type Config = ShareCoordinatorConfig;
    type Request = ShareShardRequest;
    type Response = ShareShardResponse;
    type Work = ShareWork;

    const TOPIC: &'static str = SHARE_GROUP_STATE_TOPIC_NAME;
    const METRICS_GROUP: &'static str = "share-coordinator-metrics";

    fn topic_partitions(config: &Self::Config) -> i32 {
        config.state_topic_partitions
    }

    fn new(
        partition: i32,
        _leader_epoch: i32,
        config: Arc<ShareCoordinatorConfig>,
        topics: Arc<dyn TopicMetadata>,
    ) -> Self {
        let mut shard = ShareCoordinatorShard::new(partition, config);
        shard.on_metadata_update(topics);
        shard
    }

    fn replay(
        &mut self,
        offset: i64,
        _producer: Option<(i64, i16)>,
        key: Bytes,
        value: Option<Bytes>,
    ) -> Result<(), ReplayFailure> {
        let record =
            ShareCoordinatorRecord::decode(key, value).map_err(ReplayFailure::from_decode)?;
        ShareCoordinatorShard::replay(self, Some(offset), &record)
    }

    fn replay_end_txn(&mut self, _offset: i64, _producer_id: i64, _commit: bool) {}

    fn on_appended(&mut self, base_offset: i64) {
        ShareCoordinatorShard::on_appended(self, base_offset)
    }

    fn on_loaded(&mut self, now_ms: i64) {
        ShareCoordinatorShard::on_loaded(self, now_ms)
    }

    fn on_metadata_update(&mut self, topics: Arc<dyn TopicMetadata>) {
        ShareCoordinatorShard::on_metadata_update(self, topics)
    }

    fn handle(
        &mut self,
        now_ms: i64,
        _ctx: &RequestContext,
        reply: ReplyId,
        request: ShareShardRequest,
    ) {
        ShareCoordinatorShard::handle(self, now_ms, reply, request)
    }

    fn on_timeout(&mut self, now_ms: i64) {
        ShareCoordinatorShard::on_timeout(self, now_ms)
    }

    fn next_deadline(&self) -> Option<i64> {
        ShareCoordinatorShard::next_deadline(self)
    }

    fn take_output(&mut self) -> CoordinatorOutput<ShareShardResponse, ShareWork> {
        let out = ShareCoordinatorShard::take_output(self);
        let mut batch = OutputBatch::default();
        for r in &out.records {
            match r.encode() {
                Ok(kv) => batch.records.push(kv),
                Err(e) => debug_assert!(false, "a written record does not encode: {e}"),
            }
        }
        CoordinatorOutput {
            batches: vec![batch],
            replies: out.replies,
            work: out.work,
        }
    }

    fn gauges(&self) -> Vec<Gauge> {
        vec![(
            "share_partition_count",
            Vec::new(),
            self.share_partition_count() as u64,
        )]
    }

    /// Kafka's `write-total` of `share-coordinator-metrics` (the scraper derives
    /// `write-rate`).
    fn take_counters(&mut self) -> Vec<(&'static str, u64)> {
        vec![("write_total", self.take_write_count())]
    }
}
