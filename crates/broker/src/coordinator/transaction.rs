//! The transaction coordinator on the runtime (Kafka's `TransactionCoordinator` with its
//! `TransactionMarkerChannelManager`): the service the request handlers call over the
//! transaction shard (`kraftd_coordinator::transaction`), and the marker sender — a transaction's
//! WriteTxnMarkers go to each partition's leader (this broker included, through its own
//! listener, so one path writes every marker and completes `__consumer_offsets`' pending
//! offsets), partitions that fail are retried against the leader the metadata names then,
//! until every one is written; only then is the shard told (`on_markers_written`), which
//! writes CompleteCommit / CompleteAbort.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kraftd_protocol::messages::WriteTxnMarkersRequest;
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use tracing::{debug, warn};

use super::metrics::RuntimeMetrics;
use super::runtime::{CoordinatorRuntime, RuntimeHandle, WorkHandler};
use crate::metadata::MetadataCache;
use crate::replica::replica_manager::ReplicaManager;
use crate::server::broker_channels::BrokerChannels;
use kraftd_coordinator::context::RequestContext;
use kraftd_coordinator::shard::CoordinatorShard;
use kraftd_coordinator::transaction::{
    partition_for, MarkerRequest, TransactionCoordinatorConfig, TransactionCoordinatorShard,
    TxnShardRequest, TxnShardResponse, TRANSACTION_STATE_TOPIC_NAME,
};

/// Between two rounds of markers that did not all land.
const MARKER_RETRY: Duration = Duration::from_millis(200);
/// How long one WriteTxnMarkers may take.
const MARKER_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The broker's transaction coordinator (see the module docs).
#[derive(Debug)]
pub struct TransactionCoordinatorService {
    runtime: RuntimeHandle<TransactionCoordinatorShard>,
    config: Arc<TransactionCoordinatorConfig>,
    cache: MetadataCache,
    metrics: Arc<RuntimeMetrics>,
}

impl TransactionCoordinatorService {
    /// Starts the runtime and its marker sender (markers go to the leaders' `listener`).
    pub fn start(
        config: TransactionCoordinatorConfig,
        node_id: i32,
        replica_manager: Arc<ReplicaManager>,
        cache: MetadataCache,
        listener: Option<String>,
        security: kraftd_net::ClientSecurity,
    ) -> (
        Arc<TransactionCoordinatorService>,
        super::publisher::CoordinatorPublisher<TransactionCoordinatorShard>,
    ) {
        let config = Arc::new(config);
        let metrics = Arc::new(RuntimeMetrics::new(
            TransactionCoordinatorShard::METRICS_GROUP,
        ));
        let sender = Arc::new(MarkerSender {
            cache: cache.clone(),
            brokers: BrokerChannels::new(
                format!("broker-{node_id}-txn-markers"),
                listener,
                security,
                MARKER_REQUEST_TIMEOUT,
            ),
        });
        let work: WorkHandler<TransactionCoordinatorShard> =
            Arc::new(move |partition, leader_epoch, marker, handle| {
                let sender = Arc::clone(&sender);
                tokio::spawn(async move {
                    sender
                        .deliver(partition, leader_epoch, marker, handle)
                        .await;
                });
            });
        let runtime = CoordinatorRuntime::<TransactionCoordinatorShard>::start(
            Arc::clone(&config),
            replica_manager,
            Arc::clone(&metrics),
            Some(work),
        );
        let publisher = super::publisher::CoordinatorPublisher::new(node_id, runtime.clone());
        (
            Arc::new(TransactionCoordinatorService {
                runtime,
                config,
                cache,
                metrics,
            }),
            publisher,
        )
    }

    pub fn config(&self) -> &TransactionCoordinatorConfig {
        &self.config
    }

    pub fn metrics(&self) -> &RuntimeMetrics {
        &self.metrics
    }

    /// The transaction log's partition count: the topic's own once it exists.
    pub fn log_partitions(&self) -> i32 {
        self.cache
            .image()
            .topics
            .get_by_name(TRANSACTION_STATE_TOPIC_NAME)
            .map(|t| t.partitions.len() as i32)
            .filter(|n| *n > 0)
            .unwrap_or(self.config.state_log_partitions)
    }

    /// The partition coordinating `transactional_id`.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        partition_for(transactional_id, self.log_partitions())
    }

    /// Runs `request` on the shard of `transactional_id`'s partition.
    pub async fn call(
        &self,
        transactional_id: &str,
        ctx: RequestContext,
        request: TxnShardRequest,
    ) -> Result<TxnShardResponse, ErrorCode> {
        self.runtime
            .call_partition(self.partition_for(transactional_id), ctx, request)
            .await
    }

    /// Runs `request` on one partition's shard.
    pub async fn call_partition(
        &self,
        partition: i32,
        ctx: RequestContext,
        request: TxnShardRequest,
    ) -> Result<TxnShardResponse, ErrorCode> {
        self.runtime.call_partition(partition, ctx, request).await
    }

    /// Queues `request` for one partition's shard now (sequenced: see
    /// [`RuntimeHandle::submit`](super::runtime::RuntimeHandle::submit)); its answer to come.
    pub fn submit_partition(
        &self,
        partition: i32,
        ctx: RequestContext,
        request: TxnShardRequest,
    ) -> impl std::future::Future<Output = Result<TxnShardResponse, ErrorCode>> + Send + 'static
    {
        self.runtime.submit(partition, ctx, request)
    }

    /// Runs `request` on every shard this broker serves (ListTransactions).
    pub async fn broadcast(
        &self,
        request: TxnShardRequest,
    ) -> (Vec<Result<TxnShardResponse, ErrorCode>>, bool) {
        self.runtime.broadcast(request).await
    }
}

/// Sends a transaction's markers to the partitions' leaders until all are written.
struct MarkerSender {
    cache: MetadataCache,
    brokers: BrokerChannels,
}

impl MarkerSender {
    async fn deliver(
        &self,
        partition: i32,
        leader_epoch: i32,
        marker: MarkerRequest,
        handle: RuntimeHandle<TransactionCoordinatorShard>,
    ) {
        let mut remaining: Vec<(String, i32)> = marker.partitions.clone();
        let version = supported_range(ApiKey::WriteTxnMarkers).max;
        while !remaining.is_empty() {
            let image = self.cache.image();
            // Partitions by their leader's address; a deleted topic's are done.
            let mut by_leader: BTreeMap<String, Vec<(String, i32)>> = BTreeMap::new();
            let mut waiting = Vec::new();
            for (topic, p) in remaining.drain(..) {
                let Some(t) = image.topics.get_by_name(&topic) else {
                    debug!(%topic, "marker for a deleted topic dropped");
                    continue;
                };
                let Some(reg) = t.partitions.get(&p) else {
                    continue;
                };
                match self.brokers.address(&image, reg.leader) {
                    Some(a) => by_leader.entry(a).or_default().push((topic, p)),
                    None => waiting.push((topic, p)),
                }
            }
            for (address, partitions) in by_leader {
                let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
                for (t, p) in &partitions {
                    topics.entry(t.clone()).or_default().push(*p);
                }
                let request = WriteTxnMarkersRequest {
                    markers: vec![WritableTxnMarker {
                        producer_id: marker.producer_id,
                        producer_epoch: marker.producer_epoch,
                        transaction_result: marker.commit,
                        topics: topics
                            .into_iter()
                            .map(|(name, partition_indexes)| WritableTxnMarkerTopic {
                                name,
                                partition_indexes,
                                ..Default::default()
                            })
                            .collect(),
                        coordinator_epoch: marker.coordinator_epoch,
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                let channel = self.brokers.channel(&address);
                let answer = channel
                    .call(
                        channel.next_correlation_id(),
                        version,
                        RequestBody::WriteTxnMarkers(request),
                    )
                    .await;
                match answer {
                    Ok(ResponseBody::WriteTxnMarkers(r)) => {
                        let mut failed = partitions.clone();
                        for m in &r.markers {
                            for t in &m.topics {
                                for p in &t.partitions {
                                    let code = ErrorCode::from_code(p.error_code);
                                    let done = matches!(
                                        code,
                                        Some(ErrorCode::None)
                                            | Some(ErrorCode::UnknownTopicOrPartition)
                                    );
                                    if done {
                                        failed.retain(|(ft, fp)| {
                                            !(ft == &t.name && *fp == p.partition_index)
                                        });
                                    } else {
                                        debug!(topic = %t.name, partition = p.partition_index, error = ?code, "marker not written; retrying");
                                    }
                                    if code == Some(ErrorCode::TransactionCoordinatorFenced) {
                                        warn!(transactional_id = %marker.transactional_id, "a newer coordinator owns this transaction; its markers stop here");
                                        return;
                                    }
                                }
                            }
                        }
                        waiting.extend(failed);
                    }
                    Ok(other) => {
                        warn!(?other, "WriteTxnMarkers answered with another type");
                        waiting.extend(partitions);
                    }
                    Err(e) => {
                        debug!(%address, error = %e, "WriteTxnMarkers failed; retrying");
                        waiting.extend(partitions);
                    }
                }
            }
            remaining = waiting;
            if !remaining.is_empty() {
                tokio::time::sleep(MARKER_RETRY).await;
            }
        }
        let (id, pid, epoch) = (
            marker.transactional_id.clone(),
            marker.producer_id,
            marker.producer_epoch,
        );
        handle.run_on(
            partition,
            leader_epoch,
            Box::new(move |shard, now| shard.on_markers_written(now, &id, pid, epoch)),
        );
    }
}
