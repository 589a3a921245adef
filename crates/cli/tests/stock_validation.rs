//! Produce validation with stock clients against real processes (one controller, one
//! broker): `tests/python/validation.py` has confluent-kafka write uncompressed batches to a
//! topic with `compression.type=gzip` and kafka-python read every record back unchanged, and
//! checks that a record two hours in the future is refused with INVALID_TIMESTAMP; then
//! Apache Kafka 4.4.0's `kafka-dump-log` (DumpLogSegments, from the jars the tests fetch)
//! shows the stored batches are gzip.

mod common;

use common::kafka_jars;
use common::python::{python, run_until_all_ok};
use common::{all_logs, formatted_cluster, stop_gracefully};

const TOPIC: &str = "regzipped";

#[test]
fn the_leader_recompresses_and_refuses_future_timestamps_for_stock_clients() {
    python();
    kafka_jars::classpath();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    run_until_all_ok("validation.py", &[&brokers[0].address(), TOPIC], || {
        format!("--- broker logs ---\n{}", all_logs(&brokers))
    });

    let log = brokers[0]
        .partition_dir(TOPIC, 0)
        .join("00000000000000000000.log");
    let (ok, stdout, stderr) = kafka_jars::dump_log_segment(&log);
    let batches: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("baseOffset:"))
        .collect();
    assert!(
        ok && !batches.is_empty()
            && batches.iter().all(|l| l.contains("compresscodec: gzip"))
            && !stdout.contains("isvalid: false")
            && !stderr.contains("Exception"),
        "kafka-dump-log on {}:\n{stdout}\n{stderr}",
        log.display()
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
