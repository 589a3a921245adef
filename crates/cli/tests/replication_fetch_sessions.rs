//! A follower replicating a few thousand partitions from one leader, with KIP-227
//! incremental fetch sessions on both sides: two brokers, one RF 2 topic of
//! [`PARTITIONS`] partitions (each broker leads half and follows the other half), records
//! produced in two rounds. After each round every partition's segment bytes are identical on both brokers
//! (every record replicated, nothing skipped), and the followers' counters show the
//! sessions at work: incremental requests, partitions left to the leader's session.

use std::path::Path;
use std::time::{Duration, Instant};

use common::python::{run_until_all_ok, wait_until_brokers_listed};
use common::{free_port, Node};

mod common;

const PARTITIONS: i32 = 2000;
const TOPIC: &str = "wide";

/// A partition's segment bytes on a node, in file order.
fn log_bytes(node: &Node, partition: i32) -> Vec<u8> {
    let Ok(entries) = std::fs::read_dir(node.partition_dir(TOPIC, partition)) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    files.sort();
    files
        .into_iter()
        .flat_map(|p| std::fs::read(p).unwrap_or_default())
        .collect()
}

/// Partitions whose bytes differ between the two brokers (or are still empty).
fn differing(brokers: &[Node]) -> Vec<i32> {
    (0..PARTITIONS)
        .filter(|&p| {
            let a = log_bytes(&brokers[0], p);
            a.is_empty() || a != log_bytes(&brokers[1], p)
        })
        .collect()
}

/// The value of `name` in a node's `/metrics` (None while unreachable).
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

fn wait_identical(brokers: &[Node], logs: &dyn Fn() -> String, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let left = differing(brokers);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {} partitions still differ (first {:?})\n{}",
            left.len(),
            &left[..left.len().min(10)],
            logs()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn followers_of_thousands_of_partitions_replicate_every_record_through_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let root: &Path = dir.path();
    let (_cluster_id, mut controllers, mut brokers) = common::formatted_cluster(root, 1, 2);
    // One CreateTopics of thousands of partitions is one atomic metadata batch of a few
    // hundred KiB: more than the test clusters' tiny metadata segments hold.
    for c in &controllers {
        c.add_config(&[
            "internal.metadata.log.segment.bytes=8388608",
            "metadata.log.max.record.bytes.between.snapshots=16777216",
            // Creating thousands of partition logs keeps a broker busy for a while on a
            // loaded machine: no fencing (and leader moves) in the middle of the test.
            "broker.session.timeout.ms=30000",
        ]);
    }
    let ports = [free_port(), free_port()];
    for (b, port) in brokers.iter().zip(ports) {
        b.add_config(&[&format!("metrics.port={port}")]);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let all = common::addresses(&brokers);
    let logs = || {
        common::all_logs(&controllers)
            + &common::all_logs(&brokers)
                .lines()
                .rev()
                .take(200)
                .collect::<Vec<_>>()
                .join("\n")
    };
    wait_until_brokers_listed(&all, 2, logs);
    let parts = PARTITIONS.to_string();

    run_until_all_ok(
        "wide_topic_produce.py",
        &[&all, TOPIC, &parts, "0", "create"],
        logs,
    );
    wait_identical(&brokers, &logs, "after the first round");
    run_until_all_ok("wide_topic_produce.py", &[&all, TOPIC, &parts, "1"], logs);
    wait_identical(&brokers, &logs, "after the second round");

    for port in ports {
        let m = |name: &str| metric(port, &format!("kraftd_replica_fetcher_{name}")).unwrap();
        let (full, incremental) = (m("full_requests_total"), m("incremental_requests_total"));
        let (sent, omitted) = (m("partitions_sent_total"), m("partitions_omitted_total"));
        assert!(
            full >= 1.0 && incremental > full,
            "full {full}, incremental {incremental}"
        );
        assert!(
            omitted > sent,
            "sent {sent}, omitted {omitted}: sessions leave the idle out"
        );
        eprintln!(
            "follower on :{port}: {full} full and {incremental} incremental requests, \
             {sent} partitions sent, {omitted} omitted, {} session resets",
            m("session_resets_total")
        );
    }
}
