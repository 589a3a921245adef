//! DeleteRecords (api key 21) with stock clients against real processes: one controller
//! and one broker, `tests/python/delete_records.py` deleting with confluent-kafka's and
//! kafka-python's admin clients, then checking the low watermark, ListOffsets earliest and
//! a consumer's reset from offset 0.

mod common;

use common::python::{python, run_until_all_ok};
use common::{all_logs, started_cluster, stop_gracefully};

#[test]
fn stock_clients_delete_records_and_consumers_start_at_the_new_log_start() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (mut controllers, mut brokers) = started_cluster(root.path(), 1, 1);
    run_until_all_ok(
        "delete_records.py",
        &[&brokers[0].address(), "delete-records"],
        || format!("--- broker logs ---\n{}", all_logs(&brokers)),
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
