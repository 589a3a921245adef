//! KIP-890 part 1: before a partition takes the first transactional batch of a producer's
//! transaction, the broker asks the transaction coordinator whether the partition is in
//! that transaction (AddPartitionsToTxn v4, `verify_only`), as Kafka's
//! `ReplicaManager.maybeStartTransactionVerificationForPartition` does. A write that
//! arrives after its transaction ended (a hanging transaction that would hold the LSO back
//! for good) is refused instead of appended. Batches of a transaction the partition
//! already holds open at the same epoch are not asked about again.
//!
//! Under transactions V2 (`transaction.version` 2, KIP-890 part 2) a Produce v12+ client
//! sends no AddPartitionsToTxn: the same request, without `verify_only`, adds the partition.
//! TxnOffsetCommit is verified the same way for the group's `__consumer_offsets` partition
//! before the group coordinator writes the offsets; from v5 (a V2 client, which sends no
//! AddOffsetsToTxn) the request adds that partition to the transaction.
//!
//! The verification is awaited in the request's dispatch, before the connection's next
//! request is read, so a client's batches still land in the order it sent them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kraftd_controller::MetadataImage;
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kraftd_protocol::messages::{AddPartitionsToTxnRequest, ProduceRequest};
use kraftd_protocol::records::RecordBatch;
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, Uuid};
use tracing::debug;

use crate::replica::replica_manager::ReplicaManager;
use crate::server::broker_channels::BrokerChannels;
use kraftd_coordinator::context::GROUP_METADATA_TOPIC_NAME;
use kraftd_coordinator::transaction::partition_for;
use kraftd_coordinator::transaction::{TRANSACTION_STATE_TOPIC_NAME, TRANSACTION_VERSION_FEATURE};

/// The batched AddPartitionsToTxn versions brokers send: v4 to verify (TV1 clients), v5
/// to add on a TV2 client's behalf.
const VERIFY_VERSION: i16 = 4;
const ADD_VERSION: i16 = 5;
/// Produce v13 names topics by id.
const PRODUCE_TOPIC_ID_VERSION: i16 = 13;
/// Produce v12+ comes from clients that run transactions V2 when the cluster does.
const PRODUCE_IMPLICIT_ADD_VERSION: i16 = 12;
/// TxnOffsetCommit v5+ likewise (such a client sends no AddOffsetsToTxn).
const TXN_OFFSET_COMMIT_IMPLICIT_ADD_VERSION: i16 = 5;
const VERIFY_TIMEOUT: Duration = Duration::from_secs(10);

/// Asks transaction coordinators about transactional produce requests.
#[derive(Debug)]
pub struct TxnVerifier {
    replica_manager: Arc<ReplicaManager>,
    brokers: BrokerChannels,
}

impl TxnVerifier {
    /// `listener`: the inter-broker listener the coordinators are reached on.
    pub fn new(
        node_id: i32,
        replica_manager: Arc<ReplicaManager>,
        listener: Option<String>,
        security: kraftd_net::ClientSecurity,
    ) -> Self {
        TxnVerifier {
            replica_manager,
            brokers: BrokerChannels::new(
                format!("broker-{node_id}-txn-verification"),
                listener,
                security,
                VERIFY_TIMEOUT,
            ),
        }
    }

    /// The partitions of a transactional produce the coordinator did not confirm, with the
    /// error to answer for each (by topic name or id as the request names it, and index).
    pub async fn verify(
        &self,
        image: &MetadataImage,
        request: &ProduceRequest,
        version: i16,
    ) -> HashMap<(String, Uuid, i32), ErrorCode> {
        let by_id = version >= PRODUCE_TOPIC_ID_VERSION;
        // Transactions V2 (KIP-890 part 2): a Produce v12+ client adds no partition itself;
        // the broker's request adds it (verify_only off) instead of checking it.
        let implicit_add = version >= PRODUCE_IMPLICIT_ADD_VERSION
            && image.features.level(TRANSACTION_VERSION_FEATURE) >= 2;
        let Some(txn_id) = request.transactional_id.clone() else {
            return HashMap::new();
        };
        // Partitions whose first transactional batch this is: (topic name, id, index).
        let mut ask: Vec<(String, Uuid, i32)> = Vec::new();
        let mut producer = None;
        for topic in &request.topic_data {
            let found = if by_id {
                image.topics.get(&topic.topic_id)
            } else {
                image.topics.get_by_name(&topic.name)
            };
            let Some(t) = found else { continue };
            for p in &topic.partition_data {
                let Some(records) = &p.records else { continue };
                let Ok(batch) = RecordBatch::parse(records.clone()) else {
                    continue;
                };
                if !batch.is_transactional() {
                    continue;
                }
                let (pid, epoch) = (batch.producer_id(), batch.producer_epoch());
                producer = Some((pid, epoch));
                let partition = self.replica_manager.partition(t.id, p.index);
                let open = partition
                    .as_ref()
                    .and_then(|h| {
                        let part = h.lock();
                        part.log().producer_state().last_entry(pid).map(|e| {
                            e.producer_epoch == epoch && e.current_txn_first_offset.is_some()
                        })
                    })
                    .unwrap_or(false);
                if !open {
                    // Kafka's maybeCreateVerificationGuard: the partition remembers the
                    // lowest sequence being verified, so no later batch of the producer
                    // gets in ahead of this one while it waits or is retried.
                    if let Some(h) = &partition {
                        h.lock().log_mut().producer_state_mut().start_verification(
                            pid,
                            batch.base_sequence(),
                            epoch,
                            implicit_add,
                            kraftd_log::clock::unix_ms(),
                        );
                    }
                    ask.push((topic.name.clone(), topic.topic_id, p.index));
                }
            }
        }
        let Some((producer_id, producer_epoch)) = producer else {
            return HashMap::new();
        };
        if ask.is_empty() {
            return HashMap::new();
        }
        let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (name, id, index) in &ask {
            let name = if by_id {
                image
                    .topics
                    .get(id)
                    .map(|t| t.name.clone())
                    .unwrap_or_default()
            } else {
                name.clone()
            };
            topics.entry(name).or_default().push(*index);
        }
        let transaction = Transaction {
            transactional_id: txn_id,
            producer_id,
            producer_epoch,
        };
        let answer = match self.ask(image, transaction, topics, implicit_add).await {
            Ok(answer) => answer,
            Err(code) => return ask.iter().map(|k| (k.clone(), code)).collect(),
        };
        let mut refused = HashMap::new();
        for (topic, index, code) in answer {
            for key in ask.iter().filter(|(name, id, i)| {
                *i == index
                    && (if by_id {
                        image.topics.get(id).is_some_and(|x| x.name == topic)
                    } else {
                        *name == topic
                    })
            }) {
                refused.insert(key.clone(), code);
            }
        }
        refused
    }

    /// KIP-890 for TxnOffsetCommit (Kafka's `CoordinatorPartitionWriter
    /// .maybeStartTransactionVerification`): before the group coordinator writes a
    /// producer's first offsets of a transaction to `__consumer_offsets-<offsets_partition>`,
    /// the transaction coordinator adds that partition to the transaction for v5+ (Kafka's
    /// `txnOffsetCommitRequestVersionToTransactionSupportedOperation`: ADD_PARTITION; a
    /// transactions V2 client sends no AddOffsetsToTxn, and without the partition in the
    /// transaction no marker ever completes the offsets) and verifies it is in it for
    /// earlier versions. `Err`: the error to answer for every partition of the commit
    /// (Kafka's `handleOperationException`: an unreachable coordinator is
    /// COORDINATOR_NOT_AVAILABLE, which the producer retries).
    pub async fn verify_offsets(
        &self,
        image: &MetadataImage,
        transaction: Transaction,
        offsets_partition: i32,
        version: i16,
    ) -> Result<(), ErrorCode> {
        let implicit_add = version >= TXN_OFFSET_COMMIT_IMPLICIT_ADD_VERSION
            && image.features.level(TRANSACTION_VERSION_FEATURE) >= 2;
        let open = image
            .topics
            .get_by_name(GROUP_METADATA_TOPIC_NAME)
            .and_then(|t| self.replica_manager.partition(t.id, offsets_partition))
            .is_some_and(|h| {
                let part = h.lock();
                part.log()
                    .producer_state()
                    .last_entry(transaction.producer_id)
                    .is_some_and(|e| {
                        e.producer_epoch == transaction.producer_epoch
                            && e.current_txn_first_offset.is_some()
                    })
            });
        if open {
            return Ok(());
        }
        let topics = BTreeMap::from([(
            GROUP_METADATA_TOPIC_NAME.to_string(),
            vec![offsets_partition],
        )]);
        let coordinator_error = |code: ErrorCode| match code {
            ErrorCode::NotEnoughReplicas => ErrorCode::CoordinatorNotAvailable,
            code => code,
        };
        let answer = self
            .ask(image, transaction, topics, implicit_add)
            .await
            .map_err(coordinator_error)?;
        match answer.first() {
            Some((_, _, code)) => Err(coordinator_error(*code)),
            None => Ok(()),
        }
    }

    /// One AddPartitionsToTxn to the transaction's coordinator for `topics` (by name):
    /// verifying (v4, `verify_only`) or adding (v5, `implicit_add`). The partitions it
    /// refused, with the error to answer, or `Err` for all of them.
    async fn ask(
        &self,
        image: &MetadataImage,
        transaction: Transaction,
        topics: BTreeMap<String, Vec<i32>>,
        implicit_add: bool,
    ) -> Result<Vec<(String, i32, ErrorCode)>, ErrorCode> {
        // Coordinator errors are retriable for the producer (Kafka answers
        // NOT_ENOUGH_REPLICAS so the client retries the produce).
        let unavailable = ErrorCode::NotEnoughReplicas;
        let state_topic = image.topics.get_by_name(TRANSACTION_STATE_TOPIC_NAME);
        let partitions = state_topic.map(|t| t.partitions.len() as i32).unwrap_or(0);
        if partitions == 0 {
            return Err(unavailable);
        }
        let leader = state_topic
            .and_then(|t| {
                t.partitions
                    .get(&partition_for(&transaction.transactional_id, partitions))
            })
            .map(|p| p.leader)
            .unwrap_or(-1);
        let Some(address) = self.brokers.address(image, leader) else {
            return Err(unavailable);
        };
        let verify = AddPartitionsToTxnRequest {
            transactions: vec![AddPartitionsToTxnTransaction {
                transactional_id: transaction.transactional_id,
                producer_id: transaction.producer_id,
                producer_epoch: transaction.producer_epoch,
                verify_only: !implicit_add,
                topics: topics
                    .into_iter()
                    .map(|(name, partitions)| AddPartitionsToTxnTopic {
                        name,
                        partitions,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let add_version = if implicit_add {
            ADD_VERSION
        } else {
            VERIFY_VERSION
        }
        .min(supported_range(ApiKey::AddPartitionsToTxn).max);
        let channel = self.brokers.channel(&address);
        let answer = channel
            .call(
                channel.next_correlation_id(),
                add_version,
                RequestBody::AddPartitionsToTxn(verify),
            )
            .await;
        let Ok(ResponseBody::AddPartitionsToTxn(r)) = answer else {
            debug!(?answer, "transaction verification failed");
            return Err(unavailable);
        };
        if r.error_code != 0 {
            return Err(map_error(r.error_code));
        }
        let mut refused = Vec::new();
        for result in &r.results_by_transaction {
            for t in &result.topic_results {
                for p in &t.results_by_partition {
                    if p.partition_error_code != 0 {
                        refused.push((
                            t.name.clone(),
                            p.partition_index,
                            map_error(p.partition_error_code),
                        ));
                    }
                }
            }
        }
        Ok(refused)
    }
}

/// The transaction a write belongs to.
#[derive(Debug, Clone)]
pub struct Transaction {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

/// A coordinator's answer as the produce answers it (Kafka's `AddPartitionsToTxnManager`):
/// PRODUCER_FENCED as INVALID_PRODUCER_EPOCH (a produce answers the abortable error, not the
/// fatal one), the transaction's other errors as they are, the coordinator's availability
/// as retriable NOT_ENOUGH_REPLICAS.
fn map_error(code: i16) -> ErrorCode {
    match ErrorCode::from_code(code) {
        Some(ErrorCode::ProducerFenced) => ErrorCode::InvalidProducerEpoch,
        Some(
            e @ (ErrorCode::InvalidTxnState
            | ErrorCode::TransactionAbortable
            | ErrorCode::InvalidProducerEpoch
            | ErrorCode::InvalidProducerIdMapping
            | ErrorCode::TransactionalIdAuthorizationFailed),
        ) => e,
        _ => ErrorCode::NotEnoughReplicas,
    }
}
