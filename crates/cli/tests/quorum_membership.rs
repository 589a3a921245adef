//! KIP-853 dynamic controller quorums end to end: real `kraftd` controllers and a broker,
//! voter changes made with `kraftd metadata-quorum add-controller / remove-controller` (or
//! auto-join, or Kafka 4.4.0's `kafka-features` for the `kraft.version` upgrade), and a stock
//! client (confluent-kafka's idempotent producer, acks=all, `tests/python/
//! idempotent_failover.py`) producing through the broker the whole time. After each step
//! DescribeQuorum (`kraftd metadata-quorum describe --status`) must show the expected voter
//! set and the producer must get more records acknowledged; at the end it reads the topic
//! back and checks that every acknowledged record is there, none lost or duplicated.
//!
//! - `grow_one_controller_to_three_and_shrink_back_while_producing`: `format --standalone`,
//!   two controllers formatted `--no-initial-controllers` added and then removed.
//! - `a_wiped_controller_rejoins_with_a_new_directory_id`: a voter's metadata directory is
//!   wiped and reformatted; auto-join replaces its old voter key with the new one.
//! - `removing_the_leader_elects_another_and_clients_are_served`: RemoveRaftVoter of the
//!   active controller; it resigns once the change commits and another voter leads.
//! - `a_static_quorum_upgraded_to_dynamic_changes_voters`: `controller.quorum.voters`,
//!   `kraft.version` 0 → 1, then a voter removed and added back.
//!
//! Every wait polls a condition with a deadline.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::kafka_jars::{output_text, run_tool};
use common::python::wait_until_brokers_listed;
use common::script::Script;
use common::{
    addresses, format, formatted_cluster, joined, run, write_dynamic_broker_config,
    write_dynamic_config, Node, BIN,
};

/// How long one step (a voter change showing in DescribeQuorum, more acknowledgements) may
/// take before the test fails.
const STEP: Duration = Duration::from_secs(60);

/// Records the producer must get acknowledged after each step: the cluster served it.
const PROGRESS: u64 = 500;

/// What DescribeQuorum's leader says.
#[derive(Debug, Clone, PartialEq)]
struct QuorumView {
    leader: i32,
    /// `(id, directory id)`, sorted by id.
    voters: Vec<(i32, String)>,
    observers: Vec<i32>,
}

impl QuorumView {
    fn voter_ids(&self) -> Vec<i32> {
        self.voters.iter().map(|(id, _)| *id).collect()
    }

    fn directory_of(&self, id: i32) -> Option<&str> {
        self.voters
            .iter()
            .find(|(v, _)| *v == id)
            .map(|(_, d)| d.as_str())
    }
}

/// `[{"id": 1, "directoryId": "…", "endpoints": […]}, …]` as `(id, directory id)` pairs.
fn replicas(list: &str) -> Vec<(i32, String)> {
    let mut out: Vec<(i32, String)> = list
        .split("{\"id\": ")
        .skip(1)
        .filter_map(|entry| {
            let id = entry
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()?;
            let dir = entry
                .split_once("\"directoryId\": \"")
                .and_then(|(_, rest)| rest.split('"').next())
                .unwrap_or_default();
            Some((id, dir.to_string()))
        })
        .collect();
    out.sort();
    out
}

/// `kraftd metadata-quorum describe --status` through `bootstrap`; the error text if it fails.
fn describe(bootstrap: &str) -> Result<QuorumView, String> {
    let out = Command::new(BIN)
        .args([
            "metadata-quorum",
            "--bootstrap-controller",
            bootstrap,
            "describe",
            "--status",
        ])
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .map(String::from)
    };
    match (
        out.status.success(),
        field("LeaderId:"),
        field("CurrentVoters:"),
        field("CurrentObservers:"),
    ) {
        (true, Some(leader), Some(voters), Some(observers)) => Ok(QuorumView {
            leader: leader.parse().map_err(|_| text.clone())?,
            voters: replicas(&voters),
            observers: replicas(&observers).into_iter().map(|(id, _)| id).collect(),
        }),
        _ => Err(output_text(&out)),
    }
}

/// Polls DescribeQuorum until `want` holds; that view. Panics after [`STEP`] with the last
/// answer and `logs()`.
fn wait_quorum(
    bootstrap: &str,
    what: &str,
    want: impl Fn(&QuorumView) -> bool,
    logs: impl Fn() -> String,
) -> QuorumView {
    let deadline = Instant::now() + STEP;
    loop {
        let seen = describe(bootstrap);
        if let Ok(view) = &seen {
            if want(view) {
                eprintln!("{what}: {view:?}");
                return view.clone();
            }
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not reached in {STEP:?}; last DescribeQuorum: {seen:?}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// [`wait_quorum`] until the voters are exactly `ids` and one of them leads.
fn wait_voters(bootstrap: &str, ids: &[i32], logs: impl Fn() -> String) -> QuorumView {
    wait_quorum(
        bootstrap,
        &format!("voters {ids:?}"),
        |q| q.voter_ids() == ids && ids.contains(&q.leader),
        logs,
    )
}

/// Creates `topic` through the broker at `broker` (CreateTopics forwarded to the active
/// controller, a write it must commit), retrying within [`STEP`]: the controller serves
/// writes after a voter change. Panics with the last error and `logs()`.
fn create_topic(broker: &str, topic: &str, logs: impl Fn() -> String) {
    let script = r#"
import sys
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
try:
    admin.create_topics([NewTopic(sys.argv[2], 1, 1)], request_timeout=5)[sys.argv[2]].result()
    print("created")
except KafkaException as e:
    print("exists" if e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS else e.args[0])
"#;
    let deadline = Instant::now() + STEP;
    loop {
        let out = common::python::run_inline(script, &[broker, topic]);
        let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if said == "created" || said == "exists" {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "CreateTopics {topic}: {said}\n{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The `directory.id` in a node's metadata log directory's `meta.properties`.
fn directory_id(node: &Node) -> String {
    let path = node.dir.join("data").join("meta.properties");
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("directory.id="))
        .unwrap_or_else(|| panic!("no directory.id in {}", path.display()))
        .to_string()
}

/// `kraftd metadata-quorum --bootstrap-controller bootstrap args...`, retried for up to
/// 30 s while it fails; panics with the output and `logs()` then. A voter change can fail
/// retriably when the active controller resigns around the Raft leader's own VotersRecord
/// (a write of its own in flight at those offsets; kraftd's known race, in the note), as
/// Kafka's admin client would retry. A retry that finds the change already made
/// (DUPLICATE_VOTER / VOTER_NOT_FOUND) is done: the caller checks the voter set after.
fn quorum_tool(bootstrap: &str, args: &[&str], logs: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let out = Command::new(BIN)
            .args(["metadata-quorum", "--bootstrap-controller", bootstrap])
            .args(args)
            .output()
            .unwrap();
        if out.status.success() {
            return;
        }
        let text = output_text(&out);
        if attempt > 1 && (text.contains("DUPLICATE_VOTER") || text.contains("VOTER_NOT_FOUND")) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "metadata-quorum {args:?}: {text}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `add-controller` of `node` (its own properties say who it is).
fn add_controller(bootstrap: &str, node: &Node, logs: impl Fn() -> String) {
    let config = node.config_path();
    let config = config.to_str().unwrap();
    quorum_tool(
        bootstrap,
        &["--command-config", config, "add-controller"],
        logs,
    );
}

/// `remove-controller` of voter `id` with directory id `directory`.
fn remove_controller(bootstrap: &str, id: i32, directory: &str, logs: impl Fn() -> String) {
    let id = id.to_string();
    quorum_tool(
        bootstrap,
        &[
            "remove-controller",
            "--controller-id",
            &id,
            "--controller-directory-id",
            directory,
        ],
        logs,
    );
}

/// How the controllers of a dynamic quorum are formatted.
enum Initial {
    /// Controller 1 `--standalone`, the others `--no-initial-controllers`.
    Standalone,
    /// All of them `--initial-controllers`, each with a directory id made up here.
    All,
}

/// Controllers 1..=n of a dynamic quorum (each knowing the others only through
/// `controller.quorum.bootstrap.servers`) and broker n+1, formatted, not started.
struct Cluster {
    root: tempfile::TempDir,
    controllers: Vec<Node>,
    broker: Node,
}

impl Cluster {
    fn dynamic(count: i32, initial: Initial) -> Cluster {
        let root = tempfile::tempdir().unwrap();
        let cluster_id = run(&["random-uuid"]).trim().to_string();
        let controllers: Vec<Node> = (1..=count).map(|id| Node::new(root.path(), id)).collect();
        let bootstrap = addresses(&controllers);
        let initial = match initial {
            Initial::Standalone => None,
            Initial::All => Some(joined(
                controllers.iter().map(|n| {
                    let dir = run(&["random-uuid"]);
                    format!("{}@{}:{}", n.id, n.address(), dir.trim())
                }),
                ",",
            )),
        };
        for node in &controllers {
            std::fs::create_dir_all(&node.dir).unwrap();
            write_dynamic_config(node, &bootstrap);
            let flags: Vec<&str> = match &initial {
                Some(list) => vec!["--initial-controllers", list],
                None if node.id == 1 => vec!["--standalone"],
                None => vec!["--no-initial-controllers"],
            };
            format_with(node, &cluster_id, &flags);
        }
        let broker = Node::broker(root.path(), count + 1);
        std::fs::create_dir_all(&broker.dir).unwrap();
        write_dynamic_broker_config(&broker, &bootstrap);
        format(&broker, &cluster_id);
        Cluster {
            root,
            controllers,
            broker,
        }
    }

    fn controller(&mut self, id: i32) -> &mut Node {
        self.controllers.iter_mut().find(|n| n.id == id).unwrap()
    }

    /// The controllers' addresses, for `--bootstrap-controller`.
    fn controller_bootstrap(&self) -> String {
        addresses(&self.controllers)
    }

    fn logs(&self) -> String {
        let mut all: Vec<String> = self
            .controllers
            .iter()
            .map(|n| format!("=== controller {}\n{}", n.id, n.logs()))
            .collect();
        all.push(format!(
            "=== broker {}\n{}",
            self.broker.id,
            self.broker.logs()
        ));
        all.join("\n")
    }

    /// Starts the broker and waits until it is registered and unfenced.
    fn start_broker(&mut self) {
        self.broker.start();
        let controllers: Vec<&Node> = self.controllers.iter().collect();
        let broker = &self.broker;
        wait_until_brokers_listed(&broker.address(), 1, || {
            joined(
                controllers
                    .iter()
                    .map(|n| n.logs())
                    .chain(std::iter::once(broker.logs())),
                "\n",
            )
        });
    }
}

/// `kraftd format` of `node` with extra flags (`--standalone`, ...).
fn format_with(node: &Node, cluster_id: &str, flags: &[&str]) {
    let config = node.config_path();
    let mut args = vec![
        "format",
        "--config",
        config.to_str().unwrap(),
        "--cluster-id",
        cluster_id,
    ];
    args.extend_from_slice(flags);
    run(&args);
}

/// The idempotent acks=all producer on `topic` through `bootstrap`, running until the file
/// [`Producer::stop`] writes exists.
struct Producer {
    script: Script,
    stop_file: PathBuf,
}

impl Producer {
    fn start(dir: &Path, bootstrap: &str, topic: &str) -> Producer {
        let stop_file = dir.join(format!("stop-{topic}"));
        let mut script = Script::spawn(
            dir,
            "idempotent_failover.py",
            &[
                "--bootstrap",
                bootstrap,
                "--topic",
                topic,
                "--replication-factor",
                "1",
                "--min-insync-replicas",
                "1",
                "--in-flight",
                "200",
                "--progress-every",
                "100",
                "--stop-file",
                stop_file.to_str().unwrap(),
            ],
        );
        script.wait_line(STEP.as_secs(), "waiting for the producer to start", |l| {
            l == "started"
        });
        let mut producer = Producer { script, stop_file };
        producer.progress();
        producer
    }

    /// Waits until [`PROGRESS`] more records are acknowledged.
    fn progress(&mut self) {
        let target = self.script.acked_so_far() + PROGRESS;
        self.script.wait_acked(target, STEP.as_secs());
    }

    /// Stops producing, reads the topic back and checks it; the script's JSON summary.
    fn stop(self, logs: impl Fn() -> String) -> String {
        std::fs::write(&self.stop_file, "").unwrap();
        self.script.finish(STEP.as_secs() * 2, logs)
    }
}

#[test]
fn grow_one_controller_to_three_and_shrink_back_while_producing() {
    let mut cluster = Cluster::dynamic(3, Initial::Standalone);
    let bootstrap = cluster.controller_bootstrap();
    cluster.controller(1).start();
    cluster.start_broker();
    wait_voters(&bootstrap, &[1], || cluster.logs());
    let broker = cluster.broker.address();
    let mut producer = Producer::start(cluster.root.path(), &broker, "grow");

    // 2 and 3 start as observers (formatted without voters), then join one at a time.
    cluster.controller(2).start();
    cluster.controller(3).start();
    for id in [2, 3] {
        let node = cluster.controllers.iter().find(|n| n.id == id).unwrap();
        add_controller(&bootstrap, node, || cluster.logs());
        let ids: Vec<i32> = (1..=id).collect();
        let view = wait_voters(&bootstrap, &ids, || cluster.logs());
        assert_eq!(view.directory_of(id), Some(directory_id(node).as_str()));
        create_topic(&broker, &format!("after-adding-{id}"), || cluster.logs());
        producer.progress();
    }

    for (id, left) in [(3, vec![1, 2]), (2, vec![1])] {
        let node = cluster.controllers.iter().find(|n| n.id == id).unwrap();
        remove_controller(&bootstrap, id, &directory_id(node), || cluster.logs());
        wait_voters(&bootstrap, &left, || cluster.logs());
        create_topic(&broker, &format!("after-removing-{id}"), || cluster.logs());
        producer.progress();
    }
    // 2 and 3 are observers now: without them controller 1 alone is the quorum.
    cluster.controller(2).kill9();
    cluster.controller(3).kill9();
    wait_voters(&bootstrap, &[1], || cluster.logs());
    create_topic(&broker, "alone-again", || cluster.logs());
    producer.progress();
    let summary = producer.stop(|| cluster.logs());
    eprintln!("{summary}");
}

#[test]
fn a_wiped_controller_rejoins_with_a_new_directory_id() {
    let mut cluster = Cluster::dynamic(3, Initial::All);
    for node in &cluster.controllers {
        node.add_config(&["controller.quorum.auto.join.enable=true"]);
    }
    let bootstrap = cluster.controller_bootstrap();
    for node in &mut cluster.controllers {
        node.start();
    }
    cluster.start_broker();
    let before = wait_voters(&bootstrap, &[1, 2, 3], || cluster.logs());
    let mut producer = Producer::start(cluster.root.path(), &cluster.broker.address(), "wipe");

    // A follower's disk is lost: kill it, wipe its data, format it to join (a new directory
    // id), start it again. It auto-joins: its old key is removed, its new one added.
    let wiped = if before.leader == 3 { 2 } else { 3 };
    let cluster_id = cluster_id_of(&cluster.controllers[0]);
    let node = cluster.controller(wiped);
    node.kill9();
    std::fs::remove_dir_all(node.dir.join("data")).unwrap();
    format_with(node, &cluster_id, &["--no-initial-controllers"]);
    let new_dir = directory_id(node);
    assert_ne!(before.directory_of(wiped), Some(new_dir.as_str()));
    node.start();
    producer.progress();
    let after = wait_quorum(
        &bootstrap,
        &format!("controller {wiped} back as a voter with directory id {new_dir}"),
        |q| q.voter_ids() == [1, 2, 3] && q.directory_of(wiped) == Some(new_dir.as_str()),
        || cluster.logs(),
    );
    for id in [1, 2, 3].into_iter().filter(|id| *id != wiped) {
        assert_eq!(after.directory_of(id), before.directory_of(id));
    }
    create_topic(&cluster.broker.address(), "after-rejoin", || cluster.logs());
    producer.progress();
    let summary = producer.stop(|| cluster.logs());
    eprintln!("{summary}");
}

/// The `cluster.id` in a node's `meta.properties`.
fn cluster_id_of(node: &Node) -> String {
    let text = std::fs::read_to_string(node.dir.join("data").join("meta.properties")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("cluster.id="))
        .unwrap()
        .to_string()
}

#[test]
fn removing_the_leader_elects_another_and_clients_are_served() {
    let mut cluster = Cluster::dynamic(3, Initial::All);
    let bootstrap = cluster.controller_bootstrap();
    for node in &mut cluster.controllers {
        node.start();
    }
    cluster.start_broker();
    let before = wait_voters(&bootstrap, &[1, 2, 3], || cluster.logs());
    let mut producer = Producer::start(cluster.root.path(), &cluster.broker.address(), "lead");

    let leader = before.leader;
    let rest: Vec<i32> = [1, 2, 3].into_iter().filter(|id| *id != leader).collect();
    let dir = before.directory_of(leader).unwrap().to_string();
    remove_controller(&bootstrap, leader, &dir, || cluster.logs());
    // The old leader resigns once the change commits; one of the others leads, and the old
    // one stays on as an observer.
    let after = wait_quorum(
        &bootstrap,
        &format!("voters {rest:?}, led by one of them, {leader} an observer"),
        |q| q.voter_ids() == rest && rest.contains(&q.leader) && q.observers.contains(&leader),
        || cluster.logs(),
    );
    assert!(after.leader != leader);
    producer.progress();
    // A new topic (CreateTopics through the broker to the new active controller) and
    // records on it.
    let created = Script::spawn(
        cluster.root.path(),
        "idempotent_failover.py",
        &[
            "--bootstrap",
            &cluster.broker.address(),
            "--topic",
            "after-removal",
            "--replication-factor",
            "1",
            "--min-insync-replicas",
            "1",
            "--max-records",
            "1000",
        ],
    );
    eprintln!("{}", created.finish(STEP.as_secs(), || cluster.logs()));
    let summary = producer.stop(|| cluster.logs());
    eprintln!("{summary}");
}

#[test]
fn a_static_quorum_upgraded_to_dynamic_changes_voters() {
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 3, 1);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let logs = || {
        joined(
            controllers.iter().chain(brokers.iter()).map(|n| n.logs()),
            "\n",
        )
    };
    let broker = brokers[0].address();
    let bootstrap = addresses(&controllers);
    wait_until_brokers_listed(&broker, 1, logs);
    let mut producer = Producer::start(root.path(), &broker, "upgrade");

    // kraft.version 0 → 1; the leader refuses until it has every voter's directory id.
    let deadline = Instant::now() + STEP;
    loop {
        let out = run_tool(
            "org.apache.kafka.tools.FeatureCommand",
            &[
                "--bootstrap-server",
                &broker,
                "upgrade",
                "--feature",
                "kraft.version=1",
            ],
        );
        if out.status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "kafka-features upgrade kept failing:\n{}\n{}",
            output_text(&out),
            logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let upgraded = wait_quorum(
        &bootstrap,
        "three voters with directory ids",
        |q| {
            q.voter_ids() == [1, 2, 3]
                && q.voters.iter().all(|(_, d)| d != "AAAAAAAAAAAAAAAAAAAAAA")
        },
        logs,
    );
    create_topic(&broker, "after-upgrade", logs);
    producer.progress();

    // A follower out and back in, by its directory id, through the now dynamic voter set.
    let follower = if upgraded.leader == 3 { 2 } else { 3 };
    let node = &controllers[follower as usize - 1];
    remove_controller(&bootstrap, follower, &directory_id(node), logs);
    let rest: Vec<i32> = [1, 2, 3].into_iter().filter(|id| *id != follower).collect();
    wait_voters(&bootstrap, &rest, logs);
    create_topic(&broker, "after-removal", logs);
    producer.progress();
    add_controller(&bootstrap, node, logs);
    wait_voters(&bootstrap, &[1, 2, 3], logs);
    create_topic(&broker, "after-adding", logs);
    producer.progress();
    let summary = producer.stop(logs);
    eprintln!("{summary}");
}
