//! Controller registration (KIP-919) and UnregisterController (KIP-1312) with real kraftd
//! processes and Kafka 4.4.0's own `kafka-cluster` tool: every controller registers its
//! advertised controller listener, DescribeCluster on the controller listener lists the
//! registrations (`kafka-cluster list-endpoints --bootstrap-controller`), and
//! `kafka-cluster unregister-controller` gets Kafka's errors for an unknown id and for the
//! active controller itself, while a live standby it unregisters registers again.

mod common;

use std::time::Duration;

use common::kafka_jars::{output_text, run_tool};
use common::raw::Raw;
use common::{all_logs, formatted_quorum, Node};
use kraftd_protocol::messages::DescribeClusterRequest;
use kraftd_protocol::{RequestBody, ResponseBody};

/// DescribeCluster (controller endpoints) through `address`: the active controller id and
/// the listed controllers as (id, host, port).
fn controllers(address: &str) -> (i32, Vec<(i32, String, i32)>) {
    let mut raw = Raw::connect(address);
    let response = raw.call(
        1,
        RequestBody::DescribeCluster(DescribeClusterRequest {
            endpoint_type: 2,
            ..Default::default()
        }),
    );
    let ResponseBody::DescribeCluster(r) = response else {
        panic!("{response:?}")
    };
    let mut listed: Vec<_> = r
        .brokers
        .iter()
        .map(|b| (b.broker_id, b.host.clone(), b.port))
        .collect();
    listed.sort();
    (r.controller_id, listed)
}

/// Polls DescribeCluster until `want` holds; the last answer.
fn wait_for(
    address: &str,
    what: &str,
    nodes: &[Node],
    want: impl Fn(i32, &[(i32, String, i32)]) -> bool,
) -> (i32, Vec<(i32, String, i32)>) {
    common::eventually(
        what,
        Duration::from_secs(60),
        || all_logs(nodes),
        || {
            // Not listening yet while the node starts.
            if std::net::TcpStream::connect(address).is_err() {
                return Err(format!("{address} is not listening"));
            }
            let (active, listed) = controllers(address);
            if want(active, &listed) {
                Ok((active, listed))
            } else {
                Err(format!("active {active}, registered {listed:?}"))
            }
        },
    )
}

fn kafka_cluster_tool(args: &[&str]) -> (bool, String) {
    let out = run_tool("org.apache.kafka.tools.ClusterTool", args);
    (out.status.success(), output_text(&out))
}

#[test]
fn controllers_register_and_kafkas_cluster_tool_unregisters_one() {
    let root = tempfile::tempdir().unwrap();
    let (_cluster, mut nodes) = formatted_quorum(root.path(), 3);
    for node in &nodes {
        // Advertised as "localhost": the registrations, not the static voters (127.0.0.1).
        node.add_config(&[&format!(
            "advertised.listeners=CONTROLLER://localhost:{}",
            node.port
        )]);
    }
    for node in nodes.iter_mut() {
        node.start();
    }
    let address = nodes[0].address();
    let (_, listed) = wait_for(&address, "three registrations", &nodes, |active, l| {
        active > 0 && l.len() == 3 && l.iter().all(|(_, host, _)| host == "localhost")
    });
    let ports: Vec<i32> = nodes.iter().map(|n| i32::from(n.port)).collect();
    assert_eq!(
        listed.iter().map(|(_, _, p)| *p).collect::<Vec<_>>(),
        ports,
        "each controller's own advertised port"
    );

    // Kafka's tool reads the same list.
    let (ok, text) = kafka_cluster_tool(&["list-endpoints", "--bootstrap-controller", &address]);
    assert!(ok, "{text}");
    for node in &nodes {
        let row = format!("{} localhost {} ", node.id, node.port);
        let rows: Vec<String> = text
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") + " ")
            .collect();
        assert!(rows.iter().any(|r| r.starts_with(&row)), "{text}");
    }

    let (ok, text) = kafka_cluster_tool(&[
        "unregister-controller",
        "--bootstrap-controller",
        &address,
        "--id",
        "99",
    ]);
    assert!(
        !ok && text.contains("Controller ID 99 is not currently registered"),
        "{text}"
    );
    // The active controller as of now: on a loaded machine leadership may have moved since
    // the registrations were read (a CI run once unregistered the old leader here).
    let (active, _) = wait_for(&address, "an active controller", &nodes, |active, _| {
        active > 0
    });
    let (ok, text) = kafka_cluster_tool(&[
        "unregister-controller",
        "--bootstrap-controller",
        &address,
        "--id",
        &active.to_string(),
    ]);
    assert!(
        !ok && text.contains("Controller cannot unregister itself while it is active"),
        "{text}"
    );

    // A live standby: unregistered, then back on its own (its registration manager).
    let standby = (1..=3).find(|id| *id != active).unwrap();
    let (ok, text) = kafka_cluster_tool(&[
        "unregister-controller",
        "--bootstrap-controller",
        &address,
        "--id",
        &standby.to_string(),
    ]);
    assert!(ok, "{text}\n{}", all_logs(&nodes));
    wait_for(&address, "the standby registered again", &nodes, |_, l| {
        l.len() == 3
    });
}
