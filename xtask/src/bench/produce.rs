//! The `bench produce` scenario: its arguments, the systems it compares, and the run itself
//! (the machine's limit, then each system's cluster started, driven and stopped in turn, then
//! the report).

use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use super::cluster::Cluster;
use super::kafka::kafka_classpath;
use super::load::{drive, E2e, PerfResult};
use super::machine::measure_limits;
use super::report::report;

/// Replicas per record: the topic's replication factor, so the bytes each record costs.
pub(super) const COPIES: u32 = 3;
pub(super) const RECORD_SIZE: usize = 1024;
pub(super) const BATCH_SIZES: [usize; 3] = [64 << 10, 256 << 10, 1 << 20];
/// Kafka's group coordinator's offsets topic (EndToEndLatency commits once at its end) kept
/// small.
const KAFKA_GROUP_CONFIG: &str = "offsets.topic.replication.factor=3\n\
                                  offsets.topic.num.partitions=3\n\
                                  group.initial.rebalance.delay.ms=0\n";

#[derive(clap::Args, Debug)]
pub(super) struct ProduceArgs {
    /// 1 KiB records per batch size (default 300000, or 40000 with --quick).
    #[arg(long)]
    pub(super) records: Option<u64>,
    /// A smaller run: fewer records, 256 MiB limit measurements.
    #[arg(long)]
    pub(super) quick: bool,
    /// The topic's partitions (3: one leader per broker).
    #[arg(long, default_value_t = 3)]
    pub(super) partitions: u32,
    /// The producer's linger.ms.
    #[arg(long, default_value_t = 5)]
    pub(super) linger_ms: u64,
    /// Records the end-to-end latency run sends one at a time (default 2000, 300 with --quick).
    #[arg(long)]
    pub(super) e2e_records: Option<u64>,
    /// Keep the temp directory (node logs and data) afterwards.
    #[arg(long)]
    pub(super) keep: bool,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    pub(super) against: Against,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Against {
    Kraftd,
    Kafka,
    Both,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum System {
    Kraftd,
    Kafka,
}

impl System {
    pub(super) fn name(self) -> &'static str {
        match self {
            System::Kraftd => "kraftd",
            System::Kafka => "Kafka",
        }
    }

    pub(super) fn topology(self) -> &'static str {
        match self {
            System::Kraftd => "3 controllers + 3 brokers",
            System::Kafka => "1 controller + 3 brokers, -Xmx512m per JVM",
        }
    }
}

/// One system's figures.
pub(super) struct SystemRun {
    pub(super) system: System,
    pub(super) perf: Vec<PerfResult>,
    pub(super) e2e: E2e,
    /// Why EndToEndLatency failed after printing its figures, if it did.
    pub(super) e2e_note: Option<String>,
    /// /proc/loadavg's 1, 5 and 15 minute averages just before the cluster started.
    pub(super) load_before: String,
}

pub(super) fn produce(root: &Path, args: ProduceArgs) -> Result<()> {
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
            System::Kraftd => Cluster::start_kraftd(&bin, &sys_dir, ""),
            System::Kafka => Cluster::start_kafka(&classpath, &sys_dir, KAFKA_GROUP_CONFIG),
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
pub(super) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}
