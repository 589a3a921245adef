//! `cargo xtask bench add-voter --partitions N`: the time from AddRaftVoter to the new voter
//! counting toward the high watermark, with N partitions of metadata, so the new voter first
//! fetches a large snapshot (issue 17). kraftd beside Apache Kafka 4.4.0 in one run. A
//! benchmark: it prints figures, asserts nothing.
//!
//! Each system runs two controller processes (no broker process): controller 1 formatted
//! `--standalone` (the whole quorum, so its leader), controller 2 `--no-initial-controllers`.
//! Controller 1 gets `--brokers` (10) stand-in brokers, registered and kept unfenced by
//! BrokerRegistration and BrokerHeartbeat on the wire (`add_voter_client.rs`; the controller
//! only needs registered, unfenced brokers to place replicas on), and N partitions as topics
//! of `--topic-partitions` (100) partitions, RF 3, placed by the controller, by CreateTopics
//! of `--batch-topics` (50) topics each. Then it waits for a snapshot that holds them all:
//! the controllers snapshot every 20 MiB of records (Kafka's default) and
//! `metadata.log.max.snapshot.interval.ms` (`--snapshot-interval-ms`) after the last one
//! once something commits; NoOp records are off (`metadata.max.idle.interval.ms=0`), so the
//! bench commits a one-partition marker topic every 2 s until that snapshot is on disk,
//! and nothing else is written afterwards that could start another snapshot mid-measure.
//! Both write 8 MiB metadata log segments (`metadata.log.segment.bytes`), so the leader
//! deletes its log below the snapshot and the joiner must fetch the snapshot (kraftd deletes
//! whole segments below its latest snapshot; Kafka only beyond `metadata.max.retention.bytes`,
//! set to 8 MiB too). The brokers' session timeout is 10 minutes, so a heartbeat delayed by a busy machine
//! fences nothing.
//!
//! Then controller 2 starts as an observer, and from its start the bench measures: its
//! listener open; the snapshot fetched (the leader's latest snapshot complete in its
//! metadata directory); caught up (its log end offset in the leader's DescribeQuorum at
//! least the high watermark). Then AddRaftVoter (v1, acknowledged once the new voter set
//! commits, as `kafka-metadata-quorum add-controller` sends it) goes to the leader, and it
//! measures the time to the response and to the new voter counting toward the high
//! watermark (DescribeQuorum lists it among the voters with a log end offset at least the
//! high watermark; polled every 10 ms from a second connection from the moment the request
//! is sent). Last, the snapshot's size and both processes' RSS (now and peak). Kafka's
//! controllers run with a `--kafka-heap` heap (`-Xms` = `-Xmx`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bench::kafka::kafka_random_uuid;
use crate::cluster::kraftd_random_uuid;
use anyhow::{bail, Context, Result};
use kraftd_protocol::Uuid;

use super::add_voter_client::QuorumConn;
use super::kafka::format_kafka_node;
use super::machine::status_bytes;
use super::produce::{loadavg, Against, System};
use super::scale::{poll_until, Launch, Node, Nodes};
use super::systems::{run_systems, Frame, RunFigures, RunStatus, SystemRun};
use crate::cluster::free_port;

const TOPIC_PREFIX: &str = "av-";
const MARKER_PREFIX: &str = "av-marker-";
/// The stand-in brokers' ids start after this (controllers are 1 and 2).
const FIRST_BROKER: i32 = 100;
const JOINER: i32 = 2;

#[derive(clap::Args, Debug)]
pub(super) struct AddVoterArgs {
    /// Partitions of metadata on the leader (RF 3).
    #[arg(long, default_value_t = 100_000)]
    partitions: u32,
    /// Partitions per topic.
    #[arg(long, default_value_t = 100)]
    topic_partitions: u32,
    /// Topics per CreateTopics request.
    #[arg(long, default_value_t = 50)]
    batch_topics: u32,
    /// Stand-in brokers registered on the leader.
    #[arg(long, default_value_t = 10)]
    brokers: u32,
    /// `metadata.log.max.snapshot.interval.ms` of both controllers.
    #[arg(long, default_value_t = 30_000)]
    snapshot_interval_ms: u64,
    /// Kafka's JVM heap per controller (-Xms and -Xmx).
    #[arg(long, default_value = "2g")]
    kafka_heap: String,
    /// Give up on a phase after this long (default 120 s + 1 s per 1,000 partitions).
    #[arg(long)]
    timeout_secs: Option<u64>,
    /// Keep the temp directory (node logs and data) afterwards.
    #[arg(long)]
    keep: bool,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    against: Against,
}

/// One system's figures, filled in as measured (a failed phase leaves the rest empty).
#[derive(Default)]
struct Figures {
    create_s: Option<f64>,
    created_end_offset: Option<i64>,
    snapshot_wait_s: Option<f64>,
    snapshot_end_offset: Option<i64>,
    snapshot_bytes: Option<u64>,
    listening_s: Option<f64>,
    snapshot_fetched_s: Option<f64>,
    caught_up_s: Option<f64>,
    add_response_s: Option<f64>,
    counted_s: Option<f64>,
    /// (RSS, peak RSS) of the leader and of the new voter at the end.
    leader_rss: Option<(u64, u64)>,
    voter_rss: Option<(u64, u64)>,
    load_measured: String,
    run: RunStatus,
}

/// A system's two controllers, unstarted, and what the bench needs to know of them.
struct Layout {
    nodes: Nodes,
    cluster_id: String,
    /// Each controller's metadata log directory (`__cluster_metadata-0`).
    metadata_dirs: [PathBuf; 2],
    joiner_directory_id: Uuid,
}

pub(super) fn add_voter(root: &Path, args: AddVoterArgs) -> Result<()> {
    if args.partitions == 0 || args.topic_partitions == 0 || args.batch_topics == 0 {
        bail!("--partitions, --topic-partitions and --batch-topics must be positive");
    }
    if args.brokers < 3 {
        bail!("--brokers must be at least 3 (RF 3)");
    }
    let frame = Frame {
        root,
        name: "add-voter",
        against: args.against,
        keep: args.keep,
        kafka_tools: false,
        what: "controller 1 standalone, controller 2 joining",
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

/// Writes both controllers' configs and formats them: 1 `--standalone`, 2
/// `--no-initial-controllers`.
fn layout(
    system: System,
    bin: &Path,
    classpath: &str,
    dir: &Path,
    heap: &str,
    args: &AddVoterArgs,
) -> Result<Layout> {
    let ports = [free_port()?, free_port()?];
    let cluster_id = match system {
        System::Kraftd => kraftd_random_uuid(bin)?,
        System::Kafka => kafka_random_uuid(classpath)?,
    };
    let mut nodes = Nodes(Vec::new());
    let mut metadata_dirs = Vec::new();
    for (i, port) in ports.into_iter().enumerate() {
        let id = i as u32 + 1;
        let node_dir = dir.join(format!("controller-{id}"));
        std::fs::create_dir_all(node_dir.join("logs"))?;
        let data = node_dir.join("data");
        let config = node_dir.join("server.properties");
        let mut text = format!(
            "# written by cargo xtask bench add-voter\nprocess.roles=controller\nnode.id={id}\n\
             controller.quorum.bootstrap.servers=127.0.0.1:{}\n\
             listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n\
             controller.quorum.auto.join.enable=false\nlog.dirs={}\n\
             broker.session.timeout.ms=600000\nmetadata.max.idle.interval.ms=0\n\
             metadata.log.max.snapshot.interval.ms={}\nmetadata.log.segment.bytes=8388608\n",
            ports[0],
            data.display(),
            args.snapshot_interval_ms
        );
        let flag = if id == 1 {
            "--standalone"
        } else {
            "--no-initial-controllers"
        };
        let launch = match system {
            System::Kraftd => {
                text.push_str(&format!("metrics.port={}\n", free_port()?));
                std::fs::write(&config, text)?;
                crate::cluster::format_node(bin, &config, &cluster_id, id, &[flag])?;
                Launch::Kraftd {
                    bin: bin.to_path_buf(),
                    command: "controller",
                    config,
                    log: node_dir.join("kraftd.log"),
                }
            }
            System::Kafka => {
                text.push_str(
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT\n\
                     metadata.max.retention.bytes=8388608\n",
                );
                std::fs::write(&config, text)?;
                format_kafka_node(classpath, &cluster_id, &config, &[flag])
                    .with_context(|| format!("formatting Kafka controller {id}"))?;
                Launch::Kafka {
                    classpath: classpath.to_string(),
                    node_dir: node_dir.clone(),
                    config,
                    xmx: format!("-Xmx{heap}"),
                }
            }
        };
        metadata_dirs.push(data.join("__cluster_metadata-0"));
        nodes.0.push(Node {
            port,
            launch,
            child: None,
        });
    }
    let meta = std::fs::read_to_string(dir.join("controller-2/data/meta.properties"))?;
    let joiner_directory_id = meta
        .lines()
        .find_map(|l| l.strip_prefix("directory.id="))
        .and_then(|v| Uuid::from_base64(v.trim()))
        .context("controller 2's meta.properties has no directory.id")?;
    Ok(Layout {
        nodes,
        cluster_id,
        metadata_dirs: [metadata_dirs.remove(0), metadata_dirs.remove(0)],
        joiner_directory_id,
    })
}

/// The newest complete snapshot (`<end offset>-<epoch>.checkpoint`) in a metadata log
/// directory: its end offset and size.
fn latest_snapshot(dir: &Path) -> Option<(i64, u64)> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let end = name
                .strip_suffix(".checkpoint")?
                .split('-')
                .next()?
                .parse()
                .ok()?;
            Some((end, e.metadata().ok()?.len()))
        })
        .max()
}

/// Registers the stand-in brokers and heartbeats until every one is unfenced; returns
/// their (id, epoch).
fn register_brokers(
    conn: &mut QuorumConn,
    cluster_id: &str,
    count: u32,
    limit: Duration,
) -> Result<Vec<(i32, i64)>> {
    let mut brokers = Vec::new();
    for i in 1..=count as i32 {
        let id = FIRST_BROKER + i;
        brokers.push((id, conn.register_broker(cluster_id, id)?));
    }
    poll_until("the stand-in brokers unfenced", limit, || {
        let mut fenced = 0;
        for &(id, epoch) in &brokers {
            fenced += usize::from(conn.heartbeat(id, epoch)?);
        }
        Ok(fenced == 0)
    })?;
    Ok(brokers)
}

/// Heartbeats the stand-in brokers every second from a thread of its own until `stop`.
fn keep_alive(
    port: u16,
    brokers: Vec<(i32, i64)>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut conn = None;
        while !stop.load(Ordering::Relaxed) {
            if conn.is_none() {
                conn = QuorumConn::connect(port).ok();
            }
            if let Some(c) = conn.as_mut() {
                for &(id, epoch) in &brokers {
                    if c.heartbeat(id, epoch).is_err() {
                        conn = None;
                        break;
                    }
                }
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    })
}

/// Creates `count` partitions as topics `prefix{i}` of `per_topic` partitions, RF 3,
/// `batch` topics per request, printing progress.
fn create(conn: &mut QuorumConn, count: u32, per_topic: u32, batch: u32) -> Result<()> {
    let topics = count.div_ceil(per_topic);
    let names: Vec<(String, u32)> = (0..topics)
        .map(|t| {
            let partitions = per_topic.min(count - t * per_topic);
            (format!("{TOPIC_PREFIX}{t:06}"), partitions)
        })
        .collect();
    let t0 = Instant::now();
    let mut done = 0u32;
    let mut next_report = count / 10;
    for chunk in names.chunks(batch as usize) {
        // A last, shorter topic goes in its own request (one partition count per request).
        let full: Vec<String> = chunk
            .iter()
            .filter(|(_, p)| *p == per_topic)
            .map(|(n, _)| n.clone())
            .collect();
        if !full.is_empty() {
            conn.conn.create_topics_placed(&full, per_topic as i32, 3)?;
        }
        for (name, p) in chunk.iter().filter(|(_, p)| *p != per_topic) {
            conn.conn
                .create_topics_placed(std::slice::from_ref(name), *p as i32, 3)?;
        }
        done += chunk.iter().map(|(_, p)| p).sum::<u32>();
        if done >= next_report {
            println!(
                "  {done} partitions after {:.1} s",
                t0.elapsed().as_secs_f64()
            );
            next_report += count / 10;
        }
    }
    Ok(())
}

/// Whether `id` is a voter whose log end offset is at least the high watermark.
fn counts_toward_hw(
    p: &kraftd_protocol::messages::describe_quorum_response::PartitionData,
    id: i32,
) -> bool {
    p.current_voters
        .iter()
        .any(|v| v.replica_id == id && v.log_end_offset >= p.high_watermark)
}

fn drive(
    run: &SystemRun<'_>,
    args: &AddVoterArgs,
    nodes_out: &mut Nodes,
    f: &mut Figures,
) -> Result<()> {
    let SystemRun {
        system,
        bin,
        classpath,
        dir,
    } = *run;
    let limit = Duration::from_secs(
        args.timeout_secs
            .unwrap_or(120 + u64::from(args.partitions) / 1000),
    );
    let Layout {
        nodes,
        cluster_id,
        metadata_dirs,
        joiner_directory_id,
    } = layout(system, bin, classpath, dir, &args.kafka_heap, args)?;
    *nodes_out = nodes;
    let nodes = nodes_out;
    let leader_port = nodes.0[0].port;
    nodes.0[0].start()?;
    poll_until("controller 1 leading", limit, || {
        Ok(QuorumConn::connect(leader_port)?
            .describe_quorum()?
            .leader_id
            == 1)
    })?;
    println!("controller 1 leads (pid {})", nodes.0[0].pid());
    let mut conn = QuorumConn::connect(leader_port)?;
    let brokers = register_brokers(&mut conn, &cluster_id, args.brokers, limit)?;
    println!("{} stand-in brokers registered and unfenced", brokers.len());
    let stop = Arc::new(AtomicBool::new(false));
    let heartbeats = keep_alive(leader_port, brokers, stop.clone());
    let result = measure(
        args,
        nodes,
        &cluster_id,
        &metadata_dirs,
        joiner_directory_id,
        limit,
        &mut conn,
        f,
    );
    stop.store(true, Ordering::Relaxed);
    let _ = heartbeats.join();
    result
}

#[allow(clippy::too_many_arguments)]
fn measure(
    args: &AddVoterArgs,
    nodes: &mut Nodes,
    cluster_id: &str,
    metadata_dirs: &[PathBuf; 2],
    joiner_directory_id: Uuid,
    limit: Duration,
    conn: &mut QuorumConn,
    f: &mut Figures,
) -> Result<()> {
    let (leader_port, joiner_port) = (nodes.0[0].port, nodes.0[1].port);
    // The metadata.
    let t0 = Instant::now();
    create(
        conn,
        args.partitions,
        args.topic_partitions,
        args.batch_topics,
    )?;
    f.create_s = Some(t0.elapsed().as_secs_f64());
    let created_end = conn.describe_quorum()?.high_watermark;
    f.created_end_offset = Some(created_end);
    println!(
        "{} partitions created in {:.1} s; metadata log end {created_end}",
        args.partitions,
        t0.elapsed().as_secs_f64()
    );

    // A snapshot holding all of it.
    let t0 = Instant::now();
    let mut markers = 0;
    let mut last_marker = Instant::now();
    let (snapshot_end, snapshot_bytes) = loop {
        if let Some((end, bytes)) = latest_snapshot(&metadata_dirs[0]) {
            if end >= created_end {
                break (end, bytes);
            }
        }
        if t0.elapsed() > limit {
            bail!("no snapshot past offset {created_end} after {limit:?}");
        }
        if last_marker.elapsed() >= Duration::from_secs(2) {
            markers += 1;
            conn.conn
                .create_topics_placed(&[format!("{MARKER_PREFIX}{markers:04}")], 1, 3)?;
            last_marker = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    f.snapshot_wait_s = Some(t0.elapsed().as_secs_f64());
    f.snapshot_end_offset = Some(snapshot_end);
    f.snapshot_bytes = Some(snapshot_bytes);
    // The snapshot file appears once written; let it settle (the leader's own log trimming).
    std::thread::sleep(Duration::from_secs(2));
    let hw = conn.describe_quorum()?.high_watermark;
    println!(
        "snapshot at offset {snapshot_end}: {:.1} MiB after {:.1} s ({markers} marker topics); \
         high watermark {hw}",
        snapshot_bytes as f64 / 1048576.0,
        t0.elapsed().as_secs_f64()
    );

    // The joiner, as an observer.
    f.load_measured = loadavg();
    let t0 = Instant::now();
    nodes.0[1].start()?;
    println!(
        "controller 2 started (pid {}), load average {}",
        nodes.0[1].pid(),
        f.load_measured
    );
    loop {
        let elapsed = t0.elapsed().as_secs_f64();
        if f.listening_s.is_none()
            && std::net::TcpStream::connect(("127.0.0.1", joiner_port)).is_ok()
        {
            f.listening_s = Some(elapsed);
        }
        // The leader's snapshot, not one the joiner took itself while replaying the log.
        let leaders = latest_snapshot(&metadata_dirs[0]).map(|(end, _)| end);
        if f.snapshot_fetched_s.is_none()
            && latest_snapshot(&metadata_dirs[1]).map(|(end, _)| end) == leaders
        {
            f.snapshot_fetched_s = Some(elapsed);
        }
        let p = conn.describe_quorum()?;
        if p.observers
            .iter()
            .any(|o| o.replica_id == JOINER && o.log_end_offset >= p.high_watermark)
        {
            f.caught_up_s = Some(elapsed);
            break;
        }
        if let Some(status) = nodes.0[1]
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
        {
            bail!("controller 2 exited ({status})");
        }
        if t0.elapsed() > limit {
            bail!("controller 2 not caught up after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!(
        "controller 2: listening {:.2} s, snapshot fetched {:.2} s, caught up {:.2} s after its start",
        f.listening_s.unwrap_or(f64::NAN),
        f.snapshot_fetched_s.unwrap_or(f64::NAN),
        f.caught_up_s.unwrap_or(f64::NAN)
    );

    // AddRaftVoter, watched from a second connection.
    let mut watch_conn = QuorumConn::connect(leader_port)?;
    let sent = Instant::now();
    let watcher = std::thread::spawn(move || -> Result<f64> {
        loop {
            if counts_toward_hw(&watch_conn.describe_quorum()?, JOINER) {
                return Ok(sent.elapsed().as_secs_f64());
            }
            if sent.elapsed() > limit {
                bail!("controller 2 not counted toward the high watermark after {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let timeout_ms = i32::try_from(limit.as_millis()).unwrap_or(i32::MAX);
    let answer = conn.add_raft_voter(
        cluster_id,
        JOINER,
        joiner_directory_id,
        joiner_port,
        timeout_ms,
    )?;
    f.add_response_s = Some(sent.elapsed().as_secs_f64());
    if let Err(refused) = answer {
        bail!("AddRaftVoter refused: {refused}");
    }
    f.counted_s = Some(
        watcher
            .join()
            .map_err(|_| anyhow::anyhow!("DescribeQuorum watcher panicked"))??,
    );
    println!(
        "AddRaftVoter answered after {:.3} s; controller 2 counts toward the HW after {:.3} s",
        f.add_response_s.unwrap_or(f64::NAN),
        f.counted_s.unwrap_or(f64::NAN)
    );
    let rss = |node: &Node| {
        (
            status_bytes(node.pid(), "VmRSS:"),
            status_bytes(node.pid(), "VmHWM:"),
        )
    };
    f.leader_rss = Some(rss(&nodes.0[0]));
    f.voter_rss = Some(rss(&nodes.0[1]));
    Ok(())
}

/// A row of the report: its label and how to print one system's figure.
type Row<'a> = (&'static str, Box<dyn Fn(&Figures) -> String + 'a>);

fn print_report(args: &AddVoterArgs, runs: &[(System, Figures)]) {
    println!();
    println!(
        "bench add-voter: {} partitions (topics of {}, RF 3 over {} stand-in brokers) on a \
         standalone controller; a second controller joins as observer, then AddRaftVoter",
        args.partitions, args.topic_partitions, args.brokers
    );
    let secs = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2} s"));
    let mib = |v: Option<(u64, u64)>| {
        v.map_or("-".to_string(), |(now, peak)| {
            format!("{} MiB (peak {})", now >> 20, peak >> 20)
        })
    };
    let rows: Vec<Row> = vec![
        (
            "CreateTopics all answered",
            Box::new(move |f| secs(f.create_s)),
        ),
        (
            "metadata log end after creation",
            Box::new(|f| f.created_end_offset.map_or("-".into(), |o| o.to_string())),
        ),
        (
            "snapshot end offset",
            Box::new(|f| f.snapshot_end_offset.map_or("-".into(), |o| o.to_string())),
        ),
        (
            "snapshot size",
            Box::new(|f| {
                f.snapshot_bytes
                    .map_or("-".into(), |b| format!("{:.1} MiB", b as f64 / 1048576.0))
            }),
        ),
        (
            "joiner: listener open",
            Box::new(move |f| secs(f.listening_s)),
        ),
        (
            "joiner: snapshot fetched",
            Box::new(move |f| secs(f.snapshot_fetched_s)),
        ),
        (
            "joiner: caught up (LEO >= HW)",
            Box::new(move |f| secs(f.caught_up_s)),
        ),
        (
            "AddRaftVoter -> response",
            Box::new(move |f| secs(f.add_response_s)),
        ),
        (
            "AddRaftVoter -> counts toward the HW",
            Box::new(move |f| secs(f.counted_s)),
        ),
        ("leader RSS", Box::new(move |f| mib(f.leader_rss))),
        ("new voter RSS", Box::new(move |f| mib(f.voter_rss))),
    ];
    print!("{:<40}", "");
    for (system, _) in runs {
        print!(" | {:>24}", system.name());
    }
    println!();
    println!("{}", "-".repeat(40 + 27 * runs.len()));
    for (label, value) in &rows {
        print!("{label:<40}");
        for (_, f) in runs {
            print!(" | {:>24}", value(f));
        }
        println!();
    }
    for (system, f) in runs {
        println!(
            "{}: load average before its run {}, when the joiner started {}",
            system.name(),
            f.run.load_before,
            f.load_measured
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
        "joiner times from its process start (a JVM's start included for Kafka); AddRaftVoter \
         times from sending it; Kafka's controllers have a {} heap",
        args.kafka_heap
    );
}
