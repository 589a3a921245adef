//! `kraftd format --standalone / --initial-controllers / --no-initial-controllers` against
//! Apache Kafka 4.4.0's `kafka-storage format` (the jars): the bootstrap snapshot's control
//! batch byte for byte (timestamps and CRC aside) and its footer, the metadata directory's
//! `directory.id` taken from the node's own entry, and the same refusals as one-line errors.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use bytes::Bytes;
use common::kafka_jars::{output_text, run_tool};
use common::{free_port, BIN};
use kraftd_protocol::records::{Batches, RecordBatch};

const SNAPSHOT: &str = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint";
const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qk";

/// A dynamic-quorum controller's properties (no `controller.quorum.voters`).
fn controller_config(dir: &Path, node_id: i32, port: u16) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("server.properties");
    std::fs::write(
        &path,
        format!(
            "process.roles=controller\nnode.id={node_id}\n\
             controller.quorum.bootstrap.servers=localhost:{port}\n\
             listeners=CONTROLLER://localhost:{port}\ncontroller.listener.names=CONTROLLER\n\
             log.dirs={}\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    path
}

/// `kraftd args`, without the test harness's backtrace settings (an error is one line).
fn kraftd(args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .unwrap()
}

fn directory_id(data: &Path) -> String {
    let text = std::fs::read_to_string(data.join("meta.properties")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("directory.id="))
        .unwrap()
        .to_string()
}

fn batches(path: &Path) -> Vec<RecordBatch> {
    let bytes = Bytes::from(std::fs::read(path).unwrap());
    Batches::new(bytes).map(|b| b.unwrap()).collect()
}

/// The batch's bytes with what differs between two runs zeroed: the CRC, the two batch
/// timestamps, and the SnapshotHeaderRecord's lastContainedLogTimestamp (the first record's
/// value at a fixed place: 61-byte batch header, then length, attributes, timestamp and
/// offset deltas, key length, 4-byte key, value length, 2-byte version).
fn masked(batch: &RecordBatch, header_record: bool) -> Vec<u8> {
    let mut b = batch.as_bytes().to_vec();
    b[17..21].fill(0);
    b[27..43].fill(0);
    if header_record {
        b[73..81].fill(0);
    }
    b
}

#[test]
fn standalone_writes_kafkas_bootstrap_snapshot() {
    let root = tempfile::tempdir().unwrap();
    let port = free_port();
    let kafka_dir = root.path().join("kafka");
    let kafka_config = controller_config(&kafka_dir, 1, port);
    let out = run_tool(
        "kafka.tools.StorageTool",
        &[
            "format",
            "-t",
            CLUSTER,
            "-c",
            kafka_config.to_str().unwrap(),
            "--standalone",
        ],
    );
    assert!(out.status.success(), "{}", output_text(&out));
    let kafka_data = kafka_dir.join("data");
    let id = directory_id(&kafka_data);

    // The same voter through --initial-controllers, so the directory ids match.
    let ours_dir = root.path().join("kraftd");
    let ours_config = controller_config(&ours_dir, 1, port);
    let voters = format!("1@localhost:{port}:{id}");
    let out = kraftd(&[
        "format",
        "--config",
        ours_config.to_str().unwrap(),
        "--cluster-id",
        CLUSTER,
        "--initial-controllers",
        &voters,
    ]);
    assert!(out.status.success(), "{}", output_text(&out));
    let ours_data = ours_dir.join("data");
    assert_eq!(
        directory_id(&ours_data),
        id,
        "the node's own entry's directory id"
    );

    let theirs = batches(&kafka_data.join(SNAPSHOT));
    let ours = batches(&ours_data.join(SNAPSHOT));
    // Kafka 4.4 also copies the bootstrap feature records between the control batches;
    // kraftd keeps them in bootstrap.checkpoint.
    assert_eq!(theirs.len(), 3, "header batch, feature records, footer");
    assert_eq!(ours.len(), 2, "header batch, footer");
    assert_eq!(
        masked(&ours[0], true),
        masked(&theirs[0], true),
        "SnapshotHeader, KRaftVersion (1), Voters"
    );
    assert_eq!(ours[0].record_count(), 3);
    let footer = |b: &RecordBatch| {
        let r = b.records().unwrap().next().unwrap().unwrap();
        (b.is_control(), r.key, r.value)
    };
    assert_eq!(footer(&ours[1]), footer(&theirs[2]), "SnapshotFooter");
    for batch in &ours {
        batch.validate_crc().unwrap();
    }
    let snapshot = kraftd_raft::snapshot::read_snapshot(Bytes::from(
        std::fs::read(ours_data.join(SNAPSHOT)).unwrap(),
    ))
    .unwrap();
    assert_eq!(snapshot.kraft_version.unwrap().k_raft_version, 1);
    assert_eq!(snapshot.voters.unwrap().voters[0].voter_id, 1);

    // --standalone itself: a fresh directory id, in meta.properties and the VotersRecord.
    let alone_dir = root.path().join("standalone");
    let alone_config = controller_config(&alone_dir, 1, port);
    let out = kraftd(&[
        "format",
        "-c",
        alone_config.to_str().unwrap(),
        "-t",
        CLUSTER,
        "--standalone",
    ]);
    assert!(out.status.success(), "{}", output_text(&out));
    let alone = alone_dir.join("data");
    let snapshot = kraftd_raft::snapshot::read_snapshot(Bytes::from(
        std::fs::read(alone.join(SNAPSHOT)).unwrap(),
    ))
    .unwrap();
    let voter = &snapshot.voters.unwrap().voters[0];
    assert_eq!(voter.voter_directory_id.to_base64(), directory_id(&alone));
    assert_eq!(voter.endpoints[0].host, "localhost");
    assert_eq!(voter.endpoints[0].port, port);
    assert!(alone.join("bootstrap.checkpoint").exists());
}

#[test]
fn no_initial_controllers_writes_kraft_version_without_voters_like_kafka() {
    let root = tempfile::tempdir().unwrap();
    let port = free_port();
    let kafka_config = controller_config(&root.path().join("kafka"), 2, port);
    let out = run_tool(
        "kafka.tools.StorageTool",
        &[
            "format",
            "-t",
            CLUSTER,
            "-c",
            kafka_config.to_str().unwrap(),
            "-N",
        ],
    );
    assert!(out.status.success(), "{}", output_text(&out));
    let ours_config = controller_config(&root.path().join("kraftd"), 2, port);
    let out = kraftd(&[
        "format",
        "-c",
        ours_config.to_str().unwrap(),
        "-t",
        CLUSTER,
        "-N",
    ]);
    assert!(out.status.success(), "{}", output_text(&out));
    let theirs = batches(&root.path().join("kafka/data").join(SNAPSHOT));
    let ours = batches(&root.path().join("kraftd/data").join(SNAPSHOT));
    assert_eq!(masked(&ours[0], true), masked(&theirs[0], true));
    assert_eq!(ours[0].record_count(), 2, "SnapshotHeader, KRaftVersion");
}

#[test]
fn kafkas_refusals_are_one_line_errors_naming_the_value() {
    let root = tempfile::tempdir().unwrap();
    let port = free_port();
    let dynamic = controller_config(&root.path().join("dyn"), 1, port);
    let static_dir = root.path().join("static");
    std::fs::create_dir_all(&static_dir).unwrap();
    let static_config = static_dir.join("server.properties");
    std::fs::write(
        &static_config,
        format!(
            "process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@localhost:{port}\n\
             listeners=CONTROLLER://localhost:{port}\ncontroller.listener.names=CONTROLLER\n\
             log.dirs={}\n",
            static_dir.join("data").display()
        ),
    )
    .unwrap();
    let bad_dir = "1@localhost:9093:not-a-uuid";
    let cases: Vec<(&Path, Vec<&str>, &str)> = vec![
        (
            &static_config,
            vec!["--standalone"],
            "controller.quorum.voters",
        ),
        (&dynamic, vec![], "--no-initial-controllers"),
        (
            &dynamic,
            vec!["--initial-controllers", bad_dir],
            "not-a-uuid",
        ),
        (
            &dynamic,
            vec!["--initial-controllers", "1@localhost:9093"],
            "1@localhost:9093",
        ),
        (&dynamic, vec!["--standalone", "-N"], "cannot be used with"),
    ];
    for (config, flags, names) in cases {
        let mut args = vec!["format", "-c", config.to_str().unwrap(), "-t", CLUSTER];
        args.extend(flags.iter().copied());
        let ours = kraftd(&args);
        let theirs = run_tool("kafka.tools.StorageTool", &args);
        assert!(!theirs.status.success(), "Kafka refuses {flags:?} too");
        assert!(!ours.status.success(), "{flags:?}: {}", output_text(&ours));
        let err = String::from_utf8_lossy(&ours.stderr);
        assert!(err.contains(names), "{flags:?}: {err}");
        if !names.contains("cannot be used") {
            assert_eq!(err.trim().lines().count(), 1, "{flags:?}: {err}");
        }
        assert!(!config
            .parent()
            .unwrap()
            .join("data/meta.properties")
            .exists());
    }
}
