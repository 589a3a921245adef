//! Kafka's own operator tools against real `kraftd controller` processes: Apache Kafka
//! 4.4.0's `kafka-metadata-quorum` (`MetadataQuorumCommand`, from the jars the test setup
//! fetches, see `common/kafka_jars.rs`) describes a three-controller kraftd quorum, and
//! says what `kraftd metadata-quorum` says: the same leader, epoch and voters. Also checks
//! `kraftd metadata-quorum` itself against the same kind of quorum, with no Java involved.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{formatted_quorum, kafka_jars, status_fields, stop_gracefully, voter_ids, Node, BIN};

mod common;

/// `kraftd metadata-quorum --bootstrap-controller <bootstrap> describe <flags>`.
fn kraftd_quorum(bootstrap: &str, flags: &[&str]) -> Output {
    Command::new(BIN)
        .args([
            "metadata-quorum",
            "--bootstrap-controller",
            bootstrap,
            "describe",
        ])
        .args(flags)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap()
}

/// Kafka's `MetadataQuorumCommand` with `args`, killed after `limit`.
fn kafka_quorum(dir: &Path, args: &[&str], limit: Duration) -> Output {
    // Fail within the test's patience rather than the admin client's 60 s default.
    let config = dir.join("admin.properties");
    std::fs::write(
        &config,
        "client.id=kraftd-stock-tools-test\n\
         default.api.timeout.ms=20000\n\
         request.timeout.ms=10000\n",
    )
    .unwrap();
    let config = config.to_str().expect("a UTF-8 temp path");
    let mut all = vec!["--command-config", config];
    all.extend(args);
    kafka_jars::run_tool_within("org.apache.kafka.tools.MetadataQuorumCommand", &all, limit)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `(NodeId, Status)` of every row of `describe --replication`, header checked.
fn replication_rows(stdout: &str) -> Vec<(i32, String)> {
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').map(str::trim).collect();
    assert_eq!(
        header,
        [
            "NodeId",
            "DirectoryId",
            "LogEndOffset",
            "Lag",
            "LastFetchTimestamp",
            "LastCaughtUpTimestamp",
            "Status",
            ""
        ],
        "{stdout}"
    );
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split('\t').map(str::trim).collect();
            (cells[0].parse().unwrap(), cells[6].to_string())
        })
        .collect()
}

/// Starts a formatted three-controller quorum; waits until `kraftd metadata-quorum` names
/// a leader; that `--status` output.
fn start_quorum(root: &Path) -> (String, Vec<Node>, String) {
    let (cluster_id, mut nodes) = formatted_quorum(root, 3);
    for node in &mut nodes {
        node.start();
    }
    let all = bootstrap(&nodes);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = kraftd_quorum(&all, &["--status"]);
        // Up once a leader has committed something (the bootstrap metadata): the HW moved.
        let committed = out.status.success()
            && status_fields(&text(&out).0)
                .get("HighWatermark")
                .and_then(|hw| hw.parse::<i64>().ok())
                .is_some_and(|hw| hw > 0);
        if committed {
            return (cluster_id, nodes, text(&out).0);
        }
        assert!(
            Instant::now() < deadline,
            "no leader within 30 s: {}",
            text(&out).1
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn bootstrap(nodes: &[Node]) -> String {
    nodes
        .iter()
        .map(Node::address)
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn kraftd_metadata_quorum_describes_three_controllers() {
    let root = tempfile::tempdir().unwrap();
    let (cluster_id, mut nodes, status) = start_quorum(root.path());
    let fields = status_fields(&status);
    let leader: i32 = fields["LeaderId"].parse().unwrap();
    assert!((1..=3).contains(&leader), "{status}");
    assert!(
        fields["LeaderEpoch"].parse::<i32>().unwrap() >= 1,
        "{status}"
    );
    assert!(
        fields["HighWatermark"].parse::<i64>().unwrap() > 0,
        "{status}"
    );
    assert_eq!(voter_ids(&fields["CurrentVoters"]), [1, 2, 3], "{status}");
    assert_eq!(fields["CurrentObservers"], "[]", "{status}");
    let cluster = &fields["ClusterId"];
    assert!(
        cluster == &cluster_id || cluster.starts_with("unknown"),
        "{status}"
    );
    let keys: Vec<&str> = status
        .lines()
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "ClusterId",
            "LeaderId",
            "LeaderEpoch",
            "HighWatermark",
            "MaxFollowerLag",
            "MaxFollowerLagTimeMs",
            "CurrentVoters",
            "CurrentObservers"
        ]
    );

    // The leader's address alone is enough.
    let leader_address = nodes.iter().find(|n| n.id == leader).unwrap().address();
    let out = kraftd_quorum(&leader_address, &["--replication"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let mut rows = replication_rows(&stdout);
    assert_eq!(rows.remove(0), (leader, "Leader".to_string()), "{stdout}");
    rows.sort();
    let followers: Vec<(i32, String)> = (1..=3)
        .filter(|id| *id != leader)
        .map(|id| (id, "Follower".to_string()))
        .collect();
    assert_eq!(rows, followers, "{stdout}");

    // A follower's address alone works too, as with Kafka's tool: DescribeCluster names the
    // controllers and the active one.
    let follower = nodes.iter().find(|n| n.id != leader).unwrap().address();
    let out = kraftd_quorum(&follower, &["--status"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        status_fields(&stdout)["LeaderId"],
        leader.to_string(),
        "{stdout}"
    );

    // Nobody listening: one line naming the address, even with RUST_BACKTRACE set.
    let closed = format!("127.0.0.1:{}", common::free_port());
    let out = kraftd_quorum(&closed, &["--replication"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&closed), "{stderr}");

    // Kafka's usage errors, word for word.
    let out = kraftd_quorum(&closed, &[]);
    assert!(text(&out)
        .1
        .contains("One of --status or --replication must be specified"));
    let out = kraftd_quorum(&closed, &["--status", "--replication"]);
    assert!(text(&out)
        .1
        .contains("Only one of --status or --replication should be specified"));

    stop_gracefully(&mut nodes);
}

/// Fetches the jars when needed and runs Kafka's tool far enough to print its usage: the
/// setup the stock-tool test relies on works on this machine.
#[test]
fn kafka_metadata_quorum_tool_runs_from_the_fetched_jars() {
    let dir = tempfile::tempdir().unwrap();
    let out = kafka_quorum(dir.path(), &["--help"], Duration::from_secs(60));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("usage: kafka-metadata-quorum"),
        "{stdout}{stderr}"
    );
}

#[test]
fn kafka_metadata_quorum_describes_kraftd_controllers() {
    // The jars first, so their fetch is not counted against the tool's time limit.
    kafka_jars::classpath();
    let root = tempfile::tempdir().unwrap();
    let (cluster_id, mut nodes, ours) = start_quorum(root.path());
    let ours = status_fields(&ours);
    let leader: i32 = ours["LeaderId"].parse().unwrap();

    // Any one controller's address: Kafka's admin client finds the active one itself.
    for node in &nodes {
        let address = node.address();
        let limit = Duration::from_secs(60);
        let out = kafka_quorum(
            root.path(),
            &["--bootstrap-controller", &address, "describe", "--status"],
            limit,
        );
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "Kafka's tool via {address}:\n{stdout}{stderr}"
        );
        eprintln!(
            "kafka-metadata-quorum --bootstrap-controller {address} describe --status:\n{stdout}"
        );
        let kafka = status_fields(&stdout);
        assert_eq!(kafka["ClusterId"], cluster_id, "{stdout}");
        assert_eq!(kafka["LeaderId"], ours["LeaderId"], "{stdout}");
        assert_eq!(kafka["LeaderEpoch"], ours["LeaderEpoch"], "{stdout}");
        assert_eq!(voter_ids(&kafka["CurrentVoters"]), [1, 2, 3], "{stdout}");
        assert_eq!(kafka["CurrentObservers"], "[]", "{stdout}");
        // The HW only grows (a no-op record every 100 ms): Kafka's answer came later.
        let kafka_hw: i64 = kafka["HighWatermark"].parse().unwrap();
        let our_hw: i64 = ours["HighWatermark"].parse().unwrap();
        assert!(kafka_hw >= our_hw, "{stdout}");

        let out = kafka_quorum(
            root.path(),
            &[
                "--bootstrap-controller",
                &address,
                "describe",
                "--replication",
            ],
            limit,
        );
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "Kafka's tool via {address}:\n{stdout}{stderr}"
        );
        eprintln!("kafka-metadata-quorum --bootstrap-controller {address} describe --replication:\n{stdout}");
        let mut kafka_rows = replication_rows(&stdout);
        let ours = kraftd_quorum(&bootstrap(&nodes), &["--replication"]);
        let mut our_rows = replication_rows(&text(&ours).0);
        assert_eq!(kafka_rows[0], (leader, "Leader".to_string()), "{stdout}");
        kafka_rows.sort();
        our_rows.sort();
        assert_eq!(kafka_rows, our_rows, "{stdout}");
    }
    stop_gracefully(&mut nodes);
}
