//! Certificate rotation without a restart (issue 30), as Kafka's `DynamicBrokerConfig` does
//! it: three brokers serve a SASL_SSL listener (SCRAM-SHA-512, also between themselves) to a
//! stock idempotent acks=all producer (`python/idempotent_failover.py`, confluent-kafka, which
//! reads everything back at the end); each broker's keystore is changed in turn with Kafka
//! 4.4.0's `kafka-configs --entity-type brokers --entity-name N --alter --add-config
//! listener.name.broker.ssl.keystore.location=...`: the first broker's file rewritten in
//! place and its own path set again (Kafka re-reads it), the others a new file. After each, a
//! new connection sees the new certificate (its serial number, same subject), the producer
//! keeps being acknowledged, and a connection opened before the change still answers with
//! the old certificate (`python/tls_peer.py`). A keystore whose subject differs is refused
//! with Kafka's message and changes nothing. Nothing acknowledged is lost. A controller's
//! own SSL controller listener rotates the same way, through `kafka-configs
//! --bootstrap-controller`.
//!
//! Every wait is on a condition with a deadline, never a fixed pause.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::kafka_jars::{output_text, run_tool};
use common::pki::Pki;
use common::python::{python, script_path};
use common::script::Script;
use common::{all_logs, eventually, formatted_cluster_with_scram, Node};

const TOPIC: &str = "rotated";

/// The serial number and subject of the certificate in PEM `pem`.
fn pem_identity(pem: &str) -> (String, String) {
    let certs = kraftd_net::tls::parse_certificates(pem).unwrap();
    der_identity(&certs[0])
}

fn der_identity(der: &[u8]) -> (String, String) {
    (
        kraftd_net::tls::serial_number(der).unwrap(),
        kraftd_net::tls::subject_dn(der).unwrap(),
    )
}

/// A `cert <hex>` line of `tls_peer.py` as (serial, subject).
fn cert_line(line: &str) -> Result<(String, String), String> {
    let hex = line
        .strip_prefix("cert ")
        .ok_or_else(|| format!("no certificate: {line}"))?;
    let der: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    Ok(der_identity(&der))
}

/// The certificate a new connection to `address` is served.
fn served_certificate(address: &str, ca: &Path) -> Result<(String, String), String> {
    let out = Command::new(python())
        .arg(script_path("tls_peer.py"))
        .args(["cert", address, ca.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().next().unwrap_or_default();
    cert_line(line).map_err(|e| format!("{e} {}", String::from_utf8_lossy(&out.stderr)))
}

/// Kafka's `kafka-configs` against broker `broker` over SASL_SSL, altering its own keystore.
fn set_keystore(broker: &Node, command_config: &Path, location: &Path) -> std::process::Output {
    let id = broker.id.to_string();
    let config = format!(
        "listener.name.broker.ssl.keystore.location={}",
        location.display()
    );
    run_tool(
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-server",
            &broker.address(),
            "--command-config",
            command_config.to_str().unwrap(),
            "--entity-type",
            "brokers",
            "--entity-name",
            &id,
            "--alter",
            "--add-config",
            &config,
        ],
    )
}

#[test]
fn certificates_rotate_on_live_brokers_under_a_stock_producer() {
    let root = tempfile::tempdir().unwrap();
    let pki = Pki::new(&root.path().join("pki"));
    let node_subject = [("CN", "kraftd-node")];
    let (_id, mut controllers, mut brokers) = formatted_cluster_with_scram(
        root.path(),
        1,
        3,
        &["SCRAM-SHA-512=[name=admin,password=admin-secret]"],
    );
    let keystore = |b: &Node, generation: u32| -> PathBuf {
        pki.dir.join(format!("broker-{}-{generation}.pem", b.id))
    };
    let mut serving: Vec<(String, String)> = Vec::new();
    for b in &brokers {
        let pem = pki.node_keystore(&keystore(b, 0), &node_subject);
        serving.push(pem_identity(&pem));
        let lines = [
            format!("listeners=BROKER://127.0.0.1:{}", b.port),
            "listener.security.protocol.map=BROKER:SASL_SSL,CONTROLLER:PLAINTEXT".to_string(),
            "inter.broker.listener.name=BROKER".to_string(),
            "sasl.enabled.mechanisms=SCRAM-SHA-512".to_string(),
            "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512".to_string(),
            "listener.name.broker.scram-sha-512.sasl.jaas.config=\
             org.apache.kafka.common.security.scram.ScramLoginModule required \
             username=\"admin\" password=\"admin-secret\";"
                .to_string(),
            "listener.name.broker.ssl.keystore.type=PEM".to_string(),
            format!(
                "listener.name.broker.ssl.keystore.location={}",
                keystore(b, 0).display()
            ),
            "ssl.truststore.type=PEM".to_string(),
            format!("ssl.truststore.location={}", pki.ca_path().display()),
        ];
        b.add_config(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    }
    for n in controllers.iter_mut().chain(brokers.iter_mut()) {
        n.start();
    }
    let logs = || all_logs(&controllers) + &all_logs(&brokers);
    let ca = pki.ca_path();
    let command_config = root.path().join("admin.properties");
    std::fs::write(
        &command_config,
        format!(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n\
             sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
             username=\"admin\" password=\"admin-secret\";\n\
             ssl.truststore.type=PEM\nssl.truststore.location={}\n",
            ca.display()
        ),
    )
    .unwrap();
    for (b, identity) in brokers.iter().zip(&serving) {
        let seen = eventually(
            "the broker serves TLS",
            Duration::from_secs(60),
            logs,
            || served_certificate(&b.address(), &ca),
        );
        assert_eq!(&seen, identity, "broker {} serves its keystore", b.id);
    }

    let stop_file = root.path().join("stop");
    let bootstrap = common::addresses(&brokers);
    let ca_config = format!("ssl.ca.location={}", ca.display());
    let mut producer = Script::spawn(
        root.path(),
        "idempotent_failover.py",
        &[
            "--bootstrap",
            &bootstrap,
            "--topic",
            TOPIC,
            "--partitions",
            "6",
            "--replication-factor",
            "3",
            "--min-insync-replicas",
            "2",
            "--stop-file",
            stop_file.to_str().unwrap(),
            "--progress-every",
            "200",
            "--client-config",
            "security.protocol=SASL_SSL",
            "--client-config",
            "sasl.mechanism=SCRAM-SHA-512",
            "--client-config",
            "sasl.username=admin",
            "--client-config",
            "sasl.password=admin-secret",
            "--client-config",
            &ca_config,
        ],
    );
    producer.wait_line_or(120, "the producer starts", |l| l == "started", logs);
    producer.wait_acked(1000, 120);

    // A connection to the first broker, opened before its certificate changes.
    let go_file = root.path().join("go");
    let mut held = Script::spawn(
        root.path(),
        "tls_peer.py",
        &[
            "hold",
            &brokers[0].address(),
            ca.to_str().unwrap(),
            go_file.to_str().unwrap(),
        ],
    );
    let first = held.wait_line_or(
        30,
        "the held connection's certificate",
        |l| l.starts_with("cert "),
        logs,
    );
    assert_eq!(cert_line(&first).unwrap(), serving[0]);
    held.wait_line_or(30, "the connection is held", |l| l == "held", logs);

    for (i, b) in brokers.iter().enumerate() {
        // The first broker's file is rewritten in place and its path set again; the others
        // get a new file.
        let location = if i == 0 {
            keystore(b, 0)
        } else {
            keystore(b, 1)
        };
        let pem = pki.node_keystore(&location, &node_subject);
        let rotated = pem_identity(&pem);
        assert_ne!(rotated.0, serving[i].0, "a new serial number");
        let acked = producer.acked_so_far();
        let out = set_keystore(b, &command_config, &location);
        assert!(
            out.status.success(),
            "kafka-configs: {}\n{}",
            output_text(&out),
            logs()
        );
        let seen = eventually(
            "a new connection sees the new certificate",
            Duration::from_secs(30),
            logs,
            || match served_certificate(&b.address(), &ca)? {
                seen if seen == rotated => Ok(seen),
                other => Err(format!("still {other:?}")),
            },
        );
        assert_eq!(seen.1, "CN=kraftd-node");
        serving[i] = rotated;
        producer.wait_acked(acked + 500, 120);
    }

    // The connection opened before the change still answers, with the certificate it had.
    std::fs::write(&go_file, "").unwrap();
    held.wait_line_or(
        30,
        "the held connection answers",
        |l| l.starts_with("answered "),
        logs,
    );
    let after = held.wait_line_or(
        30,
        "the held connection's certificate",
        |l| l.starts_with("cert "),
        logs,
    );
    assert_eq!(cert_line(&after).unwrap(), cert_line(&first).unwrap());
    assert_ne!(cert_line(&after).unwrap(), serving[0]);

    // A keystore with another subject is refused as Kafka refuses it, and changes nothing.
    let impostor = pki.dir.join("impostor.pem");
    pki.node_keystore(&impostor, &[("CN", "impostor")]);
    let out = set_keystore(&brokers[1], &command_config, &impostor);
    let text = output_text(&out);
    assert!(
        !out.status.success() && text.contains("Keystore DistinguishedName does not match"),
        "a keystore with another subject: {text}"
    );
    assert_eq!(
        served_certificate(&brokers[1].address(), &ca).unwrap(),
        serving[1]
    );

    let acked = producer.acked_so_far();
    producer.wait_acked(acked + 500, 120);
    std::fs::write(&stop_file, "").unwrap();
    let summary = producer.finish(240, logs);
    assert!(summary.contains("\"ok\": true"), "{summary}");
}

/// A controller's own CONTROLLER listener rotates as a broker's does (Kafka's ControllerServer
/// registers its listeners' reconfigurables with its DynamicConfigPublisher): Kafka 4.4.0's
/// `kafka-configs --bootstrap-controller` over SSL sets
/// `listener.name.controller.ssl.keystore.location` on the controller's own id, and a new
/// connection to the controller listener is then served the new certificate.
#[test]
fn a_controllers_listener_certificate_rotates_with_kafka_configs_bootstrap_controller() {
    let root = tempfile::tempdir().unwrap();
    let pki = Pki::new(&root.path().join("pki"));
    let node_subject = [("CN", "kraftd-node")];
    let (_id, mut controllers) = common::formatted_quorum(root.path(), 1);
    let keystore = |generation: u32| pki.dir.join(format!("controller-{generation}.pem"));
    let first = pem_identity(&pki.node_keystore(&keystore(0), &node_subject));
    let lines = [
        "listener.security.protocol.map=CONTROLLER:SSL".to_string(),
        "listener.name.controller.ssl.keystore.type=PEM".to_string(),
        format!(
            "listener.name.controller.ssl.keystore.location={}",
            keystore(0).display()
        ),
        "ssl.truststore.type=PEM".to_string(),
        format!("ssl.truststore.location={}", pki.ca_path().display()),
    ];
    controllers[0].add_config(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    controllers[0].start();
    let logs = || all_logs(&controllers);
    let ca = pki.ca_path();
    let address = controllers[0].address();
    let seen = eventually(
        "the controller serves TLS",
        Duration::from_secs(60),
        logs,
        || served_certificate(&address, &ca),
    );
    assert_eq!(seen, first, "the controller serves its keystore");

    let command_config = root.path().join("admin.properties");
    std::fs::write(
        &command_config,
        format!(
            "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={}\n",
            ca.display()
        ),
    )
    .unwrap();
    let rotated = pem_identity(&pki.node_keystore(&keystore(1), &node_subject));
    assert_ne!(rotated.0, first.0, "a new serial number");
    let id = controllers[0].id.to_string();
    let config = format!(
        "listener.name.controller.ssl.keystore.location={}",
        keystore(1).display()
    );
    let out = run_tool(
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-controller",
            &address,
            "--command-config",
            command_config.to_str().unwrap(),
            "--entity-type",
            "brokers",
            "--entity-name",
            &id,
            "--alter",
            "--add-config",
            &config,
        ],
    );
    assert!(
        out.status.success(),
        "kafka-configs --bootstrap-controller: {}\n{}",
        output_text(&out),
        logs()
    );
    eventually(
        "a new connection to the controller sees the new certificate",
        Duration::from_secs(30),
        logs,
        || match served_certificate(&address, &ca)? {
            seen if seen == rotated => Ok(seen),
            other => Err(format!("still {other:?}")),
        },
    );
    common::stop_gracefully(&mut controllers);
}
