//! InitProducerId with a transactional id (Kafka's `handleInitProducerId` and
//! `prepareInitProducerIdTransit`): a new id gets the service's fresh producer id at epoch
//! 0; an idle one has its epoch bumped (fencing zombies), or moves to the fresh producer id
//! when its epoch is exhausted; an ongoing transaction is fenced and aborted first
//! (CONCURRENT_TRANSACTIONS until its markers are written); KIP-360 recovery checks the
//! producer id and epoch the request names.

use std::collections::BTreeSet;

use kraftd_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse};
use kraftd_protocol::ErrorCode;

use super::metadata::{TransactionMetadata, TxnState, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TV_2};
use super::shard::TransactionCoordinatorShard;
use crate::context::RequestContext;

impl TransactionCoordinatorShard {
    pub(crate) fn init_producer_id(
        &mut self,
        ctx: &RequestContext,
        request: &InitProducerIdRequest,
        fresh_producer_id: i64,
    ) -> InitProducerIdResponse {
        let error = |code: ErrorCode| {
            // KIP-588: PRODUCER_FENCED exists from v4.
            let code = if code == ErrorCode::ProducerFenced && ctx.api_version < 4 {
                ErrorCode::InvalidProducerEpoch
            } else {
                code
            };
            InitProducerIdResponse {
                error_code: code.code(),
                producer_id: NO_PRODUCER_ID,
                producer_epoch: NO_PRODUCER_EPOCH,
                ..Default::default()
            }
        };
        let Some(id) = request
            .transactional_id
            .as_deref()
            .filter(|id| !id.is_empty())
        else {
            return error(ErrorCode::InvalidRequest);
        };
        let timeout = request.transaction_timeout_ms;
        if timeout <= 0 || timeout > self.config.max_timeout_ms {
            return error(ErrorCode::InvalidTransactionTimeout);
        }
        let expected = (request.producer_id != NO_PRODUCER_ID
            || request.producer_epoch != NO_PRODUCER_EPOCH)
            .then_some((request.producer_id, request.producer_epoch));
        let current = match self.txns.get(id) {
            Some(m) => m.clone(),
            None if fresh_producer_id < 0 => return error(ErrorCode::UnknownServerError),
            None => TransactionMetadata::new_empty(id, fresh_producer_id, timeout, self.now_ms),
        };
        // KIP-360: a producer naming its id and epoch is fenced unless the id is new, or it
        // names the current producer id, or the previous one at an exhausted epoch (a retry
        // of a rotation it never heard of).
        if let Some((pid, epoch)) = expected {
            let valid = current.producer_epoch == NO_PRODUCER_EPOCH
                || pid == current.producer_id
                || (pid == current.prev_producer_id
                    && TransactionMetadata::is_epoch_exhausted(epoch));
            if !valid {
                return error(ErrorCode::ProducerFenced);
            }
        }
        let next = match current.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => {
                return error(ErrorCode::ConcurrentTransactions)
            }
            TxnState::Ongoing => {
                // The fenced epoch is never returned: the client retries and bumps again
                // once the abort has completed.
                return match self.fence_and_abort(id) {
                    Ok(()) => error(ErrorCode::ConcurrentTransactions),
                    Err(code) => error(code),
                };
            }
            TxnState::Dead | TxnState::PrepareEpochFence => {
                return error(ErrorCode::UnknownServerError)
            }
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                if current.is_producer_epoch_exhausted()
                    && expected.is_none_or(|(_, e)| e == current.producer_epoch)
                {
                    if fresh_producer_id < 0 {
                        return error(ErrorCode::UnknownServerError);
                    }
                    // Kafka's `prepareProducerIdRotation`.
                    TransactionMetadata {
                        producer_id: fresh_producer_id,
                        producer_epoch: 0,
                        last_producer_epoch: if expected.is_some() {
                            current.producer_epoch
                        } else {
                            NO_PRODUCER_EPOCH
                        },
                        ..idle(&current, timeout, self.now_ms)
                    }
                } else {
                    match increment_epoch(&current, expected.map(|(_, e)| e)) {
                        Ok((epoch, last)) => TransactionMetadata {
                            producer_epoch: epoch,
                            last_producer_epoch: last,
                            ..idle(&current, timeout, self.now_ms)
                        },
                        Err(code) => return error(code),
                    }
                }
            }
        };
        match self.write(&current, next) {
            Ok(m) => InitProducerIdResponse {
                error_code: ErrorCode::None.code(),
                producer_id: m.producer_id,
                producer_epoch: m.producer_epoch,
                ..Default::default()
            },
            Err(code) => error(code),
        }
    }

    /// Fences the producer of an Ongoing transaction and aborts it (Kafka's
    /// `prepareFenceProducerEpoch` followed by an abort not from the client, at the
    /// cluster's transaction version): PrepareAbort at the bumped epoch (bumped once more
    /// under TV2), then its markers.
    pub(crate) fn fence_and_abort(&mut self, id: &str) -> Result<(), ErrorCode> {
        let Some(current) = self.txns.get(id).cloned() else {
            return Err(ErrorCode::InvalidProducerIdMapping);
        };
        if current.state != TxnState::Ongoing {
            return Err(ErrorCode::ConcurrentTransactions);
        }
        let fenced = if current.producer_epoch == i16::MAX {
            i16::MAX
        } else {
            current.producer_epoch + 1
        };
        let (epoch, last, tv) = if self.tv_level >= TV_2 {
            (fenced.saturating_add(1), fenced, self.tv_level)
        } else {
            (fenced, NO_PRODUCER_EPOCH, 0)
        };
        let next = TransactionMetadata {
            state: TxnState::PrepareAbort,
            producer_epoch: epoch,
            last_producer_epoch: last,
            next_producer_id: NO_PRODUCER_ID,
            txn_last_update_timestamp: self.now_ms,
            client_transaction_version: tv,
            ..current.clone()
        };
        let m = self.write(&current, next)?;
        self.send_markers(&m);
        Ok(())
    }
}

/// The metadata of an idle transactional id re-initialized at `now`.
fn idle(current: &TransactionMetadata, timeout: i32, now: i64) -> TransactionMetadata {
    TransactionMetadata {
        state: TxnState::Empty,
        txn_timeout_ms: timeout,
        partitions: BTreeSet::new(),
        txn_start_timestamp: -1,
        txn_last_update_timestamp: now,
        ..current.clone()
    }
}

/// Kafka's `prepareIncrementProducerEpoch`: the (epoch, last epoch) to write, or
/// PRODUCER_FENCED for a producer naming an epoch that is neither current nor the last.
fn increment_epoch(
    current: &TransactionMetadata,
    expected_epoch: Option<i16>,
) -> Result<(i16, i16), ErrorCode> {
    if current.is_producer_epoch_exhausted() {
        // Only reached when the request names an older epoch than an exhausted one.
        return Err(ErrorCode::ProducerFenced);
    }
    let bumped = current.producer_epoch + 1;
    match expected_epoch {
        None => Ok((bumped, NO_PRODUCER_EPOCH)),
        Some(e) if current.producer_epoch == NO_PRODUCER_EPOCH || e == current.producer_epoch => {
            Ok((bumped, current.producer_epoch))
        }
        // A retry of a bump that succeeded: the current epoch again.
        Some(e) if e == current.last_producer_epoch => {
            Ok((current.producer_epoch, current.last_producer_epoch))
        }
        Some(_) => Err(ErrorCode::ProducerFenced),
    }
}
