//! Kafka's dynamic log settings changed on a live broker with Apache Kafka 4.4.0's own
//! `kafka-configs` (issue 30), as Kafka's `DynamicLogConfig` and `LogCleaner.reconfigure`
//! take them: `log.message.timestamp.type=LogAppendTime` set as the cluster default changes
//! the timestamps a confluent-kafka consumer reads on a topic without an override of its
//! own; `log.cleaner.threads` and `log.cleaner.dedupe.buffer.size` set as the cluster
//! default restart the broker's cleaner threads with the new values (its log says so), and
//! compaction still runs after it; more than doubling the threads on one broker is refused
//! with Kafka's message. With `log.flush.scheduler.interval.ms` set (Kafka's
//! `LogManager.flushDirtyLogs`), a log left idle after a few appends is flushed once its
//! topic's `flush.ms` has passed: its recovery point, in the broker's
//! `recovery-point-offset-checkpoint`, reaches its end without another append.

mod common;

use std::time::{Duration, Instant};

use common::kafka_jars::{self, output_text, run_tool};
use common::python::{python, run_inline, run_until_all_ok};
use common::{all_logs, formatted_cluster, stop_gracefully};

/// Produces one record with CreateTime 1000 to `topic` (created when missing) and reads it
/// back: prints `create <ts>` or `append <ts>` for the timestamp the consumer sees.
const PRODUCE_AND_READ: &str = r#"
import sys, uuid
from confluent_kafka import Consumer, Producer, TopicPartition, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, topic = sys.argv[1], sys.argv[2]
admin = AdminClient({"bootstrap.servers": bootstrap})
if topic not in admin.list_topics(timeout=10).topics:
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
marker = str(uuid.uuid4())
producer.produce(topic, value=marker, partition=0, timestamp=1000)
assert producer.flush(30) == 0
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": marker, "enable.auto.commit": False})
consumer.assign([TopicPartition(topic, 0, 0)])
while True:
    m = consumer.poll(30)
    assert m is not None, "nothing read"
    if m.error() or m.value().decode() != marker:
        continue
    kind, ts = m.timestamp()
    print({TIMESTAMP_CREATE_TIME: "create", TIMESTAMP_LOG_APPEND_TIME: "append"}.get(kind, kind), ts)
    break
consumer.close()
"#;

/// Creates `topic` with `flush.ms=5000` and produces three records to it at once.
const IDLE_TOPIC: &str = r#"
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, topic = sys.argv[1], sys.argv[2]
admin = AdminClient({"bootstrap.servers": bootstrap})
admin.create_topics([NewTopic(topic, 1, 1, config={"flush.ms": "5000"})])[topic].result(30)
producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
for i in range(3):
    producer.produce(topic, value=str(i), partition=0)
assert producer.flush(30) == 0
"#;

/// `kafka-configs --bootstrap-server <b> --entity-type brokers <entity> --alter
/// --add-config <config>`: whether it succeeded, and its output.
fn alter_broker_configs(bootstrap: &str, entity: &[&str], config: &str) -> (bool, String) {
    let mut args = vec!["--bootstrap-server", bootstrap, "--entity-type", "brokers"];
    args.extend(entity);
    args.extend(["--alter", "--add-config", config]);
    let out = run_tool("org.apache.kafka.tools.ConfigCommand", &args);
    (out.status.success(), output_text(&out))
}

/// What the consumer reads of a fresh record: `create 1000` or `append <now>`.
fn timestamp_read(bootstrap: &str, topic: &str, logs: &dyn Fn() -> String) -> String {
    let out = run_inline(PRODUCE_AND_READ, &[bootstrap, topic]);
    assert!(
        out.status.success(),
        "produce and read:\n{}\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        logs()
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn cluster_wide_log_settings_change_on_a_live_broker_with_kafka_configs() {
    python();
    kafka_jars::classpath();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    brokers[0].add_config(&[
        "log.cleaner.backoff.ms=200",
        "log.flush.scheduler.interval.ms=100",
        "log.flush.offset.checkpoint.interval.ms=100",
    ]);
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

    // A topic without an override keeps the producer's timestamp: CreateTime by default.
    let deadline = Instant::now() + Duration::from_secs(60);
    let read = loop {
        let out = run_inline(PRODUCE_AND_READ, &[&bootstrap, "plain"]);
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).trim().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "the broker never served:\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(read, "create 1000", "{}", logs());

    // The cluster default: the broker stamps the append time on every topic without an
    // override, as Kafka's DynamicLogConfig makes it the topics' default.
    let (ok, text) = alter_broker_configs(
        &bootstrap,
        &["--entity-default"],
        "log.message.timestamp.type=LogAppendTime",
    );
    assert!(ok, "kafka-configs:\n{text}\n{}", logs());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let read = timestamp_read(&bootstrap, "plain", &logs);
        let (kind, ts) = read.split_once(' ').expect("kind and timestamp");
        if kind == "append" {
            assert!(ts.parse::<i64>().unwrap() > 1_000_000, "{read}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {read} after the change:\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // The cleaner's threads and dedupe buffer, cluster-wide: restarted with the new values.
    let (ok, text) = alter_broker_configs(
        &bootstrap,
        &["--entity-default"],
        "log.cleaner.threads=2,log.cleaner.dedupe.buffer.size=20000000",
    );
    assert!(ok, "kafka-configs:\n{text}\n{}", logs());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !brokers[0].logs().lines().any(|l| {
        l.contains("log cleaner reconfigured")
            && l.contains("threads=2")
            && l.contains("dedupe_buffer_size=20000000")
    }) {
        assert!(
            Instant::now() < deadline,
            "the cleaner was not reconfigured:\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Compaction runs on the new threads.
    let cleaned_before = brokers[0].logs().matches(" cleaned").count();
    run_until_all_ok("compaction.py", &[&bootstrap, "compacted"], logs);
    assert!(
        brokers[0].logs().matches(" cleaned").count() > cleaned_before,
        "no clean after the reconfiguration:\n{}",
        logs()
    );

    // On one broker, Kafka's LogCleaner.validateReconfiguration: at most double the threads.
    let id = brokers[0].id.to_string();
    let (ok, text) =
        alter_broker_configs(&bootstrap, &["--entity-name", &id], "log.cleaner.threads=5");
    assert!(
        !ok && text.contains(
            "Log cleaner threads cannot be increased to more than double the current value 2"
        ),
        "kafka-configs log.cleaner.threads=5:\n{text}\n{}",
        logs()
    );

    // An idle log flushed by time: three records to a topic with flush.ms=5000, then
    // nothing; the periodic flusher moves its recovery point to its end.
    let out = run_inline(IDLE_TOPIC, &[&bootstrap, "idle"]);
    assert!(
        out.status.success(),
        "idle topic:\n{}\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        logs()
    );
    let log_dir = brokers[0]
        .partition_dir("idle", 0)
        .parent()
        .unwrap()
        .to_path_buf();
    let checkpoint = log_dir.join("recovery-point-offset-checkpoint");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&checkpoint).unwrap_or_default();
        if text.lines().any(|l| l == "idle 0 3") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the idle log was never flushed: {checkpoint:?} holds\n{text}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
