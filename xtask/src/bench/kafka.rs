//! Apache Kafka from the jars: fetching them (`target/kafka-jars/`), starting its nodes for
//! the benchmark, and running its tools' main classes.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::cluster::{BenchNode, Cluster, Respawn};
use crate::cluster::free_port;

/// Jars whose presence means `target/kafka-jars/` is complete (as the tests check).
const REQUIRED_JARS: [&str; 4] = [
    "kafka-tools-4.4.0.jar",
    "kafka-clients-4.4.0.jar",
    "kafka-server-common-4.4.0.jar",
    "argparse4j-0.7.0.jar",
];

impl Cluster {
    /// Apache Kafka from the jars: 1 controller (id 100) and 3 brokers (1-3) on free loopback
    /// ports, formatted with `kafka.tools.StorageTool` and started as `kafka.Kafka` JVMs with
    /// a 512 MiB heap (as `crates/cli/tests/common/kafka_jars.rs` does, with the JVM options
    /// of `kafka-server-start.sh`), `broker_config` (properties lines) added to each broker's
    /// file; returns once every broker is registered and unfenced.
    pub(super) fn start_kafka(classpath: &str, dir: &Path, broker_config: &str) -> Result<Cluster> {
        Cluster::start_kafka_formatted(classpath, dir, broker_config, &[])
    }

    /// [`Cluster::start_kafka`] with the controller formatted with `format_args` added to
    /// StorageTool's `format` (as `--add-scram`).
    pub(super) fn start_kafka_formatted(
        classpath: &str,
        dir: &Path,
        broker_config: &str,
        format_args: &[&str],
    ) -> Result<Cluster> {
        Cluster::start_kafka_with(classpath, dir, broker_config, format_args, 1)
    }

    /// [`Cluster::start_kafka_formatted`] with `controllers` controllers (ids 100, 101, ...)
    /// in a static quorum.
    pub(super) fn start_kafka_with(
        classpath: &str,
        dir: &Path,
        broker_config: &str,
        format_args: &[&str],
        controllers: u32,
    ) -> Result<Cluster> {
        Cluster::start_kafka_with_controllers(
            classpath,
            dir,
            broker_config,
            "",
            format_args,
            controllers,
        )
    }

    /// [`Cluster::start_kafka_with`] with `controller_config` lines added to each
    /// controller's properties (as `leader.imbalance.check.interval.seconds=5`).
    pub(super) fn start_kafka_with_controllers(
        classpath: &str,
        dir: &Path,
        broker_config: &str,
        controller_config: &str,
        format_args: &[&str],
        controllers: u32,
    ) -> Result<Cluster> {
        let mut cluster = Cluster { nodes: Vec::new() };
        match cluster.start_kafka_inner(
            classpath,
            dir,
            broker_config,
            controller_config,
            format_args,
            controllers,
        ) {
            Ok(()) => Ok(cluster),
            Err(e) => {
                cluster.stop();
                Err(e)
            }
        }
    }

    fn start_kafka_inner(
        &mut self,
        classpath: &str,
        dir: &Path,
        broker_config: &str,
        controller_config: &str,
        format_args: &[&str],
        controllers: u32,
    ) -> Result<()> {
        let mut layout = Vec::new();
        for id in 100..100 + controllers {
            layout.push((id, true, free_port()?));
        }
        let voters = layout
            .iter()
            .map(|(id, _, port)| format!("{id}@127.0.0.1:{port}"))
            .collect::<Vec<_>>()
            .join(",");
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
        // Kafka's defaults otherwise (no fsync per write, as kraftd's defaults).
        let common = format!(
            "controller.quorum.voters={voters}\n\
             controller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,\
             CONTROLLER:PLAINTEXT\n"
        );
        let mut pending = Vec::new();
        for &(id, controller, port) in &layout {
            let node_dir = dir.join(format!("node-{id}"));
            std::fs::create_dir_all(node_dir.join("logs"))?;
            let (broker_config, extra_ports) = if controller {
                (String::new(), Vec::new())
            } else {
                super::cluster::broker_lines(broker_config, port)?
            };
            let own = if controller {
                format!(
                    "process.roles=controller\nnode.id={id}\n\
                     listeners=CONTROLLER://127.0.0.1:{port}\n{controller_config}"
                )
            } else {
                format!(
                    "process.roles=broker\nnode.id={id}\nlisteners=PLAINTEXT://127.0.0.1:{port}\n\
                     inter.broker.listener.name=PLAINTEXT\n{broker_config}"
                )
            };
            let config = node_dir.join("server.properties");
            std::fs::write(
                &config,
                format!(
                    "# written by cargo xtask bench\n{own}log.dirs={}\n{common}",
                    node_dir.join("data").display()
                ),
            )?;
            let format_args = if controller { format_args } else { &[] };
            format_kafka_node(classpath, &cluster_id, &config, format_args)
                .with_context(|| format!("formatting Kafka node {id}"))?;
            pending.push((id, controller, port, extra_ports, node_dir, config));
        }
        for (id, controller, port, extra_ports, node_dir, config) in pending {
            let cp = classpath.to_string();
            let respawn: Respawn = Box::new(move || {
                spawn_kafka_node(&cp, &node_dir, &config, "-Xmx512m")
                    .with_context(|| format!("starting Kafka node {id}"))
            });
            let child = respawn()?;
            let role = if controller { "controller" } else { "broker" };
            println!("started Kafka node {id} ({role}) pid {}", child.id());
            self.nodes.push(BenchNode {
                id,
                broker_port: (!controller).then_some(port),
                extra_ports,
                child: Some(child),
                controller_port: controller.then_some(port),
                respawn: Some(respawn),
            });
        }
        self.wait_brokers(Duration::from_secs(120))
    }
}

/// Formats a Kafka node's log dir for `config` with `kafka.tools.StorageTool`, `extra`
/// added to its arguments (as `--add-scram ...`).
pub(crate) fn format_kafka_node(
    classpath: &str,
    cluster_id: &str,
    config: &Path,
    extra: &[&str],
) -> Result<()> {
    let mut args = vec![
        "kafka.tools.StorageTool",
        "format",
        "-t",
        cluster_id,
        "-c",
        config.to_str().context("non-UTF-8 path")?,
    ];
    args.extend(extra);
    java(classpath, &args, Duration::from_secs(60), false)?;
    Ok(())
}

/// Starts one `kafka.Kafka` JVM for `config` with the JVM options of
/// `kafka-server-start.sh` and a heap of `xmx` (as `-Xmx512m`), its logs under
/// `node_dir/logs/` (`server.log`) and its stdout and stderr in `node_dir/kafka.out`.
pub(super) fn spawn_kafka_node(
    classpath: &str,
    node_dir: &Path,
    config: &Path,
    xmx: &str,
) -> Result<std::process::Child> {
    let mut command = Command::new("java");
    kafka_node_command(&mut command, classpath, node_dir, config, xmx)?;
    Ok(command.spawn()?)
}

/// Adds to `command` (a `java`, maybe behind a wrapper such as `ip netns exec`) the arguments,
/// stdin and outputs of a `kafka.Kafka` node: the JVM options of `kafka-server-start.sh`, a
/// heap of `xmx`, its logs under `node_dir/logs/` (`server.log`), its stdout and stderr
/// appended to `node_dir/kafka.out`. The bench and the chaos harness start Kafka with it.
pub(crate) fn kafka_node_command(
    command: &mut Command,
    classpath: &str,
    node_dir: &Path,
    config: &Path,
    xmx: &str,
) -> Result<()> {
    let log4j = format!(
        "-Dlog4j2.configurationFile={}",
        crate::repo_root()?
            .join("tools/capture/log4j2.properties")
            .display()
    );
    let out = node_dir.join("kafka.out");
    command
        .arg(xmx.replace("-Xmx", "-Xms"))
        .args([
            xmx,
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
        .arg(config)
        .stdin(Stdio::null())
        .stdout(File::options().create(true).append(true).open(&out)?)
        .stderr(File::options().append(true).open(&out)?);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Kafka's tools.

/// `target/kafka-jars/*` (or `$KRAFTD_KAFKA_JARS`), fetched with Maven from
/// `tools/capture/pom.xml` when incomplete, as the tests' `common/kafka_jars.rs` does.
pub(crate) fn kafka_classpath(root: &Path) -> Result<String> {
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

/// `kafka-storage random-uuid` from the jars on `classpath`: a new cluster or directory id.
pub(crate) fn kafka_random_uuid(classpath: &str) -> Result<String> {
    Ok(java(
        classpath,
        &["kafka.tools.StorageTool", "random-uuid"],
        Duration::from_secs(60),
        false,
    )?
    .trim()
    .to_string())
}

/// Runs a Kafka tool's main class; its stdout (echoed line by line when `echo`), or an error
/// with its stderr. Killed after `timeout`.
pub(crate) fn java(
    classpath: &str,
    args: &[&str],
    timeout: Duration,
    echo: bool,
) -> Result<String> {
    let out = java_output(classpath, args, timeout, echo)?;
    match out.error {
        None => Ok(out.stdout),
        Some(error) => bail!("{} failed: {error}\n{}", args[0], out.stdout),
    }
}

pub(crate) struct JavaOutput {
    pub(crate) stdout: String,
    /// The exit status and the end of stderr of a tool that failed.
    pub(crate) error: Option<String>,
}

/// Runs a Kafka tool's main class to its end (killed after `timeout`); its stdout (echoed line
/// by line when `echo`), and how it failed if it did.
pub(crate) fn java_output(
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
