//! `cargo xtask bench tls [--quick]`: produce throughput and latency over TLS and over
//! SASL_SSL beside PLAINTEXT, kraftd beside Apache Kafka 4.4.0 on the same machine, one run,
//! printed as a table with the ratios SSL/PLAINTEXT and SASL_SSL/PLAINTEXT per system and
//! kraftd/Kafka per listener. A benchmark: it prints figures and asserts nothing.
//!
//! What. Each system's brokers get three client listeners on loopback: `PLAINTEXT`, `SSL`
//! (server authentication only: a PEM keystore holding an EC P-256 certificate for
//! 127.0.0.1 signed by a CA the bench makes with the `openssl` command; both systems read
//! the same files through `ssl.keystore.type=PEM`) and `SASL_SSL` (the same TLS, then a
//! SCRAM-SHA-512 login as the user `bench`, which both systems' controllers are formatted
//! with: `kraftd format --add-scram` and Kafka's `StorageTool format --add-scram`, 4096
//! iterations). Replication and the controllers stay on PLAINTEXT for both, so the
//! difference is the client's connections. Kafka's own `ProducerPerformance` (from the jars
//! the tests use) produces `--records` records of 1 KiB with `acks=all`, `batch.size`
//! `--batch-size` (64 KiB), `linger.ms` 5, to a topic of 3 partitions, RF 3,
//! `min.insync.replicas=2`: through the PLAINTEXT listener, then the SSL one
//! (`security.protocol=SSL`, the CA as a PEM truststore, host name verification on, TLS 1.3
//! negotiated by both), then the SASL_SSL one (`sasl.mechanism=SCRAM-SHA-512`). It reports
//! records/s, MiB/s and the producer's p50/p99 latency (send to acknowledgement), and the
//! brokers' CPU over the run.
//!
//! How. The clusters start as `bench produce` starts them (`kraftd.rs`: 3 controllers and 3
//! brokers, release build; `kafka.rs`: 1 controller and 3 brokers of 512 MiB heap), one
//! after the other, each stopped before the next starts. Before the timed runs, a warm-up
//! of `--records`/4 through each listener (JIT, connections, segment files), not reported.
//!
//! Caveats. The load generator is a JVM on the same machine, so its own TLS work (the
//! JDK's, the same for both systems) takes cores the brokers could use; the brokers' CPU
//! column shows what TLS cost each server. SASL costs a login per connection (a producer
//! keeps one per broker), so SASL_SSL differs from SSL by little more than noise. One run of
//! each, always in the order PLAINTEXT, SSL, SASL_SSL.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::cluster::Cluster;
use super::kafka::kafka_classpath;
use super::load::{create_topic, producer_perf_on, PerfResult};
use super::produce::{loadavg, Against, System, COPIES};

#[derive(clap::Args, Debug)]
pub(super) struct TlsArgs {
    /// 1 KiB records per timed run (default 200000, or 30000 with --quick).
    #[arg(long)]
    records: Option<u64>,
    /// A smaller run.
    #[arg(long)]
    quick: bool,
    /// The producer's batch.size.
    #[arg(long, default_value_t = 64 << 10)]
    batch_size: usize,
    /// The topic's partitions (3: one leader per broker).
    #[arg(long, default_value_t = 3)]
    partitions: u32,
    /// Keep the temp directory (node logs and data, the certificates) afterwards.
    #[arg(long)]
    keep: bool,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    against: Against,
}

const LINGER_MS: u64 = 5;
/// The SASL_SSL listener's user, written into both systems' bootstrap metadata.
const SCRAM_USER: &str = "SCRAM-SHA-512=[name=bench,password=bench-secret]";
/// `kraftd format` / StorageTool arguments that create [`SCRAM_USER`].
pub(super) const FORMAT_ARGS: [&str; 2] = ["--add-scram", SCRAM_USER];
/// [`SCRAM_USER`]'s name and password, for a client's login.
pub(super) const SCRAM_NAME: &str = "bench";
pub(super) const SCRAM_PASSWORD: &str = "bench-secret";
const SCRAM_LOGIN: &str = "org.apache.kafka.common.security.scram.ScramLoginModule required";

/// The client listeners, in the order they are measured.
pub(super) const LISTENERS: [&str; 3] = ["PLAINTEXT", "SSL", "SASL_SSL"];

/// One system's runs, one per listener of [`LISTENERS`].
struct Run {
    system: System,
    results: Vec<PerfResult>,
}

pub(super) fn tls(root: &Path, args: TlsArgs) -> Result<()> {
    let started = Instant::now();
    let records = args
        .records
        .unwrap_or(if args.quick { 30_000 } else { 200_000 });
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
    let dir = std::env::temp_dir().join(format!("kraftd-bench-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    println!("bench directory: {}", dir.display());
    let pki = dir.join("pki");
    let broker_config = secured_listeners(&pki)?;
    let format_args = FORMAT_ARGS;
    // The clients' settings per listener, as ProducerPerformance's --command-config files
    // (a JAAS value holds '=', which --command-property does not take).
    let truststore = format!(
        "ssl.truststore.type=PEM\nssl.truststore.location={}\n",
        pki.join("ca.pem").display()
    );
    let ssl_client = pki.join("ssl-client.properties");
    std::fs::write(&ssl_client, format!("security.protocol=SSL\n{truststore}"))?;
    let sasl_ssl_client = pki.join("sasl-ssl-client.properties");
    std::fs::write(
        &sasl_ssl_client,
        format!(
            "security.protocol=SASL_SSL\n{truststore}sasl.mechanism=SCRAM-SHA-512\n\
             sasl.jaas.config={SCRAM_LOGIN} username=\"bench\" password=\"bench-secret\";\n"
        ),
    )?;
    let client_args: Vec<Vec<String>> = [None, Some(&ssl_client), Some(&sasl_ssl_client)]
        .iter()
        .map(|file| match file {
            None => Vec::new(),
            Some(f) => vec!["--command-config".to_string(), f.display().to_string()],
        })
        .collect();
    let load_start = loadavg();

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
            System::Kraftd => {
                Cluster::start_kraftd_formatted(&bin, &sys_dir, &broker_config, &format_args)
            }
            System::Kafka => {
                Cluster::start_kafka_formatted(&classpath, &sys_dir, &broker_config, &format_args)
            }
        };
        let mut cluster = cluster.inspect_err(|_| {
            eprintln!(
                "{} did not start; its logs are in {} (kept)",
                system.name(),
                sys_dir.display()
            );
        })?;
        let outcome = drive(&cluster, &classpath, &args, records, &client_args);
        if outcome.is_err() {
            eprintln!(
                "bench failed; {}'s node logs are in {} (kept)",
                system.name(),
                sys_dir.display()
            );
        }
        cluster.stop();
        runs.push(Run {
            system,
            results: outcome?,
        });
    }
    if !args.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    report(&args, records, &runs, &load_start);
    println!(
        "(bench took {:.0} s; load average at the end {})",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    Ok(())
}

/// The topic, the warm-ups, then a run per listener of [`LISTENERS`] (`client_args` the
/// producer's arguments for each).
fn drive(
    cluster: &Cluster,
    classpath: &str,
    args: &TlsArgs,
    records: u64,
    client_args: &[Vec<String>],
) -> Result<Vec<PerfResult>> {
    let topic = "bench-tls";
    create_topic(cluster, classpath, topic, args.partitions)?;
    let bootstraps = [
        cluster.bootstrap(),
        cluster.bootstrap_of("ssl_port"),
        cluster.bootstrap_of("sasl_ssl_port"),
    ];
    let run = |bootstrap: &str, props: &[String], n: u64| {
        producer_perf_on(
            cluster,
            classpath,
            bootstrap,
            props,
            topic,
            n,
            args.batch_size,
            LINGER_MS,
        )
    };
    println!("==> warm-up: {} records over each listener", records / 4);
    for (bootstrap, client) in bootstraps.iter().zip(client_args) {
        run(bootstrap, client, records / 4)?;
    }
    let mut results = Vec::new();
    for ((name, bootstrap), client) in LISTENERS.iter().zip(&bootstraps).zip(client_args) {
        println!(
            "==> {name}: {records} x 1 KiB, acks=all, batch.size={}",
            args.batch_size
        );
        results.push(run(bootstrap, client, records)?);
    }
    Ok(results)
}

/// The brokers' three client listeners, PLAINTEXT on `{port}`, SSL on `{ssl_port}` and
/// SASL_SSL (SCRAM-SHA-512) on `{sasl_ssl_port}`, as broker config lines both systems read
/// alike, after making their certificates under `pki` ([`make_pki`]); the controllers are to
/// be formatted with [`FORMAT_ARGS`]. `bench cost` runs its C client over the same three.
pub(super) fn secured_listeners(pki: &Path) -> Result<String> {
    make_pki(pki)?;
    Ok(format!(
        "listeners=PLAINTEXT://127.0.0.1:{{port}},SSL://127.0.0.1:{{ssl_port}},\
         SASL_SSL://127.0.0.1:{{sasl_ssl_port}}\n\
         ssl.keystore.type=PEM\nssl.keystore.location={}\n\
         listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512\n\
         listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config={SCRAM_LOGIN};\n",
        pki.join("node.pem").display()
    ))
}

/// A CA and a node certificate for 127.0.0.1 and localhost (EC P-256), with the
/// `openssl` command: `ca.pem`, and `node.pem` holding the PKCS#8 key then the certificate.
fn make_pki(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let at = |f: &str| dir.join(f).display().to_string();
    let openssl = |args: &[&str]| -> Result<()> {
        let out = Command::new("openssl")
            .args(args)
            .output()
            .context("the TLS bench makes its certificates with the openssl command")?;
        if !out.status.success() {
            bail!(
                "openssl {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    let (ca_key, ca_pem) = (at("ca.key"), at("ca.pem"));
    ca.extend([
        "-keyout",
        &ca_key,
        "-out",
        &ca_pem,
        "-days",
        "2",
        "-subj",
        "/CN=kraftd bench CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    openssl(&ca)?;
    let (node_key, node_csr, node_crt) = (at("node.key"), at("node.csr"), at("node.crt"));
    let mut csr = vec!["req"];
    csr.extend(ec);
    csr.extend([
        "-keyout",
        &node_key,
        "-out",
        &node_csr,
        "-subj",
        "/CN=kraftd bench node",
    ]);
    openssl(&csr)?;
    let ext = at("node.ext");
    std::fs::write(&ext, "subjectAltName=IP:127.0.0.1,DNS:localhost\n")?;
    openssl(&[
        "x509",
        "-req",
        "-in",
        &node_csr,
        "-CA",
        &ca_pem,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        &ext,
        "-out",
        &node_crt,
    ])?;
    let keystore = format!(
        "{}{}",
        std::fs::read_to_string(&node_key)?,
        std::fs::read_to_string(&node_crt)?
    );
    std::fs::write(dir.join("node.pem"), keystore)?;
    Ok(())
}

fn report(args: &TlsArgs, records: u64, runs: &[Run], load_start: &str) {
    println!();
    println!(
        "Produce over TLS and SASL_SSL (SCRAM-SHA-512) beside PLAINTEXT: {records} x 1 KiB per \
         run, acks=all, RF {COPIES}, min.insync.replicas=2, {} partitions, batch.size={}, \
         linger.ms={LINGER_MS}, ProducerPerformance (load average at the start {load_start})",
        args.partitions, args.batch_size
    );
    println!(
        "{:<8} {:<10} {:>11} {:>8} {:>8} {:>8} {:>13}",
        "system", "listener", "records/s", "MiB/s", "p50 ms", "p99 ms", "broker cores"
    );
    for r in runs {
        for (name, p) in LISTENERS.iter().zip(&r.results) {
            println!(
                "{:<8} {:<10} {:>11.0} {:>8.1} {:>8.0} {:>8.0} {:>13.2}",
                r.system.name(),
                name,
                p.records_per_sec,
                p.mib_per_sec,
                p.p50_ms,
                p.p99_ms,
                p.broker_cores
            );
        }
    }
    let ratio = |a: f64, b: f64| {
        if b > 0.0 {
            format!("{:.2}", a / b)
        } else {
            "-".into()
        }
    };
    println!();
    println!("/ PLAINTEXT (throughput: 1 = the security costs nothing; latency: 1 = no slower)");
    println!(
        "{:<8} {:<10} {:>11} {:>8} {:>8}",
        "system", "listener", "records/s", "p50", "p99"
    );
    for r in runs {
        let plain = &r.results[0];
        for (name, p) in LISTENERS.iter().zip(&r.results).skip(1) {
            println!(
                "{:<8} {:<10} {:>11} {:>8} {:>8}",
                r.system.name(),
                name,
                ratio(p.records_per_sec, plain.records_per_sec),
                ratio(p.p50_ms, plain.p50_ms),
                ratio(p.p99_ms, plain.p99_ms)
            );
        }
    }
    let kraftd = runs.iter().find(|r| r.system == System::Kraftd);
    let kafka = runs.iter().find(|r| r.system == System::Kafka);
    if let (Some(k), Some(a)) = (kraftd, kafka) {
        println!();
        println!("kraftd / Kafka (throughput: > 1 = kraftd faster; latency: < 1 = kraftd lower)");
        println!(
            "{:<10} {:>11} {:>8} {:>8}",
            "listener", "records/s", "p50", "p99"
        );
        for ((name, kp), ap) in LISTENERS.iter().zip(&k.results).zip(&a.results) {
            println!(
                "{:<10} {:>11} {:>8} {:>8}",
                name,
                ratio(kp.records_per_sec, ap.records_per_sec),
                ratio(kp.p50_ms, ap.p50_ms),
                ratio(kp.p99_ms, ap.p99_ms)
            );
        }
    }
}
