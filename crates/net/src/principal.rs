//! Kafka's `KafkaPrincipal`: who a connection's requests run as. A leaf of its own, so the
//! TLS and SASL code that establishes a principal and the [`security`](crate::security) of a
//! listener that holds one each depend on it, not on each other.

use std::fmt;

/// Kafka's `KafkaPrincipal`: a type (`User`) and a name. ACLs, `super.users` and quotas
/// name principals as `Type:name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaPrincipal {
    pub principal_type: String,
    pub name: String,
}

impl KafkaPrincipal {
    /// Kafka's `KafkaPrincipal.USER_TYPE`.
    pub const USER_TYPE: &'static str = "User";

    /// `User:<name>`.
    pub fn user(name: impl Into<String>) -> KafkaPrincipal {
        KafkaPrincipal {
            principal_type: Self::USER_TYPE.to_string(),
            name: name.into(),
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
