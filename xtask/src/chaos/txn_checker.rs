//! The transactional workload's checks: the anomalies Jepsen found in Kafka's transactions
//! (2024) and in Redpanda's, over what a transactional producer did (each transaction's
//! records and its outcome as the client knew it) and what `read_committed` consumers read,
//! during the faults and to the end afterwards.
//!
//! - `aborted read`: a record of an aborted transaction read by a `read_committed` consumer
//!   (during the faults or at the end).
//! - `txn lost`: a committed transaction none of whose records the final read has; `moved`:
//!   a committed record at another offset than the leader acknowledged it at.
//! - `txn partial`: a transaction (whatever its outcome) some of whose records the final
//!   `read_committed` read has and others not: its writes seen partially.
//! - `txn two states`: a transaction whose outcome the client does not know (its producer
//!   failed before it learnt it) read by the live consumer, as committed, yet absent from
//!   the final read, as aborted.
//! - `vanished`: a record the live consumer read that the final read does not have at that
//!   offset; `duplicated`: a value twice in the final read; `phantom`: a value no
//!   transaction wrote; `txn hanging`: the final read could not reach the end of a
//!   partition (its last stable offset held back by a transaction never ended).
//!
//! Values are `<producer>-<instance>.<transaction>.<record>` (`workload.py`'s `txn` mode).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::checker::{Anomaly, Read};

/// A transaction's outcome as the producer knew it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// `commit_transaction` returned.
    Committed,
    /// `abort_transaction` returned (asked for, or after an abortable error).
    Aborted,
    /// The producer failed before it knew: a fatal error, or commit/abort retried until its
    /// deadline. The next instance's InitProducerId ended the transaction one way or the
    /// other.
    Unknown,
}

#[derive(Debug, Clone)]
pub(super) struct Txn {
    /// `<producer>-<instance>.<transaction>`.
    pub(super) id: String,
    /// (value, partition) of each record it wrote.
    pub(super) records: Vec<(String, i32)>,
    pub(super) outcome: Outcome,
    /// The error that decided the outcome, if any.
    pub(super) error: Option<String>,
    /// When the producer learnt the outcome (Unix ms).
    pub(super) ms: u64,
}

/// What the transactional clients saw.
#[derive(Debug, Default)]
pub(super) struct TxnHistory {
    pub(super) txns: Vec<Txn>,
    /// value -> (partition, offset, ms) the leader acknowledged its append at (a record of
    /// any transaction: the append comes before the commit or abort).
    pub(super) appended: HashMap<String, (i32, i64, u64)>,
    /// The live `read_committed` consumer's reads during the faults.
    pub(super) live: Vec<Read>,
    /// Who made the `live` reads, for the anomalies' text: empty for the live consumer;
    /// `cycles_checker.rs` judges its writers' reads inside transactions here too.
    pub(super) reader: &'static str,
    /// The final `read_committed` read of every partition.
    pub(super) final_log: Vec<Read>,
    /// Partitions the final read could not finish, with the position it reached.
    pub(super) stuck: BTreeMap<i32, i64>,
    /// The producer reported its end.
    pub(super) done: bool,
}

impl TxnHistory {
    fn reader(&self) -> &str {
        if self.reader.is_empty() {
            "the live read_committed consumer"
        } else {
            self.reader
        }
    }
}

/// Counts of the history, for the summary.
#[derive(Debug, Default)]
pub(super) struct TxnCounts {
    pub(super) committed: usize,
    pub(super) aborted: usize,
    pub(super) unknown: usize,
    /// Of the unknown ones: how many the final read shows committed.
    pub(super) unknown_committed: usize,
    pub(super) live_reads: usize,
    pub(super) final_records: usize,
}

/// Every anomaly in `h`, and its counts.
pub(super) fn check(h: &TxnHistory) -> (Vec<Anomaly>, TxnCounts) {
    let mut anomalies = Vec::new();
    let mut anomaly = |kind, detail: String, at_ms| {
        anomalies.push(Anomaly {
            kind,
            detail,
            at_ms,
        })
    };
    let mut counts = TxnCounts {
        live_reads: h.live.len(),
        final_records: h.final_log.len(),
        ..Default::default()
    };

    // The final read: value -> places, (partition, offset) -> value.
    let mut places: HashMap<&str, Vec<(i32, i64)>> = HashMap::new();
    let mut log: HashMap<(i32, i64), &str> = HashMap::new();
    for r in &h.final_log {
        if log.insert((r.partition, r.offset), &r.value).is_none() {
            places
                .entry(r.value.as_str())
                .or_default()
                .push((r.partition, r.offset));
        }
    }
    for (v, at) in &places {
        if at.len() > 1 {
            anomaly(
                "duplicated",
                format!(
                    "transactional value {v} is in the log {} times: {at:?}",
                    at.len()
                ),
                None,
            );
        }
    }
    let mut txn_of: HashMap<&str, &Txn> = HashMap::new();
    for t in &h.txns {
        for (v, _) in &t.records {
            txn_of.insert(v.as_str(), t);
        }
    }
    for (v, at) in &places {
        if !txn_of.contains_key(v) {
            anomaly(
                "phantom",
                format!("transactional value {v} at {at:?} belongs to no transaction"),
                None,
            );
        }
    }

    // What the live read_committed consumer read, by transaction.
    let mut live_read: HashSet<&str> = HashSet::new();
    for r in &h.live {
        live_read.insert(r.value.as_str());
        if let Some(t) = txn_of.get(r.value.as_str()) {
            if t.outcome == Outcome::Aborted {
                anomaly(
                    "aborted read",
                    format!(
                        "{} read {} at {}/{}, of transaction {} which the producer aborted \
                         ({})",
                        h.reader(),
                        r.value,
                        r.partition,
                        r.offset,
                        t.id,
                        t.error.as_deref().unwrap_or("as it meant to")
                    ),
                    r.ms,
                );
            }
        }
        match log.get(&(r.partition, r.offset)) {
            Some(v) if *v == r.value => {}
            found => anomaly(
                "vanished",
                format!(
                    "{} read {} at {}/{}; the final read has {}",
                    h.reader(),
                    r.value,
                    r.partition,
                    r.offset,
                    found.map_or("nothing there".to_string(), |v| v.to_string())
                ),
                r.ms,
            ),
        }
    }

    for t in &h.txns {
        let visible: Vec<&str> = t
            .records
            .iter()
            .map(|(v, _)| v.as_str())
            .filter(|v| places.contains_key(v))
            .collect();
        let all = visible.len() == t.records.len();
        let none = visible.is_empty();
        match t.outcome {
            Outcome::Committed => counts.committed += 1,
            Outcome::Aborted => counts.aborted += 1,
            Outcome::Unknown => {
                counts.unknown += 1;
                if all {
                    counts.unknown_committed += 1;
                }
            }
        }
        let missing: Vec<&str> = t
            .records
            .iter()
            .map(|(v, _)| v.as_str())
            .filter(|v| !places.contains_key(v))
            .collect();
        if !all && !none {
            anomaly(
                "txn partial",
                format!(
                    "transaction {} ({:?}): the final read_committed read has {visible:?}, \
                     not {missing:?}",
                    t.id, t.outcome
                ),
                Some(t.ms),
            );
            continue;
        }
        match t.outcome {
            Outcome::Committed if none => anomaly(
                "txn lost",
                format!(
                    "transaction {} committed; none of its records {missing:?} is in the \
                     final read",
                    t.id
                ),
                Some(t.ms),
            ),
            Outcome::Committed => {
                for (v, p) in &t.records {
                    let Some(&(ap, ao, ms)) = h.appended.get(v) else {
                        continue;
                    };
                    let at = places.get(v.as_str()).map(Vec::as_slice).unwrap_or(&[]);
                    if ap != *p || !at.contains(&(ap, ao)) {
                        anomaly(
                            "moved",
                            format!(
                                "{v} of committed transaction {} acknowledged at {ap}/{ao}; it \
                                 is at {at:?}",
                                t.id
                            ),
                            Some(ms),
                        );
                    }
                }
            }
            Outcome::Aborted if !none => anomaly(
                "aborted read",
                format!(
                    "transaction {} was aborted ({}); the final read_committed read has its \
                     records {visible:?}",
                    t.id,
                    t.error.as_deref().unwrap_or("as the producer meant to")
                ),
                Some(t.ms),
            ),
            Outcome::Unknown if none => {
                let seen: Vec<&str> = t
                    .records
                    .iter()
                    .map(|(v, _)| v.as_str())
                    .filter(|v| live_read.contains(v))
                    .collect();
                if !seen.is_empty() {
                    anomaly(
                        "txn two states",
                        format!(
                            "transaction {} (outcome unknown to its producer: {}): {} read \
                             {seen:?} (committed), the final read has none of its records \
                             (aborted)",
                            t.id,
                            t.error.as_deref().unwrap_or("?"),
                            h.reader()
                        ),
                        Some(t.ms),
                    );
                }
            }
            _ => {}
        }
    }

    for (p, position) in &h.stuck {
        anomaly(
            "txn hanging",
            format!(
                "the final read_committed read of partition {p} stopped at {position}, short \
                 of its end: a transaction left open holds its last stable offset back"
            ),
            None,
        );
    }
    (anomalies, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(value: &str, partition: i32, offset: i64) -> Read {
        Read {
            partition,
            offset,
            value: value.into(),
            ms: Some(1),
        }
    }

    fn txn(id: &str, partitions: &[i32], outcome: Outcome) -> Txn {
        Txn {
            id: id.into(),
            records: partitions
                .iter()
                .enumerate()
                .map(|(k, &p)| (format!("{id}.{k}"), p))
                .collect(),
            outcome,
            error: None,
            ms: 1,
        }
    }

    /// Three transactions on two partitions: t.0 committed (offsets 0 of both), t.1
    /// aborted (offsets 2, then its markers), t.2 committed (offsets 4); markers between.
    fn clean() -> TxnHistory {
        let txns = vec![
            txn("txn-0.0", &[0, 1], Outcome::Committed),
            txn("txn-0.1", &[0, 1], Outcome::Aborted),
            txn("txn-0.2", &[0, 1], Outcome::Committed),
        ];
        let mut appended = HashMap::new();
        for (i, t) in txns.iter().enumerate() {
            for (v, p) in &t.records {
                appended.insert(v.clone(), (*p, 2 * i as i64, 1));
            }
        }
        let committed = |i: usize| {
            txns[i]
                .records
                .iter()
                .map(|(v, p)| read(v, *p, 2 * i as i64))
                .collect::<Vec<_>>()
        };
        let final_log = [committed(0), committed(2)].concat();
        TxnHistory {
            live: committed(0),
            final_log,
            appended,
            txns,
            done: true,
            ..Default::default()
        }
    }

    fn kinds(h: &TxnHistory) -> Vec<&'static str> {
        let mut k: Vec<_> = check(h).0.iter().map(|a| a.kind).collect();
        k.sort_unstable();
        k
    }

    #[test]
    fn a_clean_history_has_no_anomaly() {
        let h = clean();
        assert_eq!(kinds(&h), Vec::<&str>::new());
        let (_, counts) = check(&h);
        assert_eq!(
            (counts.committed, counts.aborted, counts.unknown),
            (2, 1, 0)
        );
    }

    #[test]
    fn an_aborted_record_read_committed_is_an_aborted_read() {
        let mut h = clean();
        h.live.push(read("txn-0.1.0", 0, 2));
        h.final_log.push(read("txn-0.1.0", 0, 2));
        h.final_log.push(read("txn-0.1.1", 1, 2));
        assert_eq!(kinds(&h), ["aborted read", "aborted read"]);
    }

    #[test]
    fn a_committed_transaction_missing_is_lost_and_half_missing_partial() {
        let mut h = clean();
        h.final_log.retain(|r| !r.value.starts_with("txn-0.2"));
        assert_eq!(kinds(&h), ["txn lost"]);
        let mut h = clean();
        h.final_log.retain(|r| r.value != "txn-0.2.1");
        assert_eq!(kinds(&h), ["txn partial"]);
    }

    #[test]
    fn an_unknown_transaction_is_all_or_nothing_and_in_one_state() {
        let mut h = clean();
        h.txns[2].outcome = Outcome::Unknown;
        assert_eq!(kinds(&h), Vec::<&str>::new());
        assert_eq!(check(&h).1.unknown_committed, 1);
        // Aborted in the end: fine, unless a read_committed consumer saw it committed.
        h.final_log.retain(|r| !r.value.starts_with("txn-0.2"));
        assert_eq!(kinds(&h), Vec::<&str>::new());
        h.live.push(read("txn-0.2.0", 0, 4));
        assert_eq!(kinds(&h), ["txn two states", "vanished"]);
    }

    #[test]
    fn a_committed_record_elsewhere_is_moved_and_twice_duplicated() {
        let mut h = clean();
        h.appended.get_mut("txn-0.2.0").unwrap().1 = 5;
        assert_eq!(kinds(&h), ["moved"]);
        let mut h = clean();
        h.final_log.push(read("txn-0.0.0", 0, 6));
        assert_eq!(kinds(&h), ["duplicated"]);
    }

    #[test]
    fn a_value_of_no_transaction_is_a_phantom_and_a_stuck_read_hanging() {
        let mut h = clean();
        h.final_log.push(read("txn-0.9.0", 0, 6));
        h.stuck.insert(1, 3);
        assert_eq!(kinds(&h), ["phantom", "txn hanging"]);
    }
}
