//! The partition reassignment workload's checks (`--reassign`): `workload.py reassign` moves
//! replicas of the workload's partitions between brokers with AlterPartitionReassignments
//! during the faults (kafka-python's AdminClient), sometimes cancelling a move in flight, and
//! records every request and its answer. Once the cluster has healed, the harness asks
//! ListPartitionReassignments and every broker's Metadata ([`observe`]), and this module
//! judges that against what the controller acknowledged ([`check`]). That every
//! acknowledged record is still there once at its offset on the moved partitions is the
//! data checker's (`checker.rs`): the moves are of the topic the producers write.
//!
//! What a partition's replicas may be after the faults is computed as Kafka's controller
//! defines reassignment (`PartitionReassignmentReplicas`, `PartitionReassignmentRevert` in
//! `ReplicationControlManager`, kraftd's `crates/controller/src/control/reassignment.rs`):
//!
//! - an acknowledged move to a target makes the target pending; a pending target completes,
//!   at some moment the client cannot see, with the replicas exactly the target (in its
//!   order); a new target replacing a pending one starts from the replicas the pending one
//!   started from, not from the pending target, and a replica the pending one was adding
//!   that the new target drops is from then on one it is removing, which a cancel keeps
//!   (Kafka's revert takes out only the adding replicas; kraftd's the same);
//! - an acknowledged cancel reverts a pending move to the replicas it started from (as a
//!   set: the revert keeps the order of the reassigning replica list, not the original's);
//!   a cancel answered NO_REASSIGNMENT_IN_PROGRESS says the move had completed;
//! - an answer with one of the controller's validation errors (below, [`REFUSED`]) changed
//!   nothing; any other failure (a timeout, NOT_CONTROLLER, a connection lost) is of unknown
//!   outcome: the request may have been applied or not.
//!
//! Since when a pending move completes is not known, the checker follows every possible
//! state ([`State`]: the replicas, and the pending target if any); after the faults every
//! move must have completed, so the allowed replicas are the states' replicas with their
//! pending targets completed. Anomalies:
//!
//! - `reassignment stuck`: ListPartitionReassignments lists a partition after the cluster
//!   healed (a move neither completed nor cancelled);
//! - `replicas wrong`: a broker's Metadata shows replicas for a partition that no order of
//!   the acknowledged operations allows (a completed move lost, a cancel not applied, a
//!   partition nobody moved moved);
//! - `replica not in sync`: a replica of a partition out of its ISR (the heal check wants
//!   that too; here it is named per partition);
//! - `replicas diverged`: brokers showing different replicas for one partition;
//! - `cancel contradicted`: a cancel acknowledged when no move could have been pending.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{bail, Result};
use serde_json::Value;

use super::checker::Anomaly;
use super::net::Lab;
use super::nodes;

/// The error codes the controller answers a reassignment it did not apply with, having
/// validated it: UNKNOWN_TOPIC_OR_PARTITION (3), INVALID_REPLICATION_FACTOR (38),
/// INVALID_REPLICA_ASSIGNMENT (39), NO_REASSIGNMENT_IN_PROGRESS (85, a cancel of a partition
/// not reassigning). Any other failure leaves the outcome unknown.
pub(super) const REFUSED: [i16; 4] = [3, 38, 39, NO_REASSIGNMENT_IN_PROGRESS];
const NO_REASSIGNMENT_IN_PROGRESS: i16 = 85;

/// A partition: topic and index.
pub(super) type Key = (String, i32);

/// A reassignment ListPartitionReassignments lists: (replicas, adding, removing).
pub(super) type Ongoing = (Vec<i32>, Vec<i32>, Vec<i32>);

/// A partition in a broker's Metadata: (replicas, ISR).
pub(super) type Shown = (Vec<i32>, Vec<i32>);

/// One AlterPartitionReassignments of one partition as the client saw it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Op {
    pub(super) key: Key,
    /// The target replicas; `None` cancels.
    pub(super) target: Option<Vec<i32>>,
    pub(super) outcome: Outcome,
    /// When it was sent and when its answer came (Unix ms).
    pub(super) sent_ms: u64,
    pub(super) ms: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    Ok,
    /// The controller's answer for this partition: one of [`REFUSED`].
    Refused(i16),
    /// No answer the client could trust (the error's name).
    Unknown(String),
}

/// The reassignment workload's history (`reassign.jsonl`).
#[derive(Debug, Default)]
pub(super) struct ReassignHistory {
    /// Every partition's replicas when the workload started (the cluster whole).
    pub(super) initial: BTreeMap<Key, Vec<i32>>,
    pub(super) ops: Vec<Op>,
    /// Moves the workload saw complete (no longer listed as reassigning, not cancelled).
    pub(super) completed_seen: usize,
    pub(super) done: bool,
}

/// What the cluster shows after the faults: the partitions ListPartitionReassignments lists
/// (with their replicas, adding, removing), and per broker each partition's replicas and
/// ISR from its Metadata.
#[derive(Debug, Default, Clone)]
pub(super) struct Observed {
    pub(super) pending: BTreeMap<Key, Ongoing>,
    pub(super) brokers: BTreeMap<u32, BTreeMap<Key, Shown>>,
}

/// The summary's counts.
#[derive(Debug, Default, PartialEq)]
pub(super) struct ReassignCounts {
    /// Moves acknowledged.
    pub(super) moves: usize,
    /// Moves the workload saw complete.
    pub(super) completed_seen: usize,
    /// Cancels acknowledged (a pending move reverted).
    pub(super) cancelled: usize,
    /// Cancels answered NO_REASSIGNMENT_IN_PROGRESS (the move had completed first).
    pub(super) cancel_too_late: usize,
    /// Requests refused otherwise, and of unknown outcome.
    pub(super) refused: usize,
    pub(super) unknown: usize,
    /// Partitions whose replicas after the faults differ from their initial ones.
    pub(super) partitions_moved: usize,
}

/// Replicas as a state knows them: in their exact order, or as a set only (after a revert).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Replicas {
    ids: Vec<i32>,
    exact: bool,
}

impl Replicas {
    fn exact(ids: &[i32]) -> Replicas {
        Replicas {
            ids: ids.to_vec(),
            exact: true,
        }
    }

    fn as_set(&self) -> Replicas {
        let mut ids = self.ids.clone();
        ids.sort_unstable();
        Replicas { ids, exact: false }
    }

    fn allows(&self, seen: &[i32]) -> bool {
        if self.exact {
            self.ids == seen
        } else {
            let mut seen = seen.to_vec();
            seen.sort_unstable();
            self.ids == seen
        }
    }
}

impl std::fmt::Display for Replicas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.exact {
            write!(f, "{:?}", self.ids)
        } else {
            write!(f, "{:?} in any order", self.ids)
        }
    }
}

/// A possible state of a partition: its replicas (for a pending move, the ones it started
/// from) and the pending target.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct State {
    replicas: Replicas,
    pending: Option<Vec<i32>>,
}

/// `states` with every pending move also completed (it may have, at any time).
fn settle(states: &BTreeSet<State>) -> BTreeSet<State> {
    let mut out = states.clone();
    for s in states {
        if let Some(target) = &s.pending {
            out.insert(State {
                replicas: Replicas::exact(target),
                pending: None,
            });
        }
    }
    out
}

/// The states after `op` was applied to one of `states`.
fn applied(states: &BTreeSet<State>, target: Option<&[i32]>) -> BTreeSet<State> {
    let settled = settle(states);
    match target {
        Some(target) => settled
            .into_iter()
            .map(|s| {
                // Replicas the pending move was adding that the new target drops: removing
                // now, so kept by a cancel.
                let kept: Vec<i32> = s
                    .pending
                    .iter()
                    .flatten()
                    .copied()
                    .filter(|r| !s.replicas.ids.contains(r) && !target.contains(r))
                    .collect();
                let replicas = if kept.is_empty() {
                    s.replicas
                } else {
                    let mut ids = s.replicas.ids.clone();
                    ids.extend(kept);
                    Replicas { ids, exact: false }.as_set()
                };
                State {
                    replicas,
                    pending: Some(target.to_vec()),
                }
            })
            .collect(),
        // A cancel is acknowledged only for a pending move, which goes back to where it
        // started.
        None => settled
            .into_iter()
            .filter(|s| s.pending.is_some())
            .map(|s| State {
                replicas: s.replicas.as_set(),
                pending: None,
            })
            .collect(),
    }
}

/// The history `dir` holds, if the run had the workload.
pub(super) fn read(dir: &Path) -> Result<Option<ReassignHistory>> {
    let path = dir.join("reassign.jsonl");
    if !path.exists() {
        return Ok(None);
    }
    let mut h = ReassignHistory::default();
    for v in super::workload::lines(&path)? {
        if let Some(initial) = v["initial"].as_object() {
            for (topic, parts) in initial {
                for (p, replicas) in parts.as_object().into_iter().flatten() {
                    if let Ok(p) = p.parse() {
                        h.initial.insert((topic.clone(), p), ids(replicas));
                    }
                }
            }
        } else if let Some(op) = v["op"].as_str() {
            let key = (
                v["topic"].as_str().unwrap_or_default().to_string(),
                v["p"].as_i64().unwrap_or(-1) as i32,
            );
            let target = match op {
                "alter" => Some(ids(&v["target"])),
                "cancel" => None,
                other => bail!("reassign.jsonl: an op {other:?}"),
            };
            let outcome = match (v["outcome"].as_str(), v["code"].as_i64()) {
                (Some("ok"), _) => Outcome::Ok,
                (_, Some(code)) if REFUSED.contains(&(code as i16)) => {
                    Outcome::Refused(code as i16)
                }
                (name, _) => Outcome::Unknown(name.unwrap_or("?").to_string()),
            };
            h.ops.push(Op {
                key,
                target,
                outcome,
                sent_ms: v["sent"].as_u64().unwrap_or(0),
                ms: v["ms"].as_u64().unwrap_or(0),
            });
        } else if v["completed"].as_bool() == Some(true) {
            h.completed_seen += 1;
        } else if v["done"].as_bool() == Some(true) {
            h.done = true;
        }
    }
    Ok(Some(h))
}

fn ids(v: &Value) -> Vec<i32> {
    v.as_array()
        .map(|a| a.iter().filter_map(|i| Some(i.as_i64()? as i32)).collect())
        .unwrap_or_default()
}

/// One line of the run's history for a line of `reassign.jsonl` worth noting (a request and
/// its answer, a move seen complete), or `None`.
pub(super) fn describe(line: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    let at = |key: &str| super::utc(v[key].as_u64().unwrap_or(0));
    let part = format!("{}-{}", v["topic"].as_str()?, v["p"].as_i64()?);
    if let Some(op) = v["op"].as_str() {
        let what = match op {
            "alter" => format!("move {part} from {} to {}", v["seen"], v["target"]),
            _ => format!("cancel the move of {part} ({})", v["why"].as_str()?),
        };
        let code = v["code"]
            .as_i64()
            .map_or(String::new(), |c| format!(" (error {c})"));
        Some(format!(
            "reassignment: {what}: sent {}, answered {} {}{code}",
            at("sent"),
            at("ms"),
            v["outcome"].as_str()?
        ))
    } else if v["completed"].as_bool() == Some(true) {
        Some(format!(
            "reassignment: {part} no longer reassigning at {}, replicas {} (target {})",
            at("ms"),
            v["replicas"],
            v["target"]
        ))
    } else {
        None
    }
}

/// What the cluster shows now: ListPartitionReassignments through the first broker that
/// answers, and every broker's Metadata of `topics`.
pub(super) fn observe(lab: &Lab, brokers: &[u32], topics: &[&str]) -> Result<Observed> {
    let mut observed = Observed::default();
    let mut last = None;
    let listed = brokers.iter().find_map(|&id| {
        nodes::list_reassignments(lab, id)
            .map_err(|e| last = Some(format!("broker {id}: {e:#}")))
            .ok()
    });
    let Some(listed) = listed else {
        bail!(
            "ListPartitionReassignments failed on every broker (last: {})",
            last.unwrap_or_default()
        );
    };
    for t in listed.topics {
        for p in t.partitions {
            observed.pending.insert(
                (t.name.clone(), p.partition_index),
                (p.replicas, p.adding_replicas, p.removing_replicas),
            );
        }
    }
    for &id in brokers {
        let mut parts = BTreeMap::new();
        for topic in topics {
            let m = nodes::metadata(lab, id, topic)?;
            for t in m.topics.into_iter().filter(|t| t.error_code == 0) {
                for p in t.partitions {
                    parts.insert(
                        (topic.to_string(), p.partition_index),
                        (p.replica_nodes, p.isr_nodes),
                    );
                }
            }
        }
        observed.brokers.insert(id, parts);
    }
    Ok(observed)
}

/// The anomalies of the history against what the cluster shows after the faults, and the
/// counts.
pub(super) fn check(h: &ReassignHistory, seen: &Observed) -> (Vec<Anomaly>, ReassignCounts) {
    let mut anomalies = Vec::new();
    let mut counts = ReassignCounts {
        completed_seen: h.completed_seen,
        ..Default::default()
    };
    for op in &h.ops {
        match (&op.outcome, &op.target) {
            (Outcome::Ok, Some(_)) => counts.moves += 1,
            (Outcome::Ok, None) => counts.cancelled += 1,
            (Outcome::Refused(NO_REASSIGNMENT_IN_PROGRESS), None) => counts.cancel_too_late += 1,
            (Outcome::Refused(_), _) => counts.refused += 1,
            (Outcome::Unknown(_), _) => counts.unknown += 1,
        }
    }
    for (key, initial) in &h.initial {
        let name = format!("{}-{}", key.0, key.1);
        let ops: Vec<&Op> = h.ops.iter().filter(|o| &o.key == key).collect();
        // When the last operation of the partition was answered: the history around it.
        let last_ms = ops.last().map(|o| o.ms);
        let mut states = BTreeSet::from([State {
            replicas: Replicas::exact(initial),
            pending: None,
        }]);
        for op in &ops {
            states = match &op.outcome {
                Outcome::Ok => {
                    let next = applied(&states, op.target.as_deref());
                    if next.is_empty() {
                        anomalies.push(Anomaly {
                            kind: "cancel contradicted",
                            detail: format!(
                                "a cancel of {name}'s move was acknowledged (sent {}), but no \
                                 acknowledged move of it could have been pending",
                                super::utc(op.sent_ms)
                            ),
                            at_ms: Some(op.ms),
                        });
                        settle(&states)
                    } else {
                        next
                    }
                }
                Outcome::Refused(NO_REASSIGNMENT_IN_PROGRESS) => settle(&states)
                    .into_iter()
                    .filter(|s| s.pending.is_none())
                    .collect(),
                Outcome::Refused(_) => states,
                Outcome::Unknown(_) => {
                    let mut either = states.clone();
                    either.extend(applied(&states, op.target.as_deref()));
                    either
                }
            };
        }
        let allowed: BTreeSet<Replicas> = settle(&states)
            .into_iter()
            .filter(|s| s.pending.is_none())
            .map(|s| s.replicas)
            .collect();
        let allowed_text = allowed
            .iter()
            .map(Replicas::to_string)
            .collect::<Vec<_>>()
            .join(" or ");
        if let Some((replicas, adding, removing)) = seen.pending.get(key) {
            anomalies.push(Anomaly {
                kind: "reassignment stuck",
                detail: format!(
                    "{name} is still reassigning after the cluster healed: replicas \
                     {replicas:?}, adding {adding:?}, removing {removing:?} (allowed when \
                     done: {allowed_text})"
                ),
                at_ms: last_ms,
            });
        }
        let mut views: BTreeMap<&Vec<i32>, Vec<u32>> = BTreeMap::new();
        for (id, parts) in &seen.brokers {
            let Some((replicas, isr)) = parts.get(key) else {
                anomalies.push(Anomaly {
                    kind: "replicas wrong",
                    detail: format!("broker {id}'s Metadata has no partition {name}"),
                    at_ms: last_ms,
                });
                continue;
            };
            views.entry(replicas).or_default().push(*id);
            if !allowed.iter().any(|r| r.allows(replicas)) {
                anomalies.push(Anomaly {
                    kind: "replicas wrong",
                    detail: format!(
                        "broker {id} shows {name} on replicas {replicas:?}; its acknowledged \
                         reassignments ({} of {} requests) allow only {allowed_text}",
                        ops.iter().filter(|o| o.outcome == Outcome::Ok).count(),
                        ops.len()
                    ),
                    at_ms: last_ms,
                });
            }
            let mut out_of_sync: Vec<i32> = replicas
                .iter()
                .copied()
                .filter(|r| !isr.contains(r))
                .collect();
            out_of_sync.sort_unstable();
            if !out_of_sync.is_empty() {
                anomalies.push(Anomaly {
                    kind: "replica not in sync",
                    detail: format!(
                        "broker {id} shows {name} with replicas {replicas:?} but ISR {isr:?}"
                    ),
                    at_ms: last_ms,
                });
            }
        }
        if views.len() > 1 {
            anomalies.push(Anomaly {
                kind: "replicas diverged",
                detail: format!("the brokers show {name} on different replicas: {views:?}"),
                at_ms: last_ms,
            });
        }
        if let Some((replicas, _)) = seen.brokers.values().find_map(|parts| parts.get(key)) {
            if !Replicas::exact(initial).as_set().allows(replicas) {
                counts.partitions_moved += 1;
            }
        }
    }
    (anomalies, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: i32) -> Key {
        ("t".to_string(), p)
    }

    fn alter(p: i32, target: &[i32], outcome: Outcome) -> Op {
        Op {
            key: key(p),
            target: Some(target.to_vec()),
            outcome,
            sent_ms: 1,
            ms: 2,
        }
    }

    fn cancel(p: i32, outcome: Outcome) -> Op {
        Op {
            key: key(p),
            target: None,
            outcome,
            sent_ms: 1,
            ms: 2,
        }
    }

    fn history(initial: &[i32], ops: Vec<Op>) -> ReassignHistory {
        ReassignHistory {
            initial: BTreeMap::from([(key(0), initial.to_vec())]),
            ops,
            completed_seen: 0,
            done: true,
        }
    }

    /// Brokers 4 and 5 both showing partition 0 on `replicas`, all in sync, nothing pending.
    fn shows(replicas: &[i32]) -> Observed {
        let parts = BTreeMap::from([(key(0), (replicas.to_vec(), replicas.to_vec()))]);
        Observed {
            pending: BTreeMap::new(),
            brokers: BTreeMap::from([(4, parts.clone()), (5, parts)]),
        }
    }

    fn kinds(found: &[Anomaly]) -> Vec<&str> {
        found.iter().map(|a| a.kind).collect()
    }

    #[test]
    fn a_completed_move_must_end_on_its_target_in_its_order() {
        let h = history(&[4, 5, 6], vec![alter(0, &[7, 5, 6], Outcome::Ok)]);
        let (found, counts) = check(&h, &shows(&[7, 5, 6]));
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(counts.moves, 1);
        assert_eq!(counts.partitions_moved, 1);
        // The move lost, or the target's order not kept.
        assert_eq!(
            kinds(&check(&h, &shows(&[4, 5, 6])).0),
            ["replicas wrong"; 2]
        );
        assert_eq!(
            kinds(&check(&h, &shows(&[5, 6, 7])).0),
            ["replicas wrong"; 2]
        );
    }

    #[test]
    fn a_cancel_reverts_to_where_the_move_started_in_any_order_and_a_late_one_to_nothing() {
        // Cancelled in flight: back to 4, 5, 6 (the revert's order is not the original's).
        let h = history(
            &[4, 5, 6],
            vec![alter(0, &[7, 5, 6], Outcome::Ok), cancel(0, Outcome::Ok)],
        );
        let (found, counts) = check(&h, &shows(&[5, 6, 4]));
        assert!(found.is_empty(), "{found:?}");
        assert_eq!((counts.moves, counts.cancelled), (1, 1));
        assert_eq!(
            kinds(&check(&h, &shows(&[7, 5, 6])).0),
            ["replicas wrong"; 2]
        );
        // A cancel refused as too late: the move had completed, so the target stands.
        let h = history(
            &[4, 5, 6],
            vec![
                alter(0, &[7, 5, 6], Outcome::Ok),
                cancel(0, Outcome::Refused(NO_REASSIGNMENT_IN_PROGRESS)),
            ],
        );
        assert!(check(&h, &shows(&[7, 5, 6])).0.is_empty());
        assert_eq!(
            kinds(&check(&h, &shows(&[4, 5, 6])).0),
            ["replicas wrong"; 2]
        );
        // A cancel acknowledged with no move that could be pending.
        let h = history(
            &[4, 5, 6],
            vec![
                alter(0, &[7, 5, 6], Outcome::Refused(39)),
                cancel(0, Outcome::Ok),
            ],
        );
        assert_eq!(
            kinds(&check(&h, &shows(&[4, 5, 6])).0),
            ["cancel contradicted"]
        );
    }

    #[test]
    fn a_move_replacing_a_pending_one_reverts_to_the_first_ones_start_when_cancelled() {
        // 4,5,6 -> 7,5,6 (maybe completed, maybe not) -> 4,7,6, then cancelled: back to
        // 4,5,6 if the first had not completed, to 7,5,6 if it had.
        let h = history(
            &[4, 5, 6],
            vec![
                alter(0, &[7, 5, 6], Outcome::Ok),
                alter(0, &[4, 7, 6], Outcome::Ok),
                cancel(0, Outcome::Ok),
            ],
        );
        assert!(check(&h, &shows(&[6, 4, 5])).0.is_empty());
        assert!(check(&h, &shows(&[5, 6, 7])).0.is_empty());
        assert_eq!(
            kinds(&check(&h, &shows(&[4, 7, 6])).0),
            ["replicas wrong"; 2]
        );
        // A new target dropping a replica the pending one was adding: a cancel then keeps
        // it (it is being removed, not added), as Kafka's revert does.
        let h = history(
            &[4, 5, 6],
            vec![
                alter(0, &[7, 5, 6], Outcome::Ok),
                alter(0, &[8, 5, 6], Outcome::Ok),
                cancel(0, Outcome::Ok),
            ],
        );
        assert!(check(&h, &shows(&[4, 5, 6, 7])).0.is_empty());
        assert_eq!(
            kinds(&check(&h, &shows(&[5, 4, 6])).0),
            ["replicas wrong"; 2]
        );
    }

    #[test]
    fn an_unknown_outcome_allows_both_and_a_refusal_changes_nothing() {
        let h = history(
            &[4, 5, 6],
            vec![alter(
                0,
                &[7, 5, 6],
                Outcome::Unknown("KafkaTimeoutError".into()),
            )],
        );
        let (found, counts) = check(&h, &shows(&[4, 5, 6]));
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(counts.unknown, 1);
        assert!(check(&h, &shows(&[7, 5, 6])).0.is_empty());
        let h = history(&[4, 5, 6], vec![alter(0, &[7, 5, 6], Outcome::Refused(39))]);
        assert!(check(&h, &shows(&[4, 5, 6])).0.is_empty());
        assert_eq!(
            kinds(&check(&h, &shows(&[7, 5, 6])).0),
            ["replicas wrong"; 2]
        );
        // Nobody moved it: it must stay where it was, in its order.
        let h = history(&[4, 5, 6], vec![]);
        assert_eq!(
            kinds(&check(&h, &shows(&[5, 4, 6])).0),
            ["replicas wrong"; 2]
        );
    }

    #[test]
    fn a_pending_move_an_out_of_sync_replica_and_brokers_that_disagree_are_anomalies() {
        let h = history(&[4, 5, 6], vec![alter(0, &[7, 5, 6], Outcome::Ok)]);
        let mut seen = shows(&[7, 5, 6]);
        seen.pending
            .insert(key(0), (vec![7, 5, 6, 4], vec![7], vec![4]));
        assert_eq!(kinds(&check(&h, &seen).0), ["reassignment stuck"]);
        let mut seen = shows(&[7, 5, 6]);
        seen.brokers
            .get_mut(&5)
            .unwrap()
            .insert(key(0), (vec![7, 5, 6], vec![5, 6]));
        assert_eq!(kinds(&check(&h, &seen).0), ["replica not in sync"]);
        // An unknown outcome allows either, but not both at once.
        let h = history(
            &[4, 5, 6],
            vec![alter(
                0,
                &[7, 5, 6],
                Outcome::Unknown("RequestTimedOutError".into()),
            )],
        );
        let mut seen = shows(&[7, 5, 6]);
        seen.brokers
            .get_mut(&5)
            .unwrap()
            .insert(key(0), (vec![4, 5, 6], vec![4, 5, 6]));
        assert_eq!(kinds(&check(&h, &seen).0), ["replicas diverged"]);
    }

    #[test]
    fn the_workload_s_lines_read_back_and_describe_themselves() {
        let dir = std::env::temp_dir().join(format!("reassign-checker-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lines = [
            r#"{"initial":{"t":{"0":[4,5,6]}},"ms":1}"#,
            r#"{"op":"alter","topic":"t","p":0,"outcome":"ok","code":null,"sent":1,"ms":2,"target":[7,5,6],"seen":[4,5,6]}"#,
            r#"{"op":"cancel","topic":"t","p":0,"outcome":"NoReassignmentInProgressError","code":85,"sent":3,"ms":4,"why":"drawn"}"#,
            r#"{"op":"alter","topic":"t","p":0,"outcome":"KafkaTimeoutError","code":null,"sent":5,"ms":6,"target":[4,5,6],"seen":[7,5,6]}"#,
            r#"{"completed":true,"topic":"t","p":0,"target":[7,5,6],"replicas":[7,5,6],"ms":7}"#,
            r#"{"done":true}"#,
            r#"{"op":"alt"#,
        ];
        std::fs::write(dir.join("reassign.jsonl"), lines.join("\n")).unwrap();
        let h = read(&dir).unwrap().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(h.initial, BTreeMap::from([(key(0), vec![4, 5, 6])]));
        let outcomes: Vec<&Outcome> = h.ops.iter().map(|o| &o.outcome).collect();
        assert_eq!(
            outcomes,
            [
                &Outcome::Ok,
                &Outcome::Refused(85),
                &Outcome::Unknown("KafkaTimeoutError".into())
            ]
        );
        assert!(h.done);
        assert_eq!(h.completed_seen, 1);
        let (found, counts) = check(&h, &shows(&[7, 5, 6]));
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(
            (counts.moves, counts.cancel_too_late, counts.unknown),
            (1, 1, 1)
        );
        let said = describe(lines[1]).unwrap();
        assert!(
            said.contains("move t-0 from [4,5,6] to [7,5,6]") && said.ends_with(" ok"),
            "{said}"
        );
        assert!(describe(lines[2]).unwrap().ends_with("(error 85)"));
        assert!(describe(lines[0]).is_none());
    }
}
