//! The controller, log and process metrics on real processes, read from `/metrics` as a
//! Prometheus scraper would: three controllers and two brokers; the controllers' counts
//! after a stock client creates topics, one active controller among three, a broker's
//! per-partition log end offset after a stock producer wrote to it, the process metrics,
//! and the fenced/active broker and offline partition counts after the broker holding an
//! RF 1 partition is killed.

mod common;

use std::time::Duration;

use common::python::run_inline;
use common::{addresses, all_logs, formatted_cluster, formatted_combined_node, free_port, Node};

/// The value of the series whose name and labels start with `series` (up to the labels'
/// end: `name{node="1"` matches `name{node="1"}` and `name{node="1",x="y"}`).
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| {
            l.strip_prefix(series)
                .is_some_and(|rest| rest.starts_with([',', '}', ' ']))
        })?
        .rsplit(' ')
        .next()?
        .parse()
        .ok()
}

fn controller_gauge(text: &str, name: &str, node: i32) -> Option<f64> {
    value(
        text,
        &format!("kafka_controller_KafkaController_{name}{{node=\"{node}\""),
    )
}

/// Polls `check` (on fresh scrapes) until it holds, for at most 30 s; on timeout panics
/// with `what`, the last scrapes and the nodes' logs.
fn wait_for(
    what: &str,
    ports: &[(i32, u16)],
    nodes: &[&Node],
    check: impl Fn(&[(i32, String)]) -> bool,
) {
    let logs = || {
        nodes
            .iter()
            .map(|n| n.logs())
            .collect::<Vec<_>>()
            .join("\n")
    };
    common::eventually(what, Duration::from_secs(30), logs, || {
        let scrapes: Vec<(i32, String)> = ports
            .iter()
            .map(|(id, p)| (*id, common::scrape_metrics(*p)))
            .collect();
        if check(&scrapes) {
            Ok(())
        } else {
            Err(format!("scrapes:\n{scrapes:#?}"))
        }
    })
}

/// Each metric family (its `# TYPE` line) appears once, as Prometheus' parser requires.
fn assert_families_unique(text: &str) {
    let mut seen = std::collections::BTreeSet::new();
    for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
        assert!(seen.insert(line), "{line} twice in\n{text}");
    }
    assert!(!seen.is_empty(), "no metrics in {text:?}");
}

const SETUP: &str = r#"
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, solo_broker = sys.argv[1], int(sys.argv[2])
admin = AdminClient({"bootstrap.servers": bootstrap})
futures = admin.create_topics([
    NewTopic("spread", num_partitions=3, replication_factor=2),
    NewTopic("solo", num_partitions=1, replica_assignment=[[solo_broker]]),
])
for f in futures.values():
    f.result(30)
p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
for i in range(25):
    p.produce("solo", value=b"v%d" % i, partition=0)
assert p.flush(30) == 0
print("ok")
"#;

#[test]
fn controller_log_and_process_metrics_on_real_processes() {
    let root = tempfile::tempdir().unwrap();
    let (_cluster, mut controllers, mut brokers) = formatted_cluster(root.path(), 3, 2);
    let mut ports = Vec::new();
    for node in controllers.iter().chain(brokers.iter()) {
        let port = free_port();
        node.add_config(&[&format!("metrics.port={port}")]);
        ports.push((node.id, port));
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let controller_ports: Vec<(i32, u16)> = ports[..3].to_vec();
    let (solo_broker, solo_port) = ports[4];
    let all: Vec<&Node> = controllers.iter().chain(brokers.iter()).collect();

    // Exactly one of the three controllers is active, and every controller counts both
    // brokers registered and unfenced.
    wait_for(
        "one active controller, two active brokers",
        &controller_ports,
        &all,
        |s| {
            let active: f64 = s
                .iter()
                .map(|(id, t)| controller_gauge(t, "ActiveControllerCount", *id).unwrap_or(-1.0))
                .sum();
            active == 1.0
                && s.iter().all(|(id, t)| {
                    controller_gauge(t, "ActiveControllerCount", *id)
                        .is_some_and(|v| v == 0.0 || v == 1.0)
                        && controller_gauge(t, "ActiveBrokerCount", *id) == Some(2.0)
                        && controller_gauge(t, "FencedBrokerCount", *id) == Some(0.0)
                })
        },
    );

    let out = run_inline(SETUP, &[&addresses(&brokers), &solo_broker.to_string()]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ok"),
        "creating topics and producing failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        all_logs(&brokers)
    );

    // Every controller (standbys too) counts the two topics and four partitions.
    wait_for("topic and partition counts", &controller_ports, &all, |s| {
        s.iter().all(|(id, t)| {
            controller_gauge(t, "GlobalTopicCount", *id) == Some(2.0)
                && controller_gauge(t, "GlobalPartitionCount", *id) == Some(4.0)
                && controller_gauge(t, "OfflinePartitionsCount", *id) == Some(0.0)
                && controller_gauge(t, "LastCommittedRecordOffset", *id).is_some_and(|v| v > 0.0)
                && controller_gauge(t, "LastAppliedRecordOffset", *id)
                    >= controller_gauge(t, "LastCommittedRecordOffset", *id)
                && controller_gauge(t, "MetadataErrorCount", *id) == Some(0.0)
        })
    });
    // The active controller timed the CreateTopics requests through its queue.
    let active = controller_ports
        .iter()
        .map(|(id, p)| (*id, common::scrape_metrics(*p)))
        .find(|(id, t)| controller_gauge(t, "ActiveControllerCount", *id) == Some(1.0))
        .expect("an active controller");
    let queued = value(
        &active.1,
        &format!(
            "kafka_controller_ControllerEventManager_EventQueueTimeMs_count{{node=\"{}\"",
            active.0
        ),
    );
    assert!(
        queued.is_some_and(|n| n >= 1.0),
        "no request timed:\n{}",
        active.1
    );
    let processing_p99 = value(
        &active.1,
        &format!(
            "kafka_controller_ControllerEventManager_EventQueueProcessingTimeMs{{node=\"{}\",quantile=\"0.99\"",
            active.0
        ),
    );
    assert!(processing_p99.is_some_and(|v| v >= 0.0), "{}", active.1);

    // The broker holding `solo` reports its log: 25 records, start 0, some bytes, and flushes.
    let solo = format!("node=\"{solo_broker}\",topic=\"solo\",partition=\"0\"");
    wait_for(
        "solo's log end offset",
        &[(solo_broker, solo_port)],
        &all,
        |s| {
            let t = &s[0].1;
            value(t, &format!("kafka_log_Log_LogEndOffset{{{solo}")) == Some(25.0)
                && value(t, &format!("kafka_log_Log_LogStartOffset{{{solo}")) == Some(0.0)
                && value(t, &format!("kafka_log_Log_Size{{{solo}")).is_some_and(|v| v > 0.0)
                && value(
                    t,
                    &format!(
                        "kafka_log_LogManager_OfflineLogDirectoryCount{{node=\"{solo_broker}\""
                    ),
                ) == Some(0.0)
        },
    );
    let broker_text = common::scrape_metrics(solo_port);
    assert!(
        broker_text.contains("kafka_log_LogFlushStats_LogFlushRateAndTimeMs_count{"),
        "{broker_text}"
    );
    assert!(broker_text.contains("kafka_log_LogManager_LogDirectoryOffline{"));

    // Process metrics: plausible, and CPU time grows while the node works.
    let node = format!("{{node=\"{solo_broker}\"");
    let fds = value(&broker_text, &format!("process_open_fds{node}")).unwrap_or(0.0);
    let max_fds = value(&broker_text, &format!("process_max_fds{node}")).unwrap_or(0.0);
    let rss = value(
        &broker_text,
        &format!("process_resident_memory_bytes{node}"),
    )
    .unwrap_or(0.0);
    let start = value(&broker_text, &format!("process_start_time_seconds{node}")).unwrap_or(0.0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(fds > 0.0 && max_fds >= fds, "fds {fds}, max {max_fds}");
    assert!(rss > 1_000_000.0, "rss {rss}");
    assert!(
        start > now - 600.0 && start <= now + 1.0,
        "start {start}, now {now}"
    );
    let cpu_before = value(&broker_text, &format!("process_cpu_seconds_total{node}")).unwrap();
    wait_for("CPU time to grow", &[(solo_broker, solo_port)], &all, |s| {
        value(&s[0].1, &format!("process_cpu_seconds_total{node}")).is_some_and(|v| v > cpu_before)
    });

    for (_, port) in &ports {
        assert_families_unique(&common::scrape_metrics(*port));
    }

    // Kill the broker holding `solo`: the controllers fence it and `solo` goes offline.
    brokers[1].kill9();
    let all: Vec<&Node> = controllers.iter().chain(brokers.iter()).collect();
    wait_for(
        "the killed broker fenced, solo offline",
        &controller_ports,
        &all,
        |s| {
            s.iter().all(|(id, t)| {
                controller_gauge(t, "FencedBrokerCount", *id) == Some(1.0)
                    && controller_gauge(t, "ActiveBrokerCount", *id) == Some(1.0)
                    && controller_gauge(t, "OfflinePartitionsCount", *id) == Some(1.0)
                    && controller_gauge(t, "GlobalPartitionCount", *id) == Some(4.0)
            })
        },
    );
}

/// A combined node exports the controller's, the broker's and the process metrics, each
/// family once.
#[test]
fn a_combined_node_exports_controller_broker_and_process_metrics_once() {
    let root = tempfile::tempdir().unwrap();
    let metrics = free_port();
    let (mut node, _client) =
        formatted_combined_node(root.path(), &format!("metrics.port={metrics}\n"));
    node.start();
    wait_for(
        "the combined node active, its broker unfenced",
        &[(1, metrics)],
        &[&node],
        |s| {
            let t = &s[0].1;
            controller_gauge(t, "ActiveControllerCount", 1) == Some(1.0)
                && controller_gauge(t, "ActiveBrokerCount", 1) == Some(1.0)
                && value(
                    t,
                    "kafka_log_LogManager_OfflineLogDirectoryCount{node=\"1\"",
                ) == Some(0.0)
                && value(t, "process_open_fds{node=\"1\"").is_some_and(|v| v > 0.0)
        },
    );
    assert_families_unique(&common::scrape_metrics(metrics));
}
