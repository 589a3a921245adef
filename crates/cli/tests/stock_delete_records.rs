//! DeleteRecords (api key 21) with stock clients against real processes: one controller
//! and one broker, `tests/python/delete_records.py` deleting with confluent-kafka's and
//! kafka-python's admin clients, then checking the low watermark, ListOffsets earliest and
//! a consumer's reset from offset 0.

mod common;

use std::process::Command;

use common::{formatted_cluster, python::python, stop_gracefully, Node};

#[test]
fn stock_clients_delete_records_and_consumers_start_at_the_new_log_start() {
    let python = python();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/delete_records.py"
    );
    let out = Command::new(&python)
        .args([script, &brokers[0].address(), "delete-records"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("all ok"),
        "delete_records.py failed:\n{stdout}\n{stderr}\n--- broker logs ---\n{}",
        brokers
            .iter()
            .map(Node::logs)
            .collect::<Vec<_>>()
            .join("\n"),
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
