//! The exactly-once pipeline's checks (`--txn`): `workload.py pipeline` reads the workload's
//! topic in group `chaos-pipe` (`read_committed`) and writes, in one transaction with the
//! consumed offsets (`send_offsets_to_transaction`), one record `<p>:<o>:<v>` per record
//! read to the pipeline's topic. What Kafka's transactions promise (KIP-98, KIP-447), and
//! what Jepsen found broken in Kafka 2024 and Redpanda: every input record below the
//! group's committed offset of its partition is in the committed output exactly once, and
//! nothing at or above it is (its offsets and its output commit together).
//!
//! With `--zombie` several processes ran the pipeline, each paused and superseded in turn
//! by a new one with the same transactional id and group (`zombies.rs`); each output record
//! names the process, producer instance and transaction that wrote it (`<p>:<o>:<v>|<tag>`),
//! so the checker also tells whose output is visible. The rule KIP-98 gives: once a producer
//! instance's InitProducerId has returned, every instance that initialized before it is
//! fenced — a transaction such an instance began afterwards must not commit (`zombie
//! commit`: its client saw it committed) and none of its output may be visible (`zombie
//! write`). A transaction begun before that may have committed or not (its outcome may be
//! unknown to its client), but it is atomic: all of its records or none (`pipeline txn
//! partial`), and none of an aborted one (`aborted read`).

use std::collections::BTreeMap;

use super::checker::{Anomaly, Read};

/// The pipeline's history: its transactions' outcomes, the group's committed offsets when
/// it stopped, and the final `read_committed` read of its output.
#[derive(Debug, Default)]
pub(super) struct PipeHistory {
    /// Transactions by outcome (`committed`, `aborted`, `unknown`).
    pub(super) outcomes: BTreeMap<String, u64>,
    /// The group's committed offset of each input partition at the end (none: -1001).
    pub(super) committed: BTreeMap<i32, i64>,
    /// Whether the pipeline reported its end (and with it `committed`).
    pub(super) done: bool,
    /// The final `read_committed` read of the output topic.
    pub(super) output: Vec<Read>,
    /// The processes that ran the pipeline, in the order started.
    pub(super) instances: Vec<PipeInstance>,
}

/// One process of the pipeline (`pipe`, `pipe-1`, ...): its producer instances' inits and its
/// transactions.
#[derive(Debug, Default)]
pub(super) struct PipeInstance {
    pub(super) name: String,
    /// (producer instance, when its InitProducerId returned, Unix ms).
    pub(super) inits: Vec<(u32, u64)>,
    pub(super) batches: Vec<PipeBatch>,
    /// The fencing error it stopped on, and when (a zombie's end).
    pub(super) fenced: Option<(String, u64)>,
}

/// One transaction of the pipeline.
#[derive(Debug, Default, Clone)]
pub(super) struct PipeBatch {
    /// Its number in its process (the tag's last part).
    pub(super) n: u64,
    /// The producer instance that ran it.
    pub(super) producer: u32,
    /// When `begin_transaction` was called (absent in files of older runs).
    pub(super) begun_ms: Option<u64>,
    /// Records it wrote: one per input record.
    pub(super) inputs: u64,
    pub(super) outcome: String,
    pub(super) error: Option<String>,
    pub(super) ms: u64,
}

/// What the summary shows.
#[derive(Debug, Default)]
pub(super) struct PipeCounts {
    pub(super) outcomes: BTreeMap<String, u64>,
    /// Input records the group's offsets cover.
    pub(super) covered: u64,
    /// Records in the committed output.
    pub(super) output: u64,
    /// Processes that ran the pipeline (more than one with `--zombie`).
    pub(super) instances: usize,
    /// Superseded processes that stopped on a fencing error, by the error.
    pub(super) fenced_exits: BTreeMap<String, u64>,
    /// Transactions begun by an instance already fenced by a newer one's InitProducerId, by
    /// outcome and error (all must have failed).
    pub(super) after_fenced: BTreeMap<String, u64>,
}

/// Judges `h` against `input`, the final read of the input topic.
pub(super) fn check(h: &PipeHistory, input: &[Read]) -> (Vec<Anomaly>, PipeCounts) {
    let mut anomalies = Vec::new();
    let mut seen: BTreeMap<(i32, i64), Vec<&Read>> = BTreeMap::new();
    let mut by_tag: BTreeMap<&str, Vec<&Read>> = BTreeMap::new();
    for out in &h.output {
        match parse(&out.value) {
            Some((p, o, _)) => {
                seen.entry((p, o)).or_default().push(out);
                if let Some((_, tag)) = out.value.rsplit_once('|') {
                    by_tag.entry(tag).or_default().push(out);
                }
            }
            None => anomalies.push(Anomaly {
                kind: "phantom",
                detail: format!(
                    "the pipeline's output holds {:?} at {}/{}, not a record it writes",
                    out.value, out.partition, out.offset
                ),
                at_ms: None,
            }),
        }
    }
    let committed = |p: i32| h.committed.get(&p).copied().unwrap_or(-1).max(0);
    let by_input: BTreeMap<(i32, i64), &Read> =
        input.iter().map(|r| ((r.partition, r.offset), r)).collect();
    let mut covered = 0;
    for (&(p, o), r) in &by_input {
        if o >= committed(p) {
            continue;
        }
        covered += 1;
        match seen.get(&(p, o)).map(Vec::as_slice) {
            None | Some([]) => anomalies.push(Anomaly {
                kind: "lost by pipeline",
                detail: format!(
                    "input {p}/{o} ({:?}) is below the group's committed offset {} of its \
                     partition, and the committed output does not have it",
                    r.value,
                    committed(p)
                ),
                at_ms: r.ms,
            }),
            Some([_]) => {}
            Some(copies) => anomalies.push(Anomaly {
                kind: "read twice",
                detail: format!(
                    "input {p}/{o} ({:?}) is in the committed output {} times, at {}",
                    r.value,
                    copies.len(),
                    copies
                        .iter()
                        .map(|c| format!("{}/{}", c.partition, c.offset))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                at_ms: r.ms,
            }),
        }
    }
    for (&(p, o), copies) in &seen {
        let value = copies
            .first()
            .and_then(|c| parse(&c.value))
            .map(|(_, _, v)| v);
        match by_input.get(&(p, o)) {
            None => anomalies.push(Anomaly {
                kind: "phantom",
                detail: format!(
                    "the pipeline's output names input {p}/{o}, which the input's final read \
                     does not have"
                ),
                at_ms: None,
            }),
            Some(r) if Some(r.value.as_str()) != value => anomalies.push(Anomaly {
                kind: "phantom",
                detail: format!(
                    "the pipeline's output says input {p}/{o} was {value:?}; the input holds \
                     {:?} there",
                    r.value
                ),
                at_ms: None,
            }),
            Some(_) if o >= committed(p) => anomalies.push(Anomaly {
                kind: "read twice",
                detail: format!(
                    "input {p}/{o} is in the committed output, but the group's committed \
                     offset of its partition is {}: its offset was not committed with it, \
                     so the pipeline would read it again",
                    committed(p)
                ),
                at_ms: None,
            }),
            Some(_) => {}
        }
    }
    let mut counts = PipeCounts {
        outcomes: h.outcomes.clone(),
        covered,
        output: h.output.len() as u64,
        instances: h.instances.len(),
        ..Default::default()
    };
    check_instances(h, &by_tag, &mut anomalies, &mut counts);
    (anomalies, counts)
}

/// The per-transaction checks the tags allow: fenced instances' transactions, atomicity,
/// aborted ones.
fn check_instances(
    h: &PipeHistory,
    by_tag: &BTreeMap<&str, Vec<&Read>>,
    anomalies: &mut Vec<Anomaly>,
    counts: &mut PipeCounts,
) {
    // Every producer instance's init: (process, producer instance, ms).
    let inits: Vec<(&str, u32, u64)> = h
        .instances
        .iter()
        .flat_map(|i| i.inits.iter().map(|&(pi, ms)| (i.name.as_str(), pi, ms)))
        .collect();
    for instance in &h.instances {
        if let Some((err, _)) = &instance.fenced {
            *counts.fenced_exits.entry(err.clone()).or_default() += 1;
        }
        for b in &instance.batches {
            let tag = format!("{}/{}/{}", instance.name, b.producer, b.n);
            let visible = by_tag.get(tag.as_str()).map_or(0, Vec::len) as u64;
            let own_init = inits
                .iter()
                .find(|&&(name, pi, _)| name == instance.name && pi == b.producer)
                .map(|&(_, _, ms)| ms);
            // The first init of another producer instance after this one's and before the
            // transaction began: it fenced this instance.
            let fenced_by = match (own_init, b.begun_ms) {
                (Some(own), Some(begun)) => inits
                    .iter()
                    .filter(|&&(name, pi, ms)| {
                        (name, pi) != (instance.name.as_str(), b.producer) && ms > own && ms < begun
                    })
                    .min_by_key(|&&(_, _, ms)| ms),
                _ => None,
            };
            if let Some(&(by, by_pi, by_ms)) = fenced_by {
                let key = format!("{} {}", b.outcome, b.error.as_deref().unwrap_or("-"));
                *counts.after_fenced.entry(key).or_default() += 1;
                let why = format!(
                    "transaction {tag} began at {} after {by}/{by_pi}'s InitProducerId \
                     returned at {} (fencing it)",
                    super::utc(b.begun_ms.unwrap_or_default()),
                    super::utc(by_ms)
                );
                if b.outcome == "committed" {
                    anomalies.push(Anomaly {
                        kind: "zombie commit",
                        detail: format!("{why}, and its commit succeeded"),
                        at_ms: Some(b.ms),
                    });
                }
                if visible > 0 {
                    anomalies.push(Anomaly {
                        kind: "zombie write",
                        detail: format!(
                            "{why}; {visible} of its records are in the committed output \
                             (its client saw {:?}, error {:?})",
                            b.outcome, b.error
                        ),
                        at_ms: Some(b.ms),
                    });
                }
            }
            if visible > 0 && b.outcome == "aborted" {
                anomalies.push(Anomaly {
                    kind: "aborted read",
                    detail: format!(
                        "the pipeline's transaction {tag} was aborted (error {:?}), and {visible} \
                         of its records are in the committed output",
                        b.error
                    ),
                    at_ms: Some(b.ms),
                });
            }
            if visible > 0 && visible != b.inputs {
                anomalies.push(Anomaly {
                    kind: "pipeline txn partial",
                    detail: format!(
                        "the pipeline's transaction {tag} ({}) wrote {} records; {visible} of \
                         them are in the committed output",
                        b.outcome, b.inputs
                    ),
                    at_ms: Some(b.ms),
                });
            }
        }
    }
}

/// `<p>:<o>:<v>`, or `<p>:<o>:<v>|<tag>` (the tag naming the transaction that wrote it).
fn parse(value: &str) -> Option<(i32, i64, &str)> {
    let value = value.rsplit_once('|').map_or(value, |(v, _)| v);
    let mut parts = value.splitn(3, ':');
    let p = parts.next()?.parse().ok()?;
    let o = parts.next()?.parse().ok()?;
    Some((p, o, parts.next()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(p: i32, o: i64, v: &str) -> Read {
        Read {
            partition: p,
            offset: o,
            value: v.to_string(),
            ms: None,
        }
    }

    fn history(output: &[(i32, i64, &str)], committed: &[(i32, i64)]) -> PipeHistory {
        PipeHistory {
            committed: committed.iter().copied().collect(),
            done: true,
            output: output
                .iter()
                .enumerate()
                .map(|(i, (p, o, v))| read(*p, i as i64, &format!("{p}:{o}:{v}")))
                .collect(),
            ..Default::default()
        }
    }

    fn kinds(found: &[Anomaly]) -> Vec<&str> {
        found.iter().map(|a| a.kind).collect()
    }

    #[test]
    fn each_input_below_the_committed_offset_once_is_clean() {
        let input = [read(0, 0, "a"), read(0, 1, "b"), read(0, 2, "c")];
        let (found, counts) = check(&history(&[(0, 0, "a"), (0, 1, "b")], &[(0, 2)]), &input);
        assert!(found.is_empty(), "{found:?}");
        assert_eq!((counts.covered, counts.output), (2, 2));
    }

    #[test]
    fn twice_missing_or_ahead_of_the_offsets_are_anomalies() {
        let input = [read(0, 0, "a"), read(0, 1, "b"), read(0, 2, "c")];
        let twice = history(&[(0, 0, "a"), (0, 0, "a"), (0, 1, "b")], &[(0, 2)]);
        assert_eq!(kinds(&check(&twice, &input).0), ["read twice"]);
        let lost = history(&[(0, 0, "a")], &[(0, 2)]);
        assert_eq!(kinds(&check(&lost, &input).0), ["lost by pipeline"]);
        let ahead = history(&[(0, 0, "a"), (0, 1, "b"), (0, 2, "c")], &[(0, 2)]);
        assert_eq!(kinds(&check(&ahead, &input).0), ["read twice"]);
        let wrong = history(&[(0, 0, "x"), (0, 1, "b")], &[(0, 2)]);
        assert_eq!(kinds(&check(&wrong, &input).0), ["phantom"]);
    }

    fn batch(n: u64, begun_ms: u64, inputs: u64, outcome: &str, error: Option<&str>) -> PipeBatch {
        PipeBatch {
            n,
            producer: 0,
            begun_ms: Some(begun_ms),
            inputs,
            outcome: outcome.to_string(),
            error: error.map(str::to_string),
            ms: begun_ms + 50,
        }
    }

    /// Two processes: `pipe` (init at 100) and `pipe-1` (init at 1,000), with `pipe`'s
    /// transactions `a` and `pipe-1`'s `b`; the output is (input offset of partition 0,
    /// tag) pairs, the group committed up to `committed`.
    fn zombie_history(
        a: Vec<PipeBatch>,
        b: Vec<PipeBatch>,
        output: &[(i64, &str)],
        committed: i64,
    ) -> PipeHistory {
        let inputs = ["a", "b", "c", "d", "e"];
        PipeHistory {
            committed: [(0, committed)].into(),
            done: true,
            output: output
                .iter()
                .enumerate()
                .map(|(i, &(o, tag))| {
                    read(0, i as i64, &format!("0:{o}:{}|{tag}", inputs[o as usize]))
                })
                .collect(),
            instances: vec![
                PipeInstance {
                    name: "pipe".into(),
                    inits: vec![(0, 100)],
                    batches: a,
                    fenced: Some(("_FENCED".into(), 2_000)),
                },
                PipeInstance {
                    name: "pipe-1".into(),
                    inits: vec![(0, 1_000)],
                    batches: b,
                    fenced: None,
                },
            ],
            ..Default::default()
        }
    }

    fn input() -> Vec<Read> {
        ["a", "b", "c", "d", "e"]
            .iter()
            .enumerate()
            .map(|(o, v)| read(0, o as i64, v))
            .collect()
    }

    #[test]
    fn a_zombie_whose_late_transaction_failed_and_is_not_visible_is_clean() {
        // pipe's batch 1 committed before pipe-1 took over; its batch 2, begun after
        // pipe-1's init, fenced; pipe-1 read 2 and 3 again and committed them.
        let h = zombie_history(
            vec![
                batch(1, 200, 2, "committed", None),
                batch(2, 1_500, 2, "unknown", Some("_FENCED")),
            ],
            vec![batch(1, 1_200, 2, "committed", None)],
            &[
                (0, "pipe/0/1"),
                (1, "pipe/0/1"),
                (2, "pipe-1/0/1"),
                (3, "pipe-1/0/1"),
            ],
            4,
        );
        let (found, counts) = check(&h, &input());
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(counts.instances, 2);
        assert_eq!(counts.fenced_exits, [("_FENCED".to_string(), 1)].into());
        assert_eq!(
            counts.after_fenced,
            [("unknown _FENCED".to_string(), 1)].into()
        );
    }

    #[test]
    fn a_fenced_instances_late_output_or_commit_is_a_zombie_anomaly() {
        // pipe's batch 2 began after pipe-1's InitProducerId, yet its output is visible.
        let written = zombie_history(
            vec![
                batch(1, 200, 2, "committed", None),
                batch(2, 1_500, 2, "unknown", Some("_FENCED")),
            ],
            vec![],
            &[
                (0, "pipe/0/1"),
                (1, "pipe/0/1"),
                (2, "pipe/0/2"),
                (3, "pipe/0/2"),
            ],
            4,
        );
        assert_eq!(kinds(&check(&written, &input()).0), ["zombie write"]);
        // ... and its client saw it committed: both.
        let committed = zombie_history(
            vec![
                batch(1, 200, 2, "committed", None),
                batch(2, 1_500, 2, "committed", None),
            ],
            vec![],
            &[
                (0, "pipe/0/1"),
                (1, "pipe/0/1"),
                (2, "pipe/0/2"),
                (3, "pipe/0/2"),
            ],
            4,
        );
        assert_eq!(
            kinds(&check(&committed, &input()).0),
            ["zombie commit", "zombie write"]
        );
    }

    #[test]
    fn a_transaction_begun_before_the_takeover_may_commit_but_whole_and_once() {
        // pipe's batch 2 began before pipe-1's init (resumed early): committed whole, fine.
        let whole = zombie_history(
            vec![
                batch(1, 200, 2, "committed", None),
                batch(2, 900, 2, "unknown", Some("_FENCED")),
            ],
            vec![batch(1, 1_200, 1, "committed", None)],
            &[
                (0, "pipe/0/1"),
                (1, "pipe/0/1"),
                (2, "pipe/0/2"),
                (3, "pipe/0/2"),
                (4, "pipe-1/0/1"),
            ],
            5,
        );
        assert!(check(&whole, &input()).0.is_empty());
        // Half of it visible: partial (and the missing input lost).
        let partial = zombie_history(
            vec![
                batch(1, 200, 2, "committed", None),
                batch(2, 900, 2, "unknown", None),
            ],
            vec![batch(1, 1_200, 1, "committed", None)],
            &[
                (0, "pipe/0/1"),
                (1, "pipe/0/1"),
                (2, "pipe/0/2"),
                (4, "pipe-1/0/1"),
            ],
            5,
        );
        assert_eq!(
            kinds(&check(&partial, &input()).0),
            ["lost by pipeline", "pipeline txn partial"]
        );
        // pipe-1 read 2 and 3 again although pipe's commit of them took effect: read twice.
        let twice = zombie_history(
            vec![
                batch(1, 200, 2, "committed", None),
                batch(2, 900, 2, "unknown", None),
            ],
            vec![batch(1, 1_200, 3, "committed", None)],
            &[
                (0, "pipe/0/1"),
                (1, "pipe/0/1"),
                (2, "pipe/0/2"),
                (3, "pipe/0/2"),
                (2, "pipe-1/0/1"),
                (3, "pipe-1/0/1"),
                (4, "pipe-1/0/1"),
            ],
            5,
        );
        assert_eq!(
            kinds(&check(&twice, &input()).0),
            ["read twice", "read twice"]
        );
    }

    #[test]
    fn an_aborted_transactions_visible_output_is_an_aborted_read() {
        let h = zombie_history(
            vec![
                batch(1, 200, 2, "committed", None),
                batch(2, 300, 2, "aborted", Some("INVALID_TXN_STATE")),
            ],
            vec![],
            &[
                (0, "pipe/0/1"),
                (1, "pipe/0/1"),
                (2, "pipe/0/2"),
                (3, "pipe/0/2"),
            ],
            4,
        );
        assert_eq!(kinds(&check(&h, &input()).0), ["aborted read"]);
    }
}
