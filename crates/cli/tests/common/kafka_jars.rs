//! Apache Kafka's own jars for tests that run Kafka's stock tools against kraftd. The README's
//! test command runs on a fresh machine, so the test setup fetches them itself: when
//! `target/kafka-jars/` (or `$KRAFTD_KAFKA_JARS`) lacks them, Maven copies
//! `tools/capture/pom.xml`'s runtime classpath (Kafka 4.4.0 from Maven Central, as
//! `tools/capture/capture.sh` does) into a scratch directory that is renamed into place once
//! complete, under a lock file so concurrent test processes fetch once. Java (17+) is
//! required, and Maven when a fetch is needed: without them the test fails with one line
//! saying what to install, never passes silently.

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

/// The Kafka release whose jars are fetched (the pom's `kafka.version`).
pub const KAFKA_VERSION: &str = "4.4.0";

/// Jars whose presence means a complete fetch: the tools, the client they drive, the
/// tools' argument parser, and Kafka Streams (a directory fetched before the pom named it
/// lacks it and is fetched again).
const REQUIRED_JARS: [&str; 5] = [
    "kafka-tools-4.4.0.jar",
    "kafka-clients-4.4.0.jar",
    "kafka-server-common-4.4.0.jar",
    "argparse4j-0.7.0.jar",
    "kafka-streams-4.4.0.jar",
];

/// How long a Maven fetch may take before it is killed (a cold fetch takes seconds).
const FETCH_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// The workspace root (`tools/`, `target/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

/// Where the jars live: `target/kafka-jars/`, as `capture.sh` keeps them, or
/// `$KRAFTD_KAFKA_JARS` (a CI cache, or a cold-fetch check).
pub fn jars_dir() -> PathBuf {
    match std::env::var_os("KRAFTD_KAFKA_JARS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo_root().join("target").join("kafka-jars"),
    }
}

/// The Java classpath (`<dir>/*`) of Kafka's jars, fetched with Maven on first use. Panics
/// with one line when Java or Maven is missing or the fetch fails.
pub fn classpath() -> String {
    static CLASSPATH: OnceLock<Result<String, String>> = OnceLock::new();
    match CLASSPATH.get_or_init(prepare) {
        Ok(classpath) => classpath.clone(),
        Err(e) => panic!("{e}"),
    }
}

/// Apache Kafka's `kafka-dump-log` (DumpLogSegments) with `--deep-iteration` over one
/// segment file: stdout and stderr, and whether it exited 0.
pub fn dump_log_segment(segment: &Path) -> (bool, String, String) {
    dump_log_segment_with(segment, &[])
}

/// [`dump_log_segment`] with more arguments (a decoder: `--offsets-decoder`,
/// `--share-group-state-decoder`, `--transaction-log-decoder`).
pub fn dump_log_segment_with(segment: &Path, extra: &[&str]) -> (bool, String, String) {
    let out = Command::new("java")
        .arg(log4j_option())
        .args([
            "-cp",
            &classpath(),
            "org.apache.kafka.tools.DumpLogSegments",
        ])
        .arg("--files")
        .arg(segment)
        .arg("--deep-iteration")
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect("java starts");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the Kafka tool `class` with `args` (stdin closed, output captured); a tool that has
/// not exited after 90 s is killed (only our own child, by its pid) so a hung tool fails its
/// test instead of stalling the suite. The JIT stops at C1, as for [`kafka_tool`]: a tool
/// lives seconds, and C2 compiling its startup doubles the CPU it takes on a busy machine.
pub fn run_tool(class: &str, args: &[&str]) -> std::process::Output {
    run_tool_within(class, args, Duration::from_secs(90))
}

/// [`run_tool`] with its own time limit.
pub fn run_tool_within(class: &str, args: &[&str], limit: Duration) -> std::process::Output {
    run_java(&classpath(), class, args, None, limit)
}

/// [`run_tool`] with `input` on the tool's stdin (closed after it): the console producer.
pub fn run_tool_with_stdin(class: &str, args: &[&str], input: &str) -> std::process::Output {
    run_java(
        &classpath(),
        class,
        args,
        Some(input),
        Duration::from_secs(90),
    )
}

/// The Java main `class` on `classpath` with `args` (and `input` on its stdin, else none),
/// output captured, killed after `limit` as [`run_tool`] says.
pub fn run_java(
    classpath: &str,
    class: &str,
    args: &[&str],
    input: Option<&str>,
    limit: Duration,
) -> std::process::Output {
    let mut child = Command::new("java")
        .args(["-XX:TieredStopAtLevel=1", &log4j_option()])
        .args(["-cp", classpath, class])
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("java starts");
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        // A tool that exits early closes its stdin: what it did not read is its answer.
        let _ = stdin.write_all(input.as_bytes());
    }
    let pid = child.id();
    let watchdog = std::thread::spawn(move || {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            if !Path::new(&format!("/proc/{pid}")).exists() {
                return;
            }
        }
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    });
    let out = child.wait_with_output().unwrap();
    let _ = watchdog.join();
    out
}

/// A tool's exit status, stdout and stderr, for an assertion's message.
pub fn output_text(out: &std::process::Output) -> String {
    format!(
        "status {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `-Dlog4j2.configurationFile=...`: Kafka's tools log warnings and errors to stderr only.
pub fn log4j_option() -> String {
    format!(
        "-Dlog4j2.configurationFile={}",
        repo_root()
            .join("tools/capture/log4j2-tools.properties")
            .display()
    )
}

fn prepare() -> Result<String, String> {
    check_java()?;
    let dir = jars_dir();
    if !complete(&dir) {
        let _lock = Lock::acquire(&dir.with_extension("lock"))?;
        // Another process may have fetched them while this one waited.
        if !complete(&dir) {
            fetch(&dir)?;
        }
    }
    Ok(format!("{}/*", dir.display()))
}

fn complete(dir: &Path) -> bool {
    REQUIRED_JARS.iter().all(|jar| dir.join(jar).is_file())
}

/// Java 17 or newer on PATH, as Kafka 4's tools need.
fn check_java() -> Result<(), String> {
    let out = Command::new("java").arg("-version").output().map_err(|e| {
        format!(
            "the stock Kafka tool tests need Java 17+ on PATH, and `java -version` failed ({e}): \
             install a JDK, e.g. `apt-get install openjdk-17-jre-headless`"
        )
    })?;
    // `openjdk version "17.0.15" 2025-04-15` (stderr); "1.8.0_x" for Java 8.
    let text = String::from_utf8_lossy(&out.stderr);
    let major = text
        .split('"')
        .nth(1)
        .and_then(|v| v.split(['.', '-', '+']).next())
        .and_then(|m| m.parse::<u32>().ok());
    match major {
        Some(m) if m >= 17 => Ok(()),
        _ => Err(format!(
            "the stock Kafka tool tests need Java 17+, and `java -version` says {:?}: install a \
             newer JDK, e.g. `apt-get install openjdk-17-jre-headless`",
            text.lines().next().unwrap_or_default()
        )),
    }
}

/// Copies the pom's runtime dependencies into `dir` through a scratch directory.
fn fetch(dir: &Path) -> Result<(), String> {
    let root = repo_root();
    let pom = root.join("tools/capture/pom.xml");
    if Command::new("mvn")
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        return Err(format!(
            "{} lacks Kafka's jars and fetching them needs Maven (`mvn`) on PATH: install it, \
             e.g. `apt-get install maven`",
            dir.display()
        ));
    }
    let scratch = dir.with_extension(format!("part-{}", std::process::id()));
    let log_path = dir.with_extension("fetch.log");
    let _ = fs::remove_dir_all(&scratch);
    let log = File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let started = Instant::now();
    eprintln!(
        "fetching Apache Kafka {KAFKA_VERSION} jars with Maven into {}",
        dir.display()
    );
    let mut child = Command::new("mvn")
        .args(["-q", "-B", "-Dstyle.color=never", "-f"])
        .arg(&pom)
        .arg(format!("-Dkafka.version={KAFKA_VERSION}"))
        .args(["dependency:copy-dependencies", "-DincludeScope=runtime"])
        .arg(format!("-DoutputDirectory={}", scratch.display()))
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("starting mvn: {e}"))?;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > FETCH_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            let _ = fs::remove_dir_all(&scratch);
            return Err(format!(
                "fetching Kafka's jars with Maven took over {FETCH_TIMEOUT:?}; see {}",
                log_path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if !status.success() || !complete(&scratch) {
        let _ = fs::remove_dir_all(&scratch);
        let output = fs::read_to_string(&log_path).unwrap_or_default();
        let last = output
            .lines()
            .rev()
            .find(|l| l.contains("ERROR"))
            .or_else(|| output.lines().last())
            .unwrap_or("no output");
        return Err(format!(
            "fetching Kafka {KAFKA_VERSION}'s jars with `mvn -f {}` failed ({status}; Maven \
             Central must be reachable): {last} (full log: {})",
            pom.display(),
            log_path.display()
        ));
    }
    // A directory without every jar is an interrupted fetch: replace it.
    let _ = fs::remove_dir_all(dir);
    fs::rename(&scratch, dir).map_err(|e| format!("renaming {}: {e}", scratch.display()))?;
    eprintln!(
        "fetched Apache Kafka {KAFKA_VERSION} jars into {} in {:.1} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A lock file created exclusively, holding the owner's pid; removed on drop. A lock whose
/// owner is gone (or older than a fetch may take) is stale and taken over.
struct Lock {
    path: PathBuf,
}

impl Lock {
    fn acquire(path: &Path) -> Result<Lock, String> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let deadline = Instant::now() + FETCH_TIMEOUT + Duration::from_secs(60);
        loop {
            match OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(mut file) => {
                    let _ = write!(file, "{}", std::process::id());
                    return Ok(Lock {
                        path: path.to_path_buf(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if stale(path) {
                        let _ = fs::remove_file(path);
                        continue;
                    }
                    if Instant::now() > deadline {
                        return Err(format!(
                            "waited too long for {} (another fetch of Kafka's jars)",
                            path.display()
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

fn stale(path: &Path) -> bool {
    let owner_gone = fs::read_to_string(path)
        .ok()
        .and_then(|pid| pid.trim().parse::<u32>().ok())
        .is_some_and(|pid| {
            Path::new("/proc").is_dir() && !Path::new(&format!("/proc/{pid}")).exists()
        });
    let too_old = fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age > FETCH_TIMEOUT + Duration::from_secs(60));
    owner_gone || too_old
}

/// An Apache Kafka node (`kafka.Kafka`) run from the jars, for checking a stock-client test
/// against the reference implementation before kraftd passes it. Its directory holds
/// `server.properties`, `data/`, `logs/server.log` (log4j2 as `tools/capture` configures it)
/// and `kafka-<n>.out` per start.
pub struct KafkaNode {
    pub id: i32,
    /// The PLAINTEXT port for a broker, the CONTROLLER port for the controller.
    pub port: u16,
    pub dir: PathBuf,
    pub child: Option<std::process::Child>,
    pub starts: u32,
}

impl KafkaNode {
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.join("server.properties")
    }

    /// Adds `key=value` lines to its server.properties (before it starts): a later line
    /// overrides an earlier one with the same key, as `java.util.Properties` loads them.
    pub fn add_config(&self, lines: &[&str]) {
        let mut config = OpenOptions::new()
            .append(true)
            .open(self.config_path())
            .unwrap();
        for line in lines {
            writeln!(config, "{line}").unwrap();
        }
    }

    fn server_log(&self) -> PathBuf {
        self.dir.join("logs").join("server.log")
    }

    /// How long its server.log is now: a mark for [`KafkaNode::server_log_since`].
    pub fn server_log_mark(&self) -> u64 {
        fs::metadata(self.server_log()).map_or(0, |m| m.len())
    }

    /// What its server.log gained since `mark` (log4j appends to it across starts).
    pub fn server_log_since(&self, mark: u64) -> String {
        let log = fs::read(self.server_log()).unwrap_or_default();
        let from = usize::try_from(mark).unwrap_or(usize::MAX).min(log.len());
        String::from_utf8_lossy(&log[from..]).into_owned()
    }

    /// Starts the JVM; returns at once (see [`KafkaNode::wait_started`]).
    pub fn start(&mut self) {
        self.starts += 1;
        let out = File::create(self.dir.join(format!("kafka-{}.out", self.starts))).unwrap();
        let child = Command::new("java")
            .args([
                "-Xms128m",
                "-Xmx768m",
                "-XX:+UseG1GC",
                "-XX:TieredStopAtLevel=1",
            ])
            .arg(format!(
                "-Dkafka.logs.dir={}",
                self.dir.join("logs").display()
            ))
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                repo_root()
                    .join("tools/capture/log4j2.properties")
                    .display()
            ))
            .args(["-cp", &classpath(), "kafka.Kafka"])
            .arg(self.config_path())
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("java starts");
        self.child = Some(child);
    }

    /// Waits until this start logged "Kafka Server started" (up to `timeout`).
    pub fn wait_started(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let log = fs::read_to_string(self.server_log()).unwrap_or_default();
            if log.matches("Kafka Server started").count() >= self.starts as usize {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("Kafka node {} exited ({status}):\n{}", self.id, self.logs());
            }
            assert!(
                Instant::now() < deadline,
                "Kafka node {} not started after {timeout:?}:\n{}",
                self.id,
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// SIGTERM, then waits up to `timeout` for the JVM to exit: Kafka's shutdown hook runs
    /// the broker's controlled shutdown and closes every log, leaving each log dir's
    /// clean-shutdown file. Panics (after a SIGKILL) if it is still running by then.
    pub fn stop(&mut self, timeout: Duration) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill").arg(child.id().to_string()).status();
        let deadline = Instant::now() + timeout;
        while child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "Kafka node {} still running {timeout:?} after SIGTERM:\n{}",
                    self.id,
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGKILL.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The last 200 lines of its server.log and its last stdout/stderr.
    pub fn logs(&self) -> String {
        let log = fs::read_to_string(self.server_log()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let out = fs::read_to_string(self.dir.join(format!("kafka-{}.out", self.starts)))
            .unwrap_or_default();
        format!(
            "{}\n{out}",
            lines[lines.len().saturating_sub(200)..].join("\n")
        )
    }
}

impl Drop for KafkaNode {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Runs a Kafka tool's main class to completion; its stdout, or a panic with its stderr.
fn kafka_tool(args: &[&str]) -> String {
    let out = Command::new("java")
        .args(["-Xmx256m", "-XX:TieredStopAtLevel=1", &log4j_option()])
        .args(["-cp", &classpath()])
        .args(args)
        .output()
        .expect("java runs");
    assert!(
        out.status.success(),
        "java {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An Apache Kafka cluster under `root`: one KRaft controller (node 100) and brokers
/// 1..=`brokers` on free loopback ports, formatted (`kafka.tools.StorageTool`), started, each
/// broker's "Kafka Server started" logged. Broker sessions expire after 3 s, as kraftd's
/// test controllers configure, so fencing and ISR changes come quickly. `extra` is appended
/// to every node's properties.
pub fn kafka_cluster(root: &Path, brokers: i32, extra: &str) -> (KafkaNode, Vec<KafkaNode>) {
    let ids: Vec<i32> = (1..=brokers).collect();
    let (_, mut controllers, nodes) =
        kafka_quorum_cluster(root, 1, &ids, brokers.min(3), extra, &[]);
    (controllers.remove(0), nodes)
}

/// An Apache Kafka cluster under `root`: `controllers` KRaft controllers (nodes 100, 101, ...,
/// static voters) and the brokers `broker_ids`, every node formatted by `kafka-storage format`
/// with `format_args` added (`--feature share.version=1`, `--release-version 4.0`) and
/// started; returns once each broker logged "Kafka Server started". Internal topics get
/// replication factor `rf`; `extra` is appended to every node's properties. Returns the
/// cluster id, the controllers and the brokers.
pub fn kafka_quorum_cluster(
    root: &Path,
    controllers: i32,
    broker_ids: &[i32],
    rf: i32,
    extra: &str,
    format_args: &[&str],
) -> (String, Vec<KafkaNode>, Vec<KafkaNode>) {
    start_kafka_cluster(root, controllers, broker_ids, rf, extra, format_args, false)
}

/// [`kafka_quorum_cluster`] with a dynamic quorum (KIP-853, `kraft.version` 1): every node
/// finds the controllers through `controller.quorum.bootstrap.servers`, and each controller
/// is formatted with `--initial-controllers`, the voters with the directory ids Kafka
/// generated for them (`kafka-storage random-uuid`).
pub fn kafka_dynamic_quorum_cluster(
    root: &Path,
    controllers: i32,
    broker_ids: &[i32],
    rf: i32,
    extra: &str,
    format_args: &[&str],
) -> (String, Vec<KafkaNode>, Vec<KafkaNode>) {
    start_kafka_cluster(root, controllers, broker_ids, rf, extra, format_args, true)
}

fn start_kafka_cluster(
    root: &Path,
    controllers: i32,
    broker_ids: &[i32],
    rf: i32,
    extra: &str,
    format_args: &[&str],
    dynamic: bool,
) -> (String, Vec<KafkaNode>, Vec<KafkaNode>) {
    let random_uuid = || {
        kafka_tool(&["kafka.tools.StorageTool", "random-uuid"])
            .trim()
            .to_string()
    };
    let mut quorum: Vec<KafkaNode> = (0..controllers)
        .map(|i| kafka_controller_node(root, 100 + i))
        .collect();
    let cluster_id = random_uuid();
    let (voters, initial_controllers) = if dynamic {
        let bootstrap = quorum
            .iter()
            .map(KafkaNode::address)
            .collect::<Vec<_>>()
            .join(",");
        let initial = quorum
            .iter()
            .map(|c| format!("{}@127.0.0.1:{}:{}", c.id, c.port, random_uuid()))
            .collect::<Vec<_>>()
            .join(",");
        (bootstrap, Some(initial))
    } else {
        (kafka_voters(&quorum), None)
    };
    let mut controller_format_args = format_args.to_vec();
    if let Some(initial) = &initial_controllers {
        controller_format_args.extend(["--initial-controllers", initial]);
    }
    for c in &quorum {
        write_kafka_controller(c, &voters, &cluster_id, rf, extra, &controller_format_args);
    }
    let mut brokers: Vec<KafkaNode> = broker_ids
        .iter()
        .map(|id| kafka_broker(root, *id, &voters, &cluster_id, rf, extra))
        .collect();
    for c in quorum.iter_mut() {
        c.start();
    }
    for b in brokers.iter_mut() {
        b.start();
    }
    for b in brokers.iter_mut() {
        b.wait_started(Duration::from_secs(120));
    }
    (cluster_id, quorum, brokers)
}

/// `kafka-log-dirs --describe --broker-list <brokers>`: the JSON line it prints, or the
/// tool's whole output when it printed none (a broker down, say).
pub fn log_dirs_json(bootstrap: &str, brokers: &str) -> Result<String, String> {
    let out = run_tool(
        "org.apache.kafka.tools.LogDirsCommand",
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--broker-list",
            brokers,
        ],
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with('{'))
        .map(str::to_string)
        .ok_or_else(|| output_text(&out))
}

/// An Apache Kafka controller `id` under `root` on a free port, not configured yet (its
/// port goes into the voters; then [`write_kafka_controller`]).
pub fn kafka_controller_node(root: &Path, id: i32) -> KafkaNode {
    KafkaNode {
        id,
        port: super::free_port(),
        dir: root.join(format!("kafka-{id}")),
        child: None,
        starts: 0,
    }
}

/// Writes controller `c`'s properties (voters `voters`, kraftd's or Kafka's or both) and
/// formats it with `kafka-storage format` for `cluster_id`, `format_args` added.
pub fn write_kafka_controller(
    c: &KafkaNode,
    voters: &str,
    cluster_id: &str,
    rf: i32,
    extra: &str,
    format_args: &[&str],
) {
    fs::create_dir_all(c.dir.join("logs")).unwrap();
    let own = format!(
        "process.roles=controller\nnode.id={}\nlisteners=CONTROLLER://127.0.0.1:{}\n",
        c.id, c.port
    );
    let data = format!("log.dirs={}\n", c.dir.join("data").display());
    fs::write(
        c.config_path(),
        format!("{own}{data}{}", kafka_common_config(voters, rf, extra)),
    )
    .unwrap();
    kafka_format(c, cluster_id, format_args);
}

/// An Apache Kafka broker `id` of cluster `cluster_id` whose controllers are `voters`
/// (`id@host:port,...`, kraftd's or Kafka's), formatted, not started.
pub fn kafka_broker(
    root: &Path,
    id: i32,
    voters: &str,
    cluster_id: &str,
    rf: i32,
    extra: &str,
) -> KafkaNode {
    kafka_broker_with_dirs(root, id, voters, cluster_id, rf, extra, 1)
}

/// [`kafka_broker`] with `dirs` log directories (JBOD): `data`, then `data2`, `data3`...
/// under its directory, each formatted.
pub fn kafka_broker_with_dirs(
    root: &Path,
    id: i32,
    voters: &str,
    cluster_id: &str,
    rf: i32,
    extra: &str,
    dirs: usize,
) -> KafkaNode {
    let node = KafkaNode {
        id,
        port: super::free_port(),
        dir: root.join(format!("kafka-{id}")),
        child: None,
        starts: 0,
    };
    fs::create_dir_all(node.dir.join("logs")).unwrap();
    let own = format!(
        "process.roles=broker\nnode.id={id}\nlisteners=PLAINTEXT://127.0.0.1:{}\n\
         inter.broker.listener.name=PLAINTEXT\n",
        node.port
    );
    let data = format!(
        "log.dirs={}\n",
        kafka_log_dirs(&node.dir, dirs)
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    fs::write(
        node.config_path(),
        format!("{own}{data}{}", kafka_common_config(voters, rf, extra)),
    )
    .unwrap();
    kafka_format(&node, cluster_id, &[]);
    node
}

/// The `dirs` log directories of a test broker living in `dir`: `data`, `data2`, ...
pub fn kafka_log_dirs(dir: &Path, dirs: usize) -> Vec<PathBuf> {
    (1..=dirs)
        .map(|i| match i {
            1 => dir.join("data"),
            i => dir.join(format!("data{i}")),
        })
        .collect()
}

/// The `controller.quorum.voters` of `controllers`.
pub fn kafka_voters(controllers: &[KafkaNode]) -> String {
    controllers
        .iter()
        .map(|c| format!("{}@127.0.0.1:{}", c.id, c.port))
        .collect::<Vec<_>>()
        .join(",")
}

/// The properties every node of a test cluster shares. `voters`: `id@host:port,...` for a
/// static quorum (`controller.quorum.voters`), or `host:port,...` for a dynamic one
/// (`controller.quorum.bootstrap.servers`, KIP-853).
fn kafka_common_config(voters: &str, rf: i32, extra: &str) -> String {
    let quorum = if voters.contains('@') {
        format!("controller.quorum.voters={voters}")
    } else {
        format!("controller.quorum.bootstrap.servers={voters}")
    };
    format!(
        "{quorum}\n\
         controller.listener.names=CONTROLLER\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
         offsets.topic.replication.factor={rf}\n\
         transaction.state.log.replication.factor={rf}\n\
         transaction.state.log.min.isr=1\n\
         group.initial.rebalance.delay.ms=0\n\
         broker.session.timeout.ms=3000\n\
         broker.heartbeat.interval.ms=500\n\
         {extra}\n"
    )
}

/// `javac` of `tests/java/<source>` against Kafka's jars into `root/classes`; that
/// directory, for a `java -cp` beside [`classpath`]. Panics with one line when there is no
/// JDK or the source does not compile.
pub fn javac(root: &Path, source: &str) -> PathBuf {
    let classes = root.join("classes");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/java")
        .join(source);
    let out = Command::new("javac")
        .arg("-d")
        .arg(&classes)
        .args(["-cp", &classpath()])
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("{} needs a JDK 17+ (javac): {e}", source.display()));
    assert!(
        out.status.success(),
        "javac {}: {}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    classes
}

/// `kafka-storage format` of `node` for `cluster_id`, with `format_args` added.
fn kafka_format(node: &KafkaNode, cluster_id: &str, format_args: &[&str]) {
    let config = node.config_path();
    let mut args = vec![
        "kafka.tools.StorageTool",
        "format",
        "-t",
        cluster_id,
        "-c",
        config.to_str().unwrap(),
    ];
    args.extend_from_slice(format_args);
    kafka_tool(&args);
}

/// `kafka-metadata-quorum describe --status` through `controllers` (a
/// `--bootstrap-controller` list): the leader's id, once there is one.
pub fn quorum_leader(controllers: &str) -> Result<i32, String> {
    let out = run_tool_within(
        "org.apache.kafka.tools.MetadataQuorumCommand",
        &[
            "--bootstrap-controller",
            controllers,
            "describe",
            "--status",
        ],
        Duration::from_secs(30),
    );
    let text = output_text(&out);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("LeaderId:"))
        .and_then(|id| id.trim().parse::<i32>().ok())
        .filter(|id| *id >= 0)
        .ok_or(text)
}

/// One row of `kafka-metadata-quorum describe --replication`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumReplica {
    pub id: i32,
    pub log_end_offset: i64,
    pub lag: i64,
    /// `Leader`, `Follower` (a voter) or `Observer`.
    pub status: String,
}

/// `kafka-metadata-quorum describe --replication` through `controllers`: every replica the
/// leader reports, or the tool's output when it fails.
pub fn quorum_replication(controllers: &str) -> Result<Vec<QuorumReplica>, String> {
    let out = run_tool_within(
        "org.apache.kafka.tools.MetadataQuorumCommand",
        &[
            "--bootstrap-controller",
            controllers,
            "describe",
            "--replication",
        ],
        Duration::from_secs(30),
    );
    if !out.status.success() {
        return Err(output_text(&out));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Columns padded with spaces (Kafka's `ToolsUtils.prettyPrintTable`): NodeId,
    // DirectoryId, LogEndOffset, Lag, LastFetchTimestamp, LastCaughtUpTimestamp, Status.
    let rows: Option<Vec<QuorumReplica>> = stdout
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            Some(QuorumReplica {
                id: cells.first()?.parse().ok()?,
                log_end_offset: cells.get(2)?.parse().ok()?,
                lag: cells.get(3)?.parse().ok()?,
                status: cells.last()?.to_string(),
            })
        })
        .collect();
    rows.filter(|r| !r.is_empty())
        .ok_or_else(|| output_text(&out))
}
