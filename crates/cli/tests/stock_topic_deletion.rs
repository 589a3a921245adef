//! `delete.topic.enable=false` (issue 30): the controller refuses every DeleteTopics with
//! TOPIC_DELETION_DISABLED, as Kafka's `ControllerApis.deleteTopics` does, so a stock admin
//! client's delete fails and the topic stays. Before, the key was ignored and topics stayed
//! deletable.

mod common;

use common::python::{run_inline, wait_until_brokers_listed};
use common::{all_logs, formatted_cluster, stop_gracefully};

#[test]
fn with_delete_topic_enable_false_a_stock_admin_client_cannot_delete_a_topic() {
    let root = tempfile::tempdir().unwrap();
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    controllers[0].add_config(&["delete.topic.enable=false"]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let bootstrap = brokers[0].address();
    let logs = || format!("{}\n{}", all_logs(&controllers), all_logs(&brokers));
    wait_until_brokers_listed(&bootstrap, 1, logs);
    let script = r#"
import sys
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
admin.create_topics([NewTopic("kept", 1, 1)])["kept"].result(30)
try:
    admin.delete_topics(["kept"], operation_timeout=30)["kept"].result(30)
    print("FAILED: the topic was deleted")
    sys.exit(1)
except KafkaException as e:
    err = e.args[0]
    print("refused", err.name(), err.code())
    if err.name() != "TOPIC_DELETION_DISABLED":
        sys.exit(1)
topics = admin.list_topics(timeout=10).topics
print("listed", "kept" in topics)
if "kept" not in topics:
    sys.exit(1)
print("all ok")
"#;
    let out = run_inline(script, &[&bootstrap]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all ok"),
        "{stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        logs()
    );
    assert!(
        stdout.contains("refused TOPIC_DELETION_DISABLED 73"),
        "{stdout}"
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
