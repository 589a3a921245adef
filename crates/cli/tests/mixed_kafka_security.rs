//! Security and dynamic configuration written by one side of a mixed cluster (kraftd and
//! Apache Kafka 4.4.0, the jars) and enforced by the other (issue 31), in both directions:
//!
//! - Three Kafka controllers and a Kafka broker beside a kraftd broker: Kafka's `kafka-topics`,
//!   `kafka-configs` and `kafka-acls`, logged in as the SCRAM admin (from the controllers'
//!   format) through the Kafka broker, create the topics, alice's SCRAM-SHA-256 credential,
//!   an ACL letting her write one topic (none on the other), a `producer_byte_rate` quota for
//!   her and a small dynamic `max.message.bytes` on the topic; confluent-kafka as alice,
//!   connected to the kraftd broker only, finds each enforced there
//!   (`tests/python/mixed_security.py`). Then the tools delete them one at a time (and set a
//!   cluster-wide default `message.max.bytes`, a dynamic broker config), and the kraftd broker
//!   follows each change.
//! - The reverse: three kraftd controllers and a kraftd broker beside a Kafka broker; the same
//!   tools through the kraftd broker, the same checks against the Kafka broker.
//!
//! Every broker has a PLAINTEXT inter-broker listener (as the mixed-cluster helpers configure
//! them; `User:ANONYMOUS`, the principal on it, is a super user so that the brokers may
//! replicate and forward) and one SASL_PLAINTEXT listener of its own name:
//! `ADMIN` on the broker the tools write through, `USER` on the broker that enforces. A
//! Metadata response lists only the brokers that have the listener it was asked on, so the
//! tools can reach no broker but the writing one and alice no broker but the enforcing one:
//! every request of hers (Metadata, Produce) is answered by the enforcing side. The topics
//! have one replica, on the enforcing broker, so it leads every partition alice touches.
//! Every node, controllers too, runs Kafka's StandardAuthorizer (the controllers authorize
//! the forwarded CreateAcls and alterations) with the super users `admin` and `ANONYMOUS`.

mod common;

use std::path::Path;
use std::time::Duration;

use common::kafka_jars::{kafka_broker, kafka_quorum_cluster, output_text, run_tool, KafkaNode};
use common::python::{python, run_until_all_ok, wait_until_brokers_listed};
use common::secured::{scram_client_config, scram_listener_config, AUTHORIZER};
use common::{
    all_logs, format, formatted_quorum_with_scram, free_port, stop_gracefully, write_broker_config,
    Node,
};

/// The first user, from the controllers' format (`--add-scram`), as Kafka's docs bootstrap
/// a SCRAM cluster: the tools log in as it.
const ADMIN: &str = "SCRAM-SHA-512=[name=admin,password=admin-secret]";
/// Every node's authorizer lines.
const SECURITY: [&str; 2] = [AUTHORIZER, "super.users=User:admin;User:ANONYMOUS"];
/// Every broker's quota sampling: two windows of a second (Kafka's setting; its default 11
/// lets a burst of ten seconds of quota through before a throttle shows).
const QUOTA_WINDOWS: &str = "quota.window.num=2";
/// The topic alice may write, and the one she may not.
const ALLOWED: &str = "allowed";
const DENIED: &str = "denied";
/// The dynamic `max.message.bytes` of [`ALLOWED`].
const MAX_MESSAGE_BYTES: u32 = 20_000;
/// The cluster-wide `message.max.bytes` set once [`ALLOWED`]'s own is deleted.
const CLUSTER_MESSAGE_MAX_BYTES: u32 = 30_000;
/// alice's `producer_byte_rate`.
const PRODUCER_BYTE_RATE: u32 = 16_384;

#[test]
fn what_kafka_writes_a_kraftd_broker_enforces() {
    python();
    let root = tempfile::tempdir().unwrap();
    // Three Kafka controllers (100, 101, 102), formatted with the admin and started.
    let (cluster_id, mut controllers, _) = kafka_quorum_cluster(
        root.path(),
        3,
        &[],
        1,
        &SECURITY.join("\n"),
        &["--add-scram", ADMIN],
    );
    let quorum = controllers
        .iter()
        .map(|c| format!("{}@127.0.0.1:{}", c.id, c.port))
        .collect::<Vec<_>>()
        .join(",");
    let (mut kafka, writer) = kafka_sasl_broker(root.path(), 1, &quorum, &cluster_id, "ADMIN");
    let (mut kraftd, user) = kraftd_sasl_broker(root.path(), 2, &quorum, &cluster_id, "USER");

    kafka.start();
    kraftd.start();
    kafka.wait_started(Duration::from_secs(120));
    let logs = || {
        let mut text = format!(
            "{}\n--- Kafka broker 1 ---\n{}",
            kraftd.logs(),
            kafka.logs()
        );
        for c in &controllers {
            text.push_str(&format!(
                "\n--- Kafka controller {} ---\n{}",
                c.id,
                c.logs()
            ));
        }
        text
    };
    wait_until_brokers_listed(
        &format!("{},{}", kafka.address(), kraftd.address()),
        2,
        logs,
    );
    write_then_enforce(root.path(), &writer, kraftd.id, &user, logs);
    stop_gracefully(std::slice::from_mut(&mut kraftd));
    kafka.stop(Duration::from_secs(60));
    for c in controllers.iter_mut() {
        c.stop(Duration::from_secs(60));
    }
}

#[test]
fn what_kraftd_writes_a_kafka_broker_enforces() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (cluster_id, mut controllers) = formatted_quorum_with_scram(root.path(), 3, &[ADMIN]);
    for c in &controllers {
        c.add_config(&SECURITY);
    }
    let quorum = common::voters(&controllers);
    let (mut kraftd, writer) = kraftd_sasl_broker(root.path(), 4, &quorum, &cluster_id, "ADMIN");
    let (mut kafka, user) = kafka_sasl_broker(root.path(), 5, &quorum, &cluster_id, "USER");

    for c in controllers.iter_mut() {
        c.start();
    }
    kraftd.start();
    kafka.start();
    kafka.wait_started(Duration::from_secs(120));
    let logs = || {
        format!(
            "{}\n{}\n--- Kafka broker 5 ---\n{}",
            kraftd.logs(),
            all_logs(&controllers),
            kafka.logs()
        )
    };
    wait_until_brokers_listed(
        &format!("{},{}", kraftd.address(), kafka.address()),
        2,
        logs,
    );
    write_then_enforce(root.path(), &writer, kafka.id, &user, logs);
    kafka.stop(Duration::from_secs(60));
    stop_gracefully(std::slice::from_mut(&mut kraftd));
    stop_gracefully(&mut controllers);
}

/// A broker's lines, Kafka's or kraftd's: [`SECURITY`], [`QUOTA_WINDOWS`], its PLAINTEXT
/// inter-broker listener on `port` and its SASL listener `listener` on `sasl_port`.
fn broker_lines(port: u16, listener: &str, sasl_port: u16) -> Vec<String> {
    SECURITY
        .iter()
        .chain(&[QUOTA_WINDOWS])
        .map(|l| l.to_string())
        .chain(scram_listener_config(port, listener, sasl_port))
        .collect()
}

/// kraftd broker `id` of `cluster_id` on the controllers `quorum`, with [`broker_lines`]
/// (its SASL listener `listener` on a free port), formatted, not started; with the SASL
/// listener's address.
fn kraftd_sasl_broker(
    root: &Path,
    id: i32,
    quorum: &str,
    cluster_id: &str,
    listener: &str,
) -> (Node, String) {
    let broker = Node::broker(root, id);
    let sasl_port = free_port();
    std::fs::create_dir_all(&broker.dir).unwrap();
    write_broker_config(&broker, quorum);
    let lines = broker_lines(broker.port, listener, sasl_port);
    broker.add_config(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    format(&broker, cluster_id);
    (broker, format!("127.0.0.1:{sasl_port}"))
}

/// [`kraftd_sasl_broker`] for an Apache Kafka broker.
fn kafka_sasl_broker(
    root: &Path,
    id: i32,
    quorum: &str,
    cluster_id: &str,
    listener: &str,
) -> (KafkaNode, String) {
    let broker = kafka_broker(root, id, quorum, cluster_id, 1, "");
    let sasl_port = free_port();
    let lines = broker_lines(broker.port, listener, sasl_port);
    broker.add_config(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    (broker, format!("127.0.0.1:{sasl_port}"))
}

/// Through `writer` (the writing broker's ADMIN listener), as the SCRAM admin, with Kafka's
/// tools: creates [`ALLOWED`] and [`DENIED`] with their one replica on broker `enforcer`,
/// alice's SCRAM-SHA-256 credential, her `producer_byte_rate`, [`ALLOWED`]'s
/// `max.message.bytes` and the ACL letting her write it; then runs `mixed_security.py
/// enforce` against `enforcer_user` (the enforcing broker's USER listener). Then deletes
/// them one at a time the same way (the quota and the topic config, and sets the
/// cluster-wide default `message.max.bytes`; then the ACL; then the credential),
/// `mixed_security.py` checking after each that the enforcing broker applies the change.
fn write_then_enforce(
    dir: &Path,
    writer: &str,
    enforcer: i32,
    enforcer_user: &str,
    logs: impl Fn() -> String,
) {
    let admin = scram_client_config(dir, "admin", 512, "admin", "admin-secret", false);
    let tool = |class: &str, args: &[&str]| {
        let mut all = vec!["--bootstrap-server", writer, "--command-config", &admin];
        all.extend_from_slice(args);
        let out = run_tool(class, &all);
        assert!(
            out.status.success(),
            "{class} {args:?} through {writer}: {}\n{}",
            output_text(&out),
            logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let (enforcer_id, max) = (enforcer.to_string(), MAX_MESSAGE_BYTES.to_string());
    for topic in [ALLOWED, DENIED] {
        tool(
            "org.apache.kafka.tools.TopicCommand",
            &[
                "--create",
                "--topic",
                topic,
                "--replica-assignment",
                &enforcer_id,
            ],
        );
    }
    let configs = "org.apache.kafka.tools.ConfigCommand";
    // `kafka-configs --alter` of one entity (`--entity-default` when `name` is None);
    // `change`: `--add-config` or `--delete-config`.
    let alter = |entity_type: &str, name: Option<&str>, change: &str, value: &str| {
        let mut args = vec!["--alter", "--entity-type", entity_type];
        match name {
            Some(name) => args.extend(["--entity-name", name]),
            None => args.push("--entity-default"),
        }
        args.extend([change, value]);
        tool(configs, &args);
    };
    let add = "--add-config";
    // Two calls: kafka-configs alters a user's SCRAM credentials and its quotas apart.
    alter(
        "users",
        Some("alice"),
        add,
        "SCRAM-SHA-256=[iterations=4096,password=alice-secret]",
    );
    let quota = format!("producer_byte_rate={PRODUCER_BYTE_RATE}");
    alter("users", Some("alice"), add, &quota);
    let topic_max = format!("max.message.bytes={MAX_MESSAGE_BYTES}");
    alter("topics", Some(ALLOWED), add, &topic_max);
    // `--force`: no prompt before a removal.
    let alice_may_write = |action: &str| {
        tool(
            "org.apache.kafka.tools.AclCommand",
            &[
                action,
                "--force",
                "--allow-principal",
                "User:alice",
                "--operation",
                "Write",
                "--topic",
                ALLOWED,
            ],
        )
    };
    alice_may_write("--add");
    let check = |args: &[&str]| {
        let report = run_until_all_ok("mixed_security.py", args, &logs);
        eprintln!(
            "mixed_security.py {} against broker {enforcer}:\n{report}",
            args[0]
        );
    };
    check(&[
        "enforce",
        enforcer_user,
        &enforcer_id,
        ALLOWED,
        DENIED,
        &max,
    ]);

    // Deleted the same way, one thing at a time, each deletion enforced in turn.
    let delete = "--delete-config";
    alter("users", Some("alice"), delete, "producer_byte_rate");
    alter("topics", Some(ALLOWED), delete, "max.message.bytes");
    // A dynamic broker config, cluster-wide: every broker's default for topics without an
    // override of their own.
    let cluster_max = format!("message.max.bytes={CLUSTER_MESSAGE_MAX_BYTES}");
    alter("brokers", None, add, &cluster_max);
    check(&[
        "lifted",
        enforcer_user,
        &enforcer_id,
        ALLOWED,
        &max,
        &CLUSTER_MESSAGE_MAX_BYTES.to_string(),
    ]);
    alice_may_write("--remove");
    check(&["unauthorized", enforcer_user, ALLOWED]);
    alter("users", Some("alice"), delete, "SCRAM-SHA-256");
    check(&["unauthenticated", enforcer_user]);
}
