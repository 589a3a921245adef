//! The `--cycles` workload's checks: several transactional writers whose transactions read
//! some partitions (`read_committed`) before they append to others, judged as Elle judges a
//! list-append history (the partitions are the keys, a partition's committed records in log
//! order the list) and against what Kafka's transactions guarantee.
//!
//! - Everything `txn_checker.rs` finds, over these transactions and the reads inside them:
//!   `aborted read` (G1a: a value of an aborted transaction read), `vanished` (a read value
//!   not in the final log at its offset), `txn lost`, `txn partial`, `txn two states`,
//!   `moved`, `duplicated`, `phantom`, `txn hanging`.
//! - `non-prefix read`: what a writer's reader read of a partition (from its position to
//!   where the read left it) is not exactly the final log's committed records there, in
//!   order: a committed record skipped, or another order (Elle's incompatible order).
//! - Elle's dependency graph over the committed transactions (those whose records the final
//!   read has): `ww` from a record's transaction to the next one's in a partition's log,
//!   `wr` from the transaction of the last record a read saw of a partition (every read sees
//!   a prefix from offset 0: the reader keeps its position) to the reader's transaction, `rw`
//!   from the reader's transaction to the transaction of the first record it did not see.
//!   Its cycles (Tarjan's strongly connected components), by Elle's names: G0 (a cycle of
//!   `ww` edges only), G1c (`ww` and `wr`, at least one `wr`), G-single (exactly one `rw`),
//!   G2 (the others: two `rw` or more). Kafka allows all four (its transactions are atomic
//!   and `read_committed`, not serializable: offsets are given at append time, so two
//!   concurrent transactions can append to two partitions in opposite orders), so they are
//!   counted, not anomalies. `docs/chaos.md` says why and what Kafka 4.4.0 shows.
//! - `forbidden cycle`: a cycle no run of Kafka's protocol can produce. Every edge says
//!   something about time that Kafka's design makes true: a partition's log order is its
//!   leader's append order; a transaction's appends are acknowledged before it commits, its
//!   reads done before it appends; the last stable offset passes a record only after its
//!   transaction's marker is written there, and never goes back; a `read_committed` read
//!   returns only records below it; a writer's transactions follow each other; and the
//!   clients' clock stamps each transaction's begin, commit request and outcome and each
//!   append's send and acknowledgement. These become edges between points in time
//!   ([`Point`]): a cycle among the points is an order of events that cannot be, whichever
//!   way the transactions interleaved (with the clock: also a read of a transaction that had
//!   not asked to commit yet, or a log order against real time). Such a cycle needs a
//!   `wr` edge (a `ww` edge only orders two appends), so it is a G1c, or a G0 closed by a
//!   writer's own order; the `rw` edges are not used (a read can miss a record committed
//!   before it began: the last stable offset may be held back by another transaction).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::Path;

use anyhow::Result;

use super::checker::{Anomaly, Read};
use super::txn_checker::{self, Outcome, Txn, TxnHistory};
use super::workload::{self, CYCLES_WRITERS};

/// What a writer's reader read of one partition in one transaction.
#[derive(Debug, Clone)]
pub(super) struct PartRead {
    pub(super) partition: i32,
    /// The reader's position before the read: it had read every committed record below.
    pub(super) from: i64,
    /// (offset, value) of each record the read returned, in order.
    pub(super) values: Vec<(i64, String)>,
    /// The reader's position after the read.
    pub(super) to: i64,
}

/// One append of a transaction.
#[derive(Debug, Clone)]
pub(super) struct Append {
    pub(super) partition: i32,
    pub(super) value: String,
    /// The offset the leader acknowledged, if it did.
    pub(super) offset: Option<i64>,
    /// When it was sent and when its acknowledgement came (Unix ms; 0 unknown).
    pub(super) sent_ms: u64,
    pub(super) ms: u64,
}

/// One transaction of a writer.
#[derive(Debug, Clone)]
pub(super) struct CycleTxn {
    /// `<writer>-<instance>.<transaction>`.
    pub(super) id: String,
    pub(super) writer: String,
    /// When its reads began (Unix ms).
    pub(super) begin_ms: u64,
    pub(super) reads: Vec<PartRead>,
    pub(super) writes: Vec<Append>,
    pub(super) outcome: Outcome,
    pub(super) error: Option<String>,
    /// When the writer asked to commit (or abort); 0 unknown.
    pub(super) commit_sent_ms: u64,
    /// When the writer learnt the outcome.
    pub(super) ms: u64,
}

/// What the writers did and the final `read_committed` read of their topic.
#[derive(Debug, Default)]
pub(super) struct CyclesHistory {
    /// Every writer's transactions, each writer's in its order.
    pub(super) txns: Vec<CycleTxn>,
    pub(super) final_log: Vec<Read>,
    /// Partitions the final read could not finish.
    pub(super) stuck: BTreeMap<i32, i64>,
    /// Writers that did not report their end.
    pub(super) unfinished: Vec<String>,
}

/// Counts of the history, for the summary.
#[derive(Debug, Default)]
pub(super) struct CyclesCounts {
    pub(super) committed: usize,
    pub(super) aborted: usize,
    pub(super) unknown: usize,
    /// Partition reads inside transactions, and of them inside committed ones.
    pub(super) reads: usize,
    pub(super) committed_reads: usize,
    /// Edges of the dependency graph by kind.
    pub(super) edges: BTreeMap<&'static str, usize>,
    /// `rw` edges to the same writer's earlier transaction: a read that missed a record its
    /// own writer had committed before (Kafka answers EndTxn before it writes the markers).
    pub(super) own_unseen: usize,
    /// Cycles by Elle's class (Kafka allows them): G0 and G1c the strongly connected
    /// components of the `ww` and the `ww`+`wr` graphs (G1c: with a `wr` edge inside);
    /// G-single the `rw` edges a path of `ww`/`wr` edges closes; G2 the components of the
    /// whole graph with none of those inside.
    pub(super) cycles: BTreeMap<&'static str, usize>,
    /// One cycle of each class, written out.
    pub(super) examples: BTreeMap<&'static str, String>,
    /// Cycles Kafka's design forbids (anomalies).
    pub(super) forbidden: usize,
}

/// The writers' files in `dir` (`cycles-<writer>.jsonl`, `cyclesfinal.jsonl`), if the run
/// had them.
pub(super) fn read(dir: &Path) -> Result<Option<CyclesHistory>> {
    let mut h = CyclesHistory::default();
    let mut any = false;
    for writer in CYCLES_WRITERS {
        let path = dir.join(format!("cycles-{writer}.jsonl"));
        if !path.exists() {
            continue;
        }
        any = true;
        let mut done = false;
        for line in workload::lines(&path)? {
            if line["done"].as_bool() == Some(true) {
                done = true;
            }
            let Some(id) = line["txn"].as_str() else {
                continue;
            };
            let int = |v: &serde_json::Value| v.as_i64().unwrap_or(-1);
            let reads = line["reads"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|r| r.get("failed").is_none())
                .map(|r| PartRead {
                    partition: int(&r["p"]) as i32,
                    from: int(&r["from"]),
                    values: r["values"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|v| Some((v[0].as_i64()?, v[1].as_str()?.to_string())))
                        .collect(),
                    to: int(&r["to"]),
                })
                .collect();
            let writes = line["writes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|w| {
                    Some(Append {
                        partition: w[0].as_i64()? as i32,
                        value: w[1].as_str()?.to_string(),
                        offset: w[2].as_i64().filter(|&o| o >= 0),
                        sent_ms: w[3].as_u64().unwrap_or(0),
                        ms: w[4].as_u64().unwrap_or(0),
                    })
                })
                .collect();
            h.txns.push(CycleTxn {
                id: id.to_string(),
                writer: writer.to_string(),
                begin_ms: line["begin"].as_u64().unwrap_or(0),
                reads,
                writes,
                outcome: match line["outcome"].as_str() {
                    Some("committed") => Outcome::Committed,
                    Some("aborted") => Outcome::Aborted,
                    _ => Outcome::Unknown,
                },
                error: line["err"].as_str().map(str::to_string),
                commit_sent_ms: line["commit_sent"].as_u64().unwrap_or(0),
                ms: line["ms"].as_u64().unwrap_or(0),
            });
        }
        if !done {
            h.unfinished.push(writer.to_string());
        }
    }
    if !any {
        return Ok(None);
    }
    let path = dir.join("cyclesfinal.jsonl");
    h.stuck = workload::lines(&path)?
        .iter()
        .find_map(|l| workload::by_partition(&l["stuck"]))
        .unwrap_or_default();
    h.final_log = workload::reads(&path)?;
    Ok(Some(h))
}

/// A dependency between two committed transactions (Elle's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dep {
    Ww,
    Wr,
    Rw,
}

impl Dep {
    fn name(self) -> &'static str {
        match self {
            Dep::Ww => "ww",
            Dep::Wr => "wr",
            Dep::Rw => "rw",
        }
    }
}

/// An edge of the dependency graph: to a transaction, of a kind, on a partition.
type DepEdge = (usize, (Dep, i32));

/// Every anomaly in `h`, and its counts.
pub(super) fn check(h: &CyclesHistory) -> (Vec<Anomaly>, CyclesCounts) {
    let mut counts = CyclesCounts::default();
    // The transactional checks, over the same transactions and the reads inside them.
    let as_txn = TxnHistory {
        txns: h
            .txns
            .iter()
            .map(|t| Txn {
                id: t.id.clone(),
                records: t
                    .writes
                    .iter()
                    .map(|w| (w.value.clone(), w.partition))
                    .collect(),
                outcome: t.outcome,
                error: t.error.clone(),
                ms: t.ms,
            })
            .collect(),
        appended: h
            .txns
            .iter()
            .flat_map(|t| &t.writes)
            .filter_map(|w| Some((w.value.clone(), (w.partition, w.offset?, w.ms))))
            .collect(),
        live: h
            .txns
            .iter()
            .flat_map(|t| {
                t.reads.iter().flat_map(move |r| {
                    r.values.iter().map(move |(o, v)| Read {
                        partition: r.partition,
                        offset: *o,
                        value: v.clone(),
                        ms: Some(t.begin_ms),
                    })
                })
            })
            .collect(),
        reader: "a cycles writer's reader",
        final_log: h.final_log.clone(),
        stuck: h.stuck.clone(),
        done: true,
    };
    let (mut anomalies, tc) = txn_checker::check(&as_txn);
    counts.committed = tc.committed;
    counts.aborted = tc.aborted;
    counts.unknown = tc.unknown;

    // The final log: each partition's committed records in offset order.
    let mut logs: BTreeMap<i32, Vec<(i64, &str)>> = BTreeMap::new();
    for r in &h.final_log {
        logs.entry(r.partition)
            .or_default()
            .push((r.offset, r.value.as_str()));
    }
    for log in logs.values_mut() {
        log.sort_unstable();
        log.dedup_by_key(|(o, _)| *o);
    }
    let in_log: HashSet<&str> = h.final_log.iter().map(|r| r.value.as_str()).collect();

    // Every read returns the final log's records between its positions, nothing else.
    for t in &h.txns {
        for r in &t.reads {
            counts.reads += 1;
            let log = logs.get(&r.partition).map(Vec::as_slice).unwrap_or(&[]);
            let expected: Vec<(i64, &str)> = log
                .iter()
                .filter(|(o, _)| *o >= r.from && *o < r.to)
                .copied()
                .collect();
            // A read value not in the final log is txn_checker's (aborted read, vanished).
            let observed: Vec<(i64, &str)> = r
                .values
                .iter()
                .filter(|(_, v)| in_log.contains(v.as_str()))
                .map(|(o, v)| (*o, v.as_str()))
                .collect();
            if expected != observed {
                let at = expected
                    .iter()
                    .zip(&observed)
                    .position(|(e, o)| e != o)
                    .unwrap_or(expected.len().min(observed.len()));
                let around = |l: &[(i64, &str)]| format!("{:?}", &l[at..l.len().min(at + 4)]);
                anomalies.push(Anomaly {
                    kind: "non-prefix read",
                    detail: format!(
                        "transaction {} read partition {} from {} to {}: from its {}th \
                         committed record on it read {} where the final log has {}",
                        t.id,
                        r.partition,
                        r.from,
                        r.to,
                        at + 1,
                        around(&observed),
                        around(&expected)
                    ),
                    at_ms: Some(t.begin_ms),
                });
            }
        }
    }

    // The committed transactions (whose records the final read has) and each record's.
    let mut node_of_txn: HashMap<usize, usize> = HashMap::new();
    let mut txn_of_node: Vec<usize> = Vec::new();
    let mut owner: HashMap<&str, usize> = HashMap::new();
    for (i, t) in h.txns.iter().enumerate() {
        for w in &t.writes {
            if in_log.contains(w.value.as_str()) {
                let node = *node_of_txn.entry(i).or_insert_with(|| {
                    txn_of_node.push(i);
                    txn_of_node.len() - 1
                });
                owner.insert(w.value.as_str(), node);
            }
        }
    }
    let n = txn_of_node.len();
    // Each partition's list: the owners of its committed records, in log order (a value of
    // no transaction is txn_checker's phantom).
    let mut place: HashMap<&str, (i32, usize)> = HashMap::new();
    let lists: BTreeMap<i32, Vec<(i64, usize)>> = logs
        .iter()
        .map(|(&p, log)| {
            let list: Vec<(i64, usize)> = log
                .iter()
                .filter_map(|(o, v)| Some((*o, *owner.get(v)?)))
                .collect();
            for (i, (_, v)) in log
                .iter()
                .filter(|(_, v)| owner.contains_key(v))
                .enumerate()
            {
                place.insert(v, (p, i));
            }
            (p, list)
        })
        .collect();
    // How many records of the list a read saw: all below the position it left the reader at.
    let prefix = |p: i32, to: i64| {
        lists
            .get(&p)
            .map_or(0, |l| l.partition_point(|(o, _)| *o < to))
    };

    let mut deps: Vec<Vec<DepEdge>> = vec![Vec::new(); n];
    for (&p, list) in &lists {
        for pair in list.windows(2) {
            if pair[0].1 != pair[1].1 {
                deps[pair[0].1].push((pair[1].1, (Dep::Ww, p)));
            }
        }
    }
    for (node, &i) in txn_of_node.iter().enumerate() {
        for r in &h.txns[i].reads {
            counts.committed_reads += 1;
            let list = lists.get(&r.partition).map(Vec::as_slice).unwrap_or(&[]);
            let seen = prefix(r.partition, r.to);
            if seen > 0 && list[seen - 1].1 != node {
                deps[list[seen - 1].1].push((node, (Dep::Wr, r.partition)));
            }
            if seen < list.len() && list[seen].1 != node {
                let missed = list[seen].1;
                deps[node].push((missed, (Dep::Rw, r.partition)));
                let earlier = &h.txns[txn_of_node[missed]];
                if earlier.writer == h.txns[i].writer && txn_of_node[missed] < i {
                    counts.own_unseen += 1;
                }
            }
        }
    }
    for edges in &deps {
        for (_, (dep, _)) in edges {
            *counts.edges.entry(dep.name()).or_default() += 1;
        }
    }
    let name = |node: usize| h.txns[txn_of_node[node]].id.as_str();
    let show = |start: usize, path: &[DepEdge]| {
        let mut s = name(start).to_string();
        for (to, (dep, p)) in path {
            s.push_str(&format!(" -{}({p})-> {}", dep.name(), name(*to)));
        }
        s
    };
    let only = |kinds: &'static [Dep]| -> Vec<Vec<DepEdge>> {
        deps.iter()
            .map(|es| {
                es.iter()
                    .filter(|(_, (d, _))| kinds.contains(d))
                    .copied()
                    .collect()
            })
            .collect()
    };
    let ww = only(&[Dep::Ww]);
    let wwwr = only(&[Dep::Ww, Dep::Wr]);
    let all_comp = components(&deps);
    let ww_comp = components(&ww);
    let wwwr_comp = components(&wwwr);
    let mut classes: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut examples: BTreeMap<&'static str, String> = BTreeMap::new();
    // The full graph's components with a cycle of a class below G2 inside.
    let mut explained = vec![false; n];
    for (c, members) in grouped(&ww_comp) {
        if members.len() > 1 {
            *classes.entry("G0").or_default() += 1;
            explained[all_comp[members[0]]] = true;
            examples.entry("G0").or_insert_with(|| {
                let x = members[0];
                let path = shortest(&ww, x, x, |v| ww_comp[v] == c).unwrap_or_default();
                show(x, &path)
            });
        }
    }
    for (c, members) in grouped(&wwwr_comp) {
        let wr = members.iter().find_map(|&u| {
            wwwr[u]
                .iter()
                .find(|(v, (d, _))| *d == Dep::Wr && wwwr_comp[*v] == c)
                .map(|e| (u, *e))
        });
        if let Some((u, e)) = wr {
            *classes.entry("G1c").or_default() += 1;
            explained[all_comp[u]] = true;
            examples.entry("G1c").or_insert_with(|| {
                let back = shortest(&wwwr, e.0, u, |v| wwwr_comp[v] == c).unwrap_or_default();
                show(u, &[vec![e], back].concat())
            });
        }
    }
    for u in 0..n {
        for &e in &deps[u] {
            let (v, (dep, _)) = e;
            if dep != Dep::Rw || all_comp[v] != all_comp[u] {
                continue;
            }
            let c = all_comp[u];
            if let Some(back) = shortest(&wwwr, v, u, |x| all_comp[x] == c) {
                *classes.entry("G-single").or_default() += 1;
                explained[c] = true;
                examples
                    .entry("G-single")
                    .or_insert_with(|| show(u, &[vec![e], back].concat()));
            }
        }
    }
    for (c, members) in grouped(&all_comp) {
        if members.len() > 1 && !explained[c] {
            *classes.entry("G2").or_default() += 1;
            examples.entry("G2").or_insert_with(|| {
                let x = members[0];
                let path = shortest(&deps, x, x, |v| all_comp[v] == c).unwrap_or_default();
                show(x, &path)
            });
        }
    }
    counts.cycles = classes;
    counts.examples = examples;

    // The points in time Kafka's design orders (see the module's doc), and their order.
    let mut points: Vec<Point> = Vec::new();
    let mut index: HashMap<Point, usize> = HashMap::new();
    let mut edges: Vec<Vec<(usize, ())>> = Vec::new();
    let mut at = |pt: Point| {
        *index.entry(pt).or_insert_with(|| {
            points.push(pt);
            edges.push(Vec::new());
            points.len() - 1
        })
    };
    let mut order: Vec<(usize, usize)> = Vec::new();
    for node in 0..n {
        order.push((at(Point::Begin(node)), at(Point::ReadsDone(node))));
    }
    for (&p, list) in &lists {
        for (i, &(_, node)) in list.iter().enumerate() {
            let append = at(Point::Append(p, i));
            let lso = at(Point::Lso(p, i));
            let marker = at(Point::Marker(node, p));
            let commit = at(Point::Commit(node));
            order.push((at(Point::ReadsDone(node)), append));
            order.push((append, commit));
            order.push((commit, marker));
            order.push((marker, lso));
            if i > 0 {
                order.push((at(Point::Append(p, i - 1)), append));
                order.push((at(Point::Lso(p, i - 1)), lso));
            }
        }
    }
    for (node, &i) in txn_of_node.iter().enumerate() {
        for r in &h.txns[i].reads {
            let seen = prefix(r.partition, r.to);
            if seen > 0 {
                order.push((
                    at(Point::Lso(r.partition, seen - 1)),
                    at(Point::ReadsDone(node)),
                ));
            }
        }
    }
    // A writer's committed transactions, one after the other (the file's order).
    let mut last_of: HashMap<&str, usize> = HashMap::new();
    for (node, &i) in txn_of_node.iter().enumerate() {
        if let Some(prev) = last_of.insert(h.txns[i].writer.as_str(), node) {
            order.push((at(Point::Commit(prev)), at(Point::Begin(node))));
        }
    }
    // What the writers' clock saw (one clock: the clients all run on this machine): a
    // transaction began reading after `begin`, finished before its first append was sent,
    // its commit was decided after it was asked for and, committed, before the writer
    // heard so; a record was appended after it was sent and before its acknowledgement
    // came. A millisecond stamp t stands for a moment in [t, t + 1).
    for (node, &i) in txn_of_node.iter().enumerate() {
        let t = &h.txns[i];
        let mut clock = |pt: Point, from_ms: u64, to_ms: u64| {
            if from_ms > 0 {
                order.push((at(Point::At(from_ms)), at(pt)));
            }
            if to_ms > 0 {
                order.push((at(pt), at(Point::At(to_ms + 1))));
            }
        };
        clock(Point::Begin(node), t.begin_ms, 0);
        let first_sent = t.writes.iter().map(|w| w.sent_ms).min().unwrap_or(0);
        clock(Point::ReadsDone(node), 0, first_sent);
        let heard = if t.outcome == Outcome::Committed {
            t.ms
        } else {
            0
        };
        clock(Point::Commit(node), t.commit_sent_ms, heard);
        for w in &t.writes {
            if let (Some(_), Some(&(p, idx))) = (w.offset, place.get(w.value.as_str())) {
                clock(Point::Append(p, idx), w.sent_ms, w.ms);
            }
        }
    }
    let mut stamps: Vec<(u64, usize)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, pt)| match pt {
            Point::At(ms) => Some((*ms, i)),
            _ => None,
        })
        .collect();
    stamps.sort_unstable();
    for pair in stamps.windows(2) {
        order.push((pair[0].1, pair[1].1));
    }
    for (a, b) in order {
        edges[a].push((b, ()));
    }
    let comp = components(&edges);
    for (c, members) in grouped(&comp) {
        if members.len() < 2 {
            continue;
        }
        counts.forbidden += 1;
        // From a point of a transaction: a cycle through the clock's stamps alone is longer.
        let x = members
            .iter()
            .copied()
            .find(|&m| points[m].txn().is_some())
            .unwrap_or(members[0]);
        let path = shortest(&edges, x, x, |v| comp[v] == c).unwrap_or_default();
        let mut txns: Vec<usize> = members.iter().filter_map(|&m| points[m].txn()).collect();
        txns.sort_unstable();
        txns.dedup();
        let describe = |pt: Point| match pt {
            Point::Begin(t) => format!("{} began", name(t)),
            Point::ReadsDone(t) => format!("{} finished reading", name(t)),
            Point::Commit(t) => format!("{} committed", name(t)),
            Point::Marker(t, p) => format!("{}'s marker on {p}", name(t)),
            Point::Append(p, i) => format!(
                "{p}@{} appended by {}",
                lists[&p][i].0,
                name(lists[&p][i].1)
            ),
            Point::Lso(p, i) => format!("last stable offset of {p} past {}", lists[&p][i].0),
            Point::At(ms) => format!("{} (the clients' clock)", super::utc(ms)),
        };
        let mut cycle = describe(points[x]);
        for (to, ()) in &path {
            cycle.push_str(" < ");
            cycle.push_str(&describe(points[*to]));
        }
        let at_ms = txns.first().map(|&t| h.txns[txn_of_node[t]].ms);
        anomalies.push(Anomaly {
            kind: "forbidden cycle",
            detail: format!(
                "transactions {:?} form a cycle no order of events allows under Kafka's \
                 transactions: {cycle}",
                txns.iter().map(|&t| name(t)).collect::<Vec<_>>()
            ),
            at_ms,
        });
    }
    for w in &h.unfinished {
        anomalies.push(Anomaly {
            kind: "writer unfinished",
            detail: format!("cycles writer {w} did not report its end"),
            at_ms: None,
        });
    }
    (anomalies, counts)
}

/// A moment Kafka's design orders: of a committed transaction (by its node), or of a
/// partition's list (by the record's index in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Point {
    Begin(usize),
    ReadsDone(usize),
    /// The commit decided (all its appends acknowledged before).
    Commit(usize),
    /// Its commit marker written on a partition.
    Marker(usize, i32),
    /// The leader appended the list's record.
    Append(i32, usize),
    /// The last stable offset first passed the list's record.
    Lso(i32, usize),
    /// The start of a millisecond of the clients' clock (Unix ms).
    At(u64),
}

impl Point {
    fn txn(self) -> Option<usize> {
        match self {
            Point::Begin(t) | Point::ReadsDone(t) | Point::Commit(t) | Point::Marker(t, _) => {
                Some(t)
            }
            Point::Append(..) | Point::Lso(..) | Point::At(_) => None,
        }
    }
}

/// The strongly connected component of every node of the graph `adj` (Tarjan's algorithm,
/// without recursion: a history has thousands of transactions).
fn components<L>(adj: &[Vec<(usize, L)>]) -> Vec<usize> {
    const NONE: usize = usize::MAX;
    let n = adj.len();
    let mut index = vec![NONE; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut comp = vec![NONE; n];
    let (mut next, mut next_comp) = (0, 0);
    let mut work: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        work.push((root, 0));
        while let Some((v, i)) = work.pop() {
            if let Some((w, _)) = adj[v].get(i) {
                let w = *w;
                work.push((v, i + 1));
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp[w] = next_comp;
                    if w == v {
                        break;
                    }
                }
                next_comp += 1;
            }
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
        }
    }
    comp
}

/// The members of each component, by component.
fn grouped(comp: &[usize]) -> BTreeMap<usize, Vec<usize>> {
    let mut by: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (v, &c) in comp.iter().enumerate() {
        by.entry(c).or_default().push(v);
    }
    by
}

/// A shortest path of at least one edge from `from` to `to` (a cycle when they are one)
/// through nodes `keep` accepts: its edges.
fn shortest<L: Copy>(
    adj: &[Vec<(usize, L)>],
    from: usize,
    to: usize,
    keep: impl Fn(usize) -> bool,
) -> Option<Vec<(usize, L)>> {
    let mut came: HashMap<usize, (usize, L)> = HashMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(v) = queue.pop_front() {
        for &(w, label) in &adj[v] {
            if !keep(w) || came.contains_key(&w) {
                continue;
            }
            came.insert(w, (v, label));
            if w == to {
                let mut path = vec![(w, label)];
                let mut at = v;
                while at != from {
                    let (prev, l) = came[&at];
                    path.push((at, l));
                    at = prev;
                }
                path.reverse();
                return Some(path);
            }
            queue.push_back(w);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A history builder: transactions of writers, appended in the order given to the
    /// partitions' logs (the final read is the committed ones' records in that order).
    #[derive(Default)]
    struct Builder {
        h: CyclesHistory,
        next: BTreeMap<i32, i64>,
    }

    impl Builder {
        /// A transaction of `writer` that read `reads` (partition, position it left the
        /// reader at) and then appended to `writes`, with `outcome`. Its records go to the
        /// logs now, in the order of the calls.
        fn txn(
            &mut self,
            id: &str,
            reads: &[(i32, i64)],
            writes: &[i32],
            outcome: Outcome,
        ) -> &mut Self {
            let writer = id.split('-').next().unwrap_or(id).to_string();
            let mut appends = Vec::new();
            for (k, &p) in writes.iter().enumerate() {
                let offset = self.next.entry(p).or_default();
                let value = format!("{id}.{k}");
                if outcome != Outcome::Aborted {
                    self.h.final_log.push(Read {
                        partition: p,
                        offset: *offset,
                        value: value.clone(),
                        ms: None,
                    });
                }
                appends.push(Append {
                    partition: p,
                    value,
                    offset: Some(*offset),
                    sent_ms: 0,
                    ms: 0,
                });
                // A marker after each record.
                *offset += 2;
            }
            let reads = reads
                .iter()
                .map(|&(p, to)| PartRead {
                    partition: p,
                    from: 0,
                    values: self
                        .h
                        .final_log
                        .iter()
                        .filter(|r| r.partition == p && r.offset < to)
                        .map(|r| (r.offset, r.value.clone()))
                        .collect(),
                    to,
                })
                .collect();
            self.h.txns.push(CycleTxn {
                id: id.into(),
                writer,
                begin_ms: 0,
                reads,
                writes: appends,
                outcome,
                error: None,
                commit_sent_ms: 0,
                ms: 1,
            });
            self
        }

        /// The clients' times of the last transaction: began, each append's (sent,
        /// acknowledged), commit asked, outcome heard.
        fn at(&mut self, begin: u64, appends: &[(u64, u64)], commit: u64, heard: u64) -> &mut Self {
            let t = self.h.txns.last_mut().expect("a transaction");
            t.begin_ms = begin;
            for (w, &(sent, acked)) in t.writes.iter_mut().zip(appends) {
                w.sent_ms = sent;
                w.ms = acked;
            }
            t.commit_sent_ms = commit;
            t.ms = heard;
            self
        }

        fn check(&self) -> (Vec<&'static str>, CyclesCounts) {
            let (anomalies, counts) = check(&self.h);
            let mut kinds: Vec<_> = anomalies.iter().map(|a| a.kind).collect();
            kinds.sort_unstable();
            (kinds, counts)
        }
    }

    const C: Outcome = Outcome::Committed;

    #[test]
    fn serial_transactions_have_no_cycle() {
        let mut b = Builder::default();
        b.txn("a-0.0", &[], &[0, 1], C)
            .txn("b-0.0", &[(0, 2)], &[1, 2], C)
            .txn("a-0.1", &[(1, 4), (2, 2)], &[0, 2], C);
        let (kinds, counts) = b.check();
        assert_eq!(kinds, Vec::<&str>::new());
        assert!(counts.cycles.is_empty(), "{:?}", counts.cycles);
        assert_eq!(counts.committed, 3);
        assert_eq!(counts.edges["wr"], 3);
    }

    #[test]
    fn opposite_append_orders_are_a_g0_kafka_allows() {
        // a appends to 0 first, b to 1 first; then each to the other: ww both ways.
        let mut b = Builder::default();
        b.txn("a-0.0", &[], &[0], C).txn("b-0.0", &[], &[1], C);
        // Records of one transaction appended apart: build them by hand.
        let mut h = b.h;
        h.final_log.push(read(1, 2, "a-0.0.1"));
        h.final_log.push(read(0, 2, "b-0.0.1"));
        h.txns[0].writes.push(append(1, 2, "a-0.0.1"));
        h.txns[1].writes.push(append(0, 2, "b-0.0.1"));
        let (anomalies, counts) = check(&h);
        assert!(anomalies.is_empty(), "{anomalies:?}");
        assert_eq!(counts.cycles, [("G0", 1)].into());
        assert!(counts.examples["G0"].contains("-ww(0)->"));
        assert_eq!(counts.forbidden, 0);
    }

    fn read(partition: i32, offset: i64, value: &str) -> Read {
        Read {
            partition,
            offset,
            value: value.into(),
            ms: None,
        }
    }

    fn append(partition: i32, offset: i64, value: &str) -> Append {
        Append {
            partition,
            value: value.into(),
            offset: Some(offset),
            sent_ms: 0,
            ms: 0,
        }
    }

    #[test]
    fn a_read_of_a_transaction_whose_append_comes_later_is_a_forbidden_g1c() {
        // a appends to 0 and commits; b reads a's record of 0, then appends to 1; but a's
        // record of 1 is after b's in the log: a's append to 1 came after its commit that
        // b read, which Kafka's protocol cannot do (a transaction's appends are all
        // acknowledged before its commit).
        let mut b = Builder::default();
        b.txn("a-0.0", &[], &[0], C)
            .txn("b-0.0", &[(0, 2)], &[1], C);
        let mut h = b.h;
        h.final_log.push(read(1, 2, "a-0.0.1"));
        h.txns[0].writes.push(append(1, 2, "a-0.0.1"));
        let (anomalies, counts) = check(&h);
        let kinds: Vec<_> = anomalies.iter().map(|a| a.kind).collect();
        assert_eq!(kinds, ["forbidden cycle"]);
        assert!(
            anomalies[0].detail.contains("a-0.0") && anomalies[0].detail.contains("b-0.0"),
            "{}",
            anomalies[0].detail
        );
        assert_eq!(counts.cycles, [("G1c", 1)].into());
        assert_eq!(counts.forbidden, 1);
    }

    #[test]
    fn read_skew_is_a_g_single_kafka_allows() {
        // c reads 0 before b's record (rw c -> b), then 1 after it (wr b -> c): the markers
        // of b reached 1 before 0. And c appends after b on 2 (ww b -> c) for good measure.
        let mut b = Builder::default();
        b.txn("b-0.0", &[], &[0, 1, 2], C);
        b.txn("c-0.0", &[(0, 0), (1, 2)], &[2], C);
        let (kinds, counts) = b.check();
        assert_eq!(kinds, Vec::<&str>::new());
        assert_eq!(counts.cycles, [("G-single", 1)].into());
        assert!(counts.examples["G-single"].starts_with("c-0.0 -rw(0)-> b-0.0"));
        assert_eq!(counts.forbidden, 0);
    }

    #[test]
    fn a_read_missing_the_writer_s_own_earlier_commit_is_counted_not_failed() {
        let mut b = Builder::default();
        b.txn("a-0.0", &[], &[0], C)
            .txn("a-0.1", &[(0, 0)], &[1], C);
        let (kinds, counts) = b.check();
        assert_eq!(kinds, Vec::<&str>::new());
        assert_eq!((counts.own_unseen, counts.edges["rw"]), (1, 1));
        assert!(counts.cycles.is_empty());
    }

    #[test]
    fn two_anti_dependencies_are_a_g2() {
        // a and b each read the partition the other appends to before the other did: write
        // skew.
        let mut b = Builder::default();
        b.txn("a-0.0", &[(1, 0)], &[0], C)
            .txn("b-0.0", &[(0, 0)], &[1], C);
        let (kinds, counts) = b.check();
        assert_eq!(kinds, Vec::<&str>::new());
        assert_eq!(counts.cycles, [("G2", 1)].into());
    }

    #[test]
    fn a_writer_whose_next_transaction_appends_first_is_forbidden() {
        // a's second transaction began after its first committed, yet its record of 0 is
        // before the first's: a G0 closed by the writer's own order.
        let mut b = Builder::default();
        b.txn("a-0.1", &[], &[0], C).txn("a-0.0", &[], &[0], C);
        let mut h = b.h;
        h.txns.swap(0, 1);
        let (anomalies, counts) = check(&h);
        let kinds: Vec<_> = anomalies.iter().map(|a| a.kind).collect();
        assert_eq!(kinds, ["forbidden cycle"]);
        assert!(counts.cycles.is_empty());
    }

    #[test]
    fn a_read_skipping_a_committed_record_is_non_prefix_and_of_an_aborted_one_g1a() {
        let mut b = Builder::default();
        b.txn("a-0.0", &[], &[0], C)
            .txn("x-0.0", &[], &[0], Outcome::Aborted)
            .txn("b-0.0", &[], &[0], C)
            .txn("c-0.0", &[(0, 6)], &[1], C);
        let mut skip = b;
        // c's read missed a's record.
        skip.h.txns[3].reads[0].values.remove(0);
        let (kinds, _) = skip.check();
        assert_eq!(kinds, ["non-prefix read"]);
        // c's read returned the aborted transaction's record.
        skip.h.txns[3].reads[0].values = vec![
            (0, "a-0.0.0".into()),
            (2, "x-0.0.0".into()),
            (4, "b-0.0.0".into()),
        ];
        let (kinds, _) = skip.check();
        assert_eq!(kinds, ["aborted read", "vanished"]);
        // Two records read in the other order.
        skip.h.txns[3].reads[0].values = vec![(4, "b-0.0.0".into()), (0, "a-0.0.0".into())];
        let (kinds, _) = skip.check();
        assert_eq!(kinds, ["non-prefix read"]);
    }

    #[test]
    fn a_read_before_the_commit_was_asked_for_or_a_log_against_the_clock_is_forbidden() {
        // b read a's record of 0, then appended to 1, all after a asked to commit: fine.
        let history = |b_sent: u64| {
            let mut b = Builder::default();
            b.txn("a-0.0", &[], &[0], C).at(10, &[(11, 12)], 13, 14);
            b.txn("b-0.0", &[(0, 2)], &[1], C)
                .at(12, &[(b_sent, b_sent + 1)], 40, 41);
            b
        };
        let (kinds, counts) = history(20).check();
        assert_eq!(kinds, Vec::<&str>::new());
        assert_eq!(counts.forbidden, 0);
        // b's append sent before a asked to commit, its read done before it: b read a record
        // of a transaction not committed yet (which then committed): no cycle of
        // transactions, but one of events.
        let (anomalies, _) = check(&history(12).h);
        assert_eq!(anomalies.len(), 1, "{anomalies:?}");
        assert_eq!(anomalies[0].kind, "forbidden cycle");
        assert!(anomalies[0].detail.contains("the clients' clock"));
        // A record first in the log although sent after the next one was acknowledged.
        let mut b = Builder::default();
        b.txn("a-0.0", &[], &[0], C).at(30, &[(31, 32)], 33, 34);
        b.txn("b-0.0", &[], &[0], C).at(10, &[(11, 12)], 13, 14);
        let (kinds, _) = b.check();
        assert_eq!(kinds, ["forbidden cycle"]);
        // Concurrent: a sent first, b acknowledged last.
        let mut b = Builder::default();
        b.txn("a-0.0", &[], &[0], C).at(10, &[(11, 15)], 16, 17);
        b.txn("b-0.0", &[], &[0], C).at(10, &[(12, 14)], 16, 17);
        let (kinds, _) = b.check();
        assert_eq!(kinds, Vec::<&str>::new());
    }

    #[test]
    fn the_writers_lines_read_back() {
        let dir = std::env::temp_dir().join(format!("cycles-checker-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c1 = [
            r#"{"txn":"c1-0.0","writer":"c1","begin":10,"reads":[],"writes":[[1,"c1-0.0.0",0,11,12],[0,"c1-0.0.1",0,13,14]],"intent":"commit","outcome":"committed","err":null,"commit_sent":15,"ms":16}"#,
            r#"{"done":true,"txns":1,"instance":0}"#,
        ];
        let c2 = [
            r#"{"txn":"c2-0.0","writer":"c2","begin":20,"reads":[{"p":1,"from":0,"values":[[0,"c1-0.0.0"]],"end":1,"to":2,"complete":true},{"p":3,"failed":"_TIMED_OUT"}],"writes":[[1,"c2-0.0.0",2,21,22],[2,"c2-0.0.1",-1,23,24]],"intent":"commit","outcome":"unknown","err":"_FENCED","commit_sent":25,"ms":26}"#,
            r#"{"txn":"c2-1.0","wri"#,
        ];
        let fin = [
            r#"{"end":{"0":2,"1":4,"2":2,"3":0}}"#,
            r#"{"p":0,"o":0,"v":"c1-0.0.1"}"#,
            r#"{"p":1,"o":0,"v":"c1-0.0.0"}"#,
            r#"{"p":1,"o":2,"v":"c2-0.0.0"}"#,
            r#"{"p":2,"o":0,"v":"c2-0.0.1"}"#,
            r#"{"done":true}"#,
        ];
        for (file, lines) in [
            ("cycles-c1.jsonl", &c1[..]),
            ("cycles-c2.jsonl", &c2[..]),
            ("cyclesfinal.jsonl", &fin[..]),
        ] {
            std::fs::write(dir.join(file), lines.join("\n")).unwrap();
        }
        let h = super::read(&dir).unwrap().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(h.txns.len(), 2);
        assert_eq!(h.unfinished, ["c2"]);
        let t = &h.txns[1];
        assert_eq!((t.writer.as_str(), t.begin_ms, t.ms), ("c2", 20, 26));
        assert_eq!(t.outcome, Outcome::Unknown);
        assert_eq!(t.reads.len(), 1, "the failed read is no read");
        assert_eq!(
            (t.reads[0].from, t.reads[0].to, &t.reads[0].values),
            (0, 2, &vec![(0, "c1-0.0.0".to_string())])
        );
        assert_eq!(t.writes[1].offset, None);
        assert_eq!(h.final_log.len(), 4);
        let (anomalies, counts) = check(&h);
        let kinds: Vec<_> = anomalies.iter().map(|a| a.kind).collect();
        assert_eq!(kinds, ["writer unfinished"]);
        assert_eq!((counts.committed, counts.unknown), (1, 1));
        assert_eq!(counts.edges, [("wr", 1), ("ww", 1)].into());
    }

    #[test]
    fn tarjan_finds_each_component_and_bfs_a_shortest_cycle() {
        // 0 -> 1 -> 2 -> 0, 2 -> 3 -> 4 -> 3, 5 alone.
        let adj: Vec<Vec<(usize, ())>> = vec![
            vec![(1, ())],
            vec![(2, ())],
            vec![(0, ()), (3, ())],
            vec![(4, ())],
            vec![(3, ())],
            vec![],
        ];
        let comp = components(&adj);
        assert_eq!(comp[0], comp[1]);
        assert_eq!(comp[1], comp[2]);
        assert_eq!(comp[3], comp[4]);
        assert_ne!(comp[0], comp[3]);
        assert_ne!(comp[5], comp[0]);
        assert_ne!(comp[5], comp[3]);
        let cycle = shortest(&adj, 0, 0, |_| true).unwrap();
        assert_eq!(cycle.iter().map(|e| e.0).collect::<Vec<_>>(), [1, 2, 0]);
        assert_eq!(shortest(&adj, 5, 5, |_| true), None);
    }
}
