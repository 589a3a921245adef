//! `cargo xtask bench cost [--quick]`: what a byte costs (issue 33's first rows) — the CPU
//! seconds of every node per GiB produced and per GiB consumed, over PLAINTEXT, SSL and
//! SASL_SSL (SCRAM-SHA-512), at full speed and at one fixed offered rate, and the brokers'
//! memory; kraftd beside Apache Kafka 4.4.0 in one run, with a C client so that the client is
//! not the limit. A benchmark: it prints figures and asserts nothing.
//!
//! What. Each system runs as `bench produce` runs it (`kraftd.rs`: 3 controllers and 3
//! brokers, release build; `kafka.rs`: 1 controller and 3 brokers of 512 MiB heap), its
//! brokers with the three client listeners of `bench tls` (`tls::secured_listeners`: the same
//! PEM files and SCRAM user for both systems; replication and the controllers on PLAINTEXT).
//! Topics of `--partitions` partitions, RF 3, `min.insync.replicas=2`. The load generator is
//! librdkafka's `rdkafka_performance` (`rdkafka.rs`, built on first use). Per listener: a
//! warm-up (an eighth of the records, produced and consumed on a topic of its own), then
//! `--records` records of 1 KiB produced with `acks=all` (`linger.ms` 5, librdkafka's other
//! defaults: 1 MB batches), then the same records consumed from the beginning. Then, over
//! PLAINTEXT, a fixed offered rate: `--rate` records/s for `--rate-secs` seconds with
//! `linger.ms` 0, small batches (the client's rate limiter spins between records, taking a
//! core of its own; `--rate-nice 19` leaves the nodes first call on the cores, at the risk
//! of a starved client offering less than the rate on a busy machine).
//!
//! Figures per run: records/s (the tool's own clock, first send to last acknowledgement or
//! first to last record), the CPU seconds of every node process over the client's whole run
//! (utime + stime from `/proc/<pid>/stat`, all threads: the controllers count too) per GiB
//! of payload (records x 1 KiB), the nodes' cores over the run, the client's own CPU seconds
//! per GiB (GNU time) and the machine's busy share (the machine may be shared: the load
//! average is printed per system). After the runs, each broker's RSS and peak RSS (VmHWM).
//!
//! `--perf DIR` (kraftd only): `perf record -g` of the three brokers during each produce and
//! consume run, the files kept in DIR and their top symbols printed after each run (perf's
//! sampling slows the run it watches: take figures from a run without it).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};

use super::cluster::Cluster;
use super::machine::{clock_ticks, machine_ticks, status_bytes};
use super::produce::{Against, System, COPIES, RECORD_SIZE};
use super::rdkafka::{self, ClientRun};
use super::scale::poll_until;
use super::scale_client::Conn;
use super::systems::{run_systems, Frame, RunFigures, RunStatus, SystemRun};
use super::tls::{secured_listeners, FORMAT_ARGS, LISTENERS, SCRAM_NAME, SCRAM_PASSWORD};

#[derive(clap::Args, Debug)]
pub(super) struct CostArgs {
    /// 1 KiB records per full-speed run (default 524288 = 512 MiB, or 65536 with --quick).
    #[arg(long)]
    records: Option<u64>,
    /// A smaller run.
    #[arg(long)]
    quick: bool,
    /// The fixed offered rate, records/s.
    #[arg(long, default_value_t = 8000)]
    rate: u64,
    /// Seconds at the fixed rate (default 15, or 5 with --quick).
    #[arg(long)]
    rate_secs: Option<u64>,
    /// The producer's linger.ms at the fixed rate.
    #[arg(long, default_value_t = 0)]
    rate_linger_ms: u64,
    /// The client's nice value at the fixed rate.
    #[arg(long, default_value_t = 0)]
    rate_nice: i32,
    /// The topics' partitions (3: one leader per broker).
    #[arg(long, default_value_t = 3)]
    partitions: u32,
    /// perf record -g of kraftd's brokers during each run, the files kept in this directory
    /// and their top symbols printed (slows the runs it watches).
    #[arg(long)]
    perf: Option<PathBuf>,
    /// A kraftd release binary to run instead of building target/release/kraftd (one built
    /// from the same sources elsewhere, when this machine is too busy for a release build).
    #[arg(long)]
    kraftd_bin: Option<PathBuf>,
    /// Keep the temp directory (node logs and data, the certificates) afterwards.
    #[arg(long)]
    keep: bool,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    against: Against,
}

/// The producer's linger.ms at full speed (ProducerPerformance's in `bench produce`).
const LINGER_MS: u64 = 5;
const GIB: f64 = (1u64 << 30) as f64;
const MIB: f64 = (1u64 << 20) as f64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Produce,
    Consume,
    /// Produce at the fixed offered rate.
    AtRate,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Produce => "produce",
            Kind::Consume => "consume",
            Kind::AtRate => "produce@rate",
        }
    }
}

/// One measured run of the client.
#[derive(Debug, Clone)]
struct Measured {
    listener: &'static str,
    kind: Kind,
    client: ClientRun,
    /// CPU seconds of every node over the client's run.
    node_cpu_s: f64,
    machine_busy: f64,
}

impl Measured {
    fn gib(&self) -> f64 {
        self.client.records as f64 * RECORD_SIZE as f64 / GIB
    }

    fn node_cpu_per_gib(&self) -> f64 {
        self.node_cpu_s / self.gib().max(f64::MIN_POSITIVE)
    }

    fn client_cpu_per_gib(&self) -> f64 {
        self.client.cpu_s / self.gib().max(f64::MIN_POSITIVE)
    }

    fn mib_per_sec(&self) -> f64 {
        self.client.records_per_sec * RECORD_SIZE as f64 / MIB
    }

    fn node_cores(&self) -> f64 {
        self.node_cpu_s / self.client.wall.as_secs_f64().max(1e-9)
    }
}

/// One system's figures.
#[derive(Default)]
struct Figures {
    runs: Vec<Measured>,
    /// Each broker's (RSS, peak RSS) in bytes after the runs.
    broker_memory: Vec<(u64, u64)>,
    status: RunStatus,
}

impl RunFigures for Figures {
    fn status(&mut self) -> &mut RunStatus {
        &mut self.status
    }
}

/// What every run of a system shares.
struct Setup<'a> {
    cluster: &'a Cluster,
    client: &'a Path,
    pki: &'a Path,
    args: &'a CostArgs,
    perf: Option<&'a Path>,
}

pub(super) fn cost(root: &Path, args: CostArgs) -> Result<()> {
    let records = args
        .records
        .unwrap_or(if args.quick { 65_536 } else { 524_288 });
    let rate_secs = args.rate_secs.unwrap_or(if args.quick { 5 } else { 15 });
    let client = rdkafka::rdkafka_performance(root)?;
    if let Some(dir) = &args.perf {
        std::fs::create_dir_all(dir)?;
    }
    let frame = Frame {
        root,
        name: "cost",
        against: args.against,
        keep: args.keep,
        kafka_tools: false,
        what: "3 client listeners (PLAINTEXT, SSL, SASL_SSL), rdkafka_performance",
        kraftd_bin: args.kraftd_bin.as_deref(),
    };
    run_systems(
        frame,
        |run, _nodes, figures: &mut Figures| {
            drive(run, &client, &args, records, rate_secs, figures)
        },
        |runs| report(&args, records, rate_secs, runs),
    )
}

fn drive(
    run: &SystemRun<'_>,
    client: &Path,
    args: &CostArgs,
    records: u64,
    rate_secs: u64,
    figures: &mut Figures,
) -> Result<()> {
    let pki = run.dir.join("pki");
    let broker_config = secured_listeners(&pki)?;
    let mut cluster = match run.system {
        System::Kraftd => {
            Cluster::start_kraftd_formatted(run.bin, run.dir, &broker_config, &FORMAT_ARGS)?
        }
        System::Kafka => {
            Cluster::start_kafka_formatted(run.classpath, run.dir, &broker_config, &FORMAT_ARGS)?
        }
    };
    let perf = match (&args.perf, run.system) {
        (Some(dir), System::Kraftd) => Some(dir.as_path()),
        _ => None,
    };
    let setup = Setup {
        cluster: &cluster,
        client,
        pki: &pki,
        args,
        perf,
    };
    create_topics(&setup)?;
    let bootstraps = [
        cluster.bootstrap(),
        cluster.bootstrap_of("ssl_port"),
        cluster.bootstrap_of("sasl_ssl_port"),
    ];
    for (listener, bootstrap) in LISTENERS.into_iter().zip(&bootstraps) {
        let warm_up = (records / 8).max(1000);
        println!("==> {listener}: warm-up, {warm_up} records produced and consumed");
        let topic = format!("{}-warm-up", topic_of(listener));
        setup.measure(listener, bootstrap, Kind::Produce, &topic, warm_up, false)?;
        setup.measure(listener, bootstrap, Kind::Consume, &topic, warm_up, false)?;
        let topic = topic_of(listener);
        for kind in [Kind::Produce, Kind::Consume] {
            println!("==> {listener}: {} {records} x 1 KiB", kind.name());
            let m = setup.measure(listener, bootstrap, kind, &topic, records, true)?;
            print_run(&m);
            figures.runs.push(m);
        }
    }
    let at_rate = args.rate * rate_secs;
    println!(
        "==> PLAINTEXT: {at_rate} x 1 KiB offered at {} records/s, linger.ms={}",
        args.rate, args.rate_linger_ms
    );
    let m = setup.measure(
        LISTENERS[0],
        &bootstraps[0],
        Kind::AtRate,
        "cost-rate",
        at_rate,
        false,
    )?;
    print_run(&m);
    figures.runs.push(m);
    figures.broker_memory = cluster
        .broker_pids()
        .into_iter()
        .map(|pid| (status_bytes(pid, "VmRSS:"), status_bytes(pid, "VmHWM:")))
        .collect();
    cluster.stop();
    Ok(())
}

/// "cost-plaintext", "cost-ssl", "cost-sasl-ssl".
fn topic_of(listener: &str) -> String {
    format!("cost-{}", listener.to_lowercase().replace('_', "-"))
}

/// Every topic the runs use, in one CreateTopics, then until each partition has its full ISR.
fn create_topics(setup: &Setup<'_>) -> Result<()> {
    let mut names: Vec<String> = LISTENERS
        .iter()
        .flat_map(|l| [topic_of(l), format!("{}-warm-up", topic_of(l))])
        .collect();
    names.push("cost-rate".into());
    let port = setup.cluster.nodes.iter().find_map(|n| n.broker_port);
    let port = port.context("no broker")?;
    let partitions = setup.args.partitions;
    Conn::connect(port)?.create_topics_configured(
        &names,
        partitions as i32,
        COPIES as i16,
        &[("min.insync.replicas", "2")],
    )?;
    let expected = names.len() * partitions as usize;
    poll_until(
        "every partition with its full ISR",
        Duration::from_secs(60),
        || Ok(Conn::connect(port)?.metadata("cost-")?.1.full_isr == expected),
    )?;
    println!("{} topics created", names.len());
    Ok(())
}

impl Setup<'_> {
    /// One run of the client: `records` records of `topic` produced (or consumed from the
    /// beginning) through `listener` at `bootstrap`, with the nodes' CPU over it; profiled
    /// when `profile` and `--perf` say so.
    fn measure(
        &self,
        listener: &'static str,
        bootstrap: &str,
        kind: Kind,
        topic: &str,
        records: u64,
        profile: bool,
    ) -> Result<Measured> {
        let mut args: Vec<String> = vec!["-b".into(), bootstrap.into(), "-t".into(), topic.into()];
        args.extend(self.security(listener));
        let mut nice = 0;
        match kind {
            Kind::Produce | Kind::AtRate => {
                let linger = match kind {
                    Kind::AtRate => self.args.rate_linger_ms,
                    _ => LINGER_MS,
                };
                args.extend([
                    "-P".into(),
                    "-s".into(),
                    RECORD_SIZE.to_string(),
                    "-c".into(),
                    records.to_string(),
                    "-a".into(),
                    "-1".into(),
                    "-X".into(),
                    format!("linger.ms={linger}"),
                ]);
                if kind == Kind::AtRate {
                    args.extend(["-r".into(), self.args.rate.to_string()]);
                    nice = self.args.rate_nice;
                }
            }
            Kind::Consume => {
                args.extend(["-C".into(), "-o".into(), "beginning".into(), "-e".into()]);
                args.extend(["-c".into(), records.to_string()]);
                for p in 0..self.args.partitions {
                    args.extend(["-p".into(), p.to_string()]);
                }
            }
        }
        let perf = match self.perf {
            Some(dir) if profile => {
                let file = dir.join(format!("{}-{}.data", topic_of(listener), kind.name()));
                Some((start_perf(&self.cluster.broker_pids(), &file)?, file))
            }
            _ => None,
        };
        let cpu_before = self.cluster.all_cpu_ticks();
        let machine_before = machine_ticks();
        let timeout = Duration::from_secs(120 + records / 2_000);
        let outcome = rdkafka::run(self.client, &args, nice, timeout);
        let node_cpu_s = (self.cluster.all_cpu_ticks() - cpu_before) as f64 / clock_ticks();
        let (busy, total) = machine_ticks();
        let machine_busy =
            (busy - machine_before.0) as f64 / (total - machine_before.1).max(1) as f64;
        if let Some((child, file)) = perf {
            stop_perf(child);
            print_perf_top(&file);
        }
        let client = outcome?;
        if client.records < records {
            anyhow::bail!(
                "{} {topic} over {listener}: {} of {records} records",
                kind.name(),
                client.records
            );
        }
        Ok(Measured {
            listener,
            kind,
            client,
            node_cpu_s,
            machine_busy,
        })
    }

    /// librdkafka's properties for `listener`: TLS with the bench's CA (host name checked),
    /// and the SCRAM-SHA-512 login on SASL_SSL.
    fn security(&self, listener: &str) -> Vec<String> {
        let ca = format!("ssl.ca.location={}", self.pki.join("ca.pem").display());
        let x = |prop: String| ["-X".to_string(), prop];
        match listener {
            "SSL" => [x("security.protocol=ssl".into()), x(ca)].concat(),
            "SASL_SSL" => [
                x("security.protocol=sasl_ssl".into()),
                x(ca),
                x("sasl.mechanisms=SCRAM-SHA-512".into()),
                x(format!("sasl.username={SCRAM_NAME}")),
                x(format!("sasl.password={SCRAM_PASSWORD}")),
            ]
            .concat(),
            _ => Vec::new(),
        }
    }
}

/// `perf record -g` of `pids` into `file`, until [`stop_perf`].
fn start_perf(pids: &[u32], file: &Path) -> Result<Child> {
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    Command::new("perf")
        .args(["record", "-g", "-F", "499", "-o"])
        .arg(file)
        .args(["-p", &pids.join(",")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting perf record (the --perf option needs perf)")
}

/// SIGINT, as perf record expects, then its end.
fn stop_perf(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// The top symbols by own samples of a perf file, printed indented.
fn print_perf_top(file: &Path) {
    let out = Command::new("perf")
        .args(["report", "--no-children", "--sort", "dso,symbol", "--stdio"])
        .args(["--percent-limit", "1", "-g", "none", "-i"])
        .arg(file)
        .stderr(Stdio::null())
        .output();
    let Ok(out) = out else { return };
    println!("    perf: {} (top symbols, own samples)", file.display());
    for line in String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .take(25)
    {
        println!("    {line}");
    }
}

fn print_run(m: &Measured) {
    println!(
        "    {:.0} records/s, {:.1} MiB/s; nodes {:.1} CPU-s/GiB ({:.2} cores), client {:.1} \
         CPU-s/GiB, machine {:.0}% busy",
        m.client.records_per_sec,
        m.mib_per_sec(),
        m.node_cpu_per_gib(),
        m.node_cores(),
        m.client_cpu_per_gib(),
        100.0 * m.machine_busy
    );
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() {
        format!("{:.2}", a / b)
    } else {
        "-".into()
    }
}

fn report(args: &CostArgs, records: u64, rate_secs: u64, runs: &[(System, Figures)]) {
    println!();
    println!(
        "Cost per byte: {records} x 1 KiB per full-speed run (linger.ms={LINGER_MS}), acks=all, \
         RF {COPIES}, min.insync.replicas=2, {} partitions; {} records/s offered for {rate_secs} \
         s (linger.ms={}) over PLAINTEXT; client rdkafka_performance (librdkafka of rdkafka-sys \
         {})",
        args.partitions,
        args.rate,
        args.rate_linger_ms,
        rdkafka::RDKAFKA_SYS
    );
    for (system, f) in runs {
        println!(
            "  {:<7} {} (load average before it: {}){}",
            system.name(),
            system.topology(),
            f.status.load_before,
            f.status
                .error
                .as_ref()
                .map(|e| format!("; FAILED: {e}"))
                .unwrap_or_default()
        );
    }
    println!();
    println!(
        "{:<8} {:<10} {:<13} {:>10} {:>8} {:>11} {:>11} {:>12} {:>8}",
        "system",
        "listener",
        "run",
        "records/s",
        "MiB/s",
        "CPU-s/GiB",
        "node cores",
        "client s/GiB",
        "machine"
    );
    for (system, f) in runs {
        for m in &f.runs {
            println!(
                "{:<8} {:<10} {:<13} {:>10.0} {:>8.1} {:>11.2} {:>11.2} {:>12.2} {:>7.0}%",
                system.name(),
                m.listener,
                m.kind.name(),
                m.client.records_per_sec,
                m.mib_per_sec(),
                m.node_cpu_per_gib(),
                m.node_cores(),
                m.client_cpu_per_gib(),
                100.0 * m.machine_busy
            );
        }
    }
    println!(
        "CPU-s/GiB: CPU seconds of every node process (controllers included) per GiB of \
         payload; node cores: their CPU over the client's run; client s/GiB: \
         rdkafka_performance's own CPU; machine: busy share of all cores."
    );
    let find = |system: System| runs.iter().find(|(s, _)| *s == system).map(|(_, f)| f);
    if let (Some(k), Some(a)) = (find(System::Kraftd), find(System::Kafka)) {
        println!();
        println!("kraftd / Kafka (records/s: > 1 = kraftd faster; CPU-s/GiB: < 1 = cheaper)");
        println!(
            "{:<10} {:<13} {:>10} {:>11}",
            "listener", "run", "records/s", "CPU-s/GiB"
        );
        for km in &k.runs {
            let Some(am) = a
                .runs
                .iter()
                .find(|m| m.listener == km.listener && m.kind == km.kind)
            else {
                continue;
            };
            println!(
                "{:<10} {:<13} {:>10} {:>11}",
                km.listener,
                km.kind.name(),
                ratio(km.client.records_per_sec, am.client.records_per_sec),
                ratio(km.node_cpu_per_gib(), am.node_cpu_per_gib())
            );
        }
    }
    println!();
    println!(
        "TLS / PLAINTEXT per system (records/s: 1 = TLS costs no throughput, goal >= 0.85; \
         CPU-s/GiB: goal <= 1.3)"
    );
    println!(
        "{:<8} {:<10} {:<8} {:>10} {:>11}",
        "system", "listener", "run", "records/s", "CPU-s/GiB"
    );
    for (system, f) in runs {
        for m in f.runs.iter().filter(|m| m.listener != LISTENERS[0]) {
            let Some(plain) = f
                .runs
                .iter()
                .find(|p| p.listener == LISTENERS[0] && p.kind == m.kind)
            else {
                continue;
            };
            println!(
                "{:<8} {:<10} {:<8} {:>10} {:>11}",
                system.name(),
                m.listener,
                m.kind.name(),
                ratio(m.client.records_per_sec, plain.client.records_per_sec),
                ratio(m.node_cpu_per_gib(), plain.node_cpu_per_gib())
            );
        }
    }
    println!();
    println!("brokers' memory after the runs (MiB; peak = VmHWM):");
    let memory = |f: &Figures| {
        let n = f.broker_memory.len().max(1) as f64;
        let mean = f.broker_memory.iter().map(|m| m.0).sum::<u64>() as f64 / n / MIB;
        let peak = f.broker_memory.iter().map(|m| m.1).max().unwrap_or(0) as f64 / MIB;
        (mean, peak)
    };
    for (system, f) in runs {
        let (mean, peak) = memory(f);
        println!(
            "  {:<7} RSS per broker {mean:.0} (mean of {}), peak of any broker {peak:.0}",
            system.name(),
            f.broker_memory.len()
        );
    }
    if let (Some(k), Some(a)) = (find(System::Kraftd), find(System::Kafka)) {
        let ((km, kp), (am, ap)) = (memory(k), memory(a));
        println!(
            "  kraftd/Kafka RSS {}, peak {}",
            ratio(km, am),
            ratio(kp, ap)
        );
    }
}
