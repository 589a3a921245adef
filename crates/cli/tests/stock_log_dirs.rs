//! Log directories with stock tools on real processes: two brokers with two `log.dirs`
//! each. Apache Kafka 4.4.0's `kafka-log-dirs --describe` (`LogDirsCommand`) and
//! kafka-python's `describe_log_dirs` see every dir and every replica with its size (the
//! bytes of its segments on disk); kafka-python's `alter_replica_log_dirs`
//! (AlterReplicaLogDirs, what `kafka-reassign-partitions` sends for a `log_dirs` entry)
//! moves every replica to its broker's other dir while a confluent-kafka producer with
//! acks=all writes, and a consumer then reads back every acknowledged record; a broker
//! killed right after a move was accepted finishes it after its restart (the future log is
//! resumed, or was already swapped in). Kafka's errors for a dir not configured, an unknown
//! topic and a replica the broker does not host.
//!
//! DescribeTopicPartitions: Kafka 4.4.0's `kafka-topics --describe` (its admin client pages
//! with DescribeTopicPartitions, here two partitions per response) lists every partition
//! with its ELR fields, and raw requests walk the pages cursor by cursor: the same pages as
//! Apache Kafka 4.4.0 from its jars gives for the same topics.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::jbod::{jbod_cluster, two_log_dirs};
use common::kafka_jars::{output_text as text, run_tool as tool};
use common::python::{python, run_inline, script_path, wait_until_brokers_listed};
use common::raw::Raw;
use common::script::Script;
use common::{addresses, formatted_cluster, Node};
use kraftd_protocol::messages::describe_topic_partitions_request::{Cursor, TopicRequest};
use kraftd_protocol::messages::DescribeTopicPartitionsRequest;
use kraftd_protocol::{RequestBody, ResponseBody};

const TOPIC: &str = "moving";

/// One replica as `kafka-log-dirs --describe` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Replica {
    broker: i32,
    dir: String,
    partition: String,
    size: u64,
    lag: i64,
    future: bool,
}

/// The dirs (broker, dir, error) and the replicas `kafka-log-dirs` describes.
type Described = (Vec<(i32, String, String)>, Vec<Replica>);

/// `kafka-log-dirs --describe` for `brokers`: every dir (broker, dir, error) and every
/// replica, parsed from its JSON line; the tool's output when it fails (a broker down).
fn try_log_dirs(bootstrap: &str, brokers: &str) -> Result<Described, String> {
    let json = common::kafka_jars::log_dirs_json(bootstrap, brokers)?;
    // Flattened by Python's json module: "dir B DIR ERROR" and "replica B DIR P SIZE LAG FUT".
    let flat = run_inline(
        r#"
import json, sys
d = json.loads(sys.argv[1])
for b in d["brokers"]:
    for ld in b["logDirs"]:
        print("dir", b["broker"], ld["logDir"], ld["error"])
        for p in ld["partitions"]:
            print("replica", b["broker"], ld["logDir"], p["partition"], p["size"], p["offsetLag"], p["isFuture"])
"#,
        &[&json],
    );
    assert!(flat.status.success(), "{}", text(&flat));
    let mut dirs = Vec::new();
    let mut replicas = Vec::new();
    for line in String::from_utf8_lossy(&flat.stdout).lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "dir" => dirs.push((f[1].parse().unwrap(), f[2].to_string(), f[3].to_string())),
            _ => replicas.push(Replica {
                broker: f[1].parse().unwrap(),
                dir: f[2].to_string(),
                partition: f[3].to_string(),
                size: f[4].parse().unwrap(),
                lag: f[5].parse().unwrap(),
                future: f[6] == "True",
            }),
        }
    }
    dirs.sort();
    replicas.sort_by(|a, b| {
        (a.broker, &a.partition, a.future).cmp(&(b.broker, &b.partition, b.future))
    });
    Ok((dirs, replicas))
}

fn log_dirs(bootstrap: &str, brokers: &str) -> Described {
    try_log_dirs(bootstrap, brokers).unwrap_or_else(|e| panic!("kafka-log-dirs\n{e}"))
}

/// Bytes of a partition directory's segments (`*.log`).
fn segments_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                .map(|e| e.metadata().map_or(0, |m| m.len()))
                .sum()
        })
        .unwrap_or(0)
}

/// kafka-python's `alter_replica_log_dirs` for `(topic, partition, broker) → dir`: the
/// error class name of each.
fn alter(
    bootstrap: &str,
    moves: &[(&str, i32, i32, String)],
) -> BTreeMap<(String, i32, i32), String> {
    let spec: Vec<String> = moves
        .iter()
        .map(|(t, p, b, d)| format!("{t}:{p}:{b}:{d}"))
        .collect();
    let mut args = vec![bootstrap];
    args.extend(spec.iter().map(String::as_str));
    let out = run_inline(
        r#"
import sys
from kafka import KafkaAdminClient, TopicPartitionReplica
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=20000)
moves = {}
for spec in sys.argv[2:]:
    t, p, b, d = spec.split(":", 3)
    moves[TopicPartitionReplica(t, int(p), int(b))] = d
for tpr, err in sorted(admin.alter_replica_log_dirs(moves).items()):
    print(tpr.topic, tpr.partition, tpr.broker_id, err.__name__)
admin.close()
"#,
        &args,
    );
    assert!(
        out.status.success(),
        "alter_replica_log_dirs\n{}",
        text(&out)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                (
                    f[0].to_string(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                ),
                f[3].to_string(),
            )
        })
        .collect()
}

/// Waits (up to 60 s) until `kafka-log-dirs` shows every replica of the topic in the dir
/// `target` names for it and no future replica left; the replicas.
fn wait_placed(
    bootstrap: &str,
    target: &BTreeMap<(i32, String), String>,
    logs: impl Fn() -> String,
) -> Vec<Replica> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let replicas = match try_log_dirs(bootstrap, "2,3") {
            Ok((_, replicas)) => replicas,
            // A broker restarting: ask again.
            Err(_) => Vec::new(),
        };
        let mine: Vec<&Replica> = replicas
            .iter()
            .filter(|r| r.partition.starts_with(TOPIC))
            .collect();
        let placed = mine.iter().all(|r| !r.future)
            && target.iter().all(|((b, p), d)| {
                mine.iter()
                    .any(|r| r.broker == *b && &r.partition == p && &r.dir == d)
            });
        if placed {
            return replicas;
        }
        assert!(
            Instant::now() < deadline,
            "replicas not in their target dirs after 60 s: {replicas:#?}\ntarget {target:#?}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn replicas_move_between_log_dirs_under_acks_all_load_and_across_a_restart() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (controllers, mut brokers) = jbod_cluster(root.path(), 2, &[]);
    let bootstrap = addresses(&brokers);
    let logs = |brokers: &[Node]| common::all_logs(brokers);
    wait_until_brokers_listed(&bootstrap, 2, || logs(&brokers));

    let mut producer = Script::spawn(
        root.path(),
        "produce_consume.py",
        &[
            "--bootstrap",
            &bootstrap,
            "--topic",
            TOPIC,
            "--client",
            "confluent",
            "--acks",
            "all",
            "--count",
            "60000",
            "--partitions",
            "2",
            "--replication-factor",
            "2",
            "--rate",
            "4000",
        ],
    );
    producer.wait_line(120, "waiting for the topic", |l| l == "topic ready");
    producer.wait_acked(4000, 120);

    // Every dir of both brokers, and each broker's replicas of both partitions.
    let (dirs, replicas) = log_dirs(&bootstrap, "2,3");
    let abs = |p: &Path| std::path::absolute(p).unwrap().display().to_string();
    let mut expected_dirs: Vec<(i32, String, String)> = brokers
        .iter()
        .flat_map(|b| two_log_dirs(b).map(|d| (b.id, abs(&d), "None".to_string())))
        .collect();
    expected_dirs.sort();
    assert_eq!(dirs, expected_dirs);
    let mine: Vec<&Replica> = replicas
        .iter()
        .filter(|r| r.partition.starts_with(TOPIC))
        .collect();
    assert_eq!(mine.len(), 4, "{replicas:#?}");
    assert!(
        mine.iter().all(|r| r.size > 0 && !r.future && r.lag >= 0),
        "{mine:#?}"
    );

    // Every replica to its broker's other dir, while the producer goes on.
    let mut target = BTreeMap::new();
    let mut moves = Vec::new();
    for r in &mine {
        let node = brokers.iter().find(|b| b.id == r.broker).unwrap();
        let other = two_log_dirs(node)
            .into_iter()
            .map(|d| abs(&d))
            .find(|d| *d != r.dir)
            .unwrap();
        let index: i32 = r.partition.rsplit_once('-').unwrap().1.parse().unwrap();
        target.insert((r.broker, r.partition.clone()), other.clone());
        moves.push((TOPIC, index, r.broker, other));
    }
    let answers = alter(&bootstrap, &moves);
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert!(answers.values().all(|e| e == "NoError"), "{answers:?}");
    producer.wait_acked(12_000, 120);
    wait_placed(&bootstrap, &target, || logs(&brokers));
    producer.wait_acked(20_000, 120);

    // Kafka's errors: a dir not configured, an unknown topic, a replica not hosted (topic
    // `solo` lives on broker 2 only).
    let created = run_inline(
        r#"
import sys, time
import kafka.errors as kerrors
from kafka.admin import KafkaAdminClient, NewTopic
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=20000)
deadline = time.time() + 60
while True:
    try:
        admin.create_topics([NewTopic("solo", -1, -1, replica_assignments={0: [2]})])
        break
    except kerrors.TopicAlreadyExistsError:
        break  # an earlier attempt timed out on our side but went through
    except Exception as e:
        # A loaded machine: the controller's answer came too late; ask again.
        print("create_topics:", repr(e), file=sys.stderr)
        if time.time() > deadline:
            raise
        time.sleep(0.5)
admin.close()
"#,
        &[&bootstrap],
    );
    assert!(created.status.success(), "{}", text(&created));
    let not_a_dir = abs(&root.path().join("elsewhere"));
    let on_2 = abs(&two_log_dirs(&brokers[0])[0]);
    let on_3 = abs(&two_log_dirs(&brokers[1])[0]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let answers = loop {
        let answers = alter(
            &bootstrap,
            &[
                (TOPIC, 0, 2, not_a_dir.clone()),
                ("no-such-topic", 0, 2, on_2.clone()),
                ("solo", 0, 3, on_3.clone()),
            ],
        );
        // Until broker 3 has seen `solo` created.
        let known = answers
            .get(&("solo".to_string(), 0, 3))
            .is_some_and(|e| e != "UnknownTopicOrPartitionError");
        if known || Instant::now() > deadline {
            break answers;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        answers.values().cloned().collect::<Vec<_>>(),
        [
            "LogDirNotFoundError",
            "UnknownTopicOrPartitionError",
            "ReplicaNotAvailableError"
        ],
        "{answers:?}"
    );

    // A move accepted, then the broker killed at once: after its restart the replica ends
    // in the target dir. The move is in progress at the restart either way: if the kill
    // came before the swap its future log is on disk; if after, a move back to the other
    // dir is left on disk the way the broker starts one (an empty future log naming the
    // topic id), so the restarted broker always resumes a move.
    let victim = 1;
    let id = brokers[victim].id;
    let [first, second] = two_log_dirs(&brokers[victim]);
    let part = format!("{TOPIC}-0");
    let answers = alter(&bootstrap, &[(TOPIC, 0, id, abs(&first))]);
    assert!(answers.values().all(|e| e == "NoError"), "{answers:?}");
    brokers[victim].kill9();
    let future_on_disk = |dir: &Path| {
        std::fs::read_dir(dir).unwrap().flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(&format!("{part}.")) && name.ends_with("-future")
        })
    };
    let target_dir = if future_on_disk(&first) {
        first.clone()
    } else {
        assert!(first.join(&part).is_dir(), "{part} in neither state");
        let future = second.join(format!("{part}.0123456789abcdef0123456789abcdef-future"));
        std::fs::create_dir_all(&future).unwrap();
        std::fs::copy(
            first.join(&part).join("partition.metadata"),
            future.join("partition.metadata"),
        )
        .unwrap();
        second.clone()
    };
    brokers[victim].start();
    target.insert((id, part.clone()), abs(&target_dir));
    wait_placed(&bootstrap, &target, || logs(&brokers));

    // Every acknowledged record is read back at its offset.
    let summary = producer.finish(300, || logs(&brokers));
    eprintln!("{summary}");
    // The first four moves were swapped in while the producer ran, the one resumed after
    // the restart too.
    let all = logs(&brokers);
    let swapped = all.matches("replica moved to its new log dir").count();
    let resumed = all.matches("resuming a move to another log dir").count();
    // (A kill between the swap's two renames leaves only the complete future log, which
    // becomes the current one at the start instead.)
    let promoted = all
        .matches("a finished future log became the current log")
        .count();
    eprintln!(
        "swaps logged: {swapped}, moves resumed after the restart: {resumed}, promoted: {promoted}"
    );
    assert!(swapped >= 4 + resumed && resumed + promoted == 1, "{all}");

    // Settled: the reported sizes are the bytes of the segments on disk, and no future or
    // deleted directory is left behind.
    let replicas = wait_placed(&bootstrap, &target, || logs(&brokers));
    for r in replicas.iter().filter(|r| r.partition.starts_with(TOPIC)) {
        let on_disk = segments_bytes(&Path::new(&r.dir).join(&r.partition));
        assert_eq!(r.size, on_disk, "{r:?}");
    }
    for node in &brokers {
        for dir in two_log_dirs(node) {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                assert!(
                    !name.ends_with("-future") && !name.ends_with("-delete"),
                    "{} left in {}",
                    name,
                    dir.display()
                );
            }
        }
    }

    // kafka-python's describe_log_dirs agrees.
    let described = run_inline(
        r#"
import sys
from kafka import KafkaAdminClient
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1])
for b in sorted(admin.describe_log_dirs(), key=lambda b: b["broker"]):
    for d in b["log_dirs"]:
        for t in d["topics"]:
            for p in t["partitions"]:
                print(b["broker"], d["log_dir"], t["name"], p["partition_index"], p["partition_size"], d["error_code"], d["total_bytes"] > 0, d["usable_bytes"] > 0)
admin.close()
"#,
        &[&bootstrap],
    );
    assert!(described.status.success(), "{}", text(&described));
    let lines: Vec<String> = String::from_utf8_lossy(&described.stdout)
        .lines()
        .filter(|l| l.contains(TOPIC))
        .map(str::to_string)
        .collect();
    let mut expected: Vec<String> = replicas
        .iter()
        .filter(|r| r.partition.starts_with(TOPIC))
        .map(|r| {
            let index = r.partition.rsplit_once('-').unwrap().1;
            format!(
                "{} {} {TOPIC} {index} {} 0 True True",
                r.broker, r.dir, r.size
            )
        })
        .collect();
    expected.sort();
    let mut lines = lines;
    lines.sort();
    assert_eq!(lines, expected);

    let _ = script_path("");
    drop(controllers);
}

/// One page of a raw DescribeTopicPartitions: (topic, partitions) and the next cursor.
type Page = (Vec<(String, Vec<i32>)>, Option<(String, i32)>);

fn page(
    raw: &mut Raw,
    broker: i32,
    topics: &[&str],
    limit: i32,
    cursor: Option<&(String, i32)>,
) -> Page {
    let request = DescribeTopicPartitionsRequest {
        topics: topics
            .iter()
            .map(|t| TopicRequest {
                name: t.to_string(),
                ..Default::default()
            })
            .collect(),
        response_partition_limit: limit,
        cursor: cursor.map(|(t, p)| Cursor {
            topic_name: t.clone(),
            partition_index: *p,
            ..Default::default()
        }),
        ..Default::default()
    };
    let ResponseBody::DescribeTopicPartitions(response) =
        raw.call(0, RequestBody::DescribeTopicPartitions(request))
    else {
        panic!("not a DescribeTopicPartitions response");
    };
    for t in &response.topics {
        assert_eq!(t.error_code, 0, "{t:?}");
        for p in &t.partitions {
            assert_eq!(
                (p.leader_id, &p.replica_nodes, &p.isr_nodes),
                (broker, &vec![broker], &vec![broker])
            );
            assert_eq!(p.eligible_leader_replicas, Some(vec![]));
            assert_eq!(p.last_known_elr, Some(vec![]));
        }
    }
    (
        response
            .topics
            .iter()
            .map(|t| {
                (
                    t.name.clone().unwrap_or_default(),
                    t.partitions.iter().map(|p| p.partition_index).collect(),
                )
            })
            .collect(),
        response
            .next_cursor
            .map(|c| (c.topic_name, c.partition_index)),
    )
}

#[test]
fn describe_topic_partitions_pages_as_kafka_for_kafka_topics_and_raw_cursors() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = addresses(&brokers);
    wait_until_brokers_listed(&bootstrap, 1, || common::all_logs(&brokers));
    create_abc(&bootstrap);

    // kafka-topics pages two partitions at a time and prints all nine.
    let described = tool(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--describe",
            "--partition-size-limit-per-response",
            "2",
        ],
    );
    assert!(described.status.success(), "{}", text(&described));
    let stdout = String::from_utf8_lossy(&described.stdout).into_owned();
    let mut rows: Vec<(String, i32)> = stdout
        .lines()
        .filter(|l| l.contains("Partition: ") && l.contains("Elr:"))
        .map(|l| {
            let field = |name: &str| {
                l.split('\t')
                    .find_map(|f| f.trim().strip_prefix(name).map(|v| v.trim().to_string()))
                    .unwrap_or_default()
            };
            assert_eq!(field("Leader:"), "2", "{l}");
            (field("Topic:"), field("Partition:").parse().unwrap())
        })
        .collect();
    rows.sort();
    let expected: Vec<(String, i32)> = [("a", 5), ("b", 3), ("c", 1)]
        .iter()
        .flat_map(|(t, n)| (0..*n).map(move |p| (t.to_string(), p)))
        .collect();
    assert_eq!(rows, expected, "{}", text(&described));

    // Raw pages of two, cursor by cursor: a cut inside a topic names it and its next
    // partition; a limit used up at b's end names c at partition 0; the last page has none.
    let s = |v: &str| v.to_string();
    let pages = walk(&brokers[0].address(), 2);
    assert_eq!(
        pages,
        vec![
            (vec![(s("a"), vec![0, 1])], Some((s("a"), 2))),
            (vec![(s("a"), vec![2, 3])], Some((s("a"), 4))),
            (
                vec![(s("a"), vec![4]), (s("b"), vec![0])],
                Some((s("b"), 1))
            ),
            (vec![(s("b"), vec![1, 2])], Some((s("c"), 0))),
            (vec![(s("c"), vec![0])], None),
        ]
    );
    // Named topics, in name order whatever the request's order, from the cursor on.
    let mut raw = Raw::connect(&brokers[0].address());
    let named = page(&mut raw, 2, &["c", "a", "b"], 4, Some(&(s("a"), 3)));
    assert_eq!(
        named,
        (
            vec![(s("a"), vec![3, 4]), (s("b"), vec![0, 1])],
            Some((s("b"), 2))
        )
    );

    // Apache Kafka 4.4.0 pages the same topics the same way.
    let kafka_root = tempfile::tempdir().unwrap();
    let (mut kafka_controller, mut kafka_brokers) =
        common::kafka_jars::kafka_cluster(kafka_root.path(), 1, "");
    let kafka = kafka_brokers[0].address();
    create_abc(&kafka);
    let theirs = walk(&kafka, 1);
    let mut kafka_raw = Raw::connect(&kafka);
    let their_named = page(&mut kafka_raw, 1, &["c", "a", "b"], 4, Some(&(s("a"), 3)));
    for n in kafka_brokers
        .iter_mut()
        .chain(std::iter::once(&mut kafka_controller))
    {
        n.kill9();
    }
    assert_eq!(theirs, pages);
    assert_eq!(their_named, named);
}

/// Topics `a` (5 partitions), `b` (3) and `c` (1), one replica each, created through
/// kafka-python and waited for.
fn create_abc(bootstrap: &str) {
    let created = run_inline(
        r#"
import sys, time
from kafka.admin import KafkaAdminClient, NewTopic
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=20000)
admin.create_topics([NewTopic("a", 5, 1), NewTopic("b", 3, 1), NewTopic("c", 1, 1)])
deadline = time.time() + 30
while time.time() < deadline:
    names = {t.get("topic", t.get("name")): len(t["partitions"]) for t in admin.describe_topics(["a", "b", "c"]) if t["error_code"] == 0}
    if names == {"a": 5, "b": 3, "c": 1}:
        break
    time.sleep(0.2)
admin.close()
"#,
        &[bootstrap],
    );
    assert!(created.status.success(), "{}", text(&created));
}

/// Every page of a raw all-topics DescribeTopicPartitions with a limit of two, following
/// the cursors.
fn walk(address: &str, broker: i32) -> Vec<Page> {
    let mut raw = Raw::connect(address);
    let mut cursor = None;
    let mut pages = Vec::new();
    loop {
        let (topics, next) = page(&mut raw, broker, &[], 2, cursor.as_ref());
        pages.push((topics, next.clone()));
        match next {
            Some(c) => cursor = Some(c),
            None => return pages,
        }
        assert!(pages.len() < 10, "{pages:?}");
    }
}

/// Kafka 4.4.0's `kafka-reassign-partitions --execute` with a `log_dirs` entry: the
/// replicas stay as they are (the tool still sends AlterPartitionReassignments, a no-op,
/// and ListPartitionReassignments first) and the tool moves broker 2's replica with
/// AlterReplicaLogDirs; `--verify` (DescribeLogDirs) then reports the move complete and
/// `kafka-log-dirs` shows the replica in its new dir, its size unchanged. Needs the
/// `reassign` branch (AlterPartitionReassignments / ListPartitionReassignments).
#[test]
fn kafka_reassign_partitions_moves_a_replica_between_log_dirs() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_controllers, brokers) = jbod_cluster(root.path(), 2, &[]);
    let bootstrap = addresses(&brokers);
    wait_until_brokers_listed(&bootstrap, 2, || common::all_logs(&brokers));
    let produced = run_inline(
        r#"
import sys, time
sys.path.insert(0, sys.argv[2])
from clients_common import create_topic
from confluent_kafka import Producer
from confluent_kafka import admin as cadmin
admin = cadmin.AdminClient({"bootstrap.servers": sys.argv[1]})
create_topic(admin, "tool", 1, 2, {}, time.time() + 60)
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all"})
for i in range(2000):
    p.produce("tool", value=(b"m%d " % i) * 200)
    p.poll(0)
p.flush(60)
md = admin.list_topics("tool", timeout=10)
print(",".join(str(r) for r in md.topics["tool"].partitions[0].replicas))
"#,
        &[&bootstrap, script_path("").to_str().unwrap()],
    );
    assert!(produced.status.success(), "{}", text(&produced));
    let replicas = String::from_utf8_lossy(&produced.stdout).trim().to_string();
    let (_, before) = log_dirs(&bootstrap, "2");
    let here = before
        .iter()
        .find(|r| r.partition == "tool-0")
        .unwrap()
        .clone();
    let abs = |p: &Path| std::path::absolute(p).unwrap().display().to_string();
    let there = two_log_dirs(&brokers[0])
        .into_iter()
        .map(|d| abs(&d))
        .find(|d| *d != here.dir)
        .unwrap();
    // The log dir for broker 2's replica, "any" for the other one.
    let dirs: Vec<String> = replicas
        .split(',')
        .map(|r| {
            if r == "2" {
                format!("\"{there}\"")
            } else {
                "\"any\"".to_string()
            }
        })
        .collect();
    let plan = root.path().join("plan.json");
    std::fs::write(
        &plan,
        format!(
            "{{\"version\":1,\"partitions\":[{{\"topic\":\"tool\",\"partition\":0,\
             \"replicas\":[{replicas}],\"log_dirs\":[{}]}}]}}",
            dirs.join(",")
        ),
    )
    .unwrap();
    let reassign = |mode: &[&str]| {
        let mut args = vec![
            "--bootstrap-server",
            &bootstrap,
            "--reassignment-json-file",
            plan.to_str().unwrap(),
        ];
        args.extend(mode);
        tool(
            "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
            &args,
        )
    };
    // ~3 MiB to copy at 64 KiB/s (`replica.alter.log.dirs.io.max.bytes.per.second`): the
    // copier is held back for many seconds, where unthrottled it takes a fraction of one.
    let executed = reassign(&["--execute", "--replica-alter-log-dirs-throttle", "65536"]);
    assert!(
        executed.status.success()
            && String::from_utf8_lossy(&executed.stdout)
                .contains("Successfully started moving log directory to"),
        "{}\n{}",
        text(&executed),
        common::all_logs(&brokers)
    );
    // A lower bound, true on any machine: for 3 s, every look finds the future log behind.
    let throttled_until = Instant::now() + Duration::from_secs(3);
    loop {
        let (_, during) = log_dirs(&bootstrap, "2");
        let future = during
            .iter()
            .find(|r| r.partition == "tool-0" && r.future)
            .unwrap_or_else(|| panic!("still moving under the throttle: {during:?}"));
        assert!(future.lag > 0, "{during:?}");
        if Instant::now() >= throttled_until {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let cleared = tool(
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--alter",
            "--entity-type",
            "brokers",
            "--entity-name",
            "2",
            "--delete-config",
            "replica.alter.log.dirs.io.max.bytes.per.second",
        ],
    );
    assert!(cleared.status.success(), "{}", text(&cleared));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let verified = reassign(&["--verify"]);
        let stdout = String::from_utf8_lossy(&verified.stdout).into_owned();
        if stdout.contains("Reassignment of replica tool-0-2 completed successfully") {
            break;
        }
        assert!(Instant::now() < deadline, "{}", text(&verified));
        std::thread::sleep(Duration::from_millis(300));
    }
    let (_, after) = log_dirs(&bootstrap, "2");
    let moved = after.iter().find(|r| r.partition == "tool-0").unwrap();
    assert_eq!((moved.dir.as_str(), moved.future), (there.as_str(), false));
    assert_eq!(moved.size, here.size);
}
