//! SASL/PLAIN (RFC 4616) as Kafka's `PlainSaslServer` and `PlainServerCallbackHandler`
//! check it: `authzid \0 user \0 password`, the authzid empty or the user, the password
//! compared in constant time with the `user_<name>` entry of the listener's JAAS config.

use std::collections::BTreeMap;
use std::fmt;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The largest PLAIN token accepted (names and password of any sane length).
pub const MAX_PLAIN_TOKEN_BYTES: usize = 8 * 1024;

/// The users a PLAIN listener accepts, by name, with their passwords. Debug shows names
/// only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PlainUsers {
    users: BTreeMap<String, String>,
}

impl PlainUsers {
    pub fn new(users: impl IntoIterator<Item = (String, String)>) -> Self {
        PlainUsers {
            users: users.into_iter().collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// Whether `user` exists with `password`. An unknown user still costs a comparison, so
    /// the time taken does not tell which part was wrong.
    pub fn check(&self, user: &str, password: &str) -> bool {
        let (expected, known) = match self.users.get(user) {
            Some(p) => (p.as_bytes(), true),
            None => (password.as_bytes(), false),
        };
        // Digests first: equal lengths, so the comparison's time says nothing of the length.
        let same = bool::from(Sha256::digest(expected).ct_eq(&Sha256::digest(password.as_bytes())));
        known && same
    }
}

impl fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.users.keys()).finish()
    }
}

/// Why a PLAIN token was refused (logged at debug only; never with the password).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlainError(pub &'static str);

/// Checks a PLAIN token against `users`, answering the authenticated user.
pub fn authenticate(token: &[u8], users: &PlainUsers) -> Result<String, PlainError> {
    if token.len() > MAX_PLAIN_TOKEN_BYTES {
        return Err(PlainError("PLAIN token over the size limit"));
    }
    let text = std::str::from_utf8(token).map_err(|_| PlainError("PLAIN token is not UTF-8"))?;
    let parts: Vec<&str> = text.split('\0').collect();
    let [authzid, user, password] = parts[..] else {
        return Err(PlainError("PLAIN token does not hold three parts"));
    };
    if user.is_empty() {
        return Err(PlainError("no user name"));
    }
    if password.is_empty() {
        return Err(PlainError("no password"));
    }
    if !authzid.is_empty() && authzid != user {
        return Err(PlainError(
            "the authorization id differs from the user name",
        ));
    }
    if !users.check(user, password) {
        return Err(PlainError("invalid user name or password"));
    }
    Ok(user.to_string())
}

/// The token a client sends: no authzid, the user, the password.
pub fn client_token(user: &str, password: &str) -> Vec<u8> {
    format!("\0{user}\0{password}").into_bytes()
}
