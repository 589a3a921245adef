//! Consumer groups with stock clients against real processes (one controller, three
//! brokers, `__consumer_offsets` with three replicas): `tests/python/groups.py` runs a
//! group of member processes (`group_member.py`) through a late join, a graceful leave and
//! a SIGKILL while a producer writes, once per client and protocol — confluent-kafka with
//! `range` and `cooperative-sticky` (classic) and with `group.protocol=consumer`
//! (KIP-848), kafka-python with `range` — and checks that no partition ever has two owners,
//! every record is processed at least once, each new owner starts at the group's commit,
//! and the group ends committed at every partition's end. Beside them,
//! `tests/python/groups_static.py` restarts a static member (KIP-345) within its session:
//! it keeps its partitions and the other member sees no rebalance.

mod common;

use common::python::{python, run_until_all_ok, wait_until_brokers_listed};
use common::{addresses, all_logs, formatted_cluster, stop_gracefully, Node};

/// Broker settings that keep a test's rebalances short: the minimum classic session the
/// members use (6 s) is allowed, KIP-848 sessions and heartbeats are as short.
pub const GROUP_TEST_CONFIG: [&str; 6] = [
    "group.initial.rebalance.delay.ms=500",
    "group.consumer.min.session.timeout.ms=6000",
    "group.consumer.session.timeout.ms=6000",
    "group.consumer.min.heartbeat.interval.ms=500",
    "group.consumer.heartbeat.interval.ms=500",
    "offsets.topic.num.partitions=10",
];

fn start_cluster(root: &std::path::Path) -> (Vec<Node>, Vec<Node>) {
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root, 1, 3);
    for broker in &brokers {
        broker.add_config(&GROUP_TEST_CONFIG);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    wait_until_brokers_listed(&addresses(&brokers), 3, || all_logs(&brokers));
    (controllers, brokers)
}

#[test]
fn groups_of_member_processes_hand_partitions_over_without_overlap_or_loss() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (mut controllers, mut brokers) = start_cluster(root.path());
    let bootstrap = addresses(&brokers);
    let runs = [
        ("confluent", "range"),
        ("confluent", "cooperative-sticky"),
        ("confluent", "consumer"),
        ("kafka-python", "range"),
    ];
    std::thread::scope(|s| {
        let (bootstrap_ref, brokers_ref) = (&bootstrap, &brokers);
        s.spawn(move || {
            run_until_all_ok("groups_static.py", &[bootstrap_ref], || {
                all_logs(brokers_ref)
            });
        });
        for (client, strategy) in runs {
            let bootstrap = &bootstrap;
            let brokers = &brokers;
            s.spawn(move || {
                run_until_all_ok("groups.py", &[bootstrap, client, strategy, "3"], || {
                    all_logs(brokers)
                });
            });
        }
    });
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
