//! Kafka's load generators against a running cluster: the topic (`TopicCommand`), the
//! throughput runs (`ProducerPerformance`) with the brokers' and machine's CPU over each, the
//! end-to-end latency run (`EndToEndLatency`), and the parsing of their output.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::cluster::Cluster;
use super::kafka::{java, java_output};
use super::machine::{clock_ticks, machine_ticks};
use super::produce::{ProduceArgs, BATCH_SIZES, COPIES, RECORD_SIZE};

/// One ProducerPerformance summary.
#[derive(Debug, Default, Clone)]
pub(super) struct PerfResult {
    pub(super) batch_size: usize,
    pub(super) records_per_sec: f64,
    pub(super) mib_per_sec: f64,
    pub(super) avg_ms: f64,
    pub(super) p50_ms: f64,
    pub(super) p95_ms: f64,
    pub(super) p99_ms: f64,
    pub(super) p999_ms: f64,
    /// CPU the three brokers used, in cores (100% = one core), and the whole machine's busy
    /// share of all its cores, over the run.
    pub(super) broker_cores: f64,
    pub(super) machine_busy: f64,
}

/// Creates the topic and runs the load generators.
pub(super) fn drive(
    cluster: &Cluster,
    classpath: &str,
    args: &ProduceArgs,
    records: u64,
    e2e_records: u64,
) -> Result<(Vec<PerfResult>, E2e, Option<String>)> {
    let topic = "bench";
    create_topic(cluster, classpath, topic, args.partitions)?;

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
    let (e2e, note) = end_to_end(cluster, classpath, topic, e2e_records)?;
    Ok((perf, e2e, note))
}

/// `topic` with `partitions` partitions, replication factor [`COPIES`] and
/// `min.insync.replicas=2`, created with Kafka's `TopicCommand` through the brokers.
pub(super) fn create_topic(
    cluster: &Cluster,
    classpath: &str,
    topic: &str,
    partitions: u32,
) -> Result<()> {
    let out = java(
        classpath,
        &[
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            &cluster.bootstrap(),
            "--create",
            "--topic",
            topic,
            "--partitions",
            &partitions.to_string(),
            "--replication-factor",
            &COPIES.to_string(),
            "--config",
            "min.insync.replicas=2",
        ],
        Duration::from_secs(60),
        false,
    )?;
    print!("{out}");
    Ok(())
}

/// Kafka's `EndToEndLatency` on `topic`: `records` records of 1 KiB one at a time, produced
/// with acks=all and consumed; its figures, and a note when it failed after printing them.
pub(super) fn end_to_end(
    cluster: &Cluster,
    classpath: &str,
    topic: &str,
    records: u64,
) -> Result<(E2e, Option<String>)> {
    println!("==> EndToEndLatency: {records} x 1 KiB, acks=all, one at a time");
    // The tool commits the consumer's offsets once done (through the group coordinator);
    // its figures are printed before that, so they count either way, and a failure there
    // becomes a note beside them.
    let out = java_output(
        classpath,
        &[
            "org.apache.kafka.tools.EndToEndLatency",
            "--bootstrap-server",
            &cluster.bootstrap(),
            "--topic",
            topic,
            "--num-records",
            &records.to_string(),
            "--producer-acks",
            "all",
            "--record-size",
            &RECORD_SIZE.to_string(),
        ],
        Duration::from_secs(300),
        true,
    )?;
    Ok(match (parse_e2e(&out.stdout), out.error) {
        (Some(e2e), None) => (e2e, None),
        (Some(e2e), Some(error)) => {
            let first = error.lines().take(2).collect::<Vec<_>>().join(" ");
            let note = format!("EndToEndLatency failed after printing its figures: {first}");
            println!("    ({note})");
            (e2e, Some(note))
        }
        (None, Some(error)) => bail!("EndToEndLatency failed: {error}\n{}", out.stdout),
        (None, None) => bail!("no figures in EndToEndLatency's output:\n{}", out.stdout),
    })
}

/// [`producer_perf_on`] against the cluster's brokers, with no client settings added.
pub(super) fn producer_perf(
    cluster: &Cluster,
    classpath: &str,
    topic: &str,
    records: u64,
    batch_size: usize,
    linger_ms: u64,
) -> Result<PerfResult> {
    let bootstrap = cluster.bootstrap();
    producer_perf_on(
        cluster,
        classpath,
        &bootstrap,
        &[],
        topic,
        records,
        batch_size,
        linger_ms,
    )
}

/// [`producer_perf`] against `bootstrap` with `client_args` added after the producer's
/// properties (`bench tls`: `--command-config FILE`, the TLS and SASL settings).
#[allow(clippy::too_many_arguments)]
pub(super) fn producer_perf_on(
    cluster: &Cluster,
    classpath: &str,
    bootstrap: &str,
    client_args: &[String],
    topic: &str,
    records: u64,
    batch_size: usize,
    linger_ms: u64,
) -> Result<PerfResult> {
    let cpu_before = cluster.cpu_ticks();
    let machine_before = machine_ticks();
    let t0 = Instant::now();
    let records_arg = records.to_string();
    let record_size = RECORD_SIZE.to_string();
    let batch = format!("batch.size={batch_size}");
    let linger = format!("linger.ms={linger_ms}");
    let max_request = format!("max.request.size={}", (2 << 20).max(batch_size * 2));
    let mut command = vec![
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic",
        topic,
        "--num-records",
        &records_arg,
        "--record-size",
        &record_size,
        "--throughput",
        "-1",
        "--bootstrap-server",
        bootstrap,
        "--command-property",
        "acks=all",
        &batch,
        &linger,
        // Room for a full batch per partition plus the batches in flight.
        "buffer.memory=67108864",
        // A 1 MiB batch plus the request's own header.
        &max_request,
        "compression.type=none",
    ];
    command.extend(client_args.iter().map(String::as_str));
    let out = java(classpath, &command, Duration::from_secs(600), true)?;
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

pub(super) struct E2e {
    pub(super) avg_ms: f64,
    pub(super) p50_ms: f64,
    pub(super) p99_ms: f64,
    pub(super) p999_ms: f64,
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
