//! A combined node's controlled shutdown is granted without waiting a heartbeat interval
//! (issue 30): the first heartbeat asking to shut down moves the node's leaderships away and
//! is answered "not yet"; like Kafka's `BrokerLifecycleManager`, the broker asks again 50 ms
//! later rather than a `broker.heartbeat.interval.ms` later, and by then the controller
//! grants it. With an interval of a minute (a session timeout longer still), a SIGTERM of a
//! node leading partitions ends with the controller's grant, not with the broker giving up
//! after its 30 s wait. The node's file also holds a key neither Kafka nor kraftd defines
//! (a Confluent Platform leftover): start-up names it in one warning and goes on.

mod common;

use common::formatted_combined_node;
use common::python::{run_inline, wait_until_brokers_listed};

#[test]
fn a_combined_node_leading_partitions_is_granted_its_controlled_shutdown_at_once() {
    let root = tempfile::tempdir().unwrap();
    let (mut node, client) = formatted_combined_node(
        root.path(),
        "broker.heartbeat.interval.ms=60000\nbroker.session.timeout.ms=120000\n\
         confluent.support.metrics.enable=false\n",
    );
    node.start();
    let bootstrap = format!("127.0.0.1:{client}");
    wait_until_brokers_listed(&bootstrap, 1, || node.logs());
    let script = r#"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
admin.create_topics([NewTopic("led", 6, 1)])["led"].result(30)
md = admin.list_topics("led", timeout=10)
leaders = [p.leader for p in md.topics["led"].partitions.values()]
print("leaders", leaders)
print("all ok" if leaders == [1] * 6 else "FAILED: not led by node 1")
"#;
    let out = run_inline(script, &[&bootstrap]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("all ok"),
        "{stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        node.logs()
    );

    let pid = node.child.as_ref().expect("started").id();
    assert!(std::process::Command::new("kill")
        .arg(pid.to_string())
        .status()
        .unwrap()
        .success());
    let exit = node.child.take().unwrap().wait().unwrap();
    let logs = node.logs();
    assert!(exit.success(), "node exited with {exit}\n{logs}");
    assert!(
        logs.contains("controlled shutdown pending; asking the controller again shortly")
            && logs.contains("controlled shutdown granted")
            && !logs.contains("controlled shutdown not granted"),
        "the controlled shutdown was not granted on the prompt second heartbeat:\n{logs}"
    );
    let warned: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("is not a Kafka 4.4 setting"))
        .collect();
    assert!(
        warned.len() == 1 && warned[0].contains("confluent.support.metrics.enable"),
        "expected one warning naming confluent.support.metrics.enable: {warned:?}"
    );
}
