//! `cargo xtask bench cleaner [--quick]`: the log cleaner's throughput (MB/s of dirty log
//! cleaned, one thread), kraftd's beside Apache Kafka 4.4.0's on the same log, same machine,
//! one run. A benchmark: it prints figures and asserts nothing.
//!
//! kraftd: `cargo bench -p kraftd-log --bench cleaner` (its doc says what it generates and
//! measures), its output parsed; it also copies the generated segment files, before cleaning
//! them, into a directory of this run (`KRAFTD_BENCH_CLEANER_COPY_TO`).
//!
//! Kafka: one `kafka.Kafka` JVM (combined controller and broker, 1 GiB heap) from the jars
//! the tests use, with `log.cleaner.threads=1`, `log.cleaner.backoff.ms=100` and the same
//! `log.cleaner.dedupe.buffer.size` (128 MiB) and I/O buffer as kraftd's bench. A topic of
//! one partition is created (`cleanup.policy=compact`, `min.cleanable.dirty.ratio=0.01`,
//! `segment.bytes` as the bench's 64 MiB, `retention.ms=-1`), the broker is stopped
//! (cleanly), the partition's segments and producer snapshots are replaced by the copied
//! ones (Kafka's `partition.metadata` and `leader-epoch-checkpoint` are kept: the records are
//! written in leader epoch 0 from offset 0, as Kafka's own for a new topic), the recovery
//! point is set to the log end offset so nothing is recovered at start, and the broker is
//! started again: its cleaner thread cleans the whole log (every segment but the empty active
//! one) in one go and logs a summary (`LogCleaner.recordStats`), whose
//! "... MB of log processed in ... seconds (... MB/sec)" line is parsed. Kafka's MB is MiB.
//! Both sides clean once in a fresh process (Kafka's JIT warms up during its clean, as
//! kraftd's page faults on its offset map are in its own); the files are in the page cache
//! for both (just written or copied). `KRAFTD_BENCH_CLEANER_DIR` moves both sides' files
//! (default: the system temp dir for kraftd's, `target/bench-cleaner/` for Kafka's); the
//! segment bytes are removed after the run, Kafka's `server.log` kept.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::bench::kafka::kafka_random_uuid;
use anyhow::{bail, Context, Result};

use super::cluster::{BenchNode, Cluster};
use super::kafka::{format_kafka_node, java, kafka_classpath, spawn_kafka_node};
use crate::cluster::free_port;

const TOPIC: &str = "bench-cleaner";
const DEDUPE_BUFFER: u64 = 128 * 1024 * 1024;
const IO_BUFFER: u64 = 512 * 1024;
const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;

#[derive(clap::Args, Debug)]
pub(super) struct CleanerArgs {
    /// A 50 MiB log over 100,000 keys instead of 200 MiB over 1,000,000.
    #[arg(long)]
    quick: bool,
}

/// What kraftd's bench printed.
#[derive(Debug, Default)]
struct Ours {
    dirty_mib: f64,
    secs: f64,
    mib_per_sec: f64,
    plain_read_mib_per_sec: f64,
    map_mib_per_million_keys: f64,
    records: u64,
    log_end_offset: i64,
    /// The log's size after cleaning.
    end_mib: f64,
}

/// Kafka's summary of its clean.
#[derive(Debug, Default)]
struct Theirs {
    mib: f64,
    secs: f64,
    mib_per_sec: f64,
    summary: String,
}

pub(super) fn cleaner(root: &Path, args: CleanerArgs) -> Result<()> {
    let (mb, keys) = if args.quick {
        (50u64, 100_000u64)
    } else {
        (200, 1_000_000)
    };
    let classpath = kafka_classpath(root)?;
    // Kafka's side under target/ (its logs stay there for a look after the run), or under
    // `KRAFTD_BENCH_CLEANER_DIR` (where the bench writes its log too); the copy of the
    // generated log beside it.
    let work = match std::env::var_os("KRAFTD_BENCH_CLEANER_DIR") {
        Some(d) if !d.is_empty() => Path::new(&d).join("kraftd-bench-cleaner"),
        _ => root.join("target").join("bench-cleaner"),
    };
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let copy = work.join("segments");

    println!("==> kraftd: cargo bench -p kraftd-log --bench cleaner ({mb} MiB, {keys} keys)");
    let ours = run_ours(root, mb, keys, &copy)?;

    println!("==> Kafka 4.4.0: one broker cleaning the same segment files");
    let theirs = run_kafka(&classpath, &work, &copy, ours.log_end_offset);
    // The logs' bytes go; Kafka's own log (kafka/logs/) stays for a look.
    let _ = std::fs::remove_dir_all(&copy);
    let _ = std::fs::remove_dir_all(work.join("kafka").join("data"));
    let theirs = theirs?;

    println!();
    println!(
        "cleaner benchmark on one host ({} cores): {} records over {keys} keys, 100 per batch, \
         100 B values, all dirty; 1 cleaner thread, dedupe buffer {} MiB, I/O buffer {} KiB",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        ours.records,
        DEDUPE_BUFFER >> 20,
        IO_BUFFER >> 10,
    );
    println!(
        "{:>14} {:>14} {:>14} {:>10} {:>16} {:>22}",
        "dirty log MiB",
        "kraftd MiB/s",
        "Kafka MiB/s",
        "ratio",
        "plain read MiB/s",
        "map MiB / million keys"
    );
    println!(
        "{:>14.1} {:>14.0} {:>14.0} {:>10.2} {:>16.0} {:>22.1}",
        ours.dirty_mib,
        ours.mib_per_sec,
        theirs.mib_per_sec,
        ours.mib_per_sec / theirs.mib_per_sec,
        ours.plain_read_mib_per_sec,
        ours.map_mib_per_million_keys,
    );
    println!(
        "  kraftd: {:.1} MiB in {:.3} s; Kafka: {:.1} MiB in {:.1} s (Kafka prints seconds to 0.1, \
         its MB/sec from milliseconds)",
        ours.dirty_mib, ours.secs, theirs.mib, theirs.secs
    );
    println!(
        "  log after cleaning: kraftd {:.1} MiB; Kafka's summary below (End size)",
        ours.end_mib
    );
    println!(
        "  map MiB per million keys: 24 B entries (16 B MD5 + 8 B offset) at load factor 0.9, \
         the same layout as Kafka's SkimpyOffsetMap"
    );
    println!("  Kafka's summary:");
    for line in theirs.summary.lines() {
        println!("    {}", line.trim());
    }
    Ok(())
}

/// Runs kraftd's bench and parses its output.
fn run_ours(root: &Path, mb: u64, keys: u64, copy: &Path) -> Result<Ours> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args(["bench", "-p", "kraftd-log", "--bench", "cleaner"])
        .env("KRAFTD_BENCH_CLEANER_MB", mb.to_string())
        .env("KRAFTD_BENCH_CLEANER_KEYS", keys.to_string())
        .env("KRAFTD_BENCH_CLEANER_COPY_TO", copy)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running cargo bench")?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    for line in stdout.lines() {
        println!("    {line}");
    }
    if !out.status.success() {
        bail!(
            "cargo bench -p kraftd-log --bench cleaner failed: {}",
            out.status
        );
    }
    let mut ours = Ours::default();
    for line in stdout.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("log: ") {
            // "log: X MiB, N records over K keys, ..."
            ours.records = word_after(rest, "MiB,").context("records")?;
        } else if let Some(rest) = line.strip_prefix("segments copied to ") {
            ours.log_end_offset = word_after(rest, "offset")
                .map(|s: String| s.trim_end_matches(')').to_string())
                .context("log end offset")?
                .parse()?;
        } else if line.starts_with("plain read") {
            ours.plain_read_mib_per_sec = word_after(line, "=").context("plain read")?;
        } else if let Some(rest) = line.strip_prefix("clean (1 thread") {
            // "...: X MiB dirty in Y s (...) = Z MiB/s; ..."
            let after = rest.split_once("): ").context("clean line")?.1;
            ours.dirty_mib = first_word(after).context("dirty MiB")?;
            ours.secs = word_after(after, "dirty in").context("clean secs")?;
            ours.mib_per_sec = word_after(after, ") =").context("clean MiB/s")?;
        } else if line.starts_with("records read") {
            ours.end_mib = word_after(line, "log now").context("log now")?;
        } else if let Some(rest) = line.strip_prefix("per million keys:") {
            // "... A MiB of entries (24 B each), B MiB of dedupe buffer at load factor ..."
            let (_, b) = rest.split_once("),").context("per million keys")?;
            ours.map_mib_per_million_keys = first_word(b).context("dedupe MiB")?;
        }
    }
    if ours.mib_per_sec == 0.0 || ours.log_end_offset == 0 {
        bail!("could not parse the bench's output");
    }
    Ok(ours)
}

fn first_word<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.split_whitespace().next()?.replace(',', "").parse().ok()
}

fn word_after<T: std::str::FromStr>(s: &str, marker: &str) -> Option<T> {
    first_word(&s[s.find(marker)? + marker.len()..])
}

/// Kafka's broker cleans the copied segments; its summary, parsed.
fn run_kafka(classpath: &str, work: &Path, copy: &Path, log_end_offset: i64) -> Result<Theirs> {
    let node_dir = work.join("kafka");
    let data = node_dir.join("data");
    std::fs::create_dir_all(node_dir.join("logs"))?;
    let (port, controller_port) = (free_port()?, free_port()?);
    let config = node_dir.join("server.properties");
    std::fs::write(
        &config,
        format!(
            "# written by cargo xtask bench cleaner\n\
             process.roles=broker,controller\nnode.id=1\n\
             controller.quorum.voters=1@127.0.0.1:{controller_port}\n\
             listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}\n\
             inter.broker.listener.name=PLAINTEXT\ncontroller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
             offsets.topic.replication.factor=1\noffsets.topic.num.partitions=1\n\
             log.dirs={}\n\
             log.cleaner.threads=1\nlog.cleaner.backoff.ms=100\n\
             log.cleaner.dedupe.buffer.size={DEDUPE_BUFFER}\nlog.cleaner.io.buffer.size={IO_BUFFER}\n",
            data.display()
        ),
    )?;
    let cluster_id = kafka_random_uuid(classpath)?;
    format_kafka_node(classpath, &cluster_id, &config, &[])?;

    // First start: the topic.
    let mut cluster = start(classpath, &node_dir, &config, port)?;
    let out = java(
        classpath,
        &[
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            &cluster.bootstrap(),
            "--create",
            "--topic",
            TOPIC,
            "--partitions",
            "1",
            "--replication-factor",
            "1",
            "--config",
            "cleanup.policy=compact",
            "--config",
            "min.cleanable.dirty.ratio=0.01",
            "--config",
            &format!("segment.bytes={SEGMENT_BYTES}"),
            "--config",
            "retention.ms=-1",
        ],
        Duration::from_secs(60),
        false,
    )?;
    print!("{out}");
    let partition = data.join(format!("{TOPIC}-0"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !partition.join("partition.metadata").is_file() {
        if Instant::now() > deadline {
            bail!("Kafka did not create {}", partition.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    cluster.stop();

    // The generated log in place of Kafka's empty one.
    for entry in std::fs::read_dir(&partition)?.flatten() {
        let name = entry.file_name();
        if name != "partition.metadata" && name != "leader-epoch-checkpoint" {
            std::fs::remove_file(entry.path())?;
        }
    }
    for entry in std::fs::read_dir(copy)?.flatten() {
        std::fs::copy(entry.path(), partition.join(entry.file_name()))?;
    }
    let epochs = std::fs::read_to_string(partition.join("leader-epoch-checkpoint"))?;
    println!(
        "Kafka's leader-epoch-checkpoint kept: {:?}",
        epochs.replace('\n', " ")
    );
    // Nothing to recover: the recovery point at the log end; no cleaner checkpoint.
    std::fs::write(
        data.join("recovery-point-offset-checkpoint"),
        format!("0\n1\n{TOPIC} 0 {log_end_offset}\n"),
    )?;
    let _ = std::fs::remove_file(data.join("cleaner-offset-checkpoint"));

    // Second start: the cleaner.
    let server_log = node_dir.join("logs/server.log");
    let skip = std::fs::read_to_string(&server_log)
        .unwrap_or_default()
        .len();
    let started = Instant::now();
    let mut cluster = start(classpath, &node_dir, &config, port)?;
    println!(
        "Kafka restarted with the generated log in {:.1} s; waiting for its cleaner",
        started.elapsed().as_secs_f64()
    );
    let marker = format!("cleaned log {TOPIC}-0");
    let deadline = Instant::now() + Duration::from_secs(600);
    let summary = loop {
        let text = std::fs::read_to_string(&server_log).unwrap_or_default();
        let text = text.get(skip..).unwrap_or("");
        if let Some(at) = text.find(&marker) {
            // The summary runs to "size reduction" (its last line).
            let from = text[..at].rfind("\n[").map_or(at, |i| i + 1);
            if let Some(end) = text[at..].find("fewer messages)") {
                break text[from..at + end + "fewer messages)".len()].to_string();
            }
        }
        if let Some(status) = cluster.nodes[0]
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
        {
            bail!("Kafka exited ({status}); see {}", server_log.display());
        }
        if Instant::now() > deadline {
            cluster.stop();
            bail!("no clean of {TOPIC}-0 in {}", server_log.display());
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    cluster.stop();

    // "\t1,234.5 MB of log processed in 5.6 seconds (220.4 MB/sec)."
    let line = summary
        .lines()
        .find(|l| l.contains("MB of log processed"))
        .context("no 'MB of log processed' line")?;
    Ok(Theirs {
        mib: first_word(line.trim()).context("Kafka MB")?,
        secs: word_after(line, "processed in").context("Kafka seconds")?,
        mib_per_sec: word_after(line, "(").context("Kafka MB/sec")?,
        summary,
    })
}

/// Starts the single Kafka node and waits for it to be registered and unfenced.
fn start(classpath: &str, node_dir: &Path, config: &Path, port: u16) -> Result<Cluster> {
    let child = spawn_kafka_node(classpath, node_dir, config, "-Xmx1g")?;
    println!("started Kafka (broker and controller) pid {}", child.id());
    let mut cluster = Cluster {
        nodes: vec![BenchNode {
            id: 1,
            broker_port: Some(port),
            extra_ports: Vec::new(),
            child: Some(child),
            controller_port: None,
            respawn: None,
        }],
    };
    cluster.wait_brokers(Duration::from_secs(120))?;
    Ok(cluster)
}
