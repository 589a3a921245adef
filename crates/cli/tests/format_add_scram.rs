//! `kraftd format --add-scram` (issue 16): the credentials of a cluster's first users.
//!
//! - A controller formatted with three `--add-scram` arguments (a password with the default
//!   iterations, the same user for SCRAM-SHA-512 with 8192 iterations, a salted password with
//!   its salt) starts a new cluster whose metadata holds them from the first start: kafka-python's
//!   DescribeUserScramCredentials lists each user with its mechanisms and iterations.
//! - Differentially, Apache Kafka 4.4.0's own `kafka-storage format --add-scram` (StorageTool,
//!   from the jars) given the same arguments with fixed salts writes the same
//!   UserScramCredentialRecords, byte for byte, into its bootstrap snapshot (Kafka 4.4 writes
//!   the metadata log's `0-0` checkpoint where kraftd writes `bootstrap.checkpoint`; both are
//!   KRaft snapshots of the same records).
//! - A bad argument stops `kraftd format` with one line naming it, repeating no password, and
//!   formats nothing.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::python::{python, run_inline};
use common::{all_logs, format, kafka_jars, run, stop_gracefully, voters, write_broker_config};
use common::{write_config, Node, BIN};
use kraftd_protocol::metadata_record::decode_metadata_record;
use kraftd_protocol::MetadataRecord;
use kraftd_raft::snapshot::read_snapshot;

/// Kafka's `ScramParserTest` salt and salted password (base64).
const SALT: &str = "MWx2NHBkbnc0ZndxN25vdGN4bTB5eTFrN3E=";
const SALTED_PASSWORD: &str = "mT0yyUUxnlJaC99HXgRTSYlbuqa4FSGtJCJfTMvjYCE=";

/// The `--add-scram` arguments every test formats with (`salted`: with fixed salts only).
fn scram_arguments(salted: bool) -> Vec<String> {
    let salt = if salted {
        format!(",salt=\"{SALT}\"")
    } else {
        String::new()
    };
    vec![
        format!("SCRAM-SHA-256=[name=admin,password=admin-secret{salt}]"),
        format!("SCRAM-SHA-512=[name=admin,password=\"admin secret 2\",iterations=8192{salt}]"),
        format!("SCRAM-SHA-256=[name=alice,salt=\"{SALT}\",saltedpassword=\"{SALTED_PASSWORD}\"]"),
    ]
}

/// `kraftd format` of `node` with `--add-scram` arguments.
fn format_with_scram(node: &Node, cluster_id: &str, arguments: &[String]) {
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    common::format_with_scram(node, cluster_id, &arguments);
}

/// The UserScramCredentialRecords of a `bootstrap.checkpoint`, as their stored bytes.
fn scram_record_values(checkpoint: &Path) -> Vec<Bytes> {
    let bytes = std::fs::read(checkpoint).unwrap();
    let snapshot = read_snapshot(Bytes::from(bytes))
        .unwrap_or_else(|e| panic!("{}: {e}", checkpoint.display()));
    snapshot
        .values()
        .filter(|v| {
            matches!(
                decode_metadata_record((*v).clone()),
                Ok((MetadataRecord::UserScramCredential(_), _))
            )
        })
        .cloned()
        .collect()
}

#[test]
fn add_scram_credentials_are_in_the_metadata_from_the_first_start() {
    python();
    let root = tempfile::tempdir().unwrap();
    let cluster_id = run(&["random-uuid"]).trim().to_string();
    let mut controller = Node::new(root.path(), 1);
    let mut broker = Node::broker(root.path(), 2);
    let quorum = voters(std::slice::from_ref(&controller));
    for node in [&controller, &broker] {
        std::fs::create_dir_all(&node.dir).unwrap();
    }
    write_config(&controller, &quorum);
    write_broker_config(&broker, &quorum);
    format_with_scram(&controller, &cluster_id, &scram_arguments(false));
    format(&broker, &cluster_id);
    controller.start();
    broker.start();

    let expected = "admin SCRAM_SHA_256 4096\nadmin SCRAM_SHA_512 8192\nalice SCRAM_SHA_256 4096";
    let script = r#"
import sys
from kafka.admin import KafkaAdminClient
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=10000)
described = admin.describe_user_scram_credentials()
lines = []
for user, d in described.items():
    if d["error"]:
        print("ERROR", user, d["error"])
    for info in d["credential_infos"]:
        lines.append(f"{user} {info['mechanism'].name} {info['iterations']}")
print("\n".join(sorted(lines)))
"#;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = String::new();
    while Instant::now() < deadline {
        let out = run_inline(script, &[&broker.address()]);
        seen = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() && seen.trim() == expected {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        seen.trim(),
        expected,
        "DescribeUserScramCredentials\n{}",
        all_logs(&[controller, broker])
    );
    stop_gracefully(std::slice::from_mut(&mut broker));
    stop_gracefully(std::slice::from_mut(&mut controller));
}

#[test]
fn kafka_storage_format_writes_the_same_scram_records() {
    let root = tempfile::tempdir().unwrap();
    let cluster_id = run(&["random-uuid"]).trim().to_string();
    let arguments = scram_arguments(true);

    // Kafka's StorageTool on a controller's properties.
    let kafka_dir = root.path().join("kafka");
    std::fs::create_dir_all(&kafka_dir).unwrap();
    let properties = kafka_dir.join("server.properties");
    let port = common::free_port();
    std::fs::write(
        &properties,
        format!(
            "process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:{port}\n\
             listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n\
             log.dirs={}\n",
            kafka_dir.join("data").display()
        ),
    )
    .unwrap();
    let mut java = Command::new("java");
    java.args([
        "-Xmx256m",
        "-XX:TieredStopAtLevel=1",
        &kafka_jars::log4j_option(),
    ])
    .args([
        "-cp",
        &kafka_jars::classpath(),
        "kafka.tools.StorageTool",
        "format",
    ])
    .args(["-t", &cluster_id, "-c", properties.to_str().unwrap()]);
    for argument in &arguments {
        java.args(["--add-scram", argument]);
    }
    let out = java.output().expect("java runs");
    assert!(
        out.status.success(),
        "kafka-storage format: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let node = Node::new(root.path(), 1);
    std::fs::create_dir_all(&node.dir).unwrap();
    write_config(&node, &voters(std::slice::from_ref(&node)));
    format_with_scram(&node, &cluster_id, &arguments);

    // Kafka 4.4 writes its bootstrap records as the metadata log's 0-0 snapshot.
    let kafka = scram_record_values(
        &kafka_dir.join("data/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"),
    );
    let ours = scram_record_values(&node.dir.join("data/bootstrap.checkpoint"));
    assert_eq!(kafka.len(), 3, "Kafka's bootstrap.checkpoint: {kafka:?}");
    assert_eq!(ours, kafka, "kraftd's records differ from Kafka's");
}

#[test]
fn a_bad_add_scram_argument_is_one_line_without_the_password_and_formats_nothing() {
    let root = tempfile::tempdir().unwrap();
    let node = Node::new(root.path(), 1);
    std::fs::create_dir_all(&node.dir).unwrap();
    write_config(&node, &voters(std::slice::from_ref(&node)));
    let cluster_id = run(&["random-uuid"]).trim().to_string();
    for (argument, message) in [
        (
            "SCRAM-SHA-256=[name=admin,password=hunter2,iterations=10]",
            "--add-scram argument 2 (SCRAM-SHA-256 for \"admin\"): The 'iterations' value must \
             be >= 4096 for add-scram using SCRAM-SHA-256",
        ),
        (
            "SCRAM-SHA-1=[name=admin,password=hunter2]",
            "--add-scram argument 2: The add-scram mechanism SCRAM-SHA-1 is not supported.",
        ),
        (
            "SCRAM-SHA-256=[name=admin,password=hunter2,colour=blue]",
            "--add-scram argument 2: Unknown SCRAM configurations: colour",
        ),
    ] {
        let out = Command::new(BIN)
            .env("RUST_BACKTRACE", "0")
            .env("RUST_LIB_BACKTRACE", "0")
            .args(["format", "--config", node.config_path().to_str().unwrap()])
            .args(["--cluster-id", &cluster_id])
            .args(["--add-scram", "SCRAM-SHA-512=[name=ok,password=fine]"])
            .args(["--add-scram", argument])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(!out.status.success(), "{argument}: {stderr}");
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(lines[0].ends_with(message), "{stderr}");
        assert!(
            !stderr.contains("hunter2") && !stderr.contains("fine"),
            "{stderr}"
        );
        assert!(!node.dir.join("data/meta.properties").exists());
    }
}
