//! A consumer group's coordinator killed under load, with stock clients against real
//! processes (one controller, three brokers, `__consumer_offsets` with three replicas):
//! `tests/python/groups_failover.py` runs three member processes that process and commit
//! while a producer writes; this test kills the broker leading the group's offsets
//! partition with SIGKILL, waits, and starts it again. The script checks that committed
//! offsets never go backwards, that every record is processed at least once, that new
//! owners start at the group's commit, and that the group ends committed at every end.

mod common;

use common::python::{python, wait_until_brokers_listed};
use common::script::Script;
use common::{addresses, all_logs, formatted_cluster, stop_gracefully};

#[test]
fn a_group_goes_on_from_its_commits_when_its_coordinator_is_killed() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 3);
    for broker in &brokers {
        broker.add_config(&[
            "group.initial.rebalance.delay.ms=500",
            "offsets.topic.num.partitions=10",
            "replica.lag.time.max.ms=5000",
        ]);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = addresses(&brokers);
    wait_until_brokers_listed(&bootstrap, 3, || all_logs(&brokers));
    let stop_file = root.path().join("stop");
    let mut script = Script::spawn(
        root.path(),
        "groups_failover.py",
        &[&bootstrap, stop_file.to_str().unwrap()],
    );
    let line = script.wait_line(120, "waiting for the group to be stable", |l| {
        l.starts_with("coordinator ")
    });
    let coordinator: i32 = line["coordinator ".len()..].trim().parse().unwrap();
    let first = brokers[0].id;
    let victim = (coordinator - first) as usize;
    let committing = |script: &mut Script, what: &str| {
        script.wait_line(120, what, |l| l.starts_with("committed "));
    };
    committing(&mut script, "commits before the kill");
    brokers[victim].kill9();
    // The group goes on committing without its coordinator's broker...
    committing(&mut script, "commits after the coordinator was killed");
    committing(&mut script, "more commits after the coordinator was killed");
    brokers[victim].start();
    // ... and with it back.
    committing(&mut script, "commits after the restart");
    std::fs::write(&stop_file, b"").unwrap();
    script.finish(240, || all_logs(&brokers));
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
