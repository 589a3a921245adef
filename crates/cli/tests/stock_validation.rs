//! Produce validation with stock clients against real processes (one controller, one
//! broker): `tests/python/validation.py` has confluent-kafka write uncompressed batches to a
//! topic with `compression.type=gzip` and kafka-python read every record back unchanged, and
//! checks that a record two hours in the future is refused with INVALID_TIMESTAMP; then
//! Apache Kafka 4.4.0's `kafka-dump-log` (DumpLogSegments, from the jars the tests fetch)
//! shows the stored batches are gzip.

mod common;

use std::process::{Command, Stdio};

use common::kafka_jars;
use common::python::{python, run_until_all_ok};
use common::{all_logs, formatted_cluster, stop_gracefully};

const TOPIC: &str = "regzipped";

#[test]
fn the_leader_recompresses_and_refuses_future_timestamps_for_stock_clients() {
    python();
    let classpath = kafka_jars::classpath();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    run_until_all_ok("validation.py", &[&brokers[0].address(), TOPIC], || {
        format!("--- broker logs ---\n{}", all_logs(&brokers))
    });

    let log = brokers[0]
        .dir
        .join("data")
        .join(format!("{TOPIC}-0"))
        .join("00000000000000000000.log");
    let out = Command::new("java")
        .arg(kafka_jars::log4j_option())
        .args(["-cp", &classpath, "org.apache.kafka.tools.DumpLogSegments"])
        .arg("--files")
        .arg(&log)
        .arg("--deep-iteration")
        .stdin(Stdio::null())
        .output()
        .expect("java starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let batches: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("baseOffset:"))
        .collect();
    assert!(
        out.status.success()
            && !batches.is_empty()
            && batches.iter().all(|l| l.contains("compresscodec: gzip"))
            && !stdout.contains("isvalid: false")
            && !stderr.contains("Exception"),
        "kafka-dump-log on {}:\n{stdout}\n{stderr}",
        log.display()
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
