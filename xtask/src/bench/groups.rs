//! `cargo xtask bench groups [--quick]`: consumer groups with a stock client, kraftd beside
//! Apache Kafka 4.4.0 on the same machine, one run, one table with the ratios kraftd/Kafka. A
//! benchmark: it prints figures and asserts nothing.
//!
//! Both systems run as the `produce` bench runs them, one after the other: kraftd as 3
//! controllers and 3 brokers (release build), Kafka 4.4.0 from the jars the tests use as 1
//! controller and 3 brokers of 512 MiB heap (`kraftd.rs`, `kafka.rs`). Their brokers get the
//! same group settings ([`GROUP_CONFIG`]): `__consumer_offsets` with 10 partitions and 3
//! replicas, `group.initial.rebalance.delay.ms=0`, KIP-848 heartbeats every 500 ms; Kafka's
//! also `group.consumer.assignment.interval.ms=0` ([`KAFKA_GROUP_CONFIG`]: kraftd recomputes a
//! KIP-848 group's target assignment at once, Kafka 4.4 by default at most once a second, which
//! made its join about 0.5 s slower than with 0). Against each, `groups.py` (beside this file;
//! run with the venv's python, see below) creates a topic of 100 partitions (RF 3), has
//! `__consumer_offsets` created and the groups' coordinators loaded (a standalone commit, then
//! the groups described, retried until clean: neither is timed), and measures with
//! confluent-kafka 2.16.1 (librdkafka), 10 members as threads of one process, each its own
//! `Consumer` polling every 50 ms:
//!
//! - Rebalance times, for the classic protocol with `partition.assignment.strategy=range`
//!   (eager) and `cooperative-sticky` (incremental: two rounds for a join), members
//!   heartbeating every 500 ms (`session.timeout.ms=6000`), and for KIP-848
//!   (`group.protocol=consumer`, the broker's default assignor). 9 members form the group
//!   (timed once, from the first `subscribe`: a racy figure, as it depends on how many of the 9
//!   reach the coordinator before its first round completes); then, `--reps` times, a 10th
//!   joins (timed from its `subscribe`) and leaves again (`close`, timed from the call). A
//!   rebalance is done at the last assignment callback (`on_assign`/`on_revoke`/`on_lost`)
//!   after which the members' assignments cover the 100 partitions exactly once, every member
//!   has some and their sizes differ by at most one, as long as that holds 300 ms with no
//!   further callback (a later change moves the end to it). The report gives the median and
//!   min-max, and the most partitions the members' callbacks showed owned by two members at
//!   once (none is expected; librdkafka queues KIP-848 callbacks, so an overlap of a few ms
//!   could show on either system). A protocol that fails (a member's error, no balanced
//!   assignment within `--timeout` s, a fatal or "unsupported" client error) has "n/a (error)"
//!   in its rows, the error below the table, and the run goes on.
//! - OffsetCommit throughput and latency: a consumer that never subscribes commits one explicit
//!   offset of one partition synchronously (`commit(asynchronous=False)`, generation -1 as a
//!   standalone consumer), one call after another for `--commit-secs` after a 1 s warm-up:
//!   commits/s and p50/p99 per call; then `--committers` (8) such consumers at once, each on
//!   its own group (spread over the offsets topic's partitions and so over the brokers), their
//!   aggregate commits/s and pooled latencies.
//!
//! Caveats. Rebalance times are mostly protocol rounds paced by heartbeats (a classic member
//! learns of a rebalance at its next heartbeat; a KIP-848 member gets and acknowledges each
//! step at its heartbeats), so they compare how many rounds and how long each coordinator
//! takes, not throughput; the 500 ms intervals, not the defaults (3 s classic, 5 s KIP-848),
//! keep the run short. The clients, their Python callbacks and both clusters share the
//! machine's cores, as the load average printed beside each system shows; the client's share is
//! the same for both. The member that joins is the one that leaves. Commits wait for the
//! offsets partition's 3 replicas (as Kafka's do), so commit latency includes replication;
//! Kafka's coordinator batches its writes (`group.coordinator.append.linger.ms`, left at its
//! adaptive default, -1). Kafka has 1 controller, kraftd 3 (as in `bench produce`; the
//! controller is off both paths).
//!
//! The stock-client venv is the tests' (`target/stock-clients-venv/`, kafka-python 3.0.12 and
//! confluent-kafka 2.16.1), created here as the tests create it when missing. librdkafka's log
//! goes to `client.log` in each system's temp directory, kept (with the nodes' logs) with
//! `--keep` or when something failed; `GROUPS_BENCH_DEBUG=cgrp` (librdkafka's `debug`) makes it
//! tell every group request, and slows the clients. The report also prints `__consumer_offsets`
//! as each system's Metadata showed it at the end (replicas, ISR).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::cluster::Cluster;
use super::kafka::kafka_classpath;
use super::produce::{loadavg, Against, System};

/// The stock clients, pinned as the tests pin them (`crates/cli/tests/common/python.rs`).
const PACKAGES: [&str; 2] = ["kafka-python==3.0.12", "confluent-kafka==2.16.1"];

/// The group settings both systems' brokers get. Classic members heartbeat every 500 ms
/// (client side, set by groups.py); KIP-848 heartbeats are the broker's to set, as short.
const GROUP_CONFIG: &str = "offsets.topic.replication.factor=3\n\
                            offsets.topic.num.partitions=10\n\
                            group.initial.rebalance.delay.ms=0\n\
                            group.consumer.min.heartbeat.interval.ms=500\n\
                            group.consumer.heartbeat.interval.ms=500\n";

/// Kafka's alone: its KIP-848 coordinator recomputes a group's target assignment at most every
/// `group.consumer.assignment.interval.ms` (1 s by default in 4.4), kraftd's at once on the
/// heartbeat that changed the group; 0 makes Kafka's do the same.
const KAFKA_GROUP_CONFIG: &str = "group.consumer.assignment.interval.ms=0\n";

/// The protocols measured, as groups.py names them, and as the report does.
const PROTOCOLS: [(&str, &str); 3] = [
    ("range", "classic range"),
    ("cooperative-sticky", "classic cooperative-sticky"),
    ("consumer", "KIP-848 (group.protocol=consumer)"),
];

#[derive(clap::Args, Debug)]
pub(super) struct GroupsArgs {
    /// A shorter run: 2 joins and leaves per protocol, 4 s commit runs.
    #[arg(long)]
    quick: bool,
    /// Joins and leaves per protocol (default 5, or 2 with --quick).
    #[arg(long)]
    reps: Option<u32>,
    /// Seconds each commit run lasts (default 8, or 4 with --quick).
    #[arg(long)]
    commit_secs: Option<f64>,
    /// Concurrent committers (one group each) in the aggregate commit run.
    #[arg(long, default_value_t = 8)]
    committers: u32,
    /// Seconds a join or leave may take before its protocol's row becomes n/a (forming the
    /// group may take twice as long).
    #[arg(long, default_value_t = 15.0)]
    timeout: f64,
    /// The protocols to time, comma-separated, of range, cooperative-sticky and consumer.
    #[arg(long, default_value = "range,cooperative-sticky,consumer")]
    protocols: String,
    /// Keep the temp directory (node logs, the client's log) afterwards.
    #[arg(long)]
    keep: bool,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    against: Against,
}

/// One system's figures: groups.py's JSON line, or why there is none.
struct Run {
    system: System,
    result: Result<Value, String>,
    load_before: String,
}

pub(super) fn groups(root: &Path, args: GroupsArgs) -> Result<()> {
    let started = Instant::now();
    let reps = args.reps.unwrap_or(if args.quick { 2 } else { 5 });
    let commit_secs = args
        .commit_secs
        .unwrap_or(if args.quick { 4.0 } else { 8.0 });
    let systems = match args.against {
        Against::Kraftd => vec![System::Kraftd],
        Against::Kafka => vec![System::Kafka],
        Against::Both => vec![System::Kraftd, System::Kafka],
    };
    let protocols: Vec<(&str, &str)> = PROTOCOLS
        .into_iter()
        .filter(|(p, _)| args.protocols.split(',').any(|a| a.trim() == *p))
        .collect();
    if let Some(unknown) = args
        .protocols
        .split(',')
        .find(|a| !PROTOCOLS.iter().any(|(p, _)| a.trim() == *p))
    {
        bail!("unknown protocol {unknown:?} (range, cooperative-sticky, consumer)");
    }
    let python = stock_python(root)?;
    let script = root.join("xtask/src/bench/groups.py");
    let classpath = kafka_classpath(root)?;
    let bin = root.join("target").join("release").join("kraftd");
    if systems.contains(&System::Kraftd) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        crate::run(root, &cargo, &["build", "--release", "--bin", "kraftd"])?;
    }

    let dir = std::env::temp_dir().join(format!("kraftd-bench-groups-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    println!("bench directory: {}", dir.display());
    let load_start = loadavg();

    let mut runs = Vec::new();
    for system in systems {
        let sys_dir = dir.join(system.name().to_lowercase());
        std::fs::create_dir_all(&sys_dir)?;
        let load_before = loadavg();
        println!(
            "==> {}: {} (load average {load_before})",
            system.name(),
            system.topology()
        );
        let cluster = match system {
            System::Kraftd => Cluster::start_kraftd(&bin, &sys_dir, GROUP_CONFIG),
            System::Kafka => Cluster::start_kafka(
                &classpath,
                &sys_dir,
                &format!("{GROUP_CONFIG}{KAFKA_GROUP_CONFIG}"),
            ),
        };
        let mut cluster = cluster.inspect_err(|_| {
            eprintln!(
                "{} did not start; its logs are in {} (kept)",
                system.name(),
                sys_dir.display()
            );
        })?;
        let client_log = sys_dir.join("client.log");
        let result = drive(
            &python,
            &script,
            &cluster.bootstrap(),
            &client_log,
            &[
                "--reps",
                &reps.to_string(),
                "--commit-secs",
                &commit_secs.to_string(),
                "--committers",
                &args.committers.to_string(),
                "--timeout",
                &args.timeout.to_string(),
                "--protocols",
                &protocols
                    .iter()
                    .map(|(p, _)| *p)
                    .collect::<Vec<_>>()
                    .join(","),
            ],
        );
        cluster.stop();
        if let Err(e) = &result {
            eprintln!(
                "groups.py failed against {}: {e}; logs in {} (kept)",
                system.name(),
                sys_dir.display()
            );
        }
        runs.push(Run {
            system,
            result: result.map_err(|e| format!("{e:#}")),
            load_before,
        });
    }
    let failed = runs.iter().any(|r| {
        r.result.is_err()
            || r.result
                .as_ref()
                .is_ok_and(|v| v.to_string().contains("\"error\":\""))
    });
    if args.keep || failed {
        println!("logs kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    report(
        &protocols,
        reps,
        commit_secs,
        args.committers,
        &runs,
        &load_start,
    );
    println!(
        "(bench took {:.0} s; load average at the end {})",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    Ok(())
}

/// Runs a driver script (groups.py, txn.py) against `bootstrap` (its progress on our stderr)
/// and parses the JSON line it prints last.
pub(super) fn drive(
    python: &Path,
    script: &Path,
    bootstrap: &str,
    client_log: &Path,
    extra: &[&str],
) -> Result<Value> {
    let name = script
        .file_name()
        .map_or("the driver".into(), |n| n.to_string_lossy().into_owned());
    let mut child = Command::new(python)
        .arg(script)
        .arg(bootstrap)
        .arg("--log")
        .arg(client_log)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {name}"))?;
    let stdout = child.stdout.take().context("no stdout")?;
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    // Well above what a run can take with every protocol timing out.
    let deadline = Instant::now() + Duration::from_secs(900);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{name} ran over 900 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let lines = reader.join().unwrap_or_default();
    let last = lines
        .iter()
        .rev()
        .find(|l| l.starts_with('{'))
        .with_context(|| format!("{name} ({status}) printed no JSON: {lines:?}"))?;
    let value: Value = serde_json::from_str(last).with_context(|| format!("{name}'s JSON"))?;
    if let Some(error) = value.get("error").and_then(Value::as_str) {
        bail!("{error}");
    }
    Ok(value)
}

/// `target/stock-clients-venv/bin/python`, the venv created as the tests create it when it
/// is missing (python3's venv, then pip from PyPI).
pub(crate) fn stock_python(root: &Path) -> Result<PathBuf> {
    let target = root.join("target");
    let venv = target.join("stock-clients-venv");
    let python = venv.join("bin").join("python");
    if python.exists() {
        return Ok(python);
    }
    println!("==> creating {} ({})", venv.display(), PACKAGES.join(" "));
    std::fs::create_dir_all(&target)?;
    let tmp = target.join(format!("stock-clients-venv.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&tmp)
        .status()
        .context("the bench needs python3 (with venv)")?;
    if !status.success() {
        bail!("python3 -m venv {} failed", tmp.display());
    }
    let status = Command::new(tmp.join("bin").join("pip"))
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(PACKAGES)
        .status()
        .context("running pip")?;
    if !status.success() {
        bail!(
            "pip install {} failed (is PyPI reachable?)",
            PACKAGES.join(" ")
        );
    }
    if std::fs::rename(&tmp, &venv).is_err() {
        // A test binary made it meanwhile; use that one.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(python)
}

// ---------------------------------------------------------------------------------------------
// The report.

/// One cell's figure (the median, and its spread when there are several) or why there is none.
enum Cell {
    Figure { value: f64, text: String },
    Missing(String),
}

impl Cell {
    fn text(&self) -> String {
        match self {
            Cell::Figure { text, .. } => text.clone(),
            Cell::Missing(_) => "n/a (error)".into(),
        }
    }

    fn value(&self) -> Option<f64> {
        match self {
            Cell::Figure { value, .. } => Some(*value),
            Cell::Missing(_) => None,
        }
    }
}

/// The median of `xs` in ms, with min-max when there are several.
fn millis(xs: &[f64]) -> Option<Cell> {
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => xs[n / 2],
        _ => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    };
    let text = if n == 1 {
        format!("{median:.0} ms")
    } else {
        format!("{median:.0} ms ({:.0}-{:.0})", xs[0], xs[n - 1])
    };
    Some(Cell::Figure {
        value: median,
        text,
    })
}

fn numbers(v: Option<&Value>) -> Vec<f64> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// A row's cell for one run: `pick` from its JSON, or n/a with the error that prevented it.
fn cell(run: &Run, section: &str, key: &str, pick: impl Fn(&Value) -> Option<Cell>) -> Cell {
    let v = match &run.result {
        Ok(v) => v,
        Err(e) => return Cell::Missing(e.clone()),
    };
    let part = v.get(section).and_then(|s| s.get(key));
    match part.and_then(&pick) {
        Some(c) => c,
        None => Cell::Missing(
            part.and_then(|p| p.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("no figure")
                .to_string(),
        ),
    }
}

fn report(
    protocols: &[(&str, &str)],
    reps: u32,
    commit_secs: f64,
    committers: u32,
    runs: &[Run],
    load_start: &str,
) {
    println!();
    println!(
        "consumer-group benchmark on one host ({} cores): confluent-kafka 2.16.1 (librdkafka) \
         members as threads of one Python process; topic of 100 partitions (RF 3)",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    println!(
        "  brokers of both: {}",
        GROUP_CONFIG.trim_end().replace('\n', ", ")
    );
    println!(
        "  Kafka's also: {} (kraftd computes a KIP-848 target assignment at once; Kafka 4.4's \
         default of 1000 ms batches them)",
        KAFKA_GROUP_CONFIG.trim_end().replace('\n', ", ")
    );
    for run in runs {
        // __consumer_offsets as the system's Metadata showed it after the run.
        let offsets = run
            .result
            .as_ref()
            .ok()
            .and_then(|v| v.get("offsets_topic"))
            .filter(|t| !t.is_null())
            .map_or("?".to_string(), |t| {
                format!(
                    "{} partitions, {} replicas, {} in sync",
                    t["partitions"], t["replicas"], t["isr"]
                )
            });
        println!(
            "  {:<7} {} (load average before it: {}); __consumer_offsets at the end: {offsets}",
            run.system.name(),
            run.system.topology(),
            run.load_before
        );
    }
    println!("  load average before the bench: {load_start}");
    println!();

    // (label, section, key, how to read it, higher is better)
    type Pick = Box<dyn Fn(&Value) -> Option<Cell>>;
    let mut rows: Vec<(String, &str, String, Pick)> = Vec::new();
    for &(protocol, label) in protocols {
        rows.push((
            format!("{label}: 9 members form the group (once)"),
            "rebalance",
            protocol.to_string(),
            Box::new(|p: &Value| {
                p.get("form_ms")
                    .and_then(Value::as_f64)
                    .and_then(|x| millis(&[x]))
            }),
        ));
        rows.push((
            format!("{label}: a 10th joins (median of {reps})"),
            "rebalance",
            protocol.to_string(),
            Box::new(|p: &Value| millis(&numbers(p.get("join_ms")))),
        ));
        rows.push((
            format!("{label}: one of 10 leaves (median of {reps})"),
            "rebalance",
            protocol.to_string(),
            Box::new(|p: &Value| millis(&numbers(p.get("leave_ms")))),
        ));
    }
    for k in [1, committers] {
        let who = if k == 1 {
            "1 committer".to_string()
        } else {
            format!("{k} committers (own groups)")
        };
        rows.push((
            format!("OffsetCommit, {who}: commits/s"),
            "commit",
            k.to_string(),
            Box::new(|c: &Value| {
                let v = c.get("per_sec")?.as_f64()?;
                (c.get("count")?.as_u64()? > 0).then(|| Cell::Figure {
                    value: v,
                    text: format!("{v:.0}"),
                })
            }),
        ));
        for (q, key) in [("p50", "p50_ms"), ("p99", "p99_ms")] {
            rows.push((
                format!("OffsetCommit, {who}: {q} latency"),
                "commit",
                k.to_string(),
                Box::new(move |c: &Value| {
                    let v = c.get(key)?.as_f64()?;
                    Some(Cell::Figure {
                        value: v,
                        text: format!("{v:.2} ms"),
                    })
                }),
            ));
        }
    }

    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    print!("{:<width$}", "measurement");
    for run in runs {
        print!(" | {:>20}", run.system.name());
    }
    let both = runs.len() == 2;
    if both {
        print!(" | {:>12}", "kraftd/Kafka");
    }
    println!();
    println!(
        "{}",
        "-".repeat(width + 23 * runs.len() + if both { 15 } else { 0 })
    );
    let mut notes: Vec<String> = Vec::new();
    for (label, section, key, pick) in &rows {
        print!("{label:<width$}");
        let cells: Vec<Cell> = runs
            .iter()
            .map(|run| cell(run, section, key, pick))
            .collect();
        for (run, c) in runs.iter().zip(&cells) {
            print!(" | {:>20}", c.text());
            if let Cell::Missing(why) = c {
                let note = format!("{} {key}: {why}", run.system.name());
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
        }
        if both {
            let ratio = match (cells[0].value(), cells[1].value()) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
                _ => "-".into(),
            };
            print!(" | {ratio:>12}");
        }
        println!();
    }
    println!();
    println!(
        "rebalance: from the joining member's subscribe (or the leaving member's close) until \
         every member's assignment callbacks have run and the members own all 100 partitions \
         exactly once, balanced, held {QUIET_MS} ms; median (min-max) of {reps}."
    );
    println!(
        "OffsetCommit: synchronous commits of one explicit offset, one after another per \
         committer, for {commit_secs} s after a 1 s warm-up; latency per commit() call."
    );
    println!(
        "kraftd/Kafka: below 1 is better for kraftd in times and latencies, above 1 in commits/s."
    );
    for note in &notes {
        println!("n/a: {note}");
    }
    // What the members' callbacks showed of two owners at once, which no protocol allows.
    for run in runs {
        let Ok(v) = &run.result else { continue };
        let overlaps: Vec<String> = protocols
            .iter()
            .filter_map(|(protocol, _)| {
                let n = v
                    .get("rebalance")?
                    .get(protocol)?
                    .get("overlap_max")?
                    .as_u64()?;
                Some(format!("{protocol} {n}"))
            })
            .collect();
        println!(
            "{}: most partitions owned by two members at once during these rebalances: {}",
            run.system.name(),
            overlaps.join(", ")
        );
    }
    for run in runs {
        let errors: Vec<&str> = run
            .result
            .as_ref()
            .ok()
            .and_then(|v| v.get("client_errors"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !errors.is_empty() {
            println!("client errors against {}:", run.system.name());
            for e in errors {
                println!("  {e}");
            }
        }
    }
}

/// groups.py's QUIET, for the report.
const QUIET_MS: u32 = 300;
