//! The request and network metrics on real processes, read from `/metrics` as Prometheus
//! would: one controller and one broker (`auto.create.topics.enable=false`), stock-client
//! traffic (kafka-python creates a topic, produces and consumes; confluent-kafka asks
//! Metadata for a topic that does not exist), then the broker's RequestsPerSec by API and
//! version, ErrorsPerSec with the unknown topic's UNKNOWN_TOPIC_OR_PARTITION, the phase
//! summaries, and the listener's connection count going up and down with raw connections;
//! the controller's own listener counts the broker's requests.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::python::{python, run_inline, wait_until_brokers_listed};
use common::{all_logs, formatted_cluster, free_port, stop_gracefully};

/// `/metrics` of the node whose metrics port is `port`, as (name with labels → value).
fn scrape(port: u16) -> BTreeMap<String, f64> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("metrics port");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// The sum of the series of `family` whose labels include every one of `labels`.
fn total(metrics: &BTreeMap<String, f64>, family: &str, labels: &[&str]) -> f64 {
    metrics
        .iter()
        .filter(|(k, _)| k.starts_with(&format!("{family}{{")))
        .filter(|(k, _)| labels.iter().all(|l| k.contains(l)))
        .map(|(_, v)| v)
        .sum()
}

/// Polls `/metrics` until `ok` holds of it (no sleep-then-assert).
fn wait_for(
    port: u16,
    what: &str,
    ok: impl Fn(&BTreeMap<String, f64>) -> bool,
    logs: impl Fn() -> String,
) -> BTreeMap<String, f64> {
    common::eventually(what, Duration::from_secs(20), logs, || {
        let m = scrape(port);
        if ok(&m) {
            Ok(m)
        } else {
            Err(format!("the last scrape:\n{m:#?}"))
        }
    })
}

const TRAFFIC: &str = r#"
import sys
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from confluent_kafka import Producer

bootstrap = sys.argv[1]
admin = KafkaAdminClient(bootstrap_servers=bootstrap)
admin.create_topics([NewTopic("metered", 1, 1)])
admin.close()
producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=5)
for i in range(10):
    producer.send("metered", b"v%d" % i).get(timeout=30)
producer.close()
consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
consumer.assign([TopicPartition("metered", 0)])
read = 0
for _ in range(60):
    read += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
    if read >= 10:
        break
consumer.close()
if read < 10:
    print(f"FAILED: read {read} of 10")
    sys.exit(1)
md = Producer({"bootstrap.servers": bootstrap}).list_topics("no-such-topic", timeout=10)
print("no-such-topic:", md.topics["no-such-topic"].error)
print("all ok")
"#;

#[test]
fn request_and_connection_metrics_follow_stock_client_traffic() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    let (controller_metrics, broker_metrics) = (free_port(), free_port());
    controllers[0].add_config(&[&format!("metrics.port={controller_metrics}")]);
    brokers[0].add_config(&[
        &format!("metrics.port={broker_metrics}"),
        "auto.create.topics.enable=false",
    ]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = brokers[0].address();
    let logs = || format!("{}\n{}", all_logs(&brokers), all_logs(&controllers));
    wait_until_brokers_listed(&bootstrap, 1, logs);

    let out = run_inline(TRAFFIC, &[&bootstrap]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all ok"),
        "traffic failed:\n{stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        logs()
    );

    // Every request the clients sent is counted once its response is written.
    let requests = "kafka_network_RequestMetrics_RequestsPerSec_total";
    let m = wait_for(
        broker_metrics,
        "Produce, Fetch and Metadata requests",
        |m| {
            total(m, requests, &["request=\"Produce\""]) >= 10.0
                && total(m, requests, &["request=\"FetchConsumer\""]) >= 1.0
                && total(m, requests, &["request=\"Metadata\""]) >= 2.0
        },
        logs,
    );
    // Versions are those stock clients speak to a Kafka 4 broker.
    for (request, versions) in [("Produce", 3..=13), ("Fetch", 4..=18), ("Metadata", 0..=13)] {
        let seen: Vec<i32> = m
            .keys()
            .filter(|k| k.starts_with(requests) && k.contains(&format!("request=\"{request}\"")))
            .filter_map(|k| {
                k.split("version=\"")
                    .nth(1)?
                    .split('"')
                    .next()?
                    .parse()
                    .ok()
            })
            .collect();
        assert!(
            !seen.is_empty() && seen.iter().all(|v| versions.contains(v)),
            "{request} versions {seen:?}"
        );
    }
    // The unknown topic: an error code in a Metadata response; the produces: NONE.
    let errors = "kafka_network_RequestMetrics_ErrorsPerSec_total";
    assert!(
        total(
            &m,
            errors,
            &[
                "request=\"Metadata\"",
                "error=\"UNKNOWN_TOPIC_OR_PARTITION\""
            ]
        ) >= 1.0,
        "{m:#?}"
    );
    assert!(total(&m, errors, &["request=\"Produce\"", "error=\"NONE\""]) >= 10.0);
    // Summaries: every request timed; quantiles of Produce are real times.
    let produces = total(&m, requests, &["request=\"Produce\""]);
    assert_eq!(
        total(
            &m,
            "kafka_network_RequestMetrics_TotalTimeMs_count",
            &["request=\"Produce\""]
        ),
        produces
    );
    let p99 = total(
        &m,
        "kafka_network_RequestMetrics_TotalTimeMs",
        &["request=\"Produce\"", "quantile=\"0.99\""],
    );
    assert!(p99 > 0.0 && p99 < 30_000.0, "Produce p99 {p99} ms");
    assert!(
        total(
            &m,
            "kafka_network_RequestMetrics_RequestBytes_sum",
            &["request=\"Produce\""]
        ) > 10.0 * 2.0
    );
    for idle in [
        "kafka_network_SocketServer_NetworkProcessorAvgIdlePercent",
        "kafka_server_KafkaRequestHandlerPool_RequestHandlerAvgIdlePercent",
    ] {
        let v = total(&m, idle, &[]);
        assert!((0.0..=1.0).contains(&v), "{idle} {v}");
    }

    // Connections on the broker's listener: up with each one opened, down when closed.
    let count = "kafka_server_socket_server_metrics_connection_count";
    let listener = "listener=\"PLAINTEXT\"";
    let before = wait_for(
        broker_metrics,
        "no client connection left",
        |m| total(m, count, &[listener]) == 0.0,
        logs,
    );
    let created = "kafka_server_socket_server_metrics_connection_creation_total";
    let closed = "kafka_server_socket_server_metrics_connection_close_total";
    let created_before = total(&before, created, &[listener]);
    let open: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(&bootstrap).unwrap())
        .collect();
    let during = wait_for(
        broker_metrics,
        "three connections open",
        |m| total(m, count, &[listener]) == 3.0,
        logs,
    );
    assert_eq!(total(&during, created, &[listener]), created_before + 3.0);
    drop(open);
    let after = wait_for(
        broker_metrics,
        "the three connections closed",
        |m| total(m, count, &[listener]) == 0.0,
        logs,
    );
    assert_eq!(
        total(&after, closed, &[listener]),
        total(&after, created, &[listener])
    );

    // The controller's listener serves the broker: its registration and heartbeats.
    let c = wait_for(
        controller_metrics,
        "the broker's heartbeats on the controller",
        |m| total(m, requests, &["request=\"BrokerHeartbeat\""]) >= 1.0,
        logs,
    );
    assert!(
        total(&c, count, &["listener=\"CONTROLLER\""]) >= 1.0,
        "{c:#?}"
    );
    assert!(total(&c, requests, &["request=\"BrokerRegistration\""]) >= 1.0);

    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
