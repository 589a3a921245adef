//! The table of config keys kraftd knows, with Kafka's names, types, defaults and
//! documentation, as Kafka's `LogConfig` (topic configs), `KafkaConfig` (broker configs) and
//! `GroupConfig` (per-group configs, [`GROUP_CONFIGS`]).
//! CreateTopics, IncrementalAlterConfigs and AlterConfigs validate every key and value here,
//! so the metadata log never holds a key no broker understands or a value it cannot parse;
//! the broker's DescribeConfigs reads the same table for defaults, types, documentation and
//! Kafka's topic-to-broker synonyms (`ServerTopicConfigSynonyms`), so a config has one home.
//!
//! [`CONFIG_SUPPORT`] says, for every key of the four tables, whether kraftd honours it with
//! Kafka's meaning, accepts it with no effect (performance tuning only), or refuses any value
//! but Kafka's default ([`Support`]): CreateTopics and (Incremental)AlterConfigs check it
//! through [`validate_topic_config`] / [`check_dynamic_support`], the node's startup through
//! [`check_static_support`], and `docs/configs.md`'s table is rendered from it
//! ([`render_support_table`]), so no setting is silently ignored.
//!
//! One file per resource, as Kafka keeps its `ConfigDef` holders apart: `topic.rs`
//! ([`TOPIC_CONFIGS`] and their broker synonyms), `broker.rs` ([`BROKER_CONFIGS`], dynamic),
//! `static_broker.rs` ([`STATIC_BROKER_CONFIGS`]), `group.rs` ([`GROUP_CONFIGS`]),
//! `client_metrics.rs` ([`CLIENT_METRICS_CONFIGS`]), the security configs in
//! `../security_configs.rs`; this module holds what they share (the definition, its types and
//! their validation in `values.rs`) and the lookups over them.

/// The type of a config value and the range or set of values it accepts, as Kafka's
/// `ConfigDef.Type` with its `Validator`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConfigType {
    Boolean,
    /// A 32-bit integer in `[min, max]`.
    Int {
        min: i32,
        max: i32,
    },
    /// A 16-bit integer (Kafka's `SHORT`) at least `min`.
    Short {
        min: i16,
    },
    /// A 64-bit integer at least `min`.
    Long {
        min: i64,
    },
    /// A double in `[min, max]` (NaN passes, as Kafka's `Range` compares it).
    Double {
        min: f64,
        max: f64,
    },
    /// A string; when `valid` is not empty, one of those values (case-sensitive as Kafka).
    String {
        valid: &'static [&'static str],
    },
    /// A string that is not empty (Kafka's `ConfigDef.NonEmptyString`): the tiered-storage
    /// plugins' class names and prefixes.
    NonEmptyString,
    /// A string that is one of `valid` in any case (Kafka's `CaseInsensitiveValidString`).
    CaseInsensitiveString {
        valid: &'static [&'static str],
    },
    /// A Java class name (Kafka's `CLASS`): kraftd loads no classes, so only Kafka's default
    /// (or no value) is ever accepted where one matters ([`Support`]).
    Class,
    /// A comma-separated list; when `valid` is not empty, each item one of those values,
    /// none empty or repeated, and the list itself empty only when `empty` (Kafka's
    /// `ValidList.in(isEmptyAllowed, ...)`).
    List {
        valid: &'static [&'static str],
        empty: bool,
    },
}

/// One known config key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConfigDef {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// Kafka's default as `ConfigDef.convertToString` writes it; `None` for a null default
    /// (e.g. `log.retention.ms`, which falls back to a synonym).
    pub default: Option<&'static str>,
    /// Kafka's documentation string (shortened where Kafka's runs to paragraphs).
    pub doc: &'static str,
    /// Whether the value is a secret (Kafka's `PASSWORD` type): never returned to clients.
    pub sensitive: bool,
    /// Kafka's `ConfigDef.Importance`, where the table records it (the security configs).
    pub importance: Option<Importance>,
    /// How Kafka lets a broker config change at runtime (`DynamicBrokerConfig`), where the
    /// table records it (the security configs); elsewhere the table says it:
    /// [`BROKER_CONFIGS`] are cluster-wide, [`STATIC_BROKER_CONFIGS`] read-only.
    pub update: Option<UpdateMode>,
    /// An internal config (Kafka's `ConfigDef.defineInternal`): accepted and honoured, but
    /// described only where it is set, never listed with its default.
    pub internal: bool,
}

/// Kafka's `ConfigDef.Importance`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Importance {
    High,
    Medium,
    Low,
}

/// How a broker config may be changed dynamically, as Kafka's
/// `DynamicBrokerConfig.dynamicConfigUpdateModes` and `validateConfigs` have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateMode {
    /// Only in the node's properties file ("Cannot update these configs dynamically").
    ReadOnly,
    /// On one broker or as the cluster-wide default.
    ClusterWide,
    /// On one broker only, never as the cluster-wide default.
    PerBroker,
    /// On one broker only and only with a listener prefix (`listener.name.<l>.`): Kafka's
    /// `DYNAMIC_SECURITY_CONFIGS`, the keystore and truststore settings.
    PerListener,
}

impl UpdateMode {
    /// Kafka's name for the mode (`dynamicConfigUpdateModes`, plus `read-only`).
    pub fn label(self) -> &'static str {
        match self {
            UpdateMode::ReadOnly => "read-only",
            UpdateMode::ClusterWide => "cluster-wide",
            UpdateMode::PerBroker => "per-broker",
            UpdateMode::PerListener => "per-broker, listener prefix only",
        }
    }
}

/// A broker config a topic config falls back to, as Kafka's `ConfigSynonym`: its value is
/// multiplied by `to_millis` (1, or 60 000 for minutes, 3 600 000 for hours) to give the
/// topic config's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerSynonym {
    pub name: &'static str,
    pub to_millis: i64,
}

/// Kafka's `DescribeConfigsResponse.ConfigType` ids (DescribeConfigs v3+).
pub mod response_type {
    pub const UNKNOWN: i8 = 0;
    pub const BOOLEAN: i8 = 1;
    pub const STRING: i8 = 2;
    pub const INT: i8 = 3;
    pub const SHORT: i8 = 4;
    pub const LONG: i8 = 5;
    pub const DOUBLE: i8 = 6;
    pub const LIST: i8 = 7;
    pub const CLASS: i8 = 8;
    pub const PASSWORD: i8 = 9;
}

/// Why a value is not valid for its key; the text follows Kafka's `ConfigException`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigValueError {
    #[error("Unknown {kind} config name: {key}")]
    UnknownKey { kind: &'static str, key: String },
    #[error("Invalid value {value} for configuration {key}: {reason}")]
    InvalidValue {
        key: String,
        value: String,
        reason: String,
    },
    /// A value Kafka refuses with a message of its own, not about one value (a list with an
    /// empty or repeated item).
    #[error("{message}")]
    ConfigError { key: String, message: String },
    /// A value kraftd would not act on (see [`Support`]); the value of a secret is hidden.
    #[error("{}", unsupported_message(.key, .value, .why, *.default, *.dynamic))]
    Unsupported {
        key: String,
        value: String,
        /// Why kraftd does not act on other values (the key's support note).
        why: &'static str,
        /// Kafka's default, the one value accepted (`None`: none is).
        default: Option<&'static str>,
        /// Whether only setting it dynamically is refused (it is read from the properties
        /// file).
        dynamic: bool,
    },
    /// A value that would switch on security behaviour kraftd does not implement (a SASL
    /// mechanism other than PLAIN and SCRAM); `defaulted` when the key is not set and
    /// Kafka's default asks for it.
    #[error("{}", unsupported_feature_message(.key, .value, .feature, *.defaulted))]
    UnsupportedFeature {
        key: String,
        value: String,
        feature: String,
        defaulted: bool,
    },
    /// A broker config that cannot change on this resource dynamically, with Kafka's
    /// `DynamicBrokerConfig.validateConfigs` message ([`check_broker_update`]).
    #[error("{why}: [{key}]")]
    NotDynamic { key: String, why: &'static str },
}

fn unsupported_feature_message(key: &str, value: &str, feature: &str, defaulted: bool) -> String {
    if defaulted {
        format!(
            "kraftd does not support {feature}: {key} is not set, and Kafka's default is {value}"
        )
    } else {
        format!("kraftd does not support {feature} ({key}={value})")
    }
}

fn unsupported_message(
    key: &str,
    value: &str,
    why: &str,
    default: Option<&str>,
    dynamic: bool,
) -> String {
    let only = match default {
        Some(d) => format!("only Kafka's default ({d}) is accepted"),
        None => "no value is accepted".to_string(),
    };
    if dynamic {
        format!(
            "kraftd does not support changing {key} dynamically (asked for {value}): it is \
             read from the node's properties file at start, so changing it needs a change there \
             and a restart; {only}"
        )
    } else {
        format!("kraftd does not support {key} (asked for {value}): {why}; {only}")
    }
}

pub(crate) const fn def(name: &'static str, config_type: ConfigType) -> ConfigDef {
    ConfigDef {
        name,
        config_type,
        default: None,
        doc: "",
        sensitive: false,
        importance: None,
        update: None,
        internal: false,
    }
}

impl ConfigDef {
    /// The definition with Kafka's default value (as text).
    pub(crate) const fn default(self, value: &'static str) -> ConfigDef {
        ConfigDef {
            default: Some(value),
            ..self
        }
    }

    /// An internal config (Kafka's `defineInternal`).
    pub(crate) const fn internal(self) -> ConfigDef {
        ConfigDef {
            internal: true,
            ..self
        }
    }

    /// The definition with Kafka's documentation.
    pub(crate) const fn doc(self, doc: &'static str) -> ConfigDef {
        ConfigDef { doc, ..self }
    }

    /// A secret: Kafka's `PASSWORD` type.
    pub(crate) const fn sensitive(self) -> ConfigDef {
        ConfigDef {
            sensitive: true,
            ..self
        }
    }

    /// A read-only broker config that is not one of Kafka's `KafkaConfig` keys (an
    /// authorizer's own setting, which has no importance).
    pub(crate) const fn read_only(self) -> ConfigDef {
        ConfigDef {
            update: Some(UpdateMode::ReadOnly),
            ..self
        }
    }

    /// Kafka's importance and dynamic update mode.
    pub(crate) const fn kafka(self, importance: Importance, update: UpdateMode) -> ConfigDef {
        ConfigDef {
            importance: Some(importance),
            update: Some(update),
            ..self
        }
    }
}

// The value types the tables share.
pub(crate) const STRING: ConfigType = ConfigType::String { valid: &[] };
const NON_EMPTY_STRING: ConfigType = ConfigType::NonEmptyString;
const LONG_MAX: &str = "9223372036854775807";
pub(crate) const BOOLEAN: ConfigType = ConfigType::Boolean;
/// A double without a validator.
pub(crate) const ANY_DOUBLE: ConfigType = ConfigType::Double {
    min: f64::MIN,
    max: f64::MAX,
};
pub(crate) const fn int(min: i32) -> ConfigType {
    ConfigType::Int { min, max: i32::MAX }
}
pub(crate) const fn long(min: i64) -> ConfigType {
    ConfigType::Long { min }
}
pub(crate) const ANY_LIST: ConfigType = ConfigType::List {
    valid: &[],
    empty: true,
};
/// A list of any values, not empty (Kafka's `ValidList.anyNonDuplicateValues(false, ...)`).
pub(crate) const NON_EMPTY_LIST: ConfigType = ConfigType::List {
    valid: &[],
    empty: false,
};
const fn int_range(min: i32, max: i32) -> ConfigType {
    ConfigType::Int { min, max }
}

pub use super::config_support::{
    check_dynamic_support, check_static_support, config_support, render_support_table,
    support_rows, ConfigScope, ConfigSupport, Support, CONFIG_SUPPORT,
};
pub use super::security_checks::{
    broker_update_mode, check_broker_update, check_sasl_mechanism_value,
    check_static_sasl_mechanisms, described_broker_config_def, listener_key, ListenerKey,
    SaslListeners, SUPPORTED_SASL_MECHANISMS,
};
pub use super::security_configs::{SECURITY_CONFIGS, SECURITY_SUPPORT};

/// The broker synonyms of a topic config, highest priority first (empty when it has none).
pub fn topic_config_synonyms(topic_key: &str) -> &'static [BrokerSynonym] {
    TOPIC_CONFIG_SYNONYMS
        .iter()
        .find(|(name, _)| *name == topic_key)
        .map_or(&[], |(_, synonyms)| synonyms)
}

/// The broker configs that set the same thing as `name`, highest priority first, as Kafka's
/// `DynamicBrokerConfig.brokerConfigSynonyms` (e.g. `log.retention.hours` →
/// `[log.retention.ms, log.retention.minutes, log.retention.hours]`; a listener override
/// `listener.name.<l>.<config>` → `[itself, <config>]`); `[name]` otherwise.
pub fn broker_config_synonyms(name: &str) -> Vec<&str> {
    if let Some(key) = listener_key(name) {
        return vec![name, key.base];
    }
    const GROUPS: &[&[&str]] = &[
        &["log.roll.ms", "log.roll.hours"],
        &["log.roll.jitter.ms", "log.roll.jitter.hours"],
        &[
            "log.retention.ms",
            "log.retention.minutes",
            "log.retention.hours",
        ],
    ];
    if name == "log.flush.interval.ms" {
        return vec!["log.flush.interval.ms", "log.flush.scheduler.interval.ms"];
    }
    GROUPS
        .iter()
        .find(|group| group.contains(&name))
        .map_or_else(|| vec![name], |group| group.to_vec())
}

/// The definition of any broker config kraftd knows by this exact name: dynamic
/// ([`BROKER_CONFIGS`]), static ([`STATIC_BROKER_CONFIGS`]) or security
/// ([`SECURITY_CONFIGS`]). A listener-prefixed name is
/// [`described_broker_config_def`]'s.
pub fn any_broker_config_def(key: &str) -> Option<&'static ConfigDef> {
    ConfigScope::Broker
        .def(key)
        .or_else(|| ConfigScope::StaticBroker.def(key))
}

/// Every broker config kraftd knows, dynamic then static.
pub fn all_broker_config_defs() -> impl Iterator<Item = &'static ConfigDef> {
    ConfigScope::Broker
        .defs()
        .chain(ConfigScope::StaticBroker.defs())
}

/// The definition of a group config key.
pub fn group_config_def(key: &str) -> Option<&'static ConfigDef> {
    GROUP_CONFIGS.iter().find(|d| d.name == key)
}

/// The definition of a topic config key.
pub fn topic_config_def(key: &str) -> Option<&'static ConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == key)
}

/// The definition of a broker config that may be set dynamically: one of
/// [`BROKER_CONFIGS`], a dynamic security config, or one of those set for one listener
/// (`listener.name.<l>.<config>`, defined by its base config). Whether this resource may
/// set it is [`check_broker_update`]'s.
pub fn broker_config_def(key: &str) -> Option<&'static ConfigDef> {
    ConfigScope::Broker.def(listener_key(key).map_or(key, |k| k.base))
}

/// Checks a topic config key and value, and that kraftd acts on the value
/// ([`check_dynamic_support`]).
pub fn validate_topic_config(key: &str, value: &str) -> Result<(), ConfigValueError> {
    let def = topic_config_def(key).ok_or_else(|| ConfigValueError::UnknownKey {
        kind: "topic",
        key: key.to_string(),
    })?;
    def.validate(value)?;
    check_dynamic_support(ConfigScope::Topic, def, value)
}

/// Checks a dynamic broker config key and value set on one broker, and that kraftd acts on
/// the value ([`check_broker_update`], [`check_dynamic_support`]).
pub fn validate_broker_config(key: &str, value: &str) -> Result<(), ConfigValueError> {
    check_broker_update(key, false)?;
    let def = broker_config_def(key).ok_or_else(|| ConfigValueError::UnknownKey {
        kind: "broker",
        key: key.to_string(),
    })?;
    def.validate(value)
        .and_then(|()| check_dynamic_support(ConfigScope::Broker, def, value))
        .map_err(|e| e.about(key))
}

mod broker;
mod client_metrics;
mod group;
mod kafka_names;
mod static_broker;
mod throttled_replicas;
mod topic;
mod values;

pub use broker::BROKER_CONFIGS;
pub use static_broker::STATIC_BROKER_CONFIGS;
pub use topic::{
    COMPRESSION_GZIP_LEVEL, INTERNAL_SEGMENT_BYTES, MIN_INTERNAL_SEGMENT_BYTES, MIN_SEGMENT_BYTES,
    TOPIC_CONFIGS, TOPIC_CONFIG_SYNONYMS,
};

pub use client_metrics::{
    client_metrics_config_def, parse_match_patterns, parse_subscription, validate_client_metrics,
    ClientMetricsConfigError, ClientMetricsSubscription, MatchPattern, ALL_SUBSCRIBED_METRICS,
    CLIENT_ID, CLIENT_INSTANCE_ID, CLIENT_METRICS_CONFIGS, CLIENT_SOFTWARE_NAME,
    CLIENT_SOFTWARE_VERSION, CLIENT_SOURCE_ADDRESS, CLIENT_SOURCE_PORT, INTERVAL_MS_CONFIG,
    INTERVAL_MS_DEFAULT, MATCH_CONFIG, METRICS_CONFIG,
};
pub use group::{
    group_config_synonym, GroupConfigBounds, GROUP_CONFIGS, GROUP_CONFIG_BOUNDS,
    SHARE_AUTO_OFFSET_RESET, STREAMS_ASSIGNORS_DEFAULT,
};
pub use kafka_names::{is_kafka_broker_config, KAFKA_BROKER_CONFIG_NAMES};

/// kraftd's own properties that are not config definitions, read once at start by the
/// binary: `metrics.port` (the HTTP listener of `/metrics`) and `request.metrics.enable`
/// (the per-request latency histograms).
pub const KRAFTD_OWN_PROPERTIES: &[&str] = &["metrics.port", "request.metrics.enable"];

/// Whether a key of a node's properties file means something to Kafka or to kraftd: one of
/// Kafka 4.4's broker configs ([`KAFKA_BROKER_CONFIG_NAMES`]), one kraftd defines (its own
/// among them), or a listener-prefixed one (`listener.name.<l>.…`, which Kafka reads for the
/// listener's own settings). Start-up warns about any other key, as Kafka logs the
/// configurations "supplied but not used".
pub fn is_known_node_property(key: &str) -> bool {
    key.starts_with("listener.name.")
        || is_kafka_broker_config(key)
        || any_broker_config_def(key).is_some()
        || KRAFTD_OWN_PROPERTIES.contains(&key)
}

pub use throttled_replicas::{
    is_throttled_replicas_config, parse_throttled_replicas, ThrottledReplicas,
    FOLLOWER_THROTTLED_REPLICAS, LEADER_THROTTLED_REPLICAS,
};

#[cfg(test)]
mod tests;
