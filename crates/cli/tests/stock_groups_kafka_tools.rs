//! Kafka's own group tools against kraftd: Apache Kafka 4.4.0's console consumer with
//! `--group` (from the jars the test setup fetches, see `common/kafka_jars.rs`) reads a
//! topic and commits; `kafka-consumer-groups` (`ConsumerGroupCommand`) lists and describes
//! the group (offsets at the log end, no lag), resets its offsets to the earliest,
//! shows an admin client's `alter_consumer_group_offsets`, and deletes it; `kafka-features describe` (`FeatureCommand`, reading ApiVersions) shows
//! `group.version` finalized at 1.

mod common;

use std::process::Output;

use common::kafka_jars::{output_text as text, run_tool as tool};
use common::python::{python, run_inline, wait_until_brokers_listed};
use common::{addresses, all_logs, formatted_cluster, stop_gracefully};

const TOPIC: &str = "tools-topic";
const GROUP: &str = "tools-group";

/// `kafka-consumer-groups` with `args`.
fn groups(bootstrap: &str, args: &[&str]) -> Output {
    let mut all = vec!["--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        &all,
    )
}

/// The rows of `--describe` for the topic: (partition, current offset, log end, lag).
fn described(out: &Output) -> Vec<(i32, String, String, String)> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut rows: Vec<_> = stdout
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.len() >= 6 && cols[0] == GROUP && cols[1] == TOPIC).then(|| {
                (
                    cols[2].parse().unwrap(),
                    cols[3].to_string(),
                    cols[4].to_string(),
                    cols[5].to_string(),
                )
            })
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn kafkas_console_consumer_and_consumer_groups_tool_work_against_kraftd() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    brokers[0].add_config(&["group.initial.rebalance.delay.ms=0"]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = addresses(&brokers);
    wait_until_brokers_listed(&bootstrap, 1, || all_logs(&brokers));
    let produce = run_inline(
        r#"
import sys, time
sys.path.insert(0, sys.argv[2])
from clients_common import create_topic
from confluent_kafka import Producer
from confluent_kafka import admin as cadmin
create_topic(cadmin.AdminClient({"bootstrap.servers": sys.argv[1]}), "tools-topic", 2, 1, {}, time.time() + 60)
p = Producer({"bootstrap.servers": sys.argv[1]})
for i in range(100):
    p.produce("tools-topic", value=b"m%d" % i, partition=i % 2)
p.flush(30)
"#,
        &[
            &bootstrap,
            common::python::script_path("").to_str().unwrap(),
        ],
    );
    assert!(
        produce.status.success(),
        "{}",
        String::from_utf8_lossy(&produce.stderr)
    );

    // KIP-848 groups are on: group.version 1 is finalized at format, and ApiVersions says
    // so (Kafka's FeatureCommand reads it from there).
    let features = tool(
        "org.apache.kafka.tools.FeatureCommand",
        &["--bootstrap-server", &bootstrap, "describe"],
    );
    let group_version = String::from_utf8_lossy(&features.stdout)
        .lines()
        .find(|l| l.contains("Feature: group.version"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "));
    assert!(
        group_version.as_deref().is_some_and(|l| l
            .contains("SupportedMinVersion: 0 SupportedMaxVersion: 1 FinalizedVersionLevel: 1")),
        "kafka-features describe\n{}",
        text(&features)
    );

    let consumed = tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--topic",
            TOPIC,
            "--group",
            GROUP,
            "--from-beginning",
            "--max-messages",
            "100",
            "--timeout-ms",
            "60000",
        ],
    );
    let lines = String::from_utf8_lossy(&consumed.stdout)
        .lines()
        .filter(|l| l.starts_with('m'))
        .count();
    assert!(
        consumed.status.success() && lines == 100,
        "console consumer read {lines} of 100\n{}\n{}",
        text(&consumed),
        all_logs(&brokers)
    );

    let list = groups(&bootstrap, &["--list"]);
    assert!(
        String::from_utf8_lossy(&list.stdout)
            .lines()
            .any(|l| l.trim() == GROUP),
        "--list\n{}",
        text(&list)
    );
    let describe = groups(&bootstrap, &["--describe", "--group", GROUP]);
    let rows = described(&describe);
    assert_eq!(
        rows,
        vec![
            (0, "50".into(), "50".into(), "0".into()),
            (1, "50".into(), "50".into(), "0".into())
        ],
        "--describe\n{}",
        text(&describe)
    );

    let reset = groups(
        &bootstrap,
        &[
            "--reset-offsets",
            "--group",
            GROUP,
            "--topic",
            TOPIC,
            "--to-earliest",
            "--execute",
        ],
    );
    assert!(reset.status.success(), "--reset-offsets\n{}", text(&reset));
    let describe = groups(&bootstrap, &["--describe", "--group", GROUP]);
    let rows = described(&describe);
    assert_eq!(
        rows,
        vec![
            (0, "0".into(), "50".into(), "50".into()),
            (1, "0".into(), "50".into(), "50".into())
        ],
        "--describe after the reset\n{}",
        text(&describe)
    );

    // An admin client's alter_consumer_group_offsets on the inactive group.
    let alter = run_inline(
        r#"
import sys
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka import admin as cadmin
a = cadmin.AdminClient({"bootstrap.servers": sys.argv[1]})
req = ConsumerGroupTopicPartitions("tools-group", [TopicPartition("tools-topic", 0, 10)])
for f in a.alter_consumer_group_offsets([req]).values():
    for tp in f.result(30).topic_partitions:
        assert tp.error is None, tp
"#,
        &[&bootstrap],
    );
    assert!(
        alter.status.success(),
        "{}",
        String::from_utf8_lossy(&alter.stderr)
    );
    let describe = groups(&bootstrap, &["--describe", "--group", GROUP]);
    let rows = described(&describe);
    assert_eq!(
        rows,
        vec![
            (0, "10".into(), "50".into(), "40".into()),
            (1, "0".into(), "50".into(), "50".into())
        ],
        "--describe after alter_consumer_group_offsets\n{}",
        text(&describe)
    );

    let delete = groups(&bootstrap, &["--delete", "--group", GROUP]);
    assert!(
        delete.status.success() && String::from_utf8_lossy(&delete.stdout).contains("successful"),
        "--delete\n{}",
        text(&delete)
    );
    let list = groups(&bootstrap, &["--list"]);
    assert!(
        !String::from_utf8_lossy(&list.stdout)
            .lines()
            .any(|l| l.trim() == GROUP),
        "--list after the delete\n{}",
        text(&list)
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
