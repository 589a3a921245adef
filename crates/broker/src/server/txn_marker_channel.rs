//! The broker's [`TransactionMarkerChannel`] (Kafka's `TransactionMarkerChannelManager`):
//! a transaction's WriteTxnMarkers go to each partition's leader (this broker included,
//! through its own listener, so one path writes every marker and completes
//! `__consumer_offsets`' pending offsets); partitions that fail are retried against the
//! leader the metadata names then, until every one is written, and only then is the
//! coordinator told.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kraftd_coordinator::transaction::{MarkerRequest, MarkersWritten, TransactionMarkerChannel};
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kraftd_protocol::messages::WriteTxnMarkersRequest;
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use tracing::{debug, warn};

use super::broker_channels::BrokerChannels;
use crate::metadata::MetadataCache;

/// Between two rounds of markers that did not all land.
const MARKER_RETRY: Duration = Duration::from_millis(200);
/// How long one WriteTxnMarkers may take.
const MARKER_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends markers to the leaders' inter-broker listener (see the module docs).
#[derive(Debug, Clone)]
pub struct TransactionMarkerChannelManager {
    inner: Arc<MarkerSender>,
}

impl TransactionMarkerChannelManager {
    /// Markers go to the leaders' `listener` (the inter-broker one when none), reached with
    /// `security`.
    pub fn new(
        node_id: i32,
        cache: MetadataCache,
        listener: Option<String>,
        security: kraftd_net::ClientSecurity,
    ) -> Self {
        TransactionMarkerChannelManager {
            inner: Arc::new(MarkerSender {
                cache,
                brokers: BrokerChannels::new(
                    format!("broker-{node_id}-txn-markers"),
                    listener,
                    security,
                    MARKER_REQUEST_TIMEOUT,
                ),
            }),
        }
    }
}

impl TransactionMarkerChannel for TransactionMarkerChannelManager {
    fn send(&self, marker: MarkerRequest, written: MarkersWritten) {
        let sender = Arc::clone(&self.inner);
        tokio::spawn(async move {
            if sender.deliver(marker).await {
                written();
            }
        });
    }
}

/// Sends a transaction's markers to the partitions' leaders until all are written.
#[derive(Debug)]
struct MarkerSender {
    cache: MetadataCache,
    brokers: BrokerChannels,
}

impl MarkerSender {
    /// Whether every marker was written (false: a newer coordinator fenced them).
    async fn deliver(&self, marker: MarkerRequest) -> bool {
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
                                        return false;
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
        true
    }
}
