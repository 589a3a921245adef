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
use common::{addresses, eventually, format, formatted_quorum, voters, write_broker_config, Node};

const TOPIC: &str = "jbod";
const PARTITIONS: i32 = 6;
/// Kafka's `DirectoryId.UNASSIGNED` as its JSON shows it.
const UNASSIGNED: &str = "AAAAAAAAAAAAAAAAAAAAAA";

/// A broker's three log dirs.
fn dirs_of(node: &Node) -> [PathBuf; 3] {
    [
        node.dir.join("data"),
        node.dir.join("data2"),
        node.dir.join("data3"),
    ]
}

fn abs(p: &Path) -> String {
    std::path::absolute(p).unwrap().display().to_string()
}

/// One controller and brokers 2 and 3, each broker with three log dirs, started.
fn cluster(root: &Path) -> (Vec<Node>, Vec<Node>) {
    let (cluster_id, mut controllers) = formatted_quorum(root, 1);
    let voters = voters(&controllers);
    let mut brokers: Vec<Node> = (2..=3).map(|id| Node::broker(root, id)).collect();
    for node in &brokers {
        std::fs::create_dir_all(&node.dir).unwrap();
        write_broker_config(node, &voters);
        let [a, b, c] = dirs_of(node);
        let config = std::fs::read_to_string(node.config_path()).unwrap();
        let config = config.replace(
            &format!("log.dirs={}\n", a.display()),
            &format!("log.dirs={},{},{}\n", a.display(), b.display(), c.display()),
        );
        std::fs::write(node.config_path(), config).unwrap();
        format(node, &cluster_id);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    (controllers, brokers)
}

/// Each log dir's `directory.id` (its `meta.properties`), by absolute path.
fn directory_ids(brokers: &[Node]) -> BTreeMap<String, String> {
    let mut ids = BTreeMap::new();
    for node in brokers {
        for dir in dirs_of(node) {
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
            TOPIC,
            &snapshot_end.to_string(),
        ],
    );
    if !folded.status.success() || folded.stdout.is_empty() {
        let dumped = std::fs::read_to_string(&dump_file).unwrap_or_default();
        let tail: Vec<&str> = dumped.lines().rev().take(5).collect();
        return Err(format!(
            "no partitions of {TOPIC} in {segments:?} ({} lines; last {tail:?}): {}",
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
fn actual_dirs(bootstrap: &str) -> Result<BTreeMap<(i32, i32), String>, String> {
    let out = tool(
        "org.apache.kafka.tools.LogDirsCommand",
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--broker-list",
            "2,3",
            "--topic-list",
            TOPIC,
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
fn wait_metadata_matches_disk(
    root: &Path,
    controller: &Node,
    bootstrap: &str,
    ids: &BTreeMap<String, String>,
    also: impl Fn(&BTreeMap<(i32, i32), String>) -> bool,
    what: &str,
    logs: impl Fn() -> String,
) -> BTreeMap<(i32, i32), String> {
    eventually(what, Duration::from_secs(90), logs, || {
        let actual = actual_dirs(bootstrap)?;
        if actual.len() != 2 * PARTITIONS as usize || !also(&actual) {
            return Err(format!("kafka-log-dirs shows {actual:?}"));
        }
        let metadata = metadata_directories(root, controller)?;
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
    let (controllers, brokers) = cluster(root.path());
    let bootstrap = addresses(&brokers);
    let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
    common::python::wait_until_brokers_listed(&bootstrap, 2, logs);
    let ids = directory_ids(&brokers);
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
    let to = dirs_of(node2)
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
        &ids,
        |actual| actual.get(&(0, 2)) == Some(&to),
        "the moved replica in its new dir and the metadata naming it",
        logs,
    );
    assert_eq!(moved[&(0, 2)], to);
}
