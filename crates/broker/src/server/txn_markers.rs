//! The broker's transaction APIs on the data plane, as functions the API router calls
//! (not advertised yet): WriteTxnMarkers (Kafka's `handleWriteTxnMarkersRequest`) and
//! DescribeProducers (Kafka's `handleDescribeProducersRequest`).

use std::time::Duration;

use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kraftd_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kraftd_protocol::messages::{
    DescribeProducersRequest, DescribeProducersResponse, WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
};
use kraftd_protocol::ErrorCode;

use super::data_plane::DataPlane;
use crate::replica::replica_manager::TxnMarkerWrite;
use crate::replica::TopicIdPartition;
use kraftd_coordinator::group::GROUP_METADATA_TOPIC_NAME;

/// A marker written on a `__consumer_offsets` partition: the group coordinator must
/// complete (commit) or drop (abort) the producer's pending transactional offset commits
/// there (Kafka's `GroupCoordinator.onTransactionCompleted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetsTxnCompletion {
    /// The `__consumer_offsets` partition.
    pub partition: i32,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
}

impl DataPlane {
    /// WriteTxnMarkers (v1, Kafka 4.x): each marker on each named partition, as leader,
    /// waiting for the HW as `acks=all` does (up to `timeout`). Returns the response and the
    /// markers written on `__consumer_offsets` partitions, for the group coordinator.
    pub async fn write_txn_markers(
        &self,
        image: &MetadataImage,
        request: WriteTxnMarkersRequest,
        timeout: Duration,
    ) -> (WriteTxnMarkersResponse, Vec<OffsetsTxnCompletion>) {
        // Resolve names first; unknown ones are answered without an append.
        let mut writes = Vec::with_capacity(request.markers.len());
        let mut unknown: Vec<Vec<(String, i32)>> = Vec::with_capacity(request.markers.len());
        for marker in &request.markers {
            let mut partitions = Vec::new();
            let mut missing = Vec::new();
            for topic in &marker.topics {
                let found = image.topics.get_by_name(&topic.name);
                for &p in &topic.partition_indexes {
                    match found {
                        Some(t) if image.topics.partition(&t.id, p).is_some() => {
                            partitions.push(TopicIdPartition {
                                topic_id: t.id,
                                topic: t.name.clone(),
                                partition: p,
                            })
                        }
                        _ => missing.push((topic.name.clone(), p)),
                    }
                }
            }
            writes.push(TxnMarkerWrite {
                producer_id: marker.producer_id,
                producer_epoch: marker.producer_epoch,
                coordinator_epoch: marker.coordinator_epoch,
                commit: marker.transaction_result,
                partitions,
            });
            unknown.push(missing);
        }
        let results = self
            .replica_manager
            .write_txn_markers(timeout, &writes)
            .await;
        let mut response = WriteTxnMarkersResponse::default();
        let mut completions = Vec::new();
        for ((write, result), missing) in writes.iter().zip(results).zip(unknown) {
            let mut topics: Vec<WritableTxnMarkerTopicResult> = Vec::new();
            let mut add = |name: &str, partition: i32, code: ErrorCode| {
                let result = WritableTxnMarkerPartitionResult {
                    partition_index: partition,
                    error_code: code.code(),
                    ..Default::default()
                };
                match topics.iter_mut().find(|t| t.name == name) {
                    Some(t) => t.partitions.push(result),
                    None => topics.push(WritableTxnMarkerTopicResult {
                        name: name.to_string(),
                        partitions: vec![result],
                        ..Default::default()
                    }),
                }
            };
            for (tp, code) in result {
                if code == ErrorCode::None && tp.topic == GROUP_METADATA_TOPIC_NAME {
                    completions.push(OffsetsTxnCompletion {
                        partition: tp.partition,
                        producer_id: write.producer_id,
                        producer_epoch: write.producer_epoch,
                        commit: write.commit,
                    });
                }
                add(&tp.topic, tp.partition, code);
            }
            for (name, partition) in missing {
                add(&name, partition, ErrorCode::UnknownTopicOrPartition);
            }
            response.markers.push(WritableTxnMarkerResult {
                producer_id: write.producer_id,
                topics,
                ..Default::default()
            });
        }
        (response, completions)
    }

    /// DescribeProducers (v0): per partition, as leader, the active producers — id, epoch,
    /// last sequence, last timestamp, coordinator epoch and the start of the open
    /// transaction (-1 when none).
    pub fn describe_producers(
        &self,
        image: &MetadataImage,
        request: DescribeProducersRequest,
    ) -> DescribeProducersResponse {
        let mut response = DescribeProducersResponse::default();
        for topic in request.topics {
            let mut out = TopicResponse {
                name: topic.name.clone(),
                ..Default::default()
            };
            let found = image.topics.get_by_name(&topic.name);
            for p in topic.partition_indexes {
                let mut partition = PartitionResponse {
                    partition_index: p,
                    ..Default::default()
                };
                let hosted = found
                    .filter(|t| image.topics.partition(&t.id, p).is_some())
                    .map(|t| self.replica_manager.partition(t.id, p));
                let error = match hosted {
                    None => ErrorCode::UnknownTopicOrPartition,
                    Some(None) => ErrorCode::NotLeaderOrFollower,
                    Some(Some(hosted)) => {
                        let guard = hosted.lock();
                        if guard.is_leader() {
                            let mut producers: Vec<ProducerState> = guard
                                .producers()
                                .active_producers()
                                .map(|e| ProducerState {
                                    producer_id: e.producer_id,
                                    producer_epoch: i32::from(e.producer_epoch),
                                    last_sequence: e.last_seq(),
                                    last_timestamp: e.last_timestamp,
                                    coordinator_epoch: e.coordinator_epoch,
                                    current_txn_start_offset: e
                                        .current_txn_first_offset
                                        .unwrap_or(-1),
                                    ..Default::default()
                                })
                                .collect();
                            producers.sort_by_key(|s| s.producer_id);
                            partition.active_producers = producers;
                            ErrorCode::None
                        } else {
                            ErrorCode::NotLeaderOrFollower
                        }
                    }
                };
                partition.error_code = error.code();
                if error != ErrorCode::None {
                    partition.error_message = Some(error.to_string());
                }
                out.partitions.push(partition);
            }
            response.topics.push(out);
        }
        response
    }
}
