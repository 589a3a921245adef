//! Partition reassignment on real processes with Kafka's own tool: Apache Kafka 4.4.0's
//! `kafka-reassign-partitions` (`ReassignPartitionsCommand`, from the jars the test setup
//! fetches) generates, executes, verifies, lists and cancels reassignments against kraftd,
//! while a stock idempotent acks=all producer and a consumer run (`python/reassign.py`):
//! every acknowledged record is read back, each partition ends on its target replicas with
//! all of them in the ISR, and a removed replica's log is deleted. A reassignment waiting
//! for a stopped target broker survives kill -9 of the active controller and of the
//! partition's leader, and completes once the target returns; cancellation reverts to the
//! original replicas. kafka-python's admin client moves a partition too (and starts the move
//! onto the stopped broker, which Kafka's tool refuses: it checks brokers are alive).
//! Kafka's tool reads DescribeLogDirs in `--generate` and `--execute`.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::kafka_jars::{output_text as text, run_tool as tool};
use common::python::{python, script_path, wait_until_brokers_listed};
use common::{addresses, all_logs, formatted_cluster, joined, Node};

const TOOL: &str = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";

/// `kafka-reassign-partitions --bootstrap-server <bootstrap> args...`, asserted to succeed;
/// its stdout.
fn reassign_tool(bootstrap: &str, args: &[&str], logs: impl Fn() -> String) -> String {
    let mut all = vec!["--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    let out = tool(TOOL, &all);
    assert!(
        out.status.success(),
        "kafka-reassign-partitions {args:?}\n{}\n{}",
        text(&out),
        logs()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `reassign.py args...` run to its end.
fn script(args: &[&str]) -> Output {
    Command::new(python())
        .arg(script_path("reassign.py"))
        .args(args)
        .output()
        .unwrap()
}

fn assert_all_ok(what: &str, out: &Output, logs: impl Fn() -> String) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all ok"),
        "{what}\n{}\n{}",
        text(out),
        logs()
    );
}

/// Each partition of `topic`: (replicas, sorted ISR, leader), from Metadata.
type Shape = BTreeMap<i32, (Vec<i32>, Vec<i32>, i32)>;

fn ids(list: &str) -> Vec<i32> {
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect()
}

fn describe(bootstrap: &str, topic: &str) -> Shape {
    let out = script(&["describe", bootstrap, topic]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.len() == 4).then(|| {
                (
                    cols[0].parse().unwrap(),
                    (ids(cols[1]), ids(cols[2]), cols[3].parse().unwrap()),
                )
            })
        })
        .collect()
}

/// Polls Metadata until every partition named in `target` has exactly those replicas, all
/// in the ISR (60 s at most); the last shape seen.
fn wait_for_shape(
    bootstrap: &str,
    topic: &str,
    target: &[(i32, &[i32])],
    logs: impl Fn() -> String,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let shape = describe(bootstrap, topic);
        let done = target.iter().all(|(p, replicas)| {
            shape.get(p).is_some_and(|(r, isr, _)| {
                let mut sorted = replicas.to_vec();
                sorted.sort();
                r == replicas && *isr == sorted
            })
        });
        if done {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{topic} never reached {target:?}: {shape:?}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The reassignment JSON `kafka-reassign-partitions` reads.
fn plan(topic: &str, target: &[(i32, &[i32])]) -> String {
    let partitions: Vec<String> = target
        .iter()
        .map(|(p, replicas)| {
            let list: Vec<String> = replicas.iter().map(i32::to_string).collect();
            format!(
                r#"{{"topic":"{topic}","partition":{p},"replicas":[{}]}}"#,
                list.join(",")
            )
        })
        .collect();
    format!(r#"{{"version":1,"partitions":[{}]}}"#, partitions.join(","))
}

/// The acks=all producer and consumer of `reassign.py load`, running.
struct Load {
    child: Child,
    /// Lines read before `acked 1000`.
    seen: Vec<String>,
    /// The rest of its stdout, read to the end.
    rest: Option<std::thread::JoinHandle<Vec<String>>>,
    stderr: std::path::PathBuf,
}

impl Drop for Load {
    /// A test that fails before `finish_load` leaves no producer running.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the load; returns once 1000 records are acknowledged.
fn start_load(bootstrap: &str, topic: &str, dir: &Path) -> Load {
    let stderr = dir.join("load.stderr");
    let mut child = Command::new(python())
        .arg(script_path("reassign.py"))
        .args(["load", bootstrap, topic])
        .arg(dir.join("stop"))
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push(line.clone());
        if line == "acked 1000" || line.starts_with("FAILED") {
            break;
        }
    }
    assert!(
        seen.last().is_some_and(|l| l == "acked 1000"),
        "load: {seen:?}"
    );
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect());
    Load {
        child,
        seen,
        rest: Some(rest),
        stderr,
    }
}

/// Stops the load and asserts every acknowledged record was read back.
fn finish_load(mut load: Load, dir: &Path, logs: impl Fn() -> String) {
    std::fs::write(dir.join("stop"), b"stop").unwrap();
    let status = load.child.wait().unwrap();
    let mut all = std::mem::take(&mut load.seen);
    if let Some(rest) = load.rest.take() {
        all.extend(rest.join().unwrap());
    }
    let all = all.join("\n");
    assert!(
        status.success() && all.contains("all ok"),
        "load:\n{all}\n{}\n{}",
        std::fs::read_to_string(&load.stderr).unwrap_or_default(),
        logs()
    );
    eprintln!(
        "load: {}",
        all.lines().find(|l| l.starts_with('{')).unwrap_or("")
    );
}

/// Every node's log under `root` (`node-*/kraftd-*.log`), for failure messages.
fn node_logs(root: &Path) -> String {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|node| {
            std::fs::read_dir(node.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    joined(
        files.iter().map(|f| {
            format!(
                "--- {} ---\n{}",
                f.display(),
                std::fs::read_to_string(f).unwrap_or_default()
            )
        }),
        "\n",
    )
}

/// Waits until `dir` is gone (a removed replica's log), 30 s at most.
fn wait_gone(dir: &Path, logs: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while dir.exists() {
        assert!(
            Instant::now() < deadline,
            "{} still exists\n{}",
            dir.display(),
            logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn kafka_reassign_partitions_moves_a_topic_onto_a_third_broker_under_acks_all_load() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 3);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = addresses(&brokers);
    let logs = || all_logs(&brokers) + &all_logs(&controllers);
    wait_until_brokers_listed(&bootstrap, 3, logs);
    let topic = "moving";
    let created = script(&["create", &bootstrap, topic, "[[2,3],[3,2],[2,3]]", "2"]);
    assert_all_ok("create", &created, logs);

    let load = start_load(&bootstrap, topic, root.path());

    // --generate proposes a plan over brokers 2,3,4 (we use our own, deterministic one).
    let topics_file = root.path().join("topics.json");
    std::fs::write(
        &topics_file,
        format!(r#"{{"topics":[{{"topic":"{topic}"}}],"version":1}}"#),
    )
    .unwrap();
    let generated = reassign_tool(
        &bootstrap,
        &[
            "--generate",
            "--topics-to-move-json-file",
            topics_file.to_str().unwrap(),
            "--broker-list",
            "2,3,4",
        ],
        logs,
    );
    assert!(
        generated.contains("Current partition replica assignment")
            && generated.contains("Proposed partition reassignment configuration"),
        "{generated}"
    );

    // Every partition gains broker 4: 0 and 1 lose their leader, 2 keeps it.
    let target: [(i32, &[i32]); 3] = [(0, &[4, 3]), (1, &[2, 4]), (2, &[4, 2])];
    let plan_file = root.path().join("plan.json");
    std::fs::write(&plan_file, plan(topic, &target)).unwrap();
    let plan_path = plan_file.to_str().unwrap();
    let executed = reassign_tool(
        &bootstrap,
        &["--execute", "--reassignment-json-file", plan_path],
        logs,
    );
    assert!(
        executed.contains("Successfully started partition reassignment"),
        "{executed}"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let verified = reassign_tool(
            &bootstrap,
            &[
                "--verify",
                "--preserve-throttles",
                "--reassignment-json-file",
                plan_path,
            ],
            logs,
        );
        let completed = (0..3)
            .filter(|p| {
                verified.contains(&format!(
                    "Reassignment of partition {topic}-{p} is completed"
                ))
            })
            .count();
        if completed == 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "--verify\n{verified}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let listed = reassign_tool(&bootstrap, &["--list"], logs);
    assert!(
        listed.contains("No partition reassignments found."),
        "{listed}"
    );
    finish_load(load, root.path(), logs);
    wait_for_shape(&bootstrap, topic, &target, logs);
    // The replicas that left are stopped and their logs deleted.
    let node = |id: i32| brokers.iter().find(|b| b.id == id).unwrap();
    wait_gone(&node(2).partition_dir(topic, 0), logs);
    wait_gone(&node(3).partition_dir(topic, 1), logs);
    wait_gone(&node(3).partition_dir(topic, 2), logs);
    assert!(node(4).partition_dir(topic, 0).exists());
    // Completion moves leadership only off a removed leader (as Kafka); the preferred
    // replica takes over on a preferred election (`kafka-leader-election`).
    // NOT_CONTROLLER is retriable and Kafka's tool leaves the retry to its caller (an
    // election may be under way after the controller failover above).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let elected = tool(
            "org.apache.kafka.tools.LeaderElectionCommand",
            &[
                "--bootstrap-server",
                &bootstrap,
                "--election-type",
                "PREFERRED",
                "--all-topic-partitions",
            ],
        );
        if elected.status.success() {
            break;
        }
        let retriable = String::from_utf8_lossy(&elected.stderr).contains("NotControllerException");
        assert!(retriable && Instant::now() < deadline, "{}", text(&elected));
        std::thread::sleep(Duration::from_millis(500));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let shape = describe(&bootstrap, topic);
        if target.iter().all(|(p, r)| shape[p].2 == r[0]) {
            break;
        }
        assert!(Instant::now() < deadline, "leaders {shape:?}\n{}", logs());
        std::thread::sleep(Duration::from_millis(300));
    }

    // kafka-python's admin client: its errors, then a move of its own.
    let created = script(&["create", &bootstrap, "kp", "[[2,3]]"]);
    assert_all_ok("create kp", &created, logs);
    let moved = script(&["kafka-python", &bootstrap, "kp"]);
    assert_all_ok("kafka-python", &moved, logs);
}

/// The active controller per `kraftd metadata-quorum`.
fn active_controller(controllers: &[Node]) -> i32 {
    let all = joined(
        controllers
            .iter()
            .filter(|n| n.child.is_some())
            .map(Node::address),
        ",",
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = Command::new(common::BIN)
            .args([
                "metadata-quorum",
                "--bootstrap-controller",
                &all,
                "describe",
                "--status",
            ])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        if let Some(id) = stdout
            .lines()
            .find_map(|l| l.strip_prefix("LeaderId:"))
            .and_then(|v| v.trim().parse().ok())
        {
            return id;
        }
        assert!(Instant::now() < deadline, "no active controller: {stdout}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_reassignment_waiting_for_a_stopped_broker_survives_controller_and_leader_failover() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 3, 3);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = addresses(&brokers);
    wait_until_brokers_listed(&bootstrap, 3, || all_logs(&brokers));
    let topic = "waiting";
    let created = script(&["create", &bootstrap, topic, "[[4,5],[5,4]]"]);
    assert_all_ok("create", &created, || all_logs(&brokers));
    let load = start_load(&bootstrap, topic, root.path());

    // Broker 6 stops (still registered, fenced): a move onto it waits.
    // Brokers 4, 5, 6 in order.
    let index = |id: i32| (id - 4) as usize;
    // A clean stop: fenced at once, so no client is sent to it (Metadata leaves it out).
    common::stop_gracefully(std::slice::from_mut(&mut brokers[index(6)]));
    let target: [(i32, &[i32]); 2] = [(0, &[4, 6]), (1, &[6, 4])];
    // Broker 4 stays up throughout: the tools and clients start from it.
    let live = brokers[index(4)].address();
    let logs = || node_logs(root.path());
    wait_until_brokers_listed(&live, 2, logs);
    // Kafka's tool refuses a target broker that is not alive (its DescribeCluster check);
    // the API takes any registered broker, as Kafka's controller does.
    let altered = script(&["alter", &live, topic, r#"{"0": [4, 6], "1": [6, 4]}"#]);
    assert_all_ok("alter", &altered, logs);
    let listed = reassign_tool(&live, &["--list"], logs);
    assert!(
        listed.contains(&format!(
            "{topic}-0: replicas: 4,6,5. adding: 6. removing: 5."
        )) && listed.contains(&format!(
            "{topic}-1: replicas: 6,4,5. adding: 6. removing: 5."
        )),
        "--list\n{listed}"
    );

    // Cancelling partition 0 reverts it to 4,5.
    let cancel_file = root.path().join("cancel.json");
    std::fs::write(&cancel_file, plan(topic, &target[..1])).unwrap();
    let cancelled = reassign_tool(
        &live,
        &[
            "--cancel",
            // Clearing throttles writes to every broker, and 6 is down (Kafka's tool would
            // time out there too).
            "--preserve-throttles",
            "--reassignment-json-file",
            cancel_file.to_str().unwrap(),
        ],
        logs,
    );
    assert!(
        cancelled.contains("Successfully cancelled partition reassignment"),
        "{cancelled}"
    );
    wait_for_shape(&live, topic, &[(0, &[4, 5])], logs);

    // kill -9 the active controller and partition 1's leader (5) while 1 waits for 6.
    let leader = active_controller(&controllers);
    controllers
        .iter_mut()
        .find(|n| n.id == leader)
        .unwrap()
        .kill9();
    let shape = describe(&live, topic);
    assert_eq!(shape[&1].0, vec![6, 4, 5], "{shape:?}");
    brokers[index(5)].kill9();
    // 6 returns: it copies partition 1 from its new leader (4) and the move completes.
    brokers[index(6)].start();
    wait_for_shape(&live, topic, &[(1, &[6, 4])], logs);
    let listed = reassign_tool(&live, &["--list"], logs);
    assert!(
        listed.contains("No partition reassignments found."),
        "{listed}"
    );
    // 5 returns to a partition it no longer hosts: its replica of 1 is removed.
    brokers[index(5)].start();
    wait_gone(&brokers[index(5)].partition_dir(topic, 1), logs);
    wait_for_shape(&live, topic, &[(0, &[4, 5]), (1, &[6, 4])], logs);
    finish_load(load, root.path(), logs);
}
