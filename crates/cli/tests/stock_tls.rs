//! TLS with real processes, a CA the test makes and stock clients
//! (`tests/python/ssl_clients.py`): confluent-kafka and kafka-python produce and consume
//! over an SSL listener that authenticates only the server, and over a mutual-TLS listener
//! (`ssl.client.auth=required`) whose principal mapping rules admit a certificate they map
//! and refuse one they do not (the broker's log names the subject as Kafka prints it) and a
//! client without a certificate; and a cluster whose controller listener (client
//! certificates required) and inter-broker listener are SSL: the controllers elect a leader
//! over TLS, the brokers register and heartbeat over TLS, and a topic with replication
//! factor 2 fills its ISR through the followers' fetches over TLS. The same over SASL_SSL:
//! the controllers log one another and the brokers in with PLAIN over TLS, the brokers log
//! in to one another's SASL_SSL listener with SCRAM-SHA-512 as the user `kraftd format
//! --add-scram` created, every session re-authenticated each second (KIP-368), and the
//! clients produce with acks=all over that listener.
//!
//! Every wait is on a condition with a deadline, never a fixed pause.

mod common;

use std::time::{Duration, Instant};

use common::pki::Pki;
use common::python::run_until_all_ok;
use common::{all_logs, formatted_cluster, formatted_cluster_with_scram, free_port, Node};

/// Each test runs several processes and clients: they take turns on a small machine.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// `ssl_clients.py` with `args`, which must print "all ok".
fn clients(args: &[&str], nodes: &[&Node]) {
    run_until_all_ok("ssl_clients.py", args, || {
        nodes
            .iter()
            .map(|n| format!("--- node {} ---\n{}", n.id, n.logs()))
            .collect::<Vec<_>>()
            .join("\n")
    });
}

#[test]
fn stock_clients_over_ssl_and_mutual_tls() {
    let _serial = serial();
    let root = tempfile::tempdir().unwrap();
    let pki = Pki::new(&root.path().join("pki"));
    let (alice_cert, alice_key) =
        pki.client("alice", &[("O", "acme"), ("OU", "eng"), ("CN", "alice")]);
    let (mallory_cert, mallory_key) = pki.client(
        "mallory",
        &[("O", "acme"), ("OU", "ops"), ("CN", "mallory")],
    );
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    let broker = &mut brokers[0];
    // Two SSL listeners: server authentication only, and mutual TLS with mapping rules
    // (no DEFAULT: a subject no rule maps is refused).
    let mtls_port = free_port();
    let mut lines = vec![
        format!(
            "listeners=SSL://127.0.0.1:{},MTLS://127.0.0.1:{mtls_port}",
            broker.port
        ),
        "listener.security.protocol.map=SSL:SSL,MTLS:SSL,CONTROLLER:PLAINTEXT".to_string(),
        "inter.broker.listener.name=SSL".to_string(),
        "listener.name.mtls.ssl.client.auth=required".to_string(),
        "listener.name.mtls.ssl.principal.mapping.rules=RULE:^CN=([^,]+),OU=eng,O=acme$/$1/L"
            .to_string(),
    ];
    lines.extend(pki.node_ssl_config());
    broker.add_config(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    controllers[0].start();
    broker.start();

    let ca = pki.ca_path();
    let ssl = broker.address();
    let mtls = format!("127.0.0.1:{mtls_port}");
    let nodes = [&controllers[0], &brokers[0]];
    for client in ["confluent", "kafka-python"] {
        let topic = format!("ssl-{client}");
        clients(
            &[
                "--bootstrap",
                &ssl,
                "--ca",
                path(&ca),
                "--topic",
                &topic,
                "--client",
                client,
            ],
            &nodes,
        );
        let topic = format!("mtls-{client}");
        clients(
            &[
                "--bootstrap",
                &mtls,
                "--ca",
                path(&ca),
                "--cert",
                path(&alice_cert),
                "--key",
                path(&alice_key),
                "--topic",
                &topic,
                "--client",
                client,
            ],
            &nodes,
        );
        // No certificate, or one no rule maps: refused.
        clients(
            &[
                "--bootstrap",
                &mtls,
                "--ca",
                path(&ca),
                "--topic",
                "x",
                "--client",
                client,
                "--expect-refused",
            ],
            &nodes,
        );
        clients(
            &[
                "--bootstrap",
                &mtls,
                "--ca",
                path(&ca),
                "--cert",
                path(&mallory_cert),
                "--key",
                path(&mallory_key),
                "--topic",
                "x",
                "--client",
                client,
                "--expect-refused",
            ],
            &nodes,
        );
    }
    let logs = brokers[0].logs();
    assert!(
        logs.contains(
            r#"no ssl.principal.mapping.rules rule applies to \"CN=mallory,OU=ops,O=acme\""#
        ) || logs.contains(
            r#"no ssl.principal.mapping.rules rule applies to "CN=mallory,OU=ops,O=acme""#
        ),
        "the refusal names the subject in RFC 2253 form:\n{logs}"
    );
}

#[test]
fn a_cluster_whose_nodes_talk_tls_to_each_other() {
    let _serial = serial();
    let root = tempfile::tempdir().unwrap();
    let pki = Pki::new(&root.path().join("pki"));
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 3, 2);
    let ssl = pki.node_ssl_config();
    let metrics_ports: Vec<u16> = controllers.iter().map(|_| free_port()).collect();
    for (c, metrics_port) in controllers.iter().zip(&metrics_ports) {
        let mut lines = vec![
            format!("metrics.port={metrics_port}"),
            "listener.security.protocol.map=CONTROLLER:SSL".to_string(),
            // Only nodes with a certificate of the cluster's CA reach the controllers.
            "listener.name.controller.ssl.client.auth=required".to_string(),
        ];
        lines.extend(ssl.iter().cloned());
        c.add_config(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    }
    for b in &brokers {
        let mut lines = vec![
            format!("listeners=SSL://127.0.0.1:{}", b.port),
            "listener.security.protocol.map=SSL:SSL,CONTROLLER:SSL".to_string(),
        ];
        lines.extend(ssl.iter().cloned());
        b.add_config(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    }
    for n in controllers.iter_mut().chain(brokers.iter_mut()) {
        n.start();
    }
    let bootstrap = format!("{},{}", brokers[0].address(), brokers[1].address());
    let nodes: Vec<&Node> = controllers.iter().chain(brokers.iter()).collect();
    clients(
        &[
            "--bootstrap",
            &bootstrap,
            "--ca",
            path(&pki.ca_path()),
            "--topic",
            "replicated",
            "--client",
            "confluent",
            "--partitions",
            "2",
            "--replication-factor",
            "2",
        ],
        &nodes,
    );
    wait_for_one_leader(&metrics_ports, &controllers);
}

/// Waits (30 s at most) until the quorum has elected its leader: every controller (by its
/// metrics port) names the same one.
fn wait_for_one_leader(metrics_ports: &[u16], controllers: &[Node]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let leaders: Vec<Option<i32>> = metrics_ports.iter().map(|p| current_leader(*p)).collect();
        if leaders[0].is_some_and(|l| l > 0) && leaders.iter().all(|l| *l == leaders[0]) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "controllers name leaders {leaders:?}:\n{}",
            all_logs(controllers)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_cluster_whose_nodes_talk_sasl_ssl_to_each_other() {
    let _serial = serial();
    let root = tempfile::tempdir().unwrap();
    let pki = Pki::new(&root.path().join("pki"));
    let (_id, mut controllers, mut brokers) = formatted_cluster_with_scram(
        root.path(),
        3,
        2,
        &["SCRAM-SHA-512=[name=admin,password=admin-secret]"],
    );
    let ssl = pki.node_ssl_config();
    // Every node logs in to the controllers with PLAIN over TLS.
    let controller_sasl = [
        // Sessions of a second: the nodes' own connections re-authenticate over TLS.
        "connections.max.reauth.ms=1000",
        "sasl.mechanism.controller.protocol=PLAIN",
        "listener.name.controller.plain.sasl.jaas.config=\
         org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"kraft\" password=\"kraft-secret\" user_kraft=\"kraft-secret\";",
    ];
    let metrics_ports: Vec<u16> = controllers.iter().map(|_| free_port()).collect();
    for (c, metrics_port) in controllers.iter().zip(&metrics_ports) {
        let mut lines = vec![
            format!("metrics.port={metrics_port}"),
            "listener.security.protocol.map=CONTROLLER:SASL_SSL".to_string(),
            "sasl.enabled.mechanisms=PLAIN".to_string(),
        ];
        lines.extend(controller_sasl.iter().map(|l| l.to_string()));
        lines.extend(ssl.iter().cloned());
        c.add_config(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    }
    for b in &brokers {
        let mut lines = vec![
            format!("listeners=BROKER://127.0.0.1:{}", b.port),
            "listener.security.protocol.map=BROKER:SASL_SSL,CONTROLLER:SASL_SSL".to_string(),
            "inter.broker.listener.name=BROKER".to_string(),
            "sasl.enabled.mechanisms=SCRAM-SHA-512".to_string(),
            "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512".to_string(),
            "listener.name.broker.scram-sha-512.sasl.jaas.config=\
             org.apache.kafka.common.security.scram.ScramLoginModule required \
             username=\"admin\" password=\"admin-secret\";"
                .to_string(),
        ];
        lines.extend(controller_sasl.iter().map(|l| l.to_string()));
        lines.extend(ssl.iter().cloned());
        b.add_config(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    }
    for n in controllers.iter_mut().chain(brokers.iter_mut()) {
        n.start();
    }
    let bootstrap = format!("{},{}", brokers[0].address(), brokers[1].address());
    let nodes: Vec<&Node> = controllers.iter().chain(brokers.iter()).collect();
    for client in ["confluent", "kafka-python"] {
        let topic = format!("replicated-{client}");
        clients(
            &[
                "--bootstrap",
                &bootstrap,
                "--ca",
                path(&pki.ca_path()),
                "--sasl",
                "SCRAM-SHA-512:admin:admin-secret",
                "--topic",
                &topic,
                "--client",
                client,
                "--partitions",
                "2",
                "--replication-factor",
                "2",
            ],
            &nodes,
        );
    }
    wait_for_one_leader(&metrics_ports, &controllers);
    // kraftd's own quorum tool over the SASL_SSL controller listener, with a client
    // properties file as Kafka's `kafka-metadata-quorum --command-config` takes it.
    let command_config = root.path().join("quorum-client.properties");
    std::fs::write(
        &command_config,
        format!(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n\
             sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
             username=\"kraft\" password=\"kraft-secret\";\n\
             ssl.truststore.type=PEM\nssl.truststore.location={}\n",
            pki.ca_path().display()
        ),
    )
    .unwrap();
    let all_controllers = controllers
        .iter()
        .map(Node::address)
        .collect::<Vec<_>>()
        .join(",");
    let quorum = |extra: &[&str]| {
        let mut args = vec![
            "metadata-quorum",
            "--bootstrap-controller",
            &all_controllers,
        ];
        args.extend(extra);
        args.extend(["describe", "--status"]);
        std::process::Command::new(common::BIN)
            .args(&args)
            .output()
            .unwrap()
    };
    let secured = quorum(&["--command-config", path(&command_config)]);
    let stdout = String::from_utf8_lossy(&secured.stdout);
    assert!(
        secured.status.success() && stdout.contains("LeaderId:"),
        "kraftd metadata-quorum over SASL_SSL: {stdout}{}",
        String::from_utf8_lossy(&secured.stderr)
    );
    // Without the client settings it cannot talk to a SASL_SSL listener, and says so.
    let plain = quorum(&[]);
    assert!(!plain.status.success(), "no quorum answer over plain TCP");
    let all = all_logs(&controllers) + &all_logs(&brokers);
    assert!(
        !all.contains("SASL authentication failed")
            && !all.contains("SASL re-authentication failed")
            && !all.contains("SASL session expired"),
        "no node failed to log in or to renew its session:\n{all}"
    );
}

/// `kafka_raft_metrics_current_leader` from a node's `/metrics`.
fn current_leader(port: u16) -> Option<i32> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    let line = body
        .lines()
        .find(|l| l.starts_with("kafka_raft_metrics_current_leader{"))?;
    line.rsplit(' ')
        .next()?
        .parse::<f64>()
        .ok()
        .map(|v| v as i32)
}

/// A keystore kraftd cannot read stops the real binary with one line naming the setting,
/// before anything is created.
#[test]
fn a_jks_keystore_stops_startup_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.properties");
    let logs = dir.path().join("logs");
    std::fs::write(
        &path,
        format!(
            "process.roles=broker,controller\nnode.id=1\n\
             controller.quorum.voters=1@127.0.0.1:1\n\
             listeners=SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:1\n\
             controller.listener.names=CONTROLLER\nlog.dirs={}\n\
             ssl.keystore.type=JKS\nssl.keystore.location=/etc/kafka/keystore.jks\n",
            logs.display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(common::BIN)
        .args(["combined", "--config"])
        .arg(&path)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("ssl.keystore.type")
            && lines[0].contains("\"JKS\"")
            && lines[0].contains("PEM"),
        "{stderr}"
    );
    assert!(!logs.exists(), "nothing was created");
}
