//! The ClientMetricsManager against Kafka's rules: instance ids, matching, subscription
//! ids, intervals and every PushTelemetry error, with a fake clock.

use bytes::{Bytes, BytesMut};
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_protocol::codec::Uuid;
use kraftd_protocol::messages::{GetTelemetrySubscriptionsRequest, PushTelemetryRequest};
use kraftd_protocol::metadata::ConfigRecord;
use kraftd_protocol::records::compression::compress;
use kraftd_protocol::records::Compression;
use kraftd_protocol::{ErrorCode, MetadataRecord};

use super::otlp::encode;

/// A wall-clock time: Kafka's timestamps start at 0, so a client's first request is never
/// early.
const T0: u64 = 1_700_000_000_000;
use super::*;

fn image(subscriptions: &[(&str, &[(&str, &str)])]) -> MetadataImage {
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    for (name, configs) in subscriptions {
        for (k, v) in *configs {
            delta
                .replay(&MetadataRecord::Config(ConfigRecord {
                    resource_type: ConfigResourceType::ClientMetrics.code(),
                    resource_name: name.to_string(),
                    name: k.to_string(),
                    value: Some(v.to_string()),
                    ..Default::default()
                }))
                .expect("replays");
        }
    }
    delta.apply()
}

fn client(id: &str) -> ClientInfo {
    ClientInfo {
        client_id: id.into(),
        software_name: "apache-kafka-java".into(),
        software_version: "4.4.0".into(),
        source_address: "127.0.0.1".into(),
        source_port: "50000".into(),
        connection_id: format!("conn-{id}"),
    }
}

fn ids() -> impl FnMut() -> Uuid {
    let mut n = 0u8;
    move || {
        n += 1;
        Uuid([n; 16])
    }
}

fn get(
    m: &ClientMetricsManager,
    image: &MetadataImage,
    now: u64,
    c: &ClientInfo,
    id: Uuid,
) -> GetTelemetrySubscriptionsResponse {
    let request = GetTelemetrySubscriptionsRequest {
        client_instance_id: id,
        ..Default::default()
    };
    m.get_telemetry_subscriptions(image, now, c, &request, &mut ids())
}

fn push_request(id: Uuid, subscription_id: i32, metrics: Bytes, codec: i8) -> PushTelemetryRequest {
    PushTelemetryRequest {
        client_instance_id: id,
        subscription_id,
        terminating: false,
        compression_type: codec,
        metrics,
        ..Default::default()
    }
}

fn payload() -> Vec<u8> {
    encode::metrics_data(
        &[],
        &[encode::metric(
            "org.apache.kafka.producer.record.send.total",
            7,
            &[encode::number_point(&[("client_id", "p1")], 4.0)],
        )],
    )
}

#[test]
fn a_fresh_client_gets_an_id_and_the_matching_subscriptions() {
    let image = image(&[
        (
            "producers",
            &[
                ("metrics", "org.apache.kafka.producer."),
                ("interval.ms", "1000"),
                ("match", "client_id=p.*"),
            ],
        ),
        (
            "all",
            &[
                ("metrics", "org.apache.kafka.consumer."),
                ("interval.ms", "2000"),
            ],
        ),
        (
            "nobody",
            &[
                ("metrics", "x."),
                ("interval.ms", "100"),
                ("match", "client_id=zzz"),
            ],
        ),
    ]);
    let m = ClientMetricsManager::new(TELEMETRY_MAX_BYTES_DEFAULT);
    let r = get(&m, &image, T0, &client("p1"), Uuid::ZERO);
    assert_eq!(r.error_code, 0);
    assert_ne!(r.client_instance_id, Uuid::ZERO);
    assert_eq!(r.push_interval_ms, 1000);
    let mut metrics = r.requested_metrics.clone();
    metrics.sort();
    assert_eq!(
        metrics,
        ["org.apache.kafka.consumer.", "org.apache.kafka.producer."]
    );
    assert_eq!(r.accepted_compression_types, [4, 3, 1, 2]);
    assert_eq!(r.telemetry_max_bytes, TELEMETRY_MAX_BYTES_DEFAULT);
    assert!(r.delta_temporality);
    assert_eq!(
        r.subscription_id,
        subscription_id(&r.requested_metrics, 1000, r.client_instance_id)
    );
    // A client matching nothing: no metrics, Kafka's five-minute default.
    let other = image.clone();
    let r = get(&m, &other, T0, &client("c1"), Uuid([9; 16]));
    assert_eq!(r.requested_metrics, ["org.apache.kafka.consumer."]);
    assert_eq!(r.push_interval_ms, 2000);
    let none = ClientMetricsManager::new(TELEMETRY_MAX_BYTES_DEFAULT);
    let r = get(
        &none,
        &MetadataImage::empty(),
        T0,
        &client("c1"),
        Uuid([9; 16]),
    );
    assert!(r.requested_metrics.is_empty());
    assert_eq!(r.push_interval_ms, 300_000);
}

#[test]
fn subscription_ids_are_kafkas() {
    // Java: Crc32C of "[org.apache.kafka.producer.]1000" XOR Uuid.hashCode.
    let id = Uuid([0x11; 16]);
    assert_eq!(java_uuid_hash(id), 0);
    let text = b"[org.apache.kafka.producer.]1000";
    assert_eq!(
        subscription_id(&["org.apache.kafka.producer.".into()], 1000, id),
        crc32c::crc32c(text) as i32
    );
    assert_eq!(java_string_hash("hello"), 99_162_322);
    // A HashSet of "b", "a" iterates a first (buckets 2 and 1... by hash).
    assert_eq!(
        java_hash_set_order(vec!["b".into(), "a".into()]),
        ["a", "b"]
    );
    // "*" alone when any matching subscription asks for every metric.
    let image = image(&[("s1", &[("metrics", "a.,*")]), ("s2", &[("metrics", "b.")])]);
    let m = ClientMetricsManager::new(10);
    let r = get(&m, &image, T0, &client("x"), Uuid([3; 16]));
    assert_eq!(r.requested_metrics, ["*"]);
}

#[test]
fn pushes_follow_kafkas_checks_in_order() {
    let image = image(&[("s", &[("metrics", "org."), ("interval.ms", "1000")])]);
    let m = ClientMetricsManager::new(1000);
    let c = client("p1");
    let r = get(&m, &image, T0 + 10_000, &c, Uuid::ZERO);
    let (id, sub) = (r.client_instance_id, r.subscription_id);
    let push = |now, req: PushTelemetryRequest| m.push_telemetry(&image, now, &c, &req).error_code;
    let plain = Bytes::from(payload());

    // Reserved ids.
    assert_eq!(
        push(T0 + 10_000, push_request(Uuid::ZERO, sub, plain.clone(), 0)),
        ErrorCode::InvalidRequest.code()
    );
    // The first push after a get is accepted at once.
    assert_eq!(
        push(T0 + 10_001, push_request(id, sub, plain.clone(), 0)),
        0
    );
    // Another before the interval is throttled.
    assert_eq!(
        push(T0 + 10_500, push_request(id, sub, plain.clone(), 0)),
        ErrorCode::ThrottlingQuotaExceeded.code()
    );
    // A wrong subscription id.
    assert_eq!(
        push(T0 + 11_001, push_request(id, sub ^ 1, plain.clone(), 0)),
        ErrorCode::UnknownSubscriptionId.code()
    );
    // Unknown compression.
    assert_eq!(
        push(T0 + 12_001, push_request(id, sub, plain.clone(), 9)),
        ErrorCode::UnsupportedCompressionType.code()
    );
    // Over telemetry.max.bytes.
    assert_eq!(
        push(
            T0 + 13_001,
            push_request(id, sub, Bytes::from(vec![0u8; 1001]), 0)
        ),
        ErrorCode::TelemetryTooLarge.code()
    );
    // Not OTLP.
    assert_eq!(
        push(
            T0 + 14_001,
            push_request(id, sub, Bytes::from_static(&[0x0a, 0xff]), 0)
        ),
        ErrorCode::InvalidRecord.code()
    );
    // Compressed with each codec clients may use.
    let mut now = T0 + 15_001;
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let mut out = BytesMut::new();
        compress(codec, &payload(), &mut out).expect("compresses");
        assert_eq!(
            push(now, push_request(id, sub, out.freeze(), codec.id() as i8)),
            0
        );
        now += 1000;
    }
    // The terminating push is taken even early; nothing after it.
    let mut last = push_request(id, sub, plain.clone(), 0);
    last.terminating = true;
    assert_eq!(push(now + 1, last), 0);
    assert_eq!(
        push(now + 5000, push_request(id, sub, plain, 0)),
        ErrorCode::InvalidRequest.code()
    );
    // Five accepted pushes of 4 each, added up (DELTA temporality).
    let mut out = String::new();
    m.write_prometheus(1, now + 5000, &mut out);
    let line = out
        .lines()
        .find(|l| l.starts_with("org_apache_kafka_producer_record_send_total{"))
        .expect("the pushed counter is shown");
    assert!(
        line.contains(&format!("client_instance_id=\"{}\"", id.to_base64())),
        "{line}"
    );
    assert!(line.ends_with(" 24"), "{line}");
}

#[test]
fn a_changed_subscription_rematches_and_a_get_is_throttled_otherwise() {
    let first = image(&[("s", &[("metrics", "a."), ("interval.ms", "1000")])]);
    let m = ClientMetricsManager::new(1000);
    let c = client("p1");
    let r = get(&m, &first, T0, &c, Uuid([5; 16]));
    assert_eq!(r.error_code, 0);
    // Again before the interval: throttled.
    assert_eq!(
        get(&m, &first, T0 + 10, &c, Uuid([5; 16])).error_code,
        ErrorCode::ThrottlingQuotaExceeded.code()
    );
    // The subscription changed: answered at once with the new one.
    let second = image(&[("s", &[("metrics", "b."), ("interval.ms", "500")])]);
    let r2 = get(&m, &second, T0 + 20, &c, Uuid([5; 16]));
    assert_eq!(r2.error_code, 0);
    assert_eq!(r2.requested_metrics, ["b."]);
    assert_ne!(r2.subscription_id, r.subscription_id);
    // A push with the old id is refused, and the next get is not throttled after it.
    let req = push_request(Uuid([5; 16]), r.subscription_id, Bytes::new(), 0);
    assert_eq!(
        m.push_telemetry(&second, T0 + 30, &c, &req).error_code,
        ErrorCode::UnknownSubscriptionId.code()
    );
    assert_eq!(get(&m, &second, T0 + 40, &c, Uuid([5; 16])).error_code, 0);
    // A closed connection forgets the instance.
    m.on_disconnect(&c.connection_id);
    let mut out = String::new();
    m.write_prometheus(1, T0 + 50, &mut out);
    assert!(out.contains("kafka_server_client_metrics_instance_count{node=\"1\"} 0\n"));
}

#[test]
fn an_idle_instance_expires_after_kafkas_time() {
    let image = image(&[("s", &[("metrics", "a."), ("interval.ms", "1000")])]);
    let m = ClientMetricsManager::new(1000);
    assert_eq!(
        get(&m, &image, T0, &client("p1"), Uuid([5; 16])).error_code,
        0
    );
    let count = |now| {
        let mut out = String::new();
        m.write_prometheus(1, now, &mut out);
        out.lines()
            .find(|l| l.starts_with("kafka_server_client_metrics_instance_count{"))
            .map(str::to_string)
            .expect("the gauge")
    };
    // max(60 s, 3 x 1 s) after its last request.
    assert!(count(T0 + 59_999).ends_with(" 1"));
    assert!(count(T0 + 60_000).ends_with(" 0"));
}
