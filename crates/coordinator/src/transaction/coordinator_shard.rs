//! The transaction shard as a [`CoordinatorShard`]: what the runtime drives (records
//! decoded on replay and encoded on output, the marker work, the metrics it reports).

use std::sync::Arc;

use bytes::Bytes;

use crate::context::{ReplyId, RequestContext, TopicMetadata};
use crate::shard::{CoordinatorOutput, CoordinatorShard, Gauge, OutputBatch, ReplayFailure};
use crate::transaction::{
    MarkerRequest, TransactionCoordinatorConfig, TransactionCoordinatorShard, TransactionRecord,
    TxnShardRequest, TxnShardResponse,
};

/// The transaction coordinator's topic.
pub const TRANSACTION_STATE_TOPIC_NAME: &str = "__transaction_state";
pub use kraftd_protocol::features::TRANSACTION_VERSION_FEATURE;

impl CoordinatorShard for TransactionCoordinatorShard {
    type Config = TransactionCoordinatorConfig;
    type Request = TxnShardRequest;
    type Response = TxnShardResponse;
    type Work = MarkerRequest;

    const TOPIC: &'static str = TRANSACTION_STATE_TOPIC_NAME;
    const METRICS_GROUP: &'static str = "transaction-coordinator-metrics";
    const WALL_CLOCK: bool = true;

    fn topic_partitions(config: &Self::Config) -> i32 {
        config.state_log_partitions
    }

    fn new(
        partition: i32,
        leader_epoch: i32,
        config: Arc<TransactionCoordinatorConfig>,
        topics: Arc<dyn TopicMetadata>,
    ) -> Self {
        let mut shard = TransactionCoordinatorShard::new(partition, config, leader_epoch);
        // The cluster's finalized transaction.version decides the record format and
        // whether a fenced producer's epoch is bumped twice (TV2).
        shard.set_transaction_version_level(topics.feature_level(TRANSACTION_VERSION_FEATURE));
        shard
    }

    fn replay(
        &mut self,
        offset: i64,
        producer: Option<(i64, i16)>,
        key: Bytes,
        value: Option<Bytes>,
    ) -> Result<(), ReplayFailure> {
        let record = TransactionRecord::decode(key, value).map_err(ReplayFailure::from_decode)?;
        TransactionCoordinatorShard::replay(self, offset, producer.map_or(-1, |p| p.0), record)
    }

    fn replay_end_txn(&mut self, _offset: i64, _producer_id: i64, _commit: bool) {}

    fn on_loaded(&mut self, now_ms: i64) {
        TransactionCoordinatorShard::on_loaded(self, now_ms)
    }

    fn on_metadata_update(&mut self, topics: Arc<dyn TopicMetadata>) {
        self.set_transaction_version_level(topics.feature_level(TRANSACTION_VERSION_FEATURE));
    }

    fn handle(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        reply: ReplyId,
        request: TxnShardRequest,
    ) {
        TransactionCoordinatorShard::handle(self, now_ms, ctx, reply, request)
    }

    fn on_timeout(&mut self, now_ms: i64) {
        TransactionCoordinatorShard::on_timeout(self, now_ms)
    }

    fn next_deadline(&self) -> Option<i64> {
        TransactionCoordinatorShard::next_deadline(self)
    }

    fn take_output(&mut self) -> CoordinatorOutput<TxnShardResponse, MarkerRequest> {
        let out = TransactionCoordinatorShard::take_output(self);
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
            work: out.markers,
        }
    }

    fn gauges(&self) -> Vec<Gauge> {
        vec![(
            "transaction_count",
            Vec::new(),
            self.transaction_count() as u64,
        )]
    }
}
