//! The group shard as a [`CoordinatorShard`]: what the runtime drives (records decoded on
//! replay and encoded on output, the metrics it reports).

use std::sync::Arc;

use bytes::Bytes;

use crate::context::{ReplyId, RequestContext, TopicMetadata, GROUP_METADATA_TOPIC_NAME};
use crate::group::{
    CoordinatorRecord, GroupCoordinatorConfig, GroupCoordinatorShard, GroupWork, ShardRequest,
    ShardResponse,
};
use crate::shard::{CoordinatorOutput, CoordinatorShard, Gauge, OutputBatch, ReplayFailure};

impl CoordinatorShard for GroupCoordinatorShard {
    type Config = GroupCoordinatorConfig;
    type Request = ShardRequest;
    type Response = ShardResponse;
    type Work = GroupWork;

    const TOPIC: &'static str = GROUP_METADATA_TOPIC_NAME;
    const METRICS_GROUP: &'static str = "group-coordinator-metrics";

    fn topic_partitions(config: &Self::Config) -> i32 {
        config.offsets_topic_partitions
    }

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
        let record = CoordinatorRecord::decode(key, value).map_err(ReplayFailure::from_decode)?;
        let producer_id = producer.map_or(-1, |(id, _)| id);
        GroupCoordinatorShard::replay(self, offset, producer_id, record)
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

    fn take_output(&mut self) -> CoordinatorOutput<ShardResponse, GroupWork> {
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
            work: out.work,
        }
    }

    fn gauges(&self) -> Vec<Gauge> {
        let mut out = vec![
            ("group_count", vec![("protocol", "classic".into())], 0),
            ("group_count", vec![("protocol", "consumer".into())], 0),
            ("group_count", vec![("protocol", "share".into())], 0),
        ];
        for ((kind, state), n) in self.group_counts() {
            let n = n as u64;
            let (protocol, name) = match kind {
                "classic" => (0, "classic_group_count"),
                "consumer" => (1, "consumer_group_count"),
                _ => (2, "share_group_count"),
            };
            out[protocol].2 += n;
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
            ("share_group_rebalance_count", s.share_rebalances),
        ]
    }
}
