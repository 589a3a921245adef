//! AddPartitionsToTxn (Kafka's `handleAddPartitionsToTransaction` and, for v4+'s
//! `verify_only`, `handleVerifyPartitionsInTransaction`) and AddOffsetsToTxn (the group's
//! `__consumer_offsets` partition added as any other).

use std::collections::BTreeSet;

use kraftd_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kraftd_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kraftd_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
};
use kraftd_protocol::ErrorCode;

use super::metadata::{TopicPartition, TransactionMetadata, TxnState, TV_2};
use super::shard::TransactionCoordinatorShard;
use crate::context::RequestContext;
use crate::context::GROUP_METADATA_TOPIC_NAME;

/// The transaction version an AddPartitionsToTxn implies: v4+ adds come from a broker on
/// behalf of a TV2 producer (KIP-890 part 2); v0–3 from a TV1 client.
fn tv_for_add_partitions(api_version: i16) -> i16 {
    if api_version >= 4 {
        TV_2
    } else {
        0
    }
}

fn partitions_of(topics: &[AddPartitionsToTxnTopic]) -> BTreeSet<TopicPartition> {
    topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.name.clone(), *p)))
        .collect()
}

/// Results by topic, in the request's order, each partition with the code `code_of` gives.
fn topic_results(
    topics: &[AddPartitionsToTxnTopic],
    code_of: impl Fn(&str, i32) -> ErrorCode,
) -> Vec<AddPartitionsToTxnTopicResult> {
    topics
        .iter()
        .map(|t| AddPartitionsToTxnTopicResult {
            name: t.name.clone(),
            results_by_partition: t
                .partitions
                .iter()
                .map(|p| AddPartitionsToTxnPartitionResult {
                    partition_index: *p,
                    partition_error_code: code_of(&t.name, *p).code(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect()
}

impl TransactionCoordinatorShard {
    pub(crate) fn add_partitions_to_txn(
        &mut self,
        ctx: &RequestContext,
        r: AddPartitionsToTxnRequest,
    ) -> AddPartitionsToTxnResponse {
        let v = ctx.api_version;
        if v < 4 {
            let partitions = partitions_of(&r.v3_and_below_topics);
            let code = self.add_partitions(
                &r.v3_and_below_transactional_id,
                r.v3_and_below_producer_id,
                r.v3_and_below_producer_epoch,
                partitions,
                tv_for_add_partitions(v),
            );
            let code = fenced_for_version(code, v);
            return AddPartitionsToTxnResponse {
                results_by_topic_v3_and_below: topic_results(&r.v3_and_below_topics, |_, _| code),
                ..Default::default()
            };
        }
        let results = r
            .transactions
            .iter()
            .map(|t| {
                let topic_results = if t.verify_only {
                    match self.verify_partitions(
                        &t.transactional_id,
                        t.producer_id,
                        t.producer_epoch,
                    ) {
                        Err(code) => {
                            tracing::info!(
                                transactional_id = %t.transactional_id,
                                producer_id = t.producer_id,
                                producer_epoch = t.producer_epoch,
                                error = ?code,
                                "a broker's transaction verification refused"
                            );
                            topic_results(&t.topics, |_, _| code)
                        }
                        Ok(m) => {
                            // KIP-890: v5 callers know TRANSACTION_ABORTABLE.
                            let missing = if v >= 5 {
                                ErrorCode::TransactionAbortable
                            } else {
                                ErrorCode::InvalidTxnState
                            };
                            let asked = partitions_of(&t.topics);
                            if !asked.is_subset(&m.partitions) {
                                tracing::info!(
                                    transactional_id = %t.transactional_id,
                                    state = ?m.state,
                                    ?asked,
                                    held = ?m.partitions,
                                    "a broker verified partitions not in the transaction"
                                );
                            }
                            topic_results(&t.topics, |topic, p| {
                                if m.partitions.contains(&(topic.to_string(), p)) {
                                    ErrorCode::None
                                } else {
                                    missing
                                }
                            })
                        }
                    }
                } else {
                    let code = self.add_partitions(
                        &t.transactional_id,
                        t.producer_id,
                        t.producer_epoch,
                        partitions_of(&t.topics),
                        tv_for_add_partitions(v),
                    );
                    topic_results(&t.topics, |_, _| code)
                };
                AddPartitionsToTxnResult {
                    transactional_id: t.transactional_id.clone(),
                    topic_results,
                    ..Default::default()
                }
            })
            .collect();
        AddPartitionsToTxnResponse {
            results_by_transaction: results,
            ..Default::default()
        }
    }

    pub(crate) fn add_offsets_to_txn(
        &mut self,
        ctx: &RequestContext,
        r: &AddOffsetsToTxnRequest,
        offsets_partition: i32,
    ) -> AddOffsetsToTxnResponse {
        let partitions =
            BTreeSet::from([(GROUP_METADATA_TOPIC_NAME.to_string(), offsets_partition)]);
        let code = self.add_partitions(
            &r.transactional_id,
            r.producer_id,
            r.producer_epoch,
            partitions,
            0,
        );
        AddOffsetsToTxnResponse {
            error_code: fenced_for_version(code, ctx.api_version).code(),
            ..Default::default()
        }
    }

    /// Kafka's `handleVerifyPartitionsInTransaction` checks: the transaction to look into.
    fn verify_partitions(
        &self,
        id: &str,
        producer_id: i64,
        producer_epoch: i16,
    ) -> Result<&TransactionMetadata, ErrorCode> {
        if id.is_empty() {
            return Err(ErrorCode::InvalidRequest);
        }
        let m = self
            .txns
            .get(id)
            .ok_or(ErrorCode::InvalidProducerIdMapping)?;
        if m.producer_id != producer_id {
            return Err(ErrorCode::InvalidProducerIdMapping);
        }
        if m.producer_epoch != producer_epoch {
            return Err(ErrorCode::ProducerFenced);
        }
        if matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            return Err(ErrorCode::ConcurrentTransactions);
        }
        Ok(m)
    }

    /// Adds partitions to a transaction (Kafka's `prepareAddPartitions`): the one error of
    /// every partition.
    fn add_partitions(
        &mut self,
        id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: BTreeSet<TopicPartition>,
        client_tv: i16,
    ) -> ErrorCode {
        if id.is_empty() {
            return ErrorCode::InvalidRequest;
        }
        let Some(current) = self.txns.get(id).cloned() else {
            return ErrorCode::InvalidProducerIdMapping;
        };
        if current.producer_id != producer_id {
            return ErrorCode::InvalidProducerIdMapping;
        }
        if current.producer_epoch != producer_epoch {
            return ErrorCode::ProducerFenced;
        }
        match current.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => {
                return ErrorCode::ConcurrentTransactions
            }
            TxnState::Ongoing if partitions.is_subset(&current.partitions) => {
                return ErrorCode::None
            }
            _ => {}
        }
        let start = match current.state {
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => self.now_ms,
            _ => current.txn_start_timestamp,
        };
        let mut all = current.partitions.clone();
        all.extend(partitions);
        let next = TransactionMetadata {
            state: TxnState::Ongoing,
            partitions: all,
            txn_start_timestamp: start,
            txn_last_update_timestamp: self.now_ms,
            client_transaction_version: client_tv,
            ..current.clone()
        };
        match self.write(&current, next) {
            Ok(_) => ErrorCode::None,
            Err(code) => code,
        }
    }
}

/// KIP-588: before v2 of AddPartitionsToTxn, AddOffsetsToTxn and EndTxn a fenced producer
/// is told INVALID_PRODUCER_EPOCH.
pub(crate) fn fenced_for_version(code: ErrorCode, api_version: i16) -> ErrorCode {
    if code == ErrorCode::ProducerFenced && api_version < 2 {
        ErrorCode::InvalidProducerEpoch
    } else {
        code
    }
}
