//! Replication throttles on real processes, set with Kafka 4.4.0's own `kafka-configs`
//! (`org.apache.kafka.tools.ConfigCommand`, from the jars): a follower that was down comes
//! back behind by several MiB on three RF 2 topics, one throttled on the leader side
//! (`leader.replication.throttled.rate` on the leader's id, the topic's
//! `leader.replication.throttled.replicas`), one on the follower side (the cluster default
//! `follower.replication.throttled.rate`, `follower.replication.throttled.replicas`) and one
//! not throttled. The unthrottled one catches up; the throttled ones have not caught up a
//! while after that (a lower bound: at 256 KiB/s, 8 MiB take half a minute, where the
//! unthrottled one took a fraction of it; a slow machine only makes it truer), and the
//! metrics show the throttled bytes on both sides. Once the throttles are removed, they
//! catch up.

use std::path::Path;
use std::time::{Duration, Instant};

use common::python::wait_until_brokers_listed;
use common::{free_port, kafka_jars, stop_gracefully, Node};

mod common;

const RATE: &str = "262144";
/// Bytes produced into each topic.
const RECORDS: u32 = 8192;
const RECORD_SIZE: u32 = 1024;

/// A Kafka tool's main class with `args`; its output (panics unless it exits 0).
fn tool(class: &str, args: &[&str]) -> String {
    let out = kafka_jars::run_tool(class, args);
    assert!(
        out.status.success(),
        "{class} {args:?}: {}",
        kafka_jars::output_text(&out)
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `kafka-configs --bootstrap-server <b> --alter <entity> <op>`.
fn configs(bootstrap: &str, entity: &[&str], op: &[&str]) {
    let mut args = vec!["--bootstrap-server", bootstrap, "--alter"];
    args.extend(entity);
    args.extend(op);
    tool("org.apache.kafka.tools.ConfigCommand", &args);
}

/// The bytes of a partition's segment files on a node (0 before it exists).
fn log_bytes(node: &Node, topic: &str) -> u64 {
    let Ok(entries) = std::fs::read_dir(node.partition_dir(topic, 0)) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// The value of the first sample of `name` in a node's `/metrics` (None while unreachable).
fn metric(port: u16, name: &str) -> Option<f64> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    let line = body.lines().find(|l| l.starts_with(&format!("{name}{{")))?;
    line.rsplit(' ').next()?.parse().ok()
}

/// Every node's logs under `root` (`node-*/kraftd-*.log`), for a failure's message.
fn node_logs(root: &Path) -> String {
    let mut out = String::new();
    for node in std::fs::read_dir(root).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(node.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = file.file_name().to_string_lossy().into_owned();
            if name.starts_with("kraftd-") && name.ends_with(".log") {
                out += &format!("== {}/{name}\n", node.file_name().to_string_lossy());
                out += &std::fs::read_to_string(file.path()).unwrap_or_default();
            }
        }
    }
    out
}

fn wait_for(
    what: &str,
    timeout: Duration,
    logs: impl Fn() -> String,
    mut done: impl FnMut() -> bool,
) {
    common::eventually(what, timeout, logs, || {
        if done() {
            Ok(())
        } else {
            Err("not yet".into())
        }
    })
}

#[test]
fn a_throttled_follower_catches_up_slowly_until_the_throttle_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let root: &Path = dir.path();
    let (_cluster_id, mut controllers, mut brokers) = common::formatted_cluster(root, 1, 2);
    let metrics_ports = [free_port(), free_port()];
    for (b, port) in brokers.iter().zip(metrics_ports) {
        b.add_config(&[&format!("metrics.port={port}")]);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let (leader_id, follower_id) = (brokers[0].id, brokers[1].id);
    let bootstrap = brokers[0].address();
    let all = common::addresses(&brokers);
    let logs = || node_logs(root);
    wait_until_brokers_listed(&all, 2, logs);

    let topics = ["lead", "follow", "free"];
    let assignment = format!("{leader_id}:{follower_id}");
    for topic in topics {
        tool(
            "org.apache.kafka.tools.TopicCommand",
            &[
                "--bootstrap-server",
                &bootstrap,
                "--create",
                "--topic",
                topic,
                "--replica-assignment",
                &assignment,
            ],
        );
    }
    // The follower goes away (a controlled shutdown takes it out of the ISRs); the leader
    // takes several MiB per topic alone.
    stop_gracefully(&mut brokers[1..]);
    let (records, size) = (RECORDS.to_string(), RECORD_SIZE.to_string());
    for topic in topics {
        tool(
            "org.apache.kafka.tools.ProducerPerformance",
            &[
                "--topic",
                topic,
                "--num-records",
                &records,
                "--record-size",
                &size,
                "--throughput",
                "-1",
                "--bootstrap-server",
                &bootstrap,
                "--command-property",
                "acks=1",
                "linger.ms=5",
            ],
        );
    }
    let leader = &brokers[0];
    let full: Vec<u64> = topics.iter().map(|t| log_bytes(leader, t)).collect();
    assert!(
        full.iter().all(|b| *b >= u64::from(RECORDS * RECORD_SIZE)),
        "{full:?}"
    );

    // Throttles, as an operator sets them: the leader's rate on its id, the follower's as
    // the cluster default (its broker is down, so nothing can be sent to it by id).
    let leader_entity = leader_id.to_string();
    let broker = ["--entity-type", "brokers", "--entity-name", &leader_entity];
    let default = ["--entity-type", "brokers", "--entity-default"];
    let leader_rate = format!("leader.replication.throttled.rate={RATE}");
    let follower_rate = format!("follower.replication.throttled.rate={RATE}");
    configs(&bootstrap, &broker, &["--add-config", &leader_rate]);
    configs(&bootstrap, &default, &["--add-config", &follower_rate]);
    let lead_replicas = format!("leader.replication.throttled.replicas=0:{leader_id}");
    let follow_replicas = format!("follower.replication.throttled.replicas=0:{follower_id}");
    configs(
        &bootstrap,
        &["--entity-type", "topics", "--entity-name", "lead"],
        &["--add-config", &lead_replicas],
    );
    configs(
        &bootstrap,
        &["--entity-type", "topics", "--entity-name", "follow"],
        &["--add-config", &follow_replicas],
    );

    brokers[1].start();
    let follower_metrics = metrics_ports[1];
    let leader_metrics = metrics_ports[0];
    let caught_up = |brokers: &[Node], i: usize| log_bytes(&brokers[1], topics[i]) >= full[i];
    // The unthrottled topic flows at full speed beside the throttled ones.
    wait_for(
        "the unthrottled topic caught up",
        Duration::from_secs(60),
        logs,
        || caught_up(&brokers, 2),
    );
    let free_done = Instant::now();
    // Both sides measured throttled bytes.
    wait_for(
        "throttled bytes in the metrics",
        Duration::from_secs(30),
        logs,
        || {
            metric(leader_metrics, "kafka_server_LeaderReplication_byte_rate")
                .is_some_and(|v| v > 0.0)
                && metric(
                    follower_metrics,
                    "kafka_server_FollowerReplication_byte_rate",
                )
                .is_some_and(|v| v > 0.0)
        },
    );
    assert!(
        metric(
            follower_metrics,
            "kafka_server_BrokerTopicMetrics_ReplicationBytesInPerSec_total"
        )
        .is_some_and(|v| v >= full[2] as f64),
        "the follower counted what it fetched"
    );
    assert!(
        metric(
            leader_metrics,
            "kafka_server_BrokerTopicMetrics_ReplicationBytesOutPerSec_total"
        )
        .is_some_and(|v| v >= full[2] as f64),
        "the leader counted what it sent"
    );
    // Five seconds more than the unthrottled topic needed (all of its time to start and
    // catch up included), the throttled ones are still behind: 256 KiB/s lets through a
    // fraction of their 8 MiB.
    // Checked at every poll, not once at the end.
    loop {
        for i in 0..2 {
            let have = log_bytes(&brokers[1], topics[i]);
            assert!(
                have < full[i],
                "{}: {:.1} s after the unthrottled topic, the throttled follower has {have} of {} bytes already",
                topics[i],
                free_done.elapsed().as_secs_f64(),
                full[i]
            );
        }
        if free_done.elapsed() >= Duration::from_secs(5) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "{:.1} s after the unthrottled topic caught up, the follower has {:?} of {full:?} bytes",
        free_done.elapsed().as_secs_f64(),
        topics.map(|t| log_bytes(&brokers[1], t))
    );

    // Throttles off: both catch up.
    configs(
        &bootstrap,
        &broker,
        &["--delete-config", "leader.replication.throttled.rate"],
    );
    configs(
        &bootstrap,
        &default,
        &["--delete-config", "follower.replication.throttled.rate"],
    );
    let unthrottled = Instant::now();
    wait_for(
        "the throttled topics caught up once unthrottled",
        Duration::from_secs(60),
        logs,
        || caught_up(&brokers, 0) && caught_up(&brokers, 1),
    );
    eprintln!(
        "caught up {:.1} s after the throttles were removed",
        unthrottled.elapsed().as_secs_f64()
    );
}
