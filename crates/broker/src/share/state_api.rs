//! The five share-group state APIs (InitializeShareGroupState, ReadShareGroupState,
//! WriteShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary) seen as one shape
//! ([`ShareStateRequest`]): a group id, topics by id with their partitions, and an answer per
//! partition with an error code. The share coordinator's service splits a request by share
//! partition and the [`DefaultStatePersister`](super::default_persister::DefaultStatePersister)
//! by coordinator through this one shape, and both merge the answers back.

use kraftd_coordinator::share::{ShareShardRequest, ShareShardResponse};
use kraftd_protocol::messages::{
    delete_share_group_state_request, delete_share_group_state_response,
    initialize_share_group_state_request, initialize_share_group_state_response,
    read_share_group_state_request, read_share_group_state_response,
    read_share_group_state_summary_request, read_share_group_state_summary_response,
    write_share_group_state_request, write_share_group_state_response,
    DeleteShareGroupStateRequest, DeleteShareGroupStateResponse, InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse, ReadShareGroupStateRequest, ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateRequest, WriteShareGroupStateResponse,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, Uuid};

/// One of the five state requests (see the module docs).
pub trait ShareStateRequest: Clone + Send + Sync + std::fmt::Debug + 'static {
    type Response: Default + Clone + Send + std::fmt::Debug + 'static;
    type PartitionResult: Clone + Send + std::fmt::Debug + 'static;

    const API_KEY: ApiKey;
    /// What a failed partition's message starts with (Kafka's service wording).
    const FAILED: &'static str;

    fn group_id(&self) -> &str;
    /// Every (topic id, partition) of the request, in its order.
    fn keys(&self) -> Vec<(Uuid, i32)>;
    /// Whether some topic names no partition.
    fn has_empty_topic(&self) -> bool;
    /// The request narrowed to `keys` (a subset of [`ShareStateRequest::keys`]), topics in
    /// the request's order.
    fn only(&self, keys: &[(Uuid, i32)]) -> Self;

    fn into_body(self) -> RequestBody;
    fn from_body(body: ResponseBody) -> Option<Self::Response>;
    fn into_shard(self) -> ShareShardRequest;
    fn from_shard(response: ShareShardResponse) -> Option<Self::Response>;

    /// Every partition's answer with its topic id.
    fn results(response: Self::Response) -> Vec<(Uuid, Self::PartitionResult)>;
    fn partition(result: &Self::PartitionResult) -> i32;
    fn error_code(result: &Self::PartitionResult) -> i16;
    fn failed(partition: i32, code: ErrorCode, message: String) -> Self::PartitionResult;
    /// The answers grouped by topic, topics in first-seen order.
    fn assemble(results: Vec<(Uuid, Self::PartitionResult)>) -> Self::Response;

    /// The answer failing every partition of the request with `code`.
    fn fail_all(&self, code: ErrorCode, message: &str) -> Self::Response {
        Self::assemble(
            self.keys()
                .into_iter()
                .map(|(t, p)| (t, Self::failed(p, code, message.to_string())))
                .collect(),
        )
    }
}

macro_rules! share_state_api {
    ($req:ty, $resp:ty, $rq:ident, $rs:ident, $topic:ident, $result:ident, $key:ident,
     $shard:ident, $failed:expr) => {
        impl ShareStateRequest for $req {
            type Response = $resp;
            type PartitionResult = $rs::PartitionResult;

            const API_KEY: ApiKey = ApiKey::$key;
            const FAILED: &'static str = $failed;

            fn group_id(&self) -> &str {
                &self.group_id
            }

            fn keys(&self) -> Vec<(Uuid, i32)> {
                self.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| (t.topic_id, p.partition)))
                    .collect()
            }

            fn has_empty_topic(&self) -> bool {
                self.topics.iter().any(|t| t.partitions.is_empty())
            }

            fn only(&self, keys: &[(Uuid, i32)]) -> Self {
                let topics = self
                    .topics
                    .iter()
                    .filter_map(|t| {
                        let partitions: Vec<$rq::PartitionData> = t
                            .partitions
                            .iter()
                            .filter(|p| keys.contains(&(t.topic_id, p.partition)))
                            .cloned()
                            .collect();
                        (!partitions.is_empty()).then(|| $rq::$topic {
                            topic_id: t.topic_id,
                            partitions,
                            ..Default::default()
                        })
                    })
                    .collect();
                Self {
                    group_id: self.group_id.clone(),
                    topics,
                    ..Default::default()
                }
            }

            fn into_body(self) -> RequestBody {
                RequestBody::$key(self)
            }

            fn from_body(body: ResponseBody) -> Option<Self::Response> {
                match body {
                    ResponseBody::$key(r) => Some(r),
                    _ => None,
                }
            }

            fn into_shard(self) -> ShareShardRequest {
                ShareShardRequest::$shard(self)
            }

            fn from_shard(response: ShareShardResponse) -> Option<Self::Response> {
                match response {
                    ShareShardResponse::$shard(r) => Some(r),
                    _ => None,
                }
            }

            fn results(response: Self::Response) -> Vec<(Uuid, Self::PartitionResult)> {
                response
                    .results
                    .into_iter()
                    .flat_map(|t| {
                        let id = t.topic_id;
                        t.partitions.into_iter().map(move |p| (id, p))
                    })
                    .collect()
            }

            fn partition(result: &Self::PartitionResult) -> i32 {
                result.partition
            }

            fn error_code(result: &Self::PartitionResult) -> i16 {
                result.error_code
            }

            fn failed(partition: i32, code: ErrorCode, message: String) -> Self::PartitionResult {
                $rs::PartitionResult {
                    partition,
                    error_code: code.code(),
                    error_message: Some(message),
                    ..Default::default()
                }
            }

            fn assemble(results: Vec<(Uuid, Self::PartitionResult)>) -> Self::Response {
                let mut topics: Vec<$rs::$result> = Vec::new();
                for (id, p) in results {
                    match topics.iter_mut().find(|t| t.topic_id == id) {
                        Some(t) => t.partitions.push(p),
                        None => topics.push($rs::$result {
                            topic_id: id,
                            partitions: vec![p],
                            ..Default::default()
                        }),
                    }
                }
                Self::Response {
                    results: topics,
                    ..Default::default()
                }
            }
        }
    };
}

share_state_api!(
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    initialize_share_group_state_request,
    initialize_share_group_state_response,
    InitializeStateData,
    InitializeStateResult,
    InitializeShareGroupState,
    Initialize,
    "Unable to initialize share group state"
);
share_state_api!(
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    read_share_group_state_request,
    read_share_group_state_response,
    ReadStateData,
    ReadStateResult,
    ReadShareGroupState,
    Read,
    "Unable to read share group state"
);
share_state_api!(
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
    write_share_group_state_request,
    write_share_group_state_response,
    WriteStateData,
    WriteStateResult,
    WriteShareGroupState,
    Write,
    "Unable to write share group state"
);
share_state_api!(
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
    delete_share_group_state_request,
    delete_share_group_state_response,
    DeleteStateData,
    DeleteStateResult,
    DeleteShareGroupState,
    Delete,
    "Unable to delete share group state"
);
share_state_api!(
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    read_share_group_state_summary_request,
    read_share_group_state_summary_response,
    ReadStateSummaryData,
    ReadStateSummaryResult,
    ReadShareGroupStateSummary,
    ReadSummary,
    "Unable to read share group state summary"
);

#[cfg(test)]
mod tests {
    use super::*;
    use kraftd_protocol::messages::write_share_group_state_request::{
        PartitionData, WriteStateData,
    };

    fn t(n: u8) -> Uuid {
        Uuid([n; 16])
    }

    #[test]
    fn a_request_narrows_to_its_keys_and_answers_assemble_by_topic() {
        let request = WriteShareGroupStateRequest {
            group_id: "g".into(),
            topics: [1u8, 2]
                .iter()
                .map(|n| WriteStateData {
                    topic_id: t(*n),
                    partitions: (0..3)
                        .map(|p| PartitionData {
                            partition: p,
                            start_offset: i64::from(p),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        assert_eq!(request.keys().len(), 6);
        let part = request.only(&[(t(2), 1), (t(1), 2)]);
        assert_eq!(part.keys(), vec![(t(1), 2), (t(2), 1)]);
        assert_eq!(part.topics[0].partitions[0].start_offset, 2);
        assert!(!part.has_empty_topic());

        let answer = request.fail_all(ErrorCode::NotCoordinator, "x");
        assert_eq!(answer.results.len(), 2);
        let flat = WriteShareGroupStateRequest::results(answer);
        assert_eq!(flat.len(), 6);
        assert!(flat
            .iter()
            .all(|(_, r)| r.error_code == ErrorCode::NotCoordinator.code()));
        let back = WriteShareGroupStateRequest::assemble(flat);
        assert_eq!(back.results[1].topic_id, t(2));
        assert_eq!(back.results[1].partitions.len(), 3);
    }
}
