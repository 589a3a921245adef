//! SASL settings from Kafka's property names, checked when the config loads so a node that
//! would serve or log in with something kraftd does not do refuses to start with one line:
//!
//! - a SASL listener's mechanisms: `listener.name.<l>.sasl.enabled.mechanisms` over
//!   `sasl.enabled.mechanisms` (Kafka's default GSSAPI, which kraftd refuses, as it refuses
//!   OAUTHBEARER and any unknown name);
//! - its PLAIN users: the `user_<name>="<password>"` options of the JAAS config
//!   `listener.name.<l>.plain.sasl.jaas.config` (falling back to `sasl.jaas.config`);
//! - its session lifetime: `connections.max.reauth.ms`, listener- and mechanism-prefixed
//!   first (KIP-368), `connection.failed.authentication.delay.ms` (KIP-306) and
//!   `sasl.server.max.receive.size`;
//! - the node's own logins to the controller listener (`sasl.mechanism.controller.protocol`)
//!   and the inter-broker listener (`sasl.mechanism.inter.broker.protocol`), with the
//!   `username` and `password` of that listener's JAAS config for the mechanism, as Kafka's
//!   broker logs in as its own client.
//!
//! The SCRAM credentials are not configured here: the node plugs its live
//! `CredentialProvider` into each SASL listener when it starts.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use kraftd_net::sasl::{PlainUsers, SaslClientConfig, SaslMechanism, SaslServerConfig};
use kraftd_net::SecurityProtocol;

use crate::properties::Properties;

/// Kafka's `sasl.enabled.mechanisms`, `sasl.mechanism.controller.protocol` and
/// `sasl.mechanism.inter.broker.protocol` default.
const KAFKA_DEFAULT_MECHANISM: &str = "GSSAPI";
/// Mechanisms Kafka has and kraftd does not.
const UNSUPPORTED: [&str; 2] = ["GSSAPI", "OAUTHBEARER"];
const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// The SASL settings of a node, by listener name.
#[derive(Debug, Clone, Default)]
pub struct SaslSettings {
    /// How each SASL listener this node serves authenticates its clients.
    pub servers: BTreeMap<String, SaslServerConfig>,
    /// How the node's own clients log in to a SASL listener of other nodes.
    pub clients: BTreeMap<String, SaslClientConfig>,
}

/// Kafka's `ListenerName.configPrefix`: `listener.name.<lowercase name>.`.
fn listener_prefix(listener: &str) -> String {
    format!("listener.name.{}.", listener.to_lowercase())
}

/// The first of `keys` that is set, with its key.
fn first_set<'a>(props: &'a Properties, keys: &[String]) -> Option<(String, &'a str)> {
    keys.iter()
        .find_map(|k| props.get(k).map(|v| (k.clone(), v)))
}

impl SaslSettings {
    /// Reads and checks the settings of `listeners` (name, protocol) this node serves and of
    /// the listeners its clients log in to (`(listener name, mechanism key)`).
    pub fn load(
        props: &Properties,
        served: &[(String, SecurityProtocol)],
        logins: &[(String, SecurityProtocol, &'static str)],
    ) -> Result<SaslSettings> {
        let mut settings = SaslSettings::default();
        for (listener, protocol) in served {
            if protocol.uses_sasl() {
                settings
                    .servers
                    .insert(listener.clone(), server_config(props, listener)?);
            }
        }
        for (listener, protocol, key) in logins {
            if protocol.uses_sasl() && !settings.clients.contains_key(listener) {
                settings
                    .clients
                    .insert(listener.clone(), client_config(props, listener, key)?);
            }
        }
        Ok(settings)
    }
}

/// A mechanism name from `key`, refused with one line if kraftd does not serve it.
fn mechanism(props: &Properties, key: &str, raw: &str, listener: &str) -> Result<SaslMechanism> {
    let name = raw.trim();
    if let Some(m) = SaslMechanism::from_name(name) {
        return Ok(m);
    }
    let why = if UNSUPPORTED.contains(&name) {
        format!("kraftd does not support SASL mechanism {name}")
    } else {
        format!("unknown SASL mechanism {name:?}")
    };
    bail!(
        "invalid value {raw:?} for {key} in {} (listener {listener}): {why}; use PLAIN, \
         SCRAM-SHA-256 or SCRAM-SHA-512",
        props.source()
    )
}

fn server_config(props: &Properties, listener: &str) -> Result<SaslServerConfig> {
    let prefix = listener_prefix(listener);
    let source = props.source();
    let (key, raw) = first_set(
        props,
        &[
            format!("{prefix}sasl.enabled.mechanisms"),
            "sasl.enabled.mechanisms".to_string(),
        ],
    )
    .unwrap_or(("sasl.enabled.mechanisms".into(), KAFKA_DEFAULT_MECHANISM));
    let mut mechanisms = Vec::new();
    for name in raw.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let m = mechanism(props, &key, name, listener)?;
        if !mechanisms.contains(&m) {
            mechanisms.push(m);
        }
    }
    if mechanisms.is_empty() {
        bail!("{key} in {source} enables no SASL mechanism for listener {listener}");
    }
    let mut config = SaslServerConfig::new(mechanisms.clone());
    if mechanisms.contains(&SaslMechanism::Plain) {
        let (jaas_key, jaas) =
            jaas_config(props, listener, SaslMechanism::Plain)?.ok_or_else(|| {
                anyhow!(
                "listener {listener} enables PLAIN but {prefix}plain.sasl.jaas.config is not set \
                 in {source} (it names the users: user_<name>=\"<password>\")"
            )
            })?;
        if jaas.login_module != PLAIN_LOGIN_MODULE {
            bail!(
                "{jaas_key} in {source} uses login module {}, but PLAIN needs {PLAIN_LOGIN_MODULE}",
                jaas.login_module
            );
        }
        config.plain_users =
            Arc::new(PlainUsers::new(jaas.options.iter().filter_map(|(k, v)| {
                k.strip_prefix("user_").map(|u| (u.to_string(), v.clone()))
            })));
    }
    let receive_keys = [
        format!("{prefix}sasl.server.max.receive.size"),
        "sasl.server.max.receive.size".to_string(),
    ];
    if let Some((key, raw)) = first_set(props, &receive_keys) {
        config.max_receive_size = raw
            .trim()
            .parse()
            .ok()
            .filter(|n: &usize| *n > 0)
            .ok_or_else(|| {
                anyhow!("invalid value {raw:?} for {key} in {source}: expected a positive number of bytes")
            })?;
    }
    if let Some(raw) = props.get("connection.failed.authentication.delay.ms") {
        let ms: u64 = raw.trim().parse().map_err(|_| {
            anyhow!(
                "invalid value {raw:?} for connection.failed.authentication.delay.ms in {source}: \
                 expected a number of ms"
            )
        })?;
        config.failed_authentication_delay = Duration::from_millis(ms);
    }
    for m in mechanisms {
        let lower = m.name().to_lowercase();
        let keys = [
            format!("{prefix}{lower}.connections.max.reauth.ms"),
            format!("{prefix}connections.max.reauth.ms"),
            "connections.max.reauth.ms".to_string(),
        ];
        if let Some((key, raw)) = first_set(props, &keys) {
            let ms: u64 = raw.trim().parse().map_err(|_| {
                anyhow!("invalid value {raw:?} for {key} in {source}: expected a number of ms")
            })?;
            if ms > 0 {
                config.max_reauth.insert(m, Duration::from_millis(ms));
            }
        }
    }
    Ok(config)
}

/// The JAAS config a listener's `mechanism` uses: `listener.name.<l>.<mech>.sasl.jaas.config`,
/// else `sasl.jaas.config`; with the key it came from.
fn jaas_config(
    props: &Properties,
    listener: &str,
    mechanism: SaslMechanism,
) -> Result<Option<(String, JaasConfig)>> {
    let keys = [
        format!(
            "{}{}.sasl.jaas.config",
            listener_prefix(listener),
            mechanism.name().to_lowercase()
        ),
        "sasl.jaas.config".to_string(),
    ];
    let Some((key, raw)) = first_set(props, &keys) else {
        return Ok(None);
    };
    // The value is a secret: the error names the key, never the text.
    let jaas = parse_jaas(raw).map_err(|why| {
        anyhow!(
            "invalid value [hidden] for {key} in {}: {why}",
            props.source()
        )
    })?;
    Ok(Some((key, jaas)))
}

/// A login to the SASL listener `listener` with the mechanism the property `key` names
/// (Kafka's default GSSAPI, refused, when unset), from that listener's JAAS config or
/// `sasl.jaas.config`.
pub(crate) fn client_config(
    props: &Properties,
    listener: &str,
    key: &str,
) -> Result<SaslClientConfig> {
    let source = props.source();
    let raw = props.get(key).unwrap_or(KAFKA_DEFAULT_MECHANISM);
    let m = mechanism(props, key, raw, listener)?;
    let lower = m.name().to_lowercase();
    let (jaas_key, jaas) = jaas_config(props, listener, m)?.ok_or_else(|| {
        anyhow!(
            "listener {listener} is SASL and this node logs in to it with {m} ({key}), but \
             {}{lower}.sasl.jaas.config is not set in {source} (username=\"...\" password=\"...\")",
            listener_prefix(listener)
        )
    })?;
    let module = if m == SaslMechanism::Plain {
        PLAIN_LOGIN_MODULE
    } else {
        SCRAM_LOGIN_MODULE
    };
    if jaas.login_module != module {
        bail!(
            "{jaas_key} in {source} uses login module {}, but {m} needs {module}",
            jaas.login_module
        );
    }
    let option = |name: &str| {
        jaas.options.get(name).cloned().ok_or_else(|| {
            anyhow!("{jaas_key} in {source} has no {name} option for this node's own {m} login")
        })
    };
    Ok(SaslClientConfig {
        mechanism: m,
        username: option("username")?,
        password: option("password")?,
    })
}

/// One JAAS login module entry, as Kafka's `JaasConfig` parses `sasl.jaas.config`:
/// `<class> <flag> key=value ... ;`.
#[derive(Clone, PartialEq, Eq)]
pub struct JaasConfig {
    pub login_module: String,
    pub flag: String,
    pub options: BTreeMap<String, String>,
}

impl fmt::Debug for JaasConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JaasConfig")
            .field("login_module", &self.login_module)
            .field("flag", &self.flag)
            .field("options", &self.options.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Quoted(String),
    Char(char),
}

/// Splits JAAS text as Java's `StreamTokenizer` does for Kafka: words, `"quoted"` strings
/// with backslash escapes, `//` and `/* */` comments, single characters (`=`, `;`).
fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                loop {
                    match chars.next() {
                        Some('/') if last == '*' => break,
                        Some(c) => last = c,
                        None => return Err("unterminated /* comment".into()),
                    }
                }
            }
            '"' => {
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some('n') => s.push('\n'),
                            Some('t') => s.push('\t'),
                            Some('r') => s.push('\r'),
                            Some(c) => s.push(c),
                            None => return Err("unterminated quoted value".into()),
                        },
                        Some(c) => s.push(c),
                        None => return Err("unterminated quoted value".into()),
                    }
                }
                out.push(Token::Quoted(s));
            }
            '=' | ';' => out.push(Token::Char(c)),
            c => {
                let mut s = c.to_string();
                while let Some(&n) = chars.peek() {
                    if n.is_whitespace() || matches!(n, '=' | ';' | '"') {
                        break;
                    }
                    s.push(n);
                    chars.next();
                }
                out.push(Token::Word(s));
            }
        }
    }
    Ok(out)
}

/// Parses a `sasl.jaas.config` value: exactly one login module, as Kafka requires. Errors
/// never quote a value (they may be passwords).
pub fn parse_jaas(text: &str) -> Result<JaasConfig, String> {
    let mut tokens = tokens(text)?.into_iter();
    let Some(Token::Word(login_module)) = tokens.next() else {
        return Err("expected a login module class".into());
    };
    let flag = match tokens.next() {
        Some(Token::Word(f))
            if ["required", "requisite", "sufficient", "optional"]
                .contains(&f.to_lowercase().as_str()) =>
        {
            f
        }
        _ => {
            return Err(format!(
                "expected a control flag (required, requisite, sufficient, optional) after {login_module}"
            ))
        }
    };
    let mut options = BTreeMap::new();
    loop {
        let key = match tokens.next() {
            Some(Token::Char(';')) => break,
            Some(Token::Word(k)) => k,
            _ => return Err("expected an option name or ';' ending the login module".into()),
        };
        if tokens.next() != Some(Token::Char('=')) {
            return Err(format!("expected '=' after option {key}"));
        }
        let value = match tokens.next() {
            Some(Token::Word(v) | Token::Quoted(v)) => v,
            _ => return Err(format!("no value for option {key}")),
        };
        options.insert(key, value);
    }
    if tokens.next().is_some() {
        return Err("more than one login module: Kafka takes exactly one".into());
    }
    Ok(JaasConfig {
        login_module,
        flag,
        options,
    })
}

#[cfg(test)]
mod tests;
