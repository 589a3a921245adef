//! `cargo xtask bench txn [--quick]`: transactional produce beside non-transactional produce
//! with a stock client, kraftd beside Apache Kafka 4.4.0 on the same machine, one run, one
//! table with the ratios kraftd/Kafka. A benchmark: it prints figures and asserts nothing.
//!
//! What. On each system, with confluent-kafka 2.16.1 (librdkafka) driven by `txn.py` (beside
//! this file, run with the stock-client venv's python as `bench groups` runs `groups.py`):
//!
//! - Transactional throughput: one transactional producer (`acks=all`, librdkafka's defaults
//!   otherwise, `linger.ms` 5) runs transactions of `--per-txn` (100) records of 1 KiB, one
//!   after another (`begin_transaction`, 100 `produce`, `commit_transaction`) for `--secs`
//!   (20, or 6 with `--quick`): committed records/s, transactions/s, and the p50/p99 of the
//!   `commit_transaction()` call. That call first flushes the transaction's records still in
//!   the client (at most `linger.ms` old), then sends EndTxn and waits for its answer, which
//!   a coordinator gives once PrepareCommit is written to `__transaction_state` (replicated),
//!   before the markers are written. librdkafka has no KIP-890 (transactions V2), so both
//!   systems run transactions V1: each transaction's AddPartitionsToTxn, and the next
//!   transaction's first one waits (CONCURRENT_TRANSACTIONS, retried by the client) until
//!   the previous one's markers are written, so the markers' cost shows in transactions/s
//!   rather than in the commit latency: the records of a partition not yet added wait in the
//!   client, and `commit_transaction` waits for them. (In a first run librdkafka's `eos`
//!   debug log showed Kafka answering about two CONCURRENT_TRANSACTIONS per transaction,
//!   librdkafka retrying each after 20 ms, and kraftd about one per 50 transactions.)
//! - The same records non-transactionally, for the same time: an idempotent producer
//!   (`enable.idempotence`, `acks=all`) produces as fast as the client takes them, then
//!   flushes; records/s counts until the last is acknowledged. The row "transactional /
//!   non-transactional" is each system's transactional overhead (1 = none).
//! - End-to-end latency: a `read_committed` consumer (assigned every partition, no group
//!   protocol) runs in a thread of the same process through both runs; each record carries its
//!   produce time (`perf_counter` in the value, one process so one clock) and the consumer
//!   keeps now - then on receipt, p50/p99 per run. A transaction's records become visible at
//!   its commit (the markers written, the LSO moved), so the transactional figure is about the
//!   time a transaction takes to fill and commit plus the markers and the fetch; the
//!   non-transactional one, with a producer that saturates the client, is mostly the client's
//!   own queue and is printed for reference only. How many of the committed records the
//!   consumer saw (all, unless something is lost) is printed below the table.
//!
//! How. Both systems run as `bench produce` and `bench groups` run them, one after the other:
//! kraftd as 3 controllers and 3 brokers (release build), Kafka 4.4.0 from the jars the tests
//! use as 1 controller and 3 brokers of 512 MiB heap (`kraftd.rs`, `kafka.rs`), their brokers
//! with the same settings ([`TXN_CONFIG`]: `__transaction_state` of 10 partitions, RF 3,
//! `min.isr` 2; `__consumer_offsets` of 10 partitions; no initial rebalance delay). The topic
//! has 3 partitions, RF 3 and `min.insync.replicas=2` (created with the client's admin API).
//! Not timed: the first InitProducerId (retried until it succeeds: it creates
//! `__transaction_state` and loads the coordinator's partition), then `--warm-secs` (3, 2 with
//! `--quick`) of transactions and a second of non-transactional records, until the consumer
//! has seen them (Kafka's JIT warms too).
//!
//! Caveats. One Python process drives everything: the producer in the main thread, the
//! consumer in another, sharing the GIL, and both clusters share the machine's cores with it
//! (the load average before each system is printed); the client's share is the same for both.
//! The non-transactional producer is bounded by what one Python thread can hand librdkafka
//! (about 1 KiB per `produce` call), so on a fast broker that figure, and with it the overhead
//! ratio, is partly the client's limit. The transactional producer is synchronous per
//! transaction (one commit at a time, as an application's loop is), so its records/s is
//! dominated by round trips per transaction, not bandwidth. Neither system fsyncs per write
//! (their defaults). Kafka has 1 controller, kraftd 3 (off both paths). librdkafka's log goes
//! to `client.log` in each system's temp directory, kept with `--keep` or when something
//! failed; `TXN_BENCH_DEBUG=eos,protocol` (librdkafka's `debug`) makes it verbose.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use serde_json::Value;

use super::cluster::Cluster;
use super::groups::{drive, stock_python};
use super::kafka::kafka_classpath;
use super::produce::{loadavg, Against, System};

/// The broker settings both systems get.
const TXN_CONFIG: &str = "transaction.state.log.num.partitions=10\n\
                          transaction.state.log.replication.factor=3\n\
                          transaction.state.log.min.isr=2\n\
                          offsets.topic.num.partitions=10\n\
                          offsets.topic.replication.factor=3\n\
                          group.initial.rebalance.delay.ms=0\n";

#[derive(clap::Args, Debug)]
pub(super) struct TxnArgs {
    /// A shorter run: 6 s per run, 2 s of warm-up.
    #[arg(long)]
    quick: bool,
    /// Seconds each timed run (transactional, then non-transactional) lasts (default 20, or 6
    /// with --quick).
    #[arg(long)]
    secs: Option<f64>,
    /// Seconds of transactions before the timed runs (default 3, or 2 with --quick).
    #[arg(long)]
    warm_secs: Option<f64>,
    /// Records (1 KiB each) per transaction.
    #[arg(long, default_value_t = 100)]
    per_txn: u32,
    /// Keep the temp directory (node logs, the client's log) afterwards.
    #[arg(long)]
    keep: bool,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    against: Against,
}

/// One system's figures: txn.py's JSON line, or why there is none.
struct Run {
    system: System,
    result: Result<Value, String>,
    load_before: String,
}

pub(super) fn txn(root: &Path, args: TxnArgs) -> Result<()> {
    let started = Instant::now();
    let secs = args.secs.unwrap_or(if args.quick { 6.0 } else { 20.0 });
    let warm_secs = args.warm_secs.unwrap_or(if args.quick { 2.0 } else { 3.0 });
    let systems = match args.against {
        Against::Kraftd => vec![System::Kraftd],
        Against::Kafka => vec![System::Kafka],
        Against::Both => vec![System::Kraftd, System::Kafka],
    };
    let python = stock_python(root)?;
    let script = root.join("xtask/src/bench/txn.py");
    let classpath = kafka_classpath(root)?;
    let bin = root.join("target").join("release").join("kraftd");
    if systems.contains(&System::Kraftd) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        crate::run(root, &cargo, &["build", "--release", "--bin", "kraftd"])?;
    }

    let dir = std::env::temp_dir().join(format!("kraftd-bench-txn-{}", std::process::id()));
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
            System::Kraftd => Cluster::start_kraftd(&bin, &sys_dir, TXN_CONFIG),
            System::Kafka => Cluster::start_kafka(&classpath, &sys_dir, TXN_CONFIG),
        };
        let mut cluster = cluster.inspect_err(|_| {
            eprintln!(
                "{} did not start; its logs are in {} (kept)",
                system.name(),
                sys_dir.display()
            );
        })?;
        let result = drive(
            &python,
            &script,
            &cluster.bootstrap(),
            &sys_dir.join("client.log"),
            &[
                "--secs",
                &secs.to_string(),
                "--warm-secs",
                &warm_secs.to_string(),
                "--per-txn",
                &args.per_txn.to_string(),
            ],
        );
        cluster.stop();
        if let Err(e) = &result {
            eprintln!(
                "txn.py failed against {}: {e}; logs in {} (kept)",
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
    report(secs, args.per_txn, &runs, &load_start);
    println!(
        "(bench took {:.0} s; load average at the end {})",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The report.

/// A figure at `path` in a run's JSON (as `["txn", "records_per_sec"]`).
fn figure(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

/// Each row: its label, how to compute it from a run's JSON, how to print it.
type Row = (&'static str, fn(&Value) -> Option<f64>, fn(f64) -> String);

fn rows() -> Vec<Row> {
    fn rate(x: f64) -> String {
        format!("{x:.0}")
    }
    fn one_decimal(x: f64) -> String {
        format!("{x:.1}")
    }
    fn ms(x: f64) -> String {
        format!("{x:.1} ms")
    }
    fn ratio(x: f64) -> String {
        format!("{x:.2}")
    }
    vec![
        (
            "transactional: records/s",
            |v| figure(v, &["txn", "records_per_sec"]),
            rate,
        ),
        (
            "transactional: transactions/s",
            |v| figure(v, &["txn", "txns_per_sec"]),
            one_decimal,
        ),
        (
            "transactional: commit_transaction p50",
            |v| figure(v, &["txn", "commit_p50_ms"]),
            ms,
        ),
        (
            "transactional: commit_transaction p99",
            |v| figure(v, &["txn", "commit_p99_ms"]),
            ms,
        ),
        (
            "non-transactional (idempotent, acks=all): records/s",
            |v| figure(v, &["plain", "records_per_sec"]),
            rate,
        ),
        (
            "transactional / non-transactional records/s",
            |v| {
                let t = figure(v, &["txn", "records_per_sec"])?;
                let p = figure(v, &["plain", "records_per_sec"])?;
                (p > 0.0).then(|| t / p)
            },
            ratio,
        ),
        (
            "read_committed end-to-end, transactional: p50",
            |v| figure(v, &["e2e", "txn", "p50_ms"]),
            ms,
        ),
        (
            "read_committed end-to-end, transactional: p99",
            |v| figure(v, &["e2e", "txn", "p99_ms"]),
            ms,
        ),
        (
            "(ref.) end-to-end, non-transactional: p50",
            |v| figure(v, &["e2e", "plain", "p50_ms"]),
            ms,
        ),
        (
            "(ref.) end-to-end, non-transactional: p99",
            |v| figure(v, &["e2e", "plain", "p99_ms"]),
            ms,
        ),
    ]
}

fn report(secs: f64, per_txn: u32, runs: &[Run], load_start: &str) {
    println!();
    println!(
        "transactional produce benchmark on one host ({} cores): confluent-kafka 2.16.1 \
         (librdkafka), one Python process; topic of 3 partitions, RF 3, min.insync.replicas=2; \
         {per_txn} records of 1 KiB per transaction, {secs} s per run",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    println!(
        "  brokers of both: {}",
        TXN_CONFIG.trim_end().replace('\n', ", ")
    );
    for run in runs {
        let state = run
            .result
            .as_ref()
            .ok()
            .and_then(|v| v.get("txn_state_topic"))
            .filter(|t| !t.is_null())
            .map_or("?".to_string(), |t| {
                format!(
                    "{} partitions, {} replicas, {} in sync",
                    t["partitions"], t["replicas"], t["isr"]
                )
            });
        println!(
            "  {:<7} {} (load average before it: {}); __transaction_state at the end: {state}",
            run.system.name(),
            run.system.topology(),
            run.load_before
        );
    }
    println!("  load average before the bench: {load_start}");
    println!();

    let rows = rows();
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    print!("{:<width$}", "measurement");
    for run in runs {
        print!(" | {:>14}", run.system.name());
    }
    let both = runs.len() == 2;
    if both {
        print!(" | {:>12}", "kraftd/Kafka");
    }
    println!();
    println!(
        "{}",
        "-".repeat(width + 17 * runs.len() + if both { 15 } else { 0 })
    );
    for (label, pick, show) in &rows {
        print!("{label:<width$}");
        let values: Vec<Option<f64>> = runs
            .iter()
            .map(|run| run.result.as_ref().ok().and_then(pick))
            .collect();
        for value in &values {
            let text = value.map_or("n/a".to_string(), show);
            print!(" | {text:>14}");
        }
        if both {
            let ratio = match (values[0], values[1]) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
                _ => "-".into(),
            };
            print!(" | {ratio:>12}");
        }
        println!();
    }
    println!();
    println!(
        "kraftd/Kafka: above 1 is better for kraftd in records/s, transactions/s and the \
         transactional/non-transactional ratio (1 = no overhead), below 1 in latencies."
    );
    println!(
        "commit_transaction: the call's time (it flushes the transaction's last records, then \
         EndTxn); end-to-end: produce() to receipt by a read_committed consumer in the same \
         process; (ref.) rows: a saturating producer, mostly the client's queue."
    );
    for run in runs {
        let v = match &run.result {
            Ok(v) => v,
            Err(e) => {
                println!("{}: n/a: {e}", run.system.name());
                continue;
            }
        };
        let mut notes = Vec::new();
        for (name, key) in [("transactional", "txn"), ("non-transactional", "plain")] {
            if let Some(e) = v
                .get(key)
                .and_then(|r| r.get("error"))
                .and_then(Value::as_str)
            {
                notes.push(format!("{name} run: {e}"));
            }
            if let (Some(seen), Some(expected)) = (
                figure(v, &["e2e", key, "count"]),
                figure(v, &["e2e", key, "expected"]),
            ) {
                notes.push(format!(
                    "read_committed consumer saw {seen} of {expected} {name} records"
                ));
            }
        }
        if let Some(aborts) = figure(v, &["txn", "aborts"]).filter(|a| *a > 0.0) {
            notes.push(format!(
                "{aborts} transactions aborted after a failed commit"
            ));
        }
        println!("{}: {}", run.system.name(), notes.join("; "));
        let errors: Vec<&str> = v
            .get("client_errors")
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
