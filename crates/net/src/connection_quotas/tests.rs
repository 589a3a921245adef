//! The connection quotas against Kafka's `ConnectionQuotasTest` cases that need no sockets:
//! per-address caps and overrides, the broker-wide cap waiting for a slot, the rate
//! throttle arithmetic, the address rate quota and the overrides' parse.

use super::*;

const WINDOW: SampleConfig = SampleConfig {
    window_ms: 1000,
    samples: 11,
};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn quotas(config: ConnectionQuotaConfig) -> Arc<ConnectionQuotas> {
    let q = ConnectionQuotas::new(config, WINDOW);
    q.add_listener("PLAINTEXT");
    q
}

#[tokio::test]
async fn an_address_at_its_limit_is_refused_and_an_override_applies_to_its_address() {
    let q = quotas(ConnectionQuotaConfig {
        max_connections_per_ip: 2,
        max_connections_per_ip_overrides: HashMap::from([(ip("127.0.0.2"), 3)]),
        ..Default::default()
    });
    let a = q.admit("PLAINTEXT", ip("127.0.0.1")).await.unwrap();
    let _b = q.admit("PLAINTEXT", ip("127.0.0.1")).await.unwrap();
    let refused = q.admit("PLAINTEXT", ip("127.0.0.1")).await.unwrap_err();
    assert_eq!(
        refused,
        Refused::TooManyConnections {
            ip: ip("127.0.0.1"),
            max: 2
        }
    );
    assert_eq!(
        refused.to_string(),
        "Too many connections from /127.0.0.1 (maximum = 2)"
    );
    let others: Vec<_> = futures_all(&q, "127.0.0.2", 3).await;
    assert_eq!(others.len(), 3);
    assert!(q.admit("PLAINTEXT", ip("127.0.0.2")).await.is_err());
    drop(a);
    assert_eq!(q.connections_from(ip("127.0.0.1")), 1);
    let _c = q.admit("PLAINTEXT", ip("127.0.0.1")).await.unwrap();
}

async fn futures_all(q: &Arc<ConnectionQuotas>, from: &str, n: usize) -> Vec<ConnectionSlot> {
    let mut slots = Vec::new();
    for _ in 0..n {
        slots.push(q.admit("PLAINTEXT", ip(from)).await.unwrap());
    }
    slots
}

#[tokio::test]
async fn the_broker_cap_holds_the_next_connection_until_a_slot_frees_or_the_cap_rises() {
    let q = quotas(ConnectionQuotaConfig {
        max_connections: 1,
        ..Default::default()
    });
    let first = q.admit("PLAINTEXT", ip("127.0.0.1")).await.unwrap();
    let waiting = {
        let q = Arc::clone(&q);
        tokio::spawn(async move { q.admit("PLAINTEXT", ip("127.0.0.1")).await })
    };
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert!(!waiting.is_finished(), "admitted over max.connections");
    drop(first);
    let second = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("a freed slot admits the waiting connection")
        .unwrap()
        .unwrap();

    let waiting = {
        let q = Arc::clone(&q);
        tokio::spawn(async move { q.admit("PLAINTEXT", ip("127.0.0.1")).await })
    };
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert!(!waiting.is_finished());
    q.reconfigure(ConnectionQuotaConfig {
        max_connections: 2,
        ..Default::default()
    });
    let _third = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("a raised cap admits the waiting connection")
        .unwrap()
        .unwrap();
    drop(second);
}

#[tokio::test]
async fn a_listener_cap_holds_only_its_listener_and_the_protected_listener_passes_the_broker_cap() {
    let q = ConnectionQuotas::new(
        ConnectionQuotaConfig {
            max_connections: 1,
            listeners: BTreeMap::from([(
                "EXTERNAL".to_string(),
                ListenerQuotaConfig {
                    max_connections: 1,
                    ..Default::default()
                },
            )]),
            ..Default::default()
        },
        WINDOW,
    );
    q.set_inter_broker_listener(Some("INTERNAL".into()));
    q.add_listener("EXTERNAL");
    q.add_listener("INTERNAL");
    let _external = q.admit("EXTERNAL", ip("10.0.0.1")).await.unwrap();
    // The broker is at max.connections; the inter-broker listener is protected.
    let _internal = q.admit("INTERNAL", ip("10.0.0.2")).await.unwrap();
    let _internal2 = q.admit("INTERNAL", ip("10.0.0.2")).await.unwrap();
    let held = {
        let q = Arc::clone(&q);
        tokio::spawn(async move { q.admit("EXTERNAL", ip("10.0.0.3")).await })
    };
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert!(!held.is_finished());
    held.abort();
}

#[test]
fn a_rate_quota_throttles_past_the_burst_its_window_allows_by_kafkas_formula() {
    // 2/s over 11 samples of 1 s: the rate is measured over at least 10 s, so 20
    // connections at once stay within it; then (rate - quota) / quota × window, at most
    // one window.
    let mut s = QuotaSensor::new(WINDOW, 2);
    for _ in 0..20 {
        assert_eq!(s.record(0, 1000), 0);
    }
    assert_eq!(s.record(0, 1000), 500);
    assert_eq!(s.record(0, 1000), 1000);
    assert_eq!(s.record(0, 1000), 1000);
    let mut unlimited = QuotaSensor::new(WINDOW, UNLIMITED);
    for _ in 0..1000 {
        assert_eq!(unlimited.record(0, 1000), 0);
    }
}

#[tokio::test]
async fn the_broker_rate_delays_the_accept() {
    let q = quotas(ConnectionQuotaConfig {
        max_connection_creation_rate: 1,
        ..Default::default()
    });
    let started = std::time::Instant::now();
    let mut slots = Vec::new();
    for _ in 0..11 {
        slots.push(q.admit("PLAINTEXT", ip("127.0.0.1")).await.unwrap());
    }
    // The 11th: (1.1 - 1) / 1 × 10 s = 1 s, the most a throttle lasts.
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[tokio::test]
async fn an_address_over_its_rate_is_refused_with_its_throttle_and_others_pass() {
    let q = quotas(ConnectionQuotaConfig::default());
    q.update_ip_connection_rate(Some(ip("127.0.0.1")), Some(1));
    let mut slots = Vec::new();
    for _ in 0..10 {
        slots.push(q.admit("PLAINTEXT", ip("127.0.0.1")).await.unwrap());
    }
    match q.admit("PLAINTEXT", ip("127.0.0.1")).await {
        Err(Refused::Throttled { ip: i, throttle }) => {
            assert_eq!(i, ip("127.0.0.1"));
            assert_eq!(throttle, Duration::from_millis(1000));
        }
        other => panic!("expected a throttle, got {other:?}"),
    }
    assert_eq!(q.connections_from(ip("127.0.0.1")), 10);
    // The default entity covers every other address; removing it lifts it.
    q.update_ip_connection_rate(None, Some(1));
    for _ in 0..10 {
        slots.push(q.admit("PLAINTEXT", ip("127.0.0.9")).await.unwrap());
    }
    assert!(q.admit("PLAINTEXT", ip("127.0.0.9")).await.is_err());
    q.set_ip_connection_rates(None, HashMap::new());
    slots.push(q.admit("PLAINTEXT", ip("127.0.0.9")).await.unwrap());
    slots.push(q.admit("PLAINTEXT", ip("127.0.0.1")).await.unwrap());
    let mut metrics = String::new();
    write_prometheus(&[Arc::clone(&q)], 1, &mut metrics);
    assert!(metrics.contains(
        "kafka_server_socket_server_metrics_connection_accept_rate{node=\"1\",ip=\"127.0.0.1\"}"
    ));
    assert!(metrics.contains(
        "kafka_server_socket_server_metrics_ip_connection_accept_throttle_time{node=\"1\",listener=\"PLAINTEXT\"} 1000"
    ));
}

#[test]
fn overrides_parse_as_kafkas_csv_map_with_kafkas_errors() {
    assert_eq!(parse_max_connections_per_ip_overrides(""), Ok(vec![]));
    assert_eq!(
        parse_max_connections_per_ip_overrides("127.0.0.1:5, localhost : 7,::1:3,"),
        Ok(vec![
            ("127.0.0.1".into(), 5),
            ("localhost".into(), 7),
            ("::1".into(), 3)
        ])
    );
    assert_eq!(
        parse_max_connections_per_ip_overrides("hostA"),
        Err("Error parsing configuration property 'max.connections.per.ip.overrides': begin 0, end -1, length 5".into())
    );
    assert_eq!(
        parse_max_connections_per_ip_overrides("hostA:x"),
        Err("For input string: \"x\"".into())
    );
    assert_eq!(
        parse_max_connections_per_ip_overrides("bad host:1,ok:2,a/b:3"),
        Err("max.connections.per.ip.overrides contains invalid addresses : bad host,a/b".into())
    );
}
