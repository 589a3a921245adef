//! The exactly-once pipeline's checks (`--txn`): `workload.py pipeline` reads the workload's
//! topic in group `chaos-pipe` (`read_committed`) and writes, in one transaction with the
//! consumed offsets (`send_offsets_to_transaction`), one record `<p>:<o>:<v>` per record
//! read to the pipeline's topic. What Kafka's transactions promise (KIP-98, KIP-447), and
//! what Jepsen found broken in Kafka 2024 and Redpanda: every input record below the
//! group's committed offset of its partition is in the committed output exactly once, and
//! nothing at or above it is (its offsets and its output commit together).

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
}

/// What the summary shows.
#[derive(Debug, Default)]
pub(super) struct PipeCounts {
    pub(super) outcomes: BTreeMap<String, u64>,
    /// Input records the group's offsets cover.
    pub(super) covered: u64,
    /// Records in the committed output.
    pub(super) output: u64,
}

/// Judges `h` against `input`, the final read of the input topic.
pub(super) fn check(h: &PipeHistory, input: &[Read]) -> (Vec<Anomaly>, PipeCounts) {
    let mut anomalies = Vec::new();
    let mut seen: BTreeMap<(i32, i64), Vec<&Read>> = BTreeMap::new();
    for out in &h.output {
        match parse(&out.value) {
            Some((p, o, _)) => seen.entry((p, o)).or_default().push(out),
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
    let counts = PipeCounts {
        outcomes: h.outcomes.clone(),
        covered,
        output: h.output.len() as u64,
    };
    (anomalies, counts)
}

/// `<p>:<o>:<v>`.
fn parse(value: &str) -> Option<(i32, i64, &str)> {
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
}
