//! Kafka's DelegationTokenControlManager rules on a real image: create, renew, expire and
//! sweep with their errors, the metadata.version gate, DescribeDelegationToken's filter, and
//! tokens surviving a snapshot (the image written out as records and replayed).

use kraftd_protocol::messages::create_delegation_token_request::CreatableRenewers;

use super::*;
use crate::testing::records::feature;

const SECRET: &str = "hunter2";
const NOW: i64 = 1_700_000_000_000;

fn enabled() -> DelegationTokenControlManager {
    DelegationTokenControlManager::new(DelegationTokenConfig {
        secret_key: Some(SECRET.into()),
        ..Default::default()
    })
}

/// An image at `metadata.version` `level`.
fn image_at(level: i16) -> MetadataImage {
    MetadataImage::empty()
        .replay_all(&[feature("metadata.version", level)])
        .unwrap()
}

fn latest() -> MetadataImage {
    image_at(kraftd_protocol::metadata_version::MetadataVersion::LATEST_PRODUCTION.level())
}

fn apply<T>(image: &MetadataImage, result: &ControllerResult<T>) -> MetadataImage {
    image.replay_all(&result.records).unwrap()
}

fn create(
    m: &DelegationTokenControlManager,
    image: &MetadataImage,
    requester: &KafkaPrincipal,
    renewers: &[&str],
) -> (MetadataImage, CreateDelegationTokenResponse) {
    let request = CreateDelegationTokenRequest {
        renewers: renewers
            .iter()
            .map(|r| CreatableRenewers {
                principal_type: "User".into(),
                principal_name: r.to_string(),
                ..Default::default()
            })
            .collect(),
        max_lifetime_ms: -1,
        ..Default::default()
    };
    let result = m.create(image, requester, &request, NOW, "tok1".into());
    (apply(image, &result), result.response)
}

#[test]
fn a_created_token_is_in_the_image_with_kafkas_lifetimes_and_its_hmac() {
    let m = enabled();
    let alice = KafkaPrincipal::user("alice");
    let (image, response) = create(&m, &latest(), &alice, &["bob"]);
    assert_eq!(response.error_code, 0);
    assert_eq!(response.token_id, "tok1");
    assert_eq!(
        response.hmac.as_ref(),
        token_hmac(SECRET, "tok1").as_slice()
    );
    assert_eq!(response.hmac.len(), 64, "HMAC-SHA512");
    assert_eq!(response.issue_timestamp_ms, NOW);
    assert_eq!(
        response.max_timestamp_ms,
        NOW + DELEGATION_TOKEN_MAX_LIFETIME_MS_DEFAULT
    );
    assert_eq!(
        response.expiry_timestamp_ms,
        NOW + DELEGATION_TOKEN_EXPIRY_TIME_MS_DEFAULT
    );
    assert_eq!(
        (
            response.principal_name.as_str(),
            response.token_requester_principal_name.as_str()
        ),
        ("alice", "alice")
    );
    let token = image.delegation_tokens.get("tok1").unwrap();
    assert_eq!(token.owner, alice);
    assert_eq!(token.renewers, vec![KafkaPrincipal::user("bob")]);
    // The record carries no HMAC: only the id, principals and timestamps.
    assert_eq!(
        m.config()
            .token_for_hmac(&image, &response.hmac)
            .map(|t| t.token_id.as_str()),
        Some("tok1")
    );
}

#[test]
fn tokens_are_refused_without_a_secret_key_or_below_metadata_version_3_6_iv2() {
    let off = DelegationTokenControlManager::default();
    let alice = KafkaPrincipal::user("alice");
    let (_, response) = create(&off, &latest(), &alice, &[]);
    assert_eq!(
        response.error_code,
        ErrorCode::DelegationTokenAuthDisabled.code()
    );
    // 3.6-IV1 (level 13) lacks them; 3.6-IV2 (14) has them.
    let (_, response) = create(&enabled(), &image_at(13), &alice, &[]);
    assert_eq!(response.error_code, ErrorCode::UnsupportedVersion.code());
    let (_, response) = create(&enabled(), &image_at(14), &alice, &[]);
    assert_eq!(response.error_code, 0);
}

#[test]
fn renew_and_expire_need_the_owner_or_a_renewer_and_a_live_token() {
    let m = enabled();
    let alice = KafkaPrincipal::user("alice");
    let bob = KafkaPrincipal::user("bob");
    let eve = KafkaPrincipal::user("eve");
    let (image, created) = create(&m, &latest(), &alice, &["bob"]);
    let renew = |period: i64, hmac: &Bytes| RenewDelegationTokenRequest {
        hmac: hmac.clone(),
        renew_period_ms: period,
        ..Default::default()
    };
    let later = NOW + 1000;
    let r = m.renew(&image, &eve, &renew(-1, &created.hmac), later);
    assert_eq!(
        r.response.error_code,
        ErrorCode::DelegationTokenOwnerMismatch.code()
    );
    let r = m.renew(
        &image,
        &bob,
        &renew(-1, &Bytes::from_static(b"nope")),
        later,
    );
    assert_eq!(
        r.response.error_code,
        ErrorCode::DelegationTokenNotFound.code()
    );
    let r = m.renew(&image, &bob, &renew(5000, &created.hmac), later);
    assert_eq!(r.response.error_code, 0);
    assert_eq!(r.response.expiry_timestamp_ms, later + 5000);
    let image = apply(&image, &r);
    assert_eq!(
        image
            .delegation_tokens
            .get("tok1")
            .unwrap()
            .expiry_timestamp,
        later + 5000
    );
    // Past its expiry, renewing is too late.
    let r = m.renew(&image, &alice, &renew(-1, &created.hmac), later + 5001);
    assert_eq!(
        r.response.error_code,
        ErrorCode::DelegationTokenExpired.code()
    );
    // Expire with a period moves the expiry; a negative period removes the token.
    let expire = |period: i64| ExpireDelegationTokenRequest {
        hmac: created.hmac.clone(),
        expiry_time_period_ms: period,
        ..Default::default()
    };
    let e = m.expire(&image, &eve, &expire(-1), later);
    assert_eq!(
        e.response.error_code,
        ErrorCode::DelegationTokenOwnerMismatch.code()
    );
    let e = m.expire(&image, &alice, &expire(100), later);
    assert_eq!(e.response.expiry_timestamp_ms, later + 100);
    let e = m.expire(&image, &alice, &expire(-1), later);
    assert_eq!(e.response.error_code, 0);
    let image = apply(&image, &e);
    assert!(image.delegation_tokens.is_empty());
    let e = m.expire(&image, &alice, &expire(-1), later);
    assert_eq!(
        e.response.error_code,
        ErrorCode::DelegationTokenNotFound.code()
    );
}

#[test]
fn a_renewer_of_another_type_is_refused() {
    let m = enabled();
    let request = CreateDelegationTokenRequest {
        renewers: vec![CreatableRenewers {
            principal_type: "Group".into(),
            principal_name: "ops".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = m.create(
        &latest(),
        &KafkaPrincipal::user("a"),
        &request,
        NOW,
        "t".into(),
    );
    assert_eq!(
        r.response.error_code,
        ErrorCode::InvalidPrincipalType.code()
    );
    assert!(r.records.is_empty());
}

#[test]
fn the_sweep_removes_expired_tokens_and_a_removal_replays_twice() {
    let m = enabled();
    let (image, created) = create(&m, &latest(), &KafkaPrincipal::user("alice"), &[]);
    assert!(m.sweep_expired(&image, NOW).records.is_empty());
    let sweep = m.sweep_expired(&image, created.expiry_timestamp_ms + 1);
    assert_eq!(sweep.records.len(), 1);
    assert!(!sweep.response);
    let swept = apply(&image, &sweep);
    assert!(swept.delegation_tokens.is_empty());
    // Kafka may remove a token twice (its sweep reads the committed cache).
    assert!(swept.replay_all(&sweep.records).is_ok());
}

#[test]
fn tokens_survive_a_snapshot() {
    let m = enabled();
    let (image, _) = create(&m, &latest(), &KafkaPrincipal::user("alice"), &["bob"]);
    let reloaded = MetadataImage::empty().replay_all(&image.records()).unwrap();
    assert_eq!(reloaded.delegation_tokens, image.delegation_tokens);
}

#[test]
fn describe_shows_own_and_renewed_tokens_and_others_only_when_authorized() {
    let m = enabled();
    let (image, _) = create(&m, &latest(), &KafkaPrincipal::user("alice"), &["bob"]);
    let config = m.config();
    let ids = |requester: &str, owners: Option<&[KafkaPrincipal]>, allow: bool| {
        describe_tokens(
            config,
            &image,
            &KafkaPrincipal::user(requester),
            owners,
            |_| allow,
            |_| false,
        )
        .into_iter()
        .map(|t| t.token_id)
        .collect::<Vec<_>>()
    };
    assert_eq!(ids("alice", None, false), vec!["tok1"]);
    assert_eq!(ids("bob", None, false), vec!["tok1"]);
    assert!(ids("eve", None, false).is_empty());
    assert_eq!(ids("eve", None, true), vec!["tok1"]);
    // Owners named: only their tokens; an empty list, none.
    assert!(ids("alice", Some(&[KafkaPrincipal::user("carol")]), false).is_empty());
    assert!(ids("alice", Some(&[]), false).is_empty());
    let described = describe_tokens(
        config,
        &image,
        &KafkaPrincipal::user("alice"),
        None,
        |_| false,
        |_| false,
    );
    assert_eq!(
        described[0].hmac.as_ref(),
        token_hmac(SECRET, "tok1").as_slice()
    );
}

#[test]
fn token_requests_are_refused_on_plaintext_and_token_sessions() {
    use kraftd_net::SecurityProtocol as P;
    let alice = KafkaPrincipal::user("alice");
    assert!(!token_requests_allowed(&alice, Some(P::Plaintext)));
    assert!(token_requests_allowed(&alice, Some(P::SaslPlaintext)));
    assert!(!token_requests_allowed(
        &KafkaPrincipal::anonymous(),
        Some(P::Ssl)
    ));
    assert!(token_requests_allowed(&alice, None), "forwarded");
    let mut token_alice = alice.clone();
    token_alice.token_authenticated = true;
    assert!(!token_requests_allowed(&token_alice, Some(P::SaslSsl)));
    assert!(!token_requests_allowed(&token_alice, None));
}
