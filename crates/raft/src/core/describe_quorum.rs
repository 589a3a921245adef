//! DescribeQuorum: what the leader knows of every voter and observer (log end offsets, last
//! fetch and last caught-up times), as `kafka-metadata-quorum describe` shows it. Answered by
//! the leader only; any other node answers NOT_LEADER_OR_FOLLOWER naming the leader it knows,
//! as Kafka's `KafkaRaftClient.handleDescribeQuorumRequest` does.
//!
//! Times are the core's `now_ms` clock: the driver feeds wall-clock milliseconds, so the
//! timestamps are Unix epoch milliseconds; -1 means "never".

use kraftd_protocol::messages::describe_quorum_response::{PartitionData, ReplicaState, TopicData};
use kraftd_protocol::messages::{DescribeQuorumRequest, DescribeQuorumResponse};
use kraftd_protocol::ErrorCode;

use super::log::RaftLog;
use super::message::{CLUSTER_METADATA_PARTITION, CLUSTER_METADATA_TOPIC};
use super::role::leader::ReplicaProgress;
use super::RaftCore;

impl<L: RaftLog> RaftCore<L> {
    /// Answers a DescribeQuorum request. `now_ms` stamps this node's own entry (a leader has
    /// always just "fetched" from itself).
    pub fn describe_quorum(
        &self,
        request: &DescribeQuorumRequest,
        now_ms: u64,
    ) -> DescribeQuorumResponse {
        let asks_for_metadata = request.topics.len() == 1
            && request.topics[0].topic_name == CLUSTER_METADATA_TOPIC
            && request.topics[0].partitions.len() == 1
            && request.topics[0].partitions[0].partition_index == CLUSTER_METADATA_PARTITION;
        if !asks_for_metadata {
            return DescribeQuorumResponse {
                error_code: ErrorCode::UnknownTopicOrPartition.code(),
                error_message: Some(format!(
                    "DescribeQuorum answers only {CLUSTER_METADATA_TOPIC}-{CLUSTER_METADATA_PARTITION}"
                )),
                ..Default::default()
            };
        }
        let mut partition = PartitionData {
            partition_index: CLUSTER_METADATA_PARTITION,
            leader_id: self.leader_id().unwrap_or(-1),
            leader_epoch: self.epoch(),
            high_watermark: self.high_watermark(),
            ..Default::default()
        };
        match self.leader_state() {
            None => {
                partition.error_code = ErrorCode::NotLeaderOrFollower.code();
                partition.error_message = Some(format!(
                    "node {} is not the leader of epoch {}",
                    self.node_id(),
                    self.epoch()
                ));
            }
            Some(leader) => {
                let now = now_ms as i64;
                // KIP-853: the voters of the set in effect with their directory ids (a
                // leader that removed itself is listed among the observers until it
                // resigns).
                let local = ReplicaState {
                    replica_id: self.node_id(),
                    replica_directory_id: self.config().directory_id,
                    log_end_offset: self.log().end_offset(),
                    last_fetch_timestamp: now,
                    last_caught_up_timestamp: now,
                    ..Default::default()
                };
                let mut voters = Vec::new();
                let mut observers = Vec::new();
                if leader.local_is_voter {
                    voters.push(local);
                } else {
                    observers.push(local);
                }
                voters.extend(leader.voters.iter().map(|(id, p)| {
                    let mut r = replica_state(*id, p);
                    r.replica_directory_id = self.directory_id_of(*id);
                    r
                }));
                partition.current_voters = voters;
                observers.extend(leader.observers.iter().map(|(id, p)| replica_state(*id, p)));
                partition.observers = observers;
            }
        }
        DescribeQuorumResponse {
            topics: vec![TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.to_string(),
                partitions: vec![partition],
                ..Default::default()
            }],
            ..Default::default()
        }
    }
}

fn replica_state(replica_id: i32, p: &ReplicaProgress) -> ReplicaState {
    let millis = |t: Option<u64>| t.map_or(-1, |t| t as i64);
    ReplicaState {
        replica_id,
        replica_directory_id: p.directory_id,
        log_end_offset: p.end_offset.unwrap_or(-1),
        last_fetch_timestamp: millis(p.last_fetch_ms),
        last_caught_up_timestamp: millis(p.last_caught_up_ms),
        ..Default::default()
    }
}
