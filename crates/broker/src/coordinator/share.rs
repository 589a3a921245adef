//! The share coordinator on the runtime (Kafka's `ShareCoordinatorService`): the generic
//! [`CoordinatorService`] over the share shard. A state request names share partitions of
//! possibly many `__share_group_state` partitions; each share partition goes to its own
//! partition's shard as a request of its own (the shard answers one key), all queued before
//! any is awaited, and the answers are merged back, a failed one (NOT_COORDINATOR while the
//! partition moves, COORDINATOR_LOAD_IN_PROGRESS while it loads) failing only its own share
//! partition. Kafka's `share-coordinator-metrics` beside the runtime's own: `write-total`
//! (the shards count), `write-latency-avg`/`-max` (measured here) and `last-pruned-offset`.

use std::sync::Arc;
use std::time::Duration;

use kraftd_coordinator::context::RequestContext;
use kraftd_coordinator::share::shard::kafka_message;
use kraftd_coordinator::share::{
    partition_for, ShareCoordinatorConfig, ShareCoordinatorShard, SharePartitionKey, ShareWork,
    SHARE_GROUP_STATE_TOPIC_NAME,
};
use kraftd_protocol::{ApiKey, ErrorCode};
use tracing::{debug, warn};

use super::publisher::CoordinatorPublisher;
use super::runtime::WorkHandler;
use super::service::CoordinatorService;
use crate::metadata::MetadataCache;
use crate::replica::replica_manager::ReplicaManager;
use crate::replica::TopicIdPartition;
use crate::share::state_api::ShareStateRequest;

/// How long a prune waits for the followers' log start (Kafka's DeleteRecords default).
const PRUNE_TIMEOUT: Duration = Duration::from_secs(30);

/// The broker's share coordinator.
pub type ShareCoordinatorService = CoordinatorService<ShareCoordinatorShard>;

impl CoordinatorService<ShareCoordinatorShard> {
    /// Starts the share coordinator, its shards' prune work (Kafka's
    /// `setupRecordPruning`: records every share partition has moved past are deleted)
    /// carried out through `replica_manager`; the returned publisher must run after the
    /// ReplicaManager's.
    pub fn start_with_pruning(
        config: ShareCoordinatorConfig,
        node_id: i32,
        replica_manager: Arc<ReplicaManager>,
        cache: MetadataCache,
    ) -> (
        Arc<ShareCoordinatorService>,
        CoordinatorPublisher<ShareCoordinatorShard>,
    ) {
        let rm = Arc::clone(&replica_manager);
        let image_cache = cache.clone();
        let work: WorkHandler<ShareCoordinatorShard> = Arc::new(
            move |partition, _leader_epoch, work, handle| {
                let ShareWork::DeleteRecordsBefore { offset } = work;
                let Some(topic_id) = image_cache
                    .image()
                    .topics
                    .get_by_name(SHARE_GROUP_STATE_TOPIC_NAME)
                    .map(|t| t.id)
                else {
                    return;
                };
                let tp = TopicIdPartition {
                    topic_id,
                    topic: SHARE_GROUP_STATE_TOPIC_NAME.to_string(),
                    partition,
                };
                let rm = Arc::clone(&rm);
                tokio::spawn(async move {
                    for (_, result) in rm.delete_records(PRUNE_TIMEOUT, vec![(tp, offset)]).await {
                        match result {
                            Ok(low_watermark) => {
                                debug!(partition, offset, low_watermark, "share state pruned");
                                // Kafka's `last-pruned-offset`, recorded once the prune is done.
                                handle.metrics().set_partition_value(
                                    "last_pruned_offset",
                                    SHARE_GROUP_STATE_TOPIC_NAME,
                                    partition,
                                    offset,
                                );
                            }
                            Err(code) => {
                                warn!(partition, offset, error = ?code, "pruning share state failed")
                            }
                        }
                    }
                });
            },
        );
        Self::start(config, node_id, replica_manager, cache, Some(work))
    }

    /// The `__share_group_state` partition of a share partition.
    pub fn partition_for_share(&self, key: &SharePartitionKey) -> i32 {
        partition_for(key, self.topic_partitions())
    }

    /// Runs one of the five state requests (Kafka's `ShareCoordinatorService.readState`,
    /// `writeState`, ...): an empty answer for a request with no group id, no topics or a
    /// topic without partitions, as Kafka's; else every share partition's answer.
    pub async fn state_call<R: ShareStateRequest>(
        &self,
        ctx: RequestContext,
        request: R,
    ) -> R::Response {
        if request.group_id().is_empty() || request.keys().is_empty() || request.has_empty_topic() {
            return R::Response::default();
        }
        let started = std::time::Instant::now();
        let mut pending = Vec::new();
        for (topic_id, partition) in request.keys() {
            let key = SharePartitionKey::new(request.group_id(), topic_id, partition);
            let single = request.only(&[(topic_id, partition)]).into_shard();
            let answer = self.submit_partition(self.partition_for_share(&key), ctx.clone(), single);
            pending.push((topic_id, partition, answer));
        }
        let mut results = Vec::with_capacity(pending.len());
        for (topic_id, partition, answer) in pending {
            let failed = |code: ErrorCode| {
                R::failed(
                    partition,
                    code,
                    format!("{}: {}", R::FAILED, kafka_message(code)),
                )
            };
            match answer.await.map(R::from_shard) {
                Ok(Some(response)) => {
                    let mut got = R::results(response);
                    match got.pop() {
                        Some((_, r)) => results.push((topic_id, r)),
                        None => results.push((topic_id, failed(ErrorCode::UnknownServerError))),
                    }
                }
                Ok(None) => results.push((topic_id, failed(ErrorCode::UnknownServerError))),
                Err(code) => results.push((topic_id, failed(code))),
            }
        }
        if R::API_KEY == ApiKey::WriteShareGroupState {
            // Kafka's `write-latency` of `share-coordinator-metrics`: a whole request's
            // writes, committed in `__share_group_state`.
            self.metrics()
                .record_latency("write_latency", started.elapsed());
        }
        R::assemble(results)
    }
}
