//! Log compaction with stock clients against real processes (one controller, one broker
//! whose cleaner runs every 200 ms): `tests/python/compaction.py` writes a compacted topic
//! with confluent-kafka (repeated keys, tombstones, a keyless record refused) and reads it
//! back with kafka-python while the cleaner works, until only the latest value per key is
//! left; then Apache Kafka 4.4.0's `kafka-dump-log` (DumpLogSegments, from the jars the tests
//! fetch) reads every cleaned segment the broker wrote.

mod common;

use common::kafka_jars;
use common::python::{python, run_until_all_ok};
use common::{all_logs, formatted_cluster, segment_files, stop_gracefully};

const TOPIC: &str = "compacted";

#[test]
fn a_compacted_topic_written_and_read_by_stock_clients_is_cleaned_to_the_latest_value_per_key() {
    python();
    kafka_jars::classpath();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    brokers[0].add_config(&["log.cleaner.backoff.ms=200"]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    run_until_all_ok("compaction.py", &[&brokers[0].address(), TOPIC], || {
        format!("--- broker logs ---\n{}", all_logs(&brokers))
    });

    // Kafka's own tool reads the segments the cleaner rewrote, batch by batch (with the
    // broker stopped, so no clean swaps a segment out from under it).
    stop_gracefully(&mut brokers);
    let partition_dir = brokers[0].partition_dir(TOPIC, 0);
    let logs = segment_files(&partition_dir);
    assert!(logs.len() > 1, "no rolled segments in {partition_dir:?}");
    for log in &logs {
        let (ok, stdout, stderr) = kafka_jars::dump_log_segment(log);
        assert!(
            ok && stdout.contains("Dumping")
                && !stdout.contains("isvalid: false")
                && !stdout.contains("Found invalid")
                && !stderr.contains("Exception"),
            "kafka-dump-log on {}:\n{stdout}\n{stderr}",
            log.display()
        );
    }
    stop_gracefully(&mut controllers);
}
