//! Automatic preferred-leader balancing on real processes (issue 30): Kafka's controller moves
//! leadership back to each partition's preferred replica (`auto.leader.rebalance.enable`,
//! every `leader.imbalance.check.interval.seconds`), so a rolling restart of every broker
//! does not end with one broker leading nothing and the others everything.
//!
//! Three controllers and three brokers, a topic of 30 partitions at RF 3 under a stock
//! idempotent acks=all producer (`python/idempotent_failover.py`, which reads everything
//! back at the end and checks no acknowledged record is lost). Each broker in turn is stopped
//! with SIGTERM (a controlled shutdown), restarted, and waited for until it is back in every
//! ISR; after the last one, leadership returns to the preferred replicas: each broker leads
//! within one partition of a third. With `auto.leader.rebalance.enable=false` the restarted
//! broker leads nothing for several check intervals.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::python::{run_inline, wait_until_brokers_listed};
use common::script::Script;
use common::{addresses, all_logs, formatted_cluster, stop_gracefully, Node};

const TOPIC: &str = "rebalanced";
const PARTITIONS: usize = 30;

/// Each partition of `topic` as Metadata says: (leader, replicas, ISR).
type Partitions = BTreeMap<i32, (i32, Vec<i32>, Vec<i32>)>;

fn partitions(bootstrap: &str, topic: &str) -> Result<Partitions, String> {
    let script = r#"
import sys
from confluent_kafka.admin import AdminClient
try:
    md = AdminClient({"bootstrap.servers": sys.argv[1]}).list_topics(sys.argv[2], timeout=5)
    for p, pm in sorted(md.topics[sys.argv[2]].partitions.items()):
        print(p, pm.leader, ",".join(map(str, pm.replicas)), ",".join(map(str, pm.isrs)))
except Exception as e:
    print("error", e)
"#;
    let out = run_inline(script, &[bootstrap, topic]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let ids = |s: &str| -> Vec<i32> { s.split(',').filter_map(|x| x.parse().ok()).collect() };
    let mut parsed = Partitions::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        match cols.as_slice() {
            [p, leader, replicas, isr] => {
                let (Ok(p), Ok(leader)) = (p.parse(), leader.parse()) else {
                    return Err(text);
                };
                parsed.insert(p, (leader, ids(replicas), ids(isr)));
            }
            _ => return Err(text),
        }
    }
    if parsed.len() == PARTITIONS {
        Ok(parsed)
    } else {
        Err(text)
    }
}

/// How many partitions each broker leads (brokers leading none included, from `brokers`).
fn leader_counts(partitions: &Partitions, brokers: &[i32]) -> BTreeMap<i32, usize> {
    let mut counts: BTreeMap<i32, usize> = brokers.iter().map(|b| (*b, 0)).collect();
    for (leader, _, _) in partitions.values() {
        *counts.entry(*leader).or_insert(0) += 1;
    }
    counts
}

struct Cluster {
    root: tempfile::TempDir,
    controllers: Vec<Node>,
    brokers: Vec<Node>,
}

impl Cluster {
    /// Three controllers with `controller_lines` added, three brokers, all started and the
    /// brokers listed.
    fn start(controller_lines: &[&str]) -> Cluster {
        let root = tempfile::tempdir().unwrap();
        let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 3, 3);
        for c in &controllers {
            c.add_config(controller_lines);
        }
        for node in controllers.iter_mut().chain(brokers.iter_mut()) {
            node.start();
        }
        let cluster = Cluster {
            root,
            controllers,
            brokers,
        };
        wait_until_brokers_listed(&cluster.bootstrap(), 3, || cluster.logs());
        cluster
    }

    fn bootstrap(&self) -> String {
        addresses(&self.brokers)
    }

    fn broker_ids(&self) -> Vec<i32> {
        self.brokers.iter().map(|b| b.id).collect()
    }

    fn logs(&self) -> String {
        format!(
            "{}\n{}",
            all_logs(&self.controllers),
            all_logs(&self.brokers)
        )
    }

    /// Waits until every partition has its full ISR; the partitions then.
    fn wait_fully_replicated(&self, context: &str) -> Partitions {
        common::eventually(
            context,
            Duration::from_secs(120),
            || self.logs(),
            || {
                let parts = partitions(&self.bootstrap(), TOPIC)?;
                let lagging: Vec<_> = parts
                    .iter()
                    .filter(|(_, (leader, replicas, isr))| {
                        *leader < 0 || isr.len() < replicas.len()
                    })
                    .collect();
                if lagging.is_empty() {
                    Ok(parts)
                } else {
                    Err(format!("not fully replicated: {lagging:?}"))
                }
            },
        )
    }

    /// SIGTERM (a controlled shutdown), then a start of broker `id`; waits until it is back
    /// in every ISR.
    fn restart(&mut self, id: i32) {
        let broker = self.brokers.iter_mut().find(|b| b.id == id).unwrap();
        let stopping = Instant::now();
        stop_gracefully(std::slice::from_mut(broker));
        eprintln!("broker {id} stopped in {:?}", stopping.elapsed());
        broker.start();
        self.wait_fully_replicated(&format!("broker {id} back in every ISR"));
    }
}

/// The load: an idempotent acks=all producer over the topic's 30 partitions, which reads
/// everything back when told to stop.
fn start_load(cluster: &Cluster, stop_file: &std::path::Path) -> Script {
    let mut script = Script::spawn(
        cluster.root.path(),
        "idempotent_failover.py",
        &[
            "--bootstrap",
            &cluster.bootstrap(),
            "--topic",
            TOPIC,
            "--partitions",
            &PARTITIONS.to_string(),
            "--replication-factor",
            "3",
            "--min-insync-replicas",
            "2",
            "--stop-file",
            stop_file.to_str().unwrap(),
            "--progress-every",
            "1000",
        ],
    );
    script.wait_line(120, "waiting for the producer to start", |l| l == "started");
    script
}

#[test]
fn a_rolling_restart_ends_with_leadership_back_on_the_preferred_replicas() {
    let mut cluster = Cluster::start(&["leader.imbalance.check.interval.seconds=1"]);
    let stop_file = cluster.root.path().join("stop-load");
    let mut load = start_load(&cluster, &stop_file);
    let brokers = cluster.broker_ids();
    let before = cluster.wait_fully_replicated("the topic fully replicated");
    let preferred = leader_counts(
        &before
            .iter()
            .map(|(p, (_, replicas, isr))| (*p, (replicas[0], replicas.clone(), isr.clone())))
            .collect(),
        &brokers,
    );
    for counted in preferred.values() {
        assert!(
            counted.abs_diff(PARTITIONS / brokers.len()) <= 1,
            "the placement itself is uneven: {preferred:?}"
        );
    }
    for id in brokers.clone() {
        let acked = load.acked_so_far();
        load.wait_acked(acked + 2_000, 120);
        cluster.restart(id);
    }
    let started = Instant::now();
    let balanced = common::eventually(
        "leadership back on the preferred replicas after the rolling restart",
        Duration::from_secs(90),
        || cluster.logs(),
        || {
            let parts = partitions(&cluster.bootstrap(), TOPIC)?;
            let off: Vec<_> = parts
                .iter()
                .filter(|(_, (leader, replicas, _))| replicas.first() != Some(leader))
                .map(|(p, (leader, replicas, _))| format!("{p}: led by {leader} of {replicas:?}"))
                .collect();
            if off.is_empty() {
                Ok(leader_counts(&parts, &brokers))
            } else {
                Err(format!("not on the preferred replica: {off:?}"))
            }
        },
    );
    eprintln!(
        "leadership balanced {:?} after the last restart: {balanced:?}",
        started.elapsed()
    );
    assert_eq!(balanced, preferred);
    for (broker, led) in &balanced {
        assert!(
            led.abs_diff(PARTITIONS / brokers.len()) <= 1,
            "broker {broker} leads {led} of {PARTITIONS}: {balanced:?}"
        );
    }
    std::fs::write(&stop_file, "").unwrap();
    let summary = load.finish(300, || cluster.logs());
    eprintln!("{summary}");
}

#[test]
fn with_auto_leader_rebalance_off_a_restarted_broker_leads_nothing() {
    let mut cluster = Cluster::start(&[
        "auto.leader.rebalance.enable=false",
        "leader.imbalance.check.interval.seconds=1",
    ]);
    let stop_file = cluster.root.path().join("stop-load");
    let mut load = start_load(&cluster, &stop_file);
    cluster.wait_fully_replicated("the topic fully replicated");
    let restarted = cluster.brokers[0].id;
    let acked = load.acked_so_far();
    load.wait_acked(acked + 2_000, 120);
    cluster.restart(restarted);
    // Five check intervals: with balancing on, leadership would have returned within two.
    let watch_until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < watch_until {
        let parts = cluster.wait_fully_replicated("the topic fully replicated");
        let counts = leader_counts(&parts, &cluster.broker_ids());
        assert_eq!(
            counts[&restarted], 0,
            "leadership moved back to broker {restarted} with auto.leader.rebalance.enable=false: {counts:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    std::fs::write(&stop_file, "").unwrap();
    let summary = load.finish(300, || cluster.logs());
    eprintln!("{summary}");
}
