//! The voter-change workload's checks (`--voters`): `voters.rs` changes the voter set of the
//! dynamic quorum during the faults with Kafka's `kafka-metadata-quorum add-controller` /
//! `remove-controller` and records every request and its answer in `voters.jsonl`. Once the
//! cluster has healed, the harness asks every controller ([`observe`]: DescribeQuorum v2, and
//! on kraftd each controller's own Raft view from its `/metrics`) and this module judges that
//! against what the leader acknowledged ([`check`]).
//!
//! What the voter set may be after the faults, as KIP-853 defines the changes (Kafka's
//! `AddVoterHandler` / `RemoveVoterHandler`, kraftd's `crates/raft/src/core/membership.rs`):
//!
//! - an acknowledged add puts its replica (id and directory id) in the set, an acknowledged
//!   remove takes it out; the leader takes one change at a time and only once the last one
//!   is committed, so the changes apply in the order they were acknowledged;
//! - an answer with a refusal checked before anything is appended ([`REFUSED`]:
//!   DUPLICATE_VOTER, VOTER_NOT_FOUND, UNSUPPORTED_VERSION, INVALID_REQUEST) changed nothing;
//!   DUPLICATE_VOTER also says the replica was a voter then, VOTER_NOT_FOUND that it was not;
//! - any other answer (REQUEST_TIMED_OUT, which the leader also gives for a change it
//!   appended but did not see committed in time; NOT_LEADER_OR_FOLLOWER; the admin client
//!   timing out; the tool killed) leaves the outcome unknown: applied or not.
//!
//! As `reassign_checker.rs` does, the checker follows every possible voter set ([`possible`]).
//! A set is one of replica keys (node id and directory id): a removed controller keeps its
//! directory and is added back with it, but a voter whose disk was lost (the fault `voter's
//! disk lost`) comes back under a new directory id, and its old key stays a voter until
//! removed. As Kafka's handlers decide: an add is refused (DUPLICATE_VOTER) when its *id* is a
//! voter's under any directory, a remove (VOTER_NOT_FOUND) unless its *key* is a voter.
//! Anomalies:
//!
//! - `no leader` / `two leaders`: after healing, not exactly one controller answers
//!   DescribeQuorum as the leader;
//! - `voters wrong`: the leader's voter set is none that the acknowledged changes allow (an
//!   acknowledged change lost, a refused one applied, a voter nobody added);
//! - `voter change contradicted`: an answer no possible set allows (an add acknowledged for
//!   a replica that was a voter in every possible set, a DUPLICATE_VOTER for one that was in
//!   none...);
//! - `voter behind`: a voter's log end short of the leader's high watermark;
//! - `voter directory wrong`: a voter whose directory id is not its node's (a lost disk's
//!   old key never replaced);
//! - `controllers disagree`: a controller whose own view (current leader, epoch, number of
//!   voters, whether it is an observer) is not the leader's.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::checker::Anomaly;
use super::net::Lab;
use super::nodes;
use crate::cluster::describe_quorum_partition;

/// The refusals a leader answers before appending anything: the change was not applied.
pub(super) const REFUSED: [&str; 4] = [
    DUPLICATE_VOTER,
    VOTER_NOT_FOUND,
    "UNSUPPORTED_VERSION",
    "INVALID_REQUEST",
];
pub(super) const DUPLICATE_VOTER: &str = "DUPLICATE_VOTER";
pub(super) const VOTER_NOT_FOUND: &str = "VOTER_NOT_FOUND";

/// A set of voters, by replica key: node id and directory id.
pub(super) type Voters = BTreeSet<(u32, String)>;

/// One add-controller or remove-controller as the tool answered it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Op {
    /// add-controller (else remove-controller).
    pub(super) add: bool,
    pub(super) id: u32,
    /// The replica's directory id (of an add, the node's when the tool ran).
    pub(super) dir: String,
    pub(super) outcome: Outcome,
    /// When the tool was started and when it ended (Unix ms).
    pub(super) sent_ms: u64,
    pub(super) ms: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    Ok,
    /// One of [`REFUSED`].
    Refused(String),
    /// No answer to trust (what the tool said instead).
    Unknown(String),
}

/// The workload's history (`voters.jsonl`).
#[derive(Debug, Default)]
pub(super) struct VotersHistory {
    /// The voters when the workload started (the quorum whole), with their directory ids.
    pub(super) initial: BTreeMap<u32, String>,
    pub(super) ops: Vec<Op>,
    pub(super) done: bool,
}

/// What a controller that answers DescribeQuorum as the leader says.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Described {
    pub(super) epoch: i32,
    pub(super) hw: i64,
    /// Each voter: id, directory id, log end offset.
    pub(super) voters: Vec<(u32, String, i64)>,
    pub(super) observers: Vec<u32>,
}

/// A controller's own Raft view (kraftd's `/metrics`: `kafka_raft_metrics_*`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct View {
    pub(super) leader: i32,
    pub(super) epoch: i32,
    /// `current-state`: leader, follower, observer...
    pub(super) state: String,
    pub(super) voters: usize,
}

/// What the controllers show after the faults.
#[derive(Debug, Default, Clone)]
pub(super) struct Observed {
    /// The controllers that answered DescribeQuorum as the leader.
    pub(super) leaders: BTreeMap<u32, Described>,
    /// Each controller's own view, where it could be read (kraftd's nodes).
    pub(super) views: BTreeMap<u32, View>,
    /// Each controller's metadata directory id (its `meta.properties`).
    pub(super) dir_ids: BTreeMap<u32, String>,
}

/// The summary's counts.
#[derive(Debug, Default, PartialEq)]
pub(super) struct VotersCounts {
    pub(super) added: usize,
    pub(super) removed: usize,
    pub(super) refused: usize,
    pub(super) unknown: usize,
    /// The leader's voters after the faults.
    pub(super) final_voters: Vec<u32>,
}

/// The history `dir` holds, if the run had the workload.
pub(super) fn read(dir: &Path) -> Result<Option<VotersHistory>> {
    let path = dir.join("voters.jsonl");
    if !path.exists() {
        return Ok(None);
    }
    let mut h = VotersHistory::default();
    for v in super::workload::lines(&path)? {
        if let Some(initial) = v["initial"].as_object() {
            for (id, dir_id) in initial {
                if let (Ok(id), Some(dir_id)) = (id.parse(), dir_id.as_str()) {
                    h.initial.insert(id, dir_id.to_string());
                }
            }
        } else if let Some(op) = v["op"].as_str() {
            let add = match op {
                "add" => true,
                "remove" => false,
                other => bail!("voters.jsonl: an op {other:?}"),
            };
            let error = v["error"].as_str().unwrap_or("?").to_string();
            let outcome = match v["outcome"].as_str() {
                Some("ok") => Outcome::Ok,
                Some("refused") if REFUSED.contains(&error.as_str()) => Outcome::Refused(error),
                _ => Outcome::Unknown(error),
            };
            h.ops.push(Op {
                add,
                id: v["id"].as_u64().unwrap_or(0) as u32,
                dir: v["dir"].as_str().unwrap_or("?").to_string(),
                outcome,
                sent_ms: v["sent"].as_u64().unwrap_or(0),
                ms: v["ms"].as_u64().unwrap_or(0),
            });
        } else if v["done"].as_bool() == Some(true) {
            h.done = true;
        }
    }
    Ok(Some(h))
}

/// One line of the run's history for a line of `voters.jsonl` (a request and its answer),
/// or `None`.
pub(super) fn describe(line: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    let at = |key: &str| super::utc(v[key].as_u64().unwrap_or(0));
    let op = v["op"].as_str()?;
    let dir = v["dir"].as_str().unwrap_or("?");
    let what = match op {
        "add" => format!("add-controller {} (directory {dir})", v["id"]),
        _ => format!(
            "remove-controller --controller-id {} --controller-directory-id {dir}",
            v["id"]
        ),
    };
    let error = v["error"]
        .as_str()
        .map_or(String::new(), |e| format!(" ({e})"));
    Some(format!(
        "voters: {what} with voters {} seen before: sent {}, answered {} {}{error}: {}",
        v["seen"],
        at("sent"),
        at("ms"),
        v["outcome"].as_str()?,
        v["answer"].as_str().unwrap_or("").trim()
    ))
}

/// What the controllers show now: each one's DescribeQuorum v2 (the leader answers it, the
/// others refuse with NOT_LEADER_OR_FOLLOWER) and, with `metrics` (kraftd's nodes), its own
/// view from `/metrics`; `dir_ids` are the controllers' metadata directory ids.
pub(super) fn observe(
    lab: &Lab,
    controllers: &[u32],
    dir_ids: &BTreeMap<u32, String>,
    metrics: bool,
) -> Result<Observed> {
    let mut seen = Observed {
        dir_ids: dir_ids.clone(),
        ..Default::default()
    };
    for &id in controllers {
        if let Ok(described) = describe_as_leader(lab, id) {
            seen.leaders.insert(id, described);
        }
        if metrics {
            let text = scrape(nodes::metrics_addr(lab, id))
                .with_context(|| format!("controller {id}'s /metrics"))?;
            seen.views.insert(
                id,
                view(&text).with_context(|| format!("controller {id}'s /metrics"))?,
            );
        }
    }
    Ok(seen)
}

/// DescribeQuorum v2 of `__cluster_metadata` to controller `id`, if it answers as the leader.
fn describe_as_leader(lab: &Lab, id: u32) -> Result<Described> {
    let p = describe_quorum_partition(nodes::controller_addr(lab, id), 2)?;
    if p.leader_id != id as i32 {
        bail!("leader {}", p.leader_id);
    }
    Ok(Described {
        epoch: p.leader_epoch,
        hw: p.high_watermark,
        voters: p
            .current_voters
            .iter()
            .map(|v| {
                (
                    v.replica_id as u32,
                    v.replica_directory_id.to_base64(),
                    v.log_end_offset,
                )
            })
            .collect(),
        observers: p.observers.iter().map(|o| o.replica_id as u32).collect(),
    })
}

/// A node's `/metrics` text (a plain HTTP/1.0 GET, as Prometheus scrapes it).
fn scrape(addr: std::net::SocketAddr) -> Result<String> {
    let timeout = Duration::from_secs(2);
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: chaos\r\n\r\n")?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    let (head, body) = text.split_once("\r\n\r\n").context("no HTTP body")?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        bail!("answered {}", head.lines().next().unwrap_or(""));
    }
    Ok(body.to_string())
}

/// A controller's Raft view from its `/metrics` text: `kafka_raft_metrics_current_leader`,
/// `_current_epoch`, `_number_of_voters` and the `state` label of the
/// `_current_state` sample at 1.
fn view(text: &str) -> Result<View> {
    let value = |name: &str| -> Result<f64> {
        text.lines()
            .find_map(|l| {
                let rest = l.strip_prefix(name)?;
                let rest = rest.strip_prefix(' ').or_else(|| {
                    rest.starts_with('{')
                        .then(|| rest.split_once("} ").map(|(_, v)| v))?
                })?;
                rest.trim().parse().ok()
            })
            .with_context(|| format!("no {name}"))
    };
    let state = text
        .lines()
        .filter(|l| l.starts_with("kafka_raft_metrics_current_state{"))
        .find(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) == Some(1.0))
        .and_then(|l| l.split("state=\"").nth(1)?.split('"').next())
        .context("no kafka_raft_metrics_current_state at 1")?;
    Ok(View {
        leader: value("kafka_raft_metrics_current_leader")? as i32,
        epoch: value("kafka_raft_metrics_current_epoch")? as i32,
        state: state.to_string(),
        voters: value("kafka_raft_metrics_number_of_voters")? as usize,
    })
}

/// Whether `id` is a voter's id in `s`, under any directory.
fn has_id(s: &Voters, id: u32) -> bool {
    s.iter().any(|(v, _)| *v == id)
}

/// The replica key `op` changes.
fn key(op: &Op) -> (u32, String) {
    (op.id, op.dir.clone())
}

/// The sets `states` become with `op` applied where it can apply (an add of an id no voter
/// has, a remove of a voter's key).
fn applied(states: &BTreeSet<Voters>, op: &Op) -> BTreeSet<Voters> {
    states
        .iter()
        .filter(|s| {
            if op.add {
                !has_id(s, op.id)
            } else {
                s.contains(&key(op))
            }
        })
        .map(|s| {
            let mut s = s.clone();
            if op.add {
                s.insert(key(op));
            } else {
                s.remove(&key(op));
            }
            s
        })
        .collect()
}

/// Every voter set the history allows at its end, and the answers no possible set allowed
/// (after each, the checker goes on from what the answer says).
pub(super) fn possible(h: &VotersHistory) -> (BTreeSet<Voters>, Vec<Anomaly>) {
    let initial = h.initial.iter().map(|(id, dir)| (*id, dir.clone()));
    let mut states: BTreeSet<Voters> = BTreeSet::from([initial.collect()]);
    let mut anomalies = Vec::new();
    for op in &h.ops {
        let verb = if op.add { "add" } else { "remove" };
        let before = states.clone();
        states = match &op.outcome {
            Outcome::Ok => applied(&states, op),
            Outcome::Refused(code) if code == DUPLICATE_VOTER => states
                .iter()
                .filter(|s| has_id(s, op.id))
                .cloned()
                .collect(),
            Outcome::Refused(code) if code == VOTER_NOT_FOUND => states
                .iter()
                .filter(|s| !s.contains(&key(op)))
                .cloned()
                .collect(),
            Outcome::Refused(_) => states.clone(),
            Outcome::Unknown(_) => states.union(&applied(&states, op)).cloned().collect(),
        };
        if states.is_empty() {
            anomalies.push(Anomaly {
                kind: "voter change contradicted",
                detail: format!(
                    "{verb} of controller {} (directory {}) answered {:?} at {}, but the voters \
                     could only be one of {:?} then",
                    op.id,
                    op.dir,
                    op.outcome,
                    super::utc(op.ms),
                    before
                ),
                at_ms: Some(op.ms),
            });
            // Go on from what the answer says the set was.
            states = before
                .iter()
                .map(|s| {
                    let mut s = s.clone();
                    // Acknowledged: as the op leaves it; refused as a duplicate: a voter;
                    // refused as not found: not one.
                    let now_voter = match &op.outcome {
                        Outcome::Refused(code) => code == DUPLICATE_VOTER,
                        _ => op.add,
                    };
                    match (&op.outcome, now_voter) {
                        // A duplicate: some key of the id is a voter; keep the set's if any.
                        (Outcome::Refused(_), true) if has_id(&s, op.id) => {}
                        (_, true) => {
                            s.retain(|(v, _)| *v != op.id);
                            s.insert(key(op));
                        }
                        (_, false) => {
                            s.remove(&key(op));
                        }
                    }
                    s
                })
                .collect();
        }
    }
    (states, anomalies)
}

/// Judges what the controllers show after the faults against the history.
pub(super) fn check(h: &VotersHistory, seen: &Observed) -> (Vec<Anomaly>, VotersCounts) {
    let (states, mut anomalies) = possible(h);
    let last_ms = h.ops.last().map(|op| op.ms);
    let mut counts = VotersCounts::default();
    for op in &h.ops {
        match (&op.outcome, op.add) {
            (Outcome::Ok, true) => counts.added += 1,
            (Outcome::Ok, false) => counts.removed += 1,
            (Outcome::Refused(_), _) => counts.refused += 1,
            (Outcome::Unknown(_), _) => counts.unknown += 1,
        }
    }
    let mut anomaly = |kind, detail| {
        anomalies.push(Anomaly {
            kind,
            detail,
            at_ms: last_ms,
        })
    };
    let (leader, described) = match seen.leaders.len() {
        0 => {
            anomaly(
                "no leader",
                "no controller answers DescribeQuorum as the leader".into(),
            );
            return (anomalies, counts);
        }
        1 => seen.leaders.iter().next().expect("one"),
        _ => {
            anomaly(
                "two leaders",
                format!(
                    "controllers {:?} all answer DescribeQuorum as the leader (epochs {:?})",
                    seen.leaders.keys().collect::<Vec<_>>(),
                    seen.leaders.values().map(|d| d.epoch).collect::<Vec<_>>()
                ),
            );
            return (anomalies, counts);
        }
    };
    let voters: Voters = described
        .voters
        .iter()
        .map(|(id, dir, _)| (*id, dir.clone()))
        .collect();
    counts.final_voters = voters.iter().map(|v| v.0).collect();
    if !states.contains(&voters) {
        anomaly(
            "voters wrong",
            format!(
                "leader {leader} (epoch {}) has voters {voters:?}; the acknowledged changes \
                 allow only {states:?}",
                described.epoch
            ),
        );
    }
    for (id, dir_id, end) in &described.voters {
        if *end < described.hw {
            anomaly(
                "voter behind",
                format!(
                    "voter {id}'s log ends at {end}, the leader {leader}'s high watermark is {}",
                    described.hw
                ),
            );
        }
        if let Some(own) = seen.dir_ids.get(id).filter(|own| *own != dir_id) {
            anomaly(
                "voter directory wrong",
                format!(
                    "leader {leader} has voter {id} with directory id {dir_id}; node {id}'s \
                     metadata directory is {own} (a lost disk's old key never replaced?)"
                ),
            );
        }
    }
    for (id, view) in &seen.views {
        let observer = view.state == "observer";
        // A voter by its own key: a node on a new disk is an observer while its old key is
        // still a voter.
        let own_key = (*id, seen.dir_ids.get(id).cloned().unwrap_or_default());
        if view.leader != *leader as i32
            || view.epoch != described.epoch
            || view.voters != voters.len()
            || observer == voters.contains(&own_key)
        {
            anomaly(
                "controllers disagree",
                format!(
                    "controller {id} sees leader {} in epoch {} as a{} {} with {} voters; \
                     leader {leader} is in epoch {} with voters {voters:?}",
                    view.leader,
                    view.epoch,
                    if observer { "n" } else { "" },
                    view.state,
                    view.voters,
                    described.epoch
                ),
            );
        }
    }
    (anomalies, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(add: bool, id: u32, outcome: Outcome) -> Op {
        op_on(add, id, &format!("dir{id}"), outcome)
    }

    fn op_on(add: bool, id: u32, dir: &str, outcome: Outcome) -> Op {
        Op {
            add,
            id,
            dir: dir.into(),
            outcome,
            sent_ms: 1,
            ms: 2,
        }
    }

    fn history(ops: Vec<Op>) -> VotersHistory {
        VotersHistory {
            initial: (1..=3).map(|id| (id, format!("dir{id}"))).collect(),
            ops,
            done: true,
        }
    }

    fn set(ids: &[u32]) -> Voters {
        ids.iter().map(|&id| (id, format!("dir{id}"))).collect()
    }

    /// A healed quorum led by `leader` with `voters` all caught up, every controller (1-4)
    /// agreeing.
    fn shows(leader: u32, voters: &[u32]) -> Observed {
        let mut seen = Observed::default();
        seen.leaders.insert(
            leader,
            Described {
                epoch: 7,
                hw: 100,
                voters: voters
                    .iter()
                    .map(|&id| (id, format!("dir{id}"), 100))
                    .collect(),
                observers: Vec::new(),
            },
        );
        for id in 1..=4 {
            let state = if id == leader {
                "leader"
            } else if voters.contains(&id) {
                "follower"
            } else {
                "observer"
            };
            seen.views.insert(
                id,
                View {
                    leader: leader as i32,
                    epoch: 7,
                    state: state.into(),
                    voters: voters.len(),
                },
            );
            seen.dir_ids.insert(id, format!("dir{id}"));
        }
        seen
    }

    fn kinds(found: &[Anomaly]) -> Vec<&str> {
        found.iter().map(|a| a.kind).collect()
    }

    #[test]
    fn acknowledged_changes_apply_in_order_and_a_lost_one_is_an_anomaly() {
        let h = history(vec![
            op(true, 4, Outcome::Ok),
            op(false, 1, Outcome::Ok),
            op(true, 1, Outcome::Ok),
            op(false, 2, Outcome::Ok),
        ]);
        let (states, found) = possible(&h);
        assert!(found.is_empty());
        assert_eq!(states, BTreeSet::from([set(&[1, 3, 4])]));
        let (found, counts) = check(&h, &shows(3, &[1, 3, 4]));
        assert!(found.is_empty(), "{found:?}");
        assert_eq!((counts.added, counts.removed), (2, 2));
        assert_eq!(counts.final_voters, vec![1, 3, 4]);
        // The last remove lost: voter 2 still in.
        let (found, _) = check(&h, &shows(3, &[1, 2, 3, 4]));
        assert_eq!(kinds(&found), ["voters wrong"]);
    }

    #[test]
    fn an_unknown_outcome_allows_both_and_a_refusal_narrows() {
        let timed_out = Outcome::Unknown("REQUEST_TIMED_OUT".into());
        let h = history(vec![op(true, 4, timed_out.clone())]);
        for voters in [&[1, 2, 3][..], &[1, 2, 3, 4]] {
            let (found, counts) = check(&h, &shows(1, voters));
            assert!(found.is_empty(), "{voters:?}: {found:?}");
            assert_eq!(counts.unknown, 1);
        }
        // DUPLICATE_VOTER after it: the add did apply, so the set must have 4.
        let h = history(vec![
            op(true, 4, timed_out.clone()),
            op(true, 4, Outcome::Refused(DUPLICATE_VOTER.into())),
        ]);
        assert_eq!(possible(&h).0, BTreeSet::from([set(&[1, 2, 3, 4])]));
        let (found, counts) = check(&h, &shows(1, &[1, 2, 3]));
        assert_eq!(kinds(&found), ["voters wrong"]);
        assert_eq!(counts.refused, 1);
        // VOTER_NOT_FOUND for a remove after an unknown remove: it did apply.
        let h = history(vec![
            op(false, 2, timed_out),
            op(false, 2, Outcome::Refused(VOTER_NOT_FOUND.into())),
        ]);
        assert_eq!(possible(&h).0, BTreeSet::from([set(&[1, 3])]));
        // Another refusal changes nothing.
        let h = history(vec![op(
            false,
            3,
            Outcome::Refused("INVALID_REQUEST".into()),
        )]);
        assert_eq!(possible(&h).0, BTreeSet::from([set(&[1, 2, 3])]));
    }

    #[test]
    fn an_answer_no_possible_set_allows_is_a_contradiction() {
        // Adding a voter that is one, acknowledged; a DUPLICATE_VOTER for a non-voter.
        for (ops, after) in [
            (vec![op(true, 2, Outcome::Ok)], set(&[1, 2, 3])),
            (
                vec![op(true, 4, Outcome::Refused(DUPLICATE_VOTER.into()))],
                set(&[1, 2, 3, 4]),
            ),
            (vec![op(false, 4, Outcome::Ok)], set(&[1, 2, 3])),
        ] {
            let (states, found) = possible(&history(ops));
            assert_eq!(kinds(&found), ["voter change contradicted"]);
            assert_eq!(states, BTreeSet::from([after]));
        }
    }

    #[test]
    fn a_lost_disk_s_old_key_is_replaced_by_its_new_one() {
        // Voter 3's disk lost: node 3 is back on directory "new3", an observer.
        let mut seen = shows(2, &[1, 2, 3]);
        seen.dir_ids.insert(3, "new3".into());
        seen.views.get_mut(&3).unwrap().state = "observer".into();
        let h = history(Vec::new());
        // Its old key still a voter: the set is right, the stale key is not.
        assert_eq!(kinds(&check(&h, &seen).0), ["voter directory wrong"]);

        // The spare added, the old key removed, node 3 added on its new disk, 1 removed.
        let ops = vec![
            op(true, 4, Outcome::Ok),
            // Its id is still a voter's (the old key): refused, as Kafka's AddVoterHandler does.
            op_on(true, 3, "new3", Outcome::Refused(DUPLICATE_VOTER.into())),
            // The new key is no voter's.
            op_on(false, 3, "new3", Outcome::Refused(VOTER_NOT_FOUND.into())),
            op(false, 3, Outcome::Ok),
            op_on(true, 3, "new3", Outcome::Ok),
            op(false, 1, Outcome::Ok),
        ];
        let h = history(ops);
        let (states, found) = possible(&h);
        assert!(found.is_empty(), "{found:?}");
        let after: Voters = [(2, "dir2"), (3, "new3"), (4, "dir4")]
            .iter()
            .map(|(id, dir)| (*id, dir.to_string()))
            .collect();
        assert_eq!(states, BTreeSet::from([after]));
        let mut healed = shows(2, &[2, 3, 4]);
        healed.leaders.get_mut(&2).unwrap().voters[1].1 = "new3".into();
        healed.dir_ids.insert(3, "new3".into());
        let (found, counts) = check(&h, &healed);
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(counts.final_voters, vec![2, 3, 4]);
        // The leader still naming the old key for 3: the acknowledged replacement was lost.
        let mut stale = healed.clone();
        stale.leaders.get_mut(&2).unwrap().voters[1].1 = "dir3".into();
        let kinds_found = kinds(&check(&h, &stale).0).join(",");
        assert!(kinds_found.contains("voters wrong"), "{kinds_found}");

        // The new key acknowledged while the old one was a voter in every possible set.
        let h = history(vec![op_on(true, 3, "new3", Outcome::Ok)]);
        assert_eq!(kinds(&possible(&h).1), ["voter change contradicted"]);
    }

    #[test]
    fn leaders_laggards_directories_and_views_are_checked() {
        let h = history(vec![op(true, 4, Outcome::Ok)]);
        let whole = shows(2, &[1, 2, 3, 4]);
        assert!(check(&h, &whole).0.is_empty());

        let mut none = whole.clone();
        none.leaders.clear();
        assert_eq!(kinds(&check(&h, &none).0), ["no leader"]);

        let mut two = whole.clone();
        let other = two.leaders[&2].clone();
        two.leaders.insert(3, other);
        assert_eq!(kinds(&check(&h, &two).0), ["two leaders"]);

        let mut behind = whole.clone();
        behind.leaders.get_mut(&2).unwrap().voters[0].2 = 90;
        assert_eq!(kinds(&check(&h, &behind).0), ["voter behind"]);

        // Node 4 on another directory than its voter key's, yet a follower by its view.
        let mut dir = whole.clone();
        dir.dir_ids.insert(4, "other".into());
        assert_eq!(
            kinds(&check(&h, &dir).0),
            ["voter directory wrong", "controllers disagree"]
        );

        // A voter that thinks it is an observer; one in another epoch.
        for change in [
            |v: &mut View| v.state = "observer".into(),
            |v: &mut View| v.epoch = 6,
            |v: &mut View| v.voters = 3,
        ] {
            let mut views = whole.clone();
            change(views.views.get_mut(&4).unwrap());
            assert_eq!(kinds(&check(&h, &views).0), ["controllers disagree"]);
        }
    }

    #[test]
    fn a_controller_s_view_is_read_from_its_metrics() {
        let text = "# HELP x\n\
            kafka_raft_metrics_current_leader{node=\"4\"} 2\n\
            kafka_raft_metrics_current_epoch{node=\"4\"} 9\n\
            kafka_raft_metrics_current_state{node=\"4\",state=\"follower\"} 0\n\
            kafka_raft_metrics_current_state{node=\"4\",state=\"observer\"} 1\n\
            kafka_raft_metrics_number_of_voters 3\n";
        assert_eq!(
            view(text).unwrap(),
            View {
                leader: 2,
                epoch: 9,
                state: "observer".into(),
                voters: 3
            }
        );
        assert!(view("kafka_raft_metrics_current_leader 2\n").is_err());
    }

    #[test]
    fn the_workload_s_lines_read_back_and_describe_themselves() {
        let dir = std::env::temp_dir().join(format!("voters-checker-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lines = [
            r#"{"initial":{"1":"d1","2":"d2","3":"d3"},"ms":5}"#,
            r#"{"op":"add","id":4,"dir":"d4","seen":[1,2,3],"sent":10,"ms":20,"outcome":"ok","answer":"Added controller 4"}"#,
            r#"{"op":"remove","id":1,"dir":"d1","seen":[1,2,3,4],"sent":30,"ms":40,"outcome":"refused","error":"VOTER_NOT_FOUND","answer":""}"#,
            r#"{"op":"remove","id":2,"dir":"d2","seen":[1,2,3,4],"sent":50,"ms":60,"outcome":"unknown","error":"TimeoutException","answer":""}"#,
            r#"{"done":true}"#,
            r#"{"op":"add","id":"#,
        ];
        std::fs::write(dir.join("voters.jsonl"), lines.join("\n")).unwrap();
        let h = read(&dir).unwrap().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(h.done);
        assert_eq!(h.initial.len(), 3);
        assert_eq!(
            h.ops.iter().map(|o| o.outcome.clone()).collect::<Vec<_>>(),
            [
                Outcome::Ok,
                Outcome::Refused(VOTER_NOT_FOUND.into()),
                Outcome::Unknown("TimeoutException".into())
            ]
        );
        assert!(describe(lines[1]).unwrap().contains("add-controller 4"));
        assert!(describe(lines[2])
            .unwrap()
            .contains("refused (VOTER_NOT_FOUND)"));
        assert_eq!(describe(lines[0]), None);
    }
}
