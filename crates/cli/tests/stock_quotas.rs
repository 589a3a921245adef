//! Client quotas enforced as Kafka does, with stock clients against real processes: one
//! controller and one broker (`quota.window.num=2`, so the burst a windowed rate first
//! allows is short), quotas set and removed with Kafka's own kafka-configs, traffic from
//! kafka-python (`tests/python/quotas.py`): a producer over `producer_byte_rate` and a
//! consumer over `consumer_byte_rate` are held to the rate (within 20%) with the throttle
//! time in their responses, and run free once the quota is removed; an admin client over
//! `controller_mutation_rate` gets THROTTLING_QUOTA_EXCEEDED from the controller.

mod common;

use std::process::Command;

use common::kafka_jars;
use common::python::{python, script_path, wait_until_brokers_listed};
use common::{all_logs, formatted_cluster, stop_gracefully};

#[test]
fn stock_clients_are_held_to_their_client_quotas() {
    python();
    let classpath = kafka_jars::classpath();
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    brokers[0].add_config(&["quota.window.num=2"]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = brokers[0].address();
    let logs = || {
        format!(
            "--- broker ---\n{}\n--- controller ---\n{}",
            all_logs(&brokers),
            all_logs(&controllers)
        )
    };
    wait_until_brokers_listed(&bootstrap, 1, logs);
    for phase in ["produce", "consume", "mutation"] {
        let out = Command::new(python())
            .arg(script_path("quotas.py"))
            .args([bootstrap.as_str(), phase])
            .env("KRAFTD_KAFKA_CLASSPATH", &classpath)
            .env("KRAFTD_LOG4J", kafka_jars::log4j_option())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.contains("all ok"),
            "quotas.py {phase} failed:\n{stdout}\n{stderr}\n{}",
            logs()
        );
        eprintln!("quotas.py {phase}:\n{stdout}");
    }
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
