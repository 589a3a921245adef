//! Exactly-once consume-transform-produce while brokers die, with stock clients against
//! real processes (one controller, three brokers, everything with three replicas and
//! `min.insync.replicas=2`): `tests/python/transactions_failover.py` moves records from an
//! input topic to an output topic in transactions that carry the consumed offsets, in two
//! loops at once, one whose consumer uses `group.protocol=classic` and one
//! `group.protocol=consumer`, while this test kills with SIGKILL, one after the other, the
//! leader of input partition 0, the leader of output partition 0 and the broker
//! coordinating both loops' transactions, restarting each once records move again without
//! it. The script checks the output holds every input record exactly once per loop, in
//! order per partition, and each group's offsets end at the input's end.
//!
//! To see a failing run: `KRAFTD_TEST_LOG=info,kraftd::request=debug` (every request in
//! and out of each node), `RDKAFKA_DEBUG=eos,cgrp,protocol` with `KRAFTD_TEST_STDERR_DIR`
//! (the clients' side, kept).

mod common;

use std::time::{Duration, Instant};

use common::python::{python, wait_until_brokers_listed};
use common::script::{cluster_state, partition_state, Script};
use common::{addresses, all_logs, formatted_cluster, live_addresses, stop_gracefully, Node};

/// The leader of `topic`'s `partition` once it is a live broker with all three in sync.
fn settled_leader(brokers: &[Node], topic: &str, partition: i32) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (leader, isr) = partition_state(&live_addresses(brokers), topic, partition);
        if leader >= 0 && isr.len() == 3 {
            return leader;
        }
        assert!(
            Instant::now() < deadline,
            "{topic}-{partition} not led with a full ISR (leader {leader}, isr {isr:?})\n{}",
            all_logs(brokers)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn transactions_move_each_record_exactly_once_while_leaders_and_the_coordinator_die() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 3);
    for broker in &brokers {
        broker.add_config(&[
            "group.initial.rebalance.delay.ms=0",
            "offsets.topic.num.partitions=10",
            "transaction.state.log.num.partitions=10",
            "replica.lag.time.max.ms=5000",
        ]);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = addresses(&brokers);
    wait_until_brokers_listed(&bootstrap, 3, || all_logs(&brokers));
    let stop_file = root.path().join("stop");
    let mut script = Script::spawn(
        root.path(),
        "transactions_failover.py",
        &[&bootstrap, stop_file.to_str().unwrap()],
    );
    let line = script.wait_line(60, "the coordinator's partition", |l| {
        l.starts_with("coordinator partition ")
    });
    let coordinator_partition: i32 = line["coordinator partition ".len()..]
        .trim()
        .parse()
        .unwrap();
    script.wait_line(120, "the loop starting", |l| l == "started");
    let first = brokers[0].id;
    let topics = ["chaos-in", "chaos-out", "__transaction_state"];
    let state = |brokers: &[Node]| {
        let live = live_addresses(brokers);
        format!(
            "{}\n{}\n{}",
            cluster_state(&live, &topics, "chaos-group-classic"),
            cluster_state(&live, &topics[..2], "chaos-group-consumer"),
            all_logs(brokers)
        )
    };
    let moved = |l: &str| l.starts_with("moved ");
    for (topic, partition) in [
        ("chaos-in", 0),
        ("chaos-out", 0),
        ("__transaction_state", coordinator_partition),
    ] {
        script.wait_line_or(120, "progress before a kill", moved, || state(&brokers));
        let victim = (settled_leader(&brokers, topic, partition) - first) as usize;
        brokers[victim].kill9();
        script.wait_line_or(120, "progress after the kill", moved, || state(&brokers));
        brokers[victim].start();
    }
    std::fs::write(&stop_file, b"").unwrap();
    let summary = script.finish(300, || all_logs(&brokers));
    eprintln!("{summary}");
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
