//! EndTxn (Kafka's `endTransactionWithTV1` for v0–4 and `endTransaction` for v5, TV2):
//! an Ongoing transaction is prepared (PrepareCommit/PrepareAbort written, answered, then
//! its markers sent); a retry of a completed end answers success; under TV2 every end bumps
//! the epoch (a new producer id when it is exhausted), an Empty or completed transaction may
//! be aborted, and the answer carries the producer id and epoch to go on with.

use kraftd_protocol::messages::{EndTxnRequest, EndTxnResponse};
use kraftd_protocol::ErrorCode;

use super::add_partitions::fenced_for_version;
use super::metadata::{TransactionMetadata, TxnState, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TV_2};
use super::shard::TransactionCoordinatorShard;
use crate::context::RequestContext;

/// What an EndTxn comes to before anything is written.
enum Decision {
    /// Answer at once: (error, producer id, epoch).
    Answer(ErrorCode, i64, i16),
    /// Prepare the end: (commit, no partition added (a TV2 abort of an idle id)).
    Prepare(bool, bool),
}

impl TransactionCoordinatorShard {
    pub(crate) fn end_txn(
        &mut self,
        ctx: &RequestContext,
        r: &EndTxnRequest,
        fresh_producer_id: Option<i64>,
    ) -> EndTxnResponse {
        let v = ctx.api_version;
        let answer = |code: ErrorCode, pid: i64, epoch: i16| EndTxnResponse {
            error_code: fenced_for_version(code, v).code(),
            producer_id: pid,
            producer_epoch: epoch,
            ..Default::default()
        };
        let fail = |code: ErrorCode| answer(code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH);
        if r.transactional_id.is_empty() {
            return fail(ErrorCode::InvalidRequest);
        }
        let Some(current) = self.txns.get(&r.transactional_id).cloned() else {
            return fail(ErrorCode::InvalidProducerIdMapping);
        };
        let tv2 = v >= 5;
        let decision = if tv2 {
            decide_tv2(&current, r)
        } else {
            decide_tv1(&current, r)
        };
        let (commit, no_partition_added) = match decision {
            Decision::Answer(code, pid, epoch) => return answer(code, pid, epoch),
            Decision::Prepare(commit, empty) => (commit, empty),
        };
        let state = if commit {
            TxnState::PrepareCommit
        } else {
            TxnState::PrepareAbort
        };
        // Kafka's `prepareAbortOrCommit`.
        let next = if tv2 {
            let next_producer_id = if current.is_producer_epoch_exhausted() {
                match fresh_producer_id {
                    Some(id) if id >= 0 => id,
                    _ => return fail(ErrorCode::UnknownServerError),
                }
            } else {
                NO_PRODUCER_ID
            };
            let epoch = if current.producer_epoch == i16::MAX && !commit {
                i16::MAX
            } else {
                current.producer_epoch.saturating_add(1)
            };
            TransactionMetadata {
                state,
                producer_epoch: epoch,
                last_producer_epoch: current.producer_epoch,
                next_producer_id,
                txn_start_timestamp: if no_partition_added {
                    self.now_ms
                } else {
                    current.txn_start_timestamp
                },
                txn_last_update_timestamp: self.now_ms,
                client_transaction_version: TV_2,
                ..current.clone()
            }
        } else {
            TransactionMetadata {
                state,
                next_producer_id: NO_PRODUCER_ID,
                txn_last_update_timestamp: self.now_ms,
                client_transaction_version: 0,
                ..current.clone()
            }
        };
        let m = match self.write(&current, next) {
            Ok(m) => m,
            Err(code) => return fail(code),
        };
        self.send_markers(&m);
        if tv2 {
            // The producer id and epoch the transaction completes at (Kafka's
            // `prepareComplete`): the bumped epoch, or epoch 0 of the next producer id.
            if m.next_producer_id != NO_PRODUCER_ID {
                answer(ErrorCode::None, m.next_producer_id, 0)
            } else {
                answer(ErrorCode::None, m.producer_id, m.producer_epoch)
            }
        } else {
            fail(ErrorCode::None)
        }
    }
}

fn decide_tv1(m: &TransactionMetadata, r: &EndTxnRequest) -> Decision {
    let no = |code| Decision::Answer(code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH);
    if m.producer_id != r.producer_id {
        return no(ErrorCode::InvalidProducerIdMapping);
    }
    if m.producer_epoch != r.producer_epoch {
        return no(ErrorCode::ProducerFenced);
    }
    let commit = r.committed;
    match m.state {
        TxnState::Ongoing => Decision::Prepare(commit, false),
        TxnState::CompleteCommit if commit => no(ErrorCode::None),
        TxnState::CompleteAbort if !commit => no(ErrorCode::None),
        TxnState::PrepareCommit if commit => no(ErrorCode::ConcurrentTransactions),
        TxnState::PrepareAbort if !commit => no(ErrorCode::ConcurrentTransactions),
        _ => no(ErrorCode::InvalidTxnState),
    }
}

/// Kafka's TV2 table: a retry names the epoch before the bump (or the last epoch of the
/// previous producer id after an overflow).
fn decide_tv2(m: &TransactionMetadata, r: &EndTxnRequest) -> Decision {
    let no = |code| Decision::Answer(code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH);
    let epoch = r.producer_epoch;
    let retry_on_overflow =
        m.prev_producer_id == r.producer_id && epoch == i16::MAX - 1 && m.producer_epoch == 0;
    let retry_on_bump = i32::from(m.producer_epoch) == i32::from(epoch) + 1;
    let valid_epoch = match m.state {
        TxnState::PrepareCommit | TxnState::PrepareAbort => retry_on_bump,
        TxnState::CompleteCommit | TxnState::CompleteAbort => {
            retry_on_bump || retry_on_overflow || epoch == m.producer_epoch
        }
        _ => epoch == m.producer_epoch,
    };
    let is_retry = retry_on_bump || retry_on_overflow;
    if m.producer_id != r.producer_id && !retry_on_overflow {
        return no(ErrorCode::InvalidProducerIdMapping);
    }
    if !valid_epoch {
        return no(ErrorCode::ProducerFenced);
    }
    let ok = Decision::Answer(ErrorCode::None, m.producer_id, m.producer_epoch);
    let commit = r.committed;
    match m.state {
        TxnState::Ongoing => Decision::Prepare(commit, false),
        TxnState::CompleteCommit if commit && is_retry => ok,
        TxnState::CompleteCommit if !commit && !is_retry => Decision::Prepare(false, true),
        TxnState::CompleteAbort if !commit && is_retry => ok,
        TxnState::CompleteAbort if !commit => Decision::Prepare(false, true),
        TxnState::PrepareCommit if commit => no(ErrorCode::ConcurrentTransactions),
        TxnState::PrepareAbort if !commit => no(ErrorCode::ConcurrentTransactions),
        TxnState::Empty if !commit => Decision::Prepare(false, true),
        _ => no(ErrorCode::InvalidTxnState),
    }
}
