//! KIP-858 JBOD directory assignment on real processes: one controller and two brokers with
//! three `log.dirs` each. Replicas of a topic created with Kafka 4.4.0's `kafka-topics`
//! start UNASSIGNED in the metadata (a broker with several dirs picks one); each broker's
//! `AssignmentsManager` then reports the directory with AssignReplicasToDirs, and the
//! controller records it. The metadata is read as a Kafka operator would, with Kafka's
//! `kafka-dump-log --cluster-metadata-decoder` over the controller's `__cluster_metadata`
//! log; where each replica really lives with Kafka's `kafka-log-dirs --describe`, and each
//! dir's id from its `meta.properties`. After Kafka's `kafka-reassign-partitions` moves a
//! replica to another dir (a `log_dirs` entry in the plan), the metadata follows it. Then
//! failing dirs, as Kafka handles them: one that fails under a producer (renamed away, or
//! a tmpfs that fills up), one broken while the broker is down, and the fatal cases (no
//! log dir left, the metadata log's dir), which stop the broker.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::jbod::{jbod_cluster, jbod_cluster_with, log_dirs_of, replica_dirs};
use common::kafka_jars::{output_text as text, run_tool as tool};
use common::python::run_inline;
use common::script::Script;
use common::{addresses, eventually, Node};

const TOPIC: &str = "jbod";
const PARTITIONS: i32 = 6;
/// Kafka's `DirectoryId.UNASSIGNED` as its JSON shows it.
const UNASSIGNED: &str = "AAAAAAAAAAAAAAAAAAAAAA";

fn abs(p: &Path) -> String {
    std::path::absolute(p).unwrap().display().to_string()
}

/// Each log dir's `directory.id` (its `meta.properties`), by absolute path.
fn directory_ids(brokers: &[Node], n_dirs: usize) -> BTreeMap<String, String> {
    let mut ids = BTreeMap::new();
    for node in brokers {
        for dir in log_dirs_of(node, n_dirs) {
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
        let actual = replica_dirs(bootstrap, "2,3", topic)?;
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
    let (controllers, brokers) = jbod_cluster(root.path(), 3, &[]);
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
    let to = log_dirs_of(node2, 3)
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

/// Kafka 4.4.0's `kafka-topics --create` of `topic` with `--replica-assignment
/// assignment` and `extra` arguments; asserts it succeeded.
fn create_topic(
    bootstrap: &str,
    topic: &str,
    assignment: &str,
    extra: &[&str],
    logs: impl Fn() -> String,
) {
    let mut args = vec![
        "--bootstrap-server",
        bootstrap,
        "--create",
        "--topic",
        topic,
        "--replica-assignment",
        assignment,
    ];
    args.extend_from_slice(extra);
    let created = tool("org.apache.kafka.tools.TopicCommand", &args);
    assert!(created.status.success(), "{}\n{}", text(&created), logs());
}

/// The stock producer (`idempotent_failover.py`: confluent-kafka, acks=all, idempotent)
/// writing to `topic` (RF 2, min ISR 1) until `stop_file` exists, started; `extra`
/// arguments too.
fn spawn_producer(
    root: &Path,
    bootstrap: &str,
    (topic, partitions): (&str, i32),
    stop_file: &Path,
    extra: &[&str],
) -> Script {
    let partitions = partitions.to_string();
    let mut args = vec![
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--partitions",
        &partitions,
        "--replication-factor",
        "2",
        "--min-insync-replicas",
        "1",
        "--stop-file",
        stop_file.to_str().unwrap(),
        "--progress-every",
        "500",
    ];
    args.extend_from_slice(extra);
    let mut producer = Script::spawn(root, "idempotent_failover.py", &args);
    producer.wait_line(120, "waiting for the producer to start", |l| l == "started");
    producer
}

/// Waits until `kafka-log-dirs` shows broker 2's `failed` dir with KafkaStorageException
/// and its `good` dir fine, holding `in_good` partitions of `topic`; what it shows.
fn wait_dir_offline(
    bootstrap: &str,
    topic: &str,
    (good, failed): (&Path, &Path),
    in_good: usize,
    logs: impl Fn() -> String,
) -> BTreeMap<String, (String, usize)> {
    eventually(
        "kafka-log-dirs showing the failed dir's error",
        Duration::from_secs(60),
        logs,
        || {
            let dirs = log_dir_errors(bootstrap, 2, topic)?;
            if dirs
                .get(&abs(failed))
                .is_some_and(|(e, _)| e == "org.apache.kafka.common.errors.KafkaStorageException")
                && dirs.get(&abs(good)) == Some(&("None".to_string(), in_good))
            {
                Ok(dirs)
            } else {
                Err(format!("kafka-log-dirs shows {dirs:?}"))
            }
        },
    )
}

/// Waits until `kafka-topics --describe` shows broker 2's replicas of `in_failed` (in its
/// failed dir) out: led by broker 3 alone; and those of `in_good` still in the ISR, led
/// by `good_leader(partition)` (any leader when None); what it shows.
fn wait_moved_off(
    bootstrap: &str,
    topic: &str,
    (in_failed, in_good): (&[i32], &[i32]),
    good_leader: impl Fn(i32) -> Option<i32>,
    logs: impl Fn() -> String,
) -> BTreeMap<i32, (i32, Vec<i32>)> {
    eventually(
        "leadership and ISR off the failed dir's replicas, the other dir's still served",
        Duration::from_secs(180),
        logs,
        || {
            let d = described(bootstrap, topic)?;
            let ok = in_failed.iter().all(|p| d.get(p) == Some(&(3, vec![3])))
                && in_good.iter().all(|p| {
                    d.get(p).is_some_and(|(leader, isr)| {
                        *isr == vec![2, 3] && good_leader(*p).is_none_or(|l| l == *leader)
                    })
                });
            ok.then_some(d.clone()).ok_or(format!(
                "kafka-topics shows {d:?}; broker 2's failed dir held {in_failed:?}"
            ))
        },
    )
}

/// The producer goes on for 2,000 more acknowledgements, stops and reads everything
/// back (`finish` checks it); broker 2 is still running.
fn finish_producer(
    mut producer: Script,
    stop_file: &Path,
    brokers: &mut [Node],
    controllers: &[Node],
) {
    let acked = producer.acked_so_far();
    producer.wait_acked(acked + 2_000, 120);
    std::fs::write(stop_file, "").unwrap();
    let logs = || common::all_logs(brokers) + &common::all_logs(controllers);
    eprintln!("{}", producer.finish(300, logs));
    let broker2 = broker_mut(brokers, 2);
    assert!(
        broker2
            .child
            .as_mut()
            .unwrap()
            .try_wait()
            .unwrap()
            .is_none(),
        "broker 2 stopped:\n{}",
        broker2.logs()
    );
}

/// Every record the producer acknowledged into `acked_file` is read back from `topic`, in
/// order (`idempotent_failover.py --verify`).
fn verify_acked(
    dir: &Path,
    acked_file: &Path,
    bootstrap: &str,
    topic: &str,
    logs: impl Fn() -> String,
) {
    let verify = Script::spawn(
        dir,
        "idempotent_failover.py",
        &[
            "--verify",
            acked_file.to_str().unwrap(),
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
        ],
    );
    eprintln!("{}", verify.finish(120, logs));
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
    let (controllers, mut brokers) =
        jbod_cluster(root.path(), 2, &["replica.lag.time.max.ms=5000"]);
    let bootstrap = addresses(&brokers);
    let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
    common::python::wait_until_brokers_listed(&bootstrap, 2, logs);

    // segment.ms: the producer's appends roll segments every second, so the failed dir's
    // next roll fails under the producer (the HW checkpoint would fail too, within
    // replica.high.watermark.checkpoint.interval.ms).
    let assignment = (0..FAILING_PARTITIONS)
        .map(|p| if p % 2 == 0 { "2:3" } else { "3:2" })
        .collect::<Vec<_>>()
        .join(",");
    create_topic(
        &bootstrap,
        FAILING,
        &assignment,
        &["--config", "segment.ms=1000"],
        logs,
    );
    // The controller knows each replica's dir (it moves leadership off a failed dir's
    // replicas by it). The second dir fails: the first holds the metadata log, whose
    // failure stops the broker.
    let (in_good, in_failing) = placed_on_broker_2(
        root.path(),
        &controllers[0],
        &brokers,
        (FAILING, FAILING_PARTITIONS),
        logs,
    );
    let node2 = brokers.iter().find(|b| b.id == 2).unwrap();
    let [good, failing] = [0, 1].map(|i| log_dirs_of(node2, 2)[i].clone());

    let stop_file = root.path().join("stop-producer");
    let mut producer = spawn_producer(
        root.path(),
        &bootstrap,
        (FAILING, FAILING_PARTITIONS),
        &stop_file,
        &[],
    );
    producer.wait_acked(2_000, 120);

    // The disk goes away. As root, `chmod 000` stops nothing (CAP_DAC_OVERRIDE); a disk
    // that fills up is the tmpfs test below. Renaming the dir away makes every file the
    // broker creates or opens in it by path fail with ENOENT (the next segment roll, the
    // offset checkpoints), as on a disk that is gone, while files already open keep taking
    // writes as a dying disk's page cache would.
    let gone = failing.with_extension("gone");
    std::fs::rename(&failing, &gone).unwrap();

    let moved = wait_moved_off(
        &bootstrap,
        FAILING,
        (&in_failing, &in_good),
        |p| Some(if p % 2 == 0 { 2 } else { 3 }),
        logs,
    );
    eprintln!("after the failure: {moved:?}");
    let dirs = wait_dir_offline(&bootstrap, FAILING, (&good, &failing), in_good.len(), logs);
    eprintln!("broker 2's log dirs: {dirs:?}");

    // The producer goes on (the failed dir's partitions now on broker 3), and broker 2
    // still runs: one dir of two failed, not its metadata dir.
    finish_producer(producer, &stop_file, &mut brokers, &controllers);
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
        jbod_cluster(root.path(), 2, &["log.dir.failure.timeout.ms=2000"]);
    let bootstrap = addresses(&brokers);
    let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
    common::python::wait_until_brokers_listed(&bootstrap, 2, logs);
    // One partition on broker 2, in its second dir: the first is cordoned (KIP-1066) before
    // the topic is created, so the broker places the replica in the other. A segment rolls
    // at the first append a second after the last roll.
    let node2 = brokers.iter().find(|b| b.id == 2).unwrap();
    let first = abs(&log_dirs_of(node2, 2)[0]);
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
    let failing = log_dirs_of(node2, 2)[1].clone();
    let placed = eventually(
        "the partition on broker 2's disk",
        Duration::from_secs(60),
        logs,
        || {
            let actual = replica_dirs(&bootstrap, "2,3", "unheard")?;
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

/// A tmpfs of `size` mounted at a dir (the tests run as root), unmounted when dropped, even
/// on a panic; declared before the nodes using it, so they are killed first.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mount -t tmpfs on {} (this test needs root): {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(dir.to_path_buf())
    }

    /// Grows (or shrinks) it in place, its files kept.
    fn resize(&self, size: &str) {
        let out = std::process::Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "remount {}: {}",
            self.0.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: a process still holding a file in it does not keep it mounted.
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// The topic of the disk-full test.
const FULL: &str = "full";
/// Its partitions: replicas on brokers 2 and 3, leaders alternating.
const FULL_PARTITIONS: i32 = 4;

/// A disk that fills up (Kafka's `UnifiedLog` append failing with an IOException, ENOSPC):
/// broker 2's second log dir is an 8 MiB tmpfs, and a stock acks=all idempotent producer
/// (confluent-kafka) writes until it is full. As Kafka 4.4 does, the dir goes offline, its
/// replicas stop, the controller moves leadership and ISR off them (`kafka-topics
/// --describe`, `kafka-log-dirs` answering KafkaStorageException for it), broker 2 keeps
/// serving its other dir, and the producer goes on; every acknowledged record is read back
/// at its offset, in order. Then the tmpfs grows and broker 2 restarts: the dir is online
/// again (its segments' torn tails cut by recovery), its replicas catch up and rejoin the
/// ISR, and every acknowledged record is still there.
#[test]
fn a_full_log_dir_goes_offline_and_comes_back_after_space_is_freed() {
    common::python::python();
    let root = tempfile::tempdir().unwrap();
    let mut mounts = Vec::new();
    let (controllers, mut brokers) =
        jbod_cluster_with(root.path(), 2, &["replica.lag.time.max.ms=5000"], |node| {
            if node.id == 2 {
                mounts.push(Tmpfs::mount(&log_dirs_of(node, 2)[1], "8m"));
            }
        });
    let tmpfs = &mounts[0];
    let bootstrap = addresses(&brokers);
    let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
    common::python::wait_until_brokers_listed(&bootstrap, 2, logs);

    // Broker 2 leads every partition: the producer's own appends hit the full disk.
    let assignment = vec!["2:3"; FULL_PARTITIONS as usize].join(",");
    create_topic(&bootstrap, FULL, &assignment, &[], logs);
    let (in_good, in_full) = placed_on_broker_2(
        root.path(),
        &controllers[0],
        &brokers,
        (FULL, FULL_PARTITIONS),
        logs,
    );
    let node2 = brokers.iter().find(|b| b.id == 2).unwrap();
    let [good, full] = [0, 1].map(|i| log_dirs_of(node2, 2)[i].clone());

    let stop_file = root.path().join("stop-producer");
    let acked_file = root.path().join("acked.json");
    let producer = spawn_producer(
        root.path(),
        &bootstrap,
        (FULL, FULL_PARTITIONS),
        &stop_file,
        &[
            "--acked-file",
            acked_file.to_str().unwrap(),
            "--value-bytes",
            "1000",
        ],
    );

    // 8 MiB of 1 KB values spread over four partitions, half of them with a replica on the
    // tmpfs: it is full after some 16,000 records.
    let moved = wait_moved_off(&bootstrap, FULL, (&in_full, &in_good), |_| Some(2), logs);
    eprintln!("after the disk filled: {moved:?}");
    let said = node2.logs();
    assert!(said.contains("No space left on device"), "{said}");
    let dirs = wait_dir_offline(&bootstrap, FULL, (&good, &full), in_good.len(), logs);
    eprintln!("broker 2's log dirs: {dirs:?}");

    // The producer goes on, broker 2 still runs, and everything acknowledged is read back.
    finish_producer(producer, &stop_file, &mut brokers, &controllers);
    // Space freed; broker 2 restarted (a clean shutdown: its failed dir gets no marker, so
    // its logs there are recovered).
    common::stop_gracefully(std::slice::from_mut(broker_mut(&mut brokers, 2)));
    tmpfs.resize("2g");
    broker_mut(&mut brokers, 2).start();
    let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
    let healed = eventually(
        "every replica back in the ISR, the dir online again",
        Duration::from_secs(120),
        logs,
        || {
            let d = described(&bootstrap, FULL)?;
            let dirs = log_dir_errors(&bootstrap, 2, FULL)?;
            let ok = (0..FULL_PARTITIONS).all(|p| {
                d.get(&p)
                    .is_some_and(|(l, isr)| *l >= 0 && *isr == vec![2, 3])
            }) && dirs.get(&abs(&full)) == Some(&("None".to_string(), in_full.len()))
                && dirs.get(&abs(&good)) == Some(&("None".to_string(), in_good.len()));
            if ok {
                Ok((d, dirs))
            } else {
                Err(format!("kafka-topics shows {d:?}, kafka-log-dirs {dirs:?}"))
            }
        },
    );
    eprintln!("after the restart: {healed:?}");
    let said = brokers.iter().find(|b| b.id == 2).unwrap().logs();
    assert!(!said.contains("panicked"), "{said}");
    // Broker 2 leads again (Kafka's kafka-leader-election, preferred replicas), so what
    // is read back below is read from the replicas that were on the full disk.
    let elected = tool(
        "org.apache.kafka.tools.LeaderElectionCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--election-type",
            "preferred",
            "--all-topic-partitions",
        ],
    );
    eventually(
        "broker 2 leading every partition again",
        Duration::from_secs(60),
        logs,
        || {
            let d = described(&bootstrap, FULL)?;
            (0..FULL_PARTITIONS)
                .all(|p| d.get(&p) == Some(&(2, vec![2, 3])))
                .then_some(())
                .ok_or(format!("kafka-topics shows {d:?}; {}", text(&elected)))
        },
    );
    verify_acked(root.path(), &acked_file, &bootstrap, FULL, logs);
}

/// Broker `id`'s node.
fn broker_mut(brokers: &mut [Node], id: i32) -> &mut Node {
    brokers.iter_mut().find(|b| b.id == id).unwrap()
}

/// The partitions of `topic` broker 2 holds in each of its two dirs, once the metadata
/// names every replica's dir: (in the first, in the second).
fn placed_on_broker_2(
    root: &Path,
    controller: &Node,
    brokers: &[Node],
    (topic, partitions): (&str, i32),
    logs: impl Fn() -> String,
) -> (Vec<i32>, Vec<i32>) {
    let bootstrap = addresses(brokers);
    let ids = directory_ids(brokers, 2);
    let placed = wait_metadata_matches_disk(
        root,
        controller,
        &bootstrap,
        (topic, partitions),
        &ids,
        |_| true,
        "every replica's directory in the metadata",
        logs,
    );
    let node2 = brokers.iter().find(|b| b.id == 2).unwrap();
    let [first, second] = [0, 1].map(|i| abs(&log_dirs_of(node2, 2)[i]));
    let in_dir = |dir: &str| -> Vec<i32> {
        placed
            .iter()
            .filter(|((_, b), d)| *b == 2 && *d == dir)
            .map(|((p, _), _)| *p)
            .collect()
    };
    let (a, b) = (in_dir(&first), in_dir(&second));
    assert!(
        !a.is_empty() && !b.is_empty(),
        "broker 2 placed a replica in each dir: {placed:?}"
    );
    (a, b)
}

/// Kafka's `createAndValidateLogDirs` on a broker restarted with a broken log dir: each
/// of three breakages of broker 2's second dir — the path no longer a directory, its
/// `meta.properties` answering an I/O error (EISDIR: a directory in its place), and a
/// `meta.properties` saying nothing usable — leaves broker 2 starting with that dir
/// offline, as Kafka 4.4 does with its `errorLogDirs`, instead of refusing to start or
/// creating the dir's replicas afresh elsewhere: it registers without the dir, so the
/// controller leaves its replicas out of the ISR (`kafka-topics --describe`),
/// `kafka-log-dirs` answers KafkaStorageException for it, its other dir is served, the
/// offline dir is left as it was, and nothing acknowledged before is lost. Repaired and
/// restarted, the broker's replicas there rejoin the ISR.
#[test]
fn a_broker_starts_with_a_broken_log_dir_offline() {
    common::python::python();
    let root = tempfile::tempdir().unwrap();
    let (controllers, mut brokers) = jbod_cluster(root.path(), 2, &[]);
    let bootstrap = addresses(&brokers);
    let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
    common::python::wait_until_brokers_listed(&bootstrap, 2, logs);
    const TOPIC: &str = "broken";
    create_topic(&bootstrap, TOPIC, "2:3,3:2,2:3,3:2", &[], logs);
    let (in_good, in_broken) =
        placed_on_broker_2(root.path(), &controllers[0], &brokers, (TOPIC, 4), logs);
    let acked_file = root.path().join("acked.json");
    let producer = spawn_producer(
        root.path(),
        &bootstrap,
        (TOPIC, 4),
        &root.path().join("never"),
        &[
            "--max-records",
            "2000",
            "--acked-file",
            acked_file.to_str().unwrap(),
        ],
    );
    eprintln!("{}", producer.finish(180, logs));
    let node2 = brokers.iter().find(|b| b.id == 2).unwrap();
    let [good, broken] = [0, 1].map(|i| log_dirs_of(node2, 2)[i].clone());
    let aside = broken.with_extension("aside");
    let meta = broken.join("meta.properties");
    let breakages: [(&str, &dyn Fn()); 3] = [
        ("not a directory", &|| {
            std::fs::rename(&broken, &aside).unwrap();
            std::fs::write(&broken, "not a directory").unwrap();
        }),
        ("an I/O error on meta.properties", &|| {
            std::fs::rename(&meta, broken.join("meta.properties.aside")).unwrap();
            std::fs::create_dir(&meta).unwrap();
        }),
        ("a meta.properties saying nothing usable", &|| {
            std::fs::rename(&meta, broken.join("meta.properties.aside")).unwrap();
            std::fs::write(&meta, "version=1\n").unwrap();
        }),
    ];
    let repair = |how: &str| {
        if how == "not a directory" {
            std::fs::remove_file(&broken).unwrap();
            std::fs::rename(&aside, &broken).unwrap();
        } else if meta.is_dir() {
            std::fs::remove_dir(&meta).unwrap();
            std::fs::rename(broken.join("meta.properties.aside"), &meta).unwrap();
        } else {
            std::fs::rename(broken.join("meta.properties.aside"), &meta).unwrap();
        }
    };
    let all_in_sync = |brokers: &[Node], what: &str| {
        let logs = || common::all_logs(brokers) + &common::all_logs(&controllers);
        eventually(what, Duration::from_secs(120), logs, || {
            let d = described(&bootstrap, TOPIC)?;
            (0..4)
                .all(|p| {
                    d.get(&p)
                        .is_some_and(|(l, isr)| *l >= 0 && *isr == vec![2, 3])
                })
                .then_some(())
                .ok_or(format!("kafka-topics shows {d:?}"))
        })
    };
    for (how, breaks) in breakages {
        eprintln!("broker 2's second log dir: {how}");
        common::stop_gracefully(std::slice::from_mut(broker_mut(&mut brokers, 2)));
        breaks();
        broker_mut(&mut brokers, 2).start();
        let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
        let state = wait_moved_off(&bootstrap, TOPIC, (&in_broken, &in_good), |_| None, logs);
        let dirs = wait_dir_offline(&bootstrap, TOPIC, (&good, &broken), in_good.len(), logs);
        eprintln!("{how}: {state:?} {dirs:?}");
        // Nothing of the offline dir's replicas was created afresh in the good dir.
        for p in &in_broken {
            let dir = good.join(format!("{TOPIC}-{p}"));
            assert!(!dir.exists(), "{} created", dir.display());
        }
        verify_acked(root.path(), &acked_file, &bootstrap, TOPIC, logs);
        let node2 = broker_mut(&mut brokers, 2);
        assert!(
            node2.child.as_mut().unwrap().try_wait().unwrap().is_none(),
            "broker 2 stopped:\n{}",
            node2.logs()
        );

        // Repaired and restarted: its replicas there rejoin the ISR.
        common::stop_gracefully(std::slice::from_mut(broker_mut(&mut brokers, 2)));
        repair(how);
        broker_mut(&mut brokers, 2).start();
        all_in_sync(
            &brokers,
            &format!("the dir back after {how}: every replica in the ISR"),
        );
    }
}

/// Kafka halts a broker whose log dirs are all offline, or whose metadata log dir fails,
/// at start (`MetaPropertiesEnsemble.verify`, `createAndValidateLogDirs`) and at run time
/// (`LogManager.handleLogDirFailure`, `ReplicaManager.handleLogDirFailure`): kraftd's
/// process exits with status 1 and one line naming the dirs. Broker 2 keeps its metadata
/// log in `data` and its one log dir is `data2`; broker 3 has both as log dirs, the
/// metadata log in `data`. At run time (the dir renamed away under a producer, its next
/// segment roll failing): broker 2's only log dir, and broker 3's metadata log dir. At
/// start: broker 2 with its only log dir not a directory; broker 3 with its metadata log
/// dir's `meta.properties` unreadable, then with both dirs' unreadable.
#[test]
fn a_broker_with_no_log_dir_left_or_its_metadata_dir_failed_exits() {
    common::python::python();
    let root = tempfile::tempdir().unwrap();
    let (controllers, mut brokers) = jbod_cluster_with(root.path(), 2, &[], |node| {
        if node.id == 2 {
            let [data, data2] = [0, 1].map(|i| log_dirs_of(node, 2)[i].display().to_string());
            let config = std::fs::read_to_string(node.config_path()).unwrap();
            let config = config.replace(
                &format!("log.dirs={data},{data2}\n"),
                &format!("log.dirs={data2}\nmetadata.log.dir={data}\n"),
            );
            std::fs::write(node.config_path(), config).unwrap();
        }
    });
    let bootstrap = addresses(&brokers);
    let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
    common::python::wait_until_brokers_listed(&bootstrap, 2, logs);
    // One partition on broker 2 (in data2, its only log dir), two on broker 3 (one in each
    // dir); segments roll at the first append a second after the last roll.
    for (topic, assignment) in [("only2", "2"), ("only3", "3,3")] {
        create_topic(
            &bootstrap,
            topic,
            assignment,
            &["--config", "segment.ms=1000"],
            logs,
        );
    }
    let placed3 = eventually(
        "broker 3's partitions on its disks",
        Duration::from_secs(60),
        logs,
        || {
            let actual = replica_dirs(&bootstrap, "2,3", "only3")?;
            (actual.len() == 2)
                .then_some(actual.clone())
                .ok_or(format!("{actual:?}"))
        },
    );
    let node3 = brokers.iter().find(|b| b.id == 3).unwrap();
    let metadata_dir3 = log_dirs_of(node3, 2)[0].clone();
    let in_metadata_dir3 = placed3
        .iter()
        .find(|(_, d)| **d == abs(&metadata_dir3))
        .map(|((p, _), _)| *p)
        .unwrap_or_else(|| panic!("no partition in {}: {placed3:?}", metadata_dir3.display()));

    /// Renames `dir` away and appends to `topic`-`partition` (acks=1) on `node` until the
    /// process exits; its status and logs.
    fn fail_dir_until_exit(node: &mut Node, dir: &Path, topic: &str, partition: i32) -> String {
        std::fs::rename(dir, dir.with_extension("gone")).unwrap();
        let address = node.address();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = node.child.as_mut().unwrap().try_wait().unwrap() {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "broker {} still runs:\n{}",
                node.id,
                node.logs()
            );
            let records = vec![("k".to_string(), "v".to_string())];
            common::kcat::produce(
                &address,
                topic,
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
        std::fs::rename(dir.with_extension("gone"), dir).unwrap();
        assert_eq!(status.code(), Some(1), "{status}\n{}", node.logs());
        node.child = None;
        node.logs()
    }

    // At run time: broker 2's only log dir.
    let node2 = broker_mut(&mut brokers, 2);
    let data2 = log_dirs_of(node2, 2)[1].clone();
    let said = fail_dir_until_exit(node2, &data2, "only2", 0);
    let line = format!(
        "Shutdown broker because all log dirs in {} have failed",
        data2.display()
    );
    assert!(said.contains(&line), "{said}");
    // At run time: broker 3's metadata log dir.
    let node3 = broker_mut(&mut brokers, 3);
    let said = fail_dir_until_exit(node3, &metadata_dir3, "only3", in_metadata_dir3);
    let line = format!(
        "Shutdown broker because the metadata log dir {} has failed",
        metadata_dir3.display()
    );
    assert!(said.contains(&line), "{said}");

    /// Starts `node` and waits for it to exit: its status must be 1 and its error line
    /// (`Error: ...`, then a backtrace when RUST_BACKTRACE asks for one) hold `expected`.
    fn start_expecting_exit(node: &mut Node, expected: &str) {
        node.start();
        let mut child = node.child.take().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("broker {} still runs:\n{}", node.id, node.logs());
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let said = std::fs::read_to_string(node.log_path()).unwrap();
        let error = said.lines().find(|l| l.starts_with("Error: "));
        assert_eq!(status.code(), Some(1), "{status}\n{said}");
        assert!(
            error.is_some_and(|l| l.contains(expected)),
            "error line {error:?}, expected {expected:?}\n{said}"
        );
    }

    // At start: broker 2's only log dir not a directory.
    let node2 = broker_mut(&mut brokers, 2);
    std::fs::rename(&data2, data2.with_extension("aside")).unwrap();
    std::fs::write(&data2, "not a directory").unwrap();
    start_expecting_exit(
        node2,
        &format!(
            "Shutdown broker because none of the specified log dirs from {} can be created or validated",
            data2.display()
        ),
    );
    // At start: broker 3's metadata dir's meta.properties unreadable (a directory in its
    // place), then its other dir's too.
    let node3 = broker_mut(&mut brokers, 3);
    let [data, data2] = [0, 1].map(|i| log_dirs_of(node3, 2)[i].clone());
    for dir in [&data, &data2] {
        std::fs::rename(dir.join("meta.properties"), dir.join("meta.aside")).unwrap();
        std::fs::create_dir(dir.join("meta.properties")).unwrap();
        let expected = if *dir == data {
            format!(
                "Encountered I/O error in metadata log directory {}",
                data.display()
            )
        } else {
            "No readable meta.properties files found in log directories".to_string()
        };
        start_expecting_exit(node3, &expected);
    }
}
