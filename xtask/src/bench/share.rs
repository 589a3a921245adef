//! `cargo xtask bench share`: share groups (KIP-932) with Kafka 4.4.0's own
//! `KafkaShareConsumer`, kraftd beside Apache Kafka 4.4.0 in one run (issue 28). A benchmark:
//! it prints figures and asserts nothing.
//!
//! Each system runs 3 controllers and 3 brokers; the load is `ShareBench.java` (beside this
//! file, run by Java's single-file launcher against Kafka's jars):
//! - throughput: share consumers (implicit acknowledgement) join, and once every one holds
//!   its partitions (ShareGroupDescribe), `--records` records of 100 bytes are produced as
//!   fast as one producer goes while they read — 1 partition with 1, 4 and 16 consumers, and
//!   16 partitions with 16; records/s from the first record delivered to the last, and how many
//!   deliveries were repeats. The point of share groups is a partition read by more than one
//!   consumer: the rows with one partition show whether throughput grows with consumers;
//! - work queue: the same with consumers that spend `--work-us` (1 ms) on each record, so
//!   that one consumer cannot keep up: 1 partition with 1, 4 and 16 consumers,
//!   `--work-records` records. Without work one consumer takes all one producer sends on this
//!   machine; with it, the rows show what more consumers on one partition buy;
//! - end-to-end latency: 4 consumers on one partition, every one assigned, while a producer
//!   sends `--rate` records/s for `--seconds`; p50 and p99 from send to poll (p99.9, the
//!   maximum and the seconds of the run where records took over 200 ms are printed too);
//! - redelivery: a consumer JVM holding 100 acquired records is killed with SIGKILL; the time
//!   until a second consumer has every one of them again.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use kraftd_protocol::messages::{create_topics_request, CreateTopicsRequest};
use kraftd_protocol::{RequestBody, ResponseBody};

use super::cluster::Cluster;
use super::failover::call;
use super::kafka::{java_output, kafka_classpath};
use super::produce::{loadavg, Against, System};

#[derive(clap::Args, Debug)]
pub(super) struct ShareArgs {
    /// Records per throughput row.
    #[arg(long, default_value_t = 100_000)]
    records: u32,
    /// The latency row's offered rate, records/s.
    #[arg(long, default_value_t = 1000)]
    rate: u32,
    /// The latency row's duration, seconds.
    #[arg(long, default_value_t = 10)]
    seconds: u32,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    against: Against,
    /// Keep the temp directory (node logs and data) afterwards.
    #[arg(long)]
    keep: bool,
    /// Microseconds each work-queue consumer spends on a record.
    #[arg(long, default_value_t = 1000)]
    work_us: u32,
    /// Records per work-queue row.
    #[arg(long, default_value_t = 10_000)]
    work_records: u32,
    /// Which rows to run (comma-separated); all by default.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Row::Throughput, Row::WorkQueue, Row::Latency, Row::Redelivery])]
    rows: Vec<Row>,
}

/// A group of rows, for `--rows`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Row {
    Throughput,
    WorkQueue,
    Latency,
    Redelivery,
}

/// The throughput rows: (partitions, consumers).
const THROUGHPUT: [(i32, u32); 4] = [(1, 1), (1, 4), (1, 16), (16, 16)];

/// The work-queue rows, one partition each: consumers.
const WORK_QUEUE: [u32; 3] = [1, 4, 16];

/// Records/s and repeated deliveries of one throughput or work-queue row; `None` if it failed.
type RowFigure = Option<(f64, u64)>;

/// One system's figures; `None` where a row failed.
#[derive(Debug, Default)]
struct Figures {
    /// Records/s and repeated deliveries per throughput row.
    throughput: Vec<RowFigure>,
    /// The same per work-queue row.
    work_queue: Vec<RowFigure>,
    /// p50 and p99, ms.
    latency: Option<(f64, f64)>,
    /// Seconds from the kill to every held record delivered again.
    redelivery: Option<f64>,
}

pub(super) fn share(root: &Path, args: ShareArgs) -> Result<()> {
    let started = Instant::now();
    let systems = match args.against {
        Against::Kraftd => vec![System::Kraftd],
        Against::Kafka => vec![System::Kafka],
        Against::Both => vec![System::Kraftd, System::Kafka],
    };
    let classpath = kafka_classpath(root)?;
    let bench = root.join("xtask/src/bench/ShareBench.java");
    let bench = bench.to_str().context("a UTF-8 path")?.to_string();
    let bin = root.join("target").join("release").join("kraftd");
    if systems.contains(&System::Kraftd) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        crate::run(root, &cargo, &["build", "--release", "--bin", "kraftd"])?;
    }
    let dir = std::env::temp_dir().join(format!("kraftd-bench-share-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    println!("bench directory: {}", dir.display());
    let mut results = Vec::new();
    let mut failed = false;
    for system in systems {
        let sys_dir = dir.join(system.name().to_lowercase());
        std::fs::create_dir_all(&sys_dir)?;
        println!(
            "==> {}: 3 controllers + 3 brokers (load average {})",
            system.name(),
            loadavg()
        );
        let mut cluster = match system {
            System::Kraftd => Cluster::start_kraftd_with_controllers(&bin, &sys_dir, "", "", &[]),
            System::Kafka => {
                Cluster::start_kafka_with_controllers(&classpath, &sys_dir, "", "", &[], 3)
            }
        }?;
        let figures = rows(&cluster, &classpath, &bench, &args);
        cluster.stop();
        failed |= figures.throughput.iter().any(Option::is_none)
            || figures.work_queue.iter().any(Option::is_none)
            || (args.rows.contains(&Row::Latency) && figures.latency.is_none())
            || (args.rows.contains(&Row::Redelivery) && figures.redelivery.is_none());
        results.push((system, figures));
    }
    if args.keep || failed {
        println!("node logs kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    report(&results, &args);
    println!(
        "(bench took {:.0} s; load average at the end {})",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    Ok(())
}

/// Runs every row on one started cluster; a failed row is reported and left empty.
fn rows(cluster: &Cluster, classpath: &str, bench: &str, args: &ShareArgs) -> Figures {
    let bootstrap = cluster.bootstrap();
    let port = cluster
        .nodes
        .iter()
        .find_map(|n| n.broker_port)
        .expect("a broker");
    let mut figures = Figures::default();
    let row = |name: &str, partitions: i32, mode: &[String]| -> Result<String> {
        create_topic(port, name, partitions)?;
        let mut command = vec![bench.to_string(), mode[0].clone(), bootstrap.clone()];
        command.push(name.to_string());
        command.push(format!("g-{name}"));
        command.extend(mode[1..].iter().cloned());
        let command: Vec<&str> = command.iter().map(String::as_str).collect();
        let out = java_output(classpath, &command, Duration::from_secs(900), false)?;
        if let Some(error) = out.error {
            bail!("{name}: {error}\n{}", out.stdout);
        }
        for line in out.stdout.lines().filter(|l| l.starts_with("SLOW")) {
            println!("{name}: {line}");
        }
        out.stdout
            .lines()
            .find_map(|l| l.strip_prefix("RESULT "))
            .map(str::to_string)
            .with_context(|| format!("{name}: no RESULT line in {}", out.stdout))
    };
    let consume = |name: &str, partitions: i32, consumers: u32, records: u32, work_us: u32| {
        let mode = [
            "throughput".to_string(),
            consumers.to_string(),
            records.to_string(),
            "100".to_string(),
            work_us.to_string(),
        ];
        let result = row(name, partitions, &mode).and_then(|line| {
            let seconds = field(&line, "seconds")?;
            let records = field(&line, "records")?;
            let duplicates = field(&line, "duplicates")?;
            Ok((records / seconds, duplicates as u64))
        });
        match result {
            Ok((rate, duplicates)) => {
                println!("{name}: {rate:.0} records/s, {duplicates} repeated deliveries");
                Some((rate, duplicates))
            }
            Err(e) => {
                eprintln!("{name}: {e:#}");
                None
            }
        }
    };
    if args.rows.contains(&Row::Throughput) {
        for (partitions, consumers) in THROUGHPUT {
            let name = format!("throughput-{partitions}p-{consumers}c");
            let figure = consume(&name, partitions, consumers, args.records, 0);
            figures.throughput.push(figure);
        }
    }
    if args.rows.contains(&Row::WorkQueue) {
        for consumers in WORK_QUEUE {
            let name = format!("work-queue-{consumers}c");
            let figure = consume(&name, 1, consumers, args.work_records, args.work_us);
            figures.work_queue.push(figure);
        }
    }
    if args.rows.contains(&Row::Latency) {
        let mode = [
            "latency".to_string(),
            "4".to_string(),
            args.rate.to_string(),
            args.seconds.to_string(),
        ];
        match row("latency", 1, &mode).and_then(|line| {
            Ok((
                field(&line, "p50_ms")?,
                field(&line, "p99_ms")?,
                field(&line, "p999_ms")?,
                field(&line, "max_ms")?,
                field(&line, "max_sent_s")?,
            ))
        }) {
            Ok((p50, p99, p999, max, max_sent)) => {
                println!(
                    "latency: p50 {p50:.2} ms, p99 {p99:.2} ms, p99.9 {p999:.2} ms, max \
                     {max:.2} ms (sent {max_sent:.1} s into the run)"
                );
                figures.latency = Some((p50, p99));
            }
            Err(e) => eprintln!("latency: {e:#}"),
        }
    }
    if !args.rows.contains(&Row::Redelivery) {
        return figures;
    }
    let mode = [
        "redelivery".to_string(),
        classpath.to_string(),
        bench.to_string(),
    ];
    match row("redelivery", 1, &mode).and_then(|line| field(&line, "seconds")) {
        Ok(seconds) => {
            println!("redelivery: {seconds:.3} s");
            figures.redelivery = Some(seconds);
        }
        Err(e) => eprintln!("redelivery: {e:#}"),
    }
    figures
}

/// `key=<number>` from a RESULT line.
fn field(line: &str, key: &str) -> Result<f64> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .with_context(|| format!("no {key} in {line:?}"))?
        .parse()
        .with_context(|| format!("{key} in {line:?}"))
}

fn create_topic(port: u16, name: &str, partitions: i32) -> Result<()> {
    let body = RequestBody::CreateTopics(CreateTopicsRequest {
        topics: vec![create_topics_request::CreatableTopic {
            name: name.to_string(),
            num_partitions: partitions,
            replication_factor: 3,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    });
    match call(port, 7, body, Duration::from_secs(35))? {
        ResponseBody::CreateTopics(r) => match r.topics.first().map(|t| t.error_code) {
            Some(0) => Ok(()),
            code => bail!("CreateTopics {name}: error code {code:?}"),
        },
        other => bail!("not a CreateTopics response: {other:?}"),
    }
}

fn report(results: &[(System, Figures)], args: &ShareArgs) {
    let get = |system: System| results.iter().find(|(s, _)| *s == system).map(|(_, f)| f);
    let (ours, theirs) = (get(System::Kraftd), get(System::Kafka));
    let cell = |v: Option<f64>, digits: usize| match v {
        Some(v) => format!("{v:.digits$}"),
        None => "-".to_string(),
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "-".to_string(),
    };
    println!();
    println!(
        "share groups, 3 controllers + 3 brokers, RF 3, KafkaShareConsumer 4.4.0 \
         ({} records of 100 B per throughput row):",
        args.records
    );
    println!(
        "{:<44} | {:>12} | {:>12} | {:>16}",
        "row", "kraftd", "Kafka 4.4.0", "kraftd / Kafka"
    );
    for (i, (partitions, consumers)) in THROUGHPUT.iter().enumerate() {
        let rate = |f: Option<&Figures>| {
            f.and_then(|f| f.throughput.get(i).copied().flatten())
                .map(|t| t.0)
        };
        let (a, b) = (rate(ours), rate(theirs));
        println!(
            "{:<44} | {:>12} | {:>12} | {:>16}",
            format!("records/s, {partitions} partition(s), {consumers} consumer(s)"),
            cell(a, 0),
            cell(b, 0),
            ratio(a, b)
        );
    }
    for (i, consumers) in WORK_QUEUE.iter().enumerate() {
        let rate = |f: Option<&Figures>| {
            f.and_then(|f| f.work_queue.get(i).copied().flatten())
                .map(|t| t.0)
        };
        let (a, b) = (rate(ours), rate(theirs));
        println!(
            "{:<44} | {:>12} | {:>12} | {:>16}",
            format!("records/s, {} us/record, 1 p, {consumers} c", args.work_us),
            cell(a, 0),
            cell(b, 0),
            ratio(a, b)
        );
    }
    for (label, pick) in [
        ("e2e p50 ms (4 consumers, 1 partition)", 0),
        ("e2e p99 ms (4 consumers, 1 partition)", 1),
    ] {
        let v = |f: Option<&Figures>| {
            f.and_then(|f| f.latency)
                .map(|l| if pick == 0 { l.0 } else { l.1 })
        };
        let (a, b) = (v(ours), v(theirs));
        println!(
            "{label:<44} | {:>12} | {:>12} | {:>16}",
            cell(a, 2),
            cell(b, 2),
            ratio(a, b)
        );
    }
    let v = |f: Option<&Figures>| f.and_then(|f| f.redelivery);
    let (a, b) = (v(ours), v(theirs));
    println!(
        "{:<44} | {:>12} | {:>12} | {:>16}",
        "redelivery after SIGKILL, s",
        cell(a, 3),
        cell(b, 3),
        ratio(a, b)
    );
    let repeats = |rows: fn(&Figures) -> &[RowFigure], n: usize| {
        (0..n)
            .map(|i| {
                let d = |f: Option<&Figures>| {
                    f.and_then(|f| rows(f).get(i).copied().flatten())
                        .map_or("-".to_string(), |t| t.1.to_string())
                };
                format!("{}/{}", d(ours), d(theirs))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "(repeated deliveries per throughput row, kraftd / Kafka: {}; per work-queue row: {})",
        repeats(|f| f.throughput.as_slice(), THROUGHPUT.len()),
        repeats(|f| f.work_queue.as_slice(), WORK_QUEUE.len())
    );
}
