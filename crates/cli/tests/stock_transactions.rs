//! Transactions with stock clients against real processes (one controller, three brokers,
//! every topic with three replicas): `tests/python/transactions.py` commits and aborts
//! with confluent-kafka and kafka-python and reads with `read_committed` and
//! `read_uncommitted` consumers (the LSO holding back an open transaction), fences a zombie
//! producer, and runs a consume-transform-produce loop with the consumed offsets in each
//! transaction, which must move every input record exactly once. Then Kafka 4.4.0's own
//! Java producer (`ProducerPerformance` with a transactional id, from the jars) runs
//! transactions V2 (`transaction.version` 2 is finalized at format: no AddPartitionsToTxn
//! from the client, the epoch bumped per transaction), its records are all read
//! `read_committed`, and `kafka-transactions` lists, describes and shows its producers.

mod common;

use std::process::{Command, Stdio};

use common::kafka_jars;
use common::python::{python, run_inline, run_until_all_ok, wait_until_brokers_listed};
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
    java_transactions_v2(&bootstrap, || all_logs(&brokers));
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}

/// A Kafka tool class with `args`; its stdout, asserting it succeeded.
fn kafka_tool(class: &str, args: &[&str], logs: &impl Fn() -> String) -> String {
    let out = Command::new("java")
        .arg(kafka_jars::log4j_option())
        .args(["-cp", &kafka_jars::classpath(), class])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("java starts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{class} {args:?} failed\n{stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        logs()
    );
    stdout
}

fn java_transactions_v2(bootstrap: &str, logs: impl Fn() -> String) {
    let create = run_inline(
        r#"
import sys, time
sys.path.insert(0, sys.argv[2])
from clients_common import create_topic
from confluent_kafka import admin as cadmin
create_topic(cadmin.AdminClient({"bootstrap.servers": sys.argv[1]}), "tv2", 3, 3, {}, time.time() + 60)
"#,
        &[bootstrap, common::python::script_path("").to_str().unwrap()],
    );
    assert!(
        create.status.success(),
        "{}",
        String::from_utf8_lossy(&create.stderr)
    );
    let perf = kafka_tool(
        "org.apache.kafka.tools.ProducerPerformance",
        &[
            "--topic",
            "tv2",
            "--num-records",
            "3000",
            "--record-size",
            "100",
            "--throughput",
            "3000",
            "--command-property",
            &format!("bootstrap.servers={bootstrap}"),
            "--transactional-id",
            "tv2-perf",
            "--transaction-duration-ms",
            "100",
        ],
        &logs,
    );
    assert!(perf.contains("3000 records sent"), "{perf}");
    let count = run_inline(
        r#"
import sys, time
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "tv2-check", "isolation.level": "read_committed",
              "auto.offset.reset": "earliest", "enable.partition.eof": True})
c.assign([TopicPartition("tv2", p, 0) for p in range(3)])
n, eof, t0 = 0, set(), time.time()
while len(eof) < 3 and time.time() - t0 < 60:
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        if m.error().code() == -191:
            eof.add(m.partition())
        continue
    eof.discard(m.partition())
    n += 1
print(n)
"#,
        &[bootstrap],
    );
    let read = String::from_utf8_lossy(&count.stdout).trim().to_string();
    assert_eq!(
        read,
        "3000",
        "read_committed count of the Java producer's records\n{}",
        logs()
    );
    let class = "org.apache.kafka.tools.TransactionsCommand";
    let list = kafka_tool(class, &["--bootstrap-server", bootstrap, "list"], &logs);
    assert!(list.contains("tv2-perf"), "kafka-transactions list\n{list}");
    let describe = kafka_tool(
        class,
        &[
            "--bootstrap-server",
            bootstrap,
            "describe",
            "--transactional-id",
            "tv2-perf",
        ],
        &logs,
    );
    let row: Vec<&str> = describe
        .lines()
        .find(|l| l.contains("tv2-perf"))
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    // CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState ...
    assert!(
        row.len() > 4 && row[4] == "CompleteCommit",
        "kafka-transactions describe\n{describe}"
    );
    let epoch: i32 = row[3].parse().unwrap();
    assert!(
        epoch >= 2,
        "transactions V2 bumps the epoch per transaction; epoch {epoch}\n{describe}"
    );
    let producers = kafka_tool(
        class,
        &[
            "--bootstrap-server",
            bootstrap,
            "describe-producers",
            "--topic",
            "tv2",
            "--partition",
            "0",
        ],
        &logs,
    );
    assert!(
        producers.lines().count() >= 2,
        "kafka-transactions describe-producers\n{producers}"
    );
}
