//! TLS settings by Kafka's names, per listener (`listener.name.<listener>.ssl.*` over
//! `ssl.*`, the listener's name lowercased as Kafka writes the prefix), read and checked
//! when the configuration loads: every SSL listener the node serves gets a [`TlsServer`],
//! and the node's own connections to a controller or inter-broker listener that speaks TLS
//! get a [`TlsClient`] from that listener's settings (the node's keystore as its client
//! certificate when it has one, the truststore to verify the other nodes).
//!
//! Read: `ssl.keystore.type=PEM` with `ssl.keystore.location` (key and chain in one file)
//! or the inline `ssl.keystore.key` + `ssl.keystore.certificate.chain`; `ssl.key.password`
//! for an encrypted PKCS#8 key; `ssl.truststore.type=PEM` with `ssl.truststore.location` or
//! the inline `ssl.truststore.certificates`; `ssl.client.auth`; `ssl.enabled.protocols`
//! and `ssl.protocol` (TLSv1.2, TLSv1.3); `ssl.cipher.suites`;
//! `ssl.endpoint.identification.algorithm` (`https`, Kafka's default, or empty);
//! `ssl.principal.mapping.rules`. Kafka's own consistency rules for these (a store password
//! on a PEM store, a key without its chain, a location beside inline PEM) are kept; JKS and
//! PKCS12 stores, which kraftd does not read, are refused naming the setting. No secret is
//! ever printed.
//!
//! A broker's listener stores change live ([`TlsReconfigurer`], Kafka's `SslFactory` as a
//! `ListenerReconfigurable`): the keys of Kafka's `SslConfigs.RECONFIGURABLE_CONFIGS` set
//! for one listener of this broker through AlterConfigs are layered over the properties
//! file, the stores read again, checked as Kafka checks them, and swapped in for new
//! connections.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use kraftd_controller::publisher::Reconfigurable;
use kraftd_net::tls::subject_dn;
use kraftd_net::tls::{
    cipher_suite_names, parse_certificates, parse_private_key, serial_number,
    validate_reconfiguration, CertificateDer, ClientAuth, ReconfigurationChecks,
    SslPrincipalMapper, TlsClient, TlsClientSettings, TlsIdentity, TlsOptions, TlsServer,
    TlsServerSettings, TlsVersion,
};
use kraftd_net::SecurityProtocol;
use tracing::{error, info};

use crate::properties::Properties;

/// The TLS of the node's listeners and of its own connections, by listener name.
#[derive(Debug, Clone, Default)]
pub struct NodeTls {
    /// Each SSL or SASL_SSL listener this node serves.
    pub servers: BTreeMap<String, TlsServer>,
    /// The controller listener and the inter-broker listener, when they speak TLS.
    pub clients: BTreeMap<String, TlsClient>,
}

impl NodeTls {
    /// Reads and checks the TLS of the listeners this node serves (`(listener name,
    /// protocol)`, for the listeners its roles serve) and of the listeners its own clients
    /// connect to (the controller listener, on a broker the inter-broker listener); only
    /// those whose protocol speaks TLS get settings.
    pub fn load(
        props: &Properties,
        served: &[(String, SecurityProtocol)],
        clients: &[(String, SecurityProtocol)],
    ) -> Result<NodeTls> {
        let mut tls = NodeTls::default();
        for (listener, protocol) in served {
            if protocol.uses_tls() {
                tls.servers
                    .insert(listener.clone(), server(props, listener, *protocol)?);
            }
        }
        for (listener, protocol) in clients {
            if protocol.uses_tls() && !tls.clients.contains_key(listener) {
                let c = client(props, listener, *protocol)?;
                tls.clients.insert(listener.clone(), c);
            }
        }
        Ok(tls)
    }
}

/// One listener's view of the properties.
struct Settings<'a> {
    props: &'a Properties,
    listener: &'a str,
    prefix: String,
}

impl<'a> Settings<'a> {
    fn new(props: &'a Properties, listener: &'a str) -> Settings<'a> {
        Settings {
            props,
            listener,
            prefix: format!("listener.name.{}.", listener.to_lowercase()),
        }
    }

    /// `key`'s value for this listener, with the name it was set under.
    fn get(&self, key: &str) -> Option<(String, &'a str)> {
        let prefixed = format!("{}{key}", self.prefix);
        if let Some(v) = self.props.get(&prefixed) {
            return Some((prefixed, v));
        }
        self.props.get(key).map(|v| (key.to_string(), v))
    }

    /// `key` set only under this listener's prefix.
    fn get_prefixed(&self, key: &str) -> Option<(String, &'a str)> {
        let prefixed = format!("{}{key}", self.prefix);
        self.props.get(&prefixed).map(|v| (prefixed, v))
    }

    fn source(&self) -> String {
        self.props.source()
    }

    /// "invalid value ... for key in source: why" (for settings that are not secret).
    fn bad(&self, key: &str, value: &str, why: &str) -> anyhow::Error {
        anyhow!(
            "invalid value {:?} for {key} in {}: {why}",
            value.trim(),
            self.source()
        )
    }

    fn read_file(&self, key: &str, path: &str) -> Result<String> {
        std::fs::read_to_string(path.trim()).map_err(|e| {
            anyhow!(
                "cannot read {key}={:?} (in {}): {e}",
                path.trim(),
                self.source()
            )
        })
    }
}

/// `ssl.keystore.type` / `ssl.truststore.type` must say PEM when a store is given.
fn require_pem(s: &Settings<'_>, type_key: &str, what: &str) -> Result<()> {
    match s.get(type_key) {
        Some((_, v)) if v.trim().eq_ignore_ascii_case("PEM") => Ok(()),
        Some((k, v)) => Err(s.bad(
            &k,
            v,
            &format!("kraftd reads PEM {what} only (set {type_key}=PEM)"),
        )),
        None => bail!(
            "{type_key} is not set in {} for listener {}: Kafka's default JKS is not read by \
             kraftd; set {type_key}=PEM",
            s.source(),
            s.listener
        ),
    }
}

/// The keystore: the node's certificate chain and key, if one is configured.
fn keystore(s: &Settings<'_>) -> Result<Option<TlsIdentity>> {
    let location = s.get("ssl.keystore.location");
    let key = s.get("ssl.keystore.key");
    let chain = s.get("ssl.keystore.certificate.chain");
    let store_password = s.get("ssl.keystore.password");
    let key_password = s.get("ssl.key.password");
    let source = s.source();
    if location.is_none() && key.is_none() && chain.is_none() {
        if let Some((k, _)) = store_password {
            bail!("{k} is set in {source} but no keystore is");
        }
        return Ok(None);
    }
    require_pem(s, "ssl.keystore.type", "keystores")?;
    if let Some((k, _)) = store_password {
        bail!(
            "{k} is set in {source}: a PEM keystore takes no store password, only \
             ssl.key.password (as in Kafka)"
        );
    }
    let password = key_password.as_ref().map(|(_, v)| *v);
    let (chain, key) = match (location, key, chain) {
        (Some((lk, _)), Some((kk, _)), _) => {
            bail!("both {lk} and {kk} are set in {source}: give the keystore one way")
        }
        (_, Some((kk, _)), None) => {
            bail!("{kk} is set in {source} but ssl.keystore.certificate.chain is not")
        }
        (_, None, Some((ck, _))) => {
            bail!("{ck} is set in {source} but ssl.keystore.key is not")
        }
        (Some((lk, path)), None, None) => {
            let text = s.read_file(&lk, path)?;
            let pem = |e: String| {
                anyhow!(
                    "invalid PEM keystore {lk}={:?} (in {source}): {e}",
                    path.trim()
                )
            };
            (
                parse_certificates(&text).map_err(pem)?,
                parse_private_key(&text, password).map_err(pem)?,
            )
        }
        (None, Some((kk, key)), Some((ck, chain))) => (
            parse_certificates(chain)
                .map_err(|e| anyhow!("invalid PEM in {ck} (in {source}): {e}"))?,
            parse_private_key(key, password)
                .map_err(|e| anyhow!("invalid PEM in {kk} (in {source}): {e}"))?,
        ),
        (None, None, None) => return Ok(None),
    };
    Ok(Some(TlsIdentity { chain, key }))
}

/// The trusted CAs, if a truststore is configured.
fn truststore(s: &Settings<'_>) -> Result<Option<Vec<CertificateDer<'static>>>> {
    let location = s.get("ssl.truststore.location");
    let inline = s.get("ssl.truststore.certificates");
    let password = s.get("ssl.truststore.password");
    let source = s.source();
    if location.is_none() && inline.is_none() {
        if let Some((k, _)) = password {
            bail!("{k} is set in {source} but no truststore is");
        }
        return Ok(None);
    }
    require_pem(s, "ssl.truststore.type", "truststores")?;
    if let Some((k, _)) = password {
        bail!("{k} is set in {source}: a PEM truststore takes no password (as in Kafka)");
    }
    let certs = match (location, inline) {
        (Some((lk, _)), Some((ik, _))) => {
            bail!("both {lk} and {ik} are set in {source}: give the truststore one way")
        }
        (Some((lk, path)), None) => parse_certificates(&s.read_file(&lk, path)?).map_err(|e| {
            anyhow!(
                "invalid PEM truststore {lk}={:?} (in {source}): {e}",
                path.trim()
            )
        })?,
        (None, Some((ik, text))) => parse_certificates(text)
            .map_err(|e| anyhow!("invalid PEM in {ik} (in {source}): {e}"))?,
        (None, None) => return Ok(None),
    };
    Ok(Some(certs))
}

/// `ssl.enabled.protocols`, `ssl.protocol` and `ssl.cipher.suites`.
fn options(s: &Settings<'_>) -> Result<TlsOptions> {
    let mut enabled = Vec::new();
    match s.get("ssl.enabled.protocols") {
        None => enabled.extend(TlsVersion::ALL),
        Some((k, v)) => {
            for name in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let version = TlsVersion::from_name(name).ok_or_else(|| {
                    s.bad(
                        &k,
                        v,
                        &format!("protocol {name:?} is not spoken by kraftd (TLSv1.2, TLSv1.3)"),
                    )
                })?;
                if !enabled.contains(&version) {
                    enabled.push(version);
                }
            }
        }
    }
    // Java's SSLContext protocol caps the versions a context speaks.
    let highest = match s.get("ssl.protocol") {
        None => TlsVersion::Tls13,
        Some((k, v)) => match v.trim() {
            "TLSv1.3" | "TLS" => TlsVersion::Tls13,
            "TLSv1.2" => TlsVersion::Tls12,
            _ => return Err(s.bad(&k, v, "kraftd speaks TLSv1.2 and TLSv1.3 (or TLS)")),
        },
    };
    enabled.retain(|v| *v <= highest);
    if enabled.is_empty() {
        bail!(
            "no TLS protocol left for listener {} in {}: ssl.enabled.protocols and \
             ssl.protocol have no version in common",
            s.listener,
            s.source()
        );
    }
    let mut cipher_suites = Vec::new();
    if let Some((k, v)) = s.get("ssl.cipher.suites") {
        let known = cipher_suite_names();
        for name in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if !known.contains(&name) {
                return Err(s.bad(
                    &k,
                    v,
                    &format!(
                        "cipher suite {name:?} is not spoken by kraftd (it speaks {})",
                        known.join(", ")
                    ),
                ));
            }
            cipher_suites.push(name.to_string());
        }
    }
    Ok(TlsOptions {
        versions: enabled,
        cipher_suites,
    })
}

/// The TLS of the listener `name` (protocol `protocol`), served by this node.
pub fn server(props: &Properties, name: &str, protocol: SecurityProtocol) -> Result<TlsServer> {
    let s = Settings::new(props, name);
    let identity = keystore(&s)?.ok_or_else(|| {
        anyhow!(
            "listener {name} in {} is {protocol} but has no keystore: set \
             ssl.keystore.type=PEM and ssl.keystore.location (or ssl.keystore.key and \
             ssl.keystore.certificate.chain)",
            s.source()
        )
    })?;
    let trust = truststore(&s)?;
    // Kafka applies the unprefixed ssl.client.auth to SSL listeners only (KIP-684).
    let auth_setting = if protocol == SecurityProtocol::SaslSsl {
        s.get_prefixed("ssl.client.auth")
    } else {
        s.get("ssl.client.auth")
    };
    let client_auth = match &auth_setting {
        None => ClientAuth::None,
        Some((k, v)) => ClientAuth::from_name(v)
            .ok_or_else(|| s.bad(k, v, "expected none, requested or required"))?,
    };
    if client_auth != ClientAuth::None && trust.is_none() {
        let (k, v) = auth_setting.unwrap_or_default();
        return Err(s.bad(
            &k,
            v,
            "client certificates need a truststore to be verified against: set \
             ssl.truststore.type=PEM and ssl.truststore.location (or ssl.truststore.certificates)",
        ));
    }
    let principal_mapper = match s.get("ssl.principal.mapping.rules") {
        None => SslPrincipalMapper::default_rules(),
        Some((k, v)) => SslPrincipalMapper::parse(v).map_err(|e| s.bad(&k, v, &e))?,
    };
    TlsServer::new(TlsServerSettings {
        identity,
        trust: trust.unwrap_or_default(),
        client_auth,
        options: options(&s)?,
        principal_mapper,
    })
    .map_err(|e| anyhow!("listener {name} in {}: {e}", s.source()))
}

/// The TLS of this node's connections to the listener `name` of other nodes.
pub fn client(props: &Properties, name: &str, protocol: SecurityProtocol) -> Result<TlsClient> {
    let s = Settings::new(props, name);
    let identity = keystore(&s)?;
    let trust = truststore(&s)?.ok_or_else(|| {
        anyhow!(
            "listener {name} is {protocol} and this node connects to it, but no truststore is \
             set in {} to verify the other nodes with: set ssl.truststore.type=PEM and \
             ssl.truststore.location (or ssl.truststore.certificates)",
            s.source()
        )
    })?;
    let verify_host_name = match s.get("ssl.endpoint.identification.algorithm") {
        None => true,
        Some((_, v)) if v.trim().eq_ignore_ascii_case("https") => true,
        Some((_, v)) if v.trim().is_empty() => false,
        Some((k, v)) => {
            return Err(s.bad(
                &k,
                v,
                "expected https (verify the host name) or empty (do not)",
            ))
        }
    };
    TlsClient::new(TlsClientSettings {
        identity,
        trust,
        verify_host_name,
        options: options(&s)?,
    })
    .map_err(|e| anyhow!("connections to listener {name} (in {}): {e}", s.source()))
}

/// Kafka's `SslConfigs.RECONFIGURABLE_CONFIGS`: the settings of a listener's stores, which
/// a live broker takes for one listener (`listener.name.<l>.<key>`).
pub const RECONFIGURABLE_CONFIGS: [&str; 10] = [
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.truststore.certificates",
];

/// One TLS listener's stores on a live broker, reconfigured from its dynamic configs: the
/// listener's server (every connection accepted from now on) and, when this node connects
/// to that listener of other nodes, its client. Each reconfiguration starts again from the
/// properties file, so a deleted dynamic key gives the file's value back.
#[derive(Debug)]
pub struct TlsReconfigurer {
    props: Properties,
    listener: String,
    protocol: SecurityProtocol,
    server: TlsServer,
    client: Option<TlsClient>,
    /// The inter-broker listener: the other brokers hold the old stores
    /// (Kafka's `keystoreVerifiableUsingTruststore`).
    inter_broker: bool,
}

impl TlsReconfigurer {
    /// For the listener `listener` served with `server` (and reached with `client`), from
    /// the node's properties.
    pub fn new(
        props: &Properties,
        listener: &str,
        protocol: SecurityProtocol,
        server: TlsServer,
        client: Option<TlsClient>,
        inter_broker: bool,
    ) -> TlsReconfigurer {
        TlsReconfigurer {
            props: props.clone(),
            listener: listener.to_string(),
            protocol,
            server,
            client,
            inter_broker,
        }
    }

    /// The listener's stores under `configs`: `None` when they are what it serves with
    /// already (Kafka's `shouldBeRebuilt` false), else the new server and client, checked.
    fn build(
        &self,
        configs: &BTreeMap<String, String>,
    ) -> std::result::Result<Option<(TlsServer, Option<TlsClient>)>, String> {
        let prefix = format!("listener.name.{}.", self.listener.to_lowercase());
        let overrides: BTreeMap<String, String> = configs
            .iter()
            .filter(|(k, _)| {
                k.strip_prefix(&prefix)
                    .is_some_and(|base| RECONFIGURABLE_CONFIGS.contains(&base))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let props = self.props.layered(
            &overrides,
            format!("the dynamic configs of listener {}", self.listener),
        );
        let server = server(&props, &self.listener, self.protocol).map_err(|e| e.to_string())?;
        if server.same_stores(&self.server) {
            return Ok(None);
        }
        let flag = |key: &str| {
            props
                .get(key)
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        };
        validate_reconfiguration(
            &self.server,
            &server,
            ReconfigurationChecks {
                allow_dn_changes: flag("ssl.allow.dn.changes"),
                allow_san_changes: flag("ssl.allow.san.changes"),
                verify_with_truststores: self.inter_broker,
            },
        )?;
        let client = match &self.client {
            Some(_) => {
                Some(client(&props, &self.listener, self.protocol).map_err(|e| e.to_string())?)
            }
            None => None,
        };
        Ok(Some((server, client)))
    }
}

impl Reconfigurable for TlsReconfigurer {
    fn validate_reconfiguration(
        &self,
        configs: &BTreeMap<String, String>,
    ) -> std::result::Result<(), String> {
        self.build(configs).map(|_| ())
    }

    fn reconfigure(&self, configs: &BTreeMap<String, String>) {
        match self.build(configs) {
            Ok(None) => {}
            Ok(Some((server, client))) => {
                self.server.reconfigure(&server);
                if let (Some(current), Some(next)) = (&self.client, &client) {
                    current.reconfigure(next);
                }
                let cert = server.certificates().into_iter().next();
                info!(
                    listener = %self.listener,
                    subject = cert.as_ref().and_then(|c| subject_dn(c)).unwrap_or_default(),
                    serial = cert.as_ref().and_then(|c| serial_number(c)).unwrap_or_default(),
                    "listener's SSL stores reconfigured: new connections use them"
                );
            }
            Err(e) => error!(
                listener = %self.listener,
                error = %e,
                "listener's SSL stores not reconfigured; it keeps the ones it has"
            ),
        }
    }
}

#[cfg(test)]
mod tests;
