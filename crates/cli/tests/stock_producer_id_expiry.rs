//! Kafka's periodic producer-id expiry (issue 30): a broker checking every second
//! (`producer.id.expiration.check.interval.ms=1000`) keeps an idempotent producer's state
//! under Kafka's default `producer.id.expiration.ms` (a day) — Apache Kafka 4.4.0's
//! `kafka-transactions describe-producers` lists its producer id — and forgets it once the
//! expiration, lowered to 2 s as the cluster default with `kafka-configs`, has passed: the
//! same command then lists no producer.

mod common;

use std::time::Duration;

use common::kafka_jars::{self, output_text, run_tool};
use common::python::{python, run_inline};
use common::{all_logs, eventually, formatted_cluster};

/// Creates `topic` and produces three records to it with an idempotent producer.
const PRODUCE: &str = r#"
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, topic = sys.argv[1], sys.argv[2]
admin = AdminClient({"bootstrap.servers": bootstrap})
admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
for i in range(3):
    producer.produce(topic, value=str(i), partition=0)
assert producer.flush(30) == 0
"#;

/// The producer ids `kafka-transactions describe-producers` lists for `topic`-0.
fn producer_rows(bootstrap: &str, topic: &str) -> Result<Vec<String>, String> {
    let out = run_tool(
        "org.apache.kafka.tools.TransactionsCommand",
        &[
            "--bootstrap-server",
            bootstrap,
            "describe-producers",
            "--topic",
            topic,
            "--partition",
            "0",
        ],
    );
    if !out.status.success() {
        return Err(output_text(&out));
    }
    // A header line (ProducerId ProducerEpoch ...) then one row per producer.
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip_while(|l| !l.starts_with("ProducerId"))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect())
}

#[test]
fn an_idle_producer_id_expires_at_the_periodic_check_after_a_dynamic_expiration() {
    python();
    kafka_jars::classpath();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    brokers[0].add_config(&["producer.id.expiration.check.interval.ms=1000"]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = brokers[0].address();
    let logs = || {
        format!(
            "--- controller ---\n{}\n--- broker ---\n{}",
            all_logs(&controllers),
            all_logs(&brokers)
        )
    };
    eventually(
        "an idempotent produce",
        Duration::from_secs(60),
        logs,
        || {
            let out = run_inline(PRODUCE, &[&bootstrap, "idem"]);
            if out.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&out.stderr).to_string())
            }
        },
    );
    let rows = producer_rows(&bootstrap, "idem")
        .unwrap_or_else(|e| panic!("describe-producers: {e}\n{}", logs()));
    assert_eq!(rows.len(), 1, "one producer after the produce: {rows:?}");

    let out = run_tool(
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--entity-type",
            "brokers",
            "--entity-default",
            "--alter",
            "--add-config",
            "producer.id.expiration.ms=2000",
        ],
    );
    assert!(
        out.status.success(),
        "producer.id.expiration.ms refused: {}",
        output_text(&out)
    );
    eventually(
        "the idle producer id expires",
        Duration::from_secs(30),
        logs,
        || match producer_rows(&bootstrap, "idem")? {
            rows if rows.is_empty() => Ok(()),
            rows => Err(format!("still listed: {rows:?}")),
        },
    );
}
