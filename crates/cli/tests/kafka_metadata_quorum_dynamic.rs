//! Apache Kafka 4.4.0's own `kafka-metadata-quorum` (the jars) driving a kraftd dynamic
//! quorum (KIP-853) as Kafka's operations docs do: controller 1 formatted `--standalone`,
//! controller 2 `--no-initial-controllers` (an observer), one broker. `describe --status` /
//! `--replication` through `--bootstrap-controller` (the admin client finds the controllers
//! through DescribeCluster, i.e. their registrations, KIP-919), `add-controller` run with
//! controller 2's own properties, `remove-controller` by id and directory id through the
//! broker (`--bootstrap-server`: forwarded to the controller, as Kafka's brokers do); each step
//! checked, while a stock client produces and consumes through the broker, and
//! `kafka-features` / `kafka-cluster` / `kafka-configs --bootstrap-controller` still answer
//! afterwards.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use common::kafka_jars::{output_text, run_tool_within};
use common::script::Script;
use common::{format_with_args, run, status_fields, voter_ids, Node};

/// A node's properties for a dynamic quorum whose bootstrap server is controller 1.
fn write_config(node: &Node, bootstrap: &str) {
    let (roles, listener) = if node.role == "broker" {
        ("broker", format!("PLAINTEXT://127.0.0.1:{}", node.port))
    } else {
        (
            "controller",
            format!("CONTROLLER://127.0.0.1:{}", node.port),
        )
    };
    std::fs::create_dir_all(&node.dir).unwrap();
    std::fs::write(
        node.config_path(),
        format!(
            "process.roles={roles}\nnode.id={id}\n\
             controller.quorum.bootstrap.servers={bootstrap}\n\
             listeners={listener}\ncontroller.listener.names=CONTROLLER\n\
             log.dirs={data}\nbroker.heartbeat.interval.ms=500\n",
            id = node.id,
            data = node.dir.join("data").display(),
        ),
    )
    .unwrap();
}

fn directory_id(node: &Node) -> String {
    let text = std::fs::read_to_string(node.dir.join("data/meta.properties")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("directory.id="))
        .unwrap()
        .to_string()
}

/// Kafka's `MetadataQuorumCommand` with `args` (killed after 60 s).
fn kafka_quorum(args: &[&str]) -> Output {
    run_tool_within(
        "org.apache.kafka.tools.MetadataQuorumCommand",
        args,
        Duration::from_secs(60),
    )
}

/// Polls Kafka's `describe --status` through `bootstrap` until `want(fields)` holds; the
/// fields then.
fn wait_status(
    bootstrap: &str,
    what: &str,
    nodes: &[&Node],
    want: impl Fn(&BTreeMap<String, String>) -> bool,
) -> BTreeMap<String, String> {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = kafka_quorum(&["--bootstrap-controller", bootstrap, "describe", "--status"]);
        let fields = status_fields(&String::from_utf8_lossy(&out.stdout));
        if out.status.success() && want(&fields) {
            return fields;
        }
        if Instant::now() > deadline {
            let logs: Vec<String> = nodes.iter().map(|n| n.logs()).collect();
            panic!(
                "{what}: not reached\n{}\n{}",
                output_text(&out),
                logs.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `(NodeId, DirectoryId, Status)` of `describe --replication`'s rows, sorted by id.
fn replication(bootstrap: &str) -> Vec<(i32, String, String)> {
    let out = kafka_quorum(&[
        "--bootstrap-controller",
        bootstrap,
        "describe",
        "--replication",
    ]);
    assert!(out.status.success(), "{}", output_text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').map(str::trim).collect();
    assert_eq!(header[0], "NodeId", "{stdout}");
    assert_eq!(header[6], "Status", "{stdout}");
    let mut rows: Vec<(i32, String, String)> = lines
        .map(|l| {
            let cells: Vec<&str> = l.split('\t').map(str::trim).collect();
            (
                cells[0].parse().unwrap(),
                cells[1].to_string(),
                cells[6].to_string(),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// The ids `kafka-cluster list-endpoints` lists.
fn endpoint_ids(out: &Output) -> Vec<i32> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

fn started(root: &Path) -> (String, Node, Node, Node) {
    let cluster_id = run(&["random-uuid"]).trim().to_string();
    let (mut c1, mut c2) = (Node::new(root, 1), Node::new(root, 2));
    let mut broker = Node::broker(root, 3);
    let bootstrap = c1.address();
    for node in [&c1, &c2, &broker] {
        write_config(node, &bootstrap);
    }
    format_with_args(&c1, &cluster_id, &["--standalone"]);
    format_with_args(&c2, &cluster_id, &["--no-initial-controllers"]);
    format_with_args(&broker, &cluster_id, &[]);
    for node in [&mut c1, &mut c2, &mut broker] {
        node.start();
    }
    (cluster_id, c1, c2, broker)
}

#[test]
fn kafkas_metadata_quorum_tool_adds_and_removes_a_kraftd_controller() {
    let root = tempfile::tempdir().unwrap();
    let (cluster_id, c1, mut c2, broker) = started(root.path());
    let nodes = [&c1, &c2, &broker];
    let logs = || {
        nodes
            .iter()
            .map(|n| n.logs())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let bootstrap = c1.address();
    let (dir1, dir2) = (directory_id(&c1), directory_id(&c2));

    // One voter; controller 2 and the broker observe.
    let fields = wait_status(&bootstrap, "controller 1 alone votes", &nodes, |f| {
        f.get("CurrentVoters").is_some_and(|v| voter_ids(v) == [1])
            && f.get("CurrentObservers")
                .is_some_and(|o| voter_ids(o) == [2, 3])
    });
    assert_eq!(fields["LeaderId"], "1", "{fields:?}");
    assert_eq!(fields["ClusterId"], cluster_id, "{fields:?}");
    assert!(fields["CurrentVoters"].contains(&dir1), "{fields:?}");
    assert!(
        fields["CurrentVoters"].contains(&format!("CONTROLLER://127.0.0.1:{}", c1.port)),
        "{fields:?}"
    );
    let rows = replication(&bootstrap);
    assert_eq!(
        rows.iter()
            .map(|(id, _, s)| (*id, s.as_str()))
            .collect::<Vec<_>>(),
        [(1, "Leader"), (2, "Observer"), (3, "Observer")],
        "{rows:?}"
    );
    assert_eq!(rows[0].1, dir1);
    assert_eq!(rows[1].1, dir2);

    // A stock client through the broker for the whole reconfiguration.
    let mut client = Script::spawn(
        root.path(),
        "produce_consume.py",
        &[
            "--bootstrap",
            &broker.address(),
            "--topic",
            "through-reconfiguration",
            "--client",
            "confluent",
            "--count",
            "5000",
            "--rate",
            "100",
        ],
    );
    client.wait_acked(100, 60);

    // add-controller with controller 2's own properties, as Kafka's docs run it.
    let config2 = c2.config_path();
    let out = kafka_quorum(&[
        "--bootstrap-controller",
        &bootstrap,
        "--command-config",
        config2.to_str().unwrap(),
        "add-controller",
    ]);
    assert!(out.status.success(), "{}\n{}", output_text(&out), logs());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!(
            "Added controller 2 with directory id {dir2} and endpoints: \
             CONTROLLER://127.0.0.1:{}",
            c2.port
        )
    );
    let fields = wait_status(&bootstrap, "two voters", &nodes, |f| {
        f.get("CurrentVoters")
            .is_some_and(|v| voter_ids(v) == [1, 2])
    });
    assert!(fields["CurrentVoters"].contains(&dir2), "{fields:?}");
    assert_eq!(voter_ids(&fields["CurrentObservers"]), [3], "{fields:?}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = replication(&bootstrap);
        let statuses: Vec<(i32, &str)> = rows.iter().map(|(id, _, s)| (*id, s.as_str())).collect();
        if statuses == [(1, "Leader"), (2, "Follower"), (3, "Observer")] {
            break;
        }
        assert!(Instant::now() < deadline, "{rows:?}\n{}", logs());
        std::thread::sleep(Duration::from_millis(500));
    }
    // Controller 2's own address answers too, now that both are registered.
    wait_status(
        &c2.address(),
        "describe through controller 2",
        &nodes,
        |f| f.get("LeaderId").is_some_and(|l| l == "1"),
    );

    // Through the broker, which forwards it to the active controller as Kafka's do.
    let out = kafka_quorum(&[
        "--bootstrap-server",
        &broker.address(),
        "remove-controller",
        "--controller-id",
        "2",
        "--controller-directory-id",
        &dir2,
    ]);
    assert!(out.status.success(), "{}\n{}", output_text(&out), logs());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!(
            "Removed KRaft controller 2 with directory id {dir2}"
        )) || String::from_utf8_lossy(&out.stdout).contains(&format!(
            "Removed  KRaft controller 2 with directory id {dir2}"
        )),
        "{}",
        output_text(&out)
    );
    wait_status(&bootstrap, "back to one voter", &nodes, |f| {
        f.get("CurrentVoters").is_some_and(|v| voter_ids(v) == [1])
            && f.get("CurrentObservers")
                .is_some_and(|o| voter_ids(o) == [2, 3])
    });

    client.finish(120, logs);

    // Out of the voter set, stopped, then its registration dropped (KIP-1312), as Kafka's
    // docs order it; the second time Kafka's CONTROLLER_ID_NOT_REGISTERED.
    c2.kill9();
    let cluster_tool = |args: &[&str]| {
        run_tool_within(
            "org.apache.kafka.tools.ClusterTool",
            args,
            Duration::from_secs(60),
        )
    };
    let out = cluster_tool(&["list-endpoints", "--bootstrap-controller", &bootstrap]);
    assert!(out.status.success(), "{}", output_text(&out));
    assert_eq!(endpoint_ids(&out), [1, 2], "{}", output_text(&out));
    let unregister = [
        "unregister-controller",
        "--bootstrap-controller",
        &bootstrap,
        "--id",
        "2",
    ];
    let out = cluster_tool(&unregister);
    assert!(out.status.success(), "{}\n{}", output_text(&out), c1.logs());
    let out = cluster_tool(&["list-endpoints", "--bootstrap-controller", &bootstrap]);
    assert_eq!(endpoint_ids(&out), [1], "{}", output_text(&out));
    let out = cluster_tool(&unregister);
    assert!(
        !out.status.success()
            && output_text(&out).contains("Controller ID 2 is not currently registered"),
        "{}",
        output_text(&out)
    );

    // UnregisterBroker through a broker, forwarded: an unknown id is Kafka's
    // BROKER_ID_NOT_REGISTERED.
    let out = cluster_tool(&[
        "unregister",
        "--bootstrap-server",
        &broker.address(),
        "--id",
        "99",
    ]);
    assert!(
        !out.status.success()
            && output_text(&out).contains("Broker ID 99 is not currently registered"),
        "{}",
        output_text(&out)
    );

    // DescribeConfigs on the controller listener, as Kafka's controllers answer it: this
    // controller's own properties file, by its node id.
    let out = run_tool_within(
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-controller",
            &bootstrap,
            "--describe",
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--all",
        ],
        Duration::from_secs(60),
    );
    let text = output_text(&out);
    assert!(
        out.status.success()
            && text.contains("All configs for broker 1 are:")
            && text.contains("process.roles=controller sensitive=false synonyms={STATIC_BROKER_CONFIG:process.roles=controller}"),
        "{text}"
    );

    // The other tools still answer through the controller.
    let out = run_tool_within(
        "org.apache.kafka.tools.FeatureCommand",
        &["--bootstrap-controller", &bootstrap, "describe"],
        Duration::from_secs(60),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("Feature: metadata.version"),
        "{}",
        output_text(&out)
    );
    // A dynamic quorum runs kraft.version 1 (the Raft layer's level, not a record's).
    let kraft = text
        .lines()
        .find(|l| l.starts_with("Feature: kraft.version"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        kraft
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("FinalizedVersionLevel: 1"),
        "{kraft}"
    );
    let out = run_tool_within(
        "org.apache.kafka.tools.ClusterTool",
        &["cluster-id", "--bootstrap-controller", &bootstrap],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains(&cluster_id),
        "{}",
        output_text(&out)
    );
}
