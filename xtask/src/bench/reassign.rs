//! `cargo xtask bench reassign`: the time to move partitions onto a new broker with Kafka's
//! own `kafka-reassign-partitions --execute --throttle`, kraftd beside Apache Kafka 4.4.0 on
//! the same machine, one run each. A benchmark: it prints figures and asserts nothing.
//!
//! Each system runs as `bench produce` starts it (kraftd: 3 controllers and brokers 4-6;
//! Kafka: 1 controller and brokers 1-3). A topic of `--partitions` partitions with one
//! replica each is created on the first two brokers (alternating, `--replica-assignment`),
//! so the third holds nothing, as a broker just added; `--partition-mib` MiB per partition
//! are produced with Kafka's `ProducerPerformance` (16 KiB records, acks=1, 1 MiB batches;
//! the sticky partitioner spreads them about evenly). Then every partition is moved onto
//! the third broker: `ReassignPartitionsCommand --execute --throttle <bytes/s>` (which sets
//! both throttle rates on the brokers involved and the throttled replicas on the topic),
//! and `--verify` every second until it reports every partition complete (it then removes
//! the throttles). The time printed runs from the start of `--execute` to that `--verify`;
//! each `--verify` is a JVM start (about a second here), so it carries that granularity.
//! Defaults suit a 2-core machine (10 × 64 MiB at 32 MiB/s); the issue's figure is
//! `--partitions 100 --partition-mib 1024` with the throttle of interest.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::cluster::Cluster;
use super::kafka::{java, java_output, kafka_classpath};
use super::produce::{loadavg, Against, System};

const TOPIC: &str = "bench-reassign";
const RECORD_SIZE: u64 = 16 * 1024;

#[derive(clap::Args, Debug)]
pub(super) struct ReassignArgs {
    /// Partitions moved.
    #[arg(long, default_value_t = 10)]
    partitions: u32,
    /// MiB produced per partition (on average).
    #[arg(long, default_value_t = 64)]
    partition_mib: u64,
    /// The reassignment's `--throttle`, in MiB/s (0: none).
    #[arg(long, default_value_t = 32)]
    throttle_mib: u64,
    /// Keep the temp directory (node logs and data) afterwards.
    #[arg(long)]
    keep: bool,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    against: Against,
}

/// One system's figures.
struct Run {
    system: System,
    outcome: Result<Moved, String>,
}

struct Moved {
    mib: f64,
    secs: f64,
    verifies: u32,
}

pub(super) fn reassign(root: &Path, args: ReassignArgs) -> Result<()> {
    let started = Instant::now();
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
    let dir = std::env::temp_dir().join(format!("kraftd-bench-reassign-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    println!("bench directory: {}", dir.display());
    let mut runs = Vec::new();
    for system in systems {
        let sys_dir = dir.join(system.name().to_lowercase());
        std::fs::create_dir_all(&sys_dir)?;
        println!(
            "==> {}: {} (load average {})",
            system.name(),
            system.topology(),
            loadavg()
        );
        let cluster = match system {
            System::Kraftd => Cluster::start_kraftd(&bin, &sys_dir, ""),
            System::Kafka => Cluster::start_kafka(&classpath, &sys_dir, ""),
        };
        let mut cluster = cluster.inspect_err(|_| {
            eprintln!(
                "{} did not start; its logs are in {} (kept)",
                system.name(),
                sys_dir.display()
            );
        })?;
        let outcome = drive(&cluster, &classpath, &sys_dir, &args);
        if let Err(e) = &outcome {
            eprintln!(
                "{}: {e:#}; its node logs are in {} (kept)",
                system.name(),
                sys_dir.display()
            );
        }
        cluster.stop();
        runs.push(Run {
            system,
            outcome: outcome.map_err(|e| format!("{e:#}")),
        });
    }
    if !args.keep && runs.iter().all(|r| r.outcome.is_ok()) {
        let _ = std::fs::remove_dir_all(&dir);
    }
    print_report(&args, &runs);
    println!(
        "(bench took {:.0} s; load average at the end {})",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    Ok(())
}

/// Creates and fills the topic on the first two brokers, moves it onto the third; the time
/// the move took.
fn drive(cluster: &Cluster, classpath: &str, dir: &Path, args: &ReassignArgs) -> Result<Moved> {
    let brokers: Vec<u32> = cluster
        .nodes
        .iter()
        .filter(|n| n.broker_port.is_some())
        .map(|n| n.id)
        .collect();
    let [first, second, new] = brokers[..] else {
        bail!("expected 3 brokers, got {brokers:?}");
    };
    let bootstrap = cluster.bootstrap();
    let assignment = (0..args.partitions)
        .map(|p| if p % 2 == 0 { first } else { second }.to_string())
        .collect::<Vec<_>>()
        .join(",");
    java(
        classpath,
        &[
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            &bootstrap,
            "--create",
            "--topic",
            TOPIC,
            "--replica-assignment",
            &assignment,
        ],
        Duration::from_secs(120),
        false,
    )?;
    let total_bytes = u64::from(args.partitions) * args.partition_mib * 1024 * 1024;
    let records = total_bytes.div_ceil(RECORD_SIZE);
    println!(
        "producing {} MiB into {} partitions on brokers {first} and {second}",
        total_bytes >> 20,
        args.partitions
    );
    let produce_limit = Duration::from_secs(300 + total_bytes / (10 << 20));
    java(
        classpath,
        &[
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic",
            TOPIC,
            "--num-records",
            &records.to_string(),
            "--record-size",
            &RECORD_SIZE.to_string(),
            "--throughput",
            "-1",
            "--bootstrap-server",
            &bootstrap,
            "--command-property",
            "acks=1",
            "batch.size=1048576",
            "linger.ms=10",
            "buffer.memory=67108864",
            "max.request.size=2097152",
            "compression.type=none",
        ],
        produce_limit,
        false,
    )
    .context("producing the data")?;

    let plan = dir.join("reassignment.json");
    let partitions = (0..args.partitions)
        .map(|p| format!(r#"{{"topic":"{TOPIC}","partition":{p},"replicas":[{new}]}}"#))
        .collect::<Vec<_>>()
        .join(",");
    std::fs::write(
        &plan,
        format!(r#"{{"version":1,"partitions":[{partitions}]}}"#),
    )?;
    let plan = plan.to_str().context("non-UTF-8 path")?.to_string();
    let tool = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";
    let throttle = (args.throttle_mib * 1024 * 1024).to_string();
    let mut execute = vec![
        tool,
        "--bootstrap-server",
        &bootstrap,
        "--reassignment-json-file",
        &plan,
        "--execute",
    ];
    if args.throttle_mib > 0 {
        execute.extend(["--throttle", &throttle]);
    }
    println!(
        "moving every partition onto broker {new}{}",
        if args.throttle_mib > 0 {
            format!(" at --throttle {throttle} B/s")
        } else {
            String::new()
        }
    );
    let t0 = Instant::now();
    java(classpath, &execute, Duration::from_secs(120), false).context("--execute")?;
    // Slower than a tenth of the throttle (or 5 MiB/s) is a failure, not a figure.
    let floor = (args.throttle_mib.max(50) << 20) / 10;
    let limit = Duration::from_secs(300 + total_bytes / floor);
    let mut verifies = 0;
    loop {
        verifies += 1;
        let out = java_output(
            classpath,
            &[
                tool,
                "--bootstrap-server",
                &bootstrap,
                "--reassignment-json-file",
                &plan,
                "--verify",
            ],
            Duration::from_secs(120),
            false,
        )?;
        if let Some(error) = out.error {
            bail!("--verify failed: {error}\n{}", out.stdout);
        }
        let complete = out.stdout.matches("is completed").count();
        if complete >= args.partitions as usize && !out.stdout.contains("still in progress") {
            break;
        }
        if t0.elapsed() > limit {
            bail!(
                "not done after {:?} ({complete} of {} partitions):\n{}",
                t0.elapsed(),
                args.partitions,
                out.stdout
            );
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let secs = t0.elapsed().as_secs_f64();
    println!("moved in {secs:.1} s ({verifies} --verify runs)");
    Ok(Moved {
        mib: (total_bytes >> 20) as f64,
        secs,
        verifies,
    })
}

fn print_report(args: &ReassignArgs, runs: &[Run]) {
    println!();
    println!(
        "bench reassign: {} partitions × {} MiB (RF 1, on 2 brokers) moved onto a third with \
         kafka-reassign-partitions --execute {}, until --verify reports all complete",
        args.partitions,
        args.partition_mib,
        if args.throttle_mib > 0 {
            format!("--throttle {} MiB/s", args.throttle_mib)
        } else {
            "(no throttle)".to_string()
        }
    );
    println!(
        "{:<8} {:>10} {:>10} {:>10} {:>9}",
        "system", "MiB moved", "time s", "MiB/s", "verifies"
    );
    for run in runs {
        match &run.outcome {
            Ok(m) => println!(
                "{:<8} {:>10.0} {:>10.1} {:>10.1} {:>9}",
                run.system.name(),
                m.mib,
                m.secs,
                m.mib / m.secs,
                m.verifies
            ),
            Err(e) => println!(
                "{:<8} not measured: {}",
                run.system.name(),
                e.lines().next().unwrap_or("")
            ),
        }
    }
    let secs = |s: System| {
        runs.iter()
            .find(|r| r.system == s)
            .and_then(|r| r.outcome.as_ref().ok())
            .map(|m| m.secs)
    };
    if let (Some(ours), Some(theirs)) = (secs(System::Kraftd), secs(System::Kafka)) {
        println!("kraftd/Kafka time: {:.2}", ours / theirs);
    }
}
