//! SASL authentication for `SASL_PLAINTEXT` and `SASL_SSL` listeners (Kafka's
//! `SaslServerAuthenticator`, KIP-43 and KIP-152) and for the node's own clients connecting
//! to them (Kafka's `SaslClientAuthenticator`). Mechanisms: PLAIN against the users a
//! listener's JAAS config names, and SCRAM-SHA-256/-512 against a [`ScramCredentialLookup`]
//! the node backs with its `CredentialProvider` (salt, stored key, server key, iterations:
//! never a password). Re-authentication (KIP-368) when `connections.max.reauth.ms` is set.
//!
//! The map: [`authenticator`] is the per-connection server state machine (sans-IO: frames
//! in, responses and verdicts out) the server's read loop calls; [`client`] is the exchange
//! a client channel runs right after connecting; [`scram`] and [`plain`] are the mechanisms.
//! Nothing here logs a password, a key or a salt.

pub mod authenticator;
pub mod client;
pub mod plain;
pub mod scram;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kraftd_protocol::api_versions::{supported_range, ApiVersionsTable};
use kraftd_protocol::ApiKey;

pub use authenticator::{illegal_state_response, SaslAuthenticator, SaslReply, SaslStep};
pub use plain::PlainUsers;

/// Kafka's `sasl.server.max.receive.size` default: the largest frame a connection may send
/// before it has authenticated.
pub const SASL_SERVER_MAX_RECEIVE_SIZE: usize = 524_288;

/// A mechanism kraftd serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SaslMechanism {
    Plain,
    ScramSha256,
    ScramSha512,
}

impl SaslMechanism {
    pub const ALL: [SaslMechanism; 3] = [
        SaslMechanism::Plain,
        SaslMechanism::ScramSha256,
        SaslMechanism::ScramSha512,
    ];

    /// The name clients send in SaslHandshake (`SCRAM-SHA-256`).
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism named exactly `name` (SASL names are case-sensitive).
    pub fn from_name(name: &str) -> Option<SaslMechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The SCRAM hash of a SCRAM mechanism.
    pub fn scram_hash(self) -> Option<ScramHash> {
        match self {
            SaslMechanism::Plain => None,
            SaslMechanism::ScramSha256 => Some(ScramHash::Sha256),
            SaslMechanism::ScramSha512 => Some(ScramHash::Sha512),
        }
    }
}

impl fmt::Display for SaslMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The hash of a SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramHash {
    Sha256,
    Sha512,
}

/// What a server keeps of a user's SCRAM credential (RFC 5802): enough to check a proof
/// and prove itself, never enough to log in as the user.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredentialData {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

impl fmt::Debug for ScramCredentialData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramCredentialData")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// Where a server finds a user's SCRAM credential, looked up afresh on every login so a
/// credential created, changed or deleted takes effect on the next one.
pub trait ScramCredentialLookup: Send + Sync + 'static {
    fn scram_credential(&self, user: &str, hash: ScramHash) -> Option<ScramCredentialData>;

    /// The SCRAM credential of delegation token `token_id` (a login with `tokenauth=true`,
    /// Kafka's `DelegationTokenCache.credential`), with its owner and expiry. None where
    /// delegation tokens are off or the token is unknown.
    fn token_credential(&self, token_id: &str, hash: ScramHash) -> Option<TokenCredential> {
        let _ = (token_id, hash);
        None
    }
}

/// A delegation token's SCRAM credential as a login sees it.
#[derive(Debug, Clone)]
pub struct TokenCredential {
    pub credential: ScramCredentialData,
    /// The owner's name: the session runs as `User:<owner>` (Kafka's `tokenOwner`).
    pub owner: String,
    /// Milliseconds from the lookup to the token's expiry (negative once past it): a
    /// session authenticated with it lasts no longer (Kafka's credential lifetime).
    pub lifetime_ms: i64,
}

/// A lookup that knows no user (the default until a node plugs its provider in).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoScramCredentials;

impl ScramCredentialLookup for NoScramCredentials {
    fn scram_credential(&self, _: &str, _: ScramHash) -> Option<ScramCredentialData> {
        None
    }
}

/// How a SASL listener authenticates.
#[derive(Clone)]
pub struct SaslServerConfig {
    /// `sasl.enabled.mechanisms` (listener-prefixed first), in the order the handshake
    /// answer lists them.
    pub mechanisms: Vec<SaslMechanism>,
    /// The PLAIN users (`user_<name>="<password>"` of the listener's JAAS config).
    pub plain_users: Arc<PlainUsers>,
    /// The SCRAM credentials (the node's `CredentialProvider`).
    pub credentials: Arc<dyn ScramCredentialLookup>,
    /// `connections.max.reauth.ms` per mechanism (listener- and mechanism-prefixed names
    /// resolved by the caller); zero or absent: sessions never expire.
    pub max_reauth: BTreeMap<SaslMechanism, Duration>,
    /// `connection.failed.authentication.delay.ms` (KIP-306): how long a failed login's
    /// connection stays open after its answer, so the client reads the answer before the
    /// close (and cannot hammer the server with guesses).
    pub failed_authentication_delay: Duration,
    /// `sasl.server.max.receive.size`: the largest frame before authentication.
    pub max_receive_size: usize,
}

/// Kafka's `connection.failed.authentication.delay.ms` default.
pub const DEFAULT_FAILED_AUTHENTICATION_DELAY: Duration = Duration::from_millis(100);

impl SaslServerConfig {
    /// A config with `mechanisms`, no PLAIN user, no SCRAM credential, no re-authentication.
    pub fn new(mechanisms: Vec<SaslMechanism>) -> Self {
        SaslServerConfig {
            mechanisms,
            plain_users: Arc::default(),
            credentials: Arc::new(NoScramCredentials),
            max_reauth: BTreeMap::new(),
            failed_authentication_delay: DEFAULT_FAILED_AUTHENTICATION_DELAY,
            max_receive_size: SASL_SERVER_MAX_RECEIVE_SIZE,
        }
    }

    /// The session lifetime after a login with `mechanism`, if sessions expire.
    pub fn session_lifetime(&self, mechanism: SaslMechanism) -> Option<Duration> {
        self.max_reauth
            .get(&mechanism)
            .copied()
            .filter(|d| !d.is_zero())
    }
}

impl fmt::Debug for SaslServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslServerConfig")
            .field("mechanisms", &self.mechanisms)
            .field("plain_users", &self.plain_users)
            .field("max_reauth", &self.max_reauth)
            .field(
                "failed_authentication_delay",
                &self.failed_authentication_delay,
            )
            .finish_non_exhaustive()
    }
}

/// How a client logs in to a SASL listener: `sasl.mechanism` and the username and password
/// of the JAAS config it was given.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslClientConfig {
    pub mechanism: SaslMechanism,
    pub username: String,
    pub password: String,
}

impl fmt::Debug for SaslClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslClientConfig")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &"[hidden]")
            .finish()
    }
}

/// The table a listener advertises: `table` plus SaslHandshake and SaslAuthenticate at
/// every version the codec holds as stable, on every listener as Kafka advertises them (a
/// listener without SASL answers them ILLEGAL_SASL_STATE).
pub fn listener_table(table: Arc<ApiVersionsTable>) -> Arc<ApiVersionsTable> {
    let mut with_sasl = (*table).clone();
    for key in [ApiKey::SaslHandshake, ApiKey::SaslAuthenticate] {
        // Both are served on broker and controller listeners alike; the codec's stable
        // range always fits, so an error here cannot happen and is ignored.
        let _ = with_sasl.add(key, supported_range(key));
    }
    Arc::new(with_sasl)
}

/// Fills `buf` from the OS's CSPRNG; should that ever fail, from a hash of the time and a
/// counter (nonces must not repeat; they need not be secret).
pub fn random_bytes(buf: &mut [u8]) {
    if getrandom::fill(buf).is_ok() {
        return;
    }
    use sha2::{Digest, Sha256};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    for (i, chunk) in buf.chunks_mut(32).enumerate() {
        let mut h = Sha256::new();
        h.update(format!(
            "{:?}{}{i}{}",
            std::time::SystemTime::now(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            std::process::id()
        ));
        let d = h.finalize();
        chunk.copy_from_slice(&d[..chunk.len()]);
    }
}
