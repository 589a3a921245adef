//! Stock Kafka clients against a cluster of real processes, three controllers and three
//! brokers started the way `cargo xtask cluster-up` does: confluent-kafka (librdkafka) and
//! kafka-python, installed by the test setup into a venv under `target/`, run the admin
//! script `tests/python/admin.py` (topics, partitions, cluster, configs read back from every
//! broker, ACLs, SCRAM).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{formatted_cluster, python::python, stop_gracefully, Node};

fn bootstrap(brokers: &[Node]) -> String {
    brokers
        .iter()
        .map(Node::address)
        .collect::<Vec<_>>()
        .join(",")
}

/// Waits until every broker lists all brokers in its Metadata (registered and unfenced).
fn wait_until_unfenced(brokers: &[Node]) {
    // The fewest brokers any one broker lists.
    let script = r#"
import sys
from confluent_kafka.admin import AdminClient
counts = []
for s in sys.argv[1].split(","):
    try:
        counts.append(len(AdminClient({"bootstrap.servers": s}).list_topics(timeout=3).brokers))
    except Exception:
        counts.append(0)
print(min(counts))
"#;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = Command::new(python())
            .args(["-c", script, &bootstrap(brokers)])
            .output()
            .unwrap();
        let seen = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if seen == brokers.len().to_string() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "brokers not all unfenced after 60 s (saw {seen}): {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            brokers
                .iter()
                .map(Node::logs)
                .collect::<Vec<_>>()
                .join("\n")
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn stock_admin_clients_manage_topics_configs_acls_and_scram_on_every_broker() {
    let python = python();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 3, 3);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    wait_until_unfenced(&brokers);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/admin.py");
    let out = Command::new(&python)
        .args([script, &bootstrap(&brokers)])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("all ok"),
        "admin.py failed:\n{stdout}\n{stderr}\n--- broker logs ---\n{}\n--- controller logs ---\n{}",
        brokers.iter().map(Node::logs).collect::<Vec<_>>().join("\n"),
        controllers.iter().map(Node::logs).collect::<Vec<_>>().join("\n"),
    );
    // Brokers first, so their controlled shutdown finds a controller.
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
