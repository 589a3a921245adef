//! The data plane (Produce, Fetch, ListOffsets, replication) driven by stock clients against
//! a cluster of real processes, three controllers and three brokers started as
//! `stock_clients.rs` starts them: confluent-kafka (librdkafka) and kafka-python through the
//! scripts `tests/python/produce_consume.py` and `tests/python/idempotent_failover.py`, and
//! kcat (`common/kcat.rs`), while brokers are killed with SIGKILL and restarted. The scripts
//! were validated against Apache Kafka 4.4.0 run from its jars.
//!
//! Every wait is on a condition with a deadline, never a fixed pause.
//!
//! `KRAFTD_DATA_PLANE_AGAINST=kafka` runs the same tests against Apache Kafka 4.4.0 from its
//! jars instead (one controller, three brokers; `common::kafka_jars::kafka_cluster`), to
//! check the tests themselves.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::kafka_jars::{kafka_cluster, KafkaNode};
use common::python::run_inline;
use common::script::{partition_state, Script};
use common::{joined, kcat, started_cluster, Node};

/// A cluster process: a kraftd node, or an Apache Kafka node for the reference run.
enum Proc {
    Kraftd(Node),
    Kafka(KafkaNode),
}

impl Proc {
    fn id(&self) -> i32 {
        match self {
            Proc::Kraftd(n) => n.id,
            Proc::Kafka(n) => n.id,
        }
    }

    fn address(&self) -> String {
        match self {
            Proc::Kraftd(n) => n.address(),
            Proc::Kafka(n) => n.address(),
        }
    }

    fn running(&self) -> bool {
        match self {
            Proc::Kraftd(n) => n.child.is_some(),
            Proc::Kafka(n) => n.child.is_some(),
        }
    }

    fn kill9(&mut self) {
        match self {
            Proc::Kraftd(n) => n.kill9(),
            Proc::Kafka(n) => n.kill9(),
        }
    }

    fn start(&mut self) {
        match self {
            Proc::Kraftd(n) => n.start(),
            Proc::Kafka(n) => n.start(),
        }
    }

    fn logs(&self) -> String {
        match self {
            Proc::Kraftd(n) => n.logs(),
            Proc::Kafka(n) => n.logs(),
        }
    }

    /// SIGTERM and wait; a kraftd node must exit cleanly.
    fn stop(&mut self) {
        match self {
            Proc::Kraftd(n) => {
                if let Some(mut child) = n.child.take() {
                    let _ = Command::new("kill").arg(child.id().to_string()).status();
                    let status = child.wait().unwrap();
                    assert!(status.success(), "node {} exited with {status}", n.id);
                }
            }
            Proc::Kafka(n) => n.kill9(),
        }
    }
}

/// Each test runs a six-process cluster and a client at full speed: on a 2-core machine they
/// take turns, so one test's load cannot starve another's deadlines.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn bootstrap(brokers: &[Proc]) -> String {
    joined(brokers.iter().map(Proc::address), ",")
}

/// The running brokers' addresses.
fn live_bootstrap(brokers: &[Proc]) -> String {
    joined(
        brokers.iter().filter(|n| n.running()).map(Proc::address),
        ",",
    )
}

fn all_logs(nodes: &[Proc]) -> String {
    joined(
        nodes
            .iter()
            .map(|n| format!("--- node {} ---\n{}", n.id(), n.logs())),
        "\n",
    )
}

struct Cluster {
    _root: tempfile::TempDir,
    controllers: Vec<Proc>,
    brokers: Vec<Proc>,
    /// Held until the cluster is gone (dropped last).
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl Cluster {
    /// Three controllers and three brokers, every broker unfenced; or, with
    /// `KRAFTD_DATA_PLANE_AGAINST=kafka`, Apache Kafka's one controller and three brokers.
    /// Waits for the other tests' clusters first ([`serial`]).
    fn start() -> Cluster {
        let serial = serial();
        let root = tempfile::tempdir().unwrap();
        let (controllers, brokers) =
            if std::env::var("KRAFTD_DATA_PLANE_AGAINST").is_ok_and(|v| v == "kafka") {
                let (controller, brokers) = kafka_cluster(root.path(), 3, "");
                (
                    vec![Proc::Kafka(controller)],
                    brokers.into_iter().map(Proc::Kafka).collect::<Vec<_>>(),
                )
            } else {
                let (controllers, brokers) = started_cluster(root.path(), 3, 3);
                (
                    controllers.into_iter().map(Proc::Kraftd).collect(),
                    brokers.into_iter().map(Proc::Kraftd).collect(),
                )
            };
        common::python::wait_until_brokers_listed(&bootstrap(&brokers), brokers.len(), || {
            all_logs(&brokers)
        });
        Cluster {
            _root: root,
            controllers,
            brokers,
            _serial: serial,
        }
    }

    fn dir(&self) -> &Path {
        self._root.path()
    }

    fn bootstrap(&self) -> String {
        bootstrap(&self.brokers)
    }

    fn broker(&mut self, id: i32) -> &mut Proc {
        self.brokers.iter_mut().find(|n| n.id() == id).unwrap()
    }

    fn logs(&self) -> String {
        format!(
            "--- broker logs ---\n{}\n--- controller logs ---\n{}",
            all_logs(&self.brokers),
            all_logs(&self.controllers)
        )
    }

    /// Brokers first, so their controlled shutdown finds a controller.
    fn stop(mut self) {
        for node in self.brokers.iter_mut().chain(self.controllers.iter_mut()) {
            node.stop();
        }
    }
}

/// Waits (up to `secs`) until `check` holds for the partition's state; that state.
fn wait_partition(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
    secs: u64,
    what: &str,
    check: impl Fn(i32, &[i32]) -> bool,
) -> (i32, Vec<i32>) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (leader, isr) = partition_state(&live_bootstrap(&cluster.brokers), topic, partition);
        if check(leader, &isr) {
            return (leader, isr);
        }
        assert!(
            Instant::now() < deadline,
            "{topic}/{partition}: not {what} after {secs} s (leader {leader}, isr {isr:?})\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits (up to `secs`) until the partition has a leader and all three replicas in sync;
/// that state.
fn wait_all_in_sync(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
    secs: u64,
    what: &str,
) -> (i32, Vec<i32>) {
    wait_partition(cluster, topic, partition, secs, what, |l, isr| {
        l >= 0 && isr.len() == 3
    })
}

/// `--bootstrap servers --topic topic` followed by `more`: a script's arguments.
fn topic_args<'a>(servers: &'a str, topic: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--bootstrap", servers, "--topic", topic];
    args.extend_from_slice(more);
    args
}

/// Runs a script to completion (up to `secs`); its JSON summary, asserting success.
fn run_script(cluster: &Cluster, name: &str, args: &[&str], secs: u64) -> String {
    Script::spawn(cluster.dir(), name, args).finish(secs, || cluster.logs())
}

/// kill -9 broker `id`, then waits until the live brokers' Metadata no longer names it
/// leader of `topic`/`partition`.
fn kill_broker(cluster: &mut Cluster, id: i32, topic: &str, partition: i32) {
    cluster.broker(id).kill9();
    wait_partition(
        cluster,
        topic,
        partition,
        60,
        "led by a live broker",
        |l, _| l >= 0 && l != id,
    );
}

/// Restarts broker `id` and waits until it is back in the ISR of `topic`'s partitions.
fn restart_broker(cluster: &mut Cluster, id: i32, topic: &str, partitions: i32) {
    cluster.broker(id).start();
    for p in 0..partitions {
        wait_partition(
            cluster,
            topic,
            p,
            120,
            "with the restarted broker in the ISR",
            |l, isr| l >= 0 && isr.contains(&id),
        );
    }
}

#[test]
fn acks_all_produce_survives_two_broker_kills_and_every_acknowledged_record_is_read() {
    let mut cluster = Cluster::start();
    let topic = "acks-all";
    let servers = cluster.bootstrap();
    // Not idempotent: a retry after a kill may legitimately write a record twice (Kafka
    // 4.4 did: 10 duplicates in 100,000), but every acknowledged record must be read at
    // exactly its acknowledged offset.
    let mut script = Script::spawn(
        cluster.dir(),
        "produce_consume.py",
        &topic_args(
            &servers,
            topic,
            &[
                "--client",
                "confluent",
                "--acks",
                "all",
                "--count",
                "100000",
                "--partitions",
                "3",
                "--replication-factor",
                "3",
                "--min-insync-replicas",
                "2",
                "--idempotence",
                "false",
                "--allow-duplicates",
                "--rate",
                "4000",
            ],
        ),
    );
    script.wait_line(120, "waiting for the topic", |l| l == "topic ready");
    let ids: Vec<i32> = cluster.brokers.iter().map(Proc::id).collect();
    for (round, victim) in [ids[0], ids[1]].into_iter().enumerate() {
        let base = 20_000 + 40_000 * round as u64;
        script.wait_acked(base, 120);
        kill_broker(&mut cluster, victim, topic, 0);
        // Production goes on with a broker down (two replicas left, min.insync.replicas=2).
        script.wait_acked(base + 10_000, 120);
        restart_broker(&mut cluster, victim, topic, 3);
    }
    let summary = script.finish(600, || cluster.logs());
    eprintln!("{summary}");
    cluster.stop();
}

#[test]
fn kafka_python_idempotent_and_confluent_acks_1_and_0_round_trip() {
    let cluster = Cluster::start();
    let servers = cluster.bootstrap();
    for (client, acks, topic) in [
        ("kafka-python", "all", "kp-all"),
        ("kafka-python", "1", "kp-1"),
        ("confluent", "1", "cf-1"),
        ("confluent", "0", "cf-0"),
    ] {
        let summary = run_script(
            &cluster,
            "produce_consume.py",
            &topic_args(
                &servers,
                topic,
                &[
                    "--client",
                    client,
                    "--acks",
                    acks,
                    "--count",
                    "20000",
                    "--partitions",
                    "3",
                    "--replication-factor",
                    "3",
                ],
            ),
            300,
        );
        if client == "kafka-python" && acks == "all" {
            assert!(
                summary.contains("\"enable_idempotence\": true"),
                "{summary}"
            );
        }
        eprintln!("{summary}");
    }
    cluster.stop();
}

#[test]
fn kcat_produces_and_consumes() {
    let cluster = Cluster::start();
    let servers = cluster.bootstrap();
    let kcat = kcat::kcat();
    let version = Command::new(&kcat).arg("-V").output().unwrap();
    assert!(version.status.success());
    create_topic(&cluster, "kcat", 2, 3);
    let first: Vec<(String, String)> = (0..1000)
        .map(|i| (format!("k{i}"), format!("value {i} with spaces")))
        .collect();
    kcat::produce_and_check(&servers, "kcat", 0, &first, 0);
    let second: Vec<(String, String)> = (1000..1500)
        .map(|i| (format!("k{i}"), format!("v{i}")))
        .collect();
    kcat::produce_and_check(&servers, "kcat", 1, &second, 0);
    // More to partition 0: read back from the beginning, all 1,500 in order.
    let out = kcat::produce(&servers, "kcat", 0, &second, &[]);
    assert!(out.status.success(), "{out:?}");
    let read = kcat::consume(&servers, "kcat", 0, &[]);
    let expected: Vec<_> = first.iter().chain(&second).collect();
    assert_eq!(read.len(), expected.len());
    for (i, (got, (k, v))) in read.iter().zip(expected).enumerate() {
        assert_eq!(
            (got.offset, &got.key, &got.value),
            (i as i64, k, v),
            "kcat/0 offset {i}"
        );
    }
    cluster.stop();
}

fn create_topic(cluster: &Cluster, topic: &str, partitions: i32, rf: i32) {
    if let Err(e) = create_topic_at(&cluster.bootstrap(), topic, partitions, rf) {
        panic!("creating {topic}: {e}\n{}", cluster.logs());
    }
}

/// Creates `topic` and waits until each partition's leader answers ListOffsets (Metadata
/// may name a leader a moment before it serves the partition; Kafka 4.4 does).
fn create_topic_at(servers: &str, topic: &str, partitions: i32, rf: i32) -> Result<(), String> {
    let script = r#"
import sys, time
from confluent_kafka import admin, Consumer, TopicPartition
b, t, n, rf = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# The client must outlive the future (a dropped client fails it with _DESTROY).
a = admin.AdminClient({"bootstrap.servers": b})
a.create_topics([admin.NewTopic(t, n, rf)], request_timeout=30)[t].result()
c = Consumer({"bootstrap.servers": b, "group.id": "probe"})
deadline = time.time() + 60
for p in range(n):
    while True:
        try:
            c.get_watermark_offsets(TopicPartition(t, p), timeout=5, cached=False)
            break
        except Exception:
            assert time.time() < deadline, f"{t}/{p} not led"
            time.sleep(0.2)
"#;
    let out = run_inline(
        script,
        &[servers, topic, &partitions.to_string(), &rf.to_string()],
    );
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn idempotent_producer_survives_two_leader_kills_without_duplicates_or_loss() {
    let mut cluster = Cluster::start();
    let topic = "idempotent";
    let servers = cluster.bootstrap();
    let stop_file = cluster.dir().join("stop-idempotent");
    let stop_arg = stop_file.to_str().unwrap().to_string();
    let mut script = Script::spawn(
        cluster.dir(),
        "idempotent_failover.py",
        &topic_args(
            &servers,
            topic,
            &[
                "--partitions",
                "1",
                "--replication-factor",
                "3",
                "--min-insync-replicas",
                "2",
                "--stop-file",
                &stop_arg,
                "--progress-every",
                "1000",
            ],
        ),
    );
    script.wait_line(120, "waiting for the producer to start", |l| l == "started");
    for _ in 0..2 {
        let before = script.acked_so_far();
        script.wait_acked(before + 5_000, 120);
        let (leader, _) = wait_all_in_sync(&cluster, topic, 0, 60, "led");
        kill_broker(&mut cluster, leader, topic, 0);
        // The producer moves on to the new leader.
        let after = script.acked_so_far();
        script.wait_acked(after + 5_000, 120);
        restart_broker(&mut cluster, leader, topic, 1);
    }
    std::fs::write(&stop_file, "").unwrap();
    let summary = script.finish(300, || cluster.logs());
    eprintln!("{summary}");
    cluster.stop();
}

#[test]
fn two_of_three_replicas_down_is_not_enough_replicas_and_nothing_acknowledged_is_lost() {
    let mut cluster = Cluster::start();
    let topic = "min-isr";
    let servers = cluster.bootstrap();
    let dir = cluster.dir().to_path_buf();
    let before = dir.join("acked-before.json");
    let during = dir.join("acked-during.json");
    run_script(
        &cluster,
        "idempotent_failover.py",
        &topic_args(
            &servers,
            topic,
            &[
                "--replication-factor",
                "3",
                "--min-insync-replicas",
                "2",
                "--max-records",
                "5000",
                "--acked-file",
                before.to_str().unwrap(),
            ],
        ),
        300,
    );
    let (leader, _) = wait_all_in_sync(&cluster, topic, 0, 60, "fully replicated");
    let others: Vec<i32> = cluster
        .brokers
        .iter()
        .map(Proc::id)
        .filter(|&id| id != leader)
        .collect();
    for &id in &others {
        cluster.broker(id).kill9();
    }
    let live = live_bootstrap(&cluster.brokers);
    let summary = run_script(
        &cluster,
        "idempotent_failover.py",
        &topic_args(
            &live,
            topic,
            &[
                "--expect-not-enough-replicas",
                "--count",
                "10",
                "--acked-file",
                during.to_str().unwrap(),
            ],
        ),
        300,
    );
    // Kafka 4.4: REQUEST_TIMED_OUT first (the dead followers are still in the ISR until
    // their sessions expire), then NOT_ENOUGH_REPLICAS.
    assert!(summary.contains("NOT_ENOUGH_REPLICAS"), "{summary}");
    eprintln!("{summary}");
    for &id in &others {
        cluster.broker(id).start();
    }
    wait_all_in_sync(&cluster, topic, 0, 120, "back to three in sync");
    let files = format!("{},{}", before.display(), during.display());
    run_script(
        &cluster,
        "idempotent_failover.py",
        &topic_args(&servers, topic, &["--verify", &files]),
        300,
    );
    // And the partition takes writes again.
    run_script(
        &cluster,
        "idempotent_failover.py",
        &topic_args(&servers, topic, &["--max-records", "1000"]),
        300,
    );
    cluster.stop();
}
