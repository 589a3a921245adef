//! Client telemetry (KIP-714) on a real combined node with Kafka 4.4.0's own clients and
//! tools: subscriptions made, listed, described and deleted with `kafka-client-metrics`
//! (Kafka's validation errors included) and listed with `kafka-configs` (ListConfigResources
//! v1); a Java producer, a Java consumer and a librdkafka producer, which push by default
//! when a subscription matches them, show their metrics on the node's `/metrics` with their
//! `client_instance_id` and `client_id`; and every PushTelemetry error, answered as Kafka's
//! ClientMetricsManager answers, over raw requests.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::kafka_jars::{output_text, run_tool};
use common::raw::Raw;
use common::{formatted_combined_node, free_port, Node};
use kraftd_protocol::codec::Uuid;
use kraftd_protocol::messages::{
    GetTelemetrySubscriptionsRequest, ListConfigResourcesRequest, PushTelemetryRequest,
};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};

/// A confluent-kafka producer (client id `telemetry-rdkafka`) producing for about three
/// seconds, several push intervals of the test's subscription, to the bootstrap in argv[1].
const RDKAFKA_PRODUCER: &str = r#"
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "client.id": "telemetry-rdkafka"})
end = time.time() + 3
while time.time() < end:
    p.produce("t", b"x")
    p.poll(0.1)
assert p.flush(30) == 0
"#;

const CLIENT_METRICS: &str = "org.apache.kafka.tools.ClientMetricsCommand";
const CONFIGS: &str = "org.apache.kafka.tools.ConfigCommand";

/// Runs a tool, asserting it succeeded; its stdout.
fn tool_ok(class: &str, args: &[&str]) -> String {
    let out = run_tool(class, args);
    assert!(
        out.status.success(),
        "{class} {args:?}: {}",
        output_text(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a tool expected to fail; its stdout and stderr.
fn tool_fails(class: &str, args: &[&str]) -> String {
    let out = run_tool(class, args);
    let text = output_text(&out);
    assert!(!out.status.success(), "{class} {args:?} succeeded: {text}");
    text
}

/// A started combined node with its metrics port and `extra` properties.
fn node(root: &std::path::Path, extra: &str) -> (Node, String, u16) {
    let metrics = free_port();
    let (mut node, client) =
        formatted_combined_node(root, &format!("metrics.port={metrics}\n{extra}"));
    node.start();
    let bootstrap = format!("127.0.0.1:{client}");
    common::eventually(
        "the node serves clients",
        Duration::from_secs(60),
        || node.logs(),
        || {
            common::raw::try_call(
                &bootstrap,
                1,
                RequestBody::ListConfigResources(ListConfigResourcesRequest::default()),
            )
            .map(|_| ())
        },
    );
    (node, bootstrap, metrics)
}

#[test]
fn subscriptions_are_managed_with_kafkas_tools_and_validation() {
    let root = tempfile::tempdir().unwrap();
    let (node, bootstrap, _) = node(root.path(), "");
    let b = bootstrap.as_str();
    let out = tool_ok(
        CLIENT_METRICS,
        &[
            "--bootstrap-server",
            b,
            "--alter",
            "--name",
            "sub1",
            "--metrics",
            "org.apache.kafka.producer.",
            "--interval",
            "1000",
            "--match",
            "client_id=perf-.*",
        ],
    );
    assert!(out.contains("Altered client metrics config"), "{out}");
    // Kafka's ClientMetricsConfigs refusals.
    let text = tool_fails(
        CLIENT_METRICS,
        &[
            "--bootstrap-server",
            b,
            "--alter",
            "--name",
            "bad",
            "--interval",
            "50",
        ],
    );
    assert!(
        text.contains(
            "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)"
        ),
        "{text}"
    );
    let text = tool_fails(
        CLIENT_METRICS,
        &[
            "--bootstrap-server",
            b,
            "--alter",
            "--name",
            "bad",
            "--match",
            "host=x",
        ],
    );
    assert!(
        text.contains("Illegal client matching pattern: host=x"),
        "{text}"
    );
    // Listed (ListConfigResources) and described (DescribeConfigs).
    let out = tool_ok(CLIENT_METRICS, &["--bootstrap-server", b, "--list"]);
    assert_eq!(out.trim(), "sub1", "{out}");
    let out = tool_ok(
        CLIENT_METRICS,
        &["--bootstrap-server", b, "--describe", "--name", "sub1"],
    );
    assert!(
        out.contains("Client metrics configs for sub1 are:"),
        "{out}"
    );
    assert!(out.contains("interval.ms=1000"), "{out}");
    assert!(out.contains("metrics=org.apache.kafka.producer."), "{out}");
    assert!(out.contains("match=client_id=perf-.*"), "{out}");
    // kafka-configs without a name lists through ListConfigResources.
    let out = tool_ok(
        CONFIGS,
        &[
            "--bootstrap-server",
            b,
            "--describe",
            "--entity-type",
            "client-metrics",
        ],
    );
    assert!(
        out.contains("Dynamic configs for client-metric sub1 are:"),
        "{out}"
    );
    tool_ok(
        CONFIGS,
        &[
            "--bootstrap-server",
            b,
            "--alter",
            "--entity-type",
            "groups",
            "--entity-name",
            "g1",
            "--add-config",
            "consumer.session.timeout.ms=50000",
        ],
    );
    let out = tool_ok(
        CONFIGS,
        &[
            "--bootstrap-server",
            b,
            "--describe",
            "--entity-type",
            "groups",
        ],
    );
    assert!(out.contains("Dynamic configs for group g1 are:"), "{out}");
    assert!(out.contains("consumer.session.timeout.ms=50000"), "{out}");
    // Deleted: no longer listed.
    tool_ok(
        CLIENT_METRICS,
        &["--bootstrap-server", b, "--delete", "--name", "sub1"],
    );
    let out = tool_ok(CLIENT_METRICS, &["--bootstrap-server", b, "--list"]);
    assert_eq!(out.trim(), "", "{out}");
    drop(node);
}

#[test]
fn stock_clients_push_their_metrics_to_the_nodes_prometheus_page() {
    let root = tempfile::tempdir().unwrap();
    let (node, bootstrap, metrics) = node(root.path(), "");
    let b = bootstrap.as_str();
    tool_ok(
        CLIENT_METRICS,
        &[
            "--bootstrap-server",
            b,
            "--alter",
            "--name",
            "java",
            "--metrics",
            "org.apache.kafka.producer.,org.apache.kafka.consumer.",
            "--interval",
            "1000",
            "--match",
            "client_id=telemetry-.*",
        ],
    );
    tool_ok(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            b,
            "--create",
            "--topic",
            "t",
            "--partitions",
            "1",
        ],
    );
    // About five seconds of producing: several push intervals.
    tool_ok(
        "org.apache.kafka.tools.ProducerPerformance",
        &[
            "--topic",
            "t",
            "--num-records",
            "500",
            "--throughput",
            "100",
            "--record-size",
            "100",
            "--producer-props",
            &format!("bootstrap.servers={b}"),
            "client.id=telemetry-producer",
        ],
    );
    tool_ok(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &[
            "--bootstrap-server",
            b,
            "--topic",
            "t",
            "--from-beginning",
            "--max-messages",
            "500",
            "--group",
            "telemetry-group",
            "--consumer-property",
            "client.id=telemetry-consumer",
            "--consumer-property",
            "fetch.max.wait.ms=1000",
        ],
    );
    // librdkafka (confluent-kafka) pushes too (KIP-714 since librdkafka 2.5).
    let out = common::python::run_inline(RDKAFKA_PRODUCER, &[b]);
    assert!(
        out.status.success(),
        "confluent-kafka producer: {}",
        output_text(&out)
    );
    let text = common::eventually(
        "the three clients' metrics on /metrics",
        Duration::from_secs(30),
        || node.logs(),
        || {
            let text = common::scrape_metrics(metrics);
            let has = |prefix: &str, client: &str| {
                text.lines().any(|l| {
                    l.starts_with(prefix)
                        && l.contains(&format!("client_id=\"{client}\""))
                        && l.contains("client_instance_id=\"")
                })
            };
            if has("org_apache_kafka_producer_", "telemetry-producer")
                && has("org_apache_kafka_consumer_", "telemetry-consumer")
                && has("org_apache_kafka_producer_", "telemetry-rdkafka")
            {
                Ok(text)
            } else {
                Err(text)
            }
        },
    );
    // The producer's record count is a counter of what it sent.
    let sent: f64 = text
        .lines()
        .filter(|l| l.starts_with("org_apache_kafka_producer_record_send_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(sent > 0.0, "record.send.total pushed:\n{text}");
    // Only subscribed prefixes were pushed, and every family is typed once.
    let mut families = std::collections::BTreeSet::new();
    for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
        assert!(families.insert(line.to_string()), "{line} twice");
    }
    assert!(
        !text.lines().any(|l| l.starts_with("org_apache_kafka_")
            && l.contains("telemetry-consumer")
            && l.starts_with("org_apache_kafka_producer_")),
        "a consumer's series under the producer prefix"
    );
    let instances = text
        .lines()
        .find(|l| l.starts_with("kraftd_client_telemetry_clients{"))
        .expect("the store's gauge");
    // What the store holds, for the record (series and bytes for these three clients).
    for line in text
        .lines()
        .filter(|l| l.starts_with("kraftd_client_telemetry_"))
    {
        println!("{line}");
    }
    for client in [
        "telemetry-producer",
        "telemetry-consumer",
        "telemetry-rdkafka",
    ] {
        let label = format!("client_id=\"{client}\"");
        let n = text
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(&label))
            .count();
        println!("{client}: {n} series");
    }
    assert!(!instances.ends_with(" 0"), "{instances}");
}

fn get(raw: &mut Raw, id: Uuid) -> (i16, Uuid, i32) {
    match raw.call(
        0,
        RequestBody::GetTelemetrySubscriptions(GetTelemetrySubscriptionsRequest {
            client_instance_id: id,
            ..Default::default()
        }),
    ) {
        ResponseBody::GetTelemetrySubscriptions(r) => {
            (r.error_code, r.client_instance_id, r.subscription_id)
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn push(raw: &mut Raw, id: Uuid, sub: i32, codec: i8, metrics: &[u8], terminating: bool) -> i16 {
    match raw.call(
        0,
        RequestBody::PushTelemetry(PushTelemetryRequest {
            client_instance_id: id,
            subscription_id: sub,
            terminating,
            compression_type: codec,
            metrics: Bytes::copy_from_slice(metrics),
            ..Default::default()
        }),
    ) {
        ResponseBody::PushTelemetry(r) => r.error_code,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn push_telemetry_errors_are_kafkas() {
    let root = tempfile::tempdir().unwrap();
    // Pushes above 4096 bytes are too large.
    let (node, bootstrap, _) = node(root.path(), "telemetry.max.bytes=4096\n");
    let b = bootstrap.as_str();
    // The raw connection (client id "raw", no ApiVersions: software "unknown") pushes
    // once an hour: every early push is throttled, deterministically.
    tool_ok(
        CLIENT_METRICS,
        &[
            "--bootstrap-server",
            b,
            "--alter",
            "--name",
            "raw",
            "--metrics",
            "org.",
            "--interval",
            "3600000",
            "--match",
            "client_id=raw,client_software_name=unknown",
        ],
    );
    let mut raw = Raw::connect(b);
    let code = |c: ErrorCode| c.code();
    // Each check on a fresh instance (a get with the zero id), as Kafka orders them. A get
    // after UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE is answered at once.
    let (first, id, sub) = get(&mut raw, Uuid::ZERO);
    assert_eq!(first, 0);
    assert_ne!(id, Uuid::ZERO, "a fresh client instance id");
    assert_eq!(
        push(&mut raw, id, sub ^ 1, 0, b"", false),
        code(ErrorCode::UnknownSubscriptionId)
    );
    assert_eq!(get(&mut raw, id), (0, id, sub));
    let (_, id, sub) = get(&mut raw, Uuid::ZERO);
    assert_eq!(
        push(&mut raw, id, sub, 7, b"", false),
        code(ErrorCode::UnsupportedCompressionType)
    );
    assert_eq!(get(&mut raw, id).0, 0);
    // Pushing again within the interval is throttled, and so is a get.
    let (_, id, sub) = get(&mut raw, Uuid::ZERO);
    assert_eq!(push(&mut raw, id, sub, 0, b"", false), 0);
    assert_eq!(
        push(&mut raw, id, sub, 0, b"", false),
        code(ErrorCode::ThrottlingQuotaExceeded)
    );
    assert_eq!(
        get(&mut raw, id).0,
        code(ErrorCode::ThrottlingQuotaExceeded)
    );
    // The terminating push passes the interval; nothing after it.
    assert_eq!(push(&mut raw, id, sub, 0, b"", true), 0);
    assert_eq!(
        push(&mut raw, id, sub, 0, b"", false),
        code(ErrorCode::InvalidRequest)
    );
    // Reserved ids.
    assert_eq!(
        push(&mut raw, Uuid::ZERO, sub, 0, b"", false),
        code(ErrorCode::InvalidRequest)
    );
    // Over telemetry.max.bytes (4096 here).
    let (_, id2, sub2) = get(&mut raw, Uuid::ZERO);
    assert_eq!(
        push(&mut raw, id2, sub2, 0, &[0u8; 4097], false),
        code(ErrorCode::TelemetryTooLarge)
    );
    // Not OTLP, or not the codec it claims.
    let (_, id3, sub3) = get(&mut raw, Uuid::ZERO);
    assert_eq!(
        push(&mut raw, id3, sub3, 0, &[0x0a, 0xff, 0x01], false),
        code(ErrorCode::InvalidRecord)
    );
    let (_, id4, sub4) = get(&mut raw, Uuid::ZERO);
    assert_eq!(
        push(&mut raw, id4, sub4, 1, b"not gzip", false),
        code(ErrorCode::InvalidRecord)
    );
    // ListConfigResources v0 lists client-metrics subscriptions only; v1 refuses a type it
    // does not know.
    match raw.call(
        0,
        RequestBody::ListConfigResources(ListConfigResourcesRequest::default()),
    ) {
        ResponseBody::ListConfigResources(r) => {
            assert_eq!(r.error_code, 0);
            let names: Vec<_> = r
                .config_resources
                .iter()
                .map(|c| (c.resource_type, c.resource_name.as_str()))
                .collect();
            assert_eq!(names, [(16, "raw")]);
        }
        other => panic!("unexpected {other:?}"),
    }
    match raw.call(
        1,
        RequestBody::ListConfigResources(ListConfigResourcesRequest {
            resource_types: vec![64],
            ..Default::default()
        }),
    ) {
        ResponseBody::ListConfigResources(r) => {
            assert_eq!(r.error_code, code(ErrorCode::UnsupportedVersion))
        }
        other => panic!("unexpected {other:?}"),
    }
    match raw.call(
        1,
        RequestBody::ListConfigResources(ListConfigResourcesRequest::default()),
    ) {
        ResponseBody::ListConfigResources(r) => {
            let types: std::collections::BTreeSet<i8> =
                r.config_resources.iter().map(|c| c.resource_type).collect();
            // The broker (as BROKER and BROKER_LOGGER) and the subscription.
            assert_eq!(types, [4, 8, 16].into_iter().collect(), "{r:?}");
        }
        other => panic!("unexpected {other:?}"),
    }
    drop(node);
}

/// Kafka 4.4's own `ClientMetricsManager` (run by `tests/java/TelemetrySubscriptions.jsh`)
/// and kraftd answer the same GetTelemetrySubscriptions for the same subscriptions, client
/// and instance id alike: the metrics in the same order, the same subscription id.
#[test]
fn get_telemetry_subscriptions_answers_as_kafkas_manager() {
    let subscriptions = [
        (
            "s1",
            "org.apache.kafka.producer.,org.apache.kafka.consumer.,org.apache.kafka.admin.",
            "2000",
            "client_id=raw",
        ),
        ("s2", "x.", "100", "client_id=nobody"),
    ];
    let instance = "x1sq9ZfUT3awPhT4N8rG8g";
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/java/TelemetrySubscriptions.jsh");
    let lines: Vec<String> = subscriptions
        .iter()
        .map(|(n, m, i, k)| format!("{n}\t{m}\t{i}\t{k}"))
        .collect();
    let out = std::process::Command::new("jshell")
        .arg(format!("--class-path={}", common::kafka_jars::classpath()))
        .arg(format!("-R{}", common::kafka_jars::log4j_option()))
        .arg(&script)
        .env("KRAFTD_SUBSCRIPTIONS", lines.join("\n"))
        .env("KRAFTD_CLIENT_ID", "raw")
        .env("KRAFTD_INSTANCE_ID", instance)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("jshell runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let kafka = stdout
        .lines()
        .find_map(|l| l.strip_prefix("ANSWER\t"))
        .unwrap_or_else(|| panic!("no answer from Kafka's manager: {}", output_text(&out)))
        .to_string();

    let root = tempfile::tempdir().unwrap();
    let (node, bootstrap, _) = node(root.path(), "");
    for (name, metrics, interval, matching) in subscriptions {
        tool_ok(
            CLIENT_METRICS,
            &[
                "--bootstrap-server",
                &bootstrap,
                "--alter",
                "--name",
                name,
                "--metrics",
                metrics,
                "--interval",
                interval,
                "--match",
                matching,
            ],
        );
    }
    let mut raw = Raw::connect(&bootstrap);
    let id = Uuid::from_base64(instance).unwrap();
    let r = match raw.call(
        0,
        RequestBody::GetTelemetrySubscriptions(GetTelemetrySubscriptionsRequest {
            client_instance_id: id,
            ..Default::default()
        }),
    ) {
        ResponseBody::GetTelemetrySubscriptions(r) => r,
        other => panic!("unexpected {other:?}"),
    };
    let ours = format!(
        "{}\t{}\t{}\t{}\t{}\t[{}]\t{}\t{}",
        r.error_code,
        r.client_instance_id.to_base64(),
        r.subscription_id,
        r.requested_metrics.join(","),
        r.push_interval_ms,
        r.accepted_compression_types
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        r.telemetry_max_bytes,
        r.delta_temporality,
    );
    assert_eq!(ours, kafka, "kraftd's answer, then Kafka's");
    drop(node);
}
