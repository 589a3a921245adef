//! The rules around the security configs ([`super::security_configs`]) that a lookup by
//! name cannot express, as Kafka's `DynamicBrokerConfig` and channel builders apply them:
//!
//! - listener prefixes: `listener.name.<listener>.<config>` sets a listener's own TLS or SASL
//!   setting, and `listener.name.<listener>.<mechanism>.<config>` one SASL mechanism's
//!   (`sasl.jaas.config` and the other `ListenerMechanismConfigs`) — [`listener_key`];
//! - update modes: a read-only config cannot change dynamically, a keystore or truststore
//!   setting only with a listener prefix, a per-broker one not as the cluster-wide default —
//!   [`check_broker_update`], with Kafka's messages;
//! - SASL mechanisms: kraftd serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 only, so GSSAPI
//!   (Kafka's default), OAUTHBEARER or any other mechanism is refused wherever it would be
//!   enabled: at startup where a SASL listener (or the inter-broker or controller listener)
//!   would use it ([`check_static_sasl_mechanisms`]), and always when set dynamically, since
//!   a dynamic value reaches every listener of the brokers it names
//!   ([`check_sasl_mechanism_value`]).

use super::config_defs::{
    any_broker_config_def, ConfigValueError, UpdateMode, BROKER_CONFIGS, STATIC_BROKER_CONFIGS,
};
use super::security_configs::SECURITY_CONFIGS;

/// The SASL mechanisms kraftd serves and logs in with.
pub const SUPPORTED_SASL_MECHANISMS: &[&str] = &["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

/// Kafka's `max.connections`, a listener's own cap when prefixed.
const MAX_CONNECTIONS: &str = "max.connections";

/// Kafka's `sasl.enabled.mechanisms`.
pub const SASL_ENABLED_MECHANISMS: &str = "sasl.enabled.mechanisms";
/// Kafka's `sasl.mechanism.inter.broker.protocol`.
pub const SASL_MECHANISM_INTER_BROKER: &str = "sasl.mechanism.inter.broker.protocol";
/// Kafka's `sasl.mechanism.controller.protocol`.
pub const SASL_MECHANISM_CONTROLLER: &str = "sasl.mechanism.controller.protocol";
/// The default of all three: Kafka's brokers speak Kerberos unless told otherwise.
const KAFKA_DEFAULT_MECHANISM: &str = "GSSAPI";

/// Kafka's `ListenerMechanismConfigs`: the settings given per listener and SASL mechanism,
/// `listener.name.<listener>.<mechanism>.<config>` (the mechanism in lower case).
pub const LISTENER_MECHANISM_CONFIGS: &[&str] = &[
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.server.callback.handler.class",
    "connections.max.reauth.ms",
];

/// A listener-prefixed config name, split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerKey<'a> {
    /// The listener, as the prefix spells it (Kafka writes it in lower case).
    pub listener: &'a str,
    /// The SASL mechanism, for a `ListenerMechanismConfigs` setting given per mechanism.
    pub mechanism: Option<&'a str>,
    /// The config it sets for that listener.
    pub base: &'a str,
}

/// Whether a config is read per listener (Kafka's channel builders read TLS and SASL
/// settings and the principal builder per listener, its `ListenerConnectionQuota` the
/// connection cap and rate: `SocketServer.LISTENER_RECONFIGURABLE_CONFIGS`).
fn is_listener_config(base: &str) -> bool {
    if base == MAX_CONNECTIONS {
        return true;
    }
    let per_listener = base.starts_with("ssl.")
        || (base.starts_with("sasl.")
            && base != SASL_MECHANISM_INTER_BROKER
            && base != SASL_MECHANISM_CONTROLLER)
        || matches!(
            base,
            "principal.builder.class"
                | "connections.max.reauth.ms"
                | "max.connection.creation.rate"
        );
    per_listener && SECURITY_CONFIGS.iter().any(|d| d.name == base)
}

/// `name` as a listener-prefixed security config (Kafka's `listener\.name\.[^.]*\.(.*)`,
/// restricted to the configs a listener reads): `None` for any other name.
pub fn listener_key(name: &str) -> Option<ListenerKey<'_>> {
    let rest = name.strip_prefix("listener.name.")?;
    let (listener, config) = rest.split_once('.')?;
    if listener.is_empty() {
        return None;
    }
    if is_listener_config(config) {
        return Some(ListenerKey {
            listener,
            mechanism: None,
            base: config,
        });
    }
    let (mechanism, base) = config.split_once('.')?;
    (!mechanism.is_empty() && LISTENER_MECHANISM_CONFIGS.contains(&base)).then_some(ListenerKey {
        listener,
        mechanism: Some(mechanism),
        base,
    })
}

/// How a broker config kraftd knows by this exact name may change dynamically:
/// [`BROKER_CONFIGS`] cluster-wide (or as their definition says), [`STATIC_BROKER_CONFIGS`] read-only, the security
/// configs as Kafka has each. `None` for a name kraftd does not know.
pub fn broker_update_mode(name: &str) -> Option<UpdateMode> {
    if let Some(d) = BROKER_CONFIGS.iter().find(|d| d.name == name) {
        // Cluster-wide unless the table says otherwise (`cordoned.log.dirs`: per broker).
        return Some(d.update.unwrap_or(UpdateMode::ClusterWide));
    }
    if STATIC_BROKER_CONFIGS.iter().any(|d| d.name == name) {
        return Some(UpdateMode::ReadOnly);
    }
    SECURITY_CONFIGS
        .iter()
        .find(|d| d.name == name)
        .and_then(|d| d.update)
}

const NOT_DYNAMIC: &str = "Cannot update these configs dynamically";
const LISTENER_ONLY: &str =
    "These security configs can be dynamically updated only per-listener using the listener prefix";
const PER_BROKER_ONLY: &str =
    "Cannot update these configs at default cluster level, broker id must be specified";

/// Kafka's `DynamicBrokerConfig.validateConfigs` for one key set on a broker resource
/// (`cluster_default`: the resource named "", every broker's default): a read-only config, a
/// keystore or truststore setting without a listener prefix, and a per-broker config (every
/// listener-prefixed one but the connection rate) as the cluster default are refused with
/// Kafka's messages. Names kraftd does not know pass: the caller refuses them as unknown.
pub fn check_broker_update(key: &str, cluster_default: bool) -> Result<(), ConfigValueError> {
    let refuse = |why| {
        Err(ConfigValueError::NotDynamic {
            key: key.to_string(),
            why,
        })
    };
    let (mode, prefixed) = match listener_key(key) {
        Some(k) => (broker_update_mode(k.base), true),
        None => (broker_update_mode(key), false),
    };
    match mode {
        None => Ok(()),
        Some(UpdateMode::ReadOnly) => refuse(NOT_DYNAMIC),
        Some(UpdateMode::PerListener) if !prefixed => refuse(LISTENER_ONLY),
        Some(UpdateMode::PerBroker | UpdateMode::PerListener) if cluster_default => {
            refuse(PER_BROKER_ONLY)
        }
        Some(_) => Ok(()),
    }
}

/// Refuses a SASL mechanism kraftd does not serve in `key`'s value, for the three settings
/// that name mechanisms (`sasl.enabled.mechanisms`, `sasl.mechanism.inter.broker.protocol`,
/// `sasl.mechanism.controller.protocol`, or their base name); other keys pass. `defaulted`:
/// the key is not set and `value` is Kafka's default.
pub fn check_sasl_mechanism_value(
    key: &str,
    value: &str,
    defaulted: bool,
) -> Result<(), ConfigValueError> {
    let mechanisms: Vec<&str> = match key {
        SASL_ENABLED_MECHANISMS => value
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .collect(),
        SASL_MECHANISM_INTER_BROKER | SASL_MECHANISM_CONTROLLER => vec![value.trim()],
        _ => return Ok(()),
    };
    match mechanisms
        .into_iter()
        .find(|m| !SUPPORTED_SASL_MECHANISMS.contains(m))
    {
        None => Ok(()),
        Some(mechanism) => Err(ConfigValueError::UnsupportedFeature {
            key: key.to_string(),
            value: value.trim().to_string(),
            feature: format!(
                "the SASL mechanism {mechanism} (it serves {})",
                SUPPORTED_SASL_MECHANISMS.join(", ")
            ),
            defaulted,
        }),
    }
}

/// The node's listeners as far as SASL goes, for [`check_static_sasl_mechanisms`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SaslListeners<'a> {
    /// The listeners (by name) whose protocol is SASL_PLAINTEXT or SASL_SSL.
    pub sasl_listeners: &'a [&'a str],
    /// Whether the inter-broker listener (a broker's clients to other brokers) is SASL.
    pub inter_broker_sasl: bool,
    /// Whether the controller listener (brokers' and controllers' clients to controllers)
    /// is SASL.
    pub controller_sasl: bool,
}

/// At startup: refuses a SASL mechanism kraftd does not serve wherever the node would use
/// it, reading the node's settings through `get`: each SASL listener's enabled mechanisms
/// (`listener.name.<l>.sasl.enabled.mechanisms`, else `sasl.enabled.mechanisms`, else Kafka's
/// default GSSAPI), and the inter-broker and controller mechanisms when those listeners are
/// SASL. A node with no SASL listener passes whatever these say, as Kafka ignores them then.
pub fn check_static_sasl_mechanisms<'a>(
    get: impl Fn(&str) -> Option<&'a str>,
    listeners: &SaslListeners<'_>,
) -> Result<(), ConfigValueError> {
    let check = |key: &str, base: &str| match get(key) {
        Some(value) => check_sasl_mechanism_value(base, value, false).map_err(|e| e.about(key)),
        None => check_sasl_mechanism_value(base, KAFKA_DEFAULT_MECHANISM, true),
    };
    for listener in listeners.sasl_listeners {
        let prefixed = format!(
            "listener.name.{}.{SASL_ENABLED_MECHANISMS}",
            listener.to_lowercase()
        );
        if get(&prefixed).is_some() {
            check(&prefixed, SASL_ENABLED_MECHANISMS)?;
        } else {
            check(SASL_ENABLED_MECHANISMS, SASL_ENABLED_MECHANISMS)?;
        }
    }
    if listeners.inter_broker_sasl {
        check(SASL_MECHANISM_INTER_BROKER, SASL_MECHANISM_INTER_BROKER)?;
    }
    if listeners.controller_sasl {
        check(SASL_MECHANISM_CONTROLLER, SASL_MECHANISM_CONTROLLER)?;
    }
    Ok(())
}

impl ConfigValueError {
    /// The error about `key` (a listener-prefixed name), where it names the base config the
    /// checks looked up.
    pub fn about(self, key: &str) -> ConfigValueError {
        match self {
            ConfigValueError::UnsupportedFeature {
                value,
                feature,
                defaulted,
                ..
            } => ConfigValueError::UnsupportedFeature {
                key: key.to_string(),
                value,
                feature,
                defaulted,
            },
            ConfigValueError::Unsupported {
                value,
                why,
                default,
                dynamic,
                ..
            } => ConfigValueError::Unsupported {
                key: key.to_string(),
                value,
                why,
                default,
                dynamic,
            },
            ConfigValueError::InvalidValue { value, reason, .. } => {
                ConfigValueError::InvalidValue {
                    key: key.to_string(),
                    value,
                    reason,
                }
            }
            other => other,
        }
    }
}

/// The definition describing `name`: its own, or for a listener-prefixed security config its
/// base config's (type, sensitivity, documentation), as Kafka's `ConfigHelper` types a
/// listener override by its synonym.
pub fn described_broker_config_def(name: &str) -> Option<&'static super::config_defs::ConfigDef> {
    any_broker_config_def(name).or_else(|| any_broker_config_def(listener_key(name)?.base))
}

#[cfg(test)]
mod tests;
