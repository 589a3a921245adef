//! A combined node with a few thousand partitions, each holding one record, restarted
//! cleanly (SIGTERM: logs trusted after the clean-shutdown marker, offsets from the log
//! dir's checkpoints) and uncleanly (kill -9: logs recovered past their recovery points):
//! every partition's log is back with its data, read by a stock client, and the log dir
//! holds Kafka's three offset checkpoints with an entry per partition.

mod common;

use common::python::run_until_all_ok;
use common::{formatted_combined_node, Node};

const TOPICS: usize = 20;
const PARTITIONS: usize = 100;

fn stop(node: &mut Node) {
    let pid = node.child.as_ref().expect("started").id();
    let status = std::process::Command::new("kill")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let exit = node.child.take().unwrap().wait().unwrap();
    assert!(exit.success(), "node exited with {exit}\n{}", node.logs());
}

#[test]
fn every_partition_log_is_back_with_its_data_after_a_clean_and_an_unclean_restart() {
    let root = tempfile::tempdir().unwrap();
    let (mut node, client) =
        formatted_combined_node(root.path(), "num.recovery.threads.per.data.dir=4\n");
    node.start();
    let bootstrap = format!("127.0.0.1:{client}");
    let (topics, partitions) = (TOPICS.to_string(), PARTITIONS.to_string());
    let args = |command: &'static str| {
        [
            bootstrap.clone(),
            command.into(),
            topics.clone(),
            partitions.clone(),
        ]
    };
    let run_script = |node: &Node, command: &'static str| {
        let a = args(command);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        run_until_all_ok("many_partitions.py", &a, || node.logs());
    };
    run_script(&node, "create");

    stop(&mut node);
    let data = node.dir.join("data");
    for file in [
        "replication-offset-checkpoint",
        "log-start-offset-checkpoint",
        "recovery-point-offset-checkpoint",
    ] {
        let entries = kraftd_log::checkpoint::read(&data.join(file));
        let ours = entries
            .keys()
            .filter(|(t, _)| t.starts_with("many-"))
            .count();
        assert_eq!(ours, TOPICS * PARTITIONS, "{file}");
        if file == "recovery-point-offset-checkpoint" {
            assert!(entries
                .iter()
                .filter(|((t, _), _)| t.starts_with("many-"))
                .all(|(_, o)| *o == 1));
        }
    }
    assert!(data.join(".kafka_cleanshutdown").exists());
    node.start();
    run_script(&node, "check");

    node.kill9();
    assert!(!data.join(".kafka_cleanshutdown").exists());
    node.start();
    run_script(&node, "check");
    for t in 0..TOPICS {
        for p in 0..PARTITIONS {
            assert!(node
                .partition_dir(&format!("many-{t}"), p as i32)
                .join("partition.metadata")
                .exists());
        }
    }
    stop(&mut node);
}
