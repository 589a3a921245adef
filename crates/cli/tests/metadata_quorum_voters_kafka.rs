//! `kraftd metadata-quorum add-controller` / `remove-controller` against Apache Kafka 4.4.0
//! (the jars) formatted as a dynamic quorum: controller 1 `--standalone`, controller 2
//! `--no-initial-controllers` (an observer until added). kraftd's tool adds 2 and removes it
//! again, and `describe --status` (kraftd's) shows the voter set after each step. This runs
//! before kraftd itself serves AddRaftVoter: Kafka is the peer on the wire.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::kafka_jars::{output_text, run_tool, KafkaNode};
use common::{free_port, BIN};

const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qk";

/// A Kafka controller of a dynamic quorum, formatted with `format_flag`, not started.
fn kafka_controller(
    root: &Path,
    id: i32,
    bootstrap: &str,
    port: u16,
    format_flag: &str,
) -> KafkaNode {
    let node = KafkaNode {
        id,
        port,
        dir: root.join(format!("kafka-{id}")),
        child: None,
        starts: 0,
    };
    std::fs::create_dir_all(node.dir.join("logs")).unwrap();
    std::fs::write(
        node.config_path(),
        format!(
            "process.roles=controller\nnode.id={id}\n\
             controller.quorum.bootstrap.servers={bootstrap}\n\
             listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=CONTROLLER:PLAINTEXT\n\
             controller.quorum.auto.join.enable=false\nlog.dirs={}\n",
            node.dir.join("data").display()
        ),
    )
    .unwrap();
    let out = run_tool(
        "kafka.tools.StorageTool",
        &[
            "format",
            "-t",
            CLUSTER,
            "-c",
            node.config_path().to_str().unwrap(),
            format_flag,
        ],
    );
    assert!(out.status.success(), "{}", output_text(&out));
    node
}

fn kraftd(args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap()
}

fn directory_id(node: &KafkaNode) -> String {
    let text = std::fs::read_to_string(node.dir.join("data/meta.properties")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("directory.id="))
        .unwrap()
        .to_string()
}

/// Polls kraftd's `describe --status` until its CurrentVoters line satisfies `want`.
fn wait_voters(
    bootstrap: &str,
    want: impl Fn(&str) -> bool,
    what: &str,
    nodes: &[&KafkaNode],
) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    while Instant::now() < deadline {
        let out = kraftd(&[
            "metadata-quorum",
            "--bootstrap-controller",
            bootstrap,
            "describe",
            "--status",
        ]);
        last = output_text(&out);
        if let Some(line) = String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.starts_with("CurrentVoters:"))
        {
            if want(line) {
                return line.to_string();
            }
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let logs: Vec<String> = nodes.iter().map(|n| n.logs()).collect();
    panic!(
        "{what}: not reached; last describe:\n{last}\n{}",
        logs.join("\n")
    );
}

#[test]
fn kraftd_adds_and_removes_a_kafka_controller() {
    let root = tempfile::tempdir().unwrap();
    let (p1, p2) = (free_port(), free_port());
    let bootstrap = format!("127.0.0.1:{p1}");
    let mut c1 = kafka_controller(root.path(), 1, &bootstrap, p1, "--standalone");
    let mut c2 = kafka_controller(root.path(), 2, &bootstrap, p2, "--no-initial-controllers");
    c1.start();
    c2.start();
    c1.wait_started(Duration::from_secs(120));
    c2.wait_started(Duration::from_secs(120));
    let dir2 = directory_id(&c2);
    wait_voters(
        &bootstrap,
        |l| l.contains("\"id\": 1") && !l.contains("\"id\": 2"),
        "one voter",
        &[&c1, &c2],
    );

    // A dry run changes nothing and says so.
    let config2 = c2.config_path();
    let dry = kraftd(&[
        "metadata-quorum",
        "--bootstrap-controller",
        &bootstrap,
        "--command-config",
        config2.to_str().unwrap(),
        "add-controller",
        "--dry-run",
    ]);
    assert!(dry.status.success(), "{}", output_text(&dry));
    assert_eq!(
        String::from_utf8_lossy(&dry.stdout).trim(),
        format!("DRY RUN of adding controller 2 with directory id {dir2} and endpoints: CONTROLLER://127.0.0.1:{p2}")
    );

    let added = kraftd(&[
        "metadata-quorum",
        "--bootstrap-controller",
        &bootstrap,
        "--command-config",
        config2.to_str().unwrap(),
        "add-controller",
    ]);
    assert!(
        added.status.success(),
        "{}\n{}",
        output_text(&added),
        c1.logs()
    );
    assert_eq!(
        String::from_utf8_lossy(&added.stdout).trim(),
        format!("Added controller 2 with directory id {dir2} and endpoints: CONTROLLER://127.0.0.1:{p2}")
    );
    let line = wait_voters(
        &bootstrap,
        |l| l.contains("\"id\": 2"),
        "two voters",
        &[&c1, &c2],
    );
    assert!(line.contains(&dir2), "{line}");

    // Adding it again: Kafka's DUPLICATE_VOTER, one line naming the error.
    let again = kraftd(&[
        "metadata-quorum",
        "--bootstrap-controller",
        &bootstrap,
        "--command-config",
        config2.to_str().unwrap(),
        "add-controller",
    ]);
    assert!(!again.status.success());
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("DUPLICATE_VOTER") || err.contains("DuplicateVoter"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    let removed = kraftd(&[
        "metadata-quorum",
        "--bootstrap-controller",
        &bootstrap,
        "remove-controller",
        "--controller-id",
        "2",
        "--controller-directory-id",
        &dir2,
    ]);
    assert!(
        removed.status.success(),
        "{}\n{}",
        output_text(&removed),
        c1.logs()
    );
    assert_eq!(
        String::from_utf8_lossy(&removed.stdout).trim(),
        format!("Removed  KRaft controller 2 with directory id {dir2}")
    );
    wait_voters(
        &bootstrap,
        |l| !l.contains("\"id\": 2"),
        "back to one voter",
        &[&c1, &c2],
    );

    // A voter that is not there: Kafka's VOTER_NOT_FOUND.
    let unknown = kraftd(&[
        "metadata-quorum",
        "--bootstrap-controller",
        &bootstrap,
        "remove-controller",
        "-i",
        "7",
        "-d",
        &dir2,
    ]);
    assert!(!unknown.status.success());
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        err.contains("VOTER_NOT_FOUND") || err.contains("VoterNotFound"),
        "{err}"
    );
}
