//! The table of dynamic config keys the controller accepts, with Kafka's names and types, as
//! Kafka's `LogConfig` (topic configs) and the dynamic part of `KafkaConfig` (broker configs).
//! CreateTopics, IncrementalAlterConfigs and AlterConfigs validate every key and value here,
//! so the metadata log never holds a key no broker understands or a value it cannot parse.

/// The type of a config value and the range or set of values it accepts, as Kafka's
/// `ConfigDef.Type` with its `Validator`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConfigType {
    Boolean,
    /// A 32-bit integer at least `min`.
    Int {
        min: i32,
    },
    /// A 64-bit integer at least `min`.
    Long {
        min: i64,
    },
    /// A double in `[min, max]`.
    Double {
        min: f64,
        max: f64,
    },
    /// A string; when `valid` is not empty, one of those values (case-sensitive as Kafka).
    String {
        valid: &'static [&'static str],
    },
    /// A comma-separated list; when `valid` is not empty, each item one of those values.
    List {
        valid: &'static [&'static str],
    },
}

/// One known config key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConfigDef {
    pub name: &'static str,
    pub config_type: ConfigType,
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
}

const COMPRESSION_TYPES: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];
const CLEANUP_POLICIES: &[&str] = &["delete", "compact"];
const TIMESTAMP_TYPES: &[&str] = &["CreateTime", "LogAppendTime"];

const fn def(name: &'static str, config_type: ConfigType) -> ConfigDef {
    ConfigDef { name, config_type }
}
const BOOLEAN: ConfigType = ConfigType::Boolean;
const fn int(min: i32) -> ConfigType {
    ConfigType::Int { min }
}
const fn long(min: i64) -> ConfigType {
    ConfigType::Long { min }
}
const ANY_LIST: ConfigType = ConfigType::List { valid: &[] };

/// Kafka's topic configs (`TopicConfig`, validated as in `LogConfig`).
pub const TOPIC_CONFIGS: &[ConfigDef] = &[
    def(
        "cleanup.policy",
        ConfigType::List {
            valid: CLEANUP_POLICIES,
        },
    ),
    def("compression.gzip.level", int(-1)),
    def("compression.lz4.level", int(1)),
    def(
        "compression.type",
        ConfigType::String {
            valid: COMPRESSION_TYPES,
        },
    ),
    def("compression.zstd.level", int(-131072)),
    def("delete.retention.ms", long(0)),
    def("file.delete.delay.ms", long(0)),
    def("flush.messages", long(1)),
    def("flush.ms", long(0)),
    def("follower.replication.throttled.replicas", ANY_LIST),
    def("index.interval.bytes", int(0)),
    def("leader.replication.throttled.replicas", ANY_LIST),
    def("local.retention.bytes", long(-2)),
    def("local.retention.ms", long(-2)),
    def("max.compaction.lag.ms", long(1)),
    def("max.message.bytes", int(0)),
    def("message.timestamp.after.max.ms", long(0)),
    def("message.timestamp.before.max.ms", long(0)),
    def(
        "message.timestamp.type",
        ConfigType::String {
            valid: TIMESTAMP_TYPES,
        },
    ),
    def(
        "min.cleanable.dirty.ratio",
        ConfigType::Double { min: 0.0, max: 1.0 },
    ),
    def("min.compaction.lag.ms", long(0)),
    def("min.insync.replicas", int(1)),
    def("preallocate", BOOLEAN),
    def("remote.log.copy.disable", BOOLEAN),
    def("remote.log.delete.on.disable", BOOLEAN),
    def("remote.storage.enable", BOOLEAN),
    def("retention.bytes", long(i64::MIN)),
    def("retention.ms", long(-1)),
    def("segment.bytes", int(14)),
    def("segment.index.bytes", int(4)),
    def("segment.jitter.ms", long(0)),
    def("segment.ms", long(1)),
    def("unclean.leader.election.enable", BOOLEAN),
];

/// The broker configs kraftd accepts dynamically (per broker or as the cluster default).
pub const BROKER_CONFIGS: &[ConfigDef] = &[
    def("auto.create.topics.enable", BOOLEAN),
    def("background.threads", int(1)),
    def(
        "compression.type",
        ConfigType::String {
            valid: COMPRESSION_TYPES,
        },
    ),
    def("default.replication.factor", int(1)),
    def("log.cleaner.threads", int(0)),
    def(
        "log.cleanup.policy",
        ConfigType::List {
            valid: CLEANUP_POLICIES,
        },
    ),
    def("log.flush.interval.messages", long(1)),
    def("log.flush.interval.ms", long(0)),
    def("log.retention.bytes", long(i64::MIN)),
    def("log.retention.ms", long(-1)),
    def("log.roll.ms", long(1)),
    def("log.segment.bytes", int(14)),
    def("max.connections", int(0)),
    def("max.connections.per.ip", int(0)),
    def("message.max.bytes", int(0)),
    def("min.insync.replicas", int(1)),
    def("num.io.threads", int(1)),
    def("num.network.threads", int(1)),
    def("num.partitions", int(1)),
    def("num.replica.fetchers", int(1)),
    def("unclean.leader.election.enable", BOOLEAN),
];

/// The definition of a topic config key.
pub fn topic_config_def(key: &str) -> Option<&'static ConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == key)
}

/// The definition of a broker config key.
pub fn broker_config_def(key: &str) -> Option<&'static ConfigDef> {
    BROKER_CONFIGS.iter().find(|d| d.name == key)
}

/// Checks a topic config key and value.
pub fn validate_topic_config(key: &str, value: &str) -> Result<(), ConfigValueError> {
    let def = topic_config_def(key).ok_or_else(|| ConfigValueError::UnknownKey {
        kind: "topic",
        key: key.to_string(),
    })?;
    def.validate(value)
}

/// Checks a broker config key and value.
pub fn validate_broker_config(key: &str, value: &str) -> Result<(), ConfigValueError> {
    let def = broker_config_def(key).ok_or_else(|| ConfigValueError::UnknownKey {
        kind: "broker",
        key: key.to_string(),
    })?;
    def.validate(value)
}

impl ConfigDef {
    /// Parses `value` as Kafka's `ConfigDef.parseType` and checks its validator.
    pub fn validate(&self, value: &str) -> Result<(), ConfigValueError> {
        let invalid = |reason: String| ConfigValueError::InvalidValue {
            key: self.name.to_string(),
            value: value.to_string(),
            reason,
        };
        let trimmed = value.trim();
        match self.config_type {
            ConfigType::Boolean => {
                if !trimmed.eq_ignore_ascii_case("true") && !trimmed.eq_ignore_ascii_case("false") {
                    return Err(invalid("Expected value to be either true or false".into()));
                }
            }
            ConfigType::Int { min } => {
                let n: i32 = trimmed
                    .parse()
                    .map_err(|_| invalid("Not a number of type INT".into()))?;
                if n < min {
                    return Err(invalid(format!("Value must be at least {min}")));
                }
            }
            ConfigType::Long { min } => {
                let n: i64 = trimmed
                    .parse()
                    .map_err(|_| invalid("Not a number of type LONG".into()))?;
                if n < min {
                    return Err(invalid(format!("Value must be at least {min}")));
                }
            }
            ConfigType::Double { min, max } => {
                let n: f64 = trimmed
                    .parse()
                    .map_err(|_| invalid("Not a number of type DOUBLE".into()))?;
                if !(min..=max).contains(&n) {
                    return Err(invalid(format!("Value must be in [{min}, {max}]")));
                }
            }
            ConfigType::String { valid } => {
                if !valid.is_empty() && !valid.contains(&trimmed) {
                    return Err(invalid(format!(
                        "String must be one of: {}",
                        valid.join(", ")
                    )));
                }
            }
            ConfigType::List { valid } => {
                if valid.is_empty() {
                    return Ok(());
                }
                for item in trimmed.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    if !valid.contains(&item) {
                        return Err(invalid(format!(
                            "Invalid value {item}; must be one of: {}",
                            valid.join(", ")
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether APPEND and SUBTRACT apply (Kafka allows them only on LIST configs).
    pub fn is_list(&self) -> bool {
        matches!(self.config_type, ConfigType::List { .. })
    }
}
