//! Unit tests of the SASL mechanisms (RFC 7677's SCRAM-SHA-256 exchange, PBKDF2's vector,
//! client against server, hostile messages) and of the server's per-connection state
//! machine frame by frame.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use bytes::Bytes;
use kraftd_protocol::frame::frame_chunks;
use kraftd_protocol::header::encode_request;
use kraftd_protocol::messages::{
    ApiVersionsRequest, MetadataRequest, RequestHeader, SaslAuthenticateRequest,
    SaslHandshakeRequest,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use tokio::time::Instant;

use super::scram::{
    parse_client_first, ClientFirst, ScramClient, ScramLogin, ScramServer, ServerStep,
};
use super::*;
use crate::KafkaPrincipal;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn pbkdf2_matches_rfc_7914() {
    // RFC 7914 §11: PBKDF2-HMAC-SHA256("passwd", "salt", 1), first block.
    let dk = ScramHash::Sha256.hi(b"passwd", b"salt", 1);
    assert_eq!(
        dk,
        hex("55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc")
    );
}

const RFC7677_SALT: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
const RFC7677_CLIENT_NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
const RFC7677_SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";

fn rfc7677_credential() -> ScramCredentialData {
    ScramHash::Sha256.credential("pencil", &B64.decode(RFC7677_SALT).unwrap(), 4096)
}

fn no_decoy(_: &str) -> Vec<u8> {
    unreachable!("known user")
}

#[test]
fn the_server_follows_rfc_7677s_exchange() {
    let mut server = ScramServer::new(ScramHash::Sha256);
    let first = server
        .step(
            b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
            |f| {
                (f.user == "user").then(|| ScramLogin {
                    credential: rfc7677_credential(),
                    principal: KafkaPrincipal::user("user"),
                    lifetime_ms: None,
                })
            },
            RFC7677_SERVER_NONCE,
            no_decoy,
        )
        .unwrap();
    assert_eq!(
        first,
        ServerStep::Challenge(
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
                .to_vec()
        )
    );
    let last = server
        .step(
            b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
            |_| unreachable!(),
            "unused",
            no_decoy,
        )
        .unwrap();
    assert_eq!(
        last,
        ServerStep::Authenticated {
            login: Box::new(ScramLogin {
                credential: rfc7677_credential(),
                principal: KafkaPrincipal::user("user"),
                lifetime_ms: None,
            }),
            server_final: b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec()
        }
    );
}

#[test]
fn the_client_follows_rfc_7677s_exchange() {
    let mut client = ScramClient::new(ScramHash::Sha256, "user", "pencil", RFC7677_CLIENT_NONCE);
    assert_eq!(client.first_message(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    let last = client
        .final_message(
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        )
        .unwrap();
    assert_eq!(
        last,
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    );
    client
        .verify_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
        .unwrap();
    assert!(client
        .verify_server_final(b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
        .is_err());
    assert!(client.verify_server_final(b"e=invalid-proof").is_err());
}

/// Runs client and server against each other; the server's answer to the final message.
fn exchange(
    hash: ScramHash,
    user: &str,
    password: &str,
    stored: Option<ScramCredentialData>,
) -> Result<(), String> {
    let mut client = ScramClient::new(hash, user, password, &scram::random_nonce());
    let mut server = ScramServer::new(hash);
    let lookup = |f: &ClientFirst| {
        stored.clone().map(|credential| ScramLogin {
            credential,
            principal: KafkaPrincipal::user(f.user.clone()),
            lifetime_ms: None,
        })
    };
    let ServerStep::Challenge(challenge) = server
        .step(&client.first_message(), lookup, "srv", |_| vec![7; 16])
        .map_err(|e| e.to_string())?
    else {
        panic!("a challenge first");
    };
    let last = client
        .final_message(&challenge)
        .map_err(|e| e.to_string())?;
    match server
        .step(&last, |_| unreachable!(), "", |_| unreachable!())
        .map_err(|e| e.to_string())?
    {
        ServerStep::Authenticated {
            login,
            server_final,
        } => {
            assert_eq!(login.principal.name, user);
            client
                .verify_server_final(&server_final)
                .map_err(|e| e.to_string())
        }
        ServerStep::Challenge(_) => panic!("done after two messages"),
    }
}

#[test]
fn client_and_server_agree_on_both_hashes_and_refuse_a_wrong_password_or_unknown_user() {
    for hash in [ScramHash::Sha256, ScramHash::Sha512] {
        let stored = hash.credential("alice-secret", b"0123456789abcdef", 4096);
        exchange(hash, "alice", "alice-secret", Some(stored.clone())).unwrap();
        // A user name with the characters SCRAM escapes.
        exchange(hash, "a,b=c", "alice-secret", Some(stored.clone())).unwrap();
        let e = exchange(hash, "alice", "wrong", Some(stored)).unwrap_err();
        assert!(e.contains("proof"), "{e}");
        // An unknown user gets a challenge like anyone and fails only at the proof.
        let e = exchange(hash, "nobody", "x", None).unwrap_err();
        assert!(e.contains("no such user"), "{e}");
    }
}

#[test]
fn the_client_first_message_is_parsed_as_kafka_accepts_it() {
    let f = parse_client_first(b"n,a=bob,n=bob,r=abc").unwrap();
    assert_eq!(
        (f.user.as_str(), f.gs2_header.as_str()),
        ("bob", "n,a=bob,")
    );
    let f = parse_client_first(b"n,,n=a=3Db=2Cc,r=abc").unwrap();
    assert_eq!(f.user, "a=b,c");
    assert!(!f.token_auth);
    // Kafka's delegation-token login, and an extension Kafka ignores.
    let f = parse_client_first(b"n,,n=tok,r=abc,tokenauth=true").unwrap();
    assert!(f.token_auth);
    let f = parse_client_first(b"n,,n=tok,r=abc,other=1,tokenauth=TRUE").unwrap();
    assert!(f.token_auth);
    let f = parse_client_first(b"n,,n=tok,r=abc,tokenauth=false").unwrap();
    assert!(!f.token_auth);
    for bad in [
        &b"n,a=eve,n=bob,r=abc"[..],  // authzid is not the user
        b"y,,n=bob,r=abc",            // only gs2 flag n
        b"p=tls-unique,,n=bob,r=abc", // channel binding
        b"n,,n=bob,r=abc,=x",
        b"n,,m=ext,n=bob,r=abc",
        b"n,,n=bob",
        b"n,,n=bob,r=",
        b"n,,n=bob,r=a\x01b",
        b"n,,n=b=ob,r=abc",
        b"n,,n=,r=abc",
        b"n,,r=abc,n=bob",
        b"\xff\xfe",
        b"",
    ] {
        assert!(
            parse_client_first(bad).is_err(),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    let huge = format!("n,,n={},r=abc", "u".repeat(scram::MAX_SCRAM_MESSAGE_BYTES));
    assert!(parse_client_first(huge.as_bytes()).is_err());
}

#[test]
fn a_final_message_with_a_bad_nonce_binding_or_proof_is_refused() {
    let stored = ScramHash::Sha256.credential("pw", b"salt", 4096);
    let start = || {
        let mut server = ScramServer::new(ScramHash::Sha256);
        server
            .step(
                b"n,,n=u,r=cnonce",
                |_| {
                    Some(ScramLogin {
                        credential: stored.clone(),
                        principal: KafkaPrincipal::user("u"),
                        lifetime_ms: None,
                    })
                },
                "snonce",
                |_| vec![],
            )
            .unwrap();
        server
    };
    let proof = B64.encode([0u8; 32]);
    for bad in [
        format!("c=biws,r=cnonce,p={proof}"), // nonce without the server's part
        format!("c=biws,r=cnonceXsnonce,p={proof}"), // another nonce
        format!("c=bixx,r=cnoncesnonce,p={proof}"), // binding not the gs2 header
        format!("c=biws,r=cnoncesnonce,x=1,p={proof}"), // an extension (ignored), a wrong proof
        "c=biws,r=cnoncesnonce,p=!!".to_string(), // not base64
        format!("c=biws,r=cnoncesnonce,p={}", B64.encode([0u8; 5])),
        format!("c=biws,r=cnoncesnonce,p={proof}"), // wrong proof
        "c=biws,r=cnoncesnonce".to_string(),
        "garbage".to_string(),
    ] {
        let e = start()
            .step(bad.as_bytes(), |_| unreachable!(), "", |_| vec![])
            .unwrap_err();
        assert!(!e.0.is_empty(), "{bad}");
    }
    // A third message after a completed exchange is an error, never a panic.
    let mut server = start();
    let _ = server.step(b"x", |_| None, "", |_| vec![]);
    assert!(server.step(b"x", |_| None, "", |_| vec![]).is_err());
}

#[test]
fn plain_checks_like_kafkas_plain_server() {
    let users = PlainUsers::new([("alice".to_string(), "alice-secret".to_string())]);
    assert_eq!(
        plain::authenticate(b"\0alice\0alice-secret", &users).unwrap(),
        "alice"
    );
    assert_eq!(
        plain::authenticate(b"alice\0alice\0alice-secret", &users).unwrap(),
        "alice"
    );
    for bad in [
        &b"bob\0alice\0alice-secret"[..],
        b"\0alice\0wrong",
        b"\0alice\0alice-secre",
        b"\0bob\0alice-secret",
        b"\0\0alice-secret",
        b"\0alice\0",
        b"alice\0alice-secret",
        b"\0alice\0alice-secret\0x",
        b"\xff\0alice\0alice-secret",
    ] {
        assert!(plain::authenticate(bad, &users).is_err(), "{bad:?}");
    }
    assert_eq!(format!("{users:?}"), "{\"alice\"}", "no password in Debug");
}

// The state machine, frame by frame.

#[derive(Debug)]
struct MapLookup(BTreeMap<String, ScramCredentialData>);

impl ScramCredentialLookup for MapLookup {
    fn scram_credential(&self, user: &str, _: ScramHash) -> Option<ScramCredentialData> {
        self.0.get(user).cloned()
    }
}

fn config(reauth: Option<Duration>) -> SaslServerConfig {
    let mut c = SaslServerConfig::new(vec![SaslMechanism::ScramSha512, SaslMechanism::Plain]);
    c.plain_users = Arc::new(PlainUsers::new([
        ("alice".to_string(), "alice-secret".to_string()),
        ("bob".to_string(), "bob-secret".to_string()),
    ]));
    static CAROL: std::sync::OnceLock<ScramCredentialData> = std::sync::OnceLock::new();
    let carol =
        CAROL.get_or_init(|| ScramHash::Sha512.credential("carol-secret", b"carolsalt", 4096));
    c.credentials = Arc::new(MapLookup(BTreeMap::from([(
        "carol".to_string(),
        carol.clone(),
    )])));
    if let Some(r) = reauth {
        for m in SaslMechanism::ALL {
            c.max_reauth.insert(m, r);
        }
    }
    c
}

fn frame(api_key: ApiKey, version: i16, correlation_id: i32, body: RequestBody) -> Bytes {
    let header = RequestHeader {
        request_api_key: api_key.code(),
        request_api_version: version,
        correlation_id,
        client_id: Some("t".into()),
        ..Default::default()
    };
    let chunks = frame_chunks(encode_request(&header, &body).unwrap());
    Bytes::from(chunks[1..].concat())
}

fn handshake(version: i16, mechanism: &str) -> Bytes {
    frame(
        ApiKey::SaslHandshake,
        version,
        1,
        RequestBody::SaslHandshake(SaslHandshakeRequest {
            mechanism: mechanism.into(),
        }),
    )
}

fn authenticate(version: i16, token: &[u8]) -> Bytes {
    frame(
        ApiKey::SaslAuthenticate,
        version,
        2,
        RequestBody::SaslAuthenticate(SaslAuthenticateRequest {
            auth_bytes: Bytes::copy_from_slice(token),
            ..Default::default()
        }),
    )
}

fn metadata() -> Bytes {
    frame(
        ApiKey::Metadata,
        12,
        3,
        RequestBody::Metadata(MetadataRequest::default()),
    )
}

fn reply(step: SaslStep) -> SaslReply {
    match step {
        SaslStep::Reply(r) => *r,
        other => panic!("expected a reply, got {other:?}"),
    }
}

fn closed(step: SaslStep) -> String {
    match step {
        SaslStep::Close(reason) => reason,
        other => panic!("expected a close, got {other:?}"),
    }
}

fn auth_response(r: &SaslReply) -> &kraftd_protocol::messages::SaslAuthenticateResponse {
    match &r.body {
        ResponseBody::SaslAuthenticate(a) => a,
        other => panic!("{other:?}"),
    }
}

fn new_auth(reauth: Option<Duration>) -> (SaslAuthenticator, Instant) {
    let now = Instant::now();
    (
        SaslAuthenticator::new(config(reauth), now, Duration::from_secs(600)),
        now,
    )
}

#[test]
fn before_login_only_api_versions_and_sasl_pass() {
    let (mut a, now) = new_auth(None);
    assert_eq!(a.max_frame_bytes(100 << 20), SASL_SERVER_MAX_RECEIVE_SIZE);
    let versions = frame(
        ApiKey::ApiVersions,
        3,
        0,
        RequestBody::ApiVersions(ApiVersionsRequest::default()),
    );
    assert!(matches!(a.on_frame(now, versions), SaslStep::Pass(_)));
    let e = closed(a.on_frame(now, metadata()));
    assert_eq!(
        e,
        "Unexpected Kafka request of type Metadata during SASL handshake"
    );
    let (mut a, now) = new_auth(None);
    let e = closed(a.on_frame(now, authenticate(2, b"\0alice\0alice-secret")));
    assert!(e.contains("SaslAuthenticate during SASL handshake"), "{e}");
    let (mut a, now) = new_auth(None);
    assert!(
        closed(a.on_frame(now, Bytes::from_static(b"GET / HTTP/1.1\r\n")))
            .contains("wrong security protocol")
    );
    let (mut a, now) = new_auth(None);
    reply(a.on_frame(now, handshake(1, "PLAIN")));
    let e = closed(a.on_frame(now, metadata()));
    assert!(e.contains("Metadata during SASL authentication"), "{e}");
}

#[test]
fn a_disabled_mechanism_is_answered_with_the_enabled_list_then_closed() {
    let (mut a, now) = new_auth(None);
    let r = reply(a.on_frame(now, handshake(1, "SCRAM-SHA-256")));
    let ResponseBody::SaslHandshake(h) = &r.body else {
        panic!()
    };
    assert_eq!(h.error_code, ErrorCode::UnsupportedSaslMechanism.code());
    assert_eq!(
        h.mechanisms,
        vec!["SCRAM-SHA-512", "PLAIN"],
        "in config order"
    );
    assert!(r.then_close.is_some());
    let (mut a, now) = new_auth(None);
    assert!(reply(a.on_frame(now, handshake(1, "GSSAPI")))
        .then_close
        .is_some());
}

#[test]
fn plain_login_sets_the_principal_and_a_failure_is_generic_then_closes() {
    let (mut a, now) = new_auth(None);
    let h = reply(a.on_frame(now, handshake(1, "PLAIN")));
    assert!(h.then_close.is_none());
    let r = reply(a.on_frame(now, authenticate(2, b"\0alice\0alice-secret")));
    assert_eq!(r.authenticated, Some(KafkaPrincipal::user("alice")));
    assert_eq!(auth_response(&r).error_code, 0);
    assert_eq!(auth_response(&r).session_lifetime_ms, 0);
    assert!(matches!(a.on_frame(now, metadata()), SaslStep::Pass(_)));
    assert_eq!(a.max_frame_bytes(100 << 20), 100 << 20);
    for token in [&b"\0alice\0nope"[..], b"\0mallory\0alice-secret", b"junk"] {
        let (mut a, now) = new_auth(None);
        reply(a.on_frame(now, handshake(1, "PLAIN")));
        let r = reply(a.on_frame(now, authenticate(2, token)));
        let resp = auth_response(&r);
        assert_eq!(resp.error_code, ErrorCode::SaslAuthenticationFailed.code());
        assert_eq!(
            resp.error_message.as_deref(),
            Some("Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN")
        );
        assert!(r.authenticated.is_none() && r.then_close.is_some());
    }
}

#[test]
fn scram_login_through_the_state_machine() {
    let (mut a, now) = new_auth(None);
    reply(a.on_frame(now, handshake(1, "SCRAM-SHA-512")));
    let mut client = ScramClient::new(ScramHash::Sha512, "carol", "carol-secret", "nonce1");
    let r = reply(a.on_frame(now, authenticate(1, &client.first_message())));
    assert!(r.authenticated.is_none());
    let last = client.final_message(&auth_response(&r).auth_bytes).unwrap();
    let r = reply(a.on_frame(now, authenticate(1, &last)));
    assert_eq!(r.authenticated, Some(KafkaPrincipal::user("carol")));
    client
        .verify_server_final(&auth_response(&r).auth_bytes)
        .unwrap();
}

#[test]
fn a_v0_handshake_takes_raw_tokens() {
    let (mut a, now) = new_auth(None);
    let h = reply(a.on_frame(now, handshake(0, "PLAIN")));
    assert_eq!(h.version, 0);
    let r = reply(a.on_frame(now, Bytes::from_static(b"\0bob\0bob-secret")));
    assert_eq!(r.correlation_id, None, "a bare token answer");
    assert_eq!(r.authenticated, Some(KafkaPrincipal::user("bob")));
    assert!(matches!(a.on_frame(now, metadata()), SaslStep::Pass(_)));
    let (mut a, now) = new_auth(None);
    reply(a.on_frame(now, handshake(0, "PLAIN")));
    assert!(closed(a.on_frame(now, Bytes::from_static(b"\0bob\0wrong")))
        .contains("invalid credentials"));
}

fn plain_login(a: &mut SaslAuthenticator, now: Instant, token: &[u8]) -> SaslReply {
    reply(a.on_frame(now, handshake(1, "PLAIN")));
    reply(a.on_frame(now, authenticate(2, token)))
}

#[test]
fn sessions_expire_and_re_authentication_keeps_the_principal() {
    let (mut a, now) = new_auth(Some(Duration::from_secs(1)));
    let r = plain_login(&mut a, now, b"\0alice\0alice-secret");
    assert_eq!(auth_response(&r).session_lifetime_ms, 1000);
    let later = now + Duration::from_millis(999);
    assert!(matches!(a.on_frame(later, metadata()), SaslStep::Pass(_)));
    // Re-authenticating (even after expiry) renews the session.
    let expired = now + Duration::from_millis(1500);
    let r = plain_login(&mut a, expired, b"\0alice\0alice-secret");
    assert_eq!(r.authenticated, Some(KafkaPrincipal::user("alice")));
    assert!(matches!(a.on_frame(expired, metadata()), SaslStep::Pass(_)));
    let end = expired + Duration::from_secs(1);
    assert!(closed(a.on_frame(end, metadata())).contains("expired"));
    // Another principal, or another mechanism, is refused.
    let (mut a, now) = new_auth(Some(Duration::from_secs(1)));
    plain_login(&mut a, now, b"\0alice\0alice-secret");
    let r = plain_login(&mut a, now, b"\0bob\0bob-secret");
    assert_eq!(
        auth_response(&r).error_message.as_deref(),
        Some("Cannot change principals during re-authentication from User.alice: User.bob")
    );
    assert!(r.then_close.is_some() && r.authenticated.is_none());
    let (mut a, now) = new_auth(Some(Duration::from_secs(1)));
    plain_login(&mut a, now, b"\0alice\0alice-secret");
    let r = reply(a.on_frame(now, handshake(1, "SCRAM-SHA-512")));
    assert!(r
        .then_close
        .unwrap()
        .contains("not supported for re-authentication"));
}

#[test]
fn without_sessions_a_second_handshake_or_authenticate_is_an_illegal_state() {
    let (mut a, now) = new_auth(None);
    plain_login(&mut a, now, b"\0alice\0alice-secret");
    let far = now + Duration::from_secs(86_400);
    assert!(
        matches!(a.on_frame(far, metadata()), SaslStep::Pass(_)),
        "no expiry"
    );
    let r = reply(a.on_frame(far, handshake(1, "PLAIN")));
    let ResponseBody::SaslHandshake(h) = &r.body else {
        panic!()
    };
    assert_eq!(h.error_code, ErrorCode::IllegalSaslState.code());
    let r = reply(a.on_frame(far, authenticate(2, b"x")));
    assert_eq!(
        auth_response(&r).error_code,
        ErrorCode::IllegalSaslState.code()
    );
    assert!(r.then_close.is_none());
}

#[test]
fn garbage_frames_never_panic() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..2000 {
        let (mut a, now) = new_auth(Some(Duration::from_secs(1)));
        if round % 3 == 1 {
            reply(a.on_frame(now, handshake(1, "SCRAM-SHA-512")));
        } else if round % 3 == 2 {
            reply(a.on_frame(now, handshake(0, "PLAIN")));
        }
        let len = (next() % 64) as usize;
        let mut junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if round % 5 == 0 && len >= 4 {
            // A plausible header: SaslAuthenticate v2.
            junk[..4].copy_from_slice(&[0, 36, 0, 2]);
        }
        let _ = a.on_frame(now, Bytes::from(junk));
    }
}
