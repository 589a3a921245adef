//! The quota math sans IO: Kafka's entity precedence and metric tags, the throttle-time
//! formula, the token bucket with strict and permissive mutation quotas on an explicit
//! clock, the throttle field of responses and the KIP-219 versions.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kraftd_protocol::messages::{CreateTopicsResponse, FetchResponse, MetadataResponse};
use kraftd_protocol::{ApiKey, ResponseBody};

use super::*;
use crate::image::{ClientQuotaEntity, ClientQuotasImage};
use crate::publisher::ClientQuotas;

/// An entity: `(type, name)` pairs, `None` for the default.
fn entity(parts: &[(&str, Option<&str>)]) -> ClientQuotaEntity {
    ClientQuotaEntity(
        parts
            .iter()
            .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
            .collect::<BTreeMap<_, _>>(),
    )
}

fn image(entries: &[(ClientQuotaEntity, &str, f64)]) -> ClientQuotasImage {
    let mut image = ClientQuotasImage::default();
    for (e, key, value) in entries {
        image
            .entities
            .entry(e.clone())
            .or_default()
            .insert(key.to_string(), *value);
    }
    image
}

const P: &str = "producer_byte_rate";

#[test]
fn precedence_is_kafkas_from_user_and_client_to_default_client() {
    let u = Some("alice");
    let c = Some("app");
    // The eight levels, each with its own value, most specific first.
    let levels = [
        (entity(&[("user", u), ("client-id", c)]), 1.0),
        (entity(&[("user", u), ("client-id", None)]), 2.0),
        (entity(&[("user", u)]), 3.0),
        (entity(&[("user", None), ("client-id", c)]), 4.0),
        (entity(&[("user", None), ("client-id", None)]), 5.0),
        (entity(&[("user", None)]), 6.0),
        (entity(&[("client-id", c)]), 7.0),
        (entity(&[("client-id", None)]), 8.0),
    ];
    // With levels i.. configured, level i applies.
    for first in 0..levels.len() {
        let entries: Vec<_> = levels[first..]
            .iter()
            .map(|(e, v)| (e.clone(), P, *v))
            .collect();
        let index = QuotaIndex::from_image(&image(&entries));
        let (_, limit) = index.resolve(QuotaKind::Produce, "alice", "app");
        assert_eq!(limit, Some(levels[first].1), "levels from {first}");
    }
    // Other users and client ids fall to the defaults.
    let entries: Vec<_> = levels.iter().map(|(e, v)| (e.clone(), P, *v)).collect();
    let index = QuotaIndex::from_image(&image(&entries));
    assert_eq!(index.resolve(QuotaKind::Produce, "bob", "app").1, Some(4.0));
    assert_eq!(
        index.resolve(QuotaKind::Produce, "bob", "other").1,
        Some(5.0)
    );
    assert_eq!(
        index.resolve(QuotaKind::Produce, "alice", "other").1,
        Some(2.0)
    );
}

#[test]
fn metric_tags_group_clients_as_kafka_does() {
    let kind = QuotaKind::Produce;
    // Only client-id quotas: measured per client id whatever the user.
    let index = QuotaIndex::from_image(&image(&[(entity(&[("client-id", None)]), P, 100.0)]));
    assert_eq!(
        index.metric_tags(kind, "alice", "app"),
        QuotaTags::new("", "app")
    );
    assert_eq!(index.limit(kind, &QuotaTags::new("", "x")), Some(100.0));
    // Only user quotas: per user, whatever the client id.
    let index = QuotaIndex::from_image(&image(&[(entity(&[("user", Some("alice"))]), P, 7.0)]));
    assert_eq!(
        index.metric_tags(kind, "alice", "app"),
        QuotaTags::new("alice", "")
    );
    assert_eq!(index.resolve(kind, "alice", "b").1, Some(7.0));
    assert_eq!(index.resolve(kind, "bob", "b").1, None);
    // Mixed levels walk the precedence: a user quota beats a client-id one.
    let index = QuotaIndex::from_image(&image(&[
        (entity(&[("user", Some("alice"))]), P, 7.0),
        (entity(&[("client-id", Some("app"))]), P, 9.0),
    ]));
    assert_eq!(
        index.resolve(kind, "alice", "app"),
        (QuotaTags::new("alice", ""), Some(7.0))
    );
    assert_eq!(
        index.resolve(kind, "bob", "app"),
        (QuotaTags::new("", "app"), Some(9.0))
    );
    assert_eq!(
        index.resolve(kind, "bob", "x"),
        (QuotaTags::new("", "x"), None)
    );
}

#[test]
fn kinds_and_ip_entities_stay_apart() {
    let index = QuotaIndex::from_image(&image(&[
        (
            entity(&[("client-id", Some("a"))]),
            "consumer_byte_rate",
            5.0,
        ),
        (
            entity(&[("ip", Some("10.0.0.1"))]),
            "connection_creation_rate",
            3.0,
        ),
    ]));
    assert!(index.enabled(QuotaKind::Fetch));
    assert!(!index.enabled(QuotaKind::Produce));
    assert!(!index.enabled(QuotaKind::Request));
    assert_eq!(index.resolve(QuotaKind::Produce, "u", "a").1, None);
    assert_eq!(index.resolve(QuotaKind::Fetch, "u", "a").1, Some(5.0));
}

#[test]
fn the_handle_says_which_kinds_are_enabled() {
    let quotas = ClientQuotas::new();
    assert!(!quotas.any_enabled());
    quotas.set(QuotaIndex::from_image(&image(&[(
        entity(&[("user", None)]),
        "request_percentage",
        50.0,
    )])));
    assert!(quotas.any_enabled());
    assert!(quotas.enabled(QuotaKind::Request));
    assert!(!quotas.enabled(QuotaKind::Produce));
    quotas.set(QuotaIndex::default());
    assert!(!quotas.any_enabled());
}

#[test]
fn throttle_time_is_kafkas_formula() {
    // (rate - quota) / quota × window: 150 against 100 over 10 s is 5 s.
    assert_eq!(throttle_time(150.0, 100.0, 10_000), 5_000);
    assert_eq!(throttle_time(100.0, 100.0, 10_000), 0);
    assert_eq!(throttle_time(90.0, 100.0, 10_000), 0);
    assert_eq!(throttle_time(100.4, 100.0, 1_000), 4);
    assert_eq!(throttle_ms_i32(u64::MAX), i32::MAX);
}

#[test]
fn window_settings_parse_with_the_key_named() {
    let mut props = BTreeMap::new();
    assert_eq!(
        QuotaWindow::from_properties(&props, ""),
        Ok(QuotaWindow::default())
    );
    props.insert("quota.window.num".to_string(), "3".to_string());
    props.insert(
        "controller.quota.window.size.seconds".to_string(),
        "2".to_string(),
    );
    assert_eq!(
        QuotaWindow::from_properties(&props, ""),
        Ok(QuotaWindow {
            samples: 3,
            size_seconds: 1
        })
    );
    assert_eq!(
        QuotaWindow::from_properties(&props, "controller."),
        Ok(QuotaWindow {
            samples: 11,
            size_seconds: 2
        })
    );
    props.insert("quota.window.num".to_string(), "0".to_string());
    let err = QuotaWindow::from_properties(&props, "").unwrap_err();
    assert!(err.contains("quota.window.num"), "{err}");
}

#[test]
fn the_token_bucket_refills_to_its_burst_and_throttles_below_zero() {
    let (quota, burst) = (10.0, TokenBucket::burst(10.0, 11, 1));
    assert_eq!(burst, 110.0);
    let mut bucket = TokenBucket::new();
    let t0 = 1_000_000;
    assert_eq!(bucket.measure(quota, burst, t0), 110.0);
    bucket.record(quota, burst, 150.0, t0);
    assert_eq!(bucket.measure(quota, burst, t0), -40.0);
    assert_eq!(TokenBucket::throttle_time_ms(-40.0, quota), 4_000);
    // Refilled at the quota's rate, capped at the burst.
    assert_eq!(bucket.measure(quota, burst, t0 + 4_000), 0.0);
    assert_eq!(bucket.measure(quota, burst, t0 + 60_000), 110.0);
}

/// A mutation quota manager with `controller_mutation_rate` = `rate` for client `app`, on a
/// clock the test moves.
fn mutation_manager(rate: f64) -> (ControllerMutationQuotaManager, Arc<AtomicU64>) {
    let quotas = ClientQuotas::new();
    quotas.set(QuotaIndex::from_image(&image(&[(
        entity(&[("client-id", Some("app"))]),
        "controller_mutation_rate",
        rate,
    )])));
    let now = Arc::new(AtomicU64::new(1_000_000));
    let clock = Arc::clone(&now);
    let manager = ControllerMutationQuotaManager::with_clock(
        quotas,
        QuotaWindow::default(),
        Arc::new(move || clock.load(Ordering::Relaxed)),
    );
    (manager, now)
}

#[test]
fn a_strict_quota_takes_the_topic_that_exhausts_it_and_refuses_the_next() {
    let (manager, now) = mutation_manager(2.0);
    // Burst 22 partitions: 20 go, then 10 more go (the bucket was not below zero), then no.
    let mut quota = manager.quota_for("u", "app", true);
    assert_eq!(quota.record(20), Ok(()));
    assert_eq!(quota.record(10), Ok(()));
    let refused = quota.record(1).unwrap_err();
    // 8 below zero at 2 per second: 4 s.
    assert_eq!(refused.throttle_time_ms, 4_000);
    assert_eq!(quota.throttle_time_ms(), 4_000);
    now.fetch_add(1_500, Ordering::Relaxed);
    assert_eq!(quota.throttle_time_ms(), 2_500);
    // Another client id has no quota.
    let mut other = manager.quota_for("u", "other", true);
    assert_eq!(other.record(1_000), Ok(()));
    assert_eq!(other.throttle_time_ms(), 0);
    // Once refilled, the next request goes through.
    now.fetch_add(2_500, Ordering::Relaxed);
    let mut later = manager.quota_for("u", "app", true);
    assert_eq!(later.record(1), Ok(()));
}

#[test]
fn a_permissive_quota_accepts_everything_and_throttles_after() {
    let (manager, _now) = mutation_manager(2.0);
    let mut quota = manager.quota_for("u", "app", false);
    assert_eq!(quota.record(20), Ok(()));
    assert_eq!(quota.throttle_time_ms(), 0);
    assert_eq!(quota.record(30), Ok(()));
    // 28 below zero at 2 per second.
    assert_eq!(quota.throttle_time_ms(), 14_000);
    let mut out = String::new();
    manager.record_throttle(&quota, 14_000);
    manager.write_prometheus(1, &mut out);
    assert!(
        out.contains(
            "kafka_server_ControllerMutation_tokens{node=\"1\",user=\"\",client_id=\"app\"} -28"
        ),
        "{out}"
    );
    assert!(out.contains("kafka_server_ControllerMutation_throttle_time{node=\"1\",user=\"\",client_id=\"app\"} 14000"), "{out}");
}

#[test]
fn no_mutation_quota_is_unbounded() {
    let manager = ControllerMutationQuotaManager::new(ClientQuotas::new(), QuotaWindow::default());
    let mut quota = manager.quota_for("u", "app", true);
    assert!(quota.tags().is_none());
    assert_eq!(quota.record(u32::MAX), Ok(()));
    assert_eq!(quota.throttle_time_ms(), 0);
}

#[test]
fn the_throttle_field_is_set_only_where_the_version_has_it() {
    let mut metadata = ResponseBody::Metadata(MetadataResponse::default());
    assert!(!set_throttle_time_ms(&mut metadata, 2, 5));
    assert_eq!(throttle_time_ms(&metadata, 2), 0);
    assert!(set_throttle_time_ms(&mut metadata, 3, 5));
    assert_eq!(throttle_time_ms(&metadata, 3), 5);
    let mut fetch = ResponseBody::Fetch(FetchResponse::default());
    assert!(set_throttle_time_ms(&mut fetch, 4, 7));
    let mut create = ResponseBody::CreateTopics(CreateTopicsResponse::default());
    assert!(set_throttle_time_ms(&mut create, 2, 9));
    assert_eq!(throttle_time_ms(&create, 5), 9);
}

#[test]
fn kip_219_versions_are_kafkas() {
    assert!(!client_throttles(ApiKey::Produce, 5));
    assert!(client_throttles(ApiKey::Produce, 6));
    assert!(!client_throttles(ApiKey::Fetch, 7));
    assert!(client_throttles(ApiKey::Fetch, 8));
    assert!(client_throttles(ApiKey::CreateTopics, 3));
    assert!(!client_throttles(ApiKey::DeleteTopics, 1));
    assert!(client_throttles(ApiKey::CreatePartitions, 1));
    assert!(client_throttles(ApiKey::IncrementalAlterConfigs, 0));
    // Kafka's default: APIs that never said so are held back.
    assert!(!client_throttles(ApiKey::DescribeClientQuotas, 1));
    assert!(!client_throttles(ApiKey::ConsumerGroupHeartbeat, 1));
}
