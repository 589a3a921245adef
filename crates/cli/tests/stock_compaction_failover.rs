//! A compacted partition cleaned while its leader changes, with stock clients against real
//! processes (one controller, three brokers whose cleaners run every 200 ms):
//! `tests/python/compaction_failover.py` writes a replication-factor-3 compacted topic
//! with confluent-kafka (idempotent, acks=all, keyed) and reads it from the beginning with
//! kafka-python over and over, while this test kills the partition's leader with SIGKILL
//! and restarts it, twice. The script checks every read (offsets in order, never a key's
//! older value after its newer one) and that each key's last acknowledged value is read at
//! the end; this test then reads every replica's segment files and checks they agree with
//! it on the latest value per key, and that each replica's cleaner ran.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kraftd_protocol::records::Batches;

use common::python::{python, wait_until_brokers_listed};
use common::script::{partition_state, Script};
use common::{addresses, all_logs, formatted_cluster, segment_files, stop_gracefully, Node};

const TOPIC: &str = "compacted-failover";

/// Waits (up to `secs`) until `check` holds for the partition's (leader, ISR).
fn wait_partition(
    brokers: &[Node],
    secs: u64,
    what: &str,
    check: impl Fn(i32, &[i32]) -> bool,
) -> (i32, Vec<i32>) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let live: Vec<String> = brokers
            .iter()
            .filter(|n| n.child.is_some())
            .map(Node::address)
            .collect();
        let (leader, isr) = partition_state(&live.join(","), TOPIC, 0);
        if check(leader, &isr) {
            return (leader, isr);
        }
        assert!(
            Instant::now() < deadline,
            "not {what} after {secs} s (leader {leader}, isr {isr:?})\n{}",
            all_logs(brokers)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Each key's value (its sequence number) at its highest offset in a replica's segment
/// files, and how many records the files hold.
fn latest_per_key(partition_dir: &Path) -> (BTreeMap<String, u64>, usize) {
    let logs = segment_files(partition_dir);
    let mut latest = BTreeMap::new();
    let (mut count, mut previous) = (0, -1);
    for log in logs {
        for batch in Batches::new(Bytes::from(std::fs::read(&log).unwrap())) {
            let batch = batch.unwrap_or_else(|e| panic!("{}: {e}", log.display()));
            for r in batch.records().unwrap() {
                let r = r.unwrap();
                let offset = r.offset(&batch);
                assert!(
                    offset > previous,
                    "{}: {offset} after {previous}",
                    log.display()
                );
                previous = offset;
                count += 1;
                let key = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
                let value = String::from_utf8(r.value.unwrap().to_vec()).unwrap();
                latest.insert(key, value.trim_end_matches('x').parse().unwrap());
            }
        }
    }
    (latest, count)
}

#[test]
fn a_partition_cleaned_while_its_leader_is_killed_keeps_order_and_every_acknowledged_value() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 3);
    for broker in &brokers {
        broker.add_config(&["log.cleaner.backoff.ms=200"]);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = addresses(&brokers);
    wait_until_brokers_listed(&bootstrap, 3, || all_logs(&brokers));
    let stop_file = root.path().join("stop");
    let mut script = Script::spawn(
        root.path(),
        "compaction_failover.py",
        &[&bootstrap, TOPIC, stop_file.to_str().unwrap()],
    );
    script.wait_line(60, "waiting for the producer to start", |l| l == "started");
    // Brokers are numbered in order after the controller.
    let first = brokers[0].id;
    for _ in 0..2 {
        let before = script.acked_so_far();
        script.wait_acked(before + 4_000, 60);
        let (leader, _) = wait_partition(&brokers, 60, "led, all in sync", |l, isr| {
            l >= 0 && isr.len() == 3
        });
        brokers[(leader - first) as usize].kill9();
        wait_partition(&brokers, 30, "led by a live broker", |l, _| {
            l >= 0 && l != leader
        });
        let after = script.acked_so_far();
        script.wait_acked(after + 4_000, 60);
        brokers[(leader - first) as usize].start();
        wait_partition(
            &brokers,
            60,
            "with the restarted broker in sync",
            |l, isr| l >= 0 && isr.contains(&leader),
        );
    }
    std::fs::write(&stop_file, "").unwrap();
    let summary = script.finish(120, || all_logs(&brokers));
    eprintln!("{summary}");
    let expected: BTreeMap<String, u64> = summary
        .split("\"latest\": \"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("the summary names the latest values")
        .split(',')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect();
    assert_eq!(expected.len(), 50, "{summary}");

    // Every replica caught up, then stopped: their logs agree with what was read, and
    // each one's cleaner has checkpointed the partition (it cleaned it).
    wait_partition(&brokers, 60, "fully in sync", |l, isr| {
        l >= 0 && isr.len() == 3
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    for broker in &brokers {
        let checkpoint = broker.dir.join("data").join("cleaner-offset-checkpoint");
        while !std::fs::read_to_string(&checkpoint).is_ok_and(|c| c.contains(TOPIC)) {
            assert!(
                Instant::now() < deadline,
                "broker {} never cleaned {TOPIC}\n{}",
                broker.id,
                broker.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
    let written: usize = summary
        .split("\"written\": ")
        .nth(1)
        .and_then(|s| s.split([',', '}']).next())
        .and_then(|s| s.trim().parse().ok())
        .expect("the summary counts the records written");
    for broker in &brokers {
        let (latest, count) = latest_per_key(&broker.partition_dir(TOPIC, 0));
        assert_eq!(latest, expected, "broker {}'s log", broker.id);
        assert!(
            count < written,
            "broker {} holds {count} of {written} records: not cleaned",
            broker.id
        );
    }
}
