//! Share groups (KIP-932) with Kafka 4.4.0's own `KafkaShareConsumer`:
//! `tests/java/ShareConsumers.java` (compiled here with `javac` against Kafka's jars) sets the
//! group's dynamic configs through the Admin client, produces numbered records and runs
//! several share consumers in one group with explicit acknowledgement, printing every
//! decision (accept, release, reject) with the record's partition, offset, value and delivery
//! count. The tests read those lines back and check what share groups promise:
//!
//! - every record settles once: accepted exactly once across the group, or rejected once and
//!   never delivered again;
//! - a released record comes back, with a higher delivery count;
//! - records a member takes and never acknowledges come back to another member once their
//!   acquisition lock (`share.record.lock.duration.ms`) expires;
//! - a record released on every delivery is archived at `share.delivery.count.limit`: it is
//!   never delivered past the limit;
//! - Kafka's own serde (`kafka-dump-log --share-group-state-decoder` / `--offsets-decoder`)
//!   reads the `__share_group_state` and `__consumer_offsets` records kraftd wrote.
//!
//! - with `share.version` 2 and a dead-letter queue topic on the group (KIP-1191), the DLQ
//!   topic holds exactly the rejected records and those past the delivery count limit, with
//!   Kafka's headers and the source key and value (`copy.record`); a `__` DLQ name is refused
//!   and a topic not enabled for DLQ writes gets nothing.
//!
//! Three controllers and three brokers, formatted with `share.version` 2 as Kafka 4.4.0
//! formats by default; `KRAFTD_SHARE_AGAINST=kafka` runs the same tests
//! against Apache Kafka 4.4.0 (one controller, three brokers) to check the tests themselves.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use common::kafka_jars::{dump_log_segment_with, kafka_cluster, output_text, run_tool, KafkaNode};
use common::share::{compile, Decision, Driver, Run};
use common::{all_logs, formatted_cluster_with_args, joined, Node};

/// Settings every node of both systems runs with: acquisition locks short enough for a
/// test, and DLQ topics created on their first write.
const BROKER_SETTINGS: &str = "group.share.min.record.lock.duration.ms=1000\n\
                               group.share.record.lock.duration.ms=3000\n\
                               errors.deadletterqueue.auto.create.topics.enable=true\n";

/// One cluster at a time: each runs six processes on two cores.
static SERIAL: Mutex<()> = Mutex::new(());

enum Cluster {
    Kraftd {
        controllers: Vec<Node>,
        brokers: Vec<Node>,
        /// The brokers' `metrics.port`s.
        metrics_ports: Vec<u16>,
    },
    Kafka {
        _controller: KafkaNode,
        brokers: Vec<KafkaNode>,
    },
}

impl Cluster {
    fn start(root: &Path) -> Cluster {
        if std::env::var("KRAFTD_SHARE_AGAINST").is_ok_and(|v| v == "kafka") {
            let (controller, brokers) = kafka_cluster(root, 3, BROKER_SETTINGS);
            return Cluster::Kafka {
                _controller: controller,
                brokers,
            };
        }
        let (_id, mut controllers, mut brokers) =
            formatted_cluster_with_args(root, 3, 3, &["--feature", "share.version=2"]);
        // The controllers too: they validate a group's configs against their own
        // group.share.* bounds, as Kafka's do.
        for node in controllers.iter().chain(&brokers) {
            node.add_config(&BROKER_SETTINGS.lines().collect::<Vec<_>>());
        }
        let metrics_ports: Vec<u16> = brokers.iter().map(|_| common::free_port()).collect();
        for (node, port) in brokers.iter().zip(&metrics_ports) {
            node.add_config(&[&format!("metrics.port={port}"), "console.enable=true"]);
        }
        for node in controllers.iter_mut().chain(brokers.iter_mut()) {
            node.start();
        }
        let cluster = Cluster::Kraftd {
            controllers,
            brokers,
            metrics_ports,
        };
        common::python::wait_until_brokers_listed(&cluster.bootstrap(), 3, || cluster.logs());
        cluster
    }

    fn bootstrap(&self) -> String {
        match self {
            Cluster::Kraftd { brokers, .. } => joined(brokers.iter().map(Node::address), ","),
            Cluster::Kafka { brokers, .. } => joined(brokers.iter().map(KafkaNode::address), ","),
        }
    }

    /// The sum over kraftd's brokers of the `/metrics` series of `name` whose labels hold
    /// `label` (`group="g"`); None against Kafka (its metrics are JMX).
    fn metric_sum(&self, name: &str, label: &str) -> Option<f64> {
        let Cluster::Kraftd { metrics_ports, .. } = self else {
            return None;
        };
        let prefix = format!("{name}{{");
        let mut sum = 0.0;
        for port in metrics_ports {
            for line in common::scrape_metrics(*port).lines() {
                let Some(rest) = line.strip_prefix(&prefix) else {
                    continue;
                };
                let Some((labels, value)) = rest.split_once("} ") else {
                    continue;
                };
                if labels.split(',').any(|l| l == label) {
                    sum += value.trim().parse::<f64>().unwrap_or(f64::NAN);
                }
            }
        }
        Some(sum)
    }

    fn logs(&self) -> String {
        match self {
            Cluster::Kraftd {
                controllers,
                brokers,
                ..
            } => format!(
                "--- broker logs ---\n{}\n--- controller logs ---\n{}",
                all_logs(brokers),
                all_logs(controllers)
            ),
            Cluster::Kafka { brokers, .. } => joined(brokers.iter().map(KafkaNode::logs), "\n"),
        }
    }

    /// SIGKILL of the `index`th broker.
    fn kill9_broker(&mut self, index: usize) {
        match self {
            Cluster::Kraftd { brokers, .. } => brokers[index].kill9(),
            Cluster::Kafka { brokers, .. } => brokers[index].kill9(),
        }
    }

    /// Starts the `index`th broker again and waits until it serves.
    fn restart_broker(&mut self, index: usize) {
        match self {
            Cluster::Kraftd { brokers, .. } => brokers[index].start(),
            Cluster::Kafka { brokers, .. } => {
                brokers[index].start();
                brokers[index].wait_started(std::time::Duration::from_secs(120));
            }
        }
        common::python::wait_until_brokers_listed(&self.bootstrap(), 3, || self.logs());
    }

    /// Every non-empty segment of the internal topic `topic` on kraftd's brokers decoded by
    /// Kafka 4.4.0's `kafka-dump-log` with `decoder`: the decoded text. Panics where Kafka's
    /// serde cannot read kraftd's bytes. Nothing against Kafka (its bytes are its own).
    fn decoded_segments(&self, topic: &str, decoder: &str) -> String {
        let Cluster::Kraftd { brokers, .. } = self else {
            return String::new();
        };
        let mut all = String::new();
        for broker in brokers {
            for partition in 0..50 {
                let dir = broker.partition_dir(topic, partition);
                if !dir.exists() {
                    continue;
                }
                for segment in common::segment_files(&dir) {
                    if std::fs::metadata(&segment).map_or(0, |m| m.len()) == 0 {
                        continue;
                    }
                    let (ok, stdout, stderr) = dump_log_segment_with(&segment, &[decoder]);
                    let bad = !ok
                        || stdout.contains("Exception")
                        || stdout.contains("Could not")
                        || stderr.contains("Exception");
                    assert!(
                        !bad,
                        "kafka-dump-log {decoder} {}:\n{stdout}\n{stderr}",
                        segment.display()
                    );
                    all.push_str(&stdout);
                }
            }
        }
        all
    }

    fn create_topic(&self, topic: &str, partitions: i32) {
        let out = run_tool(
            "org.apache.kafka.tools.TopicCommand",
            &[
                "--bootstrap-server",
                &self.bootstrap(),
                "--create",
                "--topic",
                topic,
                "--partitions",
                &partitions.to_string(),
                "--replication-factor",
                "3",
            ],
        );
        assert!(
            out.status.success(),
            "create {topic}: {}",
            output_text(&out)
        );
    }
}

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `ShareConsumers <bootstrap> <args...>` against `cluster` to its end.
fn share_consumers(root: &Path, classes: &Path, cluster: &Cluster, args: &[&str]) -> Run {
    Driver::start(root, classes, &cluster.bootstrap(), args).finish()
}

/// Every value in `0..records` is accepted exactly once or rejected exactly once (and then
/// never accepted), and no consumer reported an error.
fn assert_each_settled_once(run: &Run, cluster: &Cluster, records: u32) {
    assert!(
        run.done,
        "the share consumers did not settle every record\n{}",
        run.context(&cluster.logs())
    );
    assert!(
        !run.stdout.contains("ERROR") && !run.stdout.contains("-failed"),
        "a share consumer failed\n{}",
        run.context(&cluster.logs())
    );
    let accepted = run.values("accept");
    let rejected = run.values("reject");
    for value in 0..records {
        let a = accepted.get(&value).copied().unwrap_or(0);
        let r = rejected.get(&value).copied().unwrap_or(0);
        assert!(
            (a, r) == (1, 0) || (a, r) == (0, 1),
            "value {value} accepted {a} and rejected {r} times\n{}",
            run.context(&cluster.logs())
        );
    }
}

#[test]
fn share_consumers_settle_every_record_once_and_redeliver_what_is_released_or_left_unacknowledged()
{
    let _serial = serial();
    let root = tempfile::tempdir().unwrap();
    let classes = compile(root.path());
    let cluster = Cluster::start(root.path());

    // Four members on one partition: released records come back with a higher delivery
    // count, rejected ones never do, and the members share the partition.
    cluster.create_topic("one", 1);
    let run = share_consumers(
        root.path(),
        &classes,
        &cluster,
        &[
            "one",
            "g-one",
            "300",
            "4",
            "--release-mod",
            "7",
            "--reject-mod",
            "11",
            "--max-poll-records",
            "10",
            "--group-config",
            "share.auto.offset.reset=earliest",
        ],
    );
    assert_each_settled_once(&run, &cluster, 300);
    for released in run.of("release") {
        assert_eq!(
            released.value % 7,
            0,
            "{released:?}\n{}",
            run.context(&cluster.logs())
        );
        let again = run
            .of("accept")
            .find(|d| d.value == released.value)
            .unwrap_or_else(|| {
                panic!(
                    "{released:?} never redelivered\n{}",
                    run.context(&cluster.logs())
                )
            });
        assert!(
            again.delivery_count > released.delivery_count && again.offset == released.offset,
            "released {released:?}, then {again:?}\n{}",
            run.context(&cluster.logs())
        );
    }
    let rejected: BTreeSet<u32> = run.values("reject").into_keys().collect();
    let expected_rejected: BTreeSet<u32> = (0..300).filter(|v| v % 11 == 0 && v % 7 != 0).collect();
    assert_eq!(
        rejected,
        expected_rejected,
        "{}",
        run.context(&cluster.logs())
    );
    assert_eq!(
        run.values("release").len(),
        (0..300).filter(|v| v % 7 == 0).count()
    );

    // Four members on six partitions: every record settles once.
    cluster.create_topic("many", 6);
    let run = share_consumers(
        root.path(),
        &classes,
        &cluster,
        &[
            "many",
            "g-many",
            "600",
            "4",
            "--max-poll-records",
            "50",
            "--group-config",
            "share.auto.offset.reset=earliest",
        ],
    );
    assert_each_settled_once(&run, &cluster, 600);
    let partitions: BTreeSet<i32> = run.of("accept").map(|d| d.partition).collect();
    assert_eq!(partitions.len(), 6, "{}", run.context(&cluster.logs()));

    // Member 0 takes records and never acknowledges them: once their lock expires they go to
    // member 1 with delivery count 2.
    cluster.create_topic("stall", 1);
    let run = share_consumers(
        root.path(),
        &classes,
        &cluster,
        &[
            "stall",
            "g-stall",
            "100",
            "2",
            "--stall",
            "--group-config",
            "share.auto.offset.reset=earliest",
            "--group-config",
            "share.record.lock.duration.ms=2000",
        ],
    );
    assert_each_settled_once(&run, &cluster, 100);
    let stalled: Vec<&Decision> = run.of("stall").collect();
    assert!(
        !stalled.is_empty(),
        "member 0 took nothing\n{}",
        run.context(&cluster.logs())
    );
    for held in stalled {
        let again = run.of("accept").find(|d| d.value == held.value).unwrap();
        assert!(
            again.member == 1 && again.delivery_count >= 2,
            "held by member 0 {held:?}, then {again:?}\n{}",
            run.context(&cluster.logs())
        );
    }

    // share.delivery.count.limit=2: a record released on every delivery is delivered
    // twice, then archived; nothing arrives while the members linger.
    cluster.create_topic("limit", 2);
    let run = share_consumers(
        root.path(),
        &classes,
        &cluster,
        &[
            "limit",
            "g-limit",
            "50",
            "2",
            "--always-release",
            "5",
            "--settle-after",
            "2",
            "--linger-s",
            "4",
            "--group-config",
            "share.auto.offset.reset=earliest",
            "--group-config",
            "share.delivery.count.limit=2",
        ],
    );
    assert!(run.done, "{}", run.context(&cluster.logs()));
    let released = run.values("release");
    for value in (0..50).filter(|v| v % 5 == 0) {
        assert_eq!(
            released.get(&value),
            Some(&2),
            "value {value} released {:?} times (limit 2)\n{}",
            released.get(&value),
            run.context(&cluster.logs())
        );
    }
    assert!(
        run.of("release").all(|d| d.delivery_count <= 2),
        "delivered past the limit\n{}",
        run.context(&cluster.logs())
    );
    for value in (0..50).filter(|v| v % 5 != 0) {
        assert_eq!(
            run.values("accept").get(&value),
            Some(&1),
            "{}",
            run.context(&cluster.logs())
        );
    }

    // Kafka's own serde reads what kraftd wrote: the share coordinator's ShareSnapshot and
    // ShareUpdate records, and the group coordinator's ShareGroup* records.
    if matches!(cluster, Cluster::Kraftd { .. }) {
        let state = cluster.decoded_segments("__share_group_state", "--share-group-state-decoder");
        for group in ["g-one", "g-many", "g-stall", "g-limit"] {
            assert!(
                state.contains(&format!("\"groupId\":\"{group}\"")),
                "no share state of {group} decoded:\n{state}"
            );
        }
        assert!(state.contains("\"stateBatches\""), "{state}");
        let offsets = cluster.decoded_segments("__consumer_offsets", "--offsets-decoder");
        for group in ["g-one", "g-many", "g-stall", "g-limit"] {
            assert!(
                offsets.contains(&format!("\"groupId\":\"{group}\"")),
                "no records of share group {group} decoded:\n{offsets}"
            );
        }
    }
}

/// Waits until the driver printed `n` confirmed accepts (or fails with its output).
#[test]
fn share_consumers_lose_nothing_and_get_nothing_confirmed_again_across_broker_kills() {
    let _serial = serial();
    let root = tempfile::tempdir().unwrap();
    let classes = compile(root.path());
    let mut cluster = Cluster::start(root.path());

    // Three slow members on three partitions; two brokers (each leading topic partitions,
    // share-state partitions and group-coordinator partitions) killed with SIGKILL and
    // restarted, one after the other, while they consume.
    cluster.create_topic("failover", 3);
    let driver = Driver::start(
        root.path(),
        &classes,
        &cluster.bootstrap(),
        &[
            "failover",
            "g-failover",
            "900",
            "3",
            "--max-poll-records",
            "5",
            "--pace-ms",
            "200",
            "--timeout-s",
            "300",
            "--group-config",
            "share.auto.offset.reset=earliest",
        ],
    );
    for (index, before, after) in [(0, 150, 350), (1, 550, 700)] {
        driver.wait_accepted(before, || cluster.logs());
        cluster.kill9_broker(index);
        driver.wait_accepted(after, || cluster.logs());
        cluster.restart_broker(index);
    }
    // Nothing lost: every value has a confirmed accept. Nothing confirmed comes back: once a
    // value's accept is confirmed, no member is handed that value again.
    driver
        .finish()
        .assert_accepted_once_confirmed(900, || cluster.logs());
}

/// `kafka-share-groups` (Kafka's `ShareGroupCommand`) with `args`; its stdout, or a panic
/// with its output.
fn share_groups_tool(cluster: &Cluster, args: &[&str]) -> String {
    let bootstrap = cluster.bootstrap();
    let mut all = vec!["--bootstrap-server", bootstrap.as_str()];
    all.extend(args);
    let out = run_tool(
        "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
        &all,
    );
    assert!(
        out.status.success(),
        "kafka-share-groups {args:?}: {}\n{}",
        output_text(&out),
        cluster.logs()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The rows of a tool's table whose first column is `group` (each split on whitespace).
fn rows(table: &str, group: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .filter(|f| f.first().is_some_and(|g| g == group))
        .collect()
}

#[test]
fn kafka_share_groups_and_the_console_share_consumer_work_on_a_share_group() {
    let _serial = serial();
    let root = tempfile::tempdir().unwrap();
    let classes = compile(root.path());
    let cluster = Cluster::start(root.path());
    cluster.create_topic("tools", 2);

    // Two members consume 20 records and stay in the group a while: --members and --state
    // see them.
    let driver = Driver::start(
        root.path(),
        &classes,
        &cluster.bootstrap(),
        &[
            "tools",
            "g-tools",
            "20",
            "2",
            "--linger-s",
            "20",
            "--group-config",
            "share.auto.offset.reset=earliest",
        ],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !std::fs::read_to_string(&driver.out_path)
        .unwrap_or_default()
        .contains("LINGER")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the members did not consume the records\n{}\n{}",
            std::fs::read_to_string(&driver.out_path).unwrap_or_default(),
            cluster.logs()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let members = share_groups_tool(&cluster, &["--describe", "--group", "g-tools", "--members"]);
    let member_rows = rows(&members, "g-tools");
    assert_eq!(member_rows.len(), 2, "{members}");
    let clients: BTreeSet<&str> = member_rows.iter().map(|r| r[3].as_str()).collect();
    assert_eq!(clients, BTreeSet::from(["share-0", "share-1"]), "{members}");
    let assigned: BTreeSet<String> = member_rows.iter().map(|r| r[5].clone()).collect();
    assert_eq!(
        assigned,
        BTreeSet::from(["tools:0".to_string(), "tools:1".to_string()]),
        "{members}"
    );
    let state = share_groups_tool(&cluster, &["--describe", "--group", "g-tools", "--state"]);
    let state_row = &rows(&state, "g-tools")[0];
    assert_eq!(
        &state_row[state_row.len() - 2..],
        ["Stable".to_string(), "2".to_string()],
        "{state}"
    );
    let run = driver.finish();
    assert_each_settled_once(&run, &cluster, 20);

    // The group is listed, and it has nothing left to consume.
    let list = share_groups_tool(&cluster, &["--list"]);
    assert!(list.lines().any(|l| l.trim() == "g-tools"), "{list}");
    let offsets = share_groups_tool(&cluster, &["--describe", "--group", "g-tools"]);
    let offset_rows = rows(&offsets, "g-tools");
    assert_eq!(offset_rows.len(), 2, "{offsets}");
    assert!(
        offset_rows.iter().all(|r| r[4] == "0"),
        "lag left: {offsets}"
    );

    // Reset to the earliest offsets (the group is empty now): every record is there to
    // consume again, and Kafka's console share consumer reads five of them.
    let reset = share_groups_tool(
        &cluster,
        &[
            "--reset-offsets",
            "--group",
            "g-tools",
            "--topic",
            "tools",
            "--to-earliest",
            "--execute",
        ],
    );
    let reset_rows = rows(&reset, "g-tools");
    assert_eq!(reset_rows.len(), 2, "{reset}");
    assert!(reset_rows.iter().all(|r| r[3] == "0"), "{reset}");
    let offsets = share_groups_tool(&cluster, &["--describe", "--group", "g-tools"]);
    let lag: u64 = rows(&offsets, "g-tools")
        .iter()
        .map(|r| r[4].parse::<u64>().unwrap())
        .sum();
    assert_eq!(lag, 20, "{offsets}");
    // kraftd's web console shows the share group as the tool does: each partition's start
    // offset and lag (ShareGroupDescribe and DescribeShareGroupOffsets).
    if let Cluster::Kraftd { metrics_ports, .. } = &cluster {
        let page = console_json(metrics_ports[0], "/api/groups/g-tools");
        assert_eq!(page["protocol_type"], "share", "{page}");
        assert_eq!(page["total_lag"], 20, "{page}");
        let console: BTreeSet<(String, String)> = page["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["partition"].to_string(), p["committed"].to_string()))
            .collect();
        let tool: BTreeSet<(String, String)> = rows(&offsets, "g-tools")
            .iter()
            .map(|r| (r[2].clone(), r[3].clone()))
            .collect();
        assert_eq!(console, tool, "console {page} vs tool {offsets}");
    }
    let bootstrap = cluster.bootstrap();
    let console = run_tool(
        "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--topic",
            "tools",
            "--group",
            "g-tools",
            "--max-messages",
            "5",
        ],
    );
    assert!(console.status.success(), "{}", output_text(&console));
    let read: Vec<u32> = String::from_utf8_lossy(&console.stdout)
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(read.len(), 5, "{}", output_text(&console));
    assert!(read.iter().all(|v| *v < 20), "{read:?}");

    // Delete the topic's offsets, then the group.
    let deleted = share_groups_tool(
        &cluster,
        &["--delete-offsets", "--group", "g-tools", "--topic", "tools"],
    );
    assert!(
        deleted
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["tools", "Successful"]),
        "{deleted}"
    );
    let offsets = share_groups_tool(&cluster, &["--describe", "--group", "g-tools"]);
    assert!(offsets.contains("has no offset information"), "{offsets}");
    let deleted = share_groups_tool(&cluster, &["--delete", "--group", "g-tools"]);
    assert!(deleted.contains("was successful"), "{deleted}");
    let list = share_groups_tool(&cluster, &["--list"]);
    assert!(!list.lines().any(|l| l.trim() == "g-tools"), "{list}");
}

/// The `DLQ <partition> <key> <value> <headers>` lines of a run, as (partition, key, value,
/// headers) in the order read.
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

fn dlq_lines(run: &Run) -> Vec<(i32, String, String, String)> {
    run.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("DLQ "))
        .map(|l| {
            let f: Vec<&str> = l.splitn(4, ' ').collect();
            (
                f[0].parse().unwrap(),
                f[1].to_string(),
                f[2].to_string(),
                f.get(3).copied().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_dead_letter_queue_holds_the_rejected_records_and_those_past_the_delivery_limit() {
    let _serial = serial();
    let root = tempfile::tempdir().unwrap();
    let classes = compile(root.path());
    let cluster = Cluster::start(root.path());

    // Values 5, 10, 15 are rejected; 0, 7, 14 released on every delivery until the limit
    // (2) archives them: those six, and only those, reach the DLQ topic, in partition
    // 0 % 2 of its two.
    cluster.create_topic("dlq-src", 1);
    let run = share_consumers(
        root.path(),
        &classes,
        &cluster,
        &[
            "dlq-src",
            "g-dlq",
            "20",
            "2",
            "--reject-mod",
            "5",
            "--always-release",
            "7",
            "--settle-after",
            "2",
            "--create-topic",
            "dlq.g-dlq:2:errors.deadletterqueue.group.enable=true",
            "--group-config",
            "share.auto.offset.reset=earliest",
            "--group-config",
            "share.delivery.count.limit=2",
            "--group-config",
            "errors.deadletterqueue.topic.name=dlq.g-dlq",
            "--group-config",
            "errors.deadletterqueue.copy.record.enable=true",
            "--read-dlq",
            "dlq.g-dlq",
            "6",
        ],
    );
    assert!(
        run.done,
        "the share consumers did not settle\n{}",
        run.context(&cluster.logs())
    );
    let mut got = dlq_lines(&run);
    got.sort_by_key(|(_, _, value, _)| value.parse::<u32>().unwrap_or(u32::MAX));
    let record = |value: u32, count: u32, message: &str| {
        (
            0,
            value.to_string(),
            value.to_string(),
            format!(
                "__dlq.errors.topic=dlq-src|__dlq.errors.partition=0|__dlq.errors.offset={value}|\
                 __dlq.errors.group=g-dlq|__dlq.errors.delivery.count={count}|\
                 __dlq.errors.message={message}"
            ),
        )
    };
    let exceeded = "Offset delivery count exceeded the threshold.";
    let rejected = "Offset rejected by client.";
    let want = vec![
        record(0, 2, exceeded),
        record(5, 1, rejected),
        record(7, 2, exceeded),
        record(10, 1, rejected),
        record(14, 2, exceeded),
        record(15, 1, rejected),
    ];
    assert_eq!(
        got,
        want,
        "the DLQ topic's records\n{}",
        run.context(&cluster.logs())
    );

    // Kafka's ShareGroupMetrics on kraftd's brokers: six DLQ records for the group, and
    // every acknowledgement by type — 14 accepted, 3 rejected, and 0, 7 and 14 released on
    // both their deliveries — and the share fetches of the topic in BrokerTopicMetrics.
    if let Cluster::Kraftd { .. } = cluster {
        let group_metrics = "kafka_server_ShareGroupMetrics";
        let expected = [
            ("DeadLetterQueueRecordCount_total", "group=\"g-dlq\"", 6.0),
            (
                "RecordAcknowledgementsPerSec_total",
                "ackType=\"Accept\"",
                14.0,
            ),
            (
                "RecordAcknowledgementsPerSec_total",
                "ackType=\"Reject\"",
                3.0,
            ),
            (
                "RecordAcknowledgementsPerSec_total",
                "ackType=\"Release\"",
                6.0,
            ),
        ];
        common::eventually(
            "the share-group metrics",
            std::time::Duration::from_secs(30),
            || cluster.logs(),
            || {
                let got: Vec<Option<f64>> = expected
                    .iter()
                    .map(|(name, label, _)| {
                        cluster.metric_sum(&format!("{group_metrics}_{name}"), label)
                    })
                    .collect();
                let want: Vec<Option<f64>> = expected.iter().map(|e| Some(e.2)).collect();
                if got == want {
                    Ok(())
                } else {
                    Err(format!("{expected:?}: got {got:?}"))
                }
            },
        );
        let fetches = cluster.metric_sum(
            "kafka_server_BrokerTopicMetrics_TotalShareFetchRequestsPerSec_total",
            "topic=\"dlq-src\"",
        );
        assert!(
            fetches.is_some_and(|f| f > 0.0),
            "no share fetch counted for dlq-src: {fetches:?}"
        );
    }

    // A DLQ topic name starting with "__" is refused when set.
    let refused = share_consumers(
        root.path(),
        &classes,
        &cluster,
        &[
            "dlq-src",
            "g-dlq-internal",
            "0",
            "1",
            "--no-produce",
            "--group-config",
            "errors.deadletterqueue.topic.name=__dlq",
        ],
    );
    assert!(
        refused.stdout.lines().any(|l| l
            == "CONFIG-ERROR InvalidConfigurationException errors.deadletterqueue.topic.name: \
                DLQ topic name must not start with '__'"),
        "the __ name must be refused\n{}",
        refused.context(&cluster.logs())
    );

    // A DLQ topic without errors.deadletterqueue.group.enable gets nothing: the rejected
    // records are archived all the same.
    cluster.create_topic("dlq-src-2", 1);
    let off = share_consumers(
        root.path(),
        &classes,
        &cluster,
        &[
            "dlq-src-2",
            "g-dlq-off",
            "10",
            "1",
            "--reject-mod",
            "2",
            "--create-topic",
            "dlq.off:1",
            "--group-config",
            "share.auto.offset.reset=earliest",
            "--group-config",
            "errors.deadletterqueue.topic.name=dlq.off",
            "--read-dlq",
            "dlq.off",
            "0",
        ],
    );
    assert_each_settled_once(&off, &cluster, 10);
    assert_eq!(off.values("reject").len(), 5);
    assert!(
        dlq_lines(&off).is_empty() && off.stdout.contains("DLQ-READ 0"),
        "a topic not enabled for DLQ writes must get nothing\n{}",
        off.context(&cluster.logs())
    );

    // A DLQ topic that does not exist is created by the broker on the first DLQ write, as
    // errors.deadletterqueue.auto.create.topics.enable=true says, with DLQ writes enabled:
    // the rejected records (values 0, 2 and 4 of 0..6, at those offsets) land in it.
    cluster.create_topic("dlq-src-3", 1);
    let auto = share_consumers(
        root.path(),
        &classes,
        &cluster,
        &[
            "dlq-src-3",
            "g-dlq-auto",
            "6",
            "1",
            "--reject-mod",
            "2",
            "--group-config",
            "share.auto.offset.reset=earliest",
            "--group-config",
            "errors.deadletterqueue.topic.name=dlq.auto",
            "--read-dlq",
            "dlq.auto",
            "3",
        ],
    );
    assert_each_settled_once(&auto, &cluster, 6);
    let mut values: Vec<u32> = dlq_lines(&auto)
        .iter()
        .map(|(_, _, _, headers)| {
            headers
                .split('|')
                .find_map(|h| h.strip_prefix("__dlq.errors.offset="))
                .and_then(|o| o.parse().ok())
                .unwrap_or(u32::MAX)
        })
        .collect();
    values.sort();
    assert_eq!(
        values,
        vec![0, 2, 4],
        "the auto-created DLQ topic's records\n{}",
        auto.context(&cluster.logs())
    );
}
