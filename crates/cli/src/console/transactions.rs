//! The console's transactions page: every transaction the coordinators hold, with its state
//! and age, and the hanging ones by `kafka-transactions find-hanging`'s rule — all asked as a
//! client would (and, under an authorizer, as the signed-in user: the brokers leave out what
//! it may not describe).
//!
//! - Transactions: ListTransactions to every unfenced broker (each answers for the
//!   transactional ids it coordinates), then DescribeTransactions to that broker for them:
//!   state, producer id and epoch, timeout, start time, the partitions written.
//! - Hanging (Kafka's `FindHangingTransactionsCommand`): DescribeProducers to each leader for
//!   the partitions it leads; an active producer with an open transaction
//!   (`CurrentTxnStartOffset` ≥ 0) whose last write is older than the search's
//!   `max_timeout_ms` (the tool's `--max-transaction-timeout`, 15 minutes by default) is a
//!   candidate, and it hangs when no coordinator lists its producer id, or when its
//!   transaction's description does not name that partition (the coordinator will write no
//!   marker there). That scan is O(partitions): it runs at most once per
//!   [`HANGING_SCAN_INTERVAL`] and its answer is kept meanwhile.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::describe_producers_request::TopicRequest;
use kraftd_protocol::messages::{
    DescribeProducersRequest, DescribeTransactionsRequest, ListTransactionsRequest,
};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody};
use serde_json::{json, Value};

use super::client::KafkaAccess;
use crate::metadata_quorum::error_name;

/// How often the O(partitions) hanging scan runs at most.
pub const HANGING_SCAN_INTERVAL: Duration = Duration::from_secs(30);
/// `kafka-transactions find-hanging`'s default `--max-transaction-timeout` (15 minutes).
pub const DEFAULT_MAX_TIMEOUT_MS: i64 = 15 * 60 * 1000;
/// Partitions per DescribeProducers (the tool's `MAX_BATCH_SIZE`).
const MAX_BATCH_SIZE: usize = 500;

/// One transaction as its coordinator describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Transaction {
    pub transactional_id: String,
    pub coordinator: i32,
    pub state: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    /// -1 when no transaction is open.
    pub start_time_ms: i64,
    /// (topic, partition) written in the open transaction.
    pub partitions: Vec<(String, i32)>,
}

/// An open transaction on a partition, from its leader's producer state.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenTransaction {
    pub topic: String,
    pub partition: i32,
    pub leader: i32,
    pub producer_id: i64,
    pub producer_epoch: i32,
    pub start_offset: i64,
    pub last_timestamp: i64,
}

/// Kafka's `filterHangingTransactions`: the candidates whose coordinator will write no
/// marker — no transaction lists their producer id, or the one that does does not name
/// their partition.
pub fn hanging<'a>(
    candidates: &'a [OpenTransaction],
    transactions: &[Transaction],
) -> Vec<(&'a OpenTransaction, Option<String>)> {
    let by_producer: HashMap<i64, &Transaction> =
        transactions.iter().map(|t| (t.producer_id, t)).collect();
    candidates
        .iter()
        .filter_map(|c| match by_producer.get(&c.producer_id) {
            None => Some((c, None)),
            Some(t) => (!t
                .partitions
                .iter()
                .any(|(topic, p)| *topic == c.topic && *p == c.partition))
            .then(|| (c, Some(t.transactional_id.clone()))),
        })
        .collect()
}

/// The last hanging scan: when, and its rows.
#[derive(Debug, Default)]
pub struct HangingScan {
    at: Option<Instant>,
    at_ms: i64,
    candidates: Vec<OpenTransaction>,
    errors: Vec<String>,
}

impl KafkaAccess {
    /// Every transaction the unfenced brokers coordinate, described; and the errors met.
    pub async fn transactions(&self, image: &MetadataImage) -> (Vec<Transaction>, Vec<String>) {
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for b in image.cluster.brokers().filter(|b| !b.fenced) {
            let Some(address) = self.address(image, b.id) else {
                continue;
            };
            let list = RequestBody::ListTransactions(ListTransactionsRequest {
                duration_filter: -1,
                ..Default::default()
            });
            let ids: Vec<String> = match self
                .ask(&address, ApiKey::ListTransactions, i16::MAX, list)
                .await
            {
                Ok(ResponseBody::ListTransactions(r)) if r.error_code == 0 => r
                    .transaction_states
                    .into_iter()
                    .map(|t| t.transactional_id)
                    .collect(),
                Ok(ResponseBody::ListTransactions(r)) => {
                    errors.push(format!("broker {}: {}", b.id, error_name(r.error_code)));
                    continue;
                }
                Ok(_) => {
                    errors.push(format!("broker {}: another response", b.id));
                    continue;
                }
                Err(e) => {
                    errors.push(format!("broker {}: {e}", b.id));
                    continue;
                }
            };
            if ids.is_empty() {
                continue;
            }
            let describe = RequestBody::DescribeTransactions(DescribeTransactionsRequest {
                transactional_ids: ids,
                ..Default::default()
            });
            match self
                .ask(&address, ApiKey::DescribeTransactions, i16::MAX, describe)
                .await
            {
                Ok(ResponseBody::DescribeTransactions(r)) => {
                    for t in r.transaction_states {
                        if t.error_code != 0 {
                            errors.push(format!(
                                "{}: {}",
                                t.transactional_id,
                                error_name(t.error_code)
                            ));
                            continue;
                        }
                        out.push(Transaction {
                            transactional_id: t.transactional_id,
                            coordinator: b.id,
                            state: t.transaction_state,
                            producer_id: t.producer_id,
                            producer_epoch: t.producer_epoch,
                            timeout_ms: t.transaction_timeout_ms,
                            start_time_ms: t.transaction_start_time_ms,
                            partitions: t
                                .topics
                                .into_iter()
                                .flat_map(|d| {
                                    let topic = d.topic;
                                    d.partitions.into_iter().map(move |p| (topic.clone(), p))
                                })
                                .collect(),
                        });
                    }
                }
                Ok(_) => errors.push(format!("broker {}: another response", b.id)),
                Err(e) => errors.push(format!("broker {}: {e}", b.id)),
            }
        }
        out.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        (out, errors)
    }

    /// The open transactions older than `max_timeout_ms` on every partition, from each
    /// leader's DescribeProducers (the tool's `collectCandidateOpenTransactions`).
    pub async fn open_transactions(
        &self,
        image: &MetadataImage,
        now_ms: i64,
        max_timeout_ms: i64,
    ) -> (Vec<OpenTransaction>, Vec<String>) {
        let mut by_leader: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
        for topic in image.topics.iter() {
            for (index, p) in &topic.partitions {
                if p.has_leader() {
                    by_leader
                        .entry(p.leader)
                        .or_default()
                        .push((topic.name.clone(), *index));
                }
            }
        }
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (leader, partitions) in by_leader {
            let Some(address) = self.address(image, leader) else {
                continue;
            };
            for batch in partitions.chunks(MAX_BATCH_SIZE) {
                let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
                for (t, p) in batch {
                    topics.entry(t.as_str()).or_default().push(*p);
                }
                let request = RequestBody::DescribeProducers(DescribeProducersRequest {
                    topics: topics
                        .into_iter()
                        .map(|(name, partition_indexes)| TopicRequest {
                            name: name.to_string(),
                            partition_indexes,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                });
                match self
                    .ask(&address, ApiKey::DescribeProducers, i16::MAX, request)
                    .await
                {
                    Ok(ResponseBody::DescribeProducers(r)) => {
                        for t in r.topics {
                            for p in t.partitions {
                                if p.error_code != 0 {
                                    // Unauthorized or moved: not this viewer's to see.
                                    continue;
                                }
                                for s in p.active_producers {
                                    if s.current_txn_start_offset >= 0
                                        && now_ms - s.last_timestamp > max_timeout_ms
                                    {
                                        out.push(OpenTransaction {
                                            topic: t.name.clone(),
                                            partition: p.partition_index,
                                            leader,
                                            producer_id: s.producer_id,
                                            producer_epoch: s.producer_epoch,
                                            start_offset: s.current_txn_start_offset,
                                            last_timestamp: s.last_timestamp,
                                        });
                                    }
                                }
                            }
                        }
                    }
                    Ok(_) => errors.push(format!("broker {leader}: another response")),
                    Err(e) => errors.push(format!("broker {leader}: {e}")),
                }
            }
        }
        (out, errors)
    }

    /// `/api/transactions`: the transactions and the hanging ones, the scan redone when
    /// `scan` is older than [`HANGING_SCAN_INTERVAL`].
    pub async fn transactions_page(
        &self,
        image: &MetadataImage,
        scan: &tokio::sync::Mutex<HangingScan>,
        max_timeout_ms: i64,
    ) -> Value {
        let now_ms = kraftd_log::clock::unix_ms();
        let (transactions, mut errors) = self.transactions(image).await;
        let mut scan = scan.lock().await;
        if scan
            .at
            .is_none_or(|at| at.elapsed() >= HANGING_SCAN_INTERVAL)
        {
            let (candidates, scan_errors) =
                self.open_transactions(image, now_ms, max_timeout_ms).await;
            *scan = HangingScan {
                at: Some(Instant::now()),
                at_ms: now_ms,
                candidates,
                errors: scan_errors,
            };
        }
        errors.extend(scan.errors.iter().cloned());
        let hanging: Vec<Value> = hanging(&scan.candidates, &transactions)
            .into_iter()
            .map(|(c, id)| {
                json!({
                    "topic": c.topic,
                    "partition": c.partition,
                    "leader": c.leader,
                    "producer_id": c.producer_id,
                    "producer_epoch": c.producer_epoch,
                    "start_offset": c.start_offset,
                    "last_timestamp": c.last_timestamp,
                    "age_ms": now_ms - c.last_timestamp,
                    "transactional_id": id,
                })
            })
            .collect();
        let rows: Vec<Value> = transactions
            .iter()
            .map(|t| {
                json!({
                    "transactional_id": t.transactional_id,
                    "coordinator": t.coordinator,
                    "state": t.state,
                    "producer_id": t.producer_id,
                    "producer_epoch": t.producer_epoch,
                    "timeout_ms": t.timeout_ms,
                    "start_time_ms": t.start_time_ms,
                    "age_ms": (t.start_time_ms >= 0).then(|| now_ms - t.start_time_ms),
                    "partitions": t.partitions.iter()
                        .map(|(topic, p)| format!("{topic}-{p}"))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "transactions": rows,
            "hanging": hanging,
            "hanging_checked_at_ms": scan.at_ms,
            "max_timeout_ms": max_timeout_ms,
            "errors": errors,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(topic: &str, partition: i32, producer_id: i64) -> OpenTransaction {
        OpenTransaction {
            topic: topic.into(),
            partition,
            leader: 1,
            producer_id,
            producer_epoch: 0,
            start_offset: 5,
            last_timestamp: 0,
        }
    }

    fn txn(id: &str, producer_id: i64, partitions: &[(&str, i32)]) -> Transaction {
        Transaction {
            transactional_id: id.into(),
            coordinator: 1,
            state: "Ongoing".into(),
            producer_id,
            producer_epoch: 0,
            timeout_ms: 60_000,
            start_time_ms: 0,
            partitions: partitions
                .iter()
                .map(|(t, p)| (t.to_string(), *p))
                .collect(),
        }
    }

    #[test]
    fn hanging_is_find_hangings_rule() {
        let candidates = [open("a", 0, 7), open("a", 1, 8), open("b", 0, 9)];
        let transactions = [txn("t8", 8, &[("a", 1)]), txn("t9", 9, &[("a", 0)])];
        let got: Vec<(i64, Option<String>)> = hanging(&candidates, &transactions)
            .into_iter()
            .map(|(c, id)| (c.producer_id, id))
            .collect();
        // 7: no coordinator knows it; 8: its transaction names the partition (a marker is
        // coming); 9: its transaction does not name b-0.
        assert_eq!(got, [(7, None), (9, Some("t9".to_string()))]);
    }
}
