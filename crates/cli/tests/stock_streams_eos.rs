//! A Kafka Streams 4.4.0 application with `processing.guarantee=exactly_once_v2` against
//! one kraftd combined node (transaction and offsets logs at RF 1):
//! `tests/java/StreamsWordCount.java` (a word count; compiled here with `javac` against
//! Kafka's jars, which include kafka-streams) runs as separate JVMs while
//! `tests/python/streams_words.py` writes lines to its input. Instances A and B start; B
//! is closed cleanly halfway (its tasks move to A); C joins; A is killed with SIGKILL (its
//! tasks move to C, its open transactions abort). Then every word's latest count in the
//! output, read `read_committed`, must be its count in the input (exactly once: an update
//! applied twice or lost shows), no stream thread may have died (each instance's
//! uncaught-exception handler prints `THREAD-DIED`), and no instance may have logged
//! INVALID_TXN_STATE.
//!
//! Streams runs transactions V2 (`transaction.version` 2 is finalized at format): the epoch
//! bumped at every commit, partitions added through Produce v12+, the consumed offsets
//! through TxnOffsetCommit v5+ with no AddOffsetsToTxn — before kraftd added the group's
//! `__consumer_offsets` partition for it, no offset was ever committed (a rebalance then
//! waited for good on UNSTABLE_OFFSET_COMMIT) and an offsets-only commit was refused
//! INVALID_TXN_STATE.
//!
//! The scenario runs twice: with the classic rebalance protocol (Streams' own assignor in
//! the JoinGroup leader) and with `group.protocol=streams` (KIP-1071: the broker's streams
//! group coordinator assigns the tasks and creates the internal topics). The streams run
//! also drives Kafka's `kafka-streams-groups` tool (`StreamsGroupCommand`): `--list` and
//! `--describe` while the group runs, `--delete` once it is empty.
//!
//! To see a failing run: `KRAFTD_TEST_LOG=info,kraftd::request=debug` (every request in
//! and out of the node); each instance's stdout and stderr are printed on failure.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::kafka_jars::{classpath, log4j_option, run_tool};
use common::python::{python, wait_until_brokers_listed};
use common::script::Script;
use common::{formatted_combined_node, Node};

/// One Streams instance (a JVM running `StreamsWordCount`).
struct Instance {
    name: &'static str,
    child: Option<Child>,
    out: PathBuf,
    err: PathBuf,
}

impl Instance {
    fn start(
        root: &Path,
        classes: &Path,
        bootstrap: &str,
        name: &'static str,
        protocol: Protocol,
        extra: &[String],
    ) -> Instance {
        let out = root.join(format!("streams-{name}.out"));
        let err = root.join(format!("streams-{name}.err"));
        let child = Command::new("java")
            .args(["-Xmx256m", "-XX:TieredStopAtLevel=1", &log4j_option()])
            .arg("-cp")
            .arg(format!("{}:{}", classes.display(), classpath()))
            .arg("StreamsWordCount")
            .arg(bootstrap)
            .arg("wc")
            .arg(root.join(format!("state-{name}")))
            .args(protocol.app_settings())
            .args(extra)
            .stdin(Stdio::null())
            .stdout(File::create(&out).unwrap())
            .stderr(File::create(&err).unwrap())
            .spawn()
            .expect("java starts");
        Instance {
            name,
            child: Some(child),
            out,
            err,
        }
    }

    /// How many stdout lines equal `line`.
    fn count(&self, line: &str) -> usize {
        self.stdout().lines().filter(|l| *l == line).count()
    }

    fn stdout(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    fn report(&self) -> String {
        format!(
            "--- instance {} stdout ---\n{}\n--- instance {} stderr ---\n{}",
            self.name,
            self.stdout(),
            self.name,
            self.stderr()
        )
    }

    /// Waits up to `secs` for a stdout line equal to `line`, seen `times` times.
    fn wait_line(&self, line: &str, times: usize, secs: u64, others: &[&Instance]) {
        common::eventually(
            &format!("instance {}: '{line}' (x{times})", self.name),
            Duration::from_secs(secs),
            || reports(others),
            || match self.count(line) {
                n if n >= times => Ok(()),
                n => Err(format!("seen {n} times")),
            },
        )
    }

    /// SIGTERM: the shutdown hook closes Streams cleanly.
    fn terminate(&self) {
        let pid = self.child.as_ref().unwrap().id();
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// (Its own loop, not `common::eventually`: the probe needs the child mutably while the
    /// failure report reads the instance, and a timed-out instance must stay owned here so
    /// that dropping it kills the process.)
    fn wait_exit(&mut self, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while self.child.as_mut().unwrap().try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "instance {} still running {secs} s after SIGTERM\n{}",
                self.name,
                self.report()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        self.child = None;
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn reports(instances: &[&Instance]) -> String {
    instances
        .iter()
        .map(|i| i.report())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The rebalance protocol the instances run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Classic,
    Streams,
}

impl Protocol {
    /// The StreamsConfig settings the application is started with.
    fn app_settings(self) -> Vec<String> {
        match self {
            Protocol::Classic => Vec::new(),
            Protocol::Streams => vec!["group.protocol=streams".to_string()],
        }
    }
}

/// A kraftd combined node (broker and controller in one process) under `root`, started.
/// Streams members are fenced 6 s after their last heartbeat (the broker's
/// `group.streams.session.timeout.ms`; Kafka's least is 45 s unless lowered, as here), as
/// the classic members by the application's `session.timeout.ms`.
/// The node's web console is on: the node, its client port and its console's port.
fn combined_node(root: &Path) -> (Node, u16, u16) {
    let console = common::free_port();
    let (mut node, client) = formatted_combined_node(
        root,
        &format!(
            "console.enable=true\nmetrics.port={console}\n\
         offsets.topic.replication.factor=1\noffsets.topic.num.partitions=10\n\
         transaction.state.log.replication.factor=1\ntransaction.state.log.min.isr=1\n\
         transaction.state.log.num.partitions=10\n\
         group.initial.rebalance.delay.ms=0\n\
         group.streams.min.session.timeout.ms=6000\ngroup.streams.session.timeout.ms=6000\n\
         group.streams.min.heartbeat.interval.ms=1000\ngroup.streams.heartbeat.interval.ms=1000\n"
        ),
    );
    node.start();
    (node, client, console)
}

/// A started node under `root` with the feeder writing to `wc-in` (created): the node, its
/// bootstrap address, the feeder, the file that stops it and the console's port.
fn fed_node(root: &Path) -> (Node, String, Script, PathBuf, u16) {
    let (node, client, console) = combined_node(root);
    let bootstrap = format!("127.0.0.1:{client}");
    wait_until_brokers_listed(&bootstrap, 1, || node.logs());
    let stop = root.join("stop");
    let mut feed = Script::spawn(
        root,
        "streams_words.py",
        &["feed", &bootstrap, stop.to_str().unwrap()],
    );
    feed.wait_line_or(60, "the topics created", |l| l == "created", || node.logs());
    (node, bootstrap, feed, stop, console)
}

/// Kafka's `kafka-streams-groups` with `args` against `bootstrap`: its stdout, having
/// checked it exited 0.
fn streams_groups_tool(bootstrap: &str, args: &[&str]) -> String {
    let mut all = vec!["--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    let out = run_tool("org.apache.kafka.tools.streams.StreamsGroupCommand", &all);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert!(
        out.status.success(),
        "kafka-streams-groups {args:?} failed\n{stdout}\n{stderr}"
    );
    stdout
}

/// A GET of the web console's JSON `path` on `127.0.0.1:port`.
fn console_json(port: u16, path: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{path}: {response}");
    serde_json::from_str(body).unwrap()
}

/// `javac` of the application into `root/classes`.
fn compile(root: &Path) -> PathBuf {
    common::kafka_jars::javac(root, "StreamsWordCount.java")
}

/// Waits until the feeder has `n` more lines acknowledged than now.
fn wait_fed(feed: &mut Script, more: u64, logs: impl Fn() -> String) {
    let n = feed.acked_so_far() + more;
    feed.wait_line_or(
        120,
        &format!("{n} lines acknowledged"),
        |l| {
            l.strip_prefix("acked ")
                .and_then(|v| v.parse::<u64>().ok())
                .is_some_and(|v| v >= n)
        },
        logs,
    );
}

#[test]
fn streams_exactly_once_counts_every_word_once_through_a_clean_close_a_join_and_a_kill() {
    run(Protocol::Classic);
}

#[test]
fn streams_protocol_exactly_once_counts_every_word_once_through_a_clean_close_a_join_and_a_kill() {
    run(Protocol::Streams);
}

/// Interactive Queries under `group.protocol=streams`: two instances with
/// `application.server` set each learn, from the heartbeat's PartitionsByUserEndpoint, both
/// endpoints and which `wc-in` partitions each one's active tasks read, every partition
/// once (`KafkaStreams.metadataForAllStreamsClients()`).
#[test]
fn streams_protocol_interactive_queries_metadata_names_every_instance_and_partition() {
    python();
    let root = tempfile::tempdir().unwrap();
    let classes = compile(root.path());
    let (mut node, bootstrap, feed, stop, _console) = fed_node(root.path());
    let endpoint = |port: u16| vec![format!("application.server=localhost:{port}")];
    let a = Instance::start(
        root.path(),
        &classes,
        &bootstrap,
        "A",
        Protocol::Streams,
        &endpoint(7001),
    );
    let b = Instance::start(
        root.path(),
        &classes,
        &bootstrap,
        "B",
        Protocol::Streams,
        &endpoint(7002),
    );
    // Both clients, and the four wc-in partitions spread over them, each once.
    let complete = |line: &str| {
        let Some(clients) = line.strip_prefix("METADATA ") else {
            return false;
        };
        let clients: Vec<&str> = clients.split(' ').collect();
        let names_both = clients.len() == 2
            && clients[0].starts_with("localhost:7001[")
            && clients[1].starts_with("localhost:7002[");
        let mut inputs: Vec<&str> = clients
            .iter()
            .flat_map(|c| c.split(['[', ']', ',']))
            .filter(|tp| tp.starts_with("wc-in-"))
            .collect();
        inputs.sort();
        let each_own_share = clients
            .iter()
            .all(|c| c.split(['[', ']', ',']).any(|tp| tp.starts_with("wc-in-")));
        names_both && each_own_share && inputs == ["wc-in-0", "wc-in-1", "wc-in-2", "wc-in-3"]
    };
    for i in [&a, &b] {
        common::eventually(
            &format!("instance {}: IQ metadata naming both instances", i.name),
            Duration::from_secs(120),
            || reports(&[&a, &b]),
            || match i.stdout().lines().rev().find(|l| l.starts_with("METADATA")) {
                Some(l) if complete(l) => Ok(()),
                last => Err(format!("last: {last:?}")),
            },
        );
    }
    std::fs::write(&stop, b"").unwrap();
    feed.finish(120, || reports(&[&a, &b]));
    for i in [&a, &b] {
        assert!(
            !i.stdout().contains("THREAD-DIED"),
            "a stream thread of {} died\n{}",
            i.name,
            reports(&[&a, &b])
        );
    }
    node.kill9();
}

fn run(protocol: Protocol) {
    python();
    let started = Instant::now();
    let root = tempfile::tempdir().unwrap();
    let classes = compile(root.path());
    let (mut node, bootstrap, mut feed, stop, console) = fed_node(root.path());

    let running = "STATE REBALANCING -> RUNNING";
    let mut a = Instance::start(root.path(), &classes, &bootstrap, "A", protocol, &[]);
    let mut b = Instance::start(root.path(), &classes, &bootstrap, "B", protocol, &[]);
    a.wait_line(running, 1, 120, &[&a, &b]);
    b.wait_line(running, 1, 120, &[&a, &b]);
    wait_fed(&mut feed, 1000, || reports(&[&a, &b]));

    // B closes cleanly: its tasks move to A (after B's session: Streams does not leave the
    // group on close), whose transactions go on.
    let at = Instant::now();
    let runs = a.count(running);
    b.terminate();
    b.wait_exit(60);
    b.wait_line("CLOSED", 1, 5, &[&a, &b]);
    a.wait_line(running, runs + 1, 90, &[&a, &b]);
    eprintln!("A running alone {:?} after B's close", at.elapsed());
    wait_fed(&mut feed, 1000, || reports(&[&a, &b]));

    // C joins, then A is killed: C takes every task over.
    let mut c = Instance::start(root.path(), &classes, &bootstrap, "C", protocol, &[]);
    c.wait_line(running, 1, 120, &[&a, &b, &c]);
    wait_fed(&mut feed, 1000, || reports(&[&a, &b, &c]));
    if protocol == Protocol::Streams {
        let listed = streams_groups_tool(&bootstrap, &["--list"]);
        assert!(
            listed.lines().any(|l| l.trim() == "wc"),
            "--list does not name wc:\n{listed}"
        );
        let described = streams_groups_tool(&bootstrap, &["--describe", "--group", "wc"]);
        assert!(
            described.contains("wc") && !described.contains("Error"),
            "--describe:\n{described}"
        );
        let members =
            streams_groups_tool(&bootstrap, &["--describe", "--group", "wc", "--members"]);
        eprintln!("kafka-streams-groups --describe:\n{described}\n{members}");
        // kraftd's web console names the same members, each with its tasks.
        let page = console_json(console, "/api/groups/wc");
        assert_eq!(page["protocol_type"], "streams", "{page}");
        let console_members: Vec<&str> = page["members"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["member_id"].as_str())
            .collect();
        assert!(
            !console_members.is_empty() && console_members.iter().all(|m| members.contains(m)),
            "console {page} vs kafka-streams-groups --members:\n{members}"
        );
        let active: usize = page["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["active_tasks"].as_array().map_or(0, Vec::len))
            .sum();
        assert!(active > 0, "no active task on the console: {page}");
    }
    let at = Instant::now();
    let runs = c.count(running);
    a.kill9();
    c.wait_line(running, runs + 1, 120, &[&a, &b, &c]);
    eprintln!("C running alone {:?} after A's SIGKILL", at.elapsed());
    wait_fed(&mut feed, 1000, || reports(&[&a, &b, &c]));

    std::fs::write(&stop, b"").unwrap();
    let summary = feed.finish(120, || reports(&[&a, &b, &c]));
    let lines = summary
        .split("\"lines\": ")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no line count in {summary}"));
    let verify = Script::spawn(
        root.path(),
        "streams_words.py",
        &["verify", &bootstrap, &lines.to_string()],
    );
    let counted = verify.finish(150, || {
        format!("{}\n{}", reports(&[&a, &b, &c]), node.logs())
    });
    eprintln!("{lines} lines, {counted}");

    c.terminate();
    c.wait_exit(60);
    if protocol == Protocol::Streams {
        // Empty once C's session is over (or at once, when it left): then it may go.
        common::eventually(
            "kafka-streams-groups --delete",
            Duration::from_secs(60),
            || node.logs(),
            || {
                let mut all = vec!["--bootstrap-server", bootstrap.as_str()];
                all.extend_from_slice(&["--delete", "--group", "wc"]);
                let out = run_tool("org.apache.kafka.tools.streams.StreamsGroupCommand", &all);
                let text = String::from_utf8_lossy(&out.stdout).to_string();
                if out.status.success()
                    && text.contains("Deletion of requested streams groups ('wc') was successful")
                {
                    Ok(())
                } else {
                    Err(format!("{text}{}", String::from_utf8_lossy(&out.stderr)))
                }
            },
        );
        let listed = streams_groups_tool(&bootstrap, &["--list"]);
        assert!(
            !listed.lines().any(|l| l.trim() == "wc"),
            "wc still listed after --delete:\n{listed}"
        );
    }
    for i in [&a, &b, &c] {
        let (out, err) = (i.stdout(), i.stderr());
        assert!(
            !out.contains("THREAD-DIED"),
            "a stream thread of {} died\n{}",
            i.name,
            reports(&[&a, &b, &c])
        );
        assert!(
            !err.contains("INVALID_TXN_STATE") && !err.contains("InvalidTxnStateException"),
            "{} logged INVALID_TXN_STATE\n{}",
            i.name,
            reports(&[&a, &b, &c])
        );
    }
    eprintln!("done in {:?}", started.elapsed());
    node.kill9();
}
