//! Apache Kafka 4.4.0's own tools against an all-kraftd cluster and then a mixed one (issue
//! 31): what an operator runs day to day, from Kafka's jars, unchanged.
//!
//! One kraftd controller and two kraftd brokers first (all kraftd); then an Apache Kafka
//! broker joins them (mixed). On each, through a broker of that cluster (a kraftd broker,
//! then the Kafka one, with a topic whose replicas span both kinds), Kafka's tools:
//! `kafka-topics` (create, describe with a full ISR, list), `kafka-configs` (alter, describe),
//! `kafka-acls` (add, list), `kafka-console-producer` then `kafka-console-consumer` (every
//! line read back, in a group), `kafka-producer-perf-test` (transactional, acks=all),
//! `kafka-consumer-groups` (list, describe: the console consumer's committed offsets) and
//! `kafka-transactions` (list, describe: the perf test's transactional id, committed). Then
//! on what the kraftd controller wrote: `kafka-dump-log --cluster-metadata-decoder` on its
//! metadata log and the metadata shell's view of its newest snapshot (every topic, topic
//! config, ACL and broker of both phases). The shell's jar (kafka-shell) is not served by this
//! machine's package registry: `tests/java/MetadataShellImage.java` runs what the shell runs
//! under its command line (Kafka's `SnapshotFileReader` into Kafka's `MetadataLoader`, the
//! tree of Kafka's `MetadataImageNode` it navigates), so a snapshot Kafka's image code cannot
//! load fails here as it would there.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::kafka_jars::{
    self, kafka_broker, output_text, run_java, run_tool, run_tool_with_stdin, KafkaNode,
};
use common::python::wait_until_brokers_listed;
use common::secured::AUTHORIZER;
use common::{eventually, formatted_cluster};

/// Every node's authorizer lines: ACLs are enforced (so `kafka-acls` has an authorizer to
/// talk to) and the tools, on PLAINTEXT as `ANONYMOUS`, are super users.
const SECURITY: [&str; 2] = [AUTHORIZER, "super.users=User:ANONYMOUS"];
/// The lines the console producer writes and the console consumer must read back.
const LINES: usize = 20;
/// The transactional perf test's records.
const PERF_RECORDS: usize = 2_000;

#[test]
fn kafka_tools_work_on_an_all_kraftd_cluster_and_on_a_mixed_one() {
    let root = tempfile::tempdir().unwrap();
    let (cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 2);
    for n in controllers.iter().chain(&brokers) {
        n.add_config(&SECURITY);
    }
    for n in controllers.iter_mut().chain(brokers.iter_mut()) {
        n.start();
    }
    let kraftd_bootstrap = common::addresses(&brokers);
    let logs = || {
        let mut text = common::all_logs(&controllers);
        text.push_str(&common::all_logs(&brokers));
        text
    };
    wait_until_brokers_listed(&kraftd_bootstrap, 2, logs);
    let all_kraftd = battery(&kraftd_bootstrap, "all-kraftd", 2, &logs);

    // A Kafka broker joins: the mixed cluster, its tools run through the Kafka broker.
    let quorum = common::voters(&controllers);
    let mut kafka: KafkaNode = kafka_broker(
        root.path(),
        4,
        &quorum,
        &cluster_id,
        2,
        &SECURITY.join("\n"),
    );
    kafka.start();
    kafka.wait_started(Duration::from_secs(120));
    let mixed_logs = || format!("{}\n--- Kafka broker 4 ---\n{}", logs(), kafka.logs());
    wait_until_brokers_listed(&kafka.address(), 3, mixed_logs);
    let mixed = battery(&kafka.address(), "mixed", 3, &mixed_logs);

    // What the kraftd controller wrote, read by Kafka's code.
    let metadata = controllers[0].metadata_dir();
    // Every segment of its metadata log decodes.
    let segments = common::segment_files(&metadata);
    assert!(
        !segments.is_empty(),
        "no metadata segment in {}",
        metadata.display()
    );
    for segment in &segments {
        let (ok, stdout, stderr) =
            kafka_jars::dump_log_segment_with(segment, &["--cluster-metadata-decoder"]);
        assert!(
            ok && stdout.contains(r#""type":""#),
            "kafka-dump-log --cluster-metadata-decoder {}: {stderr}\n{stdout}",
            segment.display()
        );
    }
    let classes = kafka_jars::javac(root.path(), "MetadataShellImage.java");
    let topics = [&all_kraftd, &mixed];
    let shown = eventually(
        "kafka-dump-log and the metadata shell read both phases in the newest snapshot",
        Duration::from_secs(120),
        mixed_logs,
        || {
            let snapshot = common::newest_snapshot(&metadata).ok_or("no snapshot yet")?;
            let mut paths = vec!["topics/byName".to_string(), "cluster/brokers".to_string()];
            for t in topics {
                paths.push(format!("configs/TOPIC:{t}/retention.ms"));
            }
            paths.push("acls/byId/*".to_string());
            // kafka-dump-log decodes the snapshot, both phases' topics in it.
            let (ok, stdout, stderr) =
                kafka_jars::dump_log_segment_with(&snapshot, &["--cluster-metadata-decoder"]);
            if !ok {
                return Err(format!("kafka-dump-log {}: {stderr}", snapshot.display()));
            }
            if let Some(t) = topics
                .iter()
                .find(|t| !stdout.contains(&format!("\"name\":\"{t}\"")))
            {
                return Err(format!(
                    "kafka-dump-log: no TopicRecord of {t} in {}",
                    snapshot.display()
                ));
            }
            let shown = metadata_shell(&classes, &snapshot, &paths)?;
            let listed = |path: &str| -> Vec<&str> {
                shown
                    .lines()
                    .filter_map(|l| l.strip_prefix(&format!("ls {path}: ")))
                    .collect()
            };
            let missing: Vec<&&String> = topics
                .iter()
                .filter(|t| !listed("topics/byName").contains(&t.as_str()))
                .collect();
            if !missing.is_empty() {
                return Err(format!("{}: no {missing:?}:\n{shown}", snapshot.display()));
            }
            Ok(shown)
        },
    );
    // Every kind of node the cluster had, as registered brokers: kraftd's 2 and 3, Kafka's 4.
    for id in ["2", "3", "4"] {
        assert!(
            shown.contains(&format!("ls cluster/brokers: {id}\n")),
            "broker {id} not in the shell's cluster/brokers:\n{shown}"
        );
    }
    for t in topics {
        assert!(
            shown.contains(&format!("cat configs/TOPIC:{t}/retention.ms: 86400000")),
            "{t}'s retention.ms not in the shell's configs:\n{shown}"
        );
        let acl = shown
            .lines()
            .find(|l| l.starts_with("cat acls/byId/") && l.contains(&format!("resourceName={t},")));
        assert!(
            acl.is_some_and(|l| l.contains("principal=User:alice") && l.contains("READ")),
            "alice's READ on {t} not in the shell's acls:\n{shown}"
        );
    }
    drop(kafka);
}

/// Kafka's tools through `bootstrap` on a topic of its own (`tools-<tag>`, 3 partitions,
/// replication factor `rf`); returns the topic's name.
fn battery(bootstrap: &str, tag: &str, rf: usize, logs: &dyn Fn() -> String) -> String {
    let topic = format!("tools-{tag}");
    let group = format!("tools-group-{tag}");
    let txn = format!("tools-txn-{tag}");
    let tool = |class: &str, args: &[&str]| {
        let out = run_tool(class, args);
        assert!(
            out.status.success(),
            "{class} {args:?}: {}\n{}",
            output_text(&out),
            logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let topics = "org.apache.kafka.tools.TopicCommand";
    tool(
        topics,
        &[
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--topic",
            &topic,
            "--partitions",
            "3",
            "--replication-factor",
            &rf.to_string(),
        ],
    );
    eventually(
        &format!("kafka-topics --describe {topic}: 3 partitions, each with {rf} in sync"),
        Duration::from_secs(60),
        logs,
        || {
            let out = run_tool(
                topics,
                &[
                    "--bootstrap-server",
                    bootstrap,
                    "--describe",
                    "--topic",
                    &topic,
                ],
            );
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let full: Vec<&str> = text
                .lines()
                .filter(|l| {
                    l.contains("Partition: ")
                        && l.split("Isr: ")
                            .nth(1)
                            .and_then(|isr| isr.split_whitespace().next())
                            .is_some_and(|isr| isr.split(',').count() == rf)
                })
                .collect();
            if text.contains("PartitionCount: 3") && full.len() == 3 {
                Ok(())
            } else {
                Err(output_text(&out))
            }
        },
    );
    let listed = tool(topics, &["--bootstrap-server", bootstrap, "--list"]);
    assert!(
        listed.lines().any(|l| l.trim() == topic),
        "{topic} not listed: {listed}"
    );

    let configs = "org.apache.kafka.tools.ConfigCommand";
    let entity = ["--entity-type", "topics", "--entity-name", &topic];
    let mut alter = vec!["--bootstrap-server", bootstrap, "--alter"];
    alter.extend(entity);
    alter.extend(["--add-config", "retention.ms=86400000"]);
    tool(configs, &alter);
    let mut describe = vec!["--bootstrap-server", bootstrap, "--describe"];
    describe.extend(entity);
    let described = tool(configs, &describe);
    assert!(
        described.contains("retention.ms=86400000"),
        "kafka-configs --describe {topic}: {described}"
    );

    let acls = "org.apache.kafka.tools.AclCommand";
    tool(
        acls,
        &[
            "--bootstrap-server",
            bootstrap,
            "--add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Read",
            "--topic",
            &topic,
        ],
    );
    let acl_list = tool(
        acls,
        &["--bootstrap-server", bootstrap, "--list", "--topic", &topic],
    );
    assert!(
        acl_list.contains("principal=User:alice") && acl_list.contains("operation=READ"),
        "kafka-acls --list --topic {topic}: {acl_list}"
    );

    let lines: Vec<String> = (0..LINES).map(|i| format!("{tag}-line-{i}")).collect();
    let out = run_tool_with_stdin(
        "org.apache.kafka.tools.ConsoleProducer",
        &[
            "--bootstrap-server",
            bootstrap,
            "--topic",
            &topic,
            "--producer-property",
            "acks=all",
        ],
        &format!("{}\n", lines.join("\n")),
    );
    assert!(
        out.status.success(),
        "kafka-console-producer: {}\n{}",
        output_text(&out),
        logs()
    );
    let consumed = tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &[
            "--bootstrap-server",
            bootstrap,
            "--topic",
            &topic,
            "--group",
            &group,
            "--from-beginning",
            "--max-messages",
            &LINES.to_string(),
            "--timeout-ms",
            "60000",
        ],
    );
    let mut read: Vec<&str> = consumed.lines().collect();
    read.sort_unstable();
    let mut expected: Vec<&str> = lines.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(read, expected, "kafka-console-consumer read back");

    let perf = tool(
        "org.apache.kafka.tools.ProducerPerformance",
        &[
            "--topic",
            &topic,
            "--num-records",
            &PERF_RECORDS.to_string(),
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--transactional-id",
            &txn,
            "--transaction-duration-ms",
            "200",
            "--producer-props",
            &format!("bootstrap.servers={bootstrap}"),
            "acks=all",
        ],
    );
    assert!(
        perf.contains(&format!("{PERF_RECORDS} records sent")),
        "kafka-producer-perf-test: {perf}"
    );

    let groups = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
    let group_list = tool(groups, &["--bootstrap-server", bootstrap, "--list"]);
    assert!(
        group_list.lines().any(|l| l.trim() == group),
        "{group} not in kafka-consumer-groups --list: {group_list}"
    );
    let offsets = eventually(
        &format!("kafka-consumer-groups --describe {group}: the console consumer's commits"),
        Duration::from_secs(60),
        logs,
        || {
            let out = run_tool(
                groups,
                &[
                    "--bootstrap-server",
                    bootstrap,
                    "--describe",
                    "--group",
                    &group,
                ],
            );
            let text = String::from_utf8_lossy(&out.stdout);
            // GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
            let rows: BTreeMap<i32, i64> = text
                .lines()
                .filter_map(|l| {
                    let cols: Vec<&str> = l.split_whitespace().collect();
                    if cols.len() < 4 || cols[0] != group || cols[1] != topic {
                        return None;
                    }
                    Some((cols[2].parse().ok()?, cols[3].parse().ok()?))
                })
                .collect();
            // The console consumer commits the partitions it had a position on when it
            // stopped (the lines went to one partition, whose batch they were): together,
            // every line it read.
            if rows.values().sum::<i64>() == LINES as i64 {
                Ok(rows)
            } else {
                Err(output_text(&out))
            }
        },
    );
    assert!(!offsets.is_empty());

    let transactions = "org.apache.kafka.tools.TransactionsCommand";
    let txn_list = tool(transactions, &["--bootstrap-server", bootstrap, "list"]);
    assert!(
        txn_list
            .lines()
            .any(|l| l.split_whitespace().next() == Some(&txn)),
        "{txn} not in kafka-transactions list: {txn_list}"
    );
    let txn_state = tool(
        transactions,
        &[
            "--bootstrap-server",
            bootstrap,
            "describe",
            "--transactional-id",
            &txn,
        ],
    );
    assert!(
        txn_state.contains(&txn) && txn_state.contains("CompleteCommit"),
        "kafka-transactions describe {txn}: {txn_state}"
    );
    topic
}

/// `tests/java/MetadataShellImage.java` (the metadata shell's loading and tree) on
/// `snapshot`: its `ls`/`cat` lines for `paths`, or why it failed.
fn metadata_shell(classes: &Path, snapshot: &Path, paths: &[String]) -> Result<String, String> {
    let mut args = vec![snapshot.to_str().unwrap()];
    args.extend(paths.iter().map(String::as_str));
    let out = run_java(
        &format!("{}:{}", classes.display(), kafka_jars::classpath()),
        "MetadataShellImage",
        &args,
        None,
        Duration::from_secs(90),
    );
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(output_text(&out))
    }
}
