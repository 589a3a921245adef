//! The transaction APIs of `KafkaApis` (Kafka's `handleInitProducerIdRequest` with a
//! transactional id, `handleAddPartitionsToTxnRequest`, `handleAddOffsetsToTxnRequest`,
//! `handleEndTxnRequest`, `handleWriteTxnMarkersRequest`, `handleTxnOffsetCommitRequest`,
//! `handleDescribeTransactionsRequest`, `handleListTransactionsRequest`,
//! `handleDescribeProducersRequest`): each transactional id's part goes to the shard of its
//! `__transaction_state` partition through the [`TransactionCoordinatorService`];
//! TxnOffsetCommit goes to the group's shard; WriteTxnMarkers writes on this broker's
//! partitions and completes the pending offsets of the `__consumer_offsets` ones. Every
//! request is authorized first, as Kafka's handlers do ([`super::txn_auth`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kraftd_protocol::error_response::error_response;
use kraftd_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTransaction;
use kraftd_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kraftd_protocol::messages::describe_transactions_response::TransactionState;
use kraftd_protocol::messages::{
    AddOffsetsToTxnResponse, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
    DescribeTransactionsResponse, EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse,
    ListTransactionsResponse, RequestHeader, TxnOffsetCommitResponse,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use tokio::time::Instant;
use tracing::warn;

use super::apis_context::{request_context, BrokerApisContext, FORWARD_TIMEOUT};
use super::txn_auth;
use super::txn_verification::Transaction;
use crate::coordinator::TransactionCoordinatorService;
use kraftd_controller::auth::RequestAuth;
use kraftd_controller::control::acl::{OPERATION_READ, RESOURCE_TYPE_GROUP};
use kraftd_controller::publisher::OPERATION_CLUSTER_ACTION;
use kraftd_coordinator::context::RequestContext;
use kraftd_coordinator::group::{ShardRequest, ShardResponse};
use kraftd_coordinator::transaction::{EndTxnNeeds, TxnShardRequest, TxnShardResponse};

/// AddPartitionsToTxn v4+ batches transactions (brokers' verification).
const ADD_PARTITIONS_BATCH_VERSION: i16 = 4;
/// How long a WriteTxnMarkers waits for the ISR.
const MARKERS_TIMEOUT: Duration = Duration::from_secs(30);

/// The API keys these handlers serve.
pub const TXN_API_KEYS: [ApiKey; 8] = [
    ApiKey::AddPartitionsToTxn,
    ApiKey::AddOffsetsToTxn,
    ApiKey::EndTxn,
    ApiKey::WriteTxnMarkers,
    ApiKey::TxnOffsetCommit,
    ApiKey::DescribeTransactions,
    ApiKey::ListTransactions,
    ApiKey::DescribeProducers,
];

/// One listener's view for the transaction handlers.
#[derive(Debug)]
pub struct TxnApis<'a> {
    pub context: &'a Arc<BrokerApisContext>,
}

impl TxnApis<'_> {
    fn txn(&self) -> &TransactionCoordinatorService {
        &self.context.txn_coordinator
    }

    async fn fresh_producer_id(&self) -> Result<i64, ErrorCode> {
        self.context
            .data
            .producer_ids
            .generate(Instant::now() + FORWARD_TIMEOUT)
            .await
    }

    /// InitProducerId with a transactional id.
    pub async fn init_producer_id(
        &self,
        header: &RequestHeader,
        peer: SocketAddr,
        request: InitProducerIdRequest,
    ) -> InitProducerIdResponse {
        let failed = |code: ErrorCode| InitProducerIdResponse {
            error_code: code.code(),
            producer_id: -1,
            producer_epoch: -1,
            ongoing_txn_producer_id: -1,
            ongoing_txn_producer_epoch: -1,
            ..Default::default()
        };
        if request.enable2_pc || request.keep_prepared_txn {
            // KIP-939's two-phase commit is not built.
            return failed(ErrorCode::UnsupportedVersion);
        }
        let id = request.transactional_id.clone().unwrap_or_default();
        let fresh = match self.fresh_producer_id().await {
            Ok(id) => id,
            Err(code) => return failed(code),
        };
        let shard_request = TxnShardRequest::InitProducerId {
            request,
            fresh_producer_id: fresh,
        };
        match self
            .txn()
            .call(&id, request_context(header, peer), shard_request)
            .await
        {
            Ok(TxnShardResponse::InitProducerId(r)) => r,
            Ok(_) => failed(ErrorCode::UnknownServerError),
            Err(code) => failed(code),
        }
    }

    /// Answers one of [`TXN_API_KEYS`], authorized as `auth`.
    pub async fn handle(
        &self,
        header: &RequestHeader,
        peer: SocketAddr,
        body: RequestBody,
        auth: &RequestAuth,
    ) -> ResponseBody {
        let ctx = request_context(header, peer);
        let version = header.request_api_version;
        let whole = |body: &RequestBody, code: ErrorCode| {
            error_response(body, code).unwrap_or_else(|| match body {
                RequestBody::AddOffsetsToTxn(_) => {
                    ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse {
                        error_code: code.code(),
                        ..Default::default()
                    })
                }
                RequestBody::EndTxn(_) => ResponseBody::EndTxn(EndTxnResponse {
                    error_code: code.code(),
                    producer_id: -1,
                    producer_epoch: -1,
                    ..Default::default()
                }),
                RequestBody::TxnOffsetCommit(r) => {
                    ResponseBody::TxnOffsetCommit(txn_commit_error(r, code))
                }
                RequestBody::ListTransactions(_) => {
                    ResponseBody::ListTransactions(ListTransactionsResponse {
                        error_code: code.code(),
                        ..Default::default()
                    })
                }
                _ => ResponseBody::EndTxn(EndTxnResponse {
                    error_code: code.code(),
                    ..Default::default()
                }),
            })
        };
        let may_read_group =
            |group: &str| auth.authorize(OPERATION_READ, RESOURCE_TYPE_GROUP, group);
        match body {
            RequestBody::AddPartitionsToTxn(r) => {
                ResponseBody::AddPartitionsToTxn(self.add_partitions(ctx, version, r, auth).await)
            }
            RequestBody::AddOffsetsToTxn(r)
                if !txn_auth::may_write_txn(auth, &r.transactional_id) =>
            {
                whole(
                    &RequestBody::AddOffsetsToTxn(r),
                    ErrorCode::TransactionalIdAuthorizationFailed,
                )
            }
            RequestBody::AddOffsetsToTxn(r) if !may_read_group(&r.group_id) => whole(
                &RequestBody::AddOffsetsToTxn(r),
                ErrorCode::GroupAuthorizationFailed,
            ),
            RequestBody::AddOffsetsToTxn(r) => {
                let offsets_partition = self.context.group_coordinator.partition_for(&r.group_id);
                let id = r.transactional_id.clone();
                let body = RequestBody::AddOffsetsToTxn(r.clone());
                let request = TxnShardRequest::AddOffsetsToTxn {
                    request: r,
                    offsets_partition,
                };
                match self.txn().call(&id, ctx, request).await {
                    Ok(TxnShardResponse::AddOffsetsToTxn(r)) => ResponseBody::AddOffsetsToTxn(r),
                    Ok(_) => whole(&body, ErrorCode::UnknownServerError),
                    Err(code) => whole(&body, code),
                }
            }
            RequestBody::EndTxn(r) if !txn_auth::may_write_txn(auth, &r.transactional_id) => whole(
                &RequestBody::EndTxn(r),
                ErrorCode::TransactionalIdAuthorizationFailed,
            ),
            RequestBody::EndTxn(r) => {
                let body = RequestBody::EndTxn(r.clone());
                let fresh_producer_id = if EndTxnNeeds::fresh_producer_id(version, r.producer_epoch)
                {
                    match self.fresh_producer_id().await {
                        Ok(id) => Some(id),
                        Err(code) => return whole(&body, code),
                    }
                } else {
                    None
                };
                let id = r.transactional_id.clone();
                let request = TxnShardRequest::EndTxn {
                    request: r,
                    fresh_producer_id,
                };
                match self.txn().call(&id, ctx, request).await {
                    Ok(TxnShardResponse::EndTxn(r)) => ResponseBody::EndTxn(r),
                    Ok(_) => whole(&body, ErrorCode::UnknownServerError),
                    Err(code) => whole(&body, code),
                }
            }
            RequestBody::TxnOffsetCommit(r)
                if !txn_auth::may_write_txn(auth, &r.transactional_id) =>
            {
                let code = ErrorCode::TransactionalIdAuthorizationFailed;
                ResponseBody::TxnOffsetCommit(txn_commit_error(&r, code))
            }
            RequestBody::TxnOffsetCommit(r) if !may_read_group(&r.group_id) => {
                let code = ErrorCode::GroupAuthorizationFailed;
                ResponseBody::TxnOffsetCommit(txn_commit_error(&r, code))
            }
            RequestBody::TxnOffsetCommit(r) => {
                let mut r = r;
                // v6 may name topics by id: the shard keys offsets by name.
                let image = self.context.cache.image();
                for t in &mut r.topics {
                    if t.name.is_empty() {
                        if let Some(topic) = image.topics.get(&t.topic_id) {
                            t.name = topic.name.clone();
                        }
                    }
                }
                let unreadable = txn_auth::take_unreadable_topics(auth, &mut r);
                let body = RequestBody::TxnOffsetCommit(r.clone());
                let group = r.group_id.clone();
                // The group's partition joins the transaction (V2) or is checked to be in
                // it before the offsets are written (KIP-890).
                let transaction = Transaction {
                    transactional_id: r.transactional_id.clone(),
                    producer_id: r.producer_id,
                    producer_epoch: r.producer_epoch,
                };
                let offsets_partition = self.context.group_coordinator.partition_for(&group);
                if let Err(code) = self
                    .context
                    .txn_verifier
                    .verify_offsets(&image, transaction, offsets_partition, version)
                    .await
                {
                    return whole(&body, code);
                }
                match self
                    .context
                    .group_coordinator
                    .call(&group, ctx, ShardRequest::TxnOffsetCommit(r))
                    .await
                {
                    Ok(ShardResponse::TxnOffsetCommit(mut r)) => {
                        r.topics.extend(unreadable);
                        ResponseBody::TxnOffsetCommit(r)
                    }
                    Ok(_) => whole(&body, ErrorCode::UnknownServerError),
                    Err(code) => whole(&body, code),
                }
            }
            RequestBody::WriteTxnMarkers(r) if !txn_auth::may_write_markers(auth) => {
                let code = ErrorCode::ClusterAuthorizationFailed;
                ResponseBody::WriteTxnMarkers(txn_auth::markers_refused(&r, code))
            }
            RequestBody::WriteTxnMarkers(r) => {
                let image = self.context.cache.image();
                let (response, completions) = self
                    .context
                    .data
                    .write_txn_markers(&image, r, MARKERS_TIMEOUT)
                    .await;
                for c in completions {
                    self.context.group_coordinator.complete_transaction(
                        c.partition,
                        c.producer_id,
                        c.commit,
                    );
                }
                ResponseBody::WriteTxnMarkers(response)
            }
            RequestBody::DescribeTransactions(r) => {
                let (allowed, refused) = txn_auth::split_describable(auth, &r.transactional_ids);
                let mut by_partition: BTreeMap<i32, Vec<String>> = BTreeMap::new();
                for id in &allowed {
                    by_partition
                        .entry(self.txn().partition_for(id))
                        .or_default()
                        .push(id.clone());
                }
                // Every shard's request queued before any is awaited (sequenced together).
                let calls: Vec<_> = by_partition
                    .into_iter()
                    .map(|(p, ids)| {
                        let request = TxnShardRequest::DescribeTransactions(ids.clone());
                        (ids, self.txn().submit_partition(p, ctx.clone(), request))
                    })
                    .collect();
                let mut states = Vec::new();
                for (ids, call) in calls {
                    match call.await {
                        Ok(TxnShardResponse::DescribeTransactions(s)) => states.extend(s),
                        other => {
                            let code = other.err().unwrap_or(ErrorCode::UnknownServerError);
                            states.extend(ids.into_iter().map(|id| TransactionState {
                                transactional_id: id,
                                error_code: code.code(),
                                producer_id: -1,
                                producer_epoch: -1,
                                ..Default::default()
                            }));
                        }
                    }
                }
                let rank: std::collections::HashMap<&String, usize> = r
                    .transactional_ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| (id, i))
                    .collect();
                txn_auth::retain_describable_topics(auth, &mut states);
                states.extend(refused);
                states
                    .sort_by_key(|s| rank.get(&s.transactional_id).copied().unwrap_or(usize::MAX));
                ResponseBody::DescribeTransactions(DescribeTransactionsResponse {
                    transaction_states: states,
                    ..Default::default()
                })
            }
            RequestBody::ListTransactions(r) => {
                let (answers, loading) = self
                    .txn()
                    .broadcast(TxnShardRequest::ListTransactions(r))
                    .await;
                let mut response = ListTransactionsResponse::default();
                for a in answers {
                    match a {
                        Ok(TxnShardResponse::ListTransactions(l)) => {
                            response.transaction_states.extend(l.transaction_states);
                            if l.error_code != 0 {
                                response.error_code = l.error_code;
                            }
                            response
                                .unknown_state_filters
                                .extend(l.unknown_state_filters);
                        }
                        Ok(_) => response.error_code = ErrorCode::UnknownServerError.code(),
                        Err(code) => response.error_code = code.code(),
                    }
                }
                response.unknown_state_filters.sort();
                response.unknown_state_filters.dedup();
                if loading {
                    response.error_code = ErrorCode::CoordinatorLoadInProgress.code();
                }
                txn_auth::filter_listed(auth, &mut response);
                ResponseBody::ListTransactions(response)
            }
            RequestBody::DescribeProducers(r) => {
                let image = self.context.cache.image();
                let mut response = self.context.data.describe_producers(&image, r);
                txn_auth::refuse_unreadable_producers(auth, &mut response);
                ResponseBody::DescribeProducers(response)
            }
            other => {
                warn!(api = ?other.key(), "not a transaction API");
                whole(&other, ErrorCode::UnsupportedVersion)
            }
        }
    }

    /// AddPartitionsToTxn: v0–3 one transaction (a client's), v4+ a batch (brokers'
    /// verification), each transaction to its own shard.
    async fn add_partitions(
        &self,
        ctx: RequestContext,
        version: i16,
        r: AddPartitionsToTxnRequest,
        auth: &RequestAuth,
    ) -> AddPartitionsToTxnResponse {
        if version < ADD_PARTITIONS_BATCH_VERSION {
            let id = r.v3_and_below_transactional_id.clone();
            let topics = r.v3_and_below_topics.clone();
            let image = self.context.cache.image();
            if let Some(refused) = txn_auth::add_partitions_refusal(auth, &image, &id, &topics) {
                return AddPartitionsToTxnResponse {
                    results_by_topic_v3_and_below: refused,
                    ..Default::default()
                };
            }
            return match self
                .txn()
                .call(&id, ctx, TxnShardRequest::AddPartitionsToTxn(r))
                .await
            {
                Ok(TxnShardResponse::AddPartitionsToTxn(resp)) => resp,
                other => {
                    let code = other.err().unwrap_or(ErrorCode::UnknownServerError);
                    AddPartitionsToTxnResponse {
                        results_by_topic_v3_and_below: topics
                            .iter()
                            .map(|t| topic_error(&t.name, &t.partitions, code))
                            .collect(),
                        ..Default::default()
                    }
                }
            };
        }
        // v4+ comes from brokers verifying transactional produce.
        if !auth.authorize_cluster(OPERATION_CLUSTER_ACTION) {
            return AddPartitionsToTxnResponse {
                error_code: ErrorCode::ClusterAuthorizationFailed.code(),
                ..Default::default()
            };
        }
        let mut by_partition: BTreeMap<i32, Vec<AddPartitionsToTxnTransaction>> = BTreeMap::new();
        for t in r.transactions {
            by_partition
                .entry(self.txn().partition_for(&t.transactional_id))
                .or_default()
                .push(t);
        }
        // Every shard's request queued before any is awaited (sequenced together).
        let calls: Vec<_> = by_partition
            .into_iter()
            .map(|(p, transactions)| {
                let request = AddPartitionsToTxnRequest {
                    transactions: transactions.clone(),
                    ..Default::default()
                };
                let request = TxnShardRequest::AddPartitionsToTxn(request);
                (
                    transactions,
                    self.txn().submit_partition(p, ctx.clone(), request),
                )
            })
            .collect();
        let mut response = AddPartitionsToTxnResponse::default();
        for (transactions, call) in calls {
            match call.await {
                Ok(TxnShardResponse::AddPartitionsToTxn(resp)) => response
                    .results_by_transaction
                    .extend(resp.results_by_transaction),
                other => {
                    let code = other.err().unwrap_or(ErrorCode::UnknownServerError);
                    response
                        .results_by_transaction
                        .extend(transactions.iter().map(|t| {
                            AddPartitionsToTxnResult {
                                transactional_id: t.transactional_id.clone(),
                                topic_results: t
                                    .topics
                                    .iter()
                                    .map(|tp| topic_error(&tp.name, &tp.partitions, code))
                                    .collect(),
                                ..Default::default()
                            }
                        }));
                }
            }
        }
        response
    }
}

fn topic_error(name: &str, partitions: &[i32], code: ErrorCode) -> AddPartitionsToTxnTopicResult {
    AddPartitionsToTxnTopicResult {
        name: name.to_string(),
        results_by_partition: partitions
            .iter()
            .map(|&p| AddPartitionsToTxnPartitionResult {
                partition_index: p,
                partition_error_code: code.code(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn txn_commit_error(
    r: &kraftd_protocol::messages::TxnOffsetCommitRequest,
    code: ErrorCode,
) -> TxnOffsetCommitResponse {
    use kraftd_protocol::messages::txn_offset_commit_response::{
        TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
    };
    TxnOffsetCommitResponse {
        topics: r
            .topics
            .iter()
            .map(|t| TxnOffsetCommitResponseTopic {
                name: t.name.clone(),
                topic_id: t.topic_id,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| TxnOffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: code.code(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
