//! `TransactionCoordinatorShard` (Kafka's `TransactionCoordinator` with its
//! `TransactionStateManager`, for one partition): the transactions of one
//! `__transaction_state` partition.
//!
//! How the runtime drives it (the group shard's shape, [`crate::group`]):
//! - loading: [`TransactionCoordinatorShard::replay`] for every record of the partition in
//!   offset order, then [`TransactionCoordinatorShard::on_loaded`];
//! - requests: [`TransactionCoordinatorShard::handle`] with a [`ReplyId`] the runtime chose;
//! - markers: when the WriteTxnMarkers of a [`MarkerRequest`] have succeeded on every
//!   partition, [`TransactionCoordinatorShard::on_markers_written`];
//! - time: [`TransactionCoordinatorShard::on_timeout`] when
//!   [`TransactionCoordinatorShard::next_deadline`] has passed;
//! - after each call, [`TransactionCoordinatorShard::take_output`]: the records to append
//!   (already applied to the shard's state), the replies, and the marker work. The runtime
//!   releases replies *and marker work* only once everything the shard had written when it
//!   produced them is committed (an EndTxn is answered, and its markers sent, once its
//!   PrepareCommit/PrepareAbort is committed, as Kafka does); if an append fails, it drops
//!   the shard and loads it again from the log.
//!
//! Kafka keeps a "pending state" on a transaction while its record is being appended and
//! answers CONCURRENT_TRANSACTIONS meanwhile. Here a write is applied at once and the
//! runtime holds what depends on it, so no second operation can see a state that a failed
//! append would lose without its own reply failing too; CONCURRENT_TRANSACTIONS is answered
//! while markers are in flight (PrepareCommit, PrepareAbort), as Kafka does.

use std::collections::HashMap;
use std::sync::Arc;

use kraftd_protocol::messages::describe_transactions_response::{
    TopicData, TransactionState as DescribedTransaction,
};
use kraftd_protocol::messages::list_transactions_response::TransactionState as ListedTransaction;
use kraftd_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, EndTxnRequest, EndTxnResponse, InitProducerIdRequest,
    InitProducerIdResponse, ListTransactionsRequest, ListTransactionsResponse,
};
use kraftd_protocol::ErrorCode;

use crate::context::{ReplyId, RequestContext};
use crate::shard::{CoordinatorShard, ReplayFailure};
use crate::timer::Timer;

use super::config::TransactionCoordinatorConfig;
use super::metadata::{TopicPartition, TransactionMetadata, TxnState, NO_PRODUCER_ID, TV_2};
use super::records::TransactionRecord;

/// One request, or the part of a request that concerns this shard's transactional ids.
/// The request's version is `RequestContext::api_version`.
#[derive(Debug, Clone)]
pub enum TxnShardRequest {
    /// An InitProducerId with a transactional id. `fresh_producer_id` is an id the service
    /// allocated; the shard uses it only for a new transactional id or an exhausted epoch.
    InitProducerId {
        request: InitProducerIdRequest,
        fresh_producer_id: i64,
    },
    /// v0–3 (one client transaction), or v4–5 (batched, from brokers) holding only this
    /// shard's transactions.
    AddPartitionsToTxn(AddPartitionsToTxnRequest),
    /// `offsets_partition`: the `__consumer_offsets` partition of the request's group.
    AddOffsetsToTxn {
        request: AddOffsetsToTxnRequest,
        offsets_partition: i32,
    },
    /// `fresh_producer_id`: an id the service allocated for a TV2 (v5+) EndTxn whose epoch
    /// is exhausted (see [`EndTxnNeeds::fresh_producer_id`]); `None` otherwise.
    EndTxn {
        request: EndTxnRequest,
        fresh_producer_id: Option<i64>,
    },
    DescribeTransactions(Vec<String>),
    ListTransactions(ListTransactionsRequest),
}

/// Whether the service must allocate a producer id before an EndTxn.
#[derive(Debug)]
pub struct EndTxnNeeds;

impl EndTxnNeeds {
    /// A TV2 EndTxn at an exhausted epoch may move the producer to a new id.
    pub fn fresh_producer_id(api_version: i16, producer_epoch: i16) -> bool {
        api_version >= 5 && TransactionMetadata::is_epoch_exhausted(producer_epoch)
    }
}

/// What the shard answers, per [`TxnShardRequest`] kind.
#[derive(Debug, Clone, PartialEq)]
pub enum TxnShardResponse {
    InitProducerId(InitProducerIdResponse),
    AddPartitionsToTxn(AddPartitionsToTxnResponse),
    AddOffsetsToTxn(AddOffsetsToTxnResponse),
    EndTxn(EndTxnResponse),
    DescribeTransactions(Vec<DescribedTransaction>),
    ListTransactions(ListTransactionsResponse),
}

/// Markers to write: a WriteTxnMarkers entry for every partition of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerRequest {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The shard's leader epoch (WriteTxnMarkers' `coordinator_epoch`).
    pub coordinator_epoch: i32,
    /// COMMIT or ABORT markers.
    pub commit: bool,
    /// Sorted.
    pub partitions: Vec<TopicPartition>,
}

/// What a call produced: records to append (applied already), replies and marker work to
/// release once they, and everything written before them, are committed.
#[derive(Debug, Default)]
pub struct TxnShardOutput {
    pub records: Vec<TransactionRecord>,
    pub replies: Vec<(ReplyId, TxnShardResponse)>,
    pub markers: Vec<MarkerRequest>,
}

impl TxnShardOutput {
    pub fn is_empty(&self) -> bool {
        self.records.is_empty() && self.replies.is_empty() && self.markers.is_empty()
    }
}

/// The shard's periodic work (Kafka's scheduler tasks).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnTimerKey {
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
    AbortTimedOut,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`.
    RemoveExpired,
}

/// The state of one `__transaction_state` partition (see the module docs).
#[derive(Debug)]
pub struct TransactionCoordinatorShard {
    pub(crate) partition: i32,
    pub(crate) config: Arc<TransactionCoordinatorConfig>,
    pub(crate) coordinator_epoch: i32,
    /// The cluster's finalized `transaction.version` (the record value version; the
    /// version of aborts the coordinator starts itself).
    pub(crate) tv_level: i16,
    pub(crate) txns: HashMap<String, TransactionMetadata>,
    pub(crate) timer: Timer<TxnTimerKey>,
    pub(crate) out: TxnShardOutput,
    pub(crate) now_ms: i64,
}

impl TransactionCoordinatorShard {
    /// A shard for `partition`, led at `coordinator_epoch` (the partition's leader epoch).
    pub fn new(
        partition: i32,
        config: Arc<TransactionCoordinatorConfig>,
        coordinator_epoch: i32,
    ) -> Self {
        TransactionCoordinatorShard {
            partition,
            config,
            coordinator_epoch,
            tv_level: TV_2,
            txns: HashMap::new(),
            timer: Timer::default(),
            out: TxnShardOutput::default(),
            now_ms: 0,
        }
    }

    pub fn partition(&self) -> i32 {
        self.partition
    }

    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }

    pub fn config(&self) -> &TransactionCoordinatorConfig {
        &self.config
    }

    /// The cluster's finalized `transaction.version` changed (2 by default, as a Kafka 4.x
    /// cluster's).
    pub fn set_transaction_version_level(&mut self, level: i16) {
        self.tv_level = level;
    }

    pub fn transaction(&self, transactional_id: &str) -> Option<&TransactionMetadata> {
        self.txns.get(transactional_id)
    }

    pub fn transaction_count(&self) -> usize {
        self.txns.len()
    }

    /// Applies one record of the partition's log (Kafka's `TransactionLog.read`): a value
    /// replaces the transactional id's metadata, a tombstone removes it.
    pub fn replay(
        &mut self,
        offset: i64,
        _producer_id: i64,
        record: TransactionRecord,
    ) -> Result<(), ReplayFailure> {
        let id = record.transactional_id().to_string();
        match record.to_metadata() {
            Ok(Some(m)) if m.state != TxnState::Dead => {
                self.txns.insert(id, m);
            }
            Ok(_) => {
                self.txns.remove(&id);
            }
            Err(reason) => {
                return Err(ReplayFailure::corrupt_record(
                    <Self as CoordinatorShard>::TOPIC,
                    self.partition,
                    offset,
                    &reason,
                ))
            }
        }
        Ok(())
    }

    /// After the last record of a load: the periodic tasks, and the marker work of every
    /// transaction loaded in PrepareCommit or PrepareAbort.
    pub fn on_loaded(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
        self.timer.schedule(
            TxnTimerKey::AbortTimedOut,
            now_ms + self.config.abort_timed_out_interval_ms,
        );
        self.timer.schedule(
            TxnTimerKey::RemoveExpired,
            now_ms + self.config.remove_expired_interval_ms,
        );
        let mut preparing: Vec<TransactionMetadata> = self
            .txns
            .values()
            .filter(|m| matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort))
            .cloned()
            .collect();
        preparing.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        for m in preparing {
            self.send_markers(&m);
        }
    }

    /// Handles one request; its reply comes out of
    /// [`TransactionCoordinatorShard::take_output`] under `reply`.
    pub fn handle(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        reply: ReplyId,
        request: TxnShardRequest,
    ) {
        self.now_ms = now_ms;
        let response = match request {
            TxnShardRequest::InitProducerId {
                request,
                fresh_producer_id,
            } => TxnShardResponse::InitProducerId(self.init_producer_id(
                ctx,
                &request,
                fresh_producer_id,
            )),
            TxnShardRequest::AddPartitionsToTxn(r) => {
                TxnShardResponse::AddPartitionsToTxn(self.add_partitions_to_txn(ctx, r))
            }
            TxnShardRequest::AddOffsetsToTxn {
                request,
                offsets_partition,
            } => TxnShardResponse::AddOffsetsToTxn(self.add_offsets_to_txn(
                ctx,
                &request,
                offsets_partition,
            )),
            TxnShardRequest::EndTxn {
                request,
                fresh_producer_id,
            } => TxnShardResponse::EndTxn(self.end_txn(ctx, &request, fresh_producer_id)),
            TxnShardRequest::DescribeTransactions(ids) => TxnShardResponse::DescribeTransactions(
                ids.iter().map(|id| self.describe(id)).collect(),
            ),
            TxnShardRequest::ListTransactions(r) => {
                TxnShardResponse::ListTransactions(self.list(ctx, &r))
            }
        };
        self.out.replies.push((reply, response));
    }

    /// The WriteTxnMarkers of a [`MarkerRequest`] succeeded on all its partitions: the
    /// transaction completes (CompleteCommit/CompleteAbort, partitions cleared; under TV2 a
    /// producer whose epoch overflowed moves to its next producer id). A call for a
    /// transaction no longer preparing with that producer id and epoch is ignored.
    pub fn on_markers_written(
        &mut self,
        now_ms: i64,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
    ) {
        self.now_ms = now_ms;
        let Some(current) = self.txns.get(transactional_id).cloned() else {
            return;
        };
        if current.producer_id != producer_id
            || current.producer_epoch != producer_epoch
            || !matches!(
                current.state,
                TxnState::PrepareCommit | TxnState::PrepareAbort
            )
        {
            return;
        }
        if let Err(code) = self.complete(&current) {
            tracing::warn!(
                "transactional id {transactional_id}: writing its completion failed: {code:?}"
            );
        }
    }

    /// The earliest time [`TransactionCoordinatorShard::on_timeout`] has work.
    pub fn next_deadline(&self) -> Option<i64> {
        self.timer.next_deadline()
    }

    /// Runs every periodic task due at `now_ms`.
    pub fn on_timeout(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
        while let Some(key) = self.timer.pop_expired(now_ms) {
            match key {
                TxnTimerKey::AbortTimedOut => {
                    self.abort_timed_out_transactions();
                    self.timer.schedule(
                        TxnTimerKey::AbortTimedOut,
                        now_ms + self.config.abort_timed_out_interval_ms,
                    );
                }
                TxnTimerKey::RemoveExpired => {
                    self.remove_expired_transactional_ids();
                    self.timer.schedule(
                        TxnTimerKey::RemoveExpired,
                        now_ms + self.config.remove_expired_interval_ms,
                    );
                }
            }
        }
    }

    /// The records, replies and marker work produced since the last call.
    pub fn take_output(&mut self) -> TxnShardOutput {
        std::mem::take(&mut self.out)
    }

    /// Writes `next` as the new metadata of its transactional id, `current` being what it
    /// has now (a fresh id's template when it has none): Kafka's transition rules are
    /// checked, the record is queued and the state applied. A record too large for one
    /// batch, or a transition Kafka forbids, changes nothing (UNKNOWN_SERVER_ERROR, as
    /// Kafka's append error mapping answers a too-large record).
    pub(crate) fn write(
        &mut self,
        current: &TransactionMetadata,
        next: TransactionMetadata,
    ) -> Result<TransactionMetadata, ErrorCode> {
        let next = current.transit(next).map_err(|e| {
            tracing::error!("{e}");
            ErrorCode::UnknownServerError
        })?;
        let record = TransactionRecord::from_metadata(&next, self.tv_level);
        self.check_size(&record)?;
        self.txns
            .insert(next.transactional_id.clone(), next.clone());
        self.out.records.push(record);
        Ok(next)
    }

    fn check_size(&self, record: &TransactionRecord) -> Result<(), ErrorCode> {
        let (k, v) = record.encode().map_err(|_| ErrorCode::UnknownServerError)?;
        // The batch header and one record's framing.
        let size = 61 + 21 + k.len() + v.map_or(0, |v| v.len());
        if size > self.config.max_batch_bytes {
            return Err(ErrorCode::UnknownServerError);
        }
        Ok(())
    }

    /// Queues the marker work of a transaction that has just been prepared; one with no
    /// partitions (a TV2 abort of an empty transaction) completes at once.
    pub(crate) fn send_markers(&mut self, m: &TransactionMetadata) {
        if m.partitions.is_empty() {
            if let Err(code) = self.complete(m) {
                tracing::warn!(
                    "transactional id {}: writing its completion failed: {code:?}",
                    m.transactional_id
                );
            }
            return;
        }
        self.out.markers.push(MarkerRequest {
            transactional_id: m.transactional_id.clone(),
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            coordinator_epoch: self.coordinator_epoch,
            commit: m.state == TxnState::PrepareCommit,
            partitions: m.partitions.iter().cloned().collect(),
        });
    }

    /// Kafka's `prepareComplete`.
    fn complete(&mut self, current: &TransactionMetadata) -> Result<(), ErrorCode> {
        let state = if current.state == TxnState::PrepareCommit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        };
        let (producer_id, producer_epoch) =
            if current.supports_epoch_bump() && current.next_producer_id != NO_PRODUCER_ID {
                (current.next_producer_id, 0)
            } else {
                (current.producer_id, current.producer_epoch)
            };
        let next = TransactionMetadata {
            state,
            producer_id,
            producer_epoch,
            next_producer_id: NO_PRODUCER_ID,
            partitions: Default::default(),
            txn_last_update_timestamp: self.now_ms,
            ..current.clone()
        };
        self.write(current, next).map(|_| ())
    }

    /// Kafka's `abortTimedOutTransactions`: every Ongoing transaction older than its
    /// timeout is fenced and aborted.
    fn abort_timed_out_transactions(&mut self) {
        let now = self.now_ms;
        let mut timed_out: Vec<String> = self
            .txns
            .values()
            .filter(|m| {
                m.state == TxnState::Ongoing
                    && m.txn_start_timestamp
                        .saturating_add(i64::from(m.txn_timeout_ms))
                        < now
            })
            .map(|m| m.transactional_id.clone())
            .collect();
        timed_out.sort();
        for id in timed_out {
            if let Err(code) = self.fence_and_abort(&id) {
                tracing::warn!("transactional id {id}: aborting it on timeout failed: {code:?}");
            }
        }
    }

    /// Kafka's `removeExpiredTransactionalIds`: idle ids whose last update is older than
    /// `transactional.id.expiration.ms` are removed by a tombstone.
    fn remove_expired_transactional_ids(&mut self) {
        let horizon = self.now_ms - self.config.transactional_id_expiration_ms;
        let mut expired: Vec<String> = self
            .txns
            .values()
            .filter(|m| m.state.expiration_allowed() && m.txn_last_update_timestamp <= horizon)
            .map(|m| m.transactional_id.clone())
            .collect();
        expired.sort();
        for id in expired {
            let record = TransactionRecord::tombstone(&id);
            if self.check_size(&record).is_ok() {
                self.txns.remove(&id);
                self.out.records.push(record);
            }
        }
    }

    fn describe(&self, id: &str) -> DescribedTransaction {
        let mut d = DescribedTransaction {
            transactional_id: id.to_string(),
            ..Default::default()
        };
        if id.is_empty() {
            d.error_code = ErrorCode::InvalidRequest.code();
            return d;
        }
        let Some(m) = self.txns.get(id) else {
            d.error_code = ErrorCode::TransactionalIdNotFound.code();
            return d;
        };
        d.error_code = ErrorCode::None.code();
        d.producer_id = m.producer_id;
        d.producer_epoch = m.producer_epoch;
        d.transaction_state = m.state.name().to_string();
        d.transaction_timeout_ms = m.txn_timeout_ms;
        d.transaction_start_time_ms = m.txn_start_timestamp;
        d.topics = m
            .partitions_by_topic()
            .into_iter()
            .map(|(topic, partitions)| TopicData {
                topic,
                partitions,
                ..Default::default()
            })
            .collect();
        d
    }

    /// Kafka's `listTransactionStates`: by state names (unknown names reported back),
    /// producer ids, v1's duration (running longer than it) and v2's id pattern.
    fn list(&self, ctx: &RequestContext, r: &ListTransactionsRequest) -> ListTransactionsResponse {
        let mut response = ListTransactionsResponse::default();
        let mut states = Vec::new();
        for name in &r.state_filters {
            match TxnState::from_name(name) {
                Some(s) => states.push(s),
                None => response.unknown_state_filters.push(name.clone()),
            }
        }
        let pattern = match r.transactional_id_pattern.as_deref() {
            Some(p) if ctx.api_version >= 2 && !p.is_empty() => {
                match regex::Regex::new(&format!("^(?:{p})$")) {
                    Ok(re) => Some(re),
                    Err(_) => {
                        response.error_code = ErrorCode::InvalidRegularExpression.code();
                        return response;
                    }
                }
            }
            _ => None,
        };
        let duration = if ctx.api_version >= 1 {
            r.duration_filter
        } else {
            -1
        };
        let mut listed: Vec<ListedTransaction> = self
            .txns
            .values()
            .filter(|m| {
                (r.state_filters.is_empty() || states.contains(&m.state))
                    && (r.producer_id_filters.is_empty()
                        || r.producer_id_filters.contains(&m.producer_id))
                    && (duration < 0 || self.now_ms - m.txn_start_timestamp > duration)
                    && pattern
                        .as_ref()
                        .is_none_or(|re| re.is_match(&m.transactional_id))
            })
            .map(|m| ListedTransaction {
                transactional_id: m.transactional_id.clone(),
                producer_id: m.producer_id,
                transaction_state: m.state.name().to_string(),
                ..Default::default()
            })
            .collect();
        listed.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        response.transaction_states = listed;
        response
    }
}
