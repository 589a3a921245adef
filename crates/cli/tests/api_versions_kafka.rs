//! kraftd's ApiVersions answer beside Apache Kafka 4.4.0's, on the broker listener and on the
//! controller listener (issue 29's goal: key for key, version for version). Kafka runs from
//! its jars as one controller and one broker, kraftd as one controller and one broker, both
//! formatted with their defaults; each listener is asked ApiVersions v3 by a raw connection
//! and the two tables compared. Every difference must be in [`KNOWN_DIFFERENCES`], each entry
//! saying why; an entry no longer needed fails the test too, so the list only shrinks.
//!
//! The same two clusters then answer the requests around the table alike: ApiVersions v5
//! naming another cluster or node (REBOOTSTRAP_REQUIRED, KIP-1242) or only one of the two
//! (INVALID_REQUEST), and SaslHandshake / SaslAuthenticate on a PLAINTEXT listener
//! (ILLEGAL_SASL_STATE: advertised everywhere, refused outside an authentication).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::kafka_jars::kafka_cluster;
use common::raw::Raw;
use common::{eventually, started_cluster};
use kraftd_protocol::messages::{
    ApiVersionsRequest, DescribeClusterRequest, SaslAuthenticateRequest, SaslHandshakeRequest,
};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody};

/// Which listener a difference is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Listener {
    Broker,
    Controller,
}

/// An advertised range, `None` when a side does not advertise the key.
type Range = Option<(i16, i16)>;

/// `(listener, api key, Kafka's range, kraftd's range)`, each with the reason it stands.
#[rustfmt::skip]
const KNOWN_DIFFERENCES: &[(Listener, ApiKey, Range, Range)] = &[
    // kraftd's Raft speaks the versions Kafka 4.x controllers send one another; the older
    // ones are Kafka 3.x controllers', which a kraftd quorum does not take in.
    (Listener::Controller, ApiKey::Vote, Some((0, 2)), Some((2, 2))),
    (Listener::Controller, ApiKey::BeginQuorumEpoch, Some((0, 1)), Some((1, 1))),
    (Listener::Controller, ApiKey::EndQuorumEpoch, Some((0, 1)), Some((1, 1))),
    (Listener::Controller, ApiKey::FetchSnapshot, Some((0, 1)), Some((1, 1))),
    (Listener::Controller, ApiKey::Fetch, Some((4, 18)), Some((18, 18))),
    // Kafka advertises client telemetry only with a metrics reporter plugin configured;
    // kraftd always takes the pushes (its /metrics shows them), so always advertises it.
    (Listener::Broker, ApiKey::GetTelemetrySubscriptions, None, Some((0, 0))),
    (Listener::Broker, ApiKey::PushTelemetry, None, Some((0, 0))),
];

/// One listener's table: api key -> (min, max).
fn table(address: &str) -> BTreeMap<i16, (i16, i16)> {
    let request = ApiVersionsRequest {
        client_software_name: "kraftd-test".into(),
        client_software_version: "1".into(),
        ..Default::default()
    };
    let ResponseBody::ApiVersions(answer) =
        Raw::connect(address).call(3, RequestBody::ApiVersions(request))
    else {
        panic!("ApiVersions answered with another body")
    };
    assert_eq!(answer.error_code, 0, "ApiVersions from {address}");
    answer
        .api_keys
        .iter()
        .map(|k| (k.api_key, (k.min_version, k.max_version)))
        .collect()
}

/// The error codes of the requests around the table, asked of the broker at `address`
/// whose node id is `node_id`: ApiVersions v5 naming this node, another node, another
/// cluster, a cluster alone; SaslHandshake; SaslAuthenticate.
fn edge_answers(address: &str, node_id: i32) -> Vec<(String, i16)> {
    let mut raw = Raw::connect(address);
    let ResponseBody::DescribeCluster(cluster) = raw.call(
        0,
        RequestBody::DescribeCluster(DescribeClusterRequest::default()),
    ) else {
        panic!("DescribeCluster answered with another body")
    };
    let ask = |raw: &mut Raw, cluster_id: Option<&str>, node_id: i32| {
        let request = ApiVersionsRequest {
            client_software_name: "kraftd-test".into(),
            client_software_version: "1".into(),
            cluster_id: cluster_id.map(Into::into),
            node_id,
            ..Default::default()
        };
        match raw.call(5, RequestBody::ApiVersions(request)) {
            ResponseBody::ApiVersions(r) => r.error_code,
            other => panic!("ApiVersions answered {other:?}"),
        }
    };
    let id = cluster.cluster_id.as_str();
    let mut answers = vec![
        (
            "ApiVersions v5, this node".to_string(),
            ask(&mut raw, Some(id), node_id),
        ),
        (
            "ApiVersions v5, another node".into(),
            ask(&mut raw, Some(id), node_id + 7),
        ),
        (
            "ApiVersions v5, another cluster".into(),
            ask(&mut raw, Some("AAAAAAAAAAAAAAAAAAAAAA"), node_id),
        ),
        (
            "ApiVersions v5, cluster id alone".into(),
            ask(&mut raw, Some(id), -1),
        ),
    ];
    let handshake = SaslHandshakeRequest {
        mechanism: "PLAIN".into(),
    };
    let ResponseBody::SaslHandshake(h) = raw.call(1, RequestBody::SaslHandshake(handshake)) else {
        panic!("SaslHandshake answered with another body")
    };
    answers.push(("SaslHandshake on PLAINTEXT".into(), h.error_code));
    let authenticate = RequestBody::SaslAuthenticate(SaslAuthenticateRequest::default());
    let ResponseBody::SaslAuthenticate(a) = raw.call(2, authenticate) else {
        panic!("SaslAuthenticate answered with another body")
    };
    answers.push(("SaslAuthenticate on PLAINTEXT".into(), a.error_code));
    answers
}

fn name(key: i16) -> String {
    ApiKey::from_i16(key).map_or_else(|| format!("key {key}"), |k| k.name().to_string())
}

/// The differences between Kafka's and kraftd's tables of one listener.
fn differences(
    listener: Listener,
    kafka: &BTreeMap<i16, (i16, i16)>,
    kraftd: &BTreeMap<i16, (i16, i16)>,
) -> Vec<(Listener, i16, Range, Range)> {
    let keys: std::collections::BTreeSet<i16> =
        kafka.keys().chain(kraftd.keys()).copied().collect();
    keys.into_iter()
        .filter_map(|key| {
            let (k, r) = (kafka.get(&key).copied(), kraftd.get(&key).copied());
            (k != r).then_some((listener, key, k, r))
        })
        .collect()
}

#[test]
fn kraftd_advertises_the_apis_kafka_4_4_advertises() {
    let root = tempfile::tempdir().unwrap();
    let (kafka_controller, kafka_brokers) = kafka_cluster(&root.path().join("kafka"), 1, "");
    let kafka_broker = table(&kafka_brokers[0].address());
    let kafka_ctl = table(&kafka_controller.address());
    let kafka_edges = edge_answers(&kafka_brokers[0].address(), kafka_brokers[0].id);

    let (controllers, brokers) = started_cluster(&root.path().join("kraftd"), 1, 1);
    // The broker listener's table does not depend on registration, but its features do:
    // wait until it answers at all.
    let kraftd_broker = eventually(
        "the kraftd broker answers ApiVersions",
        Duration::from_secs(30),
        || common::all_logs(&brokers),
        || {
            std::panic::catch_unwind(|| table(&brokers[0].address()))
                .map_err(|_| "no answer yet".to_string())
        },
    );
    let kraftd_ctl = table(&controllers[0].address());
    let kraftd_edges = edge_answers(&brokers[0].address(), brokers[0].id);
    assert_eq!(
        kraftd_edges, kafka_edges,
        "kraftd's answers (left) beside Kafka's (right)"
    );
    // And what Kafka answers is what KIP-1242 and KafkaApis say.
    assert_eq!(
        kafka_edges
            .iter()
            .map(|(_, code)| *code)
            .collect::<Vec<_>>(),
        [0, 129, 129, 42, 34, 34]
    );

    let mut found = differences(Listener::Broker, &kafka_broker, &kraftd_broker);
    found.extend(differences(Listener::Controller, &kafka_ctl, &kraftd_ctl));
    let known: Vec<_> = KNOWN_DIFFERENCES
        .iter()
        .map(|(l, k, a, b)| (*l, k.code(), *a, *b))
        .collect();
    let unexplained: Vec<String> = found
        .iter()
        .filter(|d| !known.contains(d))
        .map(|(l, k, a, b)| format!("{l:?} {}: Kafka {a:?}, kraftd {b:?}", name(*k)))
        .collect();
    let stale: Vec<String> = known
        .iter()
        .filter(|d| !found.contains(d))
        .map(|(l, k, a, b)| format!("{l:?} {}: Kafka {a:?}, kraftd {b:?}", name(*k)))
        .collect();
    assert!(
        unexplained.is_empty() && stale.is_empty(),
        "ApiVersions differ from Kafka 4.4.0's:\n  {}\nknown differences no longer seen:\n  {}",
        unexplained.join("\n  "),
        stale.join("\n  ")
    );
}
