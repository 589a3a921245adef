//! Log compaction with stock clients against real processes (one controller, one broker
//! whose cleaner runs every 200 ms): `tests/python/compaction.py` writes a compacted topic
//! with confluent-kafka (repeated keys, tombstones, a keyless record refused) and reads it
//! back with kafka-python while the cleaner works, until only the latest value per key is
//! left; then Apache Kafka 4.4.0's `kafka-dump-log` (DumpLogSegments, from the jars the tests
//! fetch) reads every cleaned segment the broker wrote.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::kafka_jars;
use common::python::{python, run_until_all_ok};
use common::{all_logs, formatted_cluster, stop_gracefully};

const TOPIC: &str = "compacted";

fn segments(partition_dir: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(partition_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs
}

#[test]
fn a_compacted_topic_written_and_read_by_stock_clients_is_cleaned_to_the_latest_value_per_key() {
    python();
    let classpath = kafka_jars::classpath();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    let mut config = std::fs::OpenOptions::new()
        .append(true)
        .open(brokers[0].config_path())
        .unwrap();
    writeln!(config, "log.cleaner.backoff.ms=200").unwrap();
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    run_until_all_ok("compaction.py", &[&brokers[0].address(), TOPIC], || {
        format!("--- broker logs ---\n{}", all_logs(&brokers))
    });

    // Kafka's own tool reads the segments the cleaner rewrote, batch by batch (with the
    // broker stopped, so no clean swaps a segment out from under it).
    stop_gracefully(&mut brokers);
    let partition_dir = brokers[0].dir.join("data").join(format!("{TOPIC}-0"));
    let logs = segments(&partition_dir);
    assert!(logs.len() > 1, "no rolled segments in {partition_dir:?}");
    for log in &logs {
        let out = Command::new("java")
            .arg(kafka_jars::log4j_option())
            .args(["-cp", &classpath, "org.apache.kafka.tools.DumpLogSegments"])
            .arg("--files")
            .arg(log)
            .arg("--deep-iteration")
            .stdin(Stdio::null())
            .output()
            .expect("java starts");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success()
                && stdout.contains("Dumping")
                && !stdout.contains("isvalid: false")
                && !stdout.contains("Found invalid")
                && !stderr.contains("Exception"),
            "kafka-dump-log on {}:\n{stdout}\n{stderr}",
            log.display()
        );
    }
    stop_gracefully(&mut controllers);
}
