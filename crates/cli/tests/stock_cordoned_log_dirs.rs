//! KIP-1066 cordoned log dirs on real processes, driven by Kafka 4.4.0's tools: one
//! controller and brokers 2 and 3 with two `log.dirs` each, at Kafka's default metadata
//! version (4.4-IV2). `kafka-configs` cordons one of broker 2's dirs at runtime (a path
//! that is not one of its log dirs is refused with Kafka's message); Kafka's Admin
//! `describeLogDirs` (DescribeLogDirs v5, what `kafka-log-dirs` calls) reports it cordoned;
//! new replicas on broker 2 go to its other dir only (`kafka-log-dirs --describe`);
//! `kafka-reassign-partitions` moving a replica into the cordoned dir is refused by the
//! broker. With every dir of broker 2 cordoned (`*`), the controller (told by broker 2's
//! heartbeats, BrokerHeartbeat v2) places nothing on it: `kafka-topics --create` puts every
//! replica on broker 3 and cannot reach two replicas, with Kafka's message. Deleting the
//! setting makes broker 2 usable again, without a restart.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::eventually;
use common::jbod::{jbod_cluster, replica_dirs, two_log_dirs};
use common::kafka_jars::{self, output_text as text, run_tool as tool};

const CONFIGS: &str = "org.apache.kafka.tools.ConfigCommand";
const TOPICS: &str = "org.apache.kafka.tools.TopicCommand";
const REASSIGN: &str = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";

fn shown(p: &Path) -> String {
    p.display().to_string()
}

/// `kafka-configs --alter` of broker `id`'s `args` (`--add-config k=v` or
/// `--delete-config k`), sent to that broker as the tool does.
fn alter_broker(bootstrap: &str, id: i32, args: &[&str]) -> std::process::Output {
    let entity = id.to_string();
    let mut all = vec![
        "--bootstrap-server",
        bootstrap,
        "--entity-type",
        "brokers",
        "--entity-name",
        &entity,
        "--alter",
    ];
    all.extend_from_slice(args);
    tool(CONFIGS, &all)
}

/// Each broker's log dirs and whether they are cordoned, from Kafka's Admin
/// `describeLogDirs` (the `isCordoned` of DescribeLogDirs v5, which `kafka-log-dirs` does
/// not print): (broker, dir) → cordoned.
fn cordoned_flags(bootstrap: &str) -> Result<BTreeMap<(i32, String), bool>, String> {
    let script = r#"
import java.util.*;
import org.apache.kafka.clients.admin.*;
var props = new Properties();
props.put("bootstrap.servers", System.getenv("KRAFTD_BOOTSTRAP"));
try (var admin = Admin.create(props)) {
    var all = admin.describeLogDirs(List.of(2, 3)).allDescriptions().get();
    for (var broker : all.entrySet())
        for (var dir : broker.getValue().entrySet())
            System.out.println("DIR\t" + broker.getKey() + "\t" + dir.getKey() + "\t" + dir.getValue().isCordoned());
}
/exit
"#;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("LogDirs.jsh");
    std::fs::write(&path, script).map_err(|e| e.to_string())?;
    let out = Command::new("jshell")
        .arg(format!("--class-path={}", kafka_jars::classpath()))
        .arg(format!("-R{}", kafka_jars::log4j_option()))
        .arg(&path)
        .env("KRAFTD_BOOTSTRAP", bootstrap)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let flags: BTreeMap<(i32, String), bool> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("DIR\t"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Some(((f[0].parse().ok()?, f[1].to_string()), f[2] == "true"))
        })
        .collect();
    if flags.len() != 4 {
        return Err(text(&out));
    }
    Ok(flags)
}

/// partition → the absolute dir `kafka-log-dirs --describe` shows broker `broker`'s
/// replica of `topic` in.
fn dirs_on(bootstrap: &str, broker: i32, topic: &str) -> Result<BTreeMap<i32, String>, String> {
    Ok(replica_dirs(bootstrap, &broker.to_string(), topic)?
        .into_iter()
        .map(|((partition, _), dir)| (partition, dir))
        .collect())
}

/// `kafka-topics --create` of `topic`.
fn create(bootstrap: &str, topic: &str, partitions: i32, rf: i32) -> std::process::Output {
    tool(
        TOPICS,
        &[
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--topic",
            topic,
            "--partitions",
            &partitions.to_string(),
            "--replication-factor",
            &rf.to_string(),
        ],
    )
}

/// Every replica of `topic` (`kafka-topics --describe`'s Replicas column).
fn replicas_of(bootstrap: &str, topic: &str) -> Vec<i32> {
    let out = tool(
        TOPICS,
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--topic",
            topic,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .flat_map(|l| l.split('\t'))
        .filter_map(|f| f.trim().strip_prefix("Replicas: "))
        .flat_map(|r| {
            r.split(',')
                .filter_map(|b| b.trim().parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

#[test]
fn cordoned_log_dirs_with_kafkas_tools() {
    common::python::python();
    let root = tempfile::tempdir().unwrap();
    let (controllers, brokers) = jbod_cluster(root.path(), 2, &[]);
    let bootstrap = common::addresses(&brokers);
    let logs = || common::all_logs(&brokers) + &common::all_logs(&controllers);
    common::python::wait_until_brokers_listed(&bootstrap, 2, logs);
    let broker2 = brokers.iter().find(|b| b.id == 2).unwrap();
    let [data, data2] = two_log_dirs(broker2).map(|d| shown(&d));

    // A path that is not one of broker 2's log dirs: Kafka's refusal, naming it.
    let refused = alter_broker(
        &bootstrap,
        2,
        &["--add-config", "cordoned.log.dirs=/not/a/log/dir"],
    );
    let said = text(&refused);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains(
            "All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing \
             entries : /not/a/log/dir"
        ),
        "{said}"
    );

    // Cordon broker 2's second dir at runtime.
    let cordoned = alter_broker(
        &bootstrap,
        2,
        &["--add-config", &format!("cordoned.log.dirs={data2}")],
    );
    assert!(cordoned.status.success(), "{}\n{}", text(&cordoned), logs());
    let flags = eventually(
        "DescribeLogDirs reporting broker 2's second dir cordoned",
        Duration::from_secs(60),
        logs,
        || {
            let flags = cordoned_flags(&bootstrap)?;
            if flags.get(&(2, data2.clone())) == Some(&true) {
                Ok(flags)
            } else {
                Err(format!("{flags:?}"))
            }
        },
    );
    assert_eq!(flags.values().filter(|c| **c).count(), 1, "{flags:?}");

    // New replicas on broker 2 all go to its first dir, although it holds more.
    let created = create(&bootstrap, "spread", 8, 2);
    assert!(created.status.success(), "{}\n{}", text(&created), logs());
    let placed = eventually(
        "broker 2's replicas of spread on disk",
        Duration::from_secs(60),
        logs,
        || {
            let dirs = dirs_on(&bootstrap, 2, "spread")?;
            if dirs.len() == 8 {
                Ok(dirs)
            } else {
                Err(format!("{dirs:?}"))
            }
        },
    );
    assert!(placed.values().all(|d| *d == data), "{placed:?}");

    // Moving a replica into the cordoned dir: refused by the broker (Kafka's
    // InvalidReplicaAssignmentException, "Log directory ... is cordoned").
    let plan = format!(
        r#"{{"version":1,"partitions":[{{"topic":"spread","partition":0,"replicas":[2,3],"log_dirs":["{data2}","any"]}}]}}"#
    );
    let plan_file = root.path().join("plan.json");
    std::fs::write(&plan_file, &plan).unwrap();
    let moved = tool(
        REASSIGN,
        &[
            "--bootstrap-server",
            &bootstrap,
            "--execute",
            "--reassignment-json-file",
            plan_file.to_str().unwrap(),
        ],
    );
    let said = text(&moved);
    assert!(!moved.status.success(), "{plan}\n{said}");
    assert!(
        said.contains("Failed to alter dir for") && said.contains("InvalidReplicaAssignment"),
        "{said}"
    );
    assert_eq!(dirs_on(&bootstrap, 2, "spread").unwrap()[&0], data);

    // Every dir of broker 2 cordoned: once its heartbeat has told the controller, two
    // replicas cannot be placed (Kafka's message), and one lands on broker 3 only.
    let all = alter_broker(&bootstrap, 2, &["--add-config", "cordoned.log.dirs=*"]);
    assert!(all.status.success(), "{}\n{}", text(&all), logs());
    let mut attempt = 0;
    let said = eventually(
        "the controller refusing two replicas with broker 2 fully cordoned",
        Duration::from_secs(60),
        logs,
        || {
            attempt += 1;
            let out = create(&bootstrap, &format!("two-{attempt}"), 1, 2);
            if out.status.success() {
                Err(format!("created: {}", text(&out)))
            } else {
                Ok(text(&out))
            }
        },
    );
    assert!(
        said.contains(
            "Unable to replicate the partition 2 time(s): The target replication factor of 2 \
             cannot be reached because only 1 broker(s) are registered or some brokers have \
             all their log directories cordoned."
        ),
        "{said}"
    );
    let created = create(&bootstrap, "only3", 6, 1);
    assert!(created.status.success(), "{}\n{}", text(&created), logs());
    assert_eq!(replicas_of(&bootstrap, "only3"), vec![3; 6]);
    let flags = cordoned_flags(&bootstrap).unwrap();
    assert_eq!(flags.get(&(2, data.clone())), Some(&true), "{flags:?}");

    // Uncordoned: broker 2 takes replicas again, without a restart.
    let cleared = alter_broker(&bootstrap, 2, &["--delete-config", "cordoned.log.dirs"]);
    assert!(cleared.status.success(), "{}\n{}", text(&cleared), logs());
    let mut attempt = 0;
    eventually(
        "two replicas placed again",
        Duration::from_secs(60),
        logs,
        || {
            attempt += 1;
            let out = create(&bootstrap, &format!("again-{attempt}"), 1, 2);
            if out.status.success() {
                Ok(())
            } else {
                Err(text(&out))
            }
        },
    );
    let flags = cordoned_flags(&bootstrap).unwrap();
    assert!(flags.values().all(|c| !c), "{flags:?}");
}
