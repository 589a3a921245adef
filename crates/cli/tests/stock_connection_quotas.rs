//! Kafka's connection quotas on a live broker, changed with Apache Kafka 4.4.0's own
//! `kafka-configs` (issue 30): with `max.connections.per.ip=2` and an override of 4 for
//! 127.0.0.2, a third raw connection from 127.0.0.1 is closed at accept while 127.0.0.2 gets
//! four (the listener is bound to 0.0.0.0, so both loopback addresses reach it); the cluster
//! default `max.connections.per.ip=10` set by `kafka-configs --entity-default` takes effect
//! without a restart; a malformed override is refused with Kafka's message; and with
//! `max.connection.creation.rate=2` set on the broker, connections past the burst Kafka's
//! rate window allows are accepted late: 30 sequential connections take more than 2 s
//! (Kafka's arithmetic makes it about 8), and the broker reports the throttle in
//! `connection-accept-throttle-time`.

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::kafka_jars::{self, output_text, run_tool};
use common::{all_logs, eventually, formatted_cluster, free_port, Node};
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::{ApiVersionsRequest, RequestHeader};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody};

/// A connection from `from` to `to` (bound first, so 127.0.0.2 is the source address).
fn connect_from(from: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(from, 0))?;
        socket.connect(to).await
    })?;
    let stream = stream.into_std()?;
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    Ok(stream)
}

/// A connection from `from` that the broker served: ApiVersions answered on it. `Err` when
/// it was closed instead (or never answered in 10 s).
fn served(from: IpAddr, to: SocketAddr) -> Result<TcpStream, String> {
    let mut s = connect_from(from, to).map_err(|e| format!("connect: {e}"))?;
    let header = RequestHeader {
        request_api_key: ApiKey::ApiVersions.code(),
        request_api_version: 3,
        correlation_id: 7,
        client_id: Some("raw".into()),
        ..Default::default()
    };
    let body = RequestBody::ApiVersions(ApiVersionsRequest {
        client_software_name: "raw".into(),
        client_software_version: "1.0".into(),
        ..Default::default()
    });
    let frame = encode_request(&header, &body).unwrap().into_bytes();
    let mut bytes = (frame.len() as i32).to_be_bytes().to_vec();
    bytes.extend_from_slice(&frame);
    // A refused connection may be closed before or while the request is written.
    s.write_all(&bytes).map_err(|e| format!("write: {e}"))?;
    let mut size = [0u8; 4];
    s.read_exact(&mut size)
        .map_err(|e| format!("closed: {e}"))?;
    let mut buf = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut buf).map_err(|e| format!("closed: {e}"))?;
    match decode_response(ApiKey::ApiVersions, 3, Bytes::from(buf)) {
        Ok((h, ResponseBody::ApiVersions(r))) if h.correlation_id == 7 && r.error_code == 0 => {
            Ok(s)
        }
        other => Err(format!("unexpected answer {other:?}")),
    }
}

/// `kafka-configs --bootstrap-server <b> --entity-type brokers <entity> --alter
/// --add-config <config>`: whether it succeeded, and its output.
fn alter_broker_configs(bootstrap: &str, entity: &[&str], config: &str) -> (bool, String) {
    let mut args = vec!["--bootstrap-server", bootstrap, "--entity-type", "brokers"];
    args.extend(entity);
    args.extend(["--alter", "--add-config", config]);
    let out = run_tool("org.apache.kafka.tools.ConfigCommand", &args);
    (out.status.success(), output_text(&out))
}

/// The broker of a one-controller cluster, its client listener on 0.0.0.0 (advertised as
/// 127.0.0.1) with `extra` properties, started with its controller.
fn started(root: &std::path::Path, extra: &[&str]) -> (Vec<Node>, Vec<Node>) {
    let (_cluster_id, mut controllers, mut brokers) = formatted_cluster(root, 1, 1);
    let b = &brokers[0];
    let path = b.config_path();
    let text = std::fs::read_to_string(&path).unwrap().replace(
        &format!("listeners=PLAINTEXT://127.0.0.1:{}", b.port),
        &format!(
            "listeners=PLAINTEXT://0.0.0.0:{port}\nadvertised.listeners=PLAINTEXT://127.0.0.1:{port}",
            port = b.port
        ),
    );
    std::fs::write(&path, text).unwrap();
    b.add_config(extra);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    (controllers, brokers)
}

#[test]
fn per_address_limits_and_the_creation_rate_hold_and_change_live_with_kafka_configs() {
    kafka_jars::classpath();
    let root = tempfile::tempdir().unwrap();
    let metrics_port = free_port();
    let (controllers, brokers) = started(
        root.path(),
        &[
            "max.connections.per.ip=2",
            "max.connections.per.ip.overrides=127.0.0.2:4",
            &format!("metrics.port={metrics_port}"),
        ],
    );
    let logs = || {
        format!(
            "--- controller ---\n{}\n--- broker ---\n{}",
            all_logs(&controllers),
            all_logs(&brokers)
        )
    };
    let bootstrap = brokers[0].address();
    let to: SocketAddr = bootstrap.parse().unwrap();
    let one: IpAddr = "127.0.0.1".parse().unwrap();
    let two: IpAddr = "127.0.0.2".parse().unwrap();

    // Two connections from 127.0.0.1 are served, the third is closed at accept.
    let first = eventually("the broker serves", Duration::from_secs(60), logs, || {
        served(one, to)
    });
    let second = served(one, to).unwrap_or_else(|e| panic!("second connection: {e}\n{}", logs()));
    let third = served(one, to);
    assert!(
        third.is_err(),
        "a third connection from 127.0.0.1 was served"
    );
    // 127.0.0.2's override lets four in, not five.
    let from_two: Vec<TcpStream> = (0..4)
        .map(|i| served(two, to).unwrap_or_else(|e| panic!("127.0.0.2 #{i}: {e}\n{}", logs())))
        .collect();
    assert!(
        served(two, to).is_err(),
        "a fifth connection from 127.0.0.2 was served"
    );
    assert!(
        brokers[0]
            .logs()
            .contains("Too many connections from /127.0.0.1 (maximum = 2)"),
        "no rejection logged\n{}",
        logs()
    );
    // The admin client needs its own connections from 127.0.0.1.
    drop((first, second, from_two));

    // The cluster default raises the limit on the live broker.
    let (ok, out) = eventually(
        "kafka-configs reaches the broker",
        Duration::from_secs(60),
        logs,
        || {
            let (ok, out) = alter_broker_configs(
                &bootstrap,
                &["--entity-default"],
                "max.connections.per.ip=10",
            );
            if ok || !out.contains("Timed out") {
                Ok((ok, out))
            } else {
                Err(out)
            }
        },
    );
    assert!(ok, "max.connections.per.ip=10 refused: {out}\n{}", logs());
    let held: Vec<TcpStream> = eventually(
        "ten connections from 127.0.0.1",
        Duration::from_secs(30),
        logs,
        || {
            let mut held = Vec::new();
            for i in 0..10 {
                held.push(served(one, to).map_err(|e| format!("connection {i}: {e}"))?);
            }
            Ok(held)
        },
    );
    assert!(
        served(one, to).is_err(),
        "an 11th connection from 127.0.0.1 was served"
    );
    drop(held);

    // A malformed override is refused with Kafka's message, before anything changes.
    let (ok, out) = alter_broker_configs(
        &bootstrap,
        &["--entity-default"],
        "max.connections.per.ip.overrides=[bad host:1]",
    );
    assert!(!ok, "a malformed override was accepted: {out}");
    assert!(
        out.contains("max.connections.per.ip.overrides contains invalid addresses : bad host"),
        "{out}"
    );

    // A creation rate of 2/s on this broker (the window lets about 20 in at once).
    let (ok, out) = eventually("kafka-configs runs", Duration::from_secs(30), logs, || {
        let (ok, out) = alter_broker_configs(
            &bootstrap,
            &["--entity-name", "2"],
            "max.connection.creation.rate=2,max.connections.per.ip=1000",
        );
        if ok || !out.contains("Timed out") {
            Ok((ok, out))
        } else {
            Err(out)
        }
    });
    assert!(
        ok,
        "max.connection.creation.rate=2 refused: {out}\n{}",
        logs()
    );
    let started = Instant::now();
    for i in 0..30 {
        served(one, to).unwrap_or_else(|e| panic!("connection {i}: {e}\n{}", logs()));
    }
    let took = started.elapsed();
    assert!(
        took > Duration::from_secs(2),
        "30 connections at 2/s took only {took:?}\n{}",
        logs()
    );
    let text = common::scrape_metrics(metrics_port);
    let throttle = text
        .lines()
        .find(|l| {
            l.starts_with(
                "kafka_server_socket_server_metrics_connection_accept_throttle_time{node=\"2\",listener=\"PLAINTEXT\"}",
            )
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok());
    assert!(
        throttle.is_some_and(|t| t > 0.0),
        "no accept throttle reported: {throttle:?}\n{text}"
    );
}
