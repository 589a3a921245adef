//! The broker's quota managers on explicit clocks (Kafka's windowed rate, throttle times,
//! the request quota's bound, sensors per metric tags), and a request's quota from arrival
//! to response: muted at once, the response's throttle time, held back for old versions.

use std::sync::Arc;

use kraftd_controller::publisher::ClientQuotas;
use kraftd_controller::quota::{QuotaIndex, QuotaKind, QuotaTags, QuotaWindow};
use kraftd_controller::MetadataImage;
use kraftd_net::{ChannelMute, InboundRequest, Session};
use kraftd_protocol::messages::{FetchRequest, ProduceRequest, ProduceResponse, RequestHeader};
use kraftd_protocol::metadata::{client_quota_record, ClientQuotaRecord};
use kraftd_protocol::{ApiKey, MetadataRecord, RequestBody, ResponseBody};

use super::*;

const T0: u64 = 1_700_000_000_000;

/// Client quotas as the metadata log would hold them: `(user, client-id, key, value)`,
/// `Some(None)` naming the default entity, `None` leaving the part out.
/// One part of an entity: absent, the default (`Some(None)`) or named.
type Part<'a> = Option<Option<&'a str>>;

fn quotas(entries: &[(Part<'_>, Part<'_>, &str, f64)]) -> ClientQuotas {
    let records: Vec<MetadataRecord> = entries
        .iter()
        .map(|(user, client, key, value)| {
            let mut entity = Vec::new();
            for (kind, part) in [("user", user), ("client-id", client)] {
                if let Some(name) = part {
                    entity.push(client_quota_record::EntityData {
                        entity_type: kind.to_string(),
                        entity_name: name.map(str::to_string),
                        ..Default::default()
                    });
                }
            }
            MetadataRecord::ClientQuota(ClientQuotaRecord {
                entity,
                key: key.to_string(),
                value: *value,
                remove: false,
                ..Default::default()
            })
        })
        .collect();
    let image = MetadataImage::empty()
        .replay_all(&records)
        .expect("replays");
    let handle = ClientQuotas::new();
    handle.set(QuotaIndex::from_image(&image.client_quotas));
    handle
}

fn window() -> QuotaWindow {
    QuotaWindow::default()
}

#[test]
fn the_windowed_rate_throttles_as_kafka_computes_it() {
    let q = quotas(&[(None, Some(Some("app")), "producer_byte_rate", 1000.0)]);
    let m = ClientQuotaManager::new(QuotaKind::Produce, window(), q);
    // The first second counts as ten windows: 10 000 bytes is exactly the quota.
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "app", 10_000.0, T0),
        0
    );
    // 1 000 more: 1 100 B/s over 10 s, 10% over, so 1 s to come back.
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "app", 1_000.0, T0),
        1_000
    );
    let tags = QuotaTags::new("", "app");
    assert_eq!(m.rate(&tags, T0), Some(1_100.0));
    // A throttled fetch takes its bytes back.
    m.unrecord("u", "app", 1_000.0, T0);
    assert_eq!(m.rate(&tags, T0), Some(1_000.0));
    // Another client id has no quota, and another client's bytes are its own.
    assert_eq!(m.record_and_get_throttle_time_ms("u", "other", 1e9, T0), 0);
    assert_eq!(m.rate(&tags, T0), Some(1_000.0));
    // Kafka caps a consumer's fetch at what the window allows.
    assert_eq!(m.max_value_in_quota_window("u", "app"), 10_000.0);
    assert_eq!(m.max_value_in_quota_window("u", "other"), f64::MAX);
}

#[test]
fn a_default_client_quota_is_measured_per_client_id() {
    let q = quotas(&[(None, Some(None), "producer_byte_rate", 100.0)]);
    let m = ClientQuotaManager::new(QuotaKind::Produce, window(), q);
    assert_eq!(m.record_and_get_throttle_time_ms("u", "a", 1_000.0, T0), 0);
    assert_eq!(m.record_and_get_throttle_time_ms("u", "b", 1_000.0, T0), 0);
    assert!(m.record_and_get_throttle_time_ms("u", "a", 500.0, T0) > 0);
}

#[test]
fn a_user_quota_is_shared_by_the_users_client_ids() {
    let q = quotas(&[(Some(Some("alice")), None, "consumer_byte_rate", 100.0)]);
    let m = ClientQuotaManager::new(QuotaKind::Fetch, window(), q);
    assert_eq!(
        m.record_and_get_throttle_time_ms("alice", "a", 1_000.0, T0),
        0
    );
    assert!(m.record_and_get_throttle_time_ms("alice", "b", 500.0, T0) > 0);
    assert_eq!(m.record_and_get_throttle_time_ms("bob", "a", 1e9, T0), 0);
}

#[test]
fn the_request_quota_caps_its_throttle_at_one_window() {
    let q = quotas(&[(Some(None), None, "request_percentage", 1.0)]);
    let m = ClientQuotaManager::request(window(), q);
    // 1000% of a thread for a moment: far over 1%, but throttled for one window at most.
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "c", 10_000.0, T0),
        1_000
    );
}

#[test]
fn a_quota_decays_as_its_samples_age() {
    let q = quotas(&[(None, Some(Some("app")), "producer_byte_rate", 1000.0)]);
    let m = ClientQuotaManager::new(QuotaKind::Produce, window(), q);
    assert!(m.record_and_get_throttle_time_ms("u", "app", 20_000.0, T0) > 0);
    // 11 samples of a second: after them, the burst is forgotten.
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "app", 100.0, T0 + 22_000),
        0
    );
}

#[test]
fn nothing_is_recorded_without_a_quota_of_the_kind() {
    let q = quotas(&[(None, Some(None), "consumer_byte_rate", 1.0)]);
    let m = ClientQuotaManager::new(QuotaKind::Produce, window(), q);
    assert!(!m.enabled());
    assert_eq!(m.record_and_get_throttle_time_ms("u", "a", 1e12, T0), 0);
    let mut out = String::new();
    m.write_prometheus(1, T0, &mut out);
    assert!(out.is_empty(), "{out}");
}

#[test]
fn metrics_carry_kafkas_names_per_user_and_client_id() {
    let q = quotas(&[(None, Some(Some("app")), "producer_byte_rate", 1000.0)]);
    let m = ClientQuotaManager::new(QuotaKind::Produce, window(), q);
    m.record_and_get_throttle_time_ms("u", "app", 10_000.0, T0);
    m.record_throttle("u", "app", 250, T0);
    let mut out = String::new();
    m.write_prometheus(4, T0, &mut out);
    assert!(
        out.contains("kafka_server_Produce_byte_rate{node=\"4\",user=\"\",client_id=\"app\"} 1000"),
        "{out}"
    );
    assert!(
        out.contains(
            "kafka_server_Produce_throttle_time{node=\"4\",user=\"\",client_id=\"app\"} 250"
        ),
        "{out}"
    );
}

fn inbound(api_key: ApiKey, version: i16, body: RequestBody, size: usize) -> InboundRequest {
    InboundRequest {
        peer: "127.0.0.1:9".parse().unwrap(),
        session: Arc::new(Session::default()),
        mute: ChannelMute::default(),
        api_key,
        header: RequestHeader {
            request_api_key: api_key.code(),
            request_api_version: version,
            client_id: Some("app".into()),
            ..Default::default()
        },
        body,
        size,
        timer: kraftd_net::RequestTimer::disabled(),
    }
}

fn managers(key: &str, value: f64) -> Arc<QuotaManagers> {
    let q = quotas(&[(None, Some(Some("app")), key, value)]);
    Arc::new(QuotaManagers::new(q, window()))
}

#[test]
fn no_quota_at_all_means_no_request_quota() {
    let managers = Arc::new(QuotaManagers::new(ClientQuotas::new(), window()));
    let request = inbound(
        ApiKey::Produce,
        9,
        RequestBody::Produce(Default::default()),
        10,
    );
    assert!(managers.begin(&request).is_none());
}

#[test]
fn an_over_quota_produce_mutes_at_once_and_answers_with_its_throttle_time() {
    let managers = managers("producer_byte_rate", 100.0);
    let request = inbound(
        ApiKey::Produce,
        9,
        RequestBody::Produce(ProduceRequest::default()),
        1_500,
    );
    let mute = request.mute.clone();
    let mut quota = managers.begin(&request).expect("quotas exist");
    // 1 500 bytes over 10 s against 100 B/s: 50% over, 5 s to wait.
    assert_eq!(quota.record_produce(request.size), 5_000);
    assert!(
        mute.muted_until().is_some(),
        "muted before the next request is read"
    );
    let mut response = Some(ResponseBody::Produce(ProduceResponse::default()));
    let hold = quota.finish(response.as_mut());
    assert_eq!(hold, Duration::ZERO, "v9 clients throttle themselves");
    let Some(ResponseBody::Produce(p)) = response else {
        unreachable!()
    };
    assert_eq!(p.throttle_time_ms, 5_000);
}

#[test]
fn an_old_version_gets_its_response_held_back() {
    let managers = managers("producer_byte_rate", 100.0);
    let request = inbound(
        ApiKey::Produce,
        5,
        RequestBody::Produce(ProduceRequest::default()),
        1_500,
    );
    let mut quota = managers.begin(&request).expect("quotas exist");
    quota.record_produce(request.size);
    let mut response = Some(ResponseBody::Produce(ProduceResponse::default()));
    assert_eq!(
        quota.finish(response.as_mut()),
        Duration::from_millis(5_000)
    );
}

#[test]
fn follower_fetches_are_not_charged() {
    let managers = managers("request_percentage", 0.000_001);
    let mut fetch = FetchRequest::default();
    fetch.replica_state.replica_id = 2;
    let request = inbound(ApiKey::Fetch, 17, RequestBody::Fetch(fetch), 100);
    let quota = managers.begin(&request).expect("quotas exist");
    quota.add_busy(Duration::from_millis(50));
    let mut response = Some(ResponseBody::Fetch(Default::default()));
    assert_eq!(quota.finish(response.as_mut()), Duration::ZERO);
    let Some(ResponseBody::Fetch(f)) = response else {
        unreachable!()
    };
    assert_eq!(f.throttle_time_ms, 0);
    // A consumer's is.
    let request = inbound(
        ApiKey::Fetch,
        17,
        RequestBody::Fetch(FetchRequest::default()),
        100,
    );
    let quota = managers.begin(&request).expect("quotas exist");
    quota.add_busy(Duration::from_millis(50));
    let mut response = Some(ResponseBody::Fetch(Default::default()));
    quota.finish(response.as_mut());
    let Some(ResponseBody::Fetch(f)) = response else {
        unreachable!()
    };
    assert_eq!(f.throttle_time_ms, 1_000, "bounded at one window");
}

#[test]
fn a_consumer_over_its_quota_is_answered_empty_and_its_bytes_taken_back() {
    let managers = managers("consumer_byte_rate", 100.0);
    let request = inbound(
        ApiKey::Fetch,
        17,
        RequestBody::Fetch(FetchRequest::default()),
        100,
    );
    let mut quota = managers.begin(&request).expect("quotas exist");
    assert_eq!(quota.max_bytes(), 1_000);
    assert_eq!(ConsumerFetchQuota::record(&mut quota, 900), 0);
    let throttle = ConsumerFetchQuota::record(&mut quota, 900);
    assert!(throttle > 0);
    // 900 bytes over the 10 s window: 90/s, a hair less when a millisecond passed between
    // the record and this read (the window's elapsed time counts to now).
    let rate = managers
        .fetch
        .rate(&QuotaTags::new("", "app"), now_ms())
        .expect("a rate");
    assert!(
        (89.9..=90.0).contains(&rate),
        "only the bytes sent count: {rate}"
    );
    assert!(request.mute.muted_until().is_some());
}

#[test]
fn a_forwarded_response_carries_the_controllers_throttle_time() {
    let managers = managers("controller_mutation_rate", 1.0);
    let request = inbound(
        ApiKey::CreateTopics,
        7,
        RequestBody::CreateTopics(Default::default()),
        10,
    );
    let mute = request.mute.clone();
    let quota = managers.begin(&request).expect("quotas exist");
    let mut response = Some(ResponseBody::CreateTopics(
        kraftd_protocol::messages::CreateTopicsResponse {
            throttle_time_ms: 3_000,
            ..Default::default()
        },
    ));
    assert_eq!(quota.finish(response.as_mut()), Duration::ZERO);
    assert!(mute.muted_until().is_some());
}
