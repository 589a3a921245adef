//! Upgrading a static quorum to a dynamic one (KIP-853, Kafka 4.1+): Apache Kafka 4.4.0's
//! `kafka-features upgrade --feature kraft.version=1` (`FeatureCommand`) against a kraftd
//! cluster formatted with `controller.quorum.voters`. The Raft leader writes
//! KRaftVersionRecord 1 and a VotersRecord of the three controllers with the directory ids
//! their fetches carried; Kafka's `kafka-metadata-quorum describe --replication` then shows
//! each voter's directory id, and the same upgrade again is a no-op.

mod common;

use std::time::{Duration, Instant};

use common::kafka_jars::{output_text as text, run_tool as tool};
use common::python::wait_until_brokers_listed;
use common::{addresses, all_logs, formatted_cluster, stop_gracefully};

#[test]
fn kafka_features_upgrades_kraft_version_of_a_static_quorum() {
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 3, 1);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = addresses(&brokers);
    wait_until_brokers_listed(&bootstrap, 1, || all_logs(&brokers));
    // The leader learns the voters' directory ids from their fetches; until then it refuses
    // (INVALID_UPDATE_VERSION naming the voters it misses), so poll.
    let deadline = Instant::now() + Duration::from_secs(60);
    let upgraded = loop {
        let out = tool(
            "org.apache.kafka.tools.FeatureCommand",
            &[
                "--bootstrap-server",
                &bootstrap,
                "upgrade",
                "--feature",
                "kraft.version=1",
            ],
        );
        if out.status.success() {
            break out;
        }
        assert!(
            Instant::now() < deadline,
            "kafka-features upgrade kept failing:\n{}\n{}",
            text(&out),
            all_logs(&controllers)
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(
        String::from_utf8_lossy(&upgraded.stdout).contains("kraft.version was upgraded to 1"),
        "{}",
        text(&upgraded)
    );
    // Each voter now has its directory id in the voter set, which DescribeQuorum reports.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = tool(
            "org.apache.kafka.tools.MetadataQuorumCommand",
            &[
                "--bootstrap-server",
                &bootstrap,
                "describe",
                "--replication",
            ],
        );
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let voter_rows: Vec<&str> = stdout
            .lines()
            .filter(|l| l.contains("Leader") || l.contains("Follower"))
            .collect();
        let with_ids = voter_rows
            .iter()
            .filter(|l| !l.contains("AAAAAAAAAAAAAAAAAAAAAA"))
            .count();
        if out.status.success() && voter_rows.len() == 3 && with_ids == 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "kafka-metadata-quorum describe --replication:\n{}",
            text(&out)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let again = tool(
        "org.apache.kafka.tools.FeatureCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "upgrade",
            "--feature",
            "kraft.version=1",
        ],
    );
    assert!(again.status.success(), "{}", text(&again));
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
