//! Kafka's `KafkaPrincipal`: who a connection's requests run as. A leaf of its own, so the
//! TLS and SASL code that establishes a principal and the [`security`](crate::security) of a
//! listener that holds one each depend on it, not on each other.

use std::fmt;

/// Kafka's `KafkaPrincipal`: a type (`User`) and a name. ACLs, `super.users` and quotas
/// name principals as `Type:name`. Equality, order and hash look at the type and name only,
/// as Kafka's `equals` does: a token-authenticated owner matches the owner's ACLs.
#[derive(Debug, Clone)]
pub struct KafkaPrincipal {
    pub principal_type: String,
    pub name: String,
    /// Kafka's `tokenAuthenticated`: the connection logged in with a delegation token (SCRAM
    /// with `tokenauth=true`) and runs as the token's owner. Such a session may not create,
    /// renew, expire or describe tokens.
    pub token_authenticated: bool,
}

impl PartialEq for KafkaPrincipal {
    fn eq(&self, other: &Self) -> bool {
        self.principal_type == other.principal_type && self.name == other.name
    }
}

impl Eq for KafkaPrincipal {}

impl std::hash::Hash for KafkaPrincipal {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.principal_type.hash(state);
        self.name.hash(state);
    }
}

impl PartialOrd for KafkaPrincipal {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for KafkaPrincipal {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.principal_type, &self.name).cmp(&(&other.principal_type, &other.name))
    }
}

impl KafkaPrincipal {
    /// Kafka's `KafkaPrincipal.USER_TYPE`.
    pub const USER_TYPE: &'static str = "User";

    /// `User:<name>`.
    pub fn user(name: impl Into<String>) -> KafkaPrincipal {
        KafkaPrincipal {
            principal_type: Self::USER_TYPE.to_string(),
            name: name.into(),
            token_authenticated: false,
        }
    }

    /// `User:ANONYMOUS`: a connection nothing authenticated (PLAINTEXT, or SSL without a
    /// client certificate), as Kafka's `KafkaPrincipal.ANONYMOUS`.
    pub fn anonymous() -> KafkaPrincipal {
        Self::user("ANONYMOUS")
    }

    /// `Type:name` (the name may itself contain colons).
    pub fn parse(s: &str) -> Option<KafkaPrincipal> {
        let (principal_type, name) = s.split_once(':')?;
        if principal_type.is_empty() {
            return None;
        }
        Some(KafkaPrincipal {
            principal_type: principal_type.to_string(),
            name: name.to_string(),
            token_authenticated: false,
        })
    }
}

impl Default for KafkaPrincipal {
    fn default() -> Self {
        Self::anonymous()
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}
