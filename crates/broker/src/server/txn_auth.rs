//! What Kafka's transaction handlers check: WRITE on the transactional id to add partitions
//! or offsets, end a transaction or commit its offsets (with WRITE on each topic added, READ
//! on the group and its topics); DESCRIBE on it to describe or list transactions; READ on a
//! topic to describe its producers; CLUSTER_ACTION (or ALTER) on the cluster for the
//! brokers' own requests (WriteTxnMarkers, AddPartitionsToTxn v4+ verification). Refused
//! parts get Kafka's errors and never reach a shard.

use kraftd_controller::auth::{default_message, RequestAuth};
use kraftd_controller::control::acl::{OPERATION_READ, OPERATION_WRITE, RESOURCE_TYPE_TOPIC};
use kraftd_controller::control::topics::validate_topic_name;
use kraftd_controller::publisher::{
    OPERATION_ALTER, OPERATION_CLUSTER_ACTION, OPERATION_DESCRIBE, RESOURCE_TYPE_TRANSACTIONAL_ID,
};
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kraftd_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kraftd_protocol::messages::describe_transactions_response::TransactionState;
use kraftd_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kraftd_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kraftd_protocol::messages::{
    DescribeProducersResponse, ListTransactionsResponse, TxnOffsetCommitRequest,
    WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};
use kraftd_protocol::ErrorCode;

use crate::kafka_apis::metadata::is_internal_topic;

/// WRITE on a transactional id.
pub fn may_write_txn(auth: &RequestAuth, transactional_id: &str) -> bool {
    auth.authorize(
        OPERATION_WRITE,
        RESOURCE_TYPE_TRANSACTIONAL_ID,
        transactional_id,
    )
}

/// The brokers' own requests: ALTER or CLUSTER_ACTION on the cluster (WriteTxnMarkers), as
/// Kafka asks.
pub fn may_write_markers(auth: &RequestAuth) -> bool {
    auth.authorize_cluster(OPERATION_ALTER) || auth.authorize_cluster(OPERATION_CLUSTER_ACTION)
}

/// Kafka's client AddPartitionsToTxn (v0–3) checks, the refused answer if any: without
/// WRITE on the transactional id every partition gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
/// otherwise a topic without WRITE (internal topics never have it) gets
/// TOPIC_AUTHORIZATION_FAILED, a partition the metadata lacks UNKNOWN_TOPIC_OR_PARTITION,
/// and if any partition failed the rest get OPERATION_NOT_ATTEMPTED (none is added).
pub fn add_partitions_refusal(
    auth: &RequestAuth,
    image: &MetadataImage,
    transactional_id: &str,
    topics: &[AddPartitionsToTxnTopic],
) -> Option<Vec<AddPartitionsToTxnTopicResult>> {
    let answer = |code: &dyn Fn(&str, i32) -> ErrorCode| {
        topics
            .iter()
            .map(|t| AddPartitionsToTxnTopicResult {
                name: t.name.clone(),
                results_by_partition: t
                    .partitions
                    .iter()
                    .map(|&p| AddPartitionsToTxnPartitionResult {
                        partition_index: p,
                        partition_error_code: code(&t.name, p).code(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect()
    };
    if !may_write_txn(auth, transactional_id) {
        return Some(answer(&|_, _| {
            ErrorCode::TransactionalIdAuthorizationFailed
        }));
    }
    let writable = auth.filter(
        OPERATION_WRITE,
        RESOURCE_TYPE_TOPIC,
        topics
            .iter()
            .map(|t| t.name.as_str())
            .filter(|n| !is_internal_topic(n)),
    );
    let check = |name: &str, p: i32| {
        if !writable.contains(name) {
            ErrorCode::TopicAuthorizationFailed
        } else if image
            .topics
            .get_by_name(name)
            .and_then(|t| t.partitions.get(&p))
            .is_none()
        {
            ErrorCode::UnknownTopicOrPartition
        } else {
            ErrorCode::None
        }
    };
    let failed = topics.iter().any(|t| {
        t.partitions
            .iter()
            .any(|&p| check(&t.name, p) != ErrorCode::None)
    });
    failed.then(|| {
        answer(&|name, p| match check(name, p) {
            ErrorCode::None => ErrorCode::OperationNotAttempted,
            code => code,
        })
    })
}

/// WriteTxnMarkers refused as a whole: every partition of every marker gets `code`.
pub fn markers_refused(
    request: &WriteTxnMarkersRequest,
    code: ErrorCode,
) -> WriteTxnMarkersResponse {
    WriteTxnMarkersResponse {
        markers: request
            .markers
            .iter()
            .map(|m| WritableTxnMarkerResult {
                producer_id: m.producer_id,
                topics: m
                    .topics
                    .iter()
                    .map(|t| WritableTxnMarkerTopicResult {
                        name: t.name.clone(),
                        partitions: t
                            .partition_indexes
                            .iter()
                            .map(|&partition_index| WritableTxnMarkerPartitionResult {
                                partition_index,
                                error_code: code.code(),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// TxnOffsetCommit's topics without READ, taken out of the request: their answers
/// (TOPIC_AUTHORIZATION_FAILED on each partition) for after the shard's.
pub fn take_unreadable_topics(
    auth: &RequestAuth,
    request: &mut TxnOffsetCommitRequest,
) -> Vec<TxnOffsetCommitResponseTopic> {
    let mut read = auth.memo(OPERATION_READ, RESOURCE_TYPE_TOPIC);
    let mut refused = Vec::new();
    request.topics.retain(|t| {
        if read.allowed(&t.name) {
            return true;
        }
        refused.push(TxnOffsetCommitResponseTopic {
            name: t.name.clone(),
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| TxnOffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: ErrorCode::TopicAuthorizationFailed.code(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        false
    });
    refused
}

/// DescribeTransactions' ids split by DESCRIBE: the allowed, and the refused ones' states.
pub fn split_describable(
    auth: &RequestAuth,
    ids: &[String],
) -> (Vec<String>, Vec<TransactionState>) {
    let mut allowed = Vec::new();
    let mut refused = Vec::new();
    for id in ids {
        if auth.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_TRANSACTIONAL_ID, id) {
            allowed.push(id.clone());
        } else {
            refused.push(TransactionState {
                transactional_id: id.clone(),
                error_code: ErrorCode::TransactionalIdAuthorizationFailed.code(),
                ..Default::default()
            });
        }
    }
    (allowed, refused)
}

/// A described transaction shows only the topics the principal may DESCRIBE.
pub fn retain_describable_topics(auth: &RequestAuth, states: &mut [TransactionState]) {
    let mut describe = auth.memo(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC);
    for state in states {
        state.topics.retain(|t| describe.allowed(&t.topic));
    }
}

/// ListTransactions lists only the transactional ids the principal may DESCRIBE.
pub fn filter_listed(auth: &RequestAuth, response: &mut ListTransactionsResponse) {
    response.transaction_states.retain(|s| {
        auth.authorize(
            OPERATION_DESCRIBE,
            RESOURCE_TYPE_TRANSACTIONAL_ID,
            &s.transactional_id,
        )
    });
}

/// DescribeProducers: a (valid) topic without READ is answered TOPIC_AUTHORIZATION_FAILED
/// on each partition, whether it exists or not.
pub fn refuse_unreadable_producers(auth: &RequestAuth, response: &mut DescribeProducersResponse) {
    let mut read = auth.memo(OPERATION_READ, RESOURCE_TYPE_TOPIC);
    let code = ErrorCode::TopicAuthorizationFailed;
    for topic in &mut response.topics {
        if validate_topic_name(&topic.name).is_err() || read.allowed(&topic.name) {
            continue;
        }
        for p in &mut topic.partitions {
            p.error_code = code.code();
            p.error_message = Some(default_message(code));
            p.active_producers.clear();
        }
    }
}

#[cfg(test)]
mod tests;
