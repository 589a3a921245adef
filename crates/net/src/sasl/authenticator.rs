//! One connection's SASL state on a SASL listener, as Kafka's `SaslServerAuthenticator`
//! and the re-authentication half of its `KafkaChannel` (KIP-368). Sans-IO: the server's
//! read loop hands every frame to [`SaslAuthenticator::on_frame`] with the time, and gets
//! back whether to serve it as usual, what to answer, or to close.
//!
//! Before authentication only ApiVersions, SaslHandshake and SaslAuthenticate pass
//! ("Unexpected Kafka request of type X during SASL handshake" closes the connection); a
//! frame may be at most `sasl.server.max.receive.size` bytes; the connection must finish
//! within its deadline (the server's `connections.max.idle.ms` from connect). A SaslHandshake
//! v1 is followed by SaslAuthenticate requests; a v0 handshake by raw tokens, each a frame
//! of its own and answered with a bare frame (Kafka's pre-KIP-152 flow). A failed login
//! answers SASL_AUTHENTICATION_FAILED with Kafka's generic message and closes; a handshake
//! naming a mechanism not enabled answers UNSUPPORTED_SASL_MECHANISM with the enabled list
//! and closes. After a login with `connections.max.reauth.ms` set, the session expires:
//! a request other than a re-authentication arriving after that closes the connection, and
//! a re-authentication must keep the mechanism and the principal.

use bytes::Bytes;
use kraftd_protocol::header::{decode_request, decode_request_header};
use kraftd_protocol::messages::{SaslAuthenticateResponse, SaslHandshakeResponse};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use tokio::time::Instant;
use tracing::debug;

use super::scram::{random_nonce, ClientFirst, ScramLogin, ScramServer, ServerStep};
use super::{plain, SaslMechanism, SaslServerConfig, ScramCredentialLookup, ScramHash};
use crate::principal::KafkaPrincipal;

/// What to do with a frame.
#[derive(Debug)]
pub enum SaslStep {
    /// Not SASL's business: decode and serve it as on any listener.
    Pass(Bytes),
    /// Answer this (in order with the connection's other responses).
    Reply(Box<SaslReply>),
    /// Close the connection now, for this reason (logged by the caller).
    Close(String),
}

/// An answer the authenticator produced.
#[derive(Debug)]
pub struct SaslReply {
    /// `None`: a raw token (after a v0 handshake), written as a bare frame.
    pub correlation_id: Option<i32>,
    pub version: i16,
    pub body: ResponseBody,
    /// Set when the login completed: the connection's new principal.
    pub authenticated: Option<KafkaPrincipal>,
    /// Close once this answer is written, for this reason.
    pub then_close: Option<String>,
}

/// Kafka's message for any failed SASL login: no hint of what was wrong.
pub fn failure_message(reauthenticating: bool, mechanism: SaslMechanism) -> String {
    let what = if reauthenticating {
        "re-authentication"
    } else {
        "authentication"
    };
    format!(
        "Authentication failed during {what} due to invalid credentials with SASL mechanism {}",
        mechanism.name()
    )
}

#[derive(Debug)]
enum State {
    /// Before a handshake: ApiVersions or SaslHandshake.
    Handshake,
    /// After a handshake: SaslAuthenticate requests (or raw tokens after a v0 handshake).
    Authenticate {
        mechanism: SaslMechanism,
        raw: bool,
        scram: Option<Box<ScramServer>>,
    },
    /// Logged in; requests pass until the session expires.
    Authenticated,
}

/// One connection's SASL state.
#[derive(Debug)]
pub struct SaslAuthenticator {
    config: SaslServerConfig,
    state: State,
    /// Until the first login completes: when an unauthenticated connection is closed.
    deadline: Option<Instant>,
    /// The principal and mechanism of the last login.
    login: Option<(KafkaPrincipal, SaslMechanism)>,
    /// When the session ends (re-authentication on), else `None`.
    session_expires: Option<Instant>,
}

impl SaslAuthenticator {
    /// A connection accepted at `now` that must authenticate within `max_unauthenticated`.
    pub fn new(
        config: SaslServerConfig,
        now: Instant,
        max_unauthenticated: std::time::Duration,
    ) -> Self {
        SaslAuthenticator {
            config,
            state: State::Handshake,
            deadline: Some(now + max_unauthenticated),
            login: None,
            session_expires: None,
        }
    }

    /// How long to keep a connection open after the answer that refused its login.
    pub fn failed_authentication_delay(&self) -> std::time::Duration {
        self.config.failed_authentication_delay
    }

    /// Whether a login has completed.
    pub fn authenticated(&self) -> bool {
        self.login.is_some()
    }

    /// The largest frame to accept next: `sasl.server.max.receive.size` until
    /// authenticated, and during a re-authentication.
    pub fn max_frame_bytes(&self, configured: usize) -> usize {
        match self.state {
            State::Authenticated => configured,
            _ => configured.min(self.config.max_receive_size),
        }
    }

    /// When the connection must be closed if it has not authenticated by then.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Takes one frame read at `now`.
    pub fn on_frame(&mut self, now: Instant, frame: Bytes) -> SaslStep {
        if let State::Authenticate { raw: true, .. } = self.state {
            return self.raw_token(now, &frame);
        }
        let mut peek = frame.clone();
        let api_key = match decode_request_header(&mut peek) {
            Ok((api_key, _)) => api_key,
            Err(e) if self.login.is_none() => {
                return SaslStep::Close(format!(
                    "invalid request during SASL handshake ({e}): a client configured with the \
                     wrong security protocol, or not a Kafka client"
                ))
            }
            // After login, the usual decoding answers it.
            Err(_) => return SaslStep::Pass(frame),
        };
        match (&self.state, api_key) {
            (State::Handshake, ApiKey::ApiVersions) => SaslStep::Pass(frame),
            (State::Handshake | State::Authenticated, ApiKey::SaslHandshake) => {
                self.handshake(frame)
            }
            (State::Authenticate { raw: false, .. }, ApiKey::SaslAuthenticate) => {
                self.authenticate(now, frame)
            }
            (State::Authenticated, ApiKey::SaslAuthenticate) => illegal_state(frame),
            (State::Authenticated, _) => match self.session_expires {
                Some(end) if now >= end => SaslStep::Close(
                    "the SASL session expired and the client did not re-authenticate".into(),
                ),
                _ => SaslStep::Pass(frame),
            },
            (State::Handshake, api) => SaslStep::Close(format!(
                "Unexpected Kafka request of type {} during SASL handshake",
                api.name()
            )),
            (State::Authenticate { .. }, api) => SaslStep::Close(format!(
                "Unexpected Kafka request of type {} during SASL authentication",
                api.name()
            )),
        }
    }

    fn handshake(&mut self, frame: Bytes) -> SaslStep {
        let (correlation_id, version, body) = match decode(frame) {
            Ok(d) => d,
            Err(e) => return SaslStep::Close(e),
        };
        let RequestBody::SaslHandshake(request) = body else {
            return SaslStep::Close("SaslHandshake does not decode as one".into());
        };
        let reauthenticating = self.login.is_some();
        if reauthenticating && self.session_expires.is_none() {
            // No sessions to renew on this listener: Kafka's KafkaApis answers this.
            return reply(
                correlation_id,
                version,
                handshake_response(ErrorCode::IllegalSaslState, vec![]),
            );
        }
        let enabled: Vec<String> = self
            .config
            .mechanisms
            .iter()
            .map(|m| m.name().to_string())
            .collect();
        let mechanism = SaslMechanism::from_name(&request.mechanism)
            .filter(|m| self.config.mechanisms.contains(m));
        let previous = self.login.as_ref().map(|(_, m)| *m);
        let refusal = match (mechanism, previous) {
            (None, _) => Some(format!(
                "the client asked for SASL mechanism {:?}, which this listener does not enable",
                request.mechanism
            )),
            (Some(m), Some(p)) if m != p => Some(format!(
                "SASL mechanism '{}' requested by client is not supported for re-authentication \
                 of mechanism '{}'",
                m.name(),
                p.name()
            )),
            _ => None,
        };
        let (Some(mechanism), None) = (mechanism, refusal.as_ref()) else {
            return SaslStep::Reply(Box::new(SaslReply {
                correlation_id: Some(correlation_id),
                version,
                body: handshake_response(ErrorCode::UnsupportedSaslMechanism, enabled),
                authenticated: None,
                then_close: refusal,
            }));
        };
        self.state = State::Authenticate {
            mechanism,
            raw: version == 0,
            scram: mechanism
                .scram_hash()
                .map(|h| Box::new(ScramServer::new(h))),
        };
        reply(
            correlation_id,
            version,
            handshake_response(ErrorCode::None, enabled),
        )
    }

    fn authenticate(&mut self, now: Instant, frame: Bytes) -> SaslStep {
        let (correlation_id, version, body) = match decode(frame) {
            Ok(d) => d,
            Err(e) => return SaslStep::Close(e),
        };
        let RequestBody::SaslAuthenticate(request) = body else {
            return SaslStep::Close("SaslAuthenticate does not decode as one".into());
        };
        let (token, done) = match self.evaluate(now, &request.auth_bytes) {
            Ok(outcome) => outcome,
            Err((message, reason)) => {
                let body = ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
                    error_code: ErrorCode::SaslAuthenticationFailed.code(),
                    error_message: Some(message.clone()),
                    ..Default::default()
                });
                debug!(%reason, "SASL login refused");
                return SaslStep::Reply(Box::new(SaslReply {
                    correlation_id: Some(correlation_id),
                    version,
                    body,
                    authenticated: None,
                    then_close: Some(message),
                }));
            }
        };
        let lifetime = done.as_ref().and_then(|_| {
            self.session_expires
                .map(|end| end.saturating_duration_since(now))
        });
        let body = ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
            error_code: 0,
            error_message: None,
            auth_bytes: Bytes::from(token),
            session_lifetime_ms: lifetime.map_or(0, |d| d.as_millis() as i64),
            unknown_tagged_fields: Vec::new(),
        });
        SaslStep::Reply(Box::new(SaslReply {
            correlation_id: Some(correlation_id),
            version,
            body,
            authenticated: done,
            then_close: None,
        }))
    }

    /// A raw token after a v0 handshake: answered with a bare token; a failure can only
    /// close the connection (the v0 flow has no error answer).
    fn raw_token(&mut self, now: Instant, token: &[u8]) -> SaslStep {
        match self.evaluate(now, token) {
            Ok((token, done)) => SaslStep::Reply(Box::new(SaslReply {
                correlation_id: None,
                version: 0,
                body: ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
                    auth_bytes: Bytes::from(token),
                    ..Default::default()
                }),
                authenticated: done,
                then_close: None,
            })),
            Err((message, reason)) => SaslStep::Close(format!("{message} ({reason})")),
        }
    }

    /// Runs the mechanism on one client token: the answer token and, once logged in, the
    /// principal; or Kafka's message for the client and the real reason for the log.
    fn evaluate(
        &mut self,
        now: Instant,
        token: &[u8],
    ) -> Result<(Vec<u8>, Option<KafkaPrincipal>), (String, String)> {
        let State::Authenticate {
            mechanism, scram, ..
        } = &mut self.state
        else {
            return Err(("Unexpected SASL token".into(), "no handshake".into()));
        };
        let mechanism = *mechanism;
        let reauthenticating = self.login.is_some();
        let fail = |reason: String| (failure_message(reauthenticating, mechanism), reason);
        let (token, principal, lifetime_ms) = match (mechanism.scram_hash(), scram.as_mut()) {
            (Some(hash), Some(server)) => {
                let credentials = &self.config.credentials;
                let step = server
                    .step(
                        token,
                        |first| scram_login(credentials.as_ref(), first, hash),
                        &random_nonce(),
                        decoy_salt,
                    )
                    .map_err(|e| fail(e.to_string()))?;
                match step {
                    ServerStep::Challenge(c) => return Ok((c, None)),
                    ServerStep::Authenticated {
                        login,
                        server_final,
                    } => (server_final, login.principal, login.lifetime_ms),
                }
            }
            _ => {
                let user = plain::authenticate(token, &self.config.plain_users)
                    .map_err(|e| fail(e.to_string()))?;
                (Vec::new(), KafkaPrincipal::user(user), None)
            }
        };
        if let Some((previous, _)) = &self.login {
            if *previous != principal {
                return Err((
                    format!(
                        "Cannot change principals during re-authentication from {}.{}: {}.{}",
                        previous.principal_type,
                        previous.name,
                        principal.principal_type,
                        principal.name
                    ),
                    "a different principal".into(),
                ));
            }
        }
        self.state = State::Authenticated;
        self.deadline = None;
        // Kafka's SaslServerAuthenticator: the session ends at the earlier of
        // `connections.max.reauth.ms` and the credential's (a delegation token's) expiry.
        let credential_lifetime =
            lifetime_ms.map(|ms| std::time::Duration::from_millis(ms.max(0) as u64));
        let lifetime = match (self.config.session_lifetime(mechanism), credential_lifetime) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.session_expires = lifetime.map(|d| now + d);
        self.login = Some((principal.clone(), mechanism));
        Ok((token, Some(principal)))
    }
}

/// What the client-first message logs in with: a user's own credential, or, with
/// `tokenauth=true`, the delegation token's, as its owner (Kafka's
/// `ScramServerCallbackHandler`).
fn scram_login(
    credentials: &dyn ScramCredentialLookup,
    first: &ClientFirst,
    hash: ScramHash,
) -> Option<ScramLogin> {
    if first.token_auth {
        let token = credentials.token_credential(&first.user, hash)?;
        let mut principal = KafkaPrincipal::user(token.owner);
        principal.token_authenticated = true;
        return Some(ScramLogin {
            credential: token.credential,
            principal,
            lifetime_ms: Some(token.lifetime_ms),
        });
    }
    let credential = credentials.scram_credential(&first.user, hash)?;
    Some(ScramLogin {
        credential,
        principal: KafkaPrincipal::user(first.user.clone()),
        lifetime_ms: None,
    })
}

/// A SaslAuthenticate on an authenticated connection with no handshake before it: Kafka's
/// KafkaApis answers ILLEGAL_SASL_STATE.
fn illegal_state(frame: Bytes) -> SaslStep {
    match decode(frame) {
        Ok((correlation_id, version, _)) => reply(
            correlation_id,
            version,
            illegal_state_response(ApiKey::SaslAuthenticate),
        ),
        Err(e) => SaslStep::Close(e),
    }
}

/// Kafka's KafkaApis answer to a SaslHandshake or SaslAuthenticate outside an
/// authentication exchange (after login, or on a listener without SASL):
/// ILLEGAL_SASL_STATE. `api_key` is one of the two.
pub fn illegal_state_response(api_key: ApiKey) -> ResponseBody {
    if api_key == ApiKey::SaslHandshake {
        return handshake_response(ErrorCode::IllegalSaslState, Vec::new());
    }
    ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
        error_code: ErrorCode::IllegalSaslState.code(),
        error_message: Some(
            "SaslAuthenticate request received after successful authentication".into(),
        ),
        ..Default::default()
    })
}

fn reply(correlation_id: i32, version: i16, body: ResponseBody) -> SaslStep {
    SaslStep::Reply(Box::new(SaslReply {
        correlation_id: Some(correlation_id),
        version,
        body,
        authenticated: None,
        then_close: None,
    }))
}

fn handshake_response(code: ErrorCode, mechanisms: Vec<String>) -> ResponseBody {
    ResponseBody::SaslHandshake(SaslHandshakeResponse {
        error_code: code.code(),
        mechanisms,
    })
}

/// Decodes a SASL request: its correlation id, version and body.
fn decode(frame: Bytes) -> Result<(i32, i16, RequestBody), String> {
    let request = decode_request(frame).map_err(|e| format!("invalid SASL request: {e}"))?;
    let version = request.header.request_api_version;
    if !kraftd_protocol::api_versions::supported_range(request.api_key).contains(version) {
        return Err(format!(
            "{} v{version} is not served",
            request.api_key.name()
        ));
    }
    Ok((request.header.correlation_id, version, request.body))
}

/// The salt shown for a user with no credential: stable for the process and user (so
/// asking twice does not tell), unrelated to any real salt.
fn decoy_salt(user: &str) -> Vec<u8> {
    use std::sync::OnceLock;
    static SECRET: OnceLock<[u8; 32]> = OnceLock::new();
    let secret = SECRET.get_or_init(|| {
        let mut s = [0u8; 32];
        super::random_bytes(&mut s);
        s
    });
    let mut salt = super::ScramHash::Sha256.hmac(secret, user.as_bytes());
    salt.truncate(16);
    salt
}
