//! Helpers shared by the integration tests that run real `kraftd` processes: a node's
//! directory, config and process (start, kill -9, logs), free ports, one-shot `kraftd`
//! commands, and a formatted three-controller quorum on loopback. Each test file includes
//! this module (`mod common;`) and uses only part of it.
#![allow(dead_code)]

pub mod chromium;
pub mod jbod;
pub mod kafka_jars;
pub mod kcat;
pub mod pki;
pub mod python;
pub mod raw;
pub mod script;
pub mod secured;
pub mod share;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_kraftd");

pub struct Node {
    pub id: i32,
    /// The `kraftd` subcommand that runs it: `controller` or `broker`.
    pub role: &'static str,
    pub port: u16,
    pub dir: PathBuf,
    pub child: Option<Child>,
    pub starts: u32,
}

impl Node {
    /// Node `id` under `root/node-<id>`, on a free port, not started.
    pub fn new(root: &Path, id: i32) -> Node {
        Node {
            id,
            role: "controller",
            port: free_port(),
            dir: root.join(format!("node-{id}")),
            child: None,
            starts: 0,
        }
    }

    /// Broker `id` under `root/node-<id>`, its client listener on a free port, not started.
    pub fn broker(root: &Path, id: i32) -> Node {
        let mut node = Node::new(root, id);
        node.role = "broker";
        node
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.join("controller.properties")
    }

    /// Adds `key=value` lines to the node's properties file (before it starts).
    pub fn add_config(&self, lines: &[&str]) {
        use std::io::Write;
        let mut config = std::fs::OpenOptions::new()
            .append(true)
            .open(self.config_path())
            .unwrap();
        for line in lines {
            writeln!(config, "{line}").unwrap();
        }
    }

    /// The directory of a partition's log on this node.
    pub fn partition_dir(&self, topic: &str, partition: i32) -> PathBuf {
        self.dir.join("data").join(format!("{topic}-{partition}"))
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join(format!("kraftd-{}.log", self.starts))
    }

    pub fn metadata_dir(&self) -> PathBuf {
        self.dir.join("data").join("__cluster_metadata-0")
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn start(&mut self) {
        self.starts += 1;
        let log = File::create(self.log_path()).unwrap();
        let child = Command::new(BIN)
            .args([self.role, "--config"])
            .arg(self.config_path())
            // `KRAFTD_TEST_LOG` (a `RUST_LOG` filter) to see more of a failing run.
            .env(
                "RUST_LOG",
                std::env::var("KRAFTD_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("kraftd starts");
        self.child = Some(child);
    }

    /// SIGKILL: no resignation, nothing flushed that was not already.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn logs(&self) -> String {
        (1..=self.starts)
            .map(|i| {
                std::fs::read_to_string(self.dir.join(format!("kraftd-{i}.log")))
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A port no one listens on, for a node started later. Taken below Linux's ephemeral range
/// (32768–60999), where no outgoing connection of a concurrent test can grab it between this
/// call and the node's bind (ports from `bind(0)` could be, and were), and never handed out
/// twice by one test process; test binaries running at once start at different points.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id().wrapping_mul(7919);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        assert!(
            n < SPAN,
            "free_port: every port of {FIRST}..{} handed out",
            FIRST + SPAN
        );
        let port = (FIRST + start.wrapping_add(n) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Runs `kraftd args` to completion; panics unless it succeeds; its stdout.
pub fn run(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "kraftd {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `controller.quorum.voters` for `nodes`.
pub fn voters(nodes: &[Node]) -> String {
    nodes
        .iter()
        .map(|n| format!("{}@127.0.0.1:{}", n.id, n.port))
        .collect::<Vec<_>>()
        .join(",")
}

/// A controller's properties: small segments and snapshot thresholds, a no-op record every
/// 100 ms, so logs roll and snapshots happen within a test. The segments (16 KiB, through
/// Kafka's test-only `internal.metadata.log.segment.bytes`) still hold the largest atomic
/// batch a test makes, the creation of `__consumer_offsets` or `__transaction_state` (50
/// partitions, ~6.4 KiB at RF 3): the log refuses a batch larger than a segment, and the
/// controller that proposed it renounces, as does every next one the client's retry reaches.
pub fn write_config(node: &Node, voters: &str) {
    write_controller_config(node, &format!("controller.quorum.voters={voters}"));
}

/// [`write_config`] for a dynamic quorum (KIP-853): the voters found through
/// `controller.quorum.bootstrap.servers` (`host:port,...`), none configured.
pub fn write_dynamic_config(node: &Node, bootstrap: &str) {
    write_controller_config(
        node,
        &format!("controller.quorum.bootstrap.servers={bootstrap}"),
    );
}

/// A controller's properties with `quorum` (the line saying how to find the voters).
fn write_controller_config(node: &Node, quorum: &str) {
    let text = format!(
        "process.roles=controller\n\
         node.id={id}\n\
         {quorum}\n\
         listeners=CONTROLLER://127.0.0.1:{port}\n\
         controller.listener.names=CONTROLLER\n\
         log.dirs={data}\n\
         internal.metadata.log.segment.bytes=16384\n\
         metadata.log.max.record.bytes.between.snapshots=2048\n\
         metadata.max.idle.interval.ms=100\n\
         broker.session.timeout.ms=3000\n",
        id = node.id,
        port = node.port,
        data = node.dir.join("data").display(),
    );
    std::fs::write(node.config_path(), text).unwrap();
}

/// A broker's properties: a PLAINTEXT listener on its port, the quorum's voters, a quick
/// heartbeat so tests see fencing change fast.
pub fn write_broker_config(node: &Node, voters: &str) {
    write_broker_config_with(node, &format!("controller.quorum.voters={voters}"));
}

/// [`write_broker_config`] for a dynamic quorum: the controllers found through
/// `controller.quorum.bootstrap.servers` (`host:port,...`).
pub fn write_dynamic_broker_config(node: &Node, bootstrap: &str) {
    write_broker_config_with(
        node,
        &format!("controller.quorum.bootstrap.servers={bootstrap}"),
    );
}

/// A broker's properties with `quorum` (the line saying how to find the controllers).
fn write_broker_config_with(node: &Node, quorum: &str) {
    let text = format!(
        "process.roles=broker\n\
         node.id={id}\n\
         {quorum}\n\
         listeners=PLAINTEXT://127.0.0.1:{port}\n\
         controller.listener.names=CONTROLLER\n\
         log.dirs={data}\n\
         broker.heartbeat.interval.ms=500\n",
        id = node.id,
        port = node.port,
        data = node.dir.join("data").display(),
    );
    std::fs::write(node.config_path(), text).unwrap();
}

/// Controllers 1..=`controllers` and brokers after them, formatted for one new cluster id,
/// not started.
pub fn formatted_cluster(
    root: &Path,
    controllers: i32,
    brokers: i32,
) -> (String, Vec<Node>, Vec<Node>) {
    formatted_cluster_with_scram(root, controllers, brokers, &[])
}

/// [`formatted_cluster`] whose controllers are formatted with `kraftd format --add-scram`
/// for each of `scram` (`SCRAM-SHA-512=[name=admin,password=...]`): the users exist from
/// the cluster's first start.
pub fn formatted_cluster_with_scram(
    root: &Path,
    controllers: i32,
    brokers: i32,
    scram: &[&str],
) -> (String, Vec<Node>, Vec<Node>) {
    let extra: Vec<&str> = scram.iter().flat_map(|a| ["--add-scram", a]).collect();
    formatted_cluster_with_args(root, controllers, brokers, &extra)
}

/// [`formatted_cluster`] with `extra` arguments to every `kraftd format` (`--feature
/// share.version=2`, `--add-scram ...`).
pub fn formatted_cluster_with_args(
    root: &Path,
    controllers: i32,
    brokers: i32,
    extra: &[&str],
) -> (String, Vec<Node>, Vec<Node>) {
    let (cluster_id, quorum) = formatted_quorum_with_args(root, controllers, extra);
    let voters = voters(&quorum);
    let brokers: Vec<Node> = (controllers + 1..=controllers + brokers)
        .map(|id| Node::broker(root, id))
        .collect();
    for node in &brokers {
        std::fs::create_dir_all(&node.dir).unwrap();
        write_broker_config(node, &voters);
        format_with_args(node, &cluster_id, extra);
    }
    (cluster_id, quorum, brokers)
}

/// A combined node (`process.roles=broker,controller`, node 1, its own one-voter quorum)
/// under `root`, its properties written with `extra` lines (each ending in a newline) and
/// formatted for a new cluster, not started; with its client listener's port.
pub fn formatted_combined_node(root: &Path, extra: &str) -> (Node, u16) {
    let cluster_id = run(&["random-uuid"]).trim().to_string();
    let mut node = Node::new(root, 1);
    node.role = "combined";
    let client = free_port();
    std::fs::create_dir_all(&node.dir).unwrap();
    std::fs::write(
        node.config_path(),
        format!(
            "process.roles=broker,controller\nnode.id=1\n\
             controller.quorum.voters=1@127.0.0.1:{controller}\n\
             listeners=PLAINTEXT://127.0.0.1:{client},CONTROLLER://127.0.0.1:{controller}\n\
             controller.listener.names=CONTROLLER\nlog.dirs={data}\n{extra}",
            controller = node.port,
            data = node.dir.join("data").display(),
        ),
    )
    .unwrap();
    format(&node, &cluster_id);
    (node, client)
}

/// `kraftd format` of `node` for `cluster_id`.
pub fn format(node: &Node, cluster_id: &str) {
    format_with_scram(node, cluster_id, &[]);
}

/// `kraftd format` of `node` for `cluster_id` with an `--add-scram` argument for each of
/// `scram`.
pub fn format_with_scram(node: &Node, cluster_id: &str, scram: &[&str]) {
    let extra: Vec<&str> = scram.iter().flat_map(|a| ["--add-scram", a]).collect();
    format_with_args(node, cluster_id, &extra);
}

/// `kraftd format` of `node` for `cluster_id` with `extra` arguments (`--standalone`, ...).
pub fn format_with_args(node: &Node, cluster_id: &str, extra: &[&str]) {
    let config = node.config_path();
    let mut args = vec![
        "format",
        "--config",
        config.to_str().unwrap(),
        "--cluster-id",
        cluster_id,
    ];
    args.extend(extra);
    run(&args);
}

/// Nodes 1..=`count` under `root`, configured as one quorum and formatted for a new cluster
/// id, not started; with that cluster id.
pub fn formatted_quorum(root: &Path, count: i32) -> (String, Vec<Node>) {
    formatted_quorum_with_scram(root, count, &[])
}

/// [`formatted_quorum`], formatted with `--add-scram` for each of `scram`.
pub fn formatted_quorum_with_scram(root: &Path, count: i32, scram: &[&str]) -> (String, Vec<Node>) {
    let extra: Vec<&str> = scram.iter().flat_map(|a| ["--add-scram", a]).collect();
    formatted_quorum_with_args(root, count, &extra)
}

/// [`formatted_quorum_with_scram`] with `extra` arguments to each `kraftd format`.
pub fn formatted_quorum_with_args(root: &Path, count: i32, extra: &[&str]) -> (String, Vec<Node>) {
    let cluster_id = run(&["random-uuid"]).trim().to_string();
    let nodes: Vec<Node> = (1..=count).map(|id| Node::new(root, id)).collect();
    let voters = voters(&nodes);
    for node in &nodes {
        std::fs::create_dir_all(&node.dir).unwrap();
        write_config(node, &voters);
        format_with_args(node, &cluster_id, extra);
    }
    (cluster_id, nodes)
}

/// Stops every started node with SIGTERM (graceful) and asserts each exits cleanly.
pub fn stop_gracefully(nodes: &mut [Node]) {
    for node in nodes.iter_mut() {
        if let Some(child) = node.child.as_mut() {
            let _ = Command::new("kill").arg(child.id().to_string()).status();
        }
    }
    for node in nodes.iter_mut() {
        if let Some(mut child) = node.child.take() {
            let status = child.wait().unwrap();
            assert!(status.success(), "node {} exited with {status}", node.id);
        }
    }
}

/// [`formatted_cluster`] with every node started (not waiting for the brokers to unfence).
pub fn started_cluster(root: &Path, controllers: i32, brokers: i32) -> (Vec<Node>, Vec<Node>) {
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root, controllers, brokers);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    (controllers, brokers)
}

/// A partition directory's segment files (`*.log`), oldest first.
pub fn segment_files(partition_dir: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(partition_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs
}

/// The nodes' addresses, comma-separated (a bootstrap list).
pub fn addresses(nodes: &[Node]) -> String {
    joined(nodes.iter().map(Node::address), ",")
}

/// The addresses of the nodes running now (not killed), comma-separated.
pub fn live_addresses(nodes: &[Node]) -> String {
    joined(
        nodes
            .iter()
            .filter(|n| n.child.is_some())
            .map(Node::address),
        ",",
    )
}

/// Every node's log, one after the other.
pub fn all_logs(nodes: &[Node]) -> String {
    joined(nodes.iter().map(Node::logs), "\n")
}

/// `items` joined with `separator`.
pub fn joined(items: impl Iterator<Item = String>, separator: &str) -> String {
    items.collect::<Vec<_>>().join(separator)
}

/// The `Name: value` lines of `metadata-quorum describe --status` (Kafka's tool or kraftd's).
pub fn status_fields(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The `"id": N` of a `CurrentVoters` / `CurrentObservers` list, sorted.
pub fn voter_ids(list: &str) -> Vec<i32> {
    let mut ids: Vec<i32> = list
        .split("\"id\": ")
        .skip(1)
        .filter_map(|s| {
            s.split(|c: char| !c.is_ascii_digit() && c != '-')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    ids.sort();
    ids
}

/// The cluster tests' one wait: polls `probe` every 200 ms until it yields a value, for at most
/// `timeout`; on timeout panics with `what`, the last thing the probe saw (its `Err`) and
/// `logs()`. Nothing sleeps then asserts.
pub fn eventually<T>(
    what: &str,
    timeout: Duration,
    logs: impl Fn() -> String,
    mut probe: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match probe() {
            Ok(value) => return value,
            Err(last) => last,
        };
        assert!(
            Instant::now() < deadline,
            "{what}: not reached in {timeout:?}; last seen: {last}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The `/metrics` text of the node whose HTTP listener is on `port`, as a Prometheus scraper
/// reads it; empty if it does not answer.
pub fn scrape_metrics(port: u16) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .is_err()
    {
        return String::new();
    }
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body
}

/// The newest snapshot (`<offset>-<epoch>.checkpoint`) of a metadata log directory, past the
/// bootstrap ones (`00000000000000000000-0000000000.checkpoint`, the bootstrap snapshot a
/// format writes, and Kafka's `bootstrap.checkpoint`).
pub fn newest_snapshot(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "checkpoint")
                && p.file_name().is_some_and(|n| {
                    n != "00000000000000000000-0000000000.checkpoint" && n != "bootstrap.checkpoint"
                })
        })
        .max()
}
