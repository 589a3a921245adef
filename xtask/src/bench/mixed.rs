//! `cargo xtask bench mixed`: one workload on three clusters in one run — all Apache Kafka
//! 4.4.0, all kraftd, and a cluster halfway through a node-by-node migration (issue 31's
//! benchmark): what a mixed cluster costs while an operator rolls it. A benchmark: it prints
//! figures and asserts nothing.
//!
//! Each cluster is 3 controllers (ids 1-3, a static quorum) and 3 brokers (4-6) on loopback,
//! every node given the same `server.properties` lines whichever kind runs it (Kafka's
//! names; Kafka's defaults otherwise: no fsync per write), each node formatted by its own
//! kind's tool (`kraftd format`, Kafka's `StorageTool format`) with its default, the same
//! for both (4.4-IV2, metadata.version 33), for one cluster id: as
//! `crates/cli/tests/mixed_kafka_cluster.rs` forms its mixed quorums. Kafka's nodes are
//! `kafka.Kafka` JVMs with a 512 MiB heap each (`kafka.rs`), kraftd's the release build
//! (`kraftd.rs`). The clusters run one after the other, each stopped before the next starts.
//!
//! The mixed cluster: controllers 1 and 2 Kafka, 3 kraftd; broker 4 Kafka, 5 and 6 kraftd.
//! A roll that takes the brokers first (docs/migration.md) passes through "every broker
//! kraftd, every controller Kafka" at its midpoint, but there each role is one kind only;
//! this split has both kinds in both roles, so everything a roll's middle can hold is in one
//! cluster: a quorum of both kinds (either can be the active controller, and the failover
//! rounds say which was), Kafka and kraftd brokers on the other kind's controllers, and
//! partitions replicated Kafka → kraftd and kraftd → Kafka (one partition led by each broker).
//!
//! Per cluster, in this order:
//! - produce: a topic of `--partitions` partitions, RF 3, `min.insync.replicas=2` (Kafka's
//!   `TopicCommand`); a warm-up of a fifth of `--records` (not reported), then `--records`
//!   records of 1 KiB with Kafka's `ProducerPerformance` (acks=all, `batch.size` 64 KiB,
//!   `linger.ms` 5: `load.rs`, as `bench produce`'s first row), records/s and MiB/s, the
//!   brokers' CPU and the machine's busy share over it;
//! - memory: each node's RSS (`VmRSS`) right after that run, by role and kind;
//! - end-to-end latency: Kafka's `EndToEndLatency` (`load.rs`), `--e2e-records` one at a
//!   time, p50/p99 (the tool reports whole ms);
//! - broker start to serving: each round one broker (they take turns, so 3 rounds restart
//!   each once) is stopped with SIGTERM (its controlled shutdown), and once it leads nothing,
//!   is in no ISR and is no longer listed as a live broker (fenced) it is started again; from the process start, polling Metadata of
//!   another broker every 50 ms: the time until it is listed as a live broker (registered
//!   and unfenced), and until it is back in the ISR of every partition it replicates (the
//!   bench topic, `__consumer_offsets`, the failover topics);
//! - controller failover: `bench failover`'s rounds (`failover.rs`): kill -9 of the active
//!   controller, then CreateTopics through broker 4 until one succeeds; the median, and
//!   which kind was killed and which took over in each round.
//!
//! The machine (2 cores may be shared) is printed beside each cluster: the load average
//! before and after its run, and its busy share of all cores over the whole run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cluster::kraftd_random_uuid;
use anyhow::{bail, Context, Result};

use super::cluster::{BenchNode, Cluster, Respawn};
use super::failover::{self, median};
use super::kafka::{format_kafka_node, kafka_classpath, spawn_kafka_node};
use super::kraftd::kraftd_respawn;
use super::load::{create_topic, end_to_end, producer_perf, E2e, PerfResult};
use super::machine::{machine_ticks, status_bytes};
use super::produce::{loadavg, System};
use super::rebalance::{partitions_of, wait_for, Partitions};
use crate::cluster::{alive_brokers, free_port};

const TOPIC: &str = "bench";
/// `batch.size` of the measured produce run (`bench produce`'s first row).
const BATCH_SIZE: usize = 64 << 10;
const POLL: Duration = Duration::from_millis(50);
/// The controllers' node ids; the brokers are 4-6.
const CONTROLLERS: [u32; 3] = [1, 2, 3];
const NODES: [u32; 6] = [1, 2, 3, 4, 5, 6];
/// The nodes kraftd runs in the mixed cluster: one controller, two brokers.
const MIXED_KRAFTD: [u32; 3] = [3, 5, 6];
const MIB: f64 = (1 << 20) as f64;

#[derive(clap::Args, Debug)]
pub(super) struct MixedArgs {
    /// 1 KiB records in the measured produce run (a fifth of it again as the warm-up).
    #[arg(long, default_value_t = 100_000)]
    records: u64,
    /// Records EndToEndLatency sends one at a time.
    #[arg(long, default_value_t = 500)]
    e2e_records: u64,
    /// Rounds of kill -9 of the active controller per cluster.
    #[arg(long, default_value_t = 3)]
    failover_rounds: u32,
    /// Broker restarts per cluster; the brokers take turns (3: each once, so the mixed
    /// cluster restarts its Kafka broker and both kraftd ones).
    #[arg(long, default_value_t = 3)]
    restart_rounds: u32,
    /// The bench topic's partitions (3: one leader per broker).
    #[arg(long, default_value_t = 3)]
    partitions: u32,
    /// The producer's linger.ms.
    #[arg(long, default_value_t = 5)]
    linger_ms: u64,
    /// The clusters to run, in this order.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "kafka,kraftd,mixed"
    )]
    clusters: Vec<Shape>,
    /// Run this kraftd binary instead of building `target/release/kraftd`.
    #[arg(long)]
    kraftd_bin: Option<PathBuf>,
    /// Keep the temp directory (node logs and data) afterwards.
    #[arg(long)]
    keep: bool,
}

/// Which kind runs which node.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Kafka,
    Kraftd,
    Mixed,
}

impl Shape {
    const ALL: [Shape; 3] = [Shape::Kafka, Shape::Kraftd, Shape::Mixed];

    fn name(self) -> &'static str {
        match self {
            Shape::Kafka => "all Kafka",
            Shape::Kraftd => "all kraftd",
            Shape::Mixed => "mixed",
        }
    }

    /// The kind that runs node `id`.
    fn kind(self, id: u32) -> System {
        match self {
            Shape::Kafka => System::Kafka,
            Shape::Kraftd => System::Kraftd,
            Shape::Mixed if MIXED_KRAFTD.contains(&id) => System::Kraftd,
            Shape::Mixed => System::Kafka,
        }
    }
}

fn role(id: u32) -> &'static str {
    if CONTROLLERS.contains(&id) {
        "controller"
    } else {
        "broker"
    }
}

/// One broker restart, in seconds from its process start.
struct Restart {
    broker: u32,
    unfenced: f64,
    in_isr: f64,
}

/// One cluster's figures (what its run got to before an error).
#[derive(Default)]
struct Figures {
    load_before: String,
    load_after: String,
    /// Start of the processes to every broker unfenced.
    start_secs: Option<f64>,
    produce: Option<PerfResult>,
    /// (node, RSS bytes) right after the produce run.
    rss: Vec<(u32, u64)>,
    e2e: Option<E2e>,
    e2e_note: Option<String>,
    restarts: Vec<Restart>,
    failover: Vec<failover::Round>,
    /// The machine's busy share of all cores over the cluster's whole run.
    machine_busy: Option<f64>,
    run_secs: f64,
    error: Option<String>,
}

pub(super) fn mixed(root: &Path, args: MixedArgs) -> Result<()> {
    let started = Instant::now();
    let classpath = kafka_classpath(root)?;
    let bin = args
        .kraftd_bin
        .clone()
        .unwrap_or_else(|| root.join("target").join("release").join("kraftd"));
    if args.kraftd_bin.is_none() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        crate::run(root, &cargo, &["build", "--release", "--bin", "kraftd"])?;
    }
    let dir = std::env::temp_dir().join(format!("kraftd-bench-mixed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    println!("bench directory: {}", dir.display());
    let mut runs = Vec::new();
    for &shape in &args.clusters {
        let cluster_dir = dir.join(shape.name().replace(' ', "-"));
        std::fs::create_dir_all(&cluster_dir)?;
        let mut figures = Figures {
            load_before: loadavg(),
            ..Default::default()
        };
        println!(
            "==> {}: 3 controllers + 3 brokers, {} (load average {})",
            shape.name(),
            layout(shape),
            figures.load_before
        );
        let machine_before = machine_ticks();
        let t0 = Instant::now();
        if let Err(e) = run_cluster(shape, &bin, &classpath, &cluster_dir, &args, &mut figures) {
            eprintln!(
                "{}: {e:#}; its node logs are in {} (kept)",
                shape.name(),
                cluster_dir.display()
            );
            figures.error = Some(format!("{e:#}"));
        }
        let (busy, total) = machine_ticks();
        figures.machine_busy =
            Some((busy - machine_before.0) as f64 / (total - machine_before.1).max(1) as f64);
        figures.run_secs = t0.elapsed().as_secs_f64();
        figures.load_after = loadavg();
        runs.push((shape, figures));
    }
    if !args.keep && runs.iter().all(|(_, f)| f.error.is_none()) {
        let _ = std::fs::remove_dir_all(&dir);
    }
    report(&args, &runs);
    println!(
        "(bench took {:.0} s; load average at the end {})",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    Ok(())
}

/// "controllers Kafka, Kafka, kraftd; brokers Kafka, kraftd, kraftd".
fn layout(shape: Shape) -> String {
    let kinds = |ids: &[u32]| {
        ids.iter()
            .map(|id| shape.kind(*id).name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "controllers {}; brokers {}",
        kinds(&NODES[..3]),
        kinds(&NODES[3..])
    )
}

/// Starts the cluster, measures it into `figures`, stops it (on an error too).
fn run_cluster(
    shape: Shape,
    bin: &Path,
    classpath: &str,
    dir: &Path,
    args: &MixedArgs,
    figures: &mut Figures,
) -> Result<()> {
    let t0 = Instant::now();
    let mut cluster = start(shape, bin, classpath, dir)?;
    figures.start_secs = Some(t0.elapsed().as_secs_f64());
    let outcome = measure(shape, &mut cluster, classpath, dir, args, figures);
    cluster.stop();
    outcome
}

fn measure(
    shape: Shape,
    cluster: &mut Cluster,
    classpath: &str,
    dir: &Path,
    args: &MixedArgs,
    figures: &mut Figures,
) -> Result<()> {
    create_topic(cluster, classpath, TOPIC, args.partitions)?;
    let warm_up = (args.records / 5).max(1);
    println!("==> warm-up: {warm_up} records");
    producer_perf(
        cluster,
        classpath,
        TOPIC,
        warm_up,
        BATCH_SIZE,
        args.linger_ms,
    )?;
    println!(
        "==> ProducerPerformance: {} x 1 KiB, acks=all, batch.size={BATCH_SIZE}, linger.ms={}",
        args.records, args.linger_ms
    );
    figures.produce = Some(producer_perf(
        cluster,
        classpath,
        TOPIC,
        args.records,
        BATCH_SIZE,
        args.linger_ms,
    )?);
    figures.rss = cluster
        .nodes
        .iter()
        .filter_map(|n| Some((n.id, status_bytes(n.child.as_ref()?.id(), "VmRSS:"))))
        .collect();
    let (e2e, note) = end_to_end(cluster, classpath, TOPIC, args.e2e_records)?;
    figures.e2e = Some(e2e);
    figures.e2e_note = note;
    for round in 0..args.restart_rounds {
        let r = restart_broker(cluster, round)?;
        println!(
            "restart {}: broker {} ({}) unfenced after {:.2} s, in every ISR after {:.2} s",
            round + 1,
            r.broker,
            shape.kind(r.broker).name(),
            r.unfenced,
            r.in_isr
        );
        figures.restarts.push(r);
    }
    // kraftd's breakdown by step reads every controller's log: only when all are kraftd.
    let breakdown = shape == Shape::Kraftd;
    figures.failover = failover::rounds(cluster, dir, args.failover_rounds, breakdown)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The cluster.

/// The properties every node of every cluster is given, whichever kind runs it.
fn node_config(id: u32, port: u16, voters: &str, data: &Path) -> String {
    let own = if CONTROLLERS.contains(&id) {
        format!("process.roles=controller\nnode.id={id}\nlisteners=CONTROLLER://127.0.0.1:{port}\n")
    } else {
        // EndToEndLatency commits its offsets once: `__consumer_offsets` kept small, as
        // `bench produce` keeps it.
        format!(
            "process.roles=broker\nnode.id={id}\nlisteners=PLAINTEXT://127.0.0.1:{port}\n\
             inter.broker.listener.name=PLAINTEXT\noffsets.topic.num.partitions=3\n\
             group.initial.rebalance.delay.ms=0\n"
        )
    };
    format!(
        "# written by cargo xtask bench mixed\n{own}log.dirs={}\n\
         controller.quorum.voters={voters}\ncontroller.listener.names=CONTROLLER\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n",
        data.display()
    )
}

/// The cluster of `shape` under `dir`: every node configured by [`node_config`], formatted
/// by its kind's tool for one cluster id, started; returns once every broker is unfenced.
fn start(shape: Shape, bin: &Path, classpath: &str, dir: &Path) -> Result<Cluster> {
    let ports: Vec<(u32, u16)> = NODES
        .iter()
        .map(|id| Ok((*id, free_port()?)))
        .collect::<Result<_>>()?;
    let voters = ports
        .iter()
        .filter(|(id, _)| CONTROLLERS.contains(id))
        .map(|(id, port)| format!("{id}@127.0.0.1:{port}"))
        .collect::<Vec<_>>()
        .join(",");
    let cluster_id = kraftd_random_uuid(bin)?;
    let mut respawns = Vec::new();
    for &(id, port) in &ports {
        let node_dir = dir.join(format!("node-{id}"));
        std::fs::create_dir_all(node_dir.join("logs"))?;
        let config = node_dir.join("server.properties");
        std::fs::write(
            &config,
            node_config(id, port, &voters, &node_dir.join("data")),
        )?;
        let respawn: Respawn = match shape.kind(id) {
            System::Kraftd => {
                crate::cluster::format_node(bin, &config, &cluster_id, id, &[])?;
                kraftd_respawn(bin, role(id), &config, &node_dir, id)?
            }
            System::Kafka => {
                format_kafka_node(classpath, &cluster_id, &config, &[])
                    .with_context(|| format!("formatting Kafka node {id}"))?;
                let cp = classpath.to_string();
                Box::new(move || {
                    spawn_kafka_node(&cp, &node_dir, &config, "-Xmx512m")
                        .with_context(|| format!("starting Kafka node {id}"))
                })
            }
        };
        respawns.push((id, port, respawn));
    }
    let mut cluster = Cluster { nodes: Vec::new() };
    for (id, port, respawn) in respawns {
        let child = respawn()?;
        println!(
            "started node {id} ({} {}) pid {}",
            shape.kind(id).name(),
            role(id),
            child.id()
        );
        let controller = CONTROLLERS.contains(&id);
        cluster.nodes.push(BenchNode {
            id,
            broker_port: (!controller).then_some(port),
            extra_ports: Vec::new(),
            child: Some(child),
            controller_port: controller.then_some(port),
            respawn: Some(respawn),
        });
    }
    if let Err(e) = cluster.wait_brokers(Duration::from_secs(180)) {
        cluster.stop();
        return Err(e);
    }
    Ok(cluster)
}

// ---------------------------------------------------------------------------------------------
// Broker start to serving.

/// Every partition `broker` replicates has it in its ISR.
fn in_every_isr(parts: &Partitions, broker: i32) -> bool {
    parts
        .iter()
        .filter(|(_, replicas, _)| replicas.contains(&broker))
        .all(|(_, _, isr)| isr.contains(&broker))
}

/// Every partition's ISR is all its replicas.
fn fully_replicated(parts: &Partitions) -> bool {
    !parts.is_empty()
        && parts
            .iter()
            .all(|(leader, replicas, isr)| *leader >= 0 && isr.len() == replicas.len())
}

/// Round `round`'s broker (they take turns) stopped with SIGTERM and, once out of every ISR,
/// leading nothing and fenced, started again: the time from its start until another broker's
/// Metadata lists it, and until it is in every ISR again.
fn restart_broker(cluster: &mut Cluster, round: u32) -> Result<Restart> {
    let brokers: Vec<(u32, u16)> = cluster
        .nodes
        .iter()
        .filter_map(|n| Some((n.id, n.broker_port?)))
        .collect();
    let (id, _) = brokers[round as usize % brokers.len()];
    let (_, observer) = *brokers
        .iter()
        .find(|(b, _)| *b != id)
        .context("one broker only")?;
    wait_for(
        observer,
        None,
        Duration::from_secs(300),
        "every ISR full",
        fully_replicated,
    )?;
    let node = cluster
        .nodes
        .iter_mut()
        .find(|n| n.id == id)
        .context("no such broker")?;
    let mut child = node.child.take().context("the broker is not running")?;
    Command::new("kill").arg(child.id().to_string()).status()?;
    child.wait()?;
    let me = id as i32;
    wait_for(
        observer,
        None,
        Duration::from_secs(120),
        "the stopped broker out of every ISR and leading nothing",
        |parts| {
            parts
                .iter()
                .all(|(leader, _, isr)| *leader != me && !isr.contains(&me))
        },
    )?;
    // Fenced too (no longer a live broker in Metadata), or its return would be seen at once.
    let deadline = Instant::now() + Duration::from_secs(120);
    while alive_brokers(observer).map_or(true, |b| b.contains(&me)) {
        if Instant::now() > deadline {
            bail!("broker {id}: still listed as a live broker 120 s after it stopped");
        }
        std::thread::sleep(POLL);
    }
    let respawn = node.respawn.as_ref().context("cannot restart")?;
    let t0 = Instant::now();
    node.child = Some(respawn()?);
    let deadline = t0 + Duration::from_secs(300);
    let mut unfenced = None;
    loop {
        if Instant::now() > deadline {
            bail!("broker {id}: not unfenced and in every ISR within 300 s of its start");
        }
        if unfenced.is_none() && alive_brokers(observer).is_ok_and(|b| b.contains(&me)) {
            unfenced = Some(t0.elapsed().as_secs_f64());
        }
        if let Some(unfenced) = unfenced {
            if partitions_of(observer, None).is_ok_and(|p| in_every_isr(&p, me)) {
                return Ok(Restart {
                    broker: id,
                    unfenced,
                    in_isr: t0.elapsed().as_secs_f64(),
                });
            }
        }
        std::thread::sleep(POLL);
    }
}

// ---------------------------------------------------------------------------------------------
// The report.

/// A row of the table: one figure per cluster of [`Shape::ALL`] (`None`: not measured or
/// not applicable), and the digits to print.
struct Row {
    label: String,
    cells: [Option<f64>; 3],
    digits: usize,
}

/// "1.23x", or "-" when either figure is missing or the denominator is 0.
fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() && b.is_finite() => {
            format!("{:.2}x", a / b)
        }
        _ => "-".into(),
    }
}

impl Row {
    fn new(label: impl Into<String>, digits: usize, cell: impl Fn(Shape) -> Option<f64>) -> Row {
        Row {
            label: label.into(),
            cells: Shape::ALL.map(&cell),
            digits,
        }
    }

    /// The row as printed: label, the three clusters, kraftd/Kafka, mixed/Kafka.
    fn render(&self) -> String {
        let cell = |c: Option<f64>| match c {
            Some(v) if v.is_finite() => format!("{v:.*}", self.digits),
            _ => "-".into(),
        };
        format!(
            "{:<44} | {:>11} | {:>11} | {:>11} | {:>12} | {:>11}",
            self.label,
            cell(self.cells[0]),
            cell(self.cells[1]),
            cell(self.cells[2]),
            ratio(self.cells[1], self.cells[0]),
            ratio(self.cells[2], self.cells[0]),
        )
    }
}

/// The mean of `v`, `None` when empty.
fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// `median`, `None` when empty.
fn median_of(v: Vec<f64>) -> Option<f64> {
    (!v.is_empty()).then(|| median(v))
}

/// The table's rows from each cluster's figures.
fn rows(runs: &[(Shape, Figures)]) -> Vec<Row> {
    let of = |shape: Shape| runs.iter().find(|(s, _)| *s == shape).map(|(_, f)| f);
    let perf = |shape: Shape| of(shape)?.produce.as_ref();
    let e2e = |shape: Shape| of(shape)?.e2e.as_ref();
    // RSS in MiB of the nodes of `role` (None: every node) and `kind` (None: either).
    let rss = |shape: Shape, role_is: Option<&str>, kind: Option<System>, total: bool| {
        let v: Vec<f64> = of(shape)?
            .rss
            .iter()
            .filter(|(id, _)| role_is.is_none_or(|r| role(*id) == r))
            .filter(|(id, _)| kind.is_none_or(|k| shape.kind(*id) == k))
            .map(|(_, bytes)| *bytes as f64 / MIB)
            .collect();
        if total {
            (!v.is_empty()).then(|| v.iter().sum())
        } else {
            mean(&v)
        }
    };
    let restart = |shape: Shape, kind: Option<System>, f: fn(&Restart) -> f64| {
        median_of(
            of(shape)?
                .restarts
                .iter()
                .filter(|r| kind.is_none_or(|k| shape.kind(r.broker) == k))
                .map(f)
                .collect(),
        )
    };
    let failover = |shape: Shape, kind: Option<System>| {
        median_of(
            of(shape)?
                .failover
                .iter()
                .filter(|r| kind.is_none_or(|k| shape.kind(r.killed) == k))
                .map(|r| r.secs)
                .collect(),
        )
    };
    let mut rows = vec![
        Row::new("start to every broker unfenced (s)", 1, |s| {
            of(s)?.start_secs
        }),
        Row::new("produce records/s", 0, |s| Some(perf(s)?.records_per_sec)),
        Row::new("produce MiB/s", 1, |s| Some(perf(s)?.mib_per_sec)),
        Row::new("produce latency p50 (ms)", 0, |s| Some(perf(s)?.p50_ms)),
        Row::new("produce latency p99 (ms)", 0, |s| Some(perf(s)?.p99_ms)),
        Row::new("brokers' CPU during produce (cores)", 2, |s| {
            Some(perf(s)?.broker_cores)
        }),
        Row::new("machine busy during produce (%)", 0, |s| {
            Some(100.0 * perf(s)?.machine_busy)
        }),
        Row::new("end-to-end latency p50 (ms)", 0, |s| Some(e2e(s)?.p50_ms)),
        Row::new("end-to-end latency p99 (ms)", 0, |s| Some(e2e(s)?.p99_ms)),
        Row::new("end-to-end latency avg (ms)", 2, |s| Some(e2e(s)?.avg_ms)),
        Row::new("controller failover, median (s)", 2, |s| failover(s, None)),
    ];
    for kind in [System::Kafka, System::Kraftd] {
        rows.push(Row::new(
            format!("  {} controller killed, median (s)", kind.name()),
            2,
            |s| failover(s, Some(kind)),
        ));
    }
    rows.push(Row::new("broker start to unfenced, median (s)", 2, |s| {
        restart(s, None, |r| r.unfenced)
    }));
    rows.push(Row::new(
        "broker start to in every ISR, median (s)",
        2,
        |s| restart(s, None, |r| r.in_isr),
    ));
    for kind in [System::Kafka, System::Kraftd] {
        rows.push(Row::new(
            format!("  {} broker to in every ISR, median (s)", kind.name()),
            2,
            |s| restart(s, Some(kind), |r| r.in_isr),
        ));
    }
    rows.push(Row::new("RSS of all 6 nodes (MiB)", 0, |s| {
        rss(s, None, None, true)
    }));
    for role_is in ["controller", "broker"] {
        for kind in [System::Kafka, System::Kraftd] {
            rows.push(Row::new(
                format!("  RSS per {} {role_is}, mean (MiB)", kind.name()),
                0,
                |s| rss(s, Some(role_is), Some(kind), false),
            ));
        }
    }
    rows.push(Row::new(
        "machine busy over the cluster's run (%)",
        0,
        |s| Some(100.0 * of(s)?.machine_busy?),
    ));
    rows
}

fn report(args: &MixedArgs, runs: &[(Shape, Figures)]) {
    println!();
    println!(
        "bench mixed on one host ({} cores): 3 controllers + 3 brokers each, Kafka 4.4.0 nodes \
         with -Xmx512m, kraftd release build; topic of {} partitions, RF 3, \
         min.insync.replicas=2; {} records of 1 KiB, acks=all, batch.size 64 KiB, linger.ms={}; \
         {} end-to-end records; {} broker restarts and {} controller failovers per cluster",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        args.partitions,
        args.records,
        args.linger_ms,
        args.e2e_records,
        args.restart_rounds,
        args.failover_rounds
    );
    for (shape, f) in runs {
        println!(
            "  {:<10} {}; {:.0} s; load average before {}, after {}",
            shape.name(),
            layout(*shape),
            f.run_secs,
            f.load_before,
            f.load_after
        );
    }
    println!();
    println!(
        "{:<44} | {:>11} | {:>11} | {:>11} | {:>12} | {:>11}",
        "",
        Shape::Kafka.name(),
        Shape::Kraftd.name(),
        Shape::Mixed.name(),
        "kraftd/Kafka",
        "mixed/Kafka"
    );
    println!("{}", "-".repeat(44 + 3 * 14 + 15 + 14));
    for row in rows(runs) {
        println!("{}", row.render());
    }
    println!();
    println!(
        "ratios: above 1 is more for the cluster over all Kafka (better in records/s and MiB/s, \
         worse in times, CPU and memory); a kind's row compares that kind's nodes only."
    );
    println!(
        "failover: kill -9 of the active controller to the first CreateTopics through broker 4 \
         that succeeds (bench failover); broker start: from the process start, as another \
         broker's Metadata lists it unfenced and it back in the ISR of every partition it \
         replicates; RSS: VmRSS right after the produce run."
    );
    for (shape, f) in runs {
        for r in &f.failover {
            let after = r.leader_after.map_or("?".to_string(), |l| {
                format!("{l} ({})", shape.kind(l).name())
            });
            println!(
                "  {:<10} failover: killed {} ({}), {after} active after, {:.2} s",
                shape.name(),
                r.killed,
                shape.kind(r.killed).name(),
                r.secs
            );
        }
        for r in &f.restarts {
            println!(
                "  {:<10} restart: broker {} ({}), unfenced {:.2} s, in every ISR {:.2} s",
                shape.name(),
                r.broker,
                shape.kind(r.broker).name(),
                r.unfenced,
                r.in_isr
            );
        }
        let rss: Vec<String> = f
            .rss
            .iter()
            .map(|(id, bytes)| {
                format!(
                    "{id} {} {} {:.0}",
                    shape.kind(*id).name(),
                    role(*id),
                    *bytes as f64 / MIB
                )
            })
            .collect();
        if !rss.is_empty() {
            println!("  {:<10} RSS MiB: {}", shape.name(), rss.join(", "));
        }
        if let Some(note) = &f.e2e_note {
            println!("  {:<10} note: {note}", shape.name());
        }
        if let Some(e) = &f.error {
            println!(
                "  {:<10} FAILED (figures after this are missing): {}",
                shape.name(),
                e.lines().next().unwrap_or("")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mixed_cluster_has_both_kinds_in_both_roles() {
        let kinds =
            |ids: &[u32]| -> Vec<System> { ids.iter().map(|id| Shape::Mixed.kind(*id)).collect() };
        assert_eq!(
            kinds(&NODES[..3]),
            [System::Kafka, System::Kafka, System::Kraftd]
        );
        assert_eq!(
            kinds(&NODES[3..]),
            [System::Kafka, System::Kraftd, System::Kraftd]
        );
        assert!(NODES
            .iter()
            .all(|id| Shape::Kafka.kind(*id) == System::Kafka));
        assert!(NODES
            .iter()
            .all(|id| Shape::Kraftd.kind(*id) == System::Kraftd));
        assert_eq!(
            layout(Shape::Mixed),
            "controllers Kafka, Kafka, kraftd; brokers Kafka, kraftd, kraftd"
        );
    }

    #[test]
    fn every_node_gets_the_same_lines_but_its_own() {
        let voters = "1@127.0.0.1:9001,2@127.0.0.1:9002,3@127.0.0.1:9003";
        let controller = node_config(1, 9001, voters, Path::new("/d/1"));
        let broker = node_config(4, 9004, voters, Path::new("/d/4"));
        assert!(controller.contains("process.roles=controller\nnode.id=1\n"));
        assert!(controller.contains("listeners=CONTROLLER://127.0.0.1:9001\n"));
        assert!(broker.contains("listeners=PLAINTEXT://127.0.0.1:9004\n"));
        assert!(broker.contains("inter.broker.listener.name=PLAINTEXT\n"));
        for text in [&controller, &broker] {
            assert!(text.contains(&format!("controller.quorum.voters={voters}\n")));
            assert!(text.contains("controller.listener.names=CONTROLLER\n"));
        }
    }

    fn figures(shape: Shape, rss: &[(u32, u64)], failover: &[(u32, f64)]) -> (Shape, Figures) {
        let f = Figures {
            rss: rss.to_vec(),
            failover: failover
                .iter()
                .map(|&(killed, secs)| failover::Round::measured(killed, secs))
                .collect(),
            ..Default::default()
        };
        (shape, f)
    }

    #[test]
    fn rows_split_by_kind_and_ratios_compare_like_with_like() {
        let mib = 1 << 20;
        let all: Vec<(u32, u64)> = NODES.iter().map(|id| (*id, 100 * mib)).collect();
        let runs = vec![
            figures(Shape::Kafka, &all, &[(1, 4.0), (2, 6.0), (3, 5.0)]),
            figures(
                Shape::Kraftd,
                &NODES.map(|id| (id, 10 * mib)),
                &[(1, 1.0), (2, 2.0)],
            ),
            figures(
                Shape::Mixed,
                &NODES.map(|id| (id, if MIXED_KRAFTD.contains(&id) { 10 } else { 200 } * mib)),
                &[(3, 3.0)],
            ),
        ];
        let rows = rows(&runs);
        let row = |label: &str| {
            rows.iter()
                .find(|r| r.label.trim() == label)
                .unwrap_or_else(|| panic!("no row {label}"))
        };
        assert_eq!(
            row("RSS of all 6 nodes (MiB)").cells,
            [Some(600.0), Some(60.0), Some(630.0)]
        );
        let kafka_brokers = row("RSS per Kafka broker, mean (MiB)");
        assert_eq!(kafka_brokers.cells, [Some(100.0), None, Some(200.0)]);
        assert!(kafka_brokers
            .render()
            .ends_with("|            - |       2.00x"));
        assert_eq!(
            row("RSS per kraftd controller, mean (MiB)").cells,
            [None, Some(10.0), Some(10.0)]
        );
        assert_eq!(
            row("controller failover, median (s)").cells,
            [Some(5.0), Some(1.5), Some(3.0)]
        );
        assert_eq!(
            row("kraftd controller killed, median (s)").cells,
            [None, Some(1.5), Some(3.0)]
        );
        assert_eq!(
            row("Kafka controller killed, median (s)").cells,
            [Some(5.0), None, None]
        );
        // Nothing measured: "-", never a number.
        assert_eq!(row("produce records/s").cells, [None, None, None]);
        assert!(row("produce records/s")
            .render()
            .contains("|           - |"));
    }

    #[test]
    fn ratios_need_both_figures_and_a_denominator() {
        assert_eq!(ratio(Some(3.0), Some(2.0)), "1.50x");
        assert_eq!(ratio(Some(3.0), Some(0.0)), "-");
        assert_eq!(ratio(None, Some(2.0)), "-");
        assert_eq!(ratio(Some(f64::NAN), Some(2.0)), "-");
    }
}
