//! The console's login on a cluster with an authorizer: the user signs in with a SASL
//! username and password (SCRAM-SHA-256/512, or PLAIN where the listener enables it), and
//! sees only what that principal may DESCRIBE, as the node's StandardAuthorizer decides.
//!
//! How a login is checked: the console connects to this broker's SASL listener as the user,
//! exactly as a Kafka client would — SaslHandshake, SaslAuthenticate, ApiVersions. The broker
//! decides, against the SCRAM credentials in the metadata (or PLAIN's JAAS users), so the
//! console holds no password store of its own and cannot disagree with the cluster. The
//! session then keeps that authenticated client: the group and offset pages ask the brokers
//! as the user, and the brokers filter them as they would `kafka-consumer-groups`; what the
//! console reads from the node's own metadata image (topics, partition counts) is filtered
//! here with the same authorizer, DESCRIBE on each topic; cluster-wide views (the quorum, the
//! doctor's findings, request rates, health counts over all topics) need DESCRIBE on the
//! cluster, as DescribeQuorum does.
//!
//! Sessions: a random 256-bit token in an `HttpOnly`, `SameSite=Strict` cookie; they end on
//! logout, after [`IDLE_TIMEOUT`] unused or [`MAX_AGE`] whatever, and the oldest goes when
//! [`MAX_SESSIONS`] are open. The password is kept in memory for the session's lifetime only
//! (its client reconnects with it when a broker restarts), never written anywhere.
//! Mutual-TLS identities are not taken: the HTTP listener speaks plain HTTP.
//!
//! Brute-force guard ([`LoginGuard`]): a login counts as a failure from the moment it is
//! tried until the broker accepts it, so attempts in flight count too. When one client
//! address, or one username whatever the address, has [`MAX_FAILURES`] failures within
//! [`FAILURE_WINDOW`], further logins from it (or for it) are answered `429 Too Many
//! Requests` with `Retry-After` (the seconds until the oldest of those failures leaves the
//! window) without asking the broker, even with the right password. A successful login is
//! no failure and clears its username's earlier ones, not its address's (one valid account
//! must not reset an address's count). The per-username rule stops a guess spread over many addresses, at the
//! price that such a guess keeps the user out for the window too.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kraftd_controller::auth::{AuthHelper, RequestAuth};
use kraftd_net::sasl::{SaslClientConfig, SaslMechanism};
use kraftd_net::ClientSecurity;
use kraftd_net::KafkaPrincipal;

use super::client::KafkaAccess;
use crate::metadata_quorum::{self, api_versions};

/// The cookie holding a session's token.
pub const COOKIE: &str = "kraftd_console";
/// A session unused this long ends.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// A session ends this long after login, used or not.
pub const MAX_AGE: Duration = Duration::from_secs(8 * 60 * 60);
/// Open sessions at most; a login past it ends the oldest.
pub const MAX_SESSIONS: usize = 256;

/// Failed logins from one address, or for one username, within [`FAILURE_WINDOW`] after
/// which logins are refused (429) until the oldest leaves the window.
pub const MAX_FAILURES: usize = 5;
/// The window [`MAX_FAILURES`] counts over.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Addresses and usernames with recent failures tracked at most; past it the one whose
/// latest failure is oldest is forgotten (memory stays bounded under a spray of addresses).
pub const MAX_TRACKED: usize = 10_000;

/// Where logins go: a SASL listener of this broker.
#[derive(Clone)]
pub struct LoginConfig {
    /// The listener's name (its endpoints in the image are where the user's client goes).
    pub listener: String,
    /// `host:port` of this node on it.
    pub address: String,
    /// The listener's protocol and TLS, without a login (the user's is added).
    pub security: ClientSecurity,
    /// The mechanisms it enables that take a username and password, SCRAM first.
    pub mechanisms: Vec<SaslMechanism>,
    /// The node's authorizer.
    pub auth: AuthHelper,
}

/// One signed-in user.
pub struct Session {
    pub principal: KafkaPrincipal,
    /// A client of the brokers logged in as the user.
    pub access: Arc<KafkaAccess>,
    /// The user's own hanging-transaction scan (what it may describe is its own).
    pub hanging: tokio::sync::Mutex<super::transactions::HangingScan>,
    created: Instant,
    last_used: Mutex<Instant>,
}

impl Session {
    /// The authorizer's checks for this user connected from `peer` (the browser's address,
    /// as a broker would see the user's own client).
    pub fn auth(&self, helper: &AuthHelper, peer: IpAddr) -> RequestAuth {
        helper.request(&self.principal, peer)
    }
}

/// Why a login failed, in one line for the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginError {
    Missing,
    /// The mechanism asked for, and those the listener enables.
    Mechanism(String, String),
    /// The broker's reason.
    Refused(String),
}

impl std::fmt::Display for LoginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoginError::Missing => f.write_str("username and password are required"),
            LoginError::Mechanism(asked, enabled) => write!(
                f,
                "{asked} is not a mechanism this listener enables for a console login \
                 (it enables {enabled})"
            ),
            LoginError::Refused(reason) => write!(f, "login failed: {reason}"),
        }
    }
}

/// Recent login failures by client address and by username (see the module's doc).
/// Time comes in as an argument, so the rule is tested without waiting.
#[derive(Default)]
pub struct LoginGuard {
    failures: Mutex<GuardState>,
}

#[derive(Default)]
struct GuardState {
    by_address: HashMap<IpAddr, VecDeque<Instant>>,
    by_user: HashMap<String, VecDeque<Instant>>,
}

/// A login admitted by [`LoginGuard::admit`], counted as a failure until
/// [`LoginGuard::succeeded`].
#[derive(Debug)]
pub struct Attempt {
    address: IpAddr,
    user: String,
    at: Instant,
}

impl LoginGuard {
    /// Counts a login from `address` for `user` as a failure and admits it, or refuses it
    /// with the time until one of the failures it is over the limit by leaves the window.
    pub fn admit(&self, address: IpAddr, user: &str, now: Instant) -> Result<Attempt, Duration> {
        let mut state = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let wait = [
            state
                .by_address
                .get_mut(&address)
                .and_then(|f| over(f, now)),
            state.by_user.get_mut(user).and_then(|f| over(f, now)),
        ]
        .into_iter()
        .flatten()
        .max();
        if let Some(wait) = wait {
            return Err(wait);
        }
        state.by_address.entry(address).or_default().push_back(now);
        state
            .by_user
            .entry(user.to_string())
            .or_default()
            .push_back(now);
        forget_past(&mut state.by_address, now);
        forget_past(&mut state.by_user, now);
        Ok(Attempt {
            address,
            user: user.to_string(),
            at: now,
        })
    }

    /// The broker accepted `attempt`: it is no failure, and its username's earlier ones
    /// are cleared.
    pub fn succeeded(&self, attempt: Attempt) {
        let mut state = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        state.by_user.remove(&attempt.user);
        if let Some(failures) = state.by_address.get_mut(&attempt.address) {
            if let Some(i) = failures.iter().position(|t| *t == attempt.at) {
                failures.remove(i);
            }
        }
    }
}

/// Drops `failures` older than the window; how long until a login is admitted again when
/// [`MAX_FAILURES`] remain.
fn over(failures: &mut VecDeque<Instant>, now: Instant) -> Option<Duration> {
    while failures
        .front()
        .is_some_and(|t| now.duration_since(*t) >= FAILURE_WINDOW)
    {
        failures.pop_front();
    }
    let oldest = failures
        .len()
        .checked_sub(MAX_FAILURES)
        .map(|i| failures[i])?;
    Some(FAILURE_WINDOW - now.duration_since(oldest))
}

/// Keeps `map` to [`MAX_TRACKED`] keys: those with no failure in the window go first, then
/// the ones whose latest failure is oldest.
fn forget_past<K: Clone + Eq + std::hash::Hash>(
    map: &mut HashMap<K, VecDeque<Instant>>,
    now: Instant,
) {
    if map.len() <= MAX_TRACKED {
        return;
    }
    map.retain(|_, f| {
        f.back()
            .is_some_and(|t| now.duration_since(*t) < FAILURE_WINDOW)
    });
    while map.len() > MAX_TRACKED {
        let Some(stalest) = map
            .iter()
            .min_by_key(|(_, f)| f.back().copied())
            .map(|(k, _)| k.clone())
        else {
            break;
        };
        map.remove(&stalest);
    }
}

/// The open sessions, by token.
#[derive(Default)]
pub struct Sessions {
    by_token: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    /// The session of `token`, if open; using it keeps it open.
    pub fn get(&self, token: &str) -> Option<Arc<Session>> {
        let mut sessions = self.by_token.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        sessions.retain(|_, s| !expired(s, now));
        let session = sessions.get(token)?;
        *session.last_used.lock().unwrap_or_else(|e| e.into_inner()) = now;
        Some(Arc::clone(session))
    }

    /// Ends the session of `token`.
    pub fn remove(&self, token: &str) {
        self.by_token
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(token);
    }

    /// Checks `username`/`password` by logging in to the broker's SASL listener with
    /// `mechanism` (the listener's first when empty); the new session's token.
    pub async fn login(
        &self,
        config: &LoginConfig,
        username: &str,
        password: &str,
        mechanism: &str,
    ) -> Result<String, LoginError> {
        if username.is_empty() || password.is_empty() {
            return Err(LoginError::Missing);
        }
        let enabled = || {
            config
                .mechanisms
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mechanism = if mechanism.is_empty() {
            *config
                .mechanisms
                .first()
                .ok_or_else(|| LoginError::Mechanism(String::new(), enabled()))?
        } else {
            SaslMechanism::from_name(mechanism)
                .filter(|m| config.mechanisms.contains(m))
                .ok_or_else(|| LoginError::Mechanism(mechanism.to_string(), enabled()))?
        };
        let security = ClientSecurity {
            sasl: Some(SaslClientConfig {
                mechanism,
                username: username.to_string(),
                password: password.to_string(),
            }),
            ..config.security.clone()
        };
        // The broker decides: a handshake and an ApiVersions as the user.
        let channel = metadata_quorum::channel(&config.address, &security);
        if let Err(e) = api_versions(&channel).await {
            tracing::info!(username, %mechanism, "console login refused: {e:#}");
            return Err(LoginError::Refused(refusal(&format!("{e:#}"))));
        }
        let session = Arc::new(Session {
            principal: KafkaPrincipal::user(username),
            access: Arc::new(KafkaAccess::new(config.listener.clone(), security)),
            hanging: Default::default(),
            created: Instant::now(),
            last_used: Mutex::new(Instant::now()),
        });
        let token = new_token();
        let mut sessions = self.by_token.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        sessions.retain(|_, s| !expired(s, now));
        while sessions.len() >= MAX_SESSIONS {
            let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.created)
                .map(|(t, _)| t.clone())
            else {
                break;
            };
            sessions.remove(&oldest);
        }
        sessions.insert(token.clone(), session);
        tracing::info!(username, %mechanism, "console login");
        Ok(token)
    }
}

fn expired(s: &Session, now: Instant) -> bool {
    let last = *s.last_used.lock().unwrap_or_else(|e| e.into_inner());
    now.duration_since(last) > IDLE_TIMEOUT || now.duration_since(s.created) > MAX_AGE
}

/// The broker's reason, without the channel's address prefix.
fn refusal(error: &str) -> String {
    error
        .split_once(": ")
        .map_or(error, |(_, rest)| rest)
        .trim()
        .to_string()
}

/// 32 random bytes, hex.
fn new_token() -> String {
    let mut bytes = [0u8; 32];
    kraftd_net::sasl::random_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The value of cookie `name` in a `Cookie:` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header
        .split(';')
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// `application/x-www-form-urlencoded` fields (`+` as space, `%XX` decoded).
pub fn form_fields(body: &str) -> HashMap<String, String> {
    body.split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| {
            let decode = |s: &str| super::percent_decode(&s.replace('+', " "));
            (decode(k), decode(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_and_form_fields_parse_as_browsers_send_them() {
        let h = "a=1; kraftd_console=abc123; b=2";
        assert_eq!(cookie(h, COOKIE), Some("abc123"));
        assert_eq!(cookie("x=1", COOKIE), None);
        let f = form_fields("username=al%20ice&password=p%26ss+word&mechanism=SCRAM-SHA-512");
        assert_eq!(f["username"], "al ice");
        assert_eq!(f["password"], "p&ss word");
        assert_eq!(f["mechanism"], "SCRAM-SHA-512");
    }

    #[test]
    fn failed_logins_past_the_limit_are_refused_until_the_oldest_leaves_the_window() {
        let guard = LoginGuard::default();
        let t0 = Instant::now();
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let second = Duration::from_secs(1);
        // Five failures from one address, a second apart: the sixth is refused until the
        // first is a window old, for any user.
        for i in 0..MAX_FAILURES as u32 {
            guard.admit(a, &format!("u{i}"), t0 + second * i).unwrap();
        }
        let now = t0 + second * 10;
        assert_eq!(
            guard.admit(a, "other", now).unwrap_err(),
            FAILURE_WINDOW - second * 10
        );
        // Another address is not held back by it.
        guard.admit(b, "other", now).unwrap();
        // A window after the first failure, one more is admitted, and then none again.
        let later = t0 + FAILURE_WINDOW;
        guard.admit(a, "other2", later).unwrap();
        assert_eq!(guard.admit(a, "other3", later).unwrap_err(), second);

        // One username from many addresses: refused after the limit, even from a new one.
        let guard = LoginGuard::default();
        for i in 0..MAX_FAILURES as u8 {
            guard
                .admit(IpAddr::from([10, 1, 0, i]), "alice", t0)
                .unwrap();
        }
        assert_eq!(
            guard
                .admit(IpAddr::from([10, 2, 0, 0]), "alice", t0)
                .unwrap_err(),
            FAILURE_WINDOW
        );
        guard.admit(IpAddr::from([10, 2, 0, 0]), "bob", t0).unwrap();
    }

    #[test]
    fn a_success_clears_its_users_failures_not_its_addresss() {
        let guard = LoginGuard::default();
        let t0 = Instant::now();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..MAX_FAILURES - 1 {
            guard.admit(a, "alice", t0).unwrap();
        }
        let attempt = guard.admit(a, "alice", t0).unwrap();
        guard.succeeded(attempt);
        // alice may log in again from elsewhere; the address keeps its four failures (the
        // success itself is none), so one more fails it.
        guard
            .admit("10.0.0.9".parse().unwrap(), "alice", t0)
            .unwrap();
        guard.admit(a, "bob", t0).unwrap();
        assert!(guard.admit(a, "carol", t0).is_err());
    }

    #[test]
    fn the_tracked_keys_stay_bounded() {
        let guard = LoginGuard::default();
        let t0 = Instant::now();
        for i in 0..(MAX_TRACKED + 10) as u32 {
            let at = t0 + Duration::from_millis(u64::from(i));
            let _ = guard.admit(IpAddr::from(i.to_be_bytes()), &format!("u{i}"), at);
        }
        let state = guard.failures.lock().unwrap();
        assert_eq!(state.by_address.len(), MAX_TRACKED);
        assert_eq!(state.by_user.len(), MAX_TRACKED);
    }

    #[test]
    fn tokens_are_256_bits_and_do_not_repeat() {
        let (a, b) = (new_token(), new_token());
        assert_eq!(a.len(), 64);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn a_refusal_keeps_the_brokers_reason() {
        assert_eq!(
            refusal("localhost:9092: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"),
            "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
        );
    }
}
