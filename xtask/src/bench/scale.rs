//! `cargo xtask bench scale --partitions N`: what many partitions cost one node, kraftd beside
//! Apache Kafka 4.4.0 in one run (issue 19). A benchmark: it prints figures, asserts nothing.
//!
//! Each system runs one combined node (broker and controller in one process, id 1). N
//! partitions are created as topics of `--topic-partitions` (100) partitions, RF 1, by
//! CreateTopics requests of `--batch-topics` (20) topics each, sent one after the other;
//! then it measures, on that node:
//! - creation: from the first CreateTopics until every partition has a leader in Metadata,
//!   and until every partition answers ListOffsets (its log open);
//! - settle: from the first CreateTopics until the node's CPU over a 2 s window is under 10%
//!   of a core; then its idle CPU over `--idle-secs`, its RSS (per partition) and its open file
//!   descriptors (`/proc/<pid>/fd`);
//! - clean restart: SIGTERM, wait for the exit, start, until serving (every partition has a
//!   leader in Metadata and answers ListOffsets); unclean restart the same after SIGKILL.
//!
//! Then a second broker (id 2) joins, and `--follower-partitions` partitions (topics of
//! `--topic-partitions`) plus `--data-partitions` partitions of a data topic are created with
//! replicas [1, 2] (leader 1, follower 2); once every ISR is full it measures the follower's
//! CPU idle (per replicated partition) and while Kafka's `ProducerPerformance` writes
//! `--data-rate` 1 KiB records/s to the data topic only.
//!
//! The requests are sent by `scale_client.rs` (no JVM per poll). Kafka's JVM gets
//! `--kafka-heap` (as `-Xms`/`-Xmx`). The full size of the issue is `--partitions 100000`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::bench::kafka::kafka_random_uuid;
use crate::cluster::kraftd_random_uuid;
use anyhow::{bail, Context, Result};

use super::kafka::{format_kafka_node, java, spawn_kafka_node};
use super::machine::{clock_ticks, process_ticks, status_bytes};
use super::produce::{Against, System};
use super::scale_client::Conn;
use super::systems::{run_systems, Frame, RunFigures, RunStatus, SystemRun};
use crate::cluster::free_port;

const PREFIX: &str = "scale-";
const FOLLOW_PREFIX: &str = "follow-";
const DATA_TOPIC: &str = "follow-data";

#[derive(clap::Args, Debug)]
pub(super) struct ScaleArgs {
    /// Partitions created on the combined node (RF 1).
    #[arg(long, default_value_t = 2000)]
    partitions: u32,
    /// Partitions per topic.
    #[arg(long, default_value_t = 100)]
    topic_partitions: u32,
    /// Topics per CreateTopics request.
    #[arg(long, default_value_t = 20)]
    batch_topics: u32,
    /// Idle partitions replicated to the second broker (RF 2) for the follower figure
    /// (0: no follower run).
    #[arg(long, default_value_t = 1000)]
    follower_partitions: u32,
    /// Partitions of the follower's data topic (written to while measuring).
    #[arg(long, default_value_t = 4)]
    data_partitions: u32,
    /// 1 KiB records per second written to the data topic.
    #[arg(long, default_value_t = 2000)]
    data_rate: u32,
    /// Length of each CPU measurement window (idle, follower).
    #[arg(long, default_value_t = 10)]
    idle_secs: u64,
    /// Kafka's JVM heap (-Xms and -Xmx).
    #[arg(long, default_value = "2g")]
    kafka_heap: String,
    /// Give up on a phase after this long (default 120 s + 20 ms per partition).
    #[arg(long)]
    timeout_secs: Option<u64>,
    /// Keep the temp directory (node logs and data) afterwards.
    #[arg(long)]
    keep: bool,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    against: Against,
}

/// How to (re)start one node.
pub(super) enum Launch {
    Kraftd {
        bin: PathBuf,
        command: &'static str,
        config: PathBuf,
        log: PathBuf,
    },
    Kafka {
        classpath: String,
        node_dir: PathBuf,
        config: PathBuf,
        xmx: String,
    },
}

pub(super) struct Node {
    pub(super) port: u16,
    pub(super) launch: Launch,
    pub(super) child: Option<Child>,
}

impl Node {
    pub(super) fn start(&mut self) -> Result<()> {
        let child = match &self.launch {
            Launch::Kraftd {
                bin,
                command,
                config,
                log,
            } => Command::new(bin)
                .args([*command, "--config"])
                .arg(config)
                .stdin(Stdio::null())
                .stdout(
                    std::fs::File::options()
                        .create(true)
                        .append(true)
                        .open(log)?,
                )
                .stderr(std::fs::File::options().append(true).open(log)?)
                .spawn()?,
            Launch::Kafka {
                classpath,
                node_dir,
                config,
                xmx,
            } => spawn_kafka_node(classpath, node_dir, config, xmx)?,
        };
        self.child = Some(child);
        Ok(())
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// Sends `signal` (as "-TERM") and waits up to `limit` for the exit (SIGKILL after it);
    /// the time until it exited.
    pub(super) fn stop(&mut self, signal: &str, limit: Duration) -> f64 {
        let Some(mut child) = self.child.take() else {
            return 0.0;
        };
        let t0 = Instant::now();
        let _ = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status();
        while matches!(child.try_wait(), Ok(None)) && t0.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        t0.elapsed().as_secs_f64()
    }
}

/// The run's nodes, killed on the way out (a panic or an error included).
pub(super) struct Nodes(pub(super) Vec<Node>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for node in &mut self.0 {
            node.stop("-TERM", Duration::from_secs(15));
        }
    }
}

/// One system's figures, filled in as measured (a failed phase leaves the rest empty).
#[derive(Default)]
struct Figures {
    create_requests_s: Option<f64>,
    leaders_s: Option<f64>,
    readable_s: Option<f64>,
    settle_s: Option<f64>,
    idle_cores: Option<f64>,
    rss_bytes: Option<u64>,
    fds: Option<usize>,
    clean_stop_s: Option<f64>,
    clean_restart_s: Option<f64>,
    unclean_restart_s: Option<f64>,
    follower_partitions: u32,
    follower_idle_cores: Option<f64>,
    follower_data_cores: Option<f64>,
    /// The load average when the system's run started (the machine may be shared), and
    /// the error that ended it early.
    run: RunStatus,
}

pub(super) fn scale(root: &Path, args: ScaleArgs) -> Result<()> {
    if args.partitions == 0 || args.topic_partitions == 0 || args.batch_topics == 0 {
        bail!("--partitions, --topic-partitions and --batch-topics must be positive");
    }
    let frame = Frame {
        root,
        name: "scale",
        against: args.against,
        keep: args.keep,
        kafka_tools: true,
        what: "one combined node",
        kraftd_bin: None,
    };
    run_systems(
        frame,
        |run, nodes, figures| drive(run, &args, nodes, figures),
        |runs| print_report(&args, runs),
    )
}

impl RunFigures for Figures {
    fn status(&mut self) -> &mut RunStatus {
        &mut self.run
    }
}

/// Writes the configs of the combined node (1) and of `count - 1` brokers (2, ...: the
/// follower), formats them, and returns them unstarted. `bench clients` runs the combined
/// node alone.
pub(super) fn layout(
    system: System,
    bin: &Path,
    classpath: &str,
    dir: &Path,
    heap: &str,
    count: usize,
) -> Result<Nodes> {
    let controller_port = free_port()?;
    let ports = (0..count)
        .map(|_| free_port())
        .collect::<Result<Vec<_>>>()?;
    let voters = format!("1@127.0.0.1:{controller_port}");
    let cluster_id = match system {
        System::Kraftd => kraftd_random_uuid(bin)?,
        System::Kafka => kafka_random_uuid(classpath)?,
    };
    let mut nodes = Nodes(Vec::new());
    for (i, port) in ports.into_iter().enumerate() {
        let id = i as u32 + 1;
        let combined = id == 1;
        let node_dir = dir.join(format!("node-{id}"));
        std::fs::create_dir_all(node_dir.join("logs"))?;
        let config = node_dir.join("server.properties");
        let (roles, listeners) = if combined {
            (
                "broker,controller",
                format!("PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}"),
            )
        } else {
            ("broker", format!("PLAINTEXT://127.0.0.1:{port}"))
        };
        let mut text = format!(
            "# written by cargo xtask bench scale\nprocess.roles={roles}\nnode.id={id}\n\
             controller.quorum.voters={voters}\nlisteners={listeners}\n\
             controller.listener.names=CONTROLLER\nlog.dirs={}\n",
            node_dir.join("data").display()
        );
        let launch = match system {
            System::Kraftd => {
                text.push_str(&format!("metrics.port={}\n", free_port()?));
                std::fs::write(&config, text)?;
                crate::cluster::format_node(bin, &config, &cluster_id, id, &[])?;
                Launch::Kraftd {
                    bin: bin.to_path_buf(),
                    command: if combined { "combined" } else { "broker" },
                    config,
                    log: node_dir.join("kraftd.log"),
                }
            }
            System::Kafka => {
                text.push_str(&format!(
                    "advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n\
                     inter.broker.listener.name=PLAINTEXT\n\
                     listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
                     offsets.topic.replication.factor=1\n\
                     transaction.state.log.replication.factor=1\n\
                     transaction.state.log.min.isr=1\n"
                ));
                std::fs::write(&config, text)?;
                format_kafka_node(classpath, &cluster_id, &config, &[])
                    .with_context(|| format!("formatting Kafka node {id}"))?;
                Launch::Kafka {
                    classpath: classpath.to_string(),
                    node_dir: node_dir.clone(),
                    config,
                    xmx: format!("-Xmx{heap}"),
                }
            }
        };
        nodes.0.push(Node {
            port,
            launch,
            child: None,
        });
    }
    Ok(nodes)
}

/// Polls until `check` holds (a failed poll counts as not yet), or bails after `limit`.
pub(super) fn poll_until(
    what: &str,
    limit: Duration,
    mut check: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let t0 = Instant::now();
    let mut last_error = String::new();
    loop {
        match check() {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last_error = format!("{e:#}"),
        }
        if t0.elapsed() > limit {
            bail!("{what}: not after {limit:?} (last error: {last_error})");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Polls the broker on `port` until `expected` partitions of `prefix*` topics have a leader
/// (returns the time since `t0` then) and answer ListOffsets (the time since `t0` then).
fn wait_serving(
    port: u16,
    prefix: &str,
    expected: usize,
    t0: Instant,
    limit: Duration,
) -> Result<(f64, f64)> {
    let mut conn: Option<Conn> = None;
    let mut led_at = None;
    let mut readable = 0;
    poll_until(
        &format!("{expected} partitions led and readable"),
        limit,
        || {
            if conn.is_none() {
                conn = Some(Conn::connect(port)?);
            }
            let c = conn.as_mut().expect("connected above");
            let result = (|| -> Result<bool> {
                let (_, seen) = c.metadata(prefix)?;
                if seen.led < expected {
                    return Ok(false);
                }
                led_at.get_or_insert(t0.elapsed().as_secs_f64());
                readable = c.readable(&seen.topics)?;
                Ok(readable >= expected)
            })();
            if result.is_err() {
                conn = None;
            }
            result
        },
    )
    .with_context(|| format!("{readable} readable"))?;
    let led = led_at.unwrap_or_default();
    Ok((led, t0.elapsed().as_secs_f64()))
}

/// Seconds from `t0` until `pid`'s CPU over a 2 s window is under 10% of a core (the start of
/// that window), or None after `limit`.
pub(super) fn settle(pid: u32, t0: Instant, limit: Duration) -> Option<f64> {
    let hz = clock_ticks();
    while t0.elapsed() < limit {
        let start = t0.elapsed().as_secs_f64();
        let ticks = process_ticks(pid);
        std::thread::sleep(Duration::from_secs(2));
        let cores = (process_ticks(pid) - ticks) as f64 / hz / 2.0;
        if cores < 0.10 {
            return Some(start);
        }
    }
    None
}

/// `pid`'s CPU over `secs` seconds, in cores.
pub(super) fn cpu_over(pid: u32, secs: u64) -> f64 {
    let ticks = process_ticks(pid);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    (process_ticks(pid).saturating_sub(ticks)) as f64 / clock_ticks() / t0.elapsed().as_secs_f64()
}

pub(super) fn rss_bytes(pid: u32) -> u64 {
    status_bytes(pid, "VmRSS:")
}

pub(super) fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Creates `count` partitions as topics `prefix{i}` of `per_topic` partitions on `replicas`,
/// `batch` topics per request.
fn create(
    conn: &mut Conn,
    prefix: &str,
    count: u32,
    per_topic: u32,
    batch: u32,
    replicas: &[i32],
) -> Result<()> {
    let topics = count.div_ceil(per_topic);
    let names: Vec<(String, u32)> = (0..topics)
        .map(|t| {
            let partitions = per_topic.min(count - t * per_topic);
            (format!("{prefix}{t:05}"), partitions)
        })
        .collect();
    for chunk in names.chunks(batch as usize) {
        // A last, shorter topic goes in its own request (one partition count per request).
        let full: Vec<String> = chunk
            .iter()
            .filter(|(_, p)| *p == per_topic)
            .map(|(n, _)| n.clone())
            .collect();
        if !full.is_empty() {
            conn.create_topics(&full, per_topic as i32, replicas)?;
        }
        for (name, p) in chunk.iter().filter(|(_, p)| *p != per_topic) {
            conn.create_topics(std::slice::from_ref(name), *p as i32, replicas)?;
        }
    }
    Ok(())
}

fn drive(run: &SystemRun<'_>, args: &ScaleArgs, nodes: &mut Nodes, f: &mut Figures) -> Result<()> {
    let SystemRun {
        system,
        bin,
        classpath,
        dir,
    } = *run;
    let n = args.partitions as usize;
    let limit = Duration::from_secs(
        args.timeout_secs
            .unwrap_or(120 + u64::from(args.partitions) / 50),
    );
    *nodes = layout(system, bin, classpath, dir, &args.kafka_heap, 2)?;
    let port = nodes.0[0].port;
    nodes.0[0].start()?;
    poll_until("the combined node registered", limit, || {
        Ok(Conn::connect(port)?.metadata(PREFIX)?.0.contains(&1))
    })?;
    println!("node 1 up (pid {})", nodes.0[0].pid());

    // Creation.
    let mut conn = Conn::connect(port)?;
    let t0 = Instant::now();
    create(
        &mut conn,
        PREFIX,
        args.partitions,
        args.topic_partitions,
        args.batch_topics,
        &[1],
    )?;
    f.create_requests_s = Some(t0.elapsed().as_secs_f64());
    println!(
        "CreateTopics answered for {n} partitions after {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let (led, readable) = wait_serving(port, PREFIX, n, t0, limit)?;
    f.leaders_s = Some(led);
    f.readable_s = Some(readable);
    println!("every partition led after {led:.1} s, readable after {readable:.1} s");
    let pid = nodes.0[0].pid();
    f.settle_s = settle(pid, t0, limit);
    println!("CPU settled after {:?} s", f.settle_s);
    f.idle_cores = Some(cpu_over(pid, args.idle_secs));
    f.rss_bytes = Some(rss_bytes(pid));
    f.fds = Some(open_fds(pid));
    println!(
        "idle {:.1}% of a core, RSS {} MiB, {} fds",
        100.0 * f.idle_cores.unwrap_or_default(),
        f.rss_bytes.unwrap_or_default() >> 20,
        f.fds.unwrap_or_default()
    );
    drop(conn);

    // Restarts.
    let stop = nodes.0[0].stop("-TERM", Duration::from_secs(300));
    f.clean_stop_s = Some(stop);
    let t0 = Instant::now();
    nodes.0[0].start()?;
    let (_, serving) = wait_serving(port, PREFIX, n, t0, limit)?;
    f.clean_restart_s = Some(serving);
    println!("clean restart: stopped in {stop:.1} s, serving {serving:.1} s after the start");
    settle(nodes.0[0].pid(), Instant::now(), limit);
    nodes.0[0].stop("-KILL", Duration::from_secs(30));
    let t0 = Instant::now();
    nodes.0[0].start()?;
    let (_, serving) = wait_serving(port, PREFIX, n, t0, limit)?;
    f.unclean_restart_s = Some(serving);
    println!("unclean restart: serving {serving:.1} s after the start");

    if args.follower_partitions == 0 {
        return Ok(());
    }
    // The follower.
    nodes.0[1].start()?;
    poll_until("the second broker registered", limit, || {
        Ok(Conn::connect(port)?.metadata(PREFIX)?.0.contains(&2))
    })?;
    let mut conn = Conn::connect(port)?;
    create(
        &mut conn,
        FOLLOW_PREFIX,
        args.follower_partitions,
        args.topic_partitions,
        args.batch_topics,
        &[1, 2],
    )?;
    conn.create_topics(
        &[DATA_TOPIC.to_string()],
        args.data_partitions as i32,
        &[1, 2],
    )?;
    let replicated = (args.follower_partitions + args.data_partitions) as usize;
    f.follower_partitions = replicated as u32;
    poll_until("every follower ISR full", limit, || {
        Ok(conn.metadata(FOLLOW_PREFIX)?.1.full_isr >= replicated)
    })?;
    let follower = nodes.0[1].pid();
    settle(follower, Instant::now(), limit);
    f.follower_idle_cores = Some(cpu_over(follower, args.idle_secs));
    println!(
        "follower of {replicated} partitions: {:.1}% of a core idle",
        100.0 * f.follower_idle_cores.unwrap_or_default()
    );
    // Data into the data topic only, measured after the producer's JVM has started.
    let records = u64::from(args.data_rate) * (args.idle_secs + 10);
    let bootstrap = format!("127.0.0.1:{port}");
    let producer = {
        let classpath = classpath.to_string();
        let rate = args.data_rate.to_string();
        std::thread::spawn(move || {
            java(
                &classpath,
                &[
                    "org.apache.kafka.tools.ProducerPerformance",
                    "--topic",
                    DATA_TOPIC,
                    "--num-records",
                    &records.to_string(),
                    "--record-size",
                    "1024",
                    "--throughput",
                    &rate,
                    "--bootstrap-server",
                    &bootstrap,
                    "--command-property",
                    "acks=all",
                    "linger.ms=5",
                ],
                Duration::from_secs(600),
                false,
            )
        })
    };
    std::thread::sleep(Duration::from_secs(5));
    f.follower_data_cores = Some(cpu_over(follower, args.idle_secs));
    println!(
        "follower with {} records/s on {} partitions: {:.1}% of a core",
        args.data_rate,
        args.data_partitions,
        100.0 * f.follower_data_cores.unwrap_or_default()
    );
    producer
        .join()
        .map_err(|_| anyhow::anyhow!("producer thread panicked"))?
        .context("ProducerPerformance")?;
    Ok(())
}

/// A row of the report: its label and how to print one system's figure.
type Row<'a> = (&'static str, Box<dyn Fn(&Figures) -> String + 'a>);

fn print_report(args: &ScaleArgs, runs: &[(System, Figures)]) {
    println!();
    println!(
        "bench scale: {} partitions (topics of {}, RF 1, CreateTopics of {} topics at a time) \
         on one combined node; follower: {} + {} partitions RF 2 on a second broker, {} \
         records/s of 1 KiB into the {} data partitions",
        args.partitions,
        args.topic_partitions,
        args.batch_topics,
        args.follower_partitions,
        args.data_partitions,
        args.data_rate,
        args.data_partitions
    );
    let secs = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2} s"));
    let rows: Vec<Row> = vec![
        (
            "CreateTopics all answered",
            Box::new(move |f| secs(f.create_requests_s)),
        ),
        (
            "every partition led (Metadata)",
            Box::new(move |f| secs(f.leaders_s)),
        ),
        (
            "every partition readable",
            Box::new(move |f| secs(f.readable_s)),
        ),
        (
            "CPU settled (< 10% of a core)",
            Box::new(move |f| secs(f.settle_s)),
        ),
        (
            "idle CPU (% of a core)",
            Box::new(|f| {
                f.idle_cores
                    .map_or("-".into(), |c| format!("{:.1}%", 100.0 * c))
            }),
        ),
        (
            "RSS",
            Box::new(|f| {
                f.rss_bytes
                    .map_or("-".into(), |b| format!("{} MiB", b >> 20))
            }),
        ),
        (
            "RSS per partition",
            Box::new(move |f| {
                f.rss_bytes.map_or("-".into(), |b| {
                    format!("{:.1} KiB", b as f64 / 1024.0 / f64::from(args.partitions))
                })
            }),
        ),
        (
            "open file descriptors",
            Box::new(|f| f.fds.map_or("-".into(), |n| n.to_string())),
        ),
        (
            "clean shutdown (SIGTERM to exit)",
            Box::new(move |f| secs(f.clean_stop_s)),
        ),
        (
            "clean restart (start to serving)",
            Box::new(move |f| secs(f.clean_restart_s)),
        ),
        (
            "unclean restart (kill -9; start to serving)",
            Box::new(move |f| secs(f.unclean_restart_s)),
        ),
        (
            "follower CPU idle, per partition",
            Box::new(|f| per_partition(f.follower_idle_cores, f.follower_partitions)),
        ),
        (
            "follower CPU with data, per partition",
            Box::new(|f| per_partition(f.follower_data_cores, f.follower_partitions)),
        ),
    ];
    print!("{:<44}", "");
    for (system, _) in runs {
        print!(" | {:>24}", system.name());
    }
    println!();
    println!("{}", "-".repeat(44 + 27 * runs.len()));
    for (label, value) in &rows {
        print!("{label:<44}");
        for (_, f) in runs {
            print!(" | {:>24}", value(f));
        }
        println!();
    }
    for (system, f) in runs {
        println!(
            "{}: load average before its run {}",
            system.name(),
            f.run.load_before
        );
        if let Some(e) = &f.run.error {
            println!(
                "{} stopped early: {}",
                system.name(),
                e.lines().next().unwrap_or("")
            );
        }
    }
    println!(
        "times from the first CreateTopics; restarts from the process start; CPU as % of one \
         core; per partition: the follower's CPU / partitions it replicates (in millicores)"
    );
}

fn per_partition(cores: Option<f64>, partitions: u32) -> String {
    match cores {
        Some(c) if partitions > 0 => format!(
            "{:.1}% ({:.3} mc)",
            100.0 * c,
            1000.0 * c / f64::from(partitions)
        ),
        _ => "-".into(),
    }
}
