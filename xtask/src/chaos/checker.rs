//! The checker: judges a run's [`History`] (what the stock clients saw, read back from the
//! workload's files) after the faults, and names every anomaly it finds.
//!
//! - Every acknowledged record is in the final log exactly once, at its acknowledged
//!   partition and offset (`lost`, `moved`); one librdkafka acknowledged without an offset
//!   (implicitly, see [`Ack::offset`]) exactly once in its partition.
//! - No value of the idempotent producer is in the log twice (`duplicated`), and its
//!   acknowledged records are in the order it sent them, per partition (`reordered`). The
//!   producer without idempotence is at least once: its duplicates and reorderings are
//!   counted, not anomalies ([`Verdict::tolerated`] says why). A duplicate of the idempotent
//!   one whose copies the broker appended under distinct producer epochs (the stored
//!   batches, `segments.rs`) is librdkafka's resend after an epoch bump, which Kafka shows
//!   too: classified and counted, not an anomaly ([`RESENT_AFTER_EPOCH_BUMP`]).
//! - Every record the live consumer read during the faults is still in the final log at the
//!   offset it was read at (`vanished`: it was read above the high watermark, or a committed
//!   record was truncated).
//! - Nothing is in the log that no producer sent (`phantom`), the final read is a log
//!   (offsets increasing, one value per offset: `inconsistent read`), and the idempotent
//!   producer met no fatal error (`producer fatal`, which librdkafka raises when the broker's
//!   sequence state contradicts what it acknowledged).
//!
//! Values are `<producer>-<instance>.<seq>` (`workload.py`); seq orders one instance's sends.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::segments::{batch_at, BatchInfo};

/// What the clients saw.
#[derive(Debug, Default)]
pub(super) struct History {
    pub(super) acks: Vec<Ack>,
    /// Failed deliveries by error name (expected under faults: not acknowledged).
    pub(super) failed: BTreeMap<String, u64>,
    /// Fatal producer errors: (producer, error).
    pub(super) fatal: Vec<(String, String)>,
    /// The producers without idempotence: their duplicates and reorderings are tolerated
    /// (see [`Verdict::tolerated`]).
    pub(super) at_least_once: BTreeSet<String>,
    /// Records each producer sent (from its closing line).
    pub(super) produced: BTreeMap<String, u64>,
    /// The live consumer's reads during the faults.
    pub(super) live: Vec<Read>,
    /// Every record of every partition after the faults, as read to the end offsets.
    pub(super) final_log: Vec<Read>,
    pub(super) end_offsets: BTreeMap<i32, i64>,
    /// The stored batches per partition (`segments.rs`): whose producer epoch each copy of a
    /// duplicated value was appended under.
    pub(super) batches: BTreeMap<i32, Vec<BatchInfo>>,
}

#[derive(Debug, Clone)]
pub(super) struct Ack {
    pub(super) value: String,
    pub(super) partition: i32,
    /// None when librdkafka acknowledged the record implicitly: an idempotent producer's
    /// record whose own response was lost is known written once a later record of its
    /// partition is acknowledged, and its delivery report carries no offset.
    pub(super) offset: Option<i64>,
    /// When the acknowledgement arrived (Unix ms).
    pub(super) ms: u64,
}

#[derive(Debug, Clone)]
pub(super) struct Read {
    pub(super) partition: i32,
    pub(super) offset: i64,
    pub(super) value: String,
    /// When it was read (Unix ms; the live consumer's reads only).
    pub(super) ms: Option<u64>,
}

#[derive(Debug)]
pub(super) struct Anomaly {
    pub(super) kind: &'static str,
    pub(super) detail: String,
    /// When the client saw what the anomaly is about (Unix ms), for the history slice.
    pub(super) at_ms: Option<u64>,
}

/// A value's producer instance and sequence number.
fn parse(value: &str) -> Option<(&str, u64)> {
    let (instance, seq) = value.rsplit_once('.')?;
    Some((instance, seq.parse().ok()?))
}

/// What the checker found.
#[derive(Debug, Default)]
pub(super) struct Verdict {
    pub(super) anomalies: Vec<Anomaly>,
    /// Duplicates and reorderings of the producers without idempotence, by kind: allowed
    /// (at least once), counted. librdkafka sends a batch again after NOT_LEADER_OR_FOLLOWER
    /// without counting it as a retry (`message.send.max.retries=0` does not stop it), yet the
    /// old leader may have replicated the batch to the new one before it lost leadership,
    /// which is why Kafka's answer to such a producer is idempotence.
    pub(super) tolerated: BTreeMap<&'static str, usize>,
    /// Findings explained rather than counted as anomalies, by kind.
    pub(super) classified: BTreeMap<&'static str, usize>,
}

/// The idempotent producer's duplicates whose copies were appended under distinct epochs of
/// one producer id: librdkafka's doing, not the broker's. When messages of an in-flight
/// request reach `message.timeout.ms`, librdkafka cannot know whether they were written, so
/// it bumps its producer epoch (KIP-360, "epoch bump ... N message(s) timed out") and sends
/// the other messages of that request again from sequence 0 under the new epoch; the broker
/// had appended them, and a new epoch's sequences are not checked against the old one's, so
/// no broker can deduplicate them. Apache Kafka 4.4.0 does the same under the same schedule
/// (seed 12: 2011 such values in 3 minutes, copies under epochs 3, 9 and 11;
/// docs/chaos.md). A duplicate under one epoch stays an anomaly: that one a broker must
/// catch.
const RESENT_AFTER_EPOCH_BUMP: &str = "idempotent resent after an epoch bump";

/// Whether every copy's batch is known, all of one producer id, under pairwise distinct
/// epochs.
fn resent_under_new_epochs(copies: &[Option<&BatchInfo>]) -> bool {
    let Some(Some(first)) = copies.first() else {
        return false;
    };
    let mut epochs = BTreeSet::new();
    copies.iter().all(|c| {
        c.is_some_and(|b| b.producer_id == first.producer_id && epochs.insert(b.producer_epoch))
    })
}

/// Every anomaly in `h`.
pub(super) fn check(h: &History) -> Verdict {
    let mut anomalies = Vec::new();
    let mut tolerated: BTreeMap<&'static str, usize> = BTreeMap::new();
    let at_least_once = |value: &str| {
        let producer = value.split('-').next().unwrap_or_default();
        h.at_least_once.contains(producer)
    };
    let mut anomaly = |kind, detail: String, at_ms| {
        anomalies.push(Anomaly {
            kind,
            detail,
            at_ms,
        })
    };

    // The final log: (partition, offset) -> value, and value -> where.
    let mut log: BTreeMap<(i32, i64), &str> = BTreeMap::new();
    let mut last_offset: HashMap<i32, i64> = HashMap::new();
    for r in &h.final_log {
        if let Some(prev) = log.insert((r.partition, r.offset), &r.value) {
            if prev != r.value {
                anomaly(
                    "inconsistent read",
                    format!(
                        "the final read gave {}/{} as {prev} and as {}",
                        r.partition, r.offset, r.value
                    ),
                    None,
                );
            }
            continue;
        }
        let last = last_offset.entry(r.partition).or_insert(-1);
        if r.offset <= *last {
            anomaly(
                "inconsistent read",
                format!(
                    "the final read gave partition {} offset {} after offset {last}",
                    r.partition, r.offset
                ),
                None,
            );
        }
        *last = r.offset.max(*last);
    }
    let mut at: HashMap<&str, Vec<(i32, i64)>> = HashMap::new();
    for (&(p, o), v) in &log {
        at.entry(v).or_default().push((p, o));
    }
    let mut classified: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (v, places) in &at {
        if places.len() > 1 && at_least_once(v) {
            *tolerated.entry("duplicated").or_default() += 1;
        } else if places.len() > 1 {
            let appended: Vec<Option<&BatchInfo>> = places
                .iter()
                .map(|&(p, o)| h.batches.get(&p).and_then(|b| batch_at(b, o)))
                .collect();
            if resent_under_new_epochs(&appended) {
                *classified.entry(RESENT_AFTER_EPOCH_BUMP).or_default() += 1;
            } else {
                anomaly(
                    "duplicated",
                    format!(
                        "value {v} is in the log {} times: {places:?}; appended as (producer id, \
                     epoch, batch base sequence) {:?}",
                        places.len(),
                        appended
                            .iter()
                            .map(|b| b.map(|b| (b.producer_id, b.producer_epoch, b.base_sequence)))
                            .collect::<Vec<_>>()
                    ),
                    None,
                );
            }
        }
        let known = parse(v).is_some_and(|(instance, seq)| {
            let producer = instance.split('-').next().unwrap_or_default();
            h.produced.get(producer).is_none_or(|&n| seq < n)
        });
        if !known {
            anomaly(
                "phantom",
                format!("value {v} at {places:?} was never sent"),
                None,
            );
        }
    }

    // Where each acknowledged record is: its acknowledged offset, or for one acknowledged
    // without an offset the one place of its partition the log has it.
    let mut placed: Vec<(&Ack, i64)> = Vec::new();
    for a in &h.acks {
        let elsewhere = at.get(a.value.as_str());
        let Some(offset) = a.offset else {
            match elsewhere.map(Vec::as_slice) {
                Some([(p, o)]) if *p == a.partition => placed.push((a, *o)),
                Some([(p, o)]) => anomaly(
                    "moved",
                    format!(
                        "{} acknowledged (without an offset) on partition {}; it is at {p}/{o}",
                        a.value, a.partition
                    ),
                    Some(a.ms),
                ),
                // Twice: reported as duplicated above.
                Some(_) => {}
                None => anomaly(
                    "lost",
                    format!(
                        "{} acknowledged (without an offset) on partition {}; it is not in \
                         the log",
                        a.value, a.partition
                    ),
                    Some(a.ms),
                ),
            }
            continue;
        };
        match log.get(&(a.partition, offset)) {
            Some(v) if *v == a.value => placed.push((a, offset)),
            found => {
                let (kind, what) = match (found, elsewhere) {
                    (_, Some(places)) => ("moved", format!("it is at {places:?}")),
                    (Some(v), None) => ("lost", format!("the offset holds {v}")),
                    (None, None) => (
                        "lost",
                        format!(
                            "the offset is not in the log (end offset {:?})",
                            h.end_offsets.get(&a.partition)
                        ),
                    ),
                };
                anomaly(
                    kind,
                    format!(
                        "{} acknowledged at {}/{offset}; {what}",
                        a.value, a.partition
                    ),
                    Some(a.ms),
                );
            }
        }
    }

    // Per producer instance and partition, acknowledged offsets rise with the sequence.
    // (seq, offset, ms) per (producer instance, partition).
    type Sent = (u64, i64, u64);
    let mut sent: BTreeMap<(&str, i32), Vec<Sent>> = BTreeMap::new();
    for &(a, offset) in &placed {
        if let Some((instance, seq)) = parse(&a.value) {
            sent.entry((instance, a.partition))
                .or_default()
                .push((seq, offset, a.ms));
        }
    }
    for ((instance, partition), mut acks) in sent {
        acks.sort_unstable();
        for pair in acks.windows(2) {
            let ((s1, o1, _), (s2, o2, ms)) = (pair[0], pair[1]);
            if o2 <= o1 && at_least_once(instance) {
                *tolerated.entry("reordered").or_default() += 1;
            } else if o2 <= o1 {
                anomaly(
                    "reordered",
                    format!(
                        "{instance} on partition {partition}: seq {s1} acknowledged at offset \
                         {o1}, the later seq {s2} at offset {o2}"
                    ),
                    Some(ms),
                );
            }
        }
    }

    for r in &h.live {
        match log.get(&(r.partition, r.offset)) {
            Some(v) if *v == r.value => {}
            found => anomaly(
                "vanished",
                format!(
                    "the live consumer read {} at {}/{}; the final log has {}",
                    r.value,
                    r.partition,
                    r.offset,
                    found.map_or("nothing there".to_string(), |v| v.to_string())
                ),
                r.ms,
            ),
        }
    }

    for (producer, error) in &h.fatal {
        anomaly("producer fatal", format!("{producer}: {error}"), None);
    }
    Verdict {
        anomalies,
        tolerated,
        classified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(value: &str, partition: i32, offset: i64) -> Ack {
        Ack {
            value: value.into(),
            partition,
            offset: Some(offset),
            ms: 1,
        }
    }

    fn read(value: &str, partition: i32, offset: i64) -> Read {
        Read {
            partition,
            offset,
            value: value.into(),
            ms: Some(1),
        }
    }

    /// Two producers' records on two partitions, all acknowledged, read back as written.
    fn clean() -> History {
        History {
            acks: vec![
                ack("idem-0.0", 0, 0),
                ack("idem-0.1", 1, 0),
                ack("idem-0.2", 0, 1),
                ack("plain-0.0", 0, 2),
            ],
            produced: [("idem".into(), 3), ("plain".into(), 2)].into(),
            live: vec![read("idem-0.0", 0, 0), read("idem-0.1", 1, 0)],
            final_log: vec![
                read("idem-0.0", 0, 0),
                read("idem-0.2", 0, 1),
                read("plain-0.0", 0, 2),
                // Sent, not acknowledged (a timeout), yet written: allowed.
                read("plain-0.1", 0, 3),
                read("idem-0.1", 1, 0),
            ],
            end_offsets: [(0, 4), (1, 1)].into(),
            ..Default::default()
        }
    }

    fn kinds(h: &History) -> Vec<&'static str> {
        check(h).anomalies.iter().map(|a| a.kind).collect()
    }

    #[test]
    fn a_clean_history_has_no_anomaly() {
        assert_eq!(kinds(&clean()), Vec::<&str>::new());
    }

    #[test]
    fn an_acknowledged_record_missing_or_overwritten_is_lost() {
        let mut h = clean();
        h.final_log.retain(|r| r.value != "idem-0.2");
        assert_eq!(kinds(&h), ["lost"]);
        let mut h = clean();
        h.final_log.retain(|r| r.value != "plain-0.1");
        h.final_log[1].value = "plain-0.1".into();
        assert_eq!(kinds(&h), ["lost"]);
    }

    #[test]
    fn an_acknowledgement_without_offset_needs_the_record_once_in_its_partition() {
        let mut h = clean();
        h.acks[2].offset = None;
        assert_eq!(kinds(&h), Vec::<&str>::new());
        h.final_log.retain(|r| r.value != "idem-0.2");
        assert_eq!(kinds(&h), ["lost"]);
        let mut h = clean();
        h.acks[2].offset = None;
        h.acks[2].partition = 1;
        assert_eq!(kinds(&h), ["moved"]);
    }

    #[test]
    fn a_record_at_another_offset_is_moved() {
        let mut h = clean();
        h.acks[3].offset = Some(3);
        h.acks.push(ack("plain-0.1", 0, 2));
        let mut k = kinds(&h);
        k.sort_unstable();
        assert_eq!(k, ["moved", "moved"]);
    }

    #[test]
    fn a_value_twice_in_the_log_is_duplicated() {
        let mut h = clean();
        h.final_log.push(read("idem-0.1", 1, 1));
        assert_eq!(kinds(&h), ["duplicated"]);
    }

    #[test]
    fn acknowledged_offsets_against_the_send_order_are_reordered() {
        let mut h = clean();
        h.acks[0].offset = Some(1);
        h.acks[2].offset = Some(0);
        h.final_log[0].value = "idem-0.2".into();
        h.final_log[1].value = "idem-0.0".into();
        h.live.clear();
        assert_eq!(kinds(&h), ["reordered"]);
    }

    #[test]
    fn a_producer_without_idempotence_may_duplicate_and_reorder() {
        let mut h = clean();
        h.at_least_once.insert("plain".into());
        h.final_log.push(read("plain-0.0", 1, 1));
        h.acks.push(ack("plain-0.1", 0, 1));
        h.final_log.retain(|r| r.value != "plain-0.1");
        h.final_log.retain(|r| r.value != "idem-0.2");
        h.final_log.push(read("plain-0.1", 0, 1));
        h.acks.retain(|a| a.value != "idem-0.2");
        h.final_log.sort_by_key(|r| (r.partition, r.offset));
        let verdict = check(&h);
        assert!(verdict.anomalies.is_empty(), "{:?}", verdict.anomalies);
        assert_eq!(
            verdict.tolerated,
            [("duplicated", 1), ("reordered", 1)].into()
        );
        // The idempotent producer may not.
        h.final_log.push(read("idem-0.1", 1, 2));
        assert_eq!(kinds(&h), ["duplicated"]);
    }

    #[test]
    fn a_duplicate_under_new_epochs_is_librdkafkas_resend_and_under_one_epoch_an_anomaly() {
        let batch = |base: i64, epoch: i16| BatchInfo {
            base_offset: base,
            last_offset: base,
            producer_id: 9,
            producer_epoch: epoch,
            base_sequence: 0,
        };
        let mut h = clean();
        h.final_log.push(read("idem-0.1", 1, 1));
        h.batches.insert(1, vec![batch(0, 0), batch(1, 1)]);
        let verdict = check(&h);
        assert!(verdict.anomalies.is_empty(), "{:?}", verdict.anomalies);
        assert_eq!(verdict.classified, [(RESENT_AFTER_EPOCH_BUMP, 1)].into());
        // The same epoch twice: the broker did not deduplicate.
        h.batches.insert(1, vec![batch(0, 1), batch(1, 1)]);
        assert_eq!(kinds(&h), ["duplicated"]);
        // A copy whose batch is unknown proves nothing.
        h.batches.insert(1, vec![batch(0, 0)]);
        assert_eq!(kinds(&h), ["duplicated"]);
    }

    #[test]
    fn a_read_record_missing_afterwards_vanished() {
        let mut h = clean();
        h.live.push(read("plain-0.9", 0, 4));
        let k = kinds(&h);
        assert_eq!(k, ["vanished"]);
    }

    #[test]
    fn a_value_never_sent_is_a_phantom() {
        let mut h = clean();
        h.final_log.push(read("idem-0.7", 1, 1));
        assert_eq!(kinds(&h), ["phantom"]);
    }

    #[test]
    fn an_idempotent_producer_fatal_error_is_an_anomaly() {
        let mut h = clean();
        h.fatal
            .push(("idem".into(), "OUT_OF_ORDER_SEQUENCE_NUMBER".into()));
        assert_eq!(kinds(&h), ["producer fatal"]);
    }
}
