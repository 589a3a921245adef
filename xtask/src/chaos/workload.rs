//! The workload: stock-client processes (`workload.py`, confluent-kafka from the tests'
//! venv) that write what they saw to JSON-lines files under the run's directory, and the
//! reading of those files into the [`History`] the checker judges. Two acks=all producers,
//! one idempotent and one without idempotence and retries (so each of its acknowledged
//! records was written once), a consumer reading from the beginning while the faults run,
//! and after them one reading every partition to its end. With `--txn`, also a transactional
//! producer on a topic of its own with a `read_committed` consumer during the faults and a
//! `read_committed` read to the end after them ([`TxnHistory`], judged by `txn_checker.rs`),
//! and an exactly-once consume-transform-produce pipeline from the workload's topic to one
//! of its own ([`PipeHistory`], judged by `pipe_checker.rs`).
//! And two consumer groups on the topic, one per group protocol, whose members commit what
//! they consume ([`GroupHistory`], judged by `group_checker.rs`), described after the faults
//! until each is Stable with every partition assigned ([`Workload::groups_stable`]).
//! With `--reassign`, partition reassignments of the workload's topic (and the
//! transactional one) during the faults ([`ReassignWorkload`], judged by
//! `reassign_checker.rs`), stopped when the faults end so that the cluster heals with every
//! move completed. With `--cycles`, several transactional writers on a topic of their own
//! whose transactions read before they append ([`CYCLES_WRITERS`], judged by
//! `cycles_checker.rs`), and a `read_committed` read of that topic to the end afterwards.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::checker::{Ack, History, Read};
use super::group_checker::{Commit, GroupHistory, Member};
use super::pipe_checker::{PipeBatch, PipeHistory, PipeInstance};
use super::txn_checker::{Outcome, Txn, TxnHistory};
use super::TOPIC;

/// The producers: (name, idempotent).
pub(super) const PRODUCERS: [(&str, bool); 2] = [("idem", true), ("plain", false)];

/// The transactional producer's name: its transactional id is `chaos-txn`.
pub(super) const TXN_PRODUCER: &str = "txn";

/// The consumer groups on the workload's topic: (group id, `group.protocol`, its session
/// timeout in ms). The classic members ask for 10 s (`workload.py`); a consumer-protocol
/// group's is the broker's `group.consumer.session.timeout.ms`, Kafka's default 45 s.
pub(super) const GROUPS: [(&str, &str, u64); 2] = [
    ("chaos-classic", "classic", 10_000),
    ("chaos-consumer", "consumer", 45_000),
];

/// How long the workload's processes have to stop once told ([`Workload::stop`]).
const STOP_WITHIN_SECS: u64 = 240;

/// Members per group: two share the topic's three partitions, so a rebalance moves some.
pub(super) const GROUP_MEMBERS: usize = 2;

/// The transactional workload's topic and seed, when there is one.
pub(super) struct TxnWorkload {
    pub(super) topic: String,
    pub(super) seed: u64,
    /// The exactly-once pipeline's output topic (its input is the workload's topic).
    pub(super) pipe_topic: String,
}

/// The concurrent transactional writers of `--cycles` (`workload.py cycles`): their
/// transactional ids are `chaos-cycles-<name>`.
pub(super) const CYCLES_WRITERS: [&str; 4] = ["c1", "c2", "c3", "c4"];

/// The `--cycles` workload's topic, its partitions and the seed of its writers' draws.
pub(super) struct CyclesWorkload {
    pub(super) topic: String,
    pub(super) partitions: i32,
    pub(super) seed: u64,
}

/// The reassignment workload (`workload.py reassign`): the brokers replicas move between, and
/// the topics besides the workload's whose partitions it moves.
pub(super) struct ReassignWorkload {
    pub(super) broker_ids: Vec<u32>,
    pub(super) also: Vec<String>,
    pub(super) seed: u64,
}

/// The workloads a run adds to the producers, consumers and groups.
#[derive(Default)]
pub(super) struct Extras {
    /// The transactional workload (`--txn`).
    pub(super) txn: Option<TxnWorkload>,
    /// The metadata workload, `workload.py meta` (`--meta`).
    pub(super) meta: bool,
    /// The reassignment workload (`--reassign`).
    pub(super) reassign: Option<ReassignWorkload>,
    /// The concurrent transactional writers (`--cycles`).
    pub(super) cycles: Option<CyclesWorkload>,
}

/// How long the reassignment workload has to stop once told: a request in flight ends
/// within its 15 s timeout (kafka-python's `request_timeout_ms`), a Metadata or listing
/// after it within as long again.
const REASSIGN_STOP_WITHIN_SECS: u64 = 90;

pub(super) struct Workload {
    python: PathBuf,
    script: PathBuf,
    dir: PathBuf,
    bootstrap: String,
    topic: String,
    partitions: i32,
    txn: Option<TxnWorkload>,
    /// Whether the metadata workload (`workload.py meta`) runs too (`--meta`).
    meta: bool,
    reassign: Option<ReassignWorkload>,
    cycles: Option<CyclesWorkload>,
    stop_file: PathBuf,
    /// The reassignment workload's own stop file: it stops when the faults do, the rest of
    /// the workload when the cluster has healed.
    reassign_stop_file: PathBuf,
    /// How much of `reassign.jsonl` [`Workload::reassign_news`] has read.
    reassign_read: usize,
    children: Vec<(String, Child)>,
    /// Pipeline processes a newer one superseded (`--zombie`): expected to exit by themselves
    /// once fenced, so not in `children` (whose exit is a failure).
    zombies: Vec<(String, Child)>,
    /// Pipeline processes started so far (the first is `pipe`, then `pipe-1`, ...).
    pipes: u32,
}

/// The pipeline process named by its number: `pipe`, `pipe-1`, ... (its file
/// `<name>.jsonl`, its stderr `<name>.stderr`).
pub(super) fn pipe_name(k: u32) -> String {
    if k == 0 {
        "pipe".to_string()
    } else {
        format!("pipe-{k}")
    }
}

/// The file naming the pipeline process the harness started last (`workload.py pipeline
/// --current-file`): a process that is not it stops once fenced.
const PIPE_CURRENT: &str = "pipe.current";

/// A group member's process name: `<group>-<i>` first, `<group>-<i>.<k>` for the k-th
/// member started in its place after a kill (`--zombie`); its file is `member-<name>.jsonl`.
pub(super) fn member_name(group: &str, i: usize, k: u32) -> String {
    if k == 0 {
        format!("{group}-{i}")
    } else {
        format!("{group}-{i}.{k}")
    }
}

impl Workload {
    pub(super) fn new(
        root: &Path,
        dir: &Path,
        bootstrap: String,
        topic: &str,
        partitions: i32,
        extras: Extras,
    ) -> Result<Workload> {
        let Extras {
            txn,
            meta,
            reassign,
            cycles,
        } = extras;
        Ok(Workload {
            python: crate::bench::stock_python(root)?,
            script: root.join("xtask/src/chaos/workload.py"),
            dir: dir.to_path_buf(),
            bootstrap,
            topic: topic.to_string(),
            partitions,
            txn,
            meta,
            reassign,
            cycles,
            stop_file: dir.join("workload.stop"),
            reassign_stop_file: dir.join("reassign.stop"),
            reassign_read: 0,
            children: Vec::new(),
            zombies: Vec::new(),
            pipes: 0,
        })
    }

    fn command(&self, mode: &str, out: &str) -> Command {
        self.command_on(&self.topic, mode, out)
    }

    fn command_on(&self, topic: &str, mode: &str, out: &str) -> Command {
        self.command_until(topic, mode, out, &self.stop_file)
    }

    /// `workload.py mode` on `topic`, writing `out`, until `stop_file` exists.
    fn command_until(&self, topic: &str, mode: &str, out: &str, stop_file: &Path) -> Command {
        self.command_with(topic, self.partitions, mode, out, stop_file)
    }

    /// `workload.py mode` on `topic` of `partitions` partitions.
    fn command_with(
        &self,
        topic: &str,
        partitions: i32,
        mode: &str,
        out: &str,
        stop_file: &Path,
    ) -> Command {
        let mut cmd = Command::new(&self.python);
        cmd.arg(&self.script)
            .arg(mode)
            .args(["--bootstrap", &self.bootstrap, "--topic", topic])
            .args(["--partitions", &partitions.to_string()])
            .arg("--out")
            .arg(self.dir.join(out))
            .arg("--stop-file")
            .arg(stop_file);
        cmd
    }

    fn spawn(&mut self, name: &str, mut cmd: Command) -> Result<()> {
        let log = std::fs::File::create(self.dir.join(format!("{name}.stderr")))?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting workload {name}"))?;
        self.children.push((name.to_string(), child));
        Ok(())
    }

    /// Starts the producers and the live consumer.
    pub(super) fn start(&mut self) -> Result<()> {
        for (name, idempotent) in PRODUCERS {
            let mut cmd = self.command("produce", &format!("{name}.jsonl"));
            cmd.args(["--name", name]);
            if idempotent {
                cmd.arg("--idempotent");
            }
            self.spawn(name, cmd)?;
        }
        let cmd = self.command("consume", "live.jsonl");
        self.spawn("live", cmd)?;
        for (group, _, _) in GROUPS {
            for i in 0..GROUP_MEMBERS {
                self.start_member(group, i, 0)?;
            }
        }
        if let Some(txn) = &self.txn {
            let mut producer = self.command_on(&txn.topic, "txn", "txn.jsonl");
            producer.args(["--name", TXN_PRODUCER, "--seed", &txn.seed.to_string()]);
            let mut reader = self.command_on(&txn.topic, "consume", "txnlive.jsonl");
            reader.arg("--read-committed");
            self.spawn(TXN_PRODUCER, producer)?;
            self.spawn("txnlive", reader)?;
            self.start_pipeline()?;
        }
        if self.meta {
            let cmd = self.command("meta", "meta.jsonl");
            self.spawn("meta", cmd)?;
        }
        if let Some(c) = &self.cycles {
            let mut cmds = Vec::new();
            for name in CYCLES_WRITERS {
                let mut cmd = self.command_with(
                    &c.topic,
                    c.partitions,
                    "cycles",
                    &format!("cycles-{name}.jsonl"),
                    &self.stop_file,
                );
                cmd.args(["--name", name, "--seed", &c.seed.to_string()]);
                cmds.push((format!("cycles-{name}"), cmd));
            }
            for (name, cmd) in cmds {
                self.spawn(&name, cmd)?;
            }
        }
        if let Some(r) = &self.reassign {
            let mut cmd = self.command_until(
                &self.topic,
                "reassign",
                "reassign.jsonl",
                &self.reassign_stop_file,
            );
            let ids: Vec<String> = r.broker_ids.iter().map(u32::to_string).collect();
            cmd.args([
                "--seed",
                &r.seed.to_string(),
                "--broker-ids",
                &ids.join(","),
            ]);
            for topic in &r.also {
                cmd.args(["--also", topic]);
            }
            self.spawn("reassign", cmd)?;
        }
        Ok(())
    }

    /// Starts group `group`'s member `i`, the `k`-th in its place.
    pub(super) fn start_member(&mut self, group: &str, i: usize, k: u32) -> Result<()> {
        let protocol = GROUPS
            .iter()
            .find(|(g, _, _)| *g == group)
            .map(|(_, protocol, _)| *protocol)
            .context("no such group")?;
        let name = member_name(group, i, k);
        let mut cmd = self.command("member", &format!("member-{name}.jsonl"));
        cmd.args(["--name", &name, "--group", group, "--protocol", protocol])
            .arg("--resumed-file")
            .arg(self.resumed_file(&name));
        self.spawn(&name, cmd)
    }

    /// The file that tells member `name` it was resumed from a pause (it then commits at
    /// once: `workload.py member --resumed-file`).
    pub(super) fn resumed_file(&self, name: &str) -> PathBuf {
        self.dir.join(format!("member-{name}.resumed"))
    }

    /// Starts the next exactly-once pipeline process and names it the current one: its
    /// name.
    fn start_pipeline(&mut self) -> Result<String> {
        let output = self
            .txn
            .as_ref()
            .context("no transactional workload")?
            .pipe_topic
            .clone();
        let name = pipe_name(self.pipes);
        self.pipes += 1;
        std::fs::write(self.dir.join(PIPE_CURRENT), &name)?;
        let mut cmd = self.command("pipeline", &format!("{name}.jsonl"));
        cmd.args(["--output", &output, "--name", &name])
            .arg("--current-file")
            .arg(self.dir.join(PIPE_CURRENT));
        self.spawn(&name, cmd)?;
        Ok(name)
    }

    /// The run's directory (the clients' files).
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The process id of workload process `name` (a zombie's too).
    pub(super) fn pid(&self, name: &str) -> Option<u32> {
        self.children
            .iter()
            .chain(&self.zombies)
            .find(|(n, _)| n == name)
            .map(|(_, child)| child.id())
    }

    /// The zombie step's take-over: the current pipeline process paused (SIGSTOP) and a new
    /// one started with the same transactional id and group. Returns (old, new).
    pub(super) fn supersede_pipeline(&mut self) -> Result<(String, String)> {
        let old = pipe_name(self.pipes.checked_sub(1).context("no pipeline runs")?);
        let at = self
            .children
            .iter()
            .position(|(n, _)| *n == old)
            .context("the pipeline is not running")?;
        super::nodes::signal(self.children[at].1.id(), "STOP")?;
        let zombie = self.children.remove(at);
        self.zombies.push(zombie);
        let new = self.start_pipeline()?;
        Ok((old, new))
    }

    /// A superseded pipeline process's exit status, once it exited.
    pub(super) fn zombie_exited(&mut self, name: &str) -> Option<std::process::ExitStatus> {
        let (_, child) = self.zombies.iter_mut().find(|(n, _)| n == name)?;
        child.try_wait().ok()?
    }

    /// SIGKILL of workload process `name`, waited for. A group member's file gets a last
    /// line saying it holds nothing from then on (it cannot write one itself).
    pub(super) fn kill(&mut self, name: &str) -> Result<()> {
        let Some((_, mut child)) = self
            .children
            .iter()
            .position(|(n, _)| n == name)
            .map(|at| self.children.remove(at))
            .or_else(|| {
                let at = self.zombies.iter().position(|(n, _)| n == name)?;
                Some(self.zombies.remove(at))
            })
        else {
            bail!("no workload process {name}");
        };
        child.kill()?;
        child.wait()?;
        let file = self.dir.join(format!("member-{name}.jsonl"));
        if file.exists() {
            use std::io::Write as _;
            let mut f = std::fs::OpenOptions::new().append(true).open(&file)?;
            // A torn last line (killed mid-write) is skipped by `lines`; start a new one.
            writeln!(
                f,
                "\n{{\"held\":[],\"ms\":{},\"killed\":true}}",
                super::unix_ms()
            )?;
        }
        Ok(())
    }

    /// The reassignment workload's requests and answers written since the last call, one
    /// line of the run's history each (`reassign_checker::describe`).
    pub(super) fn reassign_news(&mut self) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(self.dir.join("reassign.jsonl")) else {
            return Vec::new();
        };
        // Only whole lines: the last one may be half written.
        let Some(end) = text.rfind('\n').map(|i| i + 1) else {
            return Vec::new();
        };
        let news = text
            .get(self.reassign_read..end)
            .unwrap_or_default()
            .lines()
            .filter_map(super::reassign_checker::describe)
            .collect();
        self.reassign_read = end.max(self.reassign_read);
        news
    }

    /// Tells the reassignment workload to stop (the faults are over) and waits for it: a move
    /// it left pending is the cluster's to complete while it heals.
    pub(super) fn stop_reassignments(&mut self) -> Result<()> {
        let Some(at) = self
            .children
            .iter()
            .position(|(name, _)| name == "reassign")
        else {
            return Ok(());
        };
        std::fs::write(&self.reassign_stop_file, "")?;
        let (_, mut child) = self.children.remove(at);
        let deadline = Instant::now() + Duration::from_secs(REASSIGN_STOP_WITHIN_SECS);
        while child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("workload reassign did not stop within {REASSIGN_STOP_WITHIN_SECS} s");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    /// Acknowledgements so far, per producer (the transactional one's: transactions
    /// committed).
    pub(super) fn acks_so_far(&self) -> Vec<usize> {
        let text = |file: &str| std::fs::read_to_string(self.dir.join(file)).unwrap_or_default();
        let mut acks: Vec<usize> = PRODUCERS
            .iter()
            .map(|(name, _)| {
                text(&format!("{name}.jsonl"))
                    .lines()
                    .filter(|l| l.starts_with("{\"v\""))
                    .count()
            })
            .collect();
        if self.txn.is_some() {
            let committed = text("txn.jsonl")
                .lines()
                .filter(|l| l.starts_with("{\"txn\"") && l.contains("\"outcome\":\"committed\""))
                .count();
            acks.push(committed);
        }
        if self.cycles.is_some() {
            let committed = CYCLES_WRITERS
                .iter()
                .map(|name| {
                    text(&format!("cycles-{name}.jsonl"))
                        .lines()
                        .filter(|l| l.contains("\"outcome\":\"committed\""))
                        .count()
                })
                .sum();
            acks.push(committed);
        }
        acks
    }

    /// A workload process that exited before it was told to stop.
    pub(super) fn exited(&mut self) -> Option<String> {
        self.children.iter_mut().find_map(|(name, child)| {
            let status = child.try_wait().ok()??;
            Some(format!("{name} ({status})"))
        })
    }

    /// Lists and describes the groups until each is Stable with its members and every
    /// partition assigned, for up to `timeout`: whether they were, and the last description.
    pub(super) fn groups_stable(&self, timeout: Duration) -> Result<(bool, String)> {
        let mut cmd = self.command("groups", "groups.jsonl");
        for (group, _, _) in GROUPS {
            cmd.args(["--group", &format!("{group}:{GROUP_MEMBERS}")]);
        }
        cmd.args(["--timeout", &timeout.as_secs().to_string()]);
        let out = cmd.output().context("running the groups check")?;
        if !out.status.success() {
            bail!(
                "the groups check failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let lines = lines(&self.dir.join("groups.jsonl"))?;
        let last = lines
            .iter()
            .rev()
            .find(|l| l.get("groups").is_some())
            .map(|l| l["groups"].to_string())
            .unwrap_or_default();
        let stable = lines.iter().any(|l| l["stable"].as_bool() == Some(true));
        Ok((stable, last))
    }

    /// Tells the producers and the consumer to stop and waits for them (the producers flush
    /// for up to 60 s; the pipeline may be ending a transaction, bounded at 45 s to send its
    /// offsets and 150 s to commit or abort, then asks for its group's offsets for 30 s).
    /// A zombie pipeline still running stops the same way (it was resumed), or is killed at
    /// the deadline: its end is not the run's.
    pub(super) fn stop(&mut self) -> Result<()> {
        std::fs::write(&self.stop_file, "")?;
        let deadline = Instant::now() + Duration::from_secs(STOP_WITHIN_SECS);
        for (name, child) in &mut self.children {
            while child.try_wait()?.is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    bail!("workload {name} did not stop within {STOP_WITHIN_SECS} s");
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        self.children.clear();
        for (_, child) in &mut self.zombies {
            while child.try_wait()?.is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        self.zombies.clear();
        Ok(())
    }

    /// Reads every partition to its end offset as of now (and the transactional topic's,
    /// `read_committed`).
    pub(super) fn read_all(&self) -> Result<()> {
        let mut reads = vec![("final", self.command("read-all", "final.jsonl"))];
        if let Some(txn) = &self.txn {
            let mut cmd = self.command_on(&txn.topic, "read-all", "txnfinal.jsonl");
            cmd.arg("--read-committed");
            reads.push(("transactional final", cmd));
            let mut cmd = self.command_on(&txn.pipe_topic, "read-all", "pipefinal.jsonl");
            cmd.arg("--read-committed");
            reads.push(("pipeline's output final", cmd));
        }
        if let Some(c) = &self.cycles {
            let mut cmd = self.command_with(
                &c.topic,
                c.partitions,
                "read-all",
                "cyclesfinal.jsonl",
                &self.stop_file,
            );
            cmd.arg("--read-committed");
            reads.push(("cycles topic's final", cmd));
        }
        for (what, mut cmd) in reads {
            let out = cmd
                .output()
                .with_context(|| format!("running the {what} read"))?;
            if !out.status.success() {
                bail!(
                    "the {what} read failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
        }
        Ok(())
    }

    /// The history the files hold.
    pub(super) fn history(&self) -> Result<History> {
        read_history(&self.dir)
    }
}

/// The history the workload's files in `dir` hold (of a run now, or of one kept).
pub(super) fn read_history(dir: &Path) -> Result<History> {
    let mut history = History {
        at_least_once: PRODUCERS
            .iter()
            .filter(|(_, idempotent)| !idempotent)
            .map(|(name, _)| name.to_string())
            .collect(),
        ..Default::default()
    };
    for (name, _) in PRODUCERS {
        for line in lines(&dir.join(format!("{name}.jsonl")))? {
            if let Some(v) = line["v"].as_str() {
                history.acks.push(Ack {
                    value: v.to_string(),
                    partition: int(&line["p"]) as i32,
                    offset: line["o"].as_i64().filter(|&o| o >= 0),
                    ms: int(&line["ms"]) as u64,
                });
            } else if line.get("fail").is_some() {
                *history
                    .failed
                    .entry(line["err"].as_str().unwrap_or("?").to_string())
                    .or_default() += 1;
            } else if let Some(fatal) = line["fatal"].as_str() {
                history.fatal.push((name.to_string(), fatal.to_string()));
            } else if line["done"].as_bool() == Some(true) {
                let produced = int(&line["produced"]) as u64;
                history.produced.insert(name.to_string(), produced);
            }
        }
    }
    history.live = reads(&dir.join("live.jsonl"))?;
    history.end_offsets = end_offsets(dir)?;
    history.final_log = reads(&dir.join("final.jsonl"))?;
    history.batches = super::segments::read(dir, TOPIC)?;
    Ok(history)
}

/// The group members' history in `dir`, if the run had them (`member-*.jsonl`), with the
/// topic's end offsets of the final read.
pub(super) fn read_group_history(dir: &Path) -> Result<Option<GroupHistory>> {
    let mut h = GroupHistory::default();
    let places = GROUPS
        .iter()
        .flat_map(|&(group, _, timeout)| (0..GROUP_MEMBERS).map(move |i| (group, i, timeout)));
    for (group, i, session_timeout_ms) in places {
        // Every member started in this place (`--zombie` kills and replaces them).
        for k in 0.. {
            let name = member_name(group, i, k);
            let path = dir.join(format!("member-{name}.jsonl"));
            if !path.exists() {
                break;
            }
            let mut m = Member {
                group: group.to_string(),
                name,
                session_timeout_ms,
                ..Default::default()
            };
            // A pause the member reported, until its next commit or assignment change.
            let mut paused: Option<u64> = None;
            for line in lines(&path)? {
                let ms = int(&line["ms"]) as u64;
                m.last_ms = m.last_ms.max(ms);
                if let Some(from) = line["paused"].as_u64() {
                    paused = Some(from);
                    continue;
                }
                if line.get("held").is_some() || line.get("commit").is_some() {
                    if let Some(from) = paused.take() {
                        m.paused.push((from, ms));
                    }
                }
                if let Some(held) = line["held"].as_array() {
                    let parts = held.iter().filter_map(|p| Some(p.as_i64()? as i32));
                    m.held.push((ms, parts.collect()));
                    m.killed |= line["killed"].as_bool() == Some(true);
                } else if let Some(done) = line["commit"].as_array() {
                    let sent_ms = int(&line["sent"]) as u64;
                    for c in done {
                        m.commits.push(Commit {
                            partition: int(&c[0]) as i32,
                            offset: int(&c[1]),
                            sent_ms,
                            ms,
                        });
                    }
                    let failed = line["failed"].as_array().map_or(&[][..], Vec::as_slice);
                    m.failed_commits += failed.len() as u64;
                    if line["late"].as_bool() == Some(true) {
                        m.late_commits += done.len() as u64;
                        for f in failed {
                            let err = f[2].as_str().unwrap_or("?").to_string();
                            *m.late_refused.entry(err).or_default() += 1;
                        }
                    }
                }
            }
            if let Some(from) = paused {
                m.paused.push((from, m.last_ms));
            }
            h.members.push(m);
        }
    }
    if h.members.is_empty() {
        return Ok(None);
    }
    h.end_offsets = end_offsets(dir)?;
    Ok(Some(h))
}

/// The workload topic's end offsets the final read found (`final.jsonl`'s `end` line).
fn end_offsets(dir: &Path) -> Result<BTreeMap<i32, i64>> {
    Ok(lines(&dir.join("final.jsonl"))?
        .iter()
        .find_map(|l| by_partition(&l["end"]))
        .unwrap_or_default())
}

/// A JSON object of offsets by partition (`{"0": 17, ...}`), as the workload writes them.
pub(super) fn by_partition(v: &Value) -> Option<BTreeMap<i32, i64>> {
    Some(
        v.as_object()?
            .iter()
            .filter_map(|(k, v)| Some((k.parse().ok()?, v.as_i64()?)))
            .collect(),
    )
}

/// The transactional workload's history in `dir`, if the run had one (`txn.jsonl`).
pub(super) fn read_txn_history(dir: &Path) -> Result<Option<TxnHistory>> {
    let path = dir.join("txn.jsonl");
    if !path.exists() {
        return Ok(None);
    }
    let mut h = TxnHistory::default();
    for line in lines(&path)? {
        if let Some(v) = line["v"].as_str() {
            h.appended.insert(
                v.to_string(),
                (
                    int(&line["p"]) as i32,
                    int(&line["o"]),
                    int(&line["ms"]) as u64,
                ),
            );
        } else if let Some(id) = line["txn"].as_str() {
            let records = line["records"]
                .as_array()
                .map(|rs| {
                    rs.iter()
                        .filter_map(|r| Some((r[0].as_str()?.to_string(), r[1].as_i64()? as i32)))
                        .collect()
                })
                .unwrap_or_default();
            let outcome = match line["outcome"].as_str() {
                Some("committed") => Outcome::Committed,
                Some("aborted") => Outcome::Aborted,
                _ => Outcome::Unknown,
            };
            h.txns.push(Txn {
                id: id.to_string(),
                records,
                outcome,
                error: line["err"].as_str().map(str::to_string),
                ms: int(&line["ms"]) as u64,
            });
        } else if line["done"].as_bool() == Some(true) {
            h.done = true;
        }
    }
    h.live = reads(&dir.join("txnlive.jsonl"))?;
    let final_lines = lines(&dir.join("txnfinal.jsonl"))?;
    h.stuck = final_lines
        .iter()
        .find_map(|l| by_partition(&l["stuck"]))
        .unwrap_or_default();
    h.final_log = reads(&dir.join("txnfinal.jsonl"))?;
    Ok(Some(h))
}

/// The exactly-once pipeline's history in `dir`, if the run had one (`pipe.jsonl`, and with
/// `--zombie` the processes that superseded it, `pipe-1.jsonl`, ...). The group's committed
/// offsets at the end are the last process's (the one running when the run stopped).
pub(super) fn read_pipe_history(dir: &Path) -> Result<Option<PipeHistory>> {
    if !dir.join("pipe.jsonl").exists() {
        return Ok(None);
    }
    let mut h = PipeHistory::default();
    for k in 0.. {
        let name = pipe_name(k);
        let path = dir.join(format!("{name}.jsonl"));
        if !path.exists() {
            break;
        }
        let mut instance = PipeInstance {
            name,
            ..Default::default()
        };
        h.done = false;
        for line in lines(&path)? {
            if let Some(outcome) = line["outcome"].as_str() {
                *h.outcomes.entry(outcome.to_string()).or_default() += 1;
                instance.batches.push(PipeBatch {
                    n: int(&line["batch"]) as u64,
                    producer: int(&line["pi"]).max(0) as u32,
                    begun_ms: line["begun"].as_u64(),
                    inputs: int(&line["inputs"]).max(0) as u64,
                    outcome: outcome.to_string(),
                    error: line["err"].as_str().map(str::to_string),
                    ms: int(&line["ms"]) as u64,
                });
            } else if let Some(pi) = line["init"].as_u64() {
                instance.inits.push((pi as u32, int(&line["ms"]) as u64));
            } else if line.get("fenced").is_some() {
                let err = line["fenced"].as_str().unwrap_or("?").to_string();
                instance.fenced = Some((err, int(&line["ms"]) as u64));
            } else if line["done"].as_bool() == Some(true) {
                h.done = true;
                h.committed = by_partition(&line["committed"]).unwrap_or_default();
            }
        }
        h.instances.push(instance);
    }
    h.output = reads(&dir.join("pipefinal.jsonl"))?;
    Ok(Some(h))
}

impl Drop for Workload {
    fn drop(&mut self) {
        for (_, child) in self.children.iter_mut().chain(&mut self.zombies) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(-1)
}

/// Every JSON line of `path` (a torn last line, from a process killed mid-write, skipped).
pub(super) fn lines(path: &Path) -> Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// The records lines of `path`.
pub(super) fn reads(path: &Path) -> Result<Vec<Read>> {
    Ok(lines(path)?
        .into_iter()
        .filter_map(|l| {
            Some(Read {
                partition: l["p"].as_i64()? as i32,
                offset: l["o"].as_i64()?,
                value: l["v"].as_str()?.to_string(),
                ms: l["ms"].as_u64(),
            })
        })
        .collect())
}
