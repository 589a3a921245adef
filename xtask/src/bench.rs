//! `cargo xtask bench produce`: a benchmark, not a test. It prints figures and never asserts
//! on them.
//!
//! It runs kraftd, then Apache Kafka (`--against kraftd|kafka|both`, both by default), one
//! after the other on the same machine, and prints one table with a row per system and batch
//! size and the ratio kraftd/Kafka per batch size.
//!
//! kraftd: 3 controllers and 3 brokers as real release-build `kraftd` processes in a fresh
//! temp directory (configured as `cargo xtask cluster-up` configures them). Kafka: Apache
//! Kafka 4.4.0 from the same jars (`kafka.Kafka`, formatted with `kafka.tools.StorageTool`),
//! 1 controller and 3 brokers, each JVM with a 512 MiB heap: 3 controller JVMs beside 3
//! broker JVMs would take a good part of a small machine's cores for the quorum alone, and the
//! single controller sits outside the produce path (it only holds metadata). Both get a topic
//! with replication factor 3, `min.insync.replicas=2` and the same partitions through Kafka's
//! stock `TopicCommand`, then Kafka's own load generators from the jars the tests use
//! (`target/kafka-jars/`): `ProducerPerformance` (kafka-producer-perf-test) with `acks=all`,
//! 1 KiB records and `batch.size` 64 KiB, 256 KiB and 1 MiB, then `EndToEndLatency` (one
//! record at a time, produce to consume). Beside them it measures the machine's limit once:
//! loopback TCP throughput and disk write bandwidth (plus the latency of a 4 KiB
//! `fdatasync`), and prints min(loopback, disk) / 3 copies and the ratio achieved / limit.
//! Each cluster is stopped before the next starts, on error too (and on Ctrl-C: the nodes
//! share this process group).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::cluster::{alive_brokers, free_port};

/// Replicas per record: the topic's replication factor, so the bytes each record costs.
const COPIES: u32 = 3;
const RECORD_SIZE: usize = 1024;
const BATCH_SIZES: [usize; 3] = [64 << 10, 256 << 10, 1 << 20];
const MIB: f64 = (1 << 20) as f64;
/// Jars whose presence means `target/kafka-jars/` is complete (as the tests check).
const REQUIRED_JARS: [&str; 4] = [
    "kafka-tools-4.4.0.jar",
    "kafka-clients-4.4.0.jar",
    "kafka-server-common-4.4.0.jar",
    "argparse4j-0.7.0.jar",
];

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand, Debug)]
enum What {
    /// Produce throughput and latency (acks=all, RF 3) beside the machine's limit.
    Produce(ProduceArgs),
}

#[derive(clap::Args, Debug)]
struct ProduceArgs {
    /// 1 KiB records per batch size (default 300000, or 40000 with --quick).
    #[arg(long)]
    records: Option<u64>,
    /// A smaller run: fewer records, 256 MiB limit measurements.
    #[arg(long)]
    quick: bool,
    /// The topic's partitions (3: one leader per broker).
    #[arg(long, default_value_t = 3)]
    partitions: u32,
    /// The producer's linger.ms.
    #[arg(long, default_value_t = 5)]
    linger_ms: u64,
    /// Records the end-to-end latency run sends one at a time (default 2000, 300 with --quick).
    #[arg(long)]
    e2e_records: Option<u64>,
    /// Keep the temp directory (node logs and data) afterwards.
    #[arg(long)]
    keep: bool,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    against: Against,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Against {
    Kraftd,
    Kafka,
    Both,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum System {
    Kraftd,
    Kafka,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Kraftd => "kraftd",
            System::Kafka => "Kafka",
        }
    }

    fn topology(self) -> &'static str {
        match self {
            System::Kraftd => "3 controllers + 3 brokers",
            System::Kafka => "1 controller + 3 brokers, -Xmx512m per JVM",
        }
    }
}

/// One system's figures.
struct SystemRun {
    system: System,
    perf: Vec<PerfResult>,
    e2e: E2e,
    /// Why EndToEndLatency failed after printing its figures, if it did.
    e2e_note: Option<String>,
    /// /proc/loadavg's 1, 5 and 15 minute averages just before the cluster started.
    load_before: String,
}

pub fn run(root: &Path, args: BenchArgs) -> Result<()> {
    match args.what {
        What::Produce(args) => produce(root, args),
    }
}

/// One ProducerPerformance summary.
#[derive(Debug, Default, Clone)]
struct PerfResult {
    batch_size: usize,
    records_per_sec: f64,
    mib_per_sec: f64,
    avg_ms: f64,
    p50_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    /// CPU the three brokers used, in cores (100% = one core), and the whole machine's busy
    /// share of all its cores, over the run.
    broker_cores: f64,
    machine_busy: f64,
}

struct Limits {
    loopback_mib_s: f64,
    disk_mib_s: f64,
    fsync_p50_us: f64,
    fsync_p99_us: f64,
}

fn produce(root: &Path, args: ProduceArgs) -> Result<()> {
    let started = Instant::now();
    let records = args
        .records
        .unwrap_or(if args.quick { 40_000 } else { 300_000 });
    let e2e_records = args
        .e2e_records
        .unwrap_or(if args.quick { 300 } else { 2000 });
    let systems = match args.against {
        Against::Kraftd => vec![System::Kraftd],
        Against::Kafka => vec![System::Kafka],
        Against::Both => vec![System::Kraftd, System::Kafka],
    };
    let classpath = kafka_classpath(root)?;
    let bin = root.join("target").join("release").join("kraftd");
    if systems.contains(&System::Kraftd) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        crate::run(root, &cargo, &["build", "--release", "--bin", "kraftd"])?;
    }

    let dir = std::env::temp_dir().join(format!("kraftd-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    println!("bench directory: {}", dir.display());
    let load_start = loadavg();
    println!("load average before the bench: {load_start}");

    // The machine's limit first, on an idle machine.
    let limit_bytes: u64 = if args.quick { 256 << 20 } else { 2 << 30 };
    let disk_bytes: u64 = if args.quick { 256 << 20 } else { 1 << 30 };
    let limits = measure_limits(&dir, limit_bytes, disk_bytes)?;

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
            System::Kraftd => Cluster::start_kraftd(&bin, &sys_dir),
            System::Kafka => Cluster::start_kafka(&classpath, &sys_dir),
        };
        let mut cluster = cluster.inspect_err(|_| {
            eprintln!(
                "{} did not start; its logs are in {} (kept)",
                system.name(),
                sys_dir.display()
            );
        })?;
        let outcome = drive(&cluster, &classpath, &args, records, e2e_records);
        if outcome.is_err() {
            eprintln!(
                "bench failed; {}'s node logs are in {} (kept)",
                system.name(),
                sys_dir.display()
            );
        }
        cluster.stop();
        let (perf, e2e, e2e_note) = outcome?;
        runs.push(SystemRun {
            system,
            perf,
            e2e,
            e2e_note,
            load_before,
        });
    }
    if !args.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    report(&args, records, e2e_records, &limits, &runs, &load_start);
    println!(
        "(bench took {:.0} s; load average at the end {})",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    Ok(())
}

/// /proc/loadavg's 1, 5 and 15 minute load averages ("0.85 1.12 1.68").
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Creates the topic and runs the load generators.
fn drive(
    cluster: &Cluster,
    classpath: &str,
    args: &ProduceArgs,
    records: u64,
    e2e_records: u64,
) -> Result<(Vec<PerfResult>, E2e, Option<String>)> {
    let bootstrap = cluster.bootstrap();
    let topic = "bench";
    let out = java(
        classpath,
        &[
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            &bootstrap,
            "--create",
            "--topic",
            topic,
            "--partitions",
            &args.partitions.to_string(),
            "--replication-factor",
            &COPIES.to_string(),
            "--config",
            "min.insync.replicas=2",
        ],
        Duration::from_secs(60),
        false,
    )?;
    print!("{out}");

    // A short warm-up (JIT, connections, segment files), not reported; the same for both
    // systems (Kafka's brokers are JVMs whose JIT compiles the hot paths during it).
    let warm_up = if args.quick { 20_000 } else { 60_000 };
    println!("==> warm-up: {warm_up} records");
    producer_perf(cluster, classpath, topic, warm_up, 64 << 10, args.linger_ms)?;

    let mut perf = Vec::new();
    for batch_size in BATCH_SIZES {
        println!(
            "==> ProducerPerformance: {records} x 1 KiB, acks=all, batch.size={batch_size}, \
             linger.ms={}",
            args.linger_ms
        );
        perf.push(producer_perf(
            cluster,
            classpath,
            topic,
            records,
            batch_size,
            args.linger_ms,
        )?);
    }
    println!("==> EndToEndLatency: {e2e_records} x 1 KiB, acks=all, one at a time");
    // The tool commits the consumer's offsets once done, which needs a group coordinator
    // (FindCoordinator; kraftd has none yet): its figures are printed before that, so they
    // count either way, and the failure becomes a note beside them.
    let out = java_output(
        classpath,
        &[
            "org.apache.kafka.tools.EndToEndLatency",
            "--bootstrap-server",
            &bootstrap,
            "--topic",
            topic,
            "--num-records",
            &e2e_records.to_string(),
            "--producer-acks",
            "all",
            "--record-size",
            &RECORD_SIZE.to_string(),
        ],
        Duration::from_secs(300),
        true,
    )?;
    let (e2e, note) = match (parse_e2e(&out.stdout), out.error) {
        (Some(e2e), None) => (e2e, None),
        (Some(e2e), Some(error)) => {
            let coordinator = error.to_lowercase().contains("coordinator");
            let first = error.lines().take(2).collect::<Vec<_>>().join(" ");
            let note = if coordinator {
                format!(
                    "EndToEndLatency failed after printing its figures, in its final offset \
                     commit (FindCoordinator: no group coordinator): {first}"
                )
            } else {
                format!("EndToEndLatency failed after printing its figures: {first}")
            };
            println!("    ({note})");
            (e2e, Some(note))
        }
        (None, Some(error)) => bail!("EndToEndLatency failed: {error}\n{}", out.stdout),
        (None, None) => bail!("no figures in EndToEndLatency's output:\n{}", out.stdout),
    };
    Ok((perf, e2e, note))
}

fn producer_perf(
    cluster: &Cluster,
    classpath: &str,
    topic: &str,
    records: u64,
    batch_size: usize,
    linger_ms: u64,
) -> Result<PerfResult> {
    let cpu_before = cluster.cpu_ticks();
    let machine_before = machine_ticks();
    let t0 = Instant::now();
    let out = java(
        classpath,
        &[
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic",
            topic,
            "--num-records",
            &records.to_string(),
            "--record-size",
            &RECORD_SIZE.to_string(),
            "--throughput",
            "-1",
            "--bootstrap-server",
            &cluster.bootstrap(),
            "--command-property",
            "acks=all",
            &format!("batch.size={batch_size}"),
            &format!("linger.ms={linger_ms}"),
            // Room for a full batch per partition plus the batches in flight.
            "buffer.memory=67108864",
            // A 1 MiB batch plus the request's own header.
            &format!("max.request.size={}", (2 << 20).max(batch_size * 2)),
            "compression.type=none",
        ],
        Duration::from_secs(600),
        true,
    )?;
    let wall = t0.elapsed().as_secs_f64();
    let cpu = (cluster.cpu_ticks() - cpu_before) as f64 / clock_ticks() / wall;
    let (busy, total) = machine_ticks();
    let machine_busy = (busy - machine_before.0) as f64 / ((total - machine_before.1) as f64);
    let mut r =
        parse_perf(&out).with_context(|| format!("parsing ProducerPerformance output:\n{out}"))?;
    r.batch_size = batch_size;
    r.broker_cores = cpu;
    r.machine_busy = machine_busy;
    Ok(r)
}

/// "300000 records sent, 95000.1 records/sec (92.77 MB/sec), 250.12 ms avg latency, 800.00 ms
/// max latency, 230 ms 50th, 500 ms 95th, 700 ms 99th, 780 ms 99.9th."
fn parse_perf(out: &str) -> Option<PerfResult> {
    let line = out
        .lines()
        .rev()
        .find(|l| l.contains("records sent") && l.contains("99.9th"))?;
    Some(PerfResult {
        records_per_sec: number_before(line, " records/sec")?,
        mib_per_sec: number_before(line, " MB/sec")?,
        avg_ms: number_before(line, " ms avg latency")?,
        p50_ms: number_before(line, " ms 50th")?,
        p95_ms: number_before(line, " ms 95th")?,
        p99_ms: number_before(line, " ms 99th")?,
        p999_ms: number_before(line, " ms 99.9th")?,
        ..Default::default()
    })
}

/// The number just before `label` in `line` ("(92.77 MB/sec)" gives 92.77 for " MB/sec").
fn number_before(line: &str, label: &str) -> Option<f64> {
    let at = line.find(label)?;
    line[..at]
        .split_whitespace()
        .last()?
        .trim_start_matches('(')
        .parse()
        .ok()
}

struct E2e {
    avg_ms: f64,
    p50_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
}

/// "Avg latency: 1.2345 ms" and "Percentiles: 50th = 1, 99th = 3, 99.9th = 7".
fn parse_e2e(out: &str) -> Option<E2e> {
    let avg = out.lines().find_map(|l| l.strip_prefix("Avg latency:"))?;
    let pct = out.lines().find_map(|l| l.strip_prefix("Percentiles:"))?;
    let get = |name: &str| -> Option<f64> {
        pct.split(',')
            .find_map(|p| p.trim().strip_prefix(name))?
            .trim()
            .trim_start_matches('=')
            .trim()
            .parse()
            .ok()
    };
    Some(E2e {
        avg_ms: avg.trim().trim_end_matches("ms").trim().parse().ok()?,
        p50_ms: get("50th")?,
        p99_ms: get("99th")?,
        p999_ms: get("99.9th")?,
    })
}

fn report(
    args: &ProduceArgs,
    records: u64,
    e2e_records: u64,
    limits: &Limits,
    runs: &[SystemRun],
    load_start: &str,
) {
    let limit = limits.loopback_mib_s.min(limits.disk_mib_s) / f64::from(COPIES);
    println!();
    println!(
        "produce benchmark on one host ({} cores): topic with {} partitions, RF {COPIES}, \
         min.insync.replicas=2, acks=all, 1 KiB records, {records} records per batch size, \
         linger.ms={}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        args.partitions,
        args.linger_ms
    );
    for run in runs {
        println!(
            "  {:<7} {} (load average before it: {})",
            run.system.name(),
            run.system.topology(),
            run.load_before
        );
    }
    if runs.iter().any(|r| r.system == System::Kafka) {
        println!(
            "  (Kafka runs 1 controller, not 3: six JVMs are too heavy for a small shared host; \
             the controller is off the produce path)"
        );
    }
    println!("  load average before the bench: {load_start}");
    println!();
    println!("machine limit (measured in this run, MiB/s = 2^20 bytes/s):");
    println!(
        "  loopback TCP, 1 MiB writes          {:>9.1} MiB/s",
        limits.loopback_mib_s
    );
    println!(
        "  disk write, 1 MiB + fdatasync       {:>9.1} MiB/s",
        limits.disk_mib_s
    );
    println!(
        "  fdatasync of 4 KiB                  p50 {:.0} us, p99 {:.0} us",
        limits.fsync_p50_us, limits.fsync_p99_us
    );
    println!("  limit = min(loopback, disk) / {COPIES} copies = {limit:.1} MiB/s");
    println!();
    println!(
        "{:<12} | {:>10} | {:>9} | {:>9} | {:>8} | {:>8} | {:>8} | {:>8} | {:>8} | {:>9} | {:>7} | {:>7}",
        "system",
        "batch.size",
        "records/s",
        "MiB/s",
        "avg ms",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "p99.9 ms",
        "of limit",
        "brokers",
        "machine"
    );
    println!("{}", "-".repeat(137));
    let kraftd = runs.iter().find(|r| r.system == System::Kraftd);
    let kafka = runs.iter().find(|r| r.system == System::Kafka);
    for (i, batch_size) in BATCH_SIZES.iter().enumerate() {
        for run in runs {
            let Some(r) = run.perf.get(i) else { continue };
            println!(
                "{:<12} | {:>10} | {:>9.0} | {:>9.2} | {:>8.1} | {:>8.0} | {:>8.0} | {:>8.0} | {:>8.0} | {:>8.0}% | {:>6.0}% | {:>6.0}%",
                run.system.name(),
                format!("{} KiB", batch_size >> 10),
                r.records_per_sec,
                r.mib_per_sec,
                r.avg_ms,
                r.p50_ms,
                r.p95_ms,
                r.p99_ms,
                r.p999_ms,
                100.0 * r.mib_per_sec / limit,
                100.0 * r.broker_cores,
                100.0 * r.machine_busy,
            );
        }
        if let (Some(a), Some(b)) = (
            kraftd.and_then(|r| r.perf.get(i)),
            kafka.and_then(|r| r.perf.get(i)),
        ) {
            println!(
                "{:<12} | {:>10} | {:>9} | {:>9} | {:>8} | {:>8} | {:>8} | {:>8} | {:>8} | {:>9} | {:>7} | {:>7}",
                "kraftd/Kafka",
                format!("{} KiB", batch_size >> 10),
                ratio(a.records_per_sec, b.records_per_sec),
                ratio(a.mib_per_sec, b.mib_per_sec),
                ratio(a.avg_ms, b.avg_ms),
                ratio(a.p50_ms, b.p50_ms),
                ratio(a.p95_ms, b.p95_ms),
                ratio(a.p99_ms, b.p99_ms),
                ratio(a.p999_ms, b.p999_ms),
                "",
                ratio(a.broker_cores, b.broker_cores),
                "",
            );
        }
    }
    println!();
    println!(
        "produce latency: ProducerPerformance's send-to-ack time per record, including the time \
         a record waits in the producer's buffer (at --throughput -1 mostly that queue)."
    );
    println!(
        "brokers: CPU of the 3 broker processes (100% = one core); machine: busy share of all \
         cores (the load generator's JVM included)."
    );
    println!(
        "kraftd/Kafka: above 1 is better for kraftd in records/s and MiB/s, worse in latency \
         and broker CPU."
    );
    println!();
    println!(
        "end-to-end latency (EndToEndLatency, {e2e_records} records one at a time, produce \
         acks=all to consume; the tool reports whole ms):"
    );
    for run in runs {
        let e = &run.e2e;
        println!(
            "  {:<7} avg {:.2} ms, p50 {} ms, p99 {} ms, p99.9 {} ms",
            run.system.name(),
            e.avg_ms,
            e.p50_ms,
            e.p99_ms,
            e.p999_ms
        );
    }
    if let (Some(a), Some(b)) = (kraftd, kafka) {
        println!(
            "  kraftd/Kafka avg {}, p50 {}, p99 {}",
            ratio(a.e2e.avg_ms, b.e2e.avg_ms),
            ratio(a.e2e.p50_ms, b.e2e.p50_ms),
            ratio(a.e2e.p99_ms, b.e2e.p99_ms)
        );
    }
    for run in runs {
        if let Some(note) = &run.e2e_note {
            println!("  note ({}): {note}", run.system.name());
        }
    }
    println!();
    for run in runs {
        if let Some(best) = run.perf.iter().map(|r| r.mib_per_sec).reduce(f64::max) {
            println!(
                "{:<7} best throughput {best:.1} MiB/s = {:.0}% of the limit {limit:.1} MiB/s \
                 (aim: 50%)",
                run.system.name(),
                100.0 * best / limit
            );
        }
    }
}

/// "1.23x", or "-" when the denominator is 0 (latencies the tools round to whole ms).
fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}x", a / b)
    } else {
        "-".into()
    }
}

// ---------------------------------------------------------------------------------------------
// The machine's limit.

fn measure_limits(dir: &Path, loopback_bytes: u64, disk_bytes: u64) -> Result<Limits> {
    println!(
        "==> loopback TCP: {} MiB in 1 MiB writes",
        loopback_bytes >> 20
    );
    let loopback_mib_s = loopback(loopback_bytes)?;
    println!("    {loopback_mib_s:.1} MiB/s");
    println!(
        "==> disk: {} MiB in 1 MiB writes, then fdatasync",
        disk_bytes >> 20
    );
    let path = dir.join("disk-bench.dat");
    let disk_mib_s = disk_write(&path, disk_bytes)?;
    println!("    {disk_mib_s:.1} MiB/s");
    let (fsync_p50_us, fsync_p99_us) = fsync_latency(&path, 200)?;
    let _ = std::fs::remove_file(&path);
    println!("==> fdatasync of 4 KiB: p50 {fsync_p50_us:.0} us, p99 {fsync_p99_us:.0} us");
    Ok(Limits {
        loopback_mib_s,
        disk_mib_s,
        fsync_p50_us,
        fsync_p99_us,
    })
}

/// MiB/s from a sender to a receiver thread over 127.0.0.1, timed until the receiver has read
/// everything.
fn loopback(bytes: u64) -> Result<f64> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let receiver = std::thread::spawn(move || -> std::io::Result<u64> {
        let (mut stream, _) = listener.accept()?;
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            let n = stream.read(&mut buf)?;
            if n == 0 {
                return Ok(total);
            }
            total += n as u64;
        }
    });
    let mut stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    let chunk = vec![0x5au8; 1 << 20];
    let t0 = Instant::now();
    let mut sent = 0u64;
    while sent < bytes {
        stream.write_all(&chunk)?;
        sent += chunk.len() as u64;
    }
    drop(stream);
    let received = receiver
        .join()
        .map_err(|_| anyhow::anyhow!("loopback receiver panicked"))??;
    let secs = t0.elapsed().as_secs_f64();
    if received != sent {
        bail!("loopback receiver got {received} of {sent} bytes");
    }
    Ok(sent as f64 / MIB / secs)
}

/// MiB/s writing `bytes` in 1 MiB chunks to a new file and `fdatasync`ing it once at the end.
fn disk_write(path: &Path, bytes: u64) -> Result<f64> {
    let mut file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let chunk: Vec<u8> = (0..1 << 20).map(|i| (i * 31 % 251) as u8).collect();
    let t0 = Instant::now();
    let mut written = 0u64;
    while written < bytes {
        file.write_all(&chunk)?;
        written += chunk.len() as u64;
    }
    file.sync_data()?;
    Ok(written as f64 / MIB / t0.elapsed().as_secs_f64())
}

/// p50 and p99 in microseconds of appending 4 KiB and `fdatasync`ing, `n` times.
fn fsync_latency(path: &Path, n: usize) -> Result<(f64, f64)> {
    let mut file = File::create(path)?;
    let block = vec![0xa5u8; 4096];
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        file.write_all(&block)?;
        file.sync_data()?;
        samples.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    Ok((at(0.50), at(0.99)))
}

// ---------------------------------------------------------------------------------------------
// CPU accounting from /proc.

/// utime + stime of a process, in clock ticks.
fn process_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // Fields after the ")" that closes the command name: state is field 3, utime 14, stime 15.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let get = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    get(11) + get(12)
}

/// (busy, total) ticks of all cores from /proc/stat's first line.
fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let nums: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let total: u64 = nums.iter().sum();
    // idle and iowait
    let idle = nums.get(3).copied().unwrap_or(0) + nums.get(4).copied().unwrap_or(0);
    (total - idle, total.max(1))
}

/// USER_HZ: 100 on every Linux this runs on (`getconf CLK_TCK`).
fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

// ---------------------------------------------------------------------------------------------
// The cluster.

struct BenchNode {
    id: u32,
    broker_port: Option<u16>,
    child: Option<Child>,
}

struct Cluster {
    nodes: Vec<BenchNode>,
}

impl Cluster {
    /// kraftd: 3 controllers (ids 1-3) and 3 brokers (4-6) on free loopback ports, configured,
    /// formatted and started as `cargo xtask cluster-up` does, but under `dir` and as children
    /// of this process; returns once every broker is registered and unfenced.
    fn start_kraftd(bin: &Path, dir: &Path) -> Result<Cluster> {
        let mut cluster = Cluster { nodes: Vec::new() };
        match cluster.start_kraftd_inner(bin, dir) {
            Ok(()) => Ok(cluster),
            Err(e) => {
                cluster.stop();
                Err(e)
            }
        }
    }

    /// Apache Kafka from the jars: 1 controller (id 100) and 3 brokers (1-3) on free loopback
    /// ports, formatted with `kafka.tools.StorageTool` and started as `kafka.Kafka` JVMs with
    /// a 512 MiB heap (as `crates/cli/tests/common/kafka_jars.rs` does, with the JVM options
    /// of `kafka-server-start.sh`); returns once every broker is registered and unfenced.
    fn start_kafka(classpath: &str, dir: &Path) -> Result<Cluster> {
        let mut cluster = Cluster { nodes: Vec::new() };
        match cluster.start_kafka_inner(classpath, dir) {
            Ok(()) => Ok(cluster),
            Err(e) => {
                cluster.stop();
                Err(e)
            }
        }
    }

    fn start_kafka_inner(&mut self, classpath: &str, dir: &Path) -> Result<()> {
        let controller_port = free_port()?;
        let mut layout = vec![(100u32, true, controller_port)];
        for id in 1..=3u32 {
            layout.push((id, false, free_port()?));
        }
        let cluster_id = java(
            classpath,
            &["kafka.tools.StorageTool", "random-uuid"],
            Duration::from_secs(60),
            false,
        )?
        .trim()
        .to_string();
        // Kafka's defaults otherwise (no fsync per write, as kraftd's defaults); the group
        // coordinator's offsets topic (EndToEndLatency commits once at its end) kept small.
        let common = format!(
            "controller.quorum.voters=100@127.0.0.1:{controller_port}\n\
             controller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
             offsets.topic.replication.factor=3\n\
             offsets.topic.num.partitions=3\n\
             group.initial.rebalance.delay.ms=0\n"
        );
        let log4j = format!(
            "-Dlog4j2.configurationFile={}",
            crate::repo_root()?
                .join("tools/capture/log4j2.properties")
                .display()
        );
        let mut pending = Vec::new();
        for &(id, controller, port) in &layout {
            let node_dir = dir.join(format!("node-{id}"));
            std::fs::create_dir_all(node_dir.join("logs"))?;
            let own = if controller {
                format!(
                    "process.roles=controller\nnode.id={id}\n\
                     listeners=CONTROLLER://127.0.0.1:{port}\n"
                )
            } else {
                format!(
                    "process.roles=broker\nnode.id={id}\nlisteners=PLAINTEXT://127.0.0.1:{port}\n\
                     inter.broker.listener.name=PLAINTEXT\n"
                )
            };
            let config = node_dir.join("server.properties");
            std::fs::write(
                &config,
                format!(
                    "# written by cargo xtask bench produce\n{own}log.dirs={}\n{common}",
                    node_dir.join("data").display()
                ),
            )?;
            java(
                classpath,
                &[
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    &cluster_id,
                    "-c",
                    config.to_str().context("non-UTF-8 path")?,
                ],
                Duration::from_secs(60),
                false,
            )
            .with_context(|| format!("formatting Kafka node {id}"))?;
            pending.push((id, controller, port, node_dir, config));
        }
        for (id, controller, port, node_dir, config) in pending {
            let out = node_dir.join("kafka.out");
            let child = Command::new("java")
                .args([
                    "-Xms512m",
                    "-Xmx512m",
                    "-server",
                    "-XX:+UseG1GC",
                    "-XX:MaxGCPauseMillis=20",
                    "-XX:InitiatingHeapOccupancyPercent=35",
                    "-XX:+ExplicitGCInvokesConcurrent",
                    "-Djava.awt.headless=true",
                ])
                .arg(format!(
                    "-Dkafka.logs.dir={}",
                    node_dir.join("logs").display()
                ))
                .arg(&log4j)
                .args(["-cp", classpath, "kafka.Kafka"])
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(File::create(&out)?)
                .stderr(File::options().append(true).open(&out)?)
                .spawn()
                .with_context(|| format!("starting Kafka node {id}"))?;
            let role = if controller { "controller" } else { "broker" };
            println!("started Kafka node {id} ({role}) pid {}", child.id());
            self.nodes.push(BenchNode {
                id,
                broker_port: (!controller).then_some(port),
                child: Some(child),
            });
        }
        self.wait_brokers(Duration::from_secs(120))
    }

    fn start_kraftd_inner(&mut self, bin: &Path, dir: &Path) -> Result<()> {
        let mut layout = Vec::new();
        for id in 1..=6u32 {
            let controller = id <= 3;
            layout.push((id, controller, free_port()?, free_port()?));
        }
        let voters = layout
            .iter()
            .filter(|n| n.1)
            .map(|n| format!("{}@127.0.0.1:{}", n.0, n.2))
            .collect::<Vec<_>>()
            .join(",");
        let out = Command::new(bin).arg("random-uuid").output()?;
        let cluster_id = String::from_utf8(out.stdout)?.trim().to_string();
        for &(id, controller, port, metrics_port) in &layout {
            let node_dir = dir.join(format!("node-{id}"));
            std::fs::create_dir_all(&node_dir)?;
            let (roles, listener) = if controller {
                ("controller", format!("CONTROLLER://127.0.0.1:{port}"))
            } else {
                ("broker", format!("PLAINTEXT://127.0.0.1:{port}"))
            };
            let config = node_dir.join("server.properties");
            std::fs::write(
                &config,
                format!(
                    "# written by cargo xtask bench produce\n\
                     process.roles={roles}\nnode.id={id}\ncontroller.quorum.voters={voters}\n\
                     listeners={listener}\ncontroller.listener.names=CONTROLLER\nlog.dirs={}\n\
                     metrics.port={metrics_port}\n",
                    node_dir.join("data").display(),
                ),
            )?;
            crate::cluster::format_node(bin, &config, &cluster_id, id)?;
            let log = node_dir.join("kraftd.log");
            let child = Command::new(bin)
                .args([roles, "--config"])
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(File::create(&log)?)
                .stderr(File::options().append(true).open(&log)?)
                .spawn()
                .with_context(|| format!("starting node {id}"))?;
            println!("started node {id} ({roles}) pid {}", child.id());
            self.nodes.push(BenchNode {
                id,
                broker_port: (!controller).then_some(port),
                child: Some(child),
            });
        }
        self.wait_brokers(Duration::from_secs(60))
    }

    /// Waits until every broker is in the first broker's Metadata (registered and unfenced).
    fn wait_brokers(&mut self, timeout: Duration) -> Result<()> {
        let ports: Vec<u16> = self.nodes.iter().filter_map(|n| n.broker_port).collect();
        let deadline = Instant::now() + timeout;
        loop {
            let seen = alive_brokers(ports[0]).unwrap_or_default();
            if seen.len() == ports.len() {
                println!("{} brokers registered and unfenced", seen.len());
                return Ok(());
            }
            for node in &mut self.nodes {
                if let Some(status) = node
                    .child
                    .as_mut()
                    .and_then(|c| c.try_wait().ok().flatten())
                {
                    bail!("node {} exited ({status})", node.id);
                }
            }
            if Instant::now() >= deadline {
                bail!("only brokers {seen:?} unfenced after {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn bootstrap(&self) -> String {
        self.nodes
            .iter()
            .filter_map(|n| Some(format!("127.0.0.1:{}", n.broker_port?)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// CPU ticks the brokers have used so far.
    fn cpu_ticks(&self) -> u64 {
        self.nodes
            .iter()
            .filter(|n| n.broker_port.is_some())
            .filter_map(|n| n.child.as_ref())
            .map(|c| process_ticks(c.id()))
            .sum()
    }

    /// SIGTERM to the brokers together, then to the controllers; SIGKILL to whatever of
    /// either still runs after 15 s.
    fn stop(&mut self) {
        for brokers in [true, false] {
            let mut children: Vec<Child> = self
                .nodes
                .iter_mut()
                .filter(|n| n.broker_port.is_some() == brokers)
                .filter_map(|n| n.child.take())
                .collect();
            for child in &children {
                let _ = Command::new("kill").arg(child.id().to_string()).status();
            }
            let deadline = Instant::now() + Duration::from_secs(15);
            while children
                .iter_mut()
                .any(|c| matches!(c.try_wait(), Ok(None)))
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            for mut child in children {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        println!("cluster stopped");
    }
}

/// A panic between start and stop still ends the nodes (SIGKILL).
impl Drop for Cluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Kafka's tools.

/// `target/kafka-jars/*` (or `$KRAFTD_KAFKA_JARS`), fetched with Maven from
/// `tools/capture/pom.xml` when incomplete, as the tests' `common/kafka_jars.rs` does.
fn kafka_classpath(root: &Path) -> Result<String> {
    let dir = match std::env::var_os("KRAFTD_KAFKA_JARS") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => root.join("target").join("kafka-jars"),
    };
    let complete = |d: &Path| REQUIRED_JARS.iter().all(|j| d.join(j).is_file());
    if Command::new("java").arg("-version").output().is_err() {
        bail!("the bench runs Kafka's tools and needs Java 17+ on PATH (e.g. apt-get install openjdk-17-jre-headless)");
    }
    if !complete(&dir) {
        let scratch = dir.with_extension(format!("part-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&scratch);
        let pom = root.join("tools/capture/pom.xml");
        crate::run(
            root,
            "mvn",
            &[
                "-q",
                "-B",
                "-f",
                pom.to_str().context("non-UTF-8 path")?,
                "-Dkafka.version=4.4.0",
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                &format!("-DoutputDirectory={}", scratch.display()),
            ],
        )
        .context("fetching Kafka's jars needs Maven (`mvn`) and Maven Central")?;
        if !complete(&scratch) {
            bail!(
                "Maven did not fetch every Kafka jar into {}",
                scratch.display()
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&scratch, &dir)?;
    }
    Ok(format!("{}/*", dir.display()))
}

/// Runs a Kafka tool's main class; its stdout (echoed line by line when `echo`), or an error
/// with its stderr. Killed after `timeout`.
fn java(classpath: &str, args: &[&str], timeout: Duration, echo: bool) -> Result<String> {
    let out = java_output(classpath, args, timeout, echo)?;
    match out.error {
        None => Ok(out.stdout),
        Some(error) => bail!("{} failed: {error}\n{}", args[0], out.stdout),
    }
}

struct JavaOutput {
    stdout: String,
    /// The exit status and the end of stderr of a tool that failed.
    error: Option<String>,
}

/// Runs a Kafka tool's main class to its end (killed after `timeout`); its stdout (echoed line
/// by line when `echo`), and how it failed if it did.
fn java_output(
    classpath: &str,
    args: &[&str],
    timeout: Duration,
    echo: bool,
) -> Result<JavaOutput> {
    let log4j = format!(
        "-Dlog4j2.configurationFile={}",
        crate::repo_root()?
            .join("tools/capture/log4j2-tools.properties")
            .display()
    );
    let mut child = Command::new("java")
        .args(["-Xms256m", "-Xmx1g", &log4j, "-cp", classpath])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting java")?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut stderr = child.stderr.take().context("no stderr")?;
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let out_thread = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if echo {
                println!("    {line}");
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{} ran over {timeout:?}", args[0]);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = out_thread.join().unwrap_or_default();
    let stderr = err_thread.join().unwrap_or_default();
    // The exception's message and the last lines of stderr.
    let error = (!status.success()).then(|| {
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        format!(
            "{status}: {}",
            lines[lines.len().saturating_sub(20)..].join("\n")
        )
    });
    Ok(JavaOutput { stdout, error })
}
