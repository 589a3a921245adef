//! Who is at the other end of a connection, and how its listener protects it: the
//! listener's security protocol (Kafka's `SecurityProtocol`), the principal its requests run
//! as (Kafka's `KafkaPrincipal`, `User:ANONYMOUS` until something authenticates the peer),
//! the [`Session`] every request carries to the handler (authorization, quotas, the
//! Envelope), and the [`ChannelMute`] through which a handler holds a connection's next
//! request back for a quota's throttle time.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

pub use crate::principal::KafkaPrincipal;

/// Kafka's `SecurityProtocol`: what a listener speaks under the Kafka protocol. The id is
/// what a BrokerRegistration's endpoint carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SecurityProtocol {
    #[default]
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    /// Kafka's name (`SASL_SSL`).
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Kafka's id (0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL).
    pub fn id(self) -> i16 {
        match self {
            SecurityProtocol::Plaintext => 0,
            SecurityProtocol::Ssl => 1,
            SecurityProtocol::SaslPlaintext => 2,
            SecurityProtocol::SaslSsl => 3,
        }
    }

    /// The protocol named `name` (case-insensitive, as Kafka's `forName`).
    pub fn from_name(name: &str) -> Option<SecurityProtocol> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    /// The protocol with Kafka's id `id`.
    pub fn from_id(id: i16) -> Option<SecurityProtocol> {
        Self::ALL.into_iter().find(|p| p.id() == id)
    }

    /// Whether connections are wrapped in TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether a client authenticates with SASL before anything but ApiVersions.
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How one listener is protected. The server applies it to every connection it accepts.
#[derive(Debug, Clone, Default)]
pub struct ListenerSecurity {
    /// The listener's name (`listeners`' `NAME://`), for logs and the session.
    pub listener_name: String,
    /// From `listener.security.protocol.map`.
    pub protocol: SecurityProtocol,
    /// The listener's TLS (SSL and SASL_SSL listeners; `None` serves plain TCP).
    pub tls: Option<super::tls::TlsServer>,
    /// How clients authenticate on a SASL listener (`None` on any other).
    pub sasl: Option<super::sasl::SaslServerConfig>,
}

impl ListenerSecurity {
    /// Plugs the node's SCRAM credentials into a SASL listener's settings.
    pub fn set_scram_credentials(
        &mut self,
        credentials: Arc<dyn super::sasl::ScramCredentialLookup>,
    ) {
        if let Some(sasl) = self.sasl.as_mut() {
            sasl.credentials = credentials;
        }
    }
}

/// How a node's own clients (Raft, the controller channel, the replica fetcher, the
/// coordinators' channels) connect to a listener of another node: the TLS and SASL settings
/// matching that listener's protocol. Default: PLAINTEXT.
#[derive(Debug, Clone, Default)]
pub struct ClientSecurity {
    /// The protocol of the listener connected to.
    pub protocol: SecurityProtocol,
    /// TLS towards that listener (SSL and SASL_SSL; `None` connects plain TCP).
    pub tls: Option<super::tls::TlsClient>,
    /// The login on a SASL listener (`None` on any other).
    pub sasl: Option<super::sasl::SaslClientConfig>,
}

/// What a request runs as: Kafka's `RequestContext` minus the header. Shared by every
/// request of a connection; a re-authentication (KIP-368) gives later requests a new one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Session {
    pub principal: KafkaPrincipal,
    pub listener_name: String,
    pub protocol: SecurityProtocol,
    /// What the client said it is in its ApiVersions request (v3+), Kafka's
    /// `ClientInformation`: client-metrics subscriptions match on it.
    pub client_information: ClientInformation,
}

/// A client's software name and version as its ApiVersions request (v3+) gives them;
/// `unknown` until then, as Kafka's `ClientInformation.EMPTY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInformation {
    pub software_name: String,
    pub software_version: String,
}

impl Default for ClientInformation {
    fn default() -> Self {
        ClientInformation {
            software_name: "unknown".into(),
            software_version: "unknown".into(),
        }
    }
}

impl ClientInformation {
    /// Kafka's `ApiVersionsRequest.isValid` for both fields: letters, digits, `-` and `.`,
    /// starting and ending with a letter or digit.
    pub fn is_valid(name: &str, version: &str) -> bool {
        use kraftd_protocol::api_versions::is_software_name_or_version as ok;
        ok(name) && ok(version)
    }
}

/// A connection's mute, shared by its reader and every request it hands out: a handler
/// that throttles a client (a quota) mutes the channel, and the reader reads nothing more
/// from it until the time is over, as Kafka's `SocketServer` mutes a throttled channel.
#[derive(Debug, Clone, Default)]
pub struct ChannelMute {
    until: Arc<Mutex<Option<Instant>>>,
}

impl ChannelMute {
    /// Reads nothing more from the connection for `duration` from now (a later end than
    /// one already set wins; an earlier one changes nothing).
    pub fn mute_for(&self, duration: Duration) {
        if duration.is_zero() {
            return;
        }
        let end = Instant::now() + duration;
        let mut until = self.until.lock().unwrap_or_else(|e| e.into_inner());
        if until.is_none_or(|u| u < end) {
            *until = Some(end);
        }
    }

    /// When the mute ends, if the channel is muted now.
    pub fn muted_until(&self) -> Option<Instant> {
        let until = *self.until.lock().unwrap_or_else(|e| e.into_inner());
        until.filter(|u| *u > Instant::now())
    }

    /// Waits out the mute, if any.
    pub async fn wait(&self) {
        while let Some(end) = self.muted_until() {
            tokio::time::sleep_until(end).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_round_trip_by_name_and_id() {
        for p in SecurityProtocol::ALL {
            assert_eq!(SecurityProtocol::from_name(p.name()), Some(p));
            assert_eq!(SecurityProtocol::from_id(p.id()), Some(p));
        }
        assert_eq!(
            SecurityProtocol::from_name("sasl_ssl"),
            Some(SecurityProtocol::SaslSsl)
        );
        assert_eq!(SecurityProtocol::from_name("TLS"), None);
    }

    #[test]
    fn principals_parse_and_print_as_kafka_writes_them() {
        let p = KafkaPrincipal::parse("User:CN=a,O=b:c").unwrap();
        assert_eq!(p.principal_type, "User");
        assert_eq!(p.name, "CN=a,O=b:c");
        assert_eq!(p.to_string(), "User:CN=a,O=b:c");
        assert_eq!(KafkaPrincipal::parse("nocolon"), None);
        assert_eq!(KafkaPrincipal::default().to_string(), "User:ANONYMOUS");
    }

    #[tokio::test]
    async fn a_mute_holds_the_reader_until_it_ends() {
        let mute = ChannelMute::default();
        assert!(mute.muted_until().is_none());
        let start = Instant::now();
        mute.mute_for(Duration::from_millis(300));
        mute.mute_for(Duration::from_millis(100));
        mute.wait().await;
        assert!(start.elapsed() >= Duration::from_millis(300));
        assert!(mute.muted_until().is_none());
    }
}
