//! Transactions with stock clients against real processes (one controller, three brokers,
//! every topic with three replicas): `tests/python/transactions.py` commits and aborts
//! with confluent-kafka and kafka-python and reads with `read_committed` and
//! `read_uncommitted` consumers (the LSO holding back an open transaction), fences a zombie
//! producer, and runs a consume-transform-produce loop with the consumed offsets in each
//! transaction, which must move every input record exactly once.

mod common;

use common::python::{python, run_until_all_ok, wait_until_brokers_listed};
use common::{addresses, all_logs, formatted_cluster, stop_gracefully};

#[test]
fn stock_transactional_clients_commit_abort_fence_and_move_records_exactly_once() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 3);
    for broker in &brokers {
        broker.add_config(&[
            "group.initial.rebalance.delay.ms=0",
            "offsets.topic.num.partitions=10",
            "transaction.state.log.num.partitions=10",
        ]);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = addresses(&brokers);
    wait_until_brokers_listed(&bootstrap, 3, || all_logs(&brokers));
    run_until_all_ok("transactions.py", &[&bootstrap, "3"], || all_logs(&brokers));
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
