//! SASL on a real socket: a client channel logs in with PLAIN and SCRAM and keeps working
//! across re-authentications; a wrong password is an error of the request; and hostile
//! peers (SaslAuthenticate before the handshake, an oversized SCRAM message, a bad nonce,
//! garbage, an oversized frame, a client that never finishes) lose only their own
//! connection.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kraftd_net::sasl::{
    PlainUsers, SaslClientConfig, SaslMechanism, SaslServerConfig, ScramCredentialData,
    ScramCredentialLookup, ScramHash,
};
use kraftd_net::{
    serve, Channel, ClientConfig, ClientError, ClientSecurity, InboundRequest, ListenerSecurity,
    RequestHandler, SecurityProtocol, ServerConfig,
};
use kraftd_protocol::api_versions::{ApiVersionsTable, ListenerType};
use kraftd_protocol::frame::{frame_chunks, split_frame};
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::{
    ApiVersionsRequest, RequestHeader, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest, VoteRequest, VoteResponse,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, VersionRange};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

const WAIT: Duration = Duration::from_secs(10);

/// Answers every Vote with an empty VoteResponse whose error code tells the session's
/// principal: 0 for `User:alice`, 2 for `User:carol`, 1 for anyone else.
#[derive(Debug)]
struct Echo;

impl RequestHandler for Echo {
    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let (tx, rx) = oneshot::channel();
        let code = match request.session.principal.name.as_str() {
            "alice" => 0,
            "carol" => 2,
            _ => 1,
        };
        let _ = tx.send(ResponseBody::Vote(VoteResponse {
            error_code: code,
            ..Default::default()
        }));
        Some(rx)
    }
}

#[derive(Debug)]
struct Lookup(BTreeMap<String, ScramCredentialData>);

impl ScramCredentialLookup for Lookup {
    fn scram_credential(&self, user: &str, hash: ScramHash) -> Option<ScramCredentialData> {
        (hash == ScramHash::Sha256)
            .then(|| self.0.get(user).cloned())
            .flatten()
    }
}

async fn sasl_server(idle: Duration, reauth: Option<Duration>) -> String {
    let mut sasl = SaslServerConfig::new(vec![SaslMechanism::Plain, SaslMechanism::ScramSha256]);
    sasl.plain_users = Arc::new(PlainUsers::new([(
        "alice".to_string(),
        "alice-secret".to_string(),
    )]));
    sasl.credentials = Arc::new(Lookup(BTreeMap::from([(
        "carol".to_string(),
        ScramHash::Sha256.credential("carol-secret", b"carol-salt", 4096),
    )])));
    if let Some(r) = reauth {
        sasl.max_reauth.insert(SaslMechanism::Plain, r);
        sasl.max_reauth.insert(SaslMechanism::ScramSha256, r);
    }
    let config = ServerConfig {
        connections_max_idle: idle,
        security: ListenerSecurity {
            listener_name: "SASL".into(),
            protocol: SecurityProtocol::SaslPlaintext,
            sasl: Some(sasl),
            tls: None,
        },
        ..ServerConfig::default()
    };
    let mut table = ApiVersionsTable::new(ListenerType::Controller);
    table
        .add(ApiKey::Vote, VersionRange { min: 2, max: 2 })
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(serve(listener, Arc::new(table), config, Arc::new(Echo)));
    addr
}

fn channel(addr: &str, mechanism: SaslMechanism, user: &str, password: &str) -> Channel {
    let mut config = ClientConfig::new("sasl-test");
    config.reconnect_backoff_max = Duration::from_millis(200);
    config.security = ClientSecurity {
        protocol: SecurityProtocol::SaslPlaintext,
        tls: None,
        sasl: Some(SaslClientConfig {
            mechanism,
            username: user.into(),
            password: password.into(),
        }),
    };
    Channel::spawn(addr, config)
}

async fn vote(channel: &Channel) -> Result<i16, ClientError> {
    let body = RequestBody::Vote(VoteRequest::default());
    match channel.call(channel.next_correlation_id(), 2, body).await? {
        ResponseBody::Vote(v) => Ok(v.error_code),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn channels_log_in_with_plain_and_scram_and_carry_the_principal() {
    let addr = sasl_server(Duration::from_secs(60), None).await;
    let alice = channel(&addr, SaslMechanism::Plain, "alice", "alice-secret");
    assert_eq!(
        vote(&alice).await.unwrap(),
        0,
        "the session names User:alice"
    );
    let carol = channel(&addr, SaslMechanism::ScramSha256, "carol", "carol-secret");
    assert_eq!(
        vote(&carol).await.unwrap(),
        2,
        "the session names User:carol"
    );
    for (mechanism, user, password) in [
        (SaslMechanism::Plain, "alice", "wrong"),
        (SaslMechanism::ScramSha256, "carol", "wrong"),
        (SaslMechanism::ScramSha256, "nobody", "x"),
        (SaslMechanism::ScramSha512, "carol", "carol-secret"),
    ] {
        let bad = channel(&addr, mechanism, user, password);
        match vote(&bad).await {
            Err(ClientError::AuthenticationFailed { reason, .. }) => {
                assert!(
                    reason.contains("SASL_AUTHENTICATION_FAILED")
                        || reason.contains("UNSUPPORTED_SASL_MECHANISM"),
                    "{reason}"
                );
                assert!(!reason.contains(password) || password == "x", "{reason}");
            }
            other => panic!("{mechanism} {user}: {other:?}"),
        }
        // The next request waits out the backoff instead of hammering the server.
        assert!(matches!(
            vote(&bad).await,
            Err(ClientError::BackingOff { .. })
        ));
    }
    assert_eq!(vote(&alice).await.unwrap(), 0, "others are unaffected");
}

#[tokio::test]
async fn a_channel_re_authenticates_across_several_session_lifetimes() {
    let lifetime = Duration::from_millis(300);
    let addr = sasl_server(Duration::from_secs(60), Some(lifetime)).await;
    for (mechanism, user, password, code) in [
        (SaslMechanism::Plain, "alice", "alice-secret", 0),
        (SaslMechanism::ScramSha256, "carol", "carol-secret", 2),
    ] {
        let c = channel(&addr, mechanism, user, password);
        // Five lifetimes and at least 20 calls, however slow the machine: many calls in
        // each session, and several re-authentications between them.
        let end = tokio::time::Instant::now() + lifetime * 5;
        let mut calls = 0;
        while calls <= 20 || tokio::time::Instant::now() < end {
            assert_eq!(vote(&c).await.unwrap(), code, "call {calls}");
            calls += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A raw client's socket with a read buffer.
struct Raw {
    s: TcpStream,
    buf: BytesMut,
}

impl Raw {
    async fn connect(addr: &str) -> Raw {
        Raw {
            s: TcpStream::connect(addr).await.unwrap(),
            buf: BytesMut::new(),
        }
    }

    async fn send(&mut self, version: i16, body: RequestBody) {
        assert!(self.try_send(version, body).await, "the write went through");
    }

    /// Sends a request; false when the connection is gone.
    async fn try_send(&mut self, version: i16, body: RequestBody) -> bool {
        let header = RequestHeader {
            request_api_key: body.key().code(),
            request_api_version: version,
            correlation_id: 7,
            client_id: Some("raw".into()),
            ..Default::default()
        };
        for chunk in frame_chunks(encode_request(&header, &body).unwrap()) {
            if self.s.write_all(&chunk).await.is_err() {
                return false;
            }
        }
        true
    }

    /// The next frame, or `None` once the server closed the connection.
    async fn read(&mut self) -> Option<Bytes> {
        loop {
            if let Some(f) = split_frame(&mut self.buf, 1 << 20).unwrap() {
                return Some(f);
            }
            let n = tokio::time::timeout(WAIT, self.s.read_buf(&mut self.buf))
                .await
                .expect("the server answers or closes")
                .ok()?;
            if n == 0 {
                return None;
            }
        }
    }

    async fn handshake(&mut self, mechanism: &str) {
        self.send(
            1,
            RequestBody::SaslHandshake(SaslHandshakeRequest {
                mechanism: mechanism.into(),
            }),
        )
        .await;
        let f = self.read().await.expect("a handshake answer");
        let (_, body) = decode_response(ApiKey::SaslHandshake, 1, f).unwrap();
        let ResponseBody::SaslHandshake(h) = body else {
            panic!()
        };
        assert_eq!(h.error_code, 0);
    }

    async fn authenticate(&mut self, token: &[u8]) -> Option<SaslAuthenticateResponse> {
        self.send(
            2,
            RequestBody::SaslAuthenticate(SaslAuthenticateRequest {
                auth_bytes: Bytes::copy_from_slice(token),
                ..Default::default()
            }),
        )
        .await;
        let f = self.read().await?;
        match decode_response(ApiKey::SaslAuthenticate, 2, f).unwrap().1 {
            ResponseBody::SaslAuthenticate(a) => Some(a),
            other => panic!("{other:?}"),
        }
    }

    async fn assert_closed(&mut self) {
        assert!(
            self.read().await.is_none(),
            "the server closed the connection"
        );
    }
}

const FAILED: &str =
    "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256";

#[tokio::test]
async fn hostile_clients_lose_only_their_own_connection() {
    let addr = sasl_server(Duration::from_secs(60), None).await;
    let good = channel(&addr, SaslMechanism::ScramSha256, "carol", "carol-secret");
    assert_eq!(vote(&good).await.unwrap(), 2);

    // SaslAuthenticate before the handshake.
    let mut raw = Raw::connect(&addr).await;
    raw.send(
        2,
        RequestBody::SaslAuthenticate(SaslAuthenticateRequest::default()),
    )
    .await;
    raw.assert_closed().await;

    // A request before authenticating.
    let mut raw = Raw::connect(&addr).await;
    raw.send(2, RequestBody::Vote(VoteRequest::default())).await;
    raw.assert_closed().await;

    // An oversized SCRAM message: refused with the generic message, then closed.
    let mut raw = Raw::connect(&addr).await;
    raw.handshake("SCRAM-SHA-256").await;
    let huge = format!("n,,n={},r=abc", "u".repeat(100_000));
    let r = raw.authenticate(huge.as_bytes()).await.expect("an answer");
    assert_eq!(r.error_code, ErrorCode::SaslAuthenticationFailed.code());
    assert_eq!(r.error_message.as_deref(), Some(FAILED));
    raw.assert_closed().await;

    // A bad nonce in the final message.
    let mut raw = Raw::connect(&addr).await;
    raw.handshake("SCRAM-SHA-256").await;
    let first = raw.authenticate(b"n,,n=carol,r=abc").await.unwrap();
    assert_eq!(first.error_code, 0);
    let r = raw
        .authenticate(b"c=biws,r=notthenonce,p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
        .await
        .unwrap();
    assert_eq!(r.error_message.as_deref(), Some(FAILED));
    raw.assert_closed().await;

    // Garbage tokens.
    let mut raw = Raw::connect(&addr).await;
    raw.handshake("SCRAM-SHA-256").await;
    let r = raw.authenticate(&[0xff, 0, 1, 2, 3]).await.unwrap();
    assert_eq!(r.error_code, ErrorCode::SaslAuthenticationFailed.code());
    raw.assert_closed().await;

    // Garbage instead of a Kafka request, and a frame over sasl.server.max.receive.size.
    for bytes in [
        b"\x00\x00\x00\x10GET / HTTP/1.1\r\n".to_vec(),
        vec![0, 0x10, 0, 0],
    ] {
        let mut raw = Raw::connect(&addr).await;
        raw.s.write_all(&bytes).await.unwrap();
        raw.assert_closed().await;
    }

    // A mechanism the listener does not enable: the list, then closed.
    let mut raw = Raw::connect(&addr).await;
    raw.send(
        1,
        RequestBody::SaslHandshake(SaslHandshakeRequest {
            mechanism: "GSSAPI".into(),
        }),
    )
    .await;
    let f = raw.read().await.unwrap();
    let ResponseBody::SaslHandshake(h) = decode_response(ApiKey::SaslHandshake, 1, f).unwrap().1
    else {
        panic!()
    };
    assert_eq!(h.error_code, ErrorCode::UnsupportedSaslMechanism.code());
    assert_eq!(h.mechanisms, vec!["PLAIN", "SCRAM-SHA-256"]);
    raw.assert_closed().await;

    assert_eq!(
        vote(&good).await.unwrap(),
        2,
        "the good client never noticed"
    );
}

#[tokio::test]
async fn a_client_that_never_finishes_is_closed_within_the_idle_time() {
    let idle = Duration::from_millis(500);
    let addr = sasl_server(idle, None).await;
    // One that stops after the first SCRAM message, and one that keeps asking ApiVersions.
    let mut stalled = Raw::connect(&addr).await;
    let start = tokio::time::Instant::now();
    stalled.handshake("SCRAM-SHA-256").await;
    assert_eq!(
        stalled
            .authenticate(b"n,,n=carol,r=abc")
            .await
            .unwrap()
            .error_code,
        0
    );
    let mut chatty = Raw::connect(&addr).await;
    let chatter = tokio::spawn(async move {
        loop {
            let sent = chatty
                .try_send(3, RequestBody::ApiVersions(ApiVersionsRequest::default()))
                .await;
            if !sent || chatty.read().await.is_none() {
                return tokio::time::Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    stalled.assert_closed().await;
    let closed_at = tokio::time::timeout(WAIT, chatter).await.unwrap().unwrap();
    assert!(start.elapsed() < idle * 4, "{:?}", start.elapsed());
    assert!(closed_at.duration_since(start) < idle * 4);
}
