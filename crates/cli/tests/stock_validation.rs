//! Produce validation with stock clients against real processes (one controller, one
//! broker): `tests/python/validation.py` has confluent-kafka write uncompressed batches to a
//! topic with `compression.type=gzip` and kafka-python read every record back unchanged, and
//! checks that a record two hours in the future is refused with INVALID_TIMESTAMP; then
//! Apache Kafka 4.4.0's `kafka-dump-log` (DumpLogSegments, from the jars the tests fetch)
//! shows the stored batches are gzip. `tests/python/topic_configs.py` has confluent-kafka's
//! CreateTopics refused `segment.bytes=65536` with INVALID_CONFIG and Kafka 4.4.0's message,
//! and accepted `internal.segment.bytes=65536`, whose topic's log then rolls 64 KiB segments.

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

#[test]
fn segment_bytes_is_refused_below_one_mib_and_internal_segment_bytes_is_not() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let small = "small-segments";
    run_until_all_ok(
        "topic_configs.py",
        &[&brokers[0].address(), "refused-segments", small],
        || format!("--- broker logs ---\n{}", all_logs(&brokers)),
    );
    // 64 records of 4 KiB in segments of at most 64 KiB: the log rolled.
    let dir = brokers[0].partition_dir(small, 0);
    let segments = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".log"))
        })
        .count();
    assert!(
        segments >= 4,
        "{} holds {segments} segments; internal.segment.bytes=65536 was not honoured",
        dir.display()
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
