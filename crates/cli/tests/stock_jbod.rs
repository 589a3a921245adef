//! KIP-858 JBOD directory assignment on real processes: one controller and two brokers with
//! three `log.dirs` each. Replicas of a topic created with Kafka 4.4.0's `kafka-topics`
//! start UNASSIGNED in the metadata (a broker with several dirs picks one); each broker's
//! `AssignmentsManager` then reports the directory with AssignReplicasToDirs, and the
//! controller records it. The metadata is read as a Kafka operator would, with Kafka's
//! `kafka-dump-log --cluster-metadata-decoder` over the controller's `__cluster_metadata`
//! log; where each replica really lives with Kafka's `kafka-log-dirs --describe`, and each
//! dir's id from its `meta.properties`. After Kafka's `kafka-reassign-partitions` moves a
//! replica to another dir (a `log_dirs` entry in the plan), the metadata follows it.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::kafka_jars::{output_text as text, run_tool as tool};
use common::python::run_inline;
use common::script::Script;
use common::{addresses, eventually, format, formatted_quorum, voters, write_broker_config, Node};

const TOPIC: &str = "jbod";
const PARTITIONS: i32 = 6;
/// Kafka's `DirectoryId.UNASSIGNED` as its JSON shows it.
const UNASSIGNED: &str = "AAAAAAAAAAAAAAAAAAAAAA";

/// A broker's first `n` (at most three) log dirs; the first holds the metadata log.
fn dirs_of(node: &Node, n: usize) -> Vec<PathBuf> {
    ["data", "data2", "data3"]
        .iter()
        .take(n)
        .map(|d| node.dir.join(d))
        .collect()
}

fn abs(p: &Path) -> String {
    std::path::absolute(p).unwrap().display().to_string()
}

/// One controller and brokers 2 and 3, each broker with `n_dirs` log dirs and `extra`
/// properties, started.
fn cluster(root: &Path, n_dirs: usize, extra: &[&str]) -> (Vec<Node>, Vec<Node>) {
    let (cluster_id, mut controllers) = formatted_quorum(root, 1);
    let voters = voters(&controllers);
    let mut brokers: Vec<Node> = (2..=3).map(|id| Node::broker(root, id)).collect();
    for node in &brokers {
        std::fs::create_dir_all(&node.dir).unwrap();
        write_broker_config(node, &voters);
        let dirs = dirs_of(node, n_dirs);
        let config = std::fs::read_to_string(node.config_path()).unwrap();
        let all: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        let config = config.replace(
            &format!("log.dirs={}\n", dirs[0].display()),
            &format!("log.dirs={}\n", all.join(",")),
        );
        std::fs::write(node.config_path(), config).unwrap();
        node.add_config(extra);
        format(node, &cluster_id);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    (controllers, brokers)
}

/// Each log dir's `directory.id` (its `meta.properties`), by absolute path.
fn directory_ids(brokers: &[Node], n_dirs: usize) -> BTreeMap<String, String> {
    let mut ids = BTreeMap::new();
    for node in brokers {
        for dir in dirs_of(node, n_dirs) {
            let meta = std::fs::read_to_string(dir.join("meta.properties")).unwrap();
            let id = meta
                .lines()
                .find_map(|l| l.strip_prefix("directory.id="))
                .unwrap_or_else(|| panic!("no directory.id in {}", dir.display()));
            ids.insert(abs(&dir), id.trim().to_string());
        }
    }
    ids
}

/// (partition, broker) → the directory id the metadata names, folded from every
/// PartitionRecord and PartitionChangeRecord of the topic that Kafka's `kafka-dump-log
/// --cluster-metadata-decoder` decodes from the controller's metadata log.
fn metadata_directories(
    root: &Path,
    controller: &Node,
    topic: &str,
) -> Result<BTreeMap<(i32, i32), String>, String> {
    let files: Vec<PathBuf> = std::fs::read_dir(controller.metadata_dir())
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .collect();
    let with_ext = |ext: &str| {
        let mut v: Vec<PathBuf> = files
            .iter()
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .cloned()
            .collect();
        v.sort();
        v
    };
    // The newest snapshot (segments before it may be gone), then the segments; records
    // of the segments below the snapshot's end offset are skipped by the fold.
    let snapshot = with_ext("checkpoint").pop();
    let snapshot_end: i64 = snapshot
        .as_ref()
        .and_then(|p| p.file_name()?.to_str()?.split('-').next()?.parse().ok())
        .unwrap_or(0);
    let mut segments: Vec<PathBuf> = snapshot.into_iter().collect();
    segments.extend(with_ext("log"));
    let mut dumped = String::new();
    for segment in &segments {
        let (ok, stdout, stderr) =
            common::kafka_jars::dump_log_segment_with(segment, &["--cluster-metadata-decoder"]);
        if !ok {
            // A snapshot or segment replaced meanwhile: the caller asks again.
            return Err(format!("kafka-dump-log failed on {segment:?}: {stderr}"));
        }
        let is_snapshot = segment.extension().is_some_and(|x| x == "checkpoint");
        dumped.push_str(if is_snapshot { "SNAPSHOT\n" } else { "LOG\n" });
        dumped.push_str(&stdout);
    }
    let dump_file = root.join("metadata-dump.txt");
    std::fs::write(&dump_file, dumped).unwrap();
    let folded = run_inline(
        r#"
import json, sys
topic, topic_id, parts = sys.argv[2], None, {}
snapshot_end, in_snapshot = int(sys.argv[3]), False
for line in open(sys.argv[1]):
    if line.strip() in ("SNAPSHOT", "LOG"):
        in_snapshot = line.strip() == "SNAPSHOT"
        continue
    i = line.find("payload: ")
    if i < 0:
        continue
    if not in_snapshot and line.startswith("| offset: "):
        if int(line.split()[2]) < snapshot_end:
            continue
    try:
        record = json.loads(line[i + len("payload: "):])
    except ValueError:
        continue
    kind, data = record.get("type"), record.get("data", {})
    if kind == "TOPIC_RECORD" and data["name"] == topic:
        topic_id = data["topicId"]
    elif kind == "PARTITION_RECORD" and data["topicId"] == topic_id:
        parts[data["partitionId"]] = dict(zip(data["replicas"], data.get("directories", [])))
    elif kind == "PARTITION_CHANGE_RECORD" and data["topicId"] == topic_id:
        old = parts[data["partitionId"]]
        replicas = data.get("replicas", list(old))
        dirs = data.get("directories")
        if dirs:
            parts[data["partitionId"]] = dict(zip(replicas, dirs))
        else:
            parts[data["partitionId"]] = {r: old.get(r, "AAAAAAAAAAAAAAAAAAAAAA") for r in replicas}
for p, replicas in sorted(parts.items()):
    for broker, d in sorted(replicas.items()):
        print(p, broker, d)
"#,
        &[
            dump_file.to_str().unwrap(),
            topic,
            &snapshot_end.to_string(),
        ],
    );
    if !folded.status.success() || folded.stdout.is_empty() {
        let dumped = std::fs::read_to_string(&dump_file).unwrap_or_default();
        let tail: Vec<&str> = dumped.lines().rev().take(5).collect();
        return Err(format!(
            "no partitions of {topic} in {segments:?} ({} lines; last {tail:?}): {}",
            dumped.lines().count(),
            text(&folded)
        ));
    }
    Ok(String::from_utf8_lossy(&folded.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                (f[0].parse().unwrap(), f[1].parse().unwrap()),
                f[2].to_string(),
            )
        })
        .collect())
}

/// (partition, broker) → the absolute dir `kafka-log-dirs --describe` shows the topic's
/// (current, not future) replica in.
fn actual_dirs(bootstrap: &str, topic: &str) -> Result<BTreeMap<(i32, i32), String>, String> {
    let out = tool(
        "org.apache.kafka.tools.LogDirsCommand",
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--broker-list",
            "2,3",
            "--topic-list",
            topic,
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let Some(json) = stdout.lines().find(|l| l.starts_with('{')) else {
        return Err(text(&out));
    };
    let flat = run_inline(
        r#"
import json, sys
d = json.loads(sys.argv[1])
for b in d["brokers"]:
    for ld in b["logDirs"]:
        for p in ld["partitions"]:
            if not p["isFuture"]:
                print(p["partition"].rsplit("-", 1)[1], b["broker"], ld["logDir"])
"#,
        &[json],
    );
    if !flat.status.success() {
        return Err(text(&flat));
    }
    Ok(String::from_utf8_lossy(&flat.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.splitn(3, ' ').collect();
            (
                (f[0].parse().unwrap(), f[1].parse().unwrap()),
                f[2].to_string(),
            )
        })
        .collect())
}

/// Waits until the metadata names, for every replica of the topic, the id of the dir the
/// replica really is in, and `also` holds of where they are; returns where they are.
#[allow(clippy::too_many_arguments)]
fn wait_metadata_matches_disk(
    root: &Path,
    controller: &Node,
    bootstrap: &str,
    (topic, partitions): (&str, i32),
    ids: &BTreeMap<String, String>,
    also: impl Fn(&BTreeMap<(i32, i32), String>) -> bool,
    what: &str,
    logs: impl Fn() -> String,
) -> BTreeMap<(i32, i32), String> {
    eventually(what, Duration::from_secs(90), logs, || {
        let actual = actual_dirs(bootstrap, topic)?;
        if actual.len() != 2 * partitions as usize || !also(&actual) {
            return Err(format!("kafka-log-dirs shows {actual:?}"));
        }
        let metadata = metadata_directories(root, controller, topic)?;
        let expected: BTreeMap<(i32, i32), String> = actual
            .iter()
            .map(|(k, dir)| (*k, ids.get(dir).cloned().unwrap_or_default()))
            .collect();
        if metadata == expected {
            Ok(actual)
        } else {
            Err(format!(
                "metadata {metadata:?}\nreplicas on disk {actual:?}\ndir ids {ids:?}"
            ))
        }
    })
}

#[test]
fn replicas_directories_reach_the_metadata_and_follow_a_move() {
    common::python::python();
    let root = tempfile::tempdir().unwrap();
    let (controllers, brokers) = cluster(root.path(), 3, &[]);
    let bootstrap = addresses(&brokers);
    let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
    common::python::wait_until_brokers_listed(&bootstrap, 2, logs);
    let ids = directory_ids(&brokers, 3);
    assert_eq!(ids.len(), 6, "{ids:?}");

    let partitions = PARTITIONS.to_string();
    let created = tool(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--create",
            "--topic",
            TOPIC,
            "--partitions",
            &partitions,
            "--replication-factor",
            "2",
        ],
    );
    assert!(created.status.success(), "{}\n{}", text(&created), logs());

    // Each replica's real directory replaces UNASSIGNED in the metadata.
    let placed = wait_metadata_matches_disk(
        root.path(),
        &controllers[0],
        &bootstrap,
        (TOPIC, PARTITIONS),
        &ids,
        |_| true,
        "every replica's directory in the metadata",
        logs,
    );
    // (Matching the disk, no directory is UNASSIGNED any more.)
    assert!(ids.values().all(|id| id != UNASSIGNED));

    // Kafka's kafka-reassign-partitions moves broker 2's replica of partition 0 to another
    // of its dirs (same replicas, a `log_dirs` entry); the metadata follows the replica.
    let node2 = brokers.iter().find(|b| b.id == 2).unwrap();
    let from = placed[&(0, 2)].clone();
    let to = dirs_of(node2, 3)
        .iter()
        .map(|d| abs(d))
        .find(|d| *d != from)
        .unwrap();
    let replicas: Vec<i32> = placed
        .keys()
        .filter(|(p, _)| *p == 0)
        .map(|(_, b)| *b)
        .collect();
    let log_dirs: Vec<String> = replicas
        .iter()
        .map(|b| {
            if *b == 2 {
                format!("\"{to}\"")
            } else {
                "\"any\"".to_string()
            }
        })
        .collect();
    let plan = format!(
        r#"{{"version":1,"partitions":[{{"topic":"{TOPIC}","partition":0,"replicas":[{}],"log_dirs":[{}]}}]}}"#,
        replicas
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(","),
        log_dirs.join(","),
    );
    let plan_file = root.path().join("plan.json");
    std::fs::write(&plan_file, &plan).unwrap();
    let executed = tool(
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--execute",
            "--reassignment-json-file",
            plan_file.to_str().unwrap(),
        ],
    );
    assert!(
        executed.status.success(),
        "{plan}\n{}\n{}",
        text(&executed),
        logs()
    );
    let moved = wait_metadata_matches_disk(
        root.path(),
        &controllers[0],
        &bootstrap,
        (TOPIC, PARTITIONS),
        &ids,
        |actual| actual.get(&(0, 2)) == Some(&to),
        "the moved replica in its new dir and the metadata naming it",
        logs,
    );
    assert_eq!(moved[&(0, 2)], to);
}

/// The topic of the failed-dir test.
const FAILING: &str = "failing";
/// Its partitions: replicas on brokers 2 and 3, leaders alternating.
const FAILING_PARTITIONS: i32 = 6;

/// Each partition of `topic` as Kafka 4.4.0's `kafka-topics --describe` prints it:
/// partition → (leader, ISR sorted).
fn described(bootstrap: &str, topic: &str) -> Result<BTreeMap<i32, (i32, Vec<i32>)>, String> {
    let out = tool(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--topic",
            topic,
        ],
    );
    if !out.status.success() {
        return Err(text(&out));
    }
    let mut partitions = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let fields: BTreeMap<&str, &str> = line
            .split('\t')
            .filter_map(|f| f.split_once(": "))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect();
        let (Some(p), Some(leader), Some(isr)) = (
            fields.get("Partition"),
            fields.get("Leader"),
            fields.get("Isr"),
        ) else {
            continue;
        };
        let mut isr: Vec<i32> = isr.split(',').filter_map(|b| b.parse().ok()).collect();
        isr.sort();
        partitions.insert(
            p.parse().map_err(|_| line.to_string())?,
            (leader.parse().unwrap_or(-1), isr),
        );
    }
    Ok(partitions)
}

/// Broker `broker`'s log dirs as `kafka-log-dirs --describe` shows them: absolute dir →
/// (error, partitions of `topic` in it).
fn log_dir_errors(
    bootstrap: &str,
    broker: i32,
    topic: &str,
) -> Result<BTreeMap<String, (String, usize)>, String> {
    let json = common::kafka_jars::log_dirs_json(bootstrap, &broker.to_string())?;
    let flat = run_inline(
        r#"
import json, sys
d = json.loads(sys.argv[1])
for b in d["brokers"]:
    for ld in b["logDirs"]:
        n = sum(1 for p in ld["partitions"] if p["partition"].rsplit("-", 1)[0] == sys.argv[2])
        print(ld["error"], n, ld["logDir"])  # error None when the dir is fine
"#,
        &[&json, topic],
    );
    if !flat.status.success() {
        return Err(text(&flat));
    }
    Ok(String::from_utf8_lossy(&flat.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.splitn(3, ' ').collect();
            (f[2].to_string(), (f[0].to_string(), f[1].parse().unwrap()))
        })
        .collect())
}

/// KIP-858 on a failed log dir: one of broker 2's two dirs fails under a stock producer
/// (confluent-kafka, acks=all, idempotent). The broker takes the dir offline on the first
/// I/O error, stops serving its replicas and reports it in its heartbeats' OfflineLogDirs;
/// the controller moves leadership and ISR off those replicas. Checked as an operator
/// would, with Kafka 4.4.0's `kafka-log-dirs` (the dir answers KafkaStorageException) and
/// `kafka-topics --describe` (the failed dir's partitions led by broker 3 alone, the other
/// dir's still served by broker 2); the producer goes on, and every acknowledged record
/// is read back.
#[test]
fn a_failed_log_dir_moves_its_replicas_off_and_nothing_acknowledged_is_lost() {
    common::python::python();
    let root = tempfile::tempdir().unwrap();
    // A follower whose dir failed stops fetching; the leaders of its partitions wait for
    // it (acks=all) until it is no longer caught up: replica.lag.time.max.ms, shorter here
    // than Kafka's 30 s default so the test waits less.
    let (controllers, mut brokers) = cluster(root.path(), 2, &["replica.lag.time.max.ms=5000"]);
    let bootstrap = addresses(&brokers);
    let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
    common::python::wait_until_brokers_listed(&bootstrap, 2, logs);
    let ids = directory_ids(&brokers, 2);

    // segment.ms: the producer's appends roll segments every second, so the failed dir's
    // next roll fails under the producer (the HW checkpoint would fail too, within
    // replica.high.watermark.checkpoint.interval.ms).
    let assignment = (0..FAILING_PARTITIONS)
        .map(|p| if p % 2 == 0 { "2:3" } else { "3:2" })
        .collect::<Vec<_>>()
        .join(",");
    let created = tool(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--create",
            "--topic",
            FAILING,
            "--replica-assignment",
            &assignment,
            "--config",
            "segment.ms=1000",
        ],
    );
    assert!(created.status.success(), "{}\n{}", text(&created), logs());
    // The controller knows each replica's dir (it moves leadership off a failed dir's
    // replicas by it).
    let placed = wait_metadata_matches_disk(
        root.path(),
        &controllers[0],
        &bootstrap,
        (FAILING, FAILING_PARTITIONS),
        &ids,
        |_| true,
        "every replica's directory in the metadata",
        logs,
    );
    let node2 = brokers.iter().find(|b| b.id == 2).unwrap();
    // The second dir: the first holds the metadata log, whose failure stops the broker.
    let [good, failing] = [0, 1].map(|i| dirs_of(node2, 2)[i].clone());
    let on_2_in = |dir: &Path| -> Vec<i32> {
        placed
            .iter()
            .filter(|((_, b), d)| *b == 2 && **d == abs(dir))
            .map(|((p, _), _)| *p)
            .collect()
    };
    let (in_good, in_failing) = (on_2_in(&good), on_2_in(&failing));
    assert!(
        !in_good.is_empty() && !in_failing.is_empty(),
        "broker 2 placed a replica in each dir: {placed:?}"
    );

    let stop_file = root.path().join("stop-producer");
    let stop_arg = stop_file.to_str().unwrap().to_string();
    let partitions = FAILING_PARTITIONS.to_string();
    let mut producer = Script::spawn(
        root.path(),
        "idempotent_failover.py",
        &[
            "--bootstrap",
            &bootstrap,
            "--topic",
            FAILING,
            "--partitions",
            &partitions,
            "--replication-factor",
            "2",
            "--min-insync-replicas",
            "1",
            "--stop-file",
            &stop_arg,
            "--progress-every",
            "500",
        ],
    );
    producer.wait_line(120, "waiting for the producer to start", |l| l == "started");
    producer.wait_acked(2_000, 120);

    // The disk goes away. As root, `chmod 000` stops nothing (CAP_DAC_OVERRIDE) and
    // mounting a small tmpfs to fill needs CAP_SYS_ADMIN, which a test machine need not
    // grant; renaming the dir away makes every file the broker creates or opens in it by
    // path fail with ENOENT (the next segment roll, the offset checkpoints), as on a disk
    // that is gone, while files already open keep taking writes as a dying disk's page
    // cache would.
    let gone = failing.with_extension("gone");
    std::fs::rename(&failing, &gone).unwrap();

    let moved = eventually(
        "leadership and ISR off the failed dir's replicas, the other dir's still served",
        Duration::from_secs(90),
        logs,
        || {
            let d = described(&bootstrap, FAILING)?;
            let ok = in_failing.iter().all(|p| d.get(p) == Some(&(3, vec![3])))
                && in_good.iter().all(|p| {
                    let leader = if p % 2 == 0 { 2 } else { 3 };
                    d.get(p) == Some(&(leader, vec![2, 3]))
                });
            if ok {
                Ok(d)
            } else {
                Err(format!(
                    "kafka-topics shows {d:?}; on broker 2: {in_good:?} in {}, {in_failing:?} in {}",
                    good.display(),
                    failing.display()
                ))
            }
        },
    );
    eprintln!("after the failure: {moved:?}");
    let dirs = eventually(
        "kafka-log-dirs showing the failed dir's error",
        Duration::from_secs(30),
        logs,
        || {
            let dirs = log_dir_errors(&bootstrap, 2, FAILING)?;
            let failed = dirs.get(&abs(&failing));
            let healthy = dirs.get(&abs(&good));
            if failed
                .is_some_and(|(e, _)| e == "org.apache.kafka.common.errors.KafkaStorageException")
                && healthy == Some(&("None".to_string(), in_good.len()))
            {
                Ok(dirs)
            } else {
                Err(format!("kafka-log-dirs shows {dirs:?}"))
            }
        },
    );
    eprintln!("broker 2's log dirs: {dirs:?}");

    // The producer goes on (the failed dir's partitions now on broker 3), and broker 2
    // still runs: one dir of two failed, not its metadata dir.
    let acked = producer.acked_so_far();
    producer.wait_acked(acked + 2_000, 120);
    std::fs::write(&stop_file, "").unwrap();
    let summary = producer.finish(300, logs);
    eprintln!("{summary}");
    let node2 = brokers.iter_mut().find(|b| b.id == 2).unwrap();
    assert!(
        node2.child.as_mut().unwrap().try_wait().unwrap().is_none(),
        "broker 2 stopped:\n{}",
        node2.logs()
    );
}

/// `log.dir.failure.timeout.ms` (KIP-858, Kafka's `OfflineDirBrokerFailureEvent`): a log dir
/// fails while no controller can be told (the only one killed -9). The broker takes the dir
/// offline and tries to report it in its heartbeats; when none is answered within the
/// timeout (2 s here) it stops, since the controllers would go on sending clients to the
/// failed replicas.
#[test]
fn a_failed_log_dir_no_controller_hears_of_stops_the_broker_after_the_timeout() {
    common::python::python();
    let root = tempfile::tempdir().unwrap();
    let (mut controllers, mut brokers) =
        cluster(root.path(), 2, &["log.dir.failure.timeout.ms=2000"]);
    let bootstrap = addresses(&brokers);
    let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
    common::python::wait_until_brokers_listed(&bootstrap, 2, logs);
    // One partition on broker 2, in its second dir: the first is cordoned (KIP-1066) before
    // the topic is created, so the broker places the replica in the other. A segment rolls
    // at the first append a second after the last roll.
    let node2 = brokers.iter().find(|b| b.id == 2).unwrap();
    let first = abs(&dirs_of(node2, 2)[0]);
    let cordoned = tool(
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--entity-type",
            "brokers",
            "--entity-name",
            "2",
            "--alter",
            "--add-config",
            &format!("cordoned.log.dirs={first}"),
        ],
    );
    assert!(cordoned.status.success(), "{}\n{}", text(&cordoned), logs());
    let created = tool(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--create",
            "--topic",
            "unheard",
            "--replica-assignment",
            "2",
            "--config",
            "segment.ms=1000",
        ],
    );
    assert!(created.status.success(), "{}\n{}", text(&created), logs());
    let failing = dirs_of(node2, 2)[1].clone();
    let placed = eventually(
        "the partition on broker 2's disk",
        Duration::from_secs(60),
        logs,
        || {
            let actual = actual_dirs(&bootstrap, "unheard")?;
            (actual.len() == 1)
                .then_some(actual.clone())
                .ok_or(format!("{actual:?}"))
        },
    );
    let partition = placed
        .iter()
        .find(|(_, d)| **d == abs(&failing))
        .map(|((p, _), _)| *p)
        .unwrap_or_else(|| panic!("no partition in {}: {placed:?}", failing.display()));

    controllers[0].kill9();
    std::fs::rename(&failing, failing.with_extension("gone")).unwrap();
    // Appends to the partition in the failed dir (acks=1, leader only) until one rolls its
    // segment and fails: the broker then has two seconds to tell a controller.
    let node2 = brokers.iter_mut().find(|b| b.id == 2).unwrap();
    let broker2 = node2.address();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = node2.child.as_mut().unwrap().try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "broker 2 still runs:\n{}",
            node2.logs()
        );
        let records = vec![("k".to_string(), "v".to_string())];
        common::kcat::produce(
            &broker2,
            "unheard",
            partition,
            &records,
            &[
                "-X",
                "request.required.acks=1",
                "-X",
                "message.timeout.ms=2000",
            ],
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let said = node2.logs();
    assert!(!status.success(), "{status}\n{said}");
    assert!(
        said.contains("within log.dir.failure.timeout.ms (2000 ms)"),
        "{said}"
    );
}
