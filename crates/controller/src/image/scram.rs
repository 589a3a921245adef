//! SCRAM credentials in the metadata image, as Kafka's `ScramImage`: for each user and
//! mechanism the salt, stored key, server key and iteration count. Never a password: the
//! image holds only what RFC 5802 lets a server keep, and `Debug` hides even that.

use std::fmt;

use bytes::Bytes;
use imbl::OrdMap;

/// All SCRAM credentials. Cheap to clone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScramImage {
    pub(crate) credentials: OrdMap<ScramCredentialKey, ScramCredential>,
}

/// Kafka's `ScramMechanism`, with its ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    ScramSha256 = 1,
    ScramSha512 = 2,
}

/// A user and a mechanism: a user may hold one credential per mechanism.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScramCredentialKey {
    pub user: String,
    pub mechanism: ScramMechanism,
}

/// What the server keeps of a SCRAM credential.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Bytes,
    pub stored_key: Bytes,
    pub server_key: Bytes,
    pub iterations: i32,
}

impl ScramImage {
    pub fn get(&self, user: &str, mechanism: ScramMechanism) -> Option<&ScramCredential> {
        self.credentials.get(&ScramCredentialKey {
            user: user.to_string(),
            mechanism,
        })
    }

    /// Credentials in (user, mechanism) order.
    pub fn iter(&self) -> impl Iterator<Item = (&ScramCredentialKey, &ScramCredential)> {
        self.credentials.iter()
    }
}

impl ScramMechanism {
    /// The mechanism a record's byte names; `None` for Kafka's UNKNOWN or any other value.
    pub fn from_i8(id: i8) -> Option<Self> {
        match id {
            1 => Some(ScramMechanism::ScramSha256),
            2 => Some(ScramMechanism::ScramSha512),
            _ => None,
        }
    }

    pub fn code(self) -> i8 {
        self as i8
    }

    /// Kafka's mechanism name, as SASL clients send it.
    pub fn mechanism_name(self) -> &'static str {
        match self {
            ScramMechanism::ScramSha256 => "SCRAM-SHA-256",
            ScramMechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

impl fmt::Debug for ScramCredential {
    // Keys and salt stay out of logs, as Kafka's ScramCredentialData.toString hides them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramCredential")
            .field("salt", &"[hidden]")
            .field("stored_key", &"[hidden]")
            .field("server_key", &"[hidden]")
            .field("iterations", &self.iterations)
            .finish()
    }
}
